"""The command of run_diagnosis.compare_engines (src/run_diagnosis/): --help for its usage."""

from run_diagnosis.compare_engines import main

if __name__ == "__main__":
    raise SystemExit(main())
