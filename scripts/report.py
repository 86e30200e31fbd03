"""The command of run_diagnosis.report (src/run_diagnosis/report.py): --help for its usage."""

from run_diagnosis.report import main

if __name__ == "__main__":
    raise SystemExit(main())
