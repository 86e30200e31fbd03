"""Importers: turn the logs a training tool writes into the canonical five files.

Each importer module exposes:
- ``FORMAT``: a short name shown to users (``--format`` value);
- ``DESCRIPTION``: one line for ``run-diagnosis diagnose --help``;
- ``sniff(path: Path) -> bool``: cheap check that ``path`` (a file or a folder) is in this format;
- ``load(path: Path) -> RunData``: parse it; raise ``RunImportError`` with a clear message on bad input;
- optionally ``list_runs(path: Path) -> [(name, where, loader)]``: a store or export holding several
  runs (MLflow, Trackio, Parquet) names them; ``multi_run`` builds them together.
- optionally ``explain(path: Path) -> str | None``: why a file no importer takes cannot be read
  (what was found and how to map it), used for the error instead of the list of formats.

The registry below is the one list of importers; order is the sniffing order
(most specific first). The other modules here are shared by importers, not importers:
``canonical`` (RunData and its writer), ``aliases`` and ``units`` (metric names and units),
``training_args`` (training arguments -> schedule and config), ``wide_table`` (a wide
metrics table -> canonical frames), ``text_log_core`` and the ``text_log_<family>`` modules
(the shapes ``text_logs`` reads), ``metric_names`` (the metric-name resolver), ``metric_frames``
(logged records -> canonical frames through the resolver, for the formats of issue 25) and
``tracker_exports`` (a tracked run's rows -> RunData, for Trackio, Parquet and long CSV tables).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from run_diagnosis.importers.canonical import RunData


class RunImportError(Exception):
    """The input cannot be read as a training run; the message says what was expected and found."""


class NoLossError(RunImportError):
    """The input is a log of a known kind, but no series in it reads as a loss (training or validation)."""


IMPORTER_MODULES = [
    "run_diagnosis.importers.canonical_files",
    "run_diagnosis.importers.tensorboard_events",
    "run_diagnosis.importers.hf_trainer",
    "run_diagnosis.importers.llamafactory_log",
    "run_diagnosis.importers.megatron_golden",
    # stores and exports holding several runs (binary files: SQLite, Parquet; the mlruns tree)
    "run_diagnosis.importers.mlflow_store",
    "run_diagnosis.importers.trackio_store",
    "run_diagnosis.importers.parquet_export",
    # a long metric table as CSV/TSV (an MLflow download): its header names step, metric and value
    "run_diagnosis.importers.long_csv",
    # a DVCLive folder (per-metric TSV histories) before the CSV/TSV readers
    "run_diagnosis.importers.dvclive_log",
    # a CSV whose first column is `epoch` (before the wide-table readers)
    "run_diagnosis.importers.keras_log",
    # YOLO's headerless results.txt (its fixed 15-column rows), before the text-log readers
    "run_diagnosis.importers.yolo_results",
    # Ultralytics' console progress table (its header line names the columns)
    "run_diagnosis.importers.yolo_console",
    "run_diagnosis.importers.lightning_csv",
    "run_diagnosis.importers.wandb_history",
    "run_diagnosis.importers.wandb_run",
    # text logs with a line shape of their own, before the llm.c / nanoGPT / Megatron shapes
    "run_diagnosis.importers.fairseq_log",
    "run_diagnosis.importers.torchtune_log",
    "run_diagnosis.importers.text_logs",
    # after text_logs: Megatron-DeepSpeed stdout also prints DeepSpeed's `steps: N loss: X` lines
    "run_diagnosis.importers.trainer_stdout",
    # per-run histories written across (one row a fold or seed, one column an epoch), named by their
    # files: a header of consecutive whole numbers no other reader takes
    "run_diagnosis.importers.runs_across",
    # bare columns of numbers named by their files (np.savetxt of a Keras history): after the text
    # readers, so a folder holding a log beside a stray column is read from its log
    "run_diagnosis.importers.column_files",
    # last: it infers the layout of any line-oriented log, so it only reads what the others decline
    "run_diagnosis.importers.generic_log",
]


def importers() -> list[ModuleType]:
    """The importer modules that exist, in sniffing order."""
    found = []
    for name in IMPORTER_MODULES:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
    return found


def by_format(fmt: str) -> ModuleType:
    for module in importers():
        if fmt == module.FORMAT:
            return module
    known = ", ".join(m.FORMAT for m in importers())
    raise RunImportError(f"unknown format {fmt!r}; known formats: {known}")


def detect(path: Path) -> ModuleType:
    """The first importer whose sniff accepts path, or a RunImportError naming what was expected."""
    if not path.exists():
        raise RunImportError(f"{path}: no such file or folder")
    for module in importers():
        if module.sniff(path):
            return module
    for module in importers():
        explain = getattr(module, "explain", None)
        reason = explain(path) if explain is not None else None
        if reason:
            raise RunImportError(reason)
    expected = "; ".join(f"{m.FORMAT} ({m.DESCRIPTION})" for m in importers())
    shown = sorted(p.name for p in path.iterdir())[:10] if path.is_dir() else [path.name]
    summary_only = path / "files" / "wandb-summary.json"
    no_history = path.is_dir() and not any(path.glob("*.wandb")) and wandb_console(path) is None
    if no_history and summary_only.is_file():
        # a W&B run folder whose history file was not kept: say so first, in plain words
        kept = ", ".join(sorted(p.name for p in summary_only.parent.iterdir())[:10])
        raise RunImportError(
            f"{path}: a W&B run folder without its run-<id>.wandb history file, so there is no per-step "
            f"log to diagnose (files/ holds only {kept}); copy the .wandb file, or export the history "
            "(wandb.Api().run(path).scan_history()) and diagnose that"
        )
    raise RunImportError(
        f"{path}: not a training log this tool can read. Found: {', '.join(shown) or 'an empty folder'}. "
        f"Expected one of: {expected}"
    )


# the files of a W&B run folder (beside or instead of its run-<id>.wandb history)
WANDB_RUN_FILES = ("wandb-metadata.json", "wandb-summary.json", "config.yaml")


def unwrapped(path: Path) -> Path:
    """The run inside a folder that holds nothing but one folder (``wandb/latest-run/``, an archive
    unpacked into its own folder), followed down while that is so; else the path itself. A W&B run
    folder read from its console or its summary is a run, not a wrapper, though it may hold nothing
    but its files/ folder (its .wandb history left out of a commit)."""
    # an importer module (it imports this one): imported here, when first needed
    from run_diagnosis.importers import wandb_run

    while path.is_dir() and wandb_console(path) is None and not wandb_run.summary_only(path):
        entries = [p for p in path.iterdir() if not p.name.startswith(".")]
        if len(entries) != 1 or not entries[0].is_dir():
            break
        path = entries[0]
    return path


def wandb_run_folder(path: Path) -> bool:
    """A W&B run folder: its files/ folder holds one of the files W&B writes for every run."""
    files = path / "files"
    return any((files / name).is_file() for name in WANDB_RUN_FILES)


def wandb_console(path: Path) -> Path | None:
    """The console output (files/output.log) of a W&B run folder whose .wandb history was not kept
    (it is often the one large file left out of a commit): the run's printed log, read in its
    place. None when the folder has its history, is no W&B run folder, or kept no output.log."""
    if not path.is_dir() or any(path.glob("*.wandb")):
        return None
    log = path / "files" / "output.log"
    if not log.is_file() or not wandb_run_folder(path):
        return None
    # an importer module (it imports this one): imported here, when first needed
    from run_diagnosis.importers import wandb_run

    if wandb_run.summary_only(path) and not any(sniffs(module, log) for module in importers()):
        return None  # no importer reads what the run printed: its summary's final values are read
    return log


def sniffs(module: ModuleType, path: Path) -> bool:
    """module.sniff(path), False where the file cannot be read or its bytes make the sniff fail."""
    try:
        return bool(module.sniff(path))
    except (OSError, ValueError):
        return False


def wandb_history_console(path: Path) -> Path | None:
    """The console output (files/output.log) of a W&B run folder that kept its .wandb history: read
    when that history logged no loss (a run that logged only its accuracy to W&B and printed its
    loss); None when the folder has no history or no console output."""
    folder = path.parent if path.suffix == ".wandb" else path
    if not folder.is_dir() or not any(folder.glob("*.wandb")):
        return None
    log = folder / "files" / "output.log"
    return log if log.is_file() else None


def wandb_history_console_note(folder: Path, module: ModuleType) -> str:
    return (
        f"{folder}: its .wandb history logged no loss, so its console output files/output.log is read "
        f"instead (as {module.FORMAT}); what the run printed, not what it logged"
    )


def wandb_console_note(folder: Path, module: ModuleType) -> str:
    return (
        f"{folder}: a W&B run folder without its run-<id>.wandb history: its console output "
        f"files/output.log is read instead (as {module.FORMAT}); what the run printed, not what it logged"
    )


def load_console(folder: Path, console: Path, note: Callable[[Path, ModuleType], str]) -> RunData:
    """A W&B run folder read from its console output `console` in place of its history, the
    note (wandb_console_note, wandb_history_console_note) first among the run's notes."""
    module = detect(console)
    run = module.load(console)
    run.notes.insert(0, note(folder, module))
    return run


