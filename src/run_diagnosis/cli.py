"""The `run-diagnosis` command: one console script, one subcommand per task.

    run-diagnosis diagnose SOURCE --out DIR       # logs in any known format -> build -> report
    run-diagnosis validate RUN_FOLDER             # check a run's five files before a build
    run-diagnosis report --db PATH --out DIR      # the report of an existing build
    run-diagnosis fleet --db PATH --out DIR       # the fleet page of a build of many runs
    run-diagnosis index DIR                       # an index of several report folders
    run-diagnosis alerts --db PATH --alert-json FILE
    run-diagnosis findings-since --db PATH --since 2h
    run-diagnosis SUBCOMMAND --help               # each subcommand's own options

Installed by `pyproject.toml` (`[project.scripts]`); `python -m run_diagnosis` is the same
command. Each subcommand is the `main(argv)` of one module, imported only when it runs, so
`run-diagnosis --help` answers without loading dbt or pandas. The exit code is the
subcommand's; 2 for a usage error here, or when the dbt project cannot be found
(`RUN_DIAGNOSIS_PROJECT_DIR`, docs/packaging.md).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata

from run_diagnosis.project import ProjectNotFound

PROG = "run-diagnosis"
DISTRIBUTION = "run-diagnosis"  # the name in pyproject.toml


@dataclass(frozen=True)
class Subcommand:
    module: str  # run_diagnosis.<module> has main(argv: Sequence[str] | None) -> int
    summary: str  # one line for `run-diagnosis --help`


SUBCOMMANDS: dict[str, Subcommand] = {
    "diagnose": Subcommand("diagnose", "read a run's logs (any known format), build, write the report"),
    "validate": Subcommand("validate_run", "check a run folder's five canonical files before a build"),
    "report": Subcommand("report", "write report.md, report.html and findings.json from a build"),
    "fleet": Subcommand("report_fleet", "write the fleet page (index.md/html) of a build of many runs"),
    "index": Subcommand("report_index", "write an index of the report folders below a folder"),
    "alerts": Subcommand("alerts", "send the findings a build opened, once each (JSON file or webhook)"),
    "findings-since": Subcommand("findings_since", "print the findings history since a time, as JSON"),
}


def prog(name: str) -> str:
    """The program name a subcommand's parser shows in its usage line."""
    return f"{PROG} {name}"


def overview() -> str:
    width = max(map(len, SUBCOMMANDS))
    lines = [
        f"usage: {PROG} SUBCOMMAND [options]   ({PROG} SUBCOMMAND --help for its options)",
        "",
        "Diagnose a language-model training run from its logs (dbt + DuckDB).",
        "",
        "subcommands:",
        *(f"  {name.ljust(width)}  {command.summary}" for name, command in SUBCOMMANDS.items()),
        "",
        "options:",
        f"  {'-h, --help'.ljust(width)}  show this message and exit",
        f"  {'--version'.ljust(width)}  print the installed version and exit",
        "",
        "The dbt project: RUN_DIAGNOSIS_PROJECT_DIR, else the checkout this package is installed from.",
    ]
    return "\n".join(lines) + "\n"


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # imported from a source tree that was never installed
        return "unknown (not installed)"


def subcommand_main(name: str) -> Callable[[Sequence[str] | None], int]:
    entry: Callable[[Sequence[str] | None], int] = importlib.import_module(
        f"run_diagnosis.{SUBCOMMANDS[name].module}"
    ).main
    return entry


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        (sys.stdout if args else sys.stderr).write(overview())
        return 0 if args else 2
    if args[0] == "--version":
        print(f"{PROG} {version()}")
        return 0
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        sys.stderr.write(
            f"{PROG}: error: unknown subcommand {name!r} (choose from {', '.join(SUBCOMMANDS)})\n"
        )
        return 2
    try:
        return subcommand_main(name)(rest)
    except ProjectNotFound as error:
        sys.stderr.write(f"{prog(name)}: error: {error}\n")
        return 2
