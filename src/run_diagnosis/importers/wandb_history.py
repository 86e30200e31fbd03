"""W&B run history (CSV or JSONL), or any wide metrics history table -> canonical run.

What is read
------------
A *wide history*: one row per logging call, one column per metric, empty cells where a
call did not log that metric. This is what W&B gives you as

* ``run.history()`` / ``run.scan_history()`` saved with pandas (``df.to_csv`` or
  ``df.to_json(orient="records", lines=True)``): columns ``_step``, ``_runtime``,
  ``_timestamp``, ``train/loss``, ``train/grad_norm``, ``train/learning_rate``,
  ``train/global_step``, ``eval/loss``...;
* ``wandb-history.jsonl`` in an (older) local run folder ``wandb/run-*/files/``;
* a chart's "Export CSV" (columns ``Step``, ``<run> - train/loss``, ``..__MIN``/``__MAX``):
  the ``<run> - `` prefix is removed and the ``__MIN``/``__MAX`` band columns dropped.

Columns are read by the metric-name resolver (``importers.metric_names`` through
``aliases.column_map``; the user's ``RUN_DIAGNOSIS_ALIASES`` file wins). The step is the
trainer's own step (``train/global_step``, ``global_step``, ``step``) when present, else W&B's
``_step`` (which counts log calls).

* train rows: rows with a loss value; ``grad_norm``/``learning_rate``/``shard_id`` from the
  same row, or, when that row has none, from another row logged at the same step (tools
  that log the LR in its own call);
* eval rows: rows with a validation loss (and accuracy, share 0..1);
* ``step_time_sec``: a step-time column if there is one, else the average over each
  logging interval from ``_runtime`` (or ``_timestamp``) deltas (see
  ``aliases.step_times_from_elapsed``); a counter going backwards is a "run resumed" event;
* config: from training arguments beside the file (``importers.training_args``)
  (W&B's ``config.yaml`` in a run's ``files/`` folder has the Trainer's arguments when the
  run used the HF Trainer; ``output.log`` may hold a TrainingArguments dump).

What cannot be known: checkpoints and the way a run ended (history has no events),
``total_steps`` and the schedule unless a config says so, and whether ``grad_norm`` was
taken before or after clipping (HF Trainer and Lightning log it before).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import column_map, load_aliases
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.training_args import (
    config_from,
    explain_unknowns,
    find_training_args,
    positive_int,
    schedule_from_args,
)
from run_diagnosis.importers.wide_table import (
    CHART_BAND,
    CHART_COLUMN,
    Table,
    chart_columns,
    read_table,
    split_wide,
)

FORMAT = "wandb_history"
DESCRIPTION = (
    "W&B run history export or any wide metrics history (CSV or JSONL with a step and a loss column)"
)
SUFFIXES = (".csv", ".jsonl")
HISTORY_FILE = "wandb-history.jsonl"


def sniff(path: Path) -> bool:
    """A CSV/JSONL whose columns include a step and a loss alias, or a folder with exactly one."""
    try:
        files = _candidates(path)
        return len(files) == 1 and _looks_wide(files[0])
    except (OSError, ValueError, pd.errors.ParserError):
        return False  # a broken alias file (RunImportError) is reported, not taken as "not this format"


def load(path: Path, aliases: Path | None = None) -> RunData:
    """Read a wide history file (or the one such file in a folder); ``aliases``: see importers.aliases."""
    files = _candidates(path)
    if len(files) != 1:
        shown = ", ".join(f.name for f in files) or "none"
        raise RunImportError(
            f"{path}: expected one history file (*.csv or *.jsonl with a step and a loss column, "
            f"or {HISTORY_FILE}); found {len(files)}: {shown}"
        )
    return load_table(read_table(files[0]), path, files[0], aliases)


def load_table(
    table: Table, path: Path, file: Path, aliases: Path | None = None, config_dir: Path | None = None
) -> RunData:
    """One run from its wide table (``file``: where it came from, for names; training arguments
    from ``config_dir``, by default the file's folder)."""
    wide = split_wide(table, aliases)
    notes = table.notes + wide.notes
    args, sources = find_training_args(config_dir or file.parent, wide.train["learning_rate"], notes)
    total_steps = positive_int(args.get("max_steps"))
    if sources:
        notes.append(f"training arguments read from {', '.join(sources)}")
    run = wide.run(
        FORMAT,
        path,
        run_name=table.run_name or args.get("run_name") or file.stem,
        schedule=schedule_from_args(args, total_steps, notes) if args else {},
        notes=notes,
    )
    run.config = config_from({}, args, list(wide.train["step"]), list(wide.evals["step"]), total_steps, notes)
    explain_unknowns(run, bool(sources), file.name)
    return run


# ---------------------------------------------------------------- W&B chart exports, several runs


def chart_runs(path: Path) -> dict[str, list[Path]]:
    """Run name -> the chart-export CSVs holding it, for a chart CSV or a folder of them.

    A chart export (a panel's "Export CSV") has a ``Step`` column and ``<run> - <metric>``
    columns, with ``__MIN``/``__MAX`` band companions, one set per run shown in the panel.
    Empty when ``path`` holds no such file.
    """
    files = (
        sorted(p for p in path.iterdir() if p.suffix == ".csv" and p.is_file()) if path.is_dir() else [path]
    )
    runs: dict[str, list[Path]] = {}
    for file in files:
        if file.suffix != ".csv":
            continue
        try:
            columns = [str(c) for c in pd.read_csv(file, nrows=0).columns]
        except (ValueError, pd.errors.EmptyDataError, pd.errors.ParserError):
            continue
        metric = [c for c in columns if c != "Step" and not CHART_BAND.search(c)]
        matches = [CHART_COLUMN.match(c) for c in metric]
        if "Step" not in columns or not metric or not all(matches):
            continue
        for name in dict.fromkeys(m.group("run") for m in matches if m):
            runs.setdefault(name, []).append(file)
    return runs


def load_chart_run(files: Sequence[Path], run_name: str, aliases: Path | None = None) -> RunData:
    """One run of W&B chart exports: its ``<run> - <metric>`` columns of every file, joined on Step."""
    merged: pd.DataFrame | None = None
    prefix = f"{run_name} - "
    for file in files:
        frame = pd.read_csv(file, dtype=str, keep_default_na=False)
        keep = [c for c in frame.columns if str(c).startswith(prefix) and not CHART_BAND.search(str(c))]
        if not keep:
            continue
        part = frame[["Step", *keep]].rename(columns={c: str(c)[len(prefix) :] for c in keep})
        part = part[(part[[str(c)[len(prefix) :] for c in keep]] != "").any(axis=1)]
        merged = part if merged is None else merged.merge(part, on="Step", how="outer", suffixes=("", "_dup"))
    if merged is None or merged.empty:
        raise RunImportError(f"run {run_name!r}: no values in {', '.join(f.name for f in files)}")
    merged = merged.fillna("")
    merged["_step_order"] = pd.to_numeric(merged["Step"], errors="coerce")
    merged = (
        merged.sort_values("_step_order", kind="stable").drop(columns="_step_order").reset_index(drop=True)
    )
    names = [f"step {step}" for step in merged["Step"]]
    table = Table(merged, names, files[0], run_name=run_name)
    table.notes.append(
        f"W&B chart export: run {run_name!r} of {', '.join(f.name for f in files)} "
        "(column prefix removed, __MIN/__MAX bands dropped)"
    )
    run = load_table(table, files[0], files[0], aliases)
    run.run_name = run_name
    return run


# ---------------------------------------------------------------- reading


def _candidates(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path] if path.suffix in SUFFIXES else []
    for history in (path / HISTORY_FILE, path / "files" / HISTORY_FILE):
        if history.is_file():
            return [history]
    return sorted(p for p in path.iterdir() if p.suffix in SUFFIXES and p.is_file() and _looks_wide(p))


def _looks_wide(path: Path) -> bool:
    try:
        if path.suffix == ".jsonl":
            with path.open(encoding="utf-8") as handle:
                first = json.loads(handle.readline() or "null")
            columns = list(first) if isinstance(first, dict) else []
        else:
            columns = list(pd.read_csv(path, nrows=0).columns)
    except (ValueError, pd.errors.EmptyDataError, pd.errors.ParserError):
        return False  # JSONDecodeError and UnicodeDecodeError are ValueErrors
    columns = chart_columns(columns)[0]
    found = column_map(columns, load_aliases())
    return found.get("step") is not None and found.get("loss") is not None
