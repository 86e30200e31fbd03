"""The command of run_diagnosis.report_readme (src/run_diagnosis/report_readme.py): --help for its usage."""

from run_diagnosis.report_readme import main

if __name__ == "__main__":
    raise SystemExit(main())
