"""The installed command, as the tests run it: the `run-diagnosis` console script beside the
Python running the tests (scripts/bootstrap.sh installs the package editable into .venv), so
the tests go through the entry point users type, not a module path."""

from __future__ import annotations

import sys
from pathlib import Path

RUN_DIAGNOSIS = str(Path(sys.executable).with_name("run-diagnosis"))


def run_diagnosis(subcommand: str) -> list[str]:
    """The command line of one subcommand, to extend with its arguments."""
    return [RUN_DIAGNOSIS, subcommand]
