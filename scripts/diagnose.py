"""The command of run_diagnosis.diagnose (src/run_diagnosis/diagnose.py): --help for its usage."""

from run_diagnosis.diagnose import main

if __name__ == "__main__":
    raise SystemExit(main())
