"""`python -m run_diagnosis ...` is the `run-diagnosis` command (run_diagnosis.cli)."""

from run_diagnosis.cli import main

raise SystemExit(main())
