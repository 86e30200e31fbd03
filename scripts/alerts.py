"""The command of run_diagnosis.alerts (src/run_diagnosis/alerts.py): --help for its usage."""

from run_diagnosis.alerts import main

if __name__ == "__main__":
    raise SystemExit(main())
