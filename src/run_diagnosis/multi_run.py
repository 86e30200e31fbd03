"""A folder (or file) that holds several runs: diagnose each, then rank them in an index.

    run-diagnosis diagnose lightning_logs/ --out DIR      # version_0/, version_1/, ...

What counts as several runs (checked before the single-run importers, see ``find_runs``):

* a tracking store or export holding several runs: an MLflow ``mlflow.db`` or ``mlruns/`` tree,
  a Trackio project database, a Parquet export with a run column (the importers' ``list_runs``);
* a W&B chart-panel CSV export (``Step``, ``<run> - <metric>`` columns with ``__MIN``/``__MAX``
  bands) naming two or more runs, or a folder of such exports (their columns are joined per
  run on ``Step``);
* a folder of text logs that overlap instead of continuing each other (two runs' stdout side
  by side; logs split by a resume are one run, see ``importers.text_logs``);
* a folder whose sub-folders are runs: at least two sub-folders an importer reads, or that are
  named like run folders (Lightning ``version_N``, W&B ``run-*``), while the folder itself has
  no log file of its own (an HF output folder with ``checkpoint-*`` sub-folders is one run);
  Lightning ``version_N`` folders that continue each other are one run resumed
  (``importers.lightning_csv.version_runs``), the others separate runs.

Every run is written as canonical files into ``DIR/warehouse/<run>/`` and all of them are
built together, once, into ``DIR/diagnosis.duckdb`` (every model carries ``run_id``, the
sub-folder's name). Each run's report goes to ``DIR/runs/<run>/`` (``report.md``,
``report.html``, ``findings.json``), and ``DIR/index.md`` / ``DIR/index.html`` (the fleet page,
run_diagnosis.report_fleet, from the fleet marts) list the runs, worst problem first, what keeps
going wrong across them and each run against its baseline. A run that cannot be read is listed
with the reason, last; it does not stop the others.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from run_diagnosis import importers
from run_diagnosis.importers import lightning_csv, tensorboard_events, text_logs, wandb_history
from run_diagnosis.importers.canonical import RunData

RUN_FOLDER_NAME = re.compile(r"^(?:version_\d+|(?:offline-)?run-.+)$")
CHECKPOINT_FOLDER = re.compile(r"^checkpoint-\d+$")
RUNS_SUBDIR = "runs"


@dataclass(frozen=True)
class RunSource:
    """One run inside a multi-run source: its name and how to read it."""

    name: str
    describe: str  # where it comes from, for the index
    load: Callable[[], RunData]


@dataclass
class RunOutcome:
    """One run of a multi-run source: its name in the build, where its report goes, and why it
    could not be read or reported (None when it was)."""

    source: RunSource
    out: Path
    run_id: str  # the run's name in the warehouse build (its folder name)
    error: str | None = None


def _natural(name: str) -> list[Any]:
    """version_2 before version_10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _readable(path: Path) -> bool:
    try:
        # a W&B run folder without its history is read from its console output (importers.load_run)
        importers.detect(importers.wandb_console(path) or path)
    except (importers.RunImportError, OSError):
        return False
    return True


def _own_log_file(folder: Path) -> bool:
    """The folder itself holds a file some importer reads (then it is one run, not a container)."""
    return any(
        importers.sniffs(module, file)
        for file in (p for p in folder.iterdir() if p.is_file())
        for module in importers.importers()
    )


def _chart_sources(source: Path) -> list[RunSource]:
    runs = wandb_history.chart_runs(source)
    files = sorted({file for paths in runs.values() for file in paths})
    if len(runs) < 2 and not (source.is_dir() and len(files) > 1 and runs):
        return []
    return [
        RunSource(
            name=name,
            describe=f"W&B chart export {', '.join(f.name for f in paths)}",
            load=partial(wandb_history.load_chart_run, paths, name),
        )
        for name, paths in sorted(runs.items(), key=lambda item: _natural(item[0]))
    ]


def _run_folder(child: Path) -> RunSource:
    return RunSource(name=child.name, describe=str(child), load=lambda: importers.load_run(child))


