"""The command of run_diagnosis.findings_since (src/run_diagnosis/findings_since.py): --help for its usage."""

from run_diagnosis.findings_since import main

if __name__ == "__main__":
    raise SystemExit(main())
