"""The command of run_diagnosis.validate_run (src/run_diagnosis/validate_run.py): --help for its usage."""

from run_diagnosis.validate_run import main

if __name__ == "__main__":
    raise SystemExit(main())
