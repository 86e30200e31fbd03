"""The command of run_diagnosis.benchmark (src/run_diagnosis/benchmark.py): --help for its usage."""

from run_diagnosis.benchmark import main

if __name__ == "__main__":
    raise SystemExit(main())