def _folder_sources(source: Path) -> list[RunSource]:
    if not source.is_dir() or _own_log_file(source):
        return []
    children = sorted(
        (p for p in source.iterdir() if p.is_dir() and not CHECKPOINT_FOLDER.match(p.name)),
        key=lambda p: _natural(p.name),
    )
    readable = {child for child in children if _readable(child)}
    candidates = [c for c in children if c in readable or RUN_FOLDER_NAME.match(c.name)]
    if len(candidates) < 2 or not readable or tensorboard_events.is_split_pair(candidates):
        return []
    # Lightning version folders that continue each other are one run resumed
    chains = lightning_csv.version_runs(source)
    resumed = {path: chain for chain in chains if len(chain) > 1 for path in chain}
    sources = []
    for child in candidates:
        chain = resumed.get(child)
        if chain is None:
            sources.append(_run_folder(child))
        elif child == chain[0]:
            sources.append(
                RunSource(
                    name=f"{chain[0].name}-{chain[-1].name}",
                    describe=f"{', '.join(str(p) for p in chain)} (one run resumed)",
                    load=partial(lightning_csv.load_versions, chain),
                )
            )
    return sources if len(sources) > 1 else []


def _text_log_sources(source: Path) -> list[RunSource]:
    """A folder of text logs that are not one run (they overlap instead of continuing each other)."""
    if not source.is_dir():
        return []
    files = sorted(
        (p for p in source.iterdir() if p.is_file() and text_logs.sniff(p)), key=lambda p: _natural(p.name)
    )
    if len(files) < 2:
        return []
    try:
        text_logs.load(source)
    except importers.RunImportError as error:
        if "separate runs" not in str(error):
            return []
        return [
            RunSource(name=file.stem, describe=str(file), load=partial(text_logs.load, file))
            for file in files
        ]
    return []


def _store_sources(source: Path) -> list[RunSource]:
    """The runs of a store or export an importer can list (two or more)."""
    for module in importers.importers():
        if not hasattr(module, "list_runs"):
            continue
        try:
            if not module.sniff(source):
                continue
            listed = module.list_runs(source)
        except (importers.RunImportError, OSError):
            return []
        if len(listed) < 2:
            return []
        return [RunSource(name=name, describe=where, load=loader) for name, where, loader in listed]
    return []


def find_runs(source: Path) -> list[RunSource]:
    """The runs ``source`` holds when it holds several (else an empty list: one run)."""
    if not source.exists():
        return []
    return (
        _store_sources(source)
        or _chart_sources(source)
        or _folder_sources(source)
        or _text_log_sources(source)
    )


def _safe_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "run"
    candidate, number = base, 2
    while candidate in taken:
        candidate, number = f"{base}_{number}", number + 1
    taken.add(candidate)
    return candidate


def load_runs(
    runs: Sequence[RunSource],
    out: Path,
    write_one: Callable[[RunData, str], None],
    say: Callable[[str], None],
) -> list[RunOutcome]:
    """Read every run and write it into the warehouse (``write_one(run, run_id)``); a run that
    cannot be read is kept with its error (listed last in the index), it does not stop the others."""
    outcomes: list[RunOutcome] = []
    taken: set[str] = set()
    for number, source in enumerate(runs, start=1):
        run_id = _safe_name(source.name, taken)
        run_out = out / RUNS_SUBDIR / run_id
        say(f"=== run {number}/{len(runs)}: {source.name} ({source.describe})")
        try:
            write_one(source.load(), run_id)
            outcomes.append(RunOutcome(source, run_out, run_id))
        except Exception as error:
            say(f"    {source.name}: {error}")
            outcomes.append(RunOutcome(source, run_out, run_id, f"{type(error).__name__}: {error}"))
    return outcomes


def report_runs(
    outcomes: Sequence[RunOutcome],
    report_one: Callable[[str, Path], object],
    say: Callable[[str], None],
) -> None:
    """Write each built run's report into out/runs/<run_id>/ (``report_one(run_id, dir)``); a
    report that fails is recorded as the run's error and does not stop the others. The runs are
    ranked on the fleet page, from the marts (run_diagnosis.report_fleet)."""
    for outcome in outcomes:
        if outcome.error:
            continue
        say(f"=== report: {outcome.run_id}")
        try:
            report_one(outcome.run_id, outcome.out)
        except Exception as error:
            say(f"    {outcome.run_id}: {error}")
            outcome.error = f"{type(error).__name__}: {error}"
