"""The command of run_diagnosis.report_fleet (src/run_diagnosis/report_fleet.py): --help for its usage."""

from run_diagnosis.report_fleet import main

if __name__ == "__main__":
    raise SystemExit(main())