def generic_instead(module: ModuleType, path: Path, error: RunImportError) -> RunData:
    """The generic reader's reading of a file or folder that another reader claimed, by its name or
    its shape, and could not read (a DQN's `metrics.csv` of episode, reward and loss is no Lightning
    log): detection is a guess, and a guess that fails must not cost the diagnosis. The run's first
    note says so. The first reader's error, which says what it expected, when the generic reader
    cannot read it either, was the reader that failed, or the log is in the tool's own five files
    (their error names the file, row and column to mend)."""
    # importer modules (they import this one): imported here, when first needed
    from run_diagnosis.importers import canonical_files, generic_log

    if module in (generic_log, canonical_files):
        raise error
    try:
        run = generic_log.load(path)
    except RunImportError:
        raise error from None
    run.notes.insert(
        0,
        f"{path}: taken for a {module.FORMAT} log, which it could not be read as ({error}); read by the "
        "generic reader instead",
    )
    return run


def load_run(path: Path, fmt: str | None = None) -> RunData:
    console = wandb_console(path) if not fmt else None
    if console is not None:
        return load_console(path, console, wandb_console_note)
    module = by_format(fmt) if fmt else detect(path)
    try:
        return module.load(path)
    except NoLossError:
        console = wandb_history_console(path) if not fmt else None
        if console is None:
            raise
        return load_console(path, console, wandb_history_console_note)
    except RunImportError as error:
        if fmt:
            raise
        return generic_instead(module, path, error)
