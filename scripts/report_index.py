"""The command of run_diagnosis.report_index (src/run_diagnosis/report_index.py): --help for its usage."""

from run_diagnosis.report_index import main

if __name__ == "__main__":
    raise SystemExit(main())
