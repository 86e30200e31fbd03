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

Columns are matched to canonical fields through ``importers.aliases`` (overridable with
``RUN_DIAGNOSIS_ALIASES``). The step is the trainer's own step (``train/global_step``,
``global_step``, ``step``) when present, else W&B's ``_step`` (which counts log calls).

* train rows: rows with a loss value; ``grad_norm``/``learning_rate``/``shard_id`` from the
  same row, or, when that row has none, from another row logged at the same step (tools
  that log the LR in its own call);
* eval rows: rows with a validation loss (and accuracy, share 0..1);
* ``step_time_sec``: a step-time column if there is one, else the average over each
  logging interval from ``_runtime`` (or ``_timestamp``) deltas (see
  ``aliases.step_times_from_elapsed``); a counter going backwards is a "run resumed" event;
* config: from training arguments beside the file, found as ``hf_trainer`` finds them
  (W&B's ``config.yaml`` in a run's ``files/`` folder has the Trainer's arguments when the
  run used the HF Trainer; ``output.log`` may hold a TrainingArguments dump).

What cannot be known: checkpoints and the way a run ended (history has no events),
``total_steps`` and the schedule unless a config says so, and whether ``grad_norm`` was
taken before or after clipping (HF Trainer and Lightning log it before).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from importers import RunImportError
from importers.aliases import (
    ColumnMap,
    load_aliases,
    metric_column,
    read_jsonl,
    resolve,
    step_times_from_elapsed,
    to_float,
    to_step,
)
from importers.canonical import EVAL_COLUMNS, EVENT_COLUMNS, TRAIN_COLUMNS, RunData
from importers.training_args import (
    config_from,
    explain_unknowns,
    find_training_args,
    positive_int,
    schedule_from_args,
)
from importers.units import cell_parser, column_unit

FORMAT = "wandb_history"
DESCRIPTION = (
    "W&B run history export or any wide metrics history (CSV or JSONL with a step and a loss column)"
)
SUFFIXES = (".csv", ".jsonl")
HISTORY_FILE = "wandb-history.jsonl"
CHART_COLUMN = re.compile(r"^(?P<run>.+?) - (?P<key>.+)$")
CHART_BAND = re.compile(r"__(MIN|MAX)$")


@dataclass
class Table:
    """A wide table as read: cells as text (CSV) or JSON values (JSONL), and row labels for errors."""

    frame: pd.DataFrame
    row_names: list[str]
    path: Path
    run_name: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class WideFrames:
    """Canonical frames cut out of a wide table."""

    train: pd.DataFrame
    evals: pd.DataFrame
    events: list[tuple[int, str]]
    notes: list[str]


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
    alias_table = load_aliases(aliases)
    wide = split_wide(table, resolve(table.frame.columns, alias_table), alias_table)
    notes = table.notes + wide.notes
    args, sources = find_training_args(config_dir or file.parent)
    total_steps = positive_int(args.get("max_steps"))
    if sources:
        notes.append(f"training arguments read from {', '.join(sources)}")
    run = RunData(
        source_format=FORMAT,
        source_path=str(path),
        train=wide.train,
        evals=wide.evals,
        events=pd.DataFrame(sorted(wide.events, key=lambda e: e[0]), columns=EVENT_COLUMNS),
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
    columns = _chart_columns(columns)[0]
    found = resolve(columns, load_aliases())
    return found.get("step") is not None and found.get("loss") is not None


def read_table(path: Path) -> Table:
    """A CSV (cells kept as text) or JSONL (values kept as JSON gave them) wide table."""
    if path.stat().st_size == 0:
        raise RunImportError(f"{path}: the file is empty (0 bytes): expected a header row and metric rows")
    if path.suffix == ".jsonl":
        records = read_jsonl(path)
        keys = list(dict.fromkeys(key for _, record in records for key in record))
        # object columns keep an absent key (None) apart from a logged NaN (float nan)
        frame = pd.DataFrame(
            {key: pd.Series([r.get(key) for _, r in records], dtype="object") for key in keys}
        )
        names = [f"line {number}" for number, _ in records]
        return _normalised(Table(frame, names, path))
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError as error:
        raise RunImportError(f"{path}: no header row: expected CSV with a step and a loss column") from error
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise RunImportError(f"{path}: not readable as CSV: {error}") from error
    names = [f"row {index + 1} (line {index + 2})" for index in range(len(frame))]
    return _normalised(Table(frame, names, path))


def _chart_columns(columns: Sequence[Any]) -> tuple[list[str], str | None, list[str]]:
    """W&B chart exports: drop __MIN/__MAX bands, strip a common '<run> - ' prefix."""
    kept = [str(c) for c in columns if not CHART_BAND.search(str(c))]
    dropped = [str(c) for c in columns if CHART_BAND.search(str(c))]
    metric = [c for c in kept if c != "Step"]
    matches = [CHART_COLUMN.match(c) for c in metric]
    runs = {m.group("run") for m in matches if m}
    if metric and all(matches) and len(runs) == 1:
        return [c if c == "Step" else CHART_COLUMN.match(c).group("key") for c in kept], runs.pop(), dropped
    return kept, None, dropped


def _normalised(table: Table) -> Table:
    columns, run_name, dropped = _chart_columns(list(table.frame.columns))
    if run_name is None and not dropped:
        return table
    frame = table.frame.drop(columns=dropped)
    frame.columns = columns
    table.frame, table.run_name = frame, run_name
    if run_name:
        table.notes.append(f"W&B chart export of run {run_name!r}: column prefix removed")
    if dropped:
        table.notes.append(f"dropped {len(dropped)} __MIN/__MAX band columns of a W&B chart export")
    return table


# ---------------------------------------------------------------- wide table -> frames


def split_wide(table: Table, columns: ColumnMap, aliases: dict[str, list[str]]) -> WideFrames:
    """Train rows (loss present) and eval rows (val_loss present) of a wide table."""
    notes = list(columns.notes)
    frame = table.frame
    if frame.empty:
        raise RunImportError(f"{table.path}: no data rows: expected one row per logged step")
    for required, what in (("step", "step"), ("loss", "training-loss")):
        if columns.get(required) is None:
            raise RunImportError(
                f"{table.path}: no {what} column: expected one of {', '.join(aliases[required])}; "
                f"found columns: {', '.join(map(str, frame.columns))}. "
                "Name yours in an alias file (RUN_DIAGNOSIS_ALIASES, see importers/aliases.py)"
            )
    if columns.get("step") == "_step":
        notes.append("step is W&B's _step (a count of log calls, not necessarily optimizer steps)")
    steps = _cells(table, columns.get("step"), to_step)
    has_step = [s is not None for s in steps]
    if not all(has_step):
        notes.append(f"skipped {has_step.count(False)} rows without a step value")
    rows = [i for i, ok in enumerate(has_step) if ok]
    # a unit in the cell ("2.41 BPC") or the column name (val_bpc) converts to nats
    values = {
        name: _cells(table, columns.get(name), cell_parser(name, columns.get(name), to_float))
        for name in ("loss", "val_loss")
    }
    notes += [
        f"{columns.get(name)}: the column name states the unit {column_unit(str(columns.get(name)))!r}: "
        "converted to nats"
        for name in ("loss", "val_loss")
        if columns.get(name) and column_unit(str(columns.get(name)))
    ]
    train_rows = [i for i in rows if values["loss"][i] is not None]
    eval_rows = [i for i in rows if values["val_loss"][i] is not None]
    if not train_rows:
        raise RunImportError(
            f"{table.path}: column {columns.get('loss')!r} has no values: "
            "expected a training loss on some rows"
        )

    train = pd.DataFrame({"step": pd.Series([steps[i] for i in train_rows], dtype="int64")})
    train["loss"] = metric_column([values["loss"][i] for i in train_rows])
    for name in ("grad_norm", "learning_rate"):
        train[name] = metric_column(_by_row_or_step(table, columns, name, steps, train_rows, notes))
    shard_column = columns.get("shard_id")
    if shard_column is not None:
        train["shard_id"] = [_text(frame[shard_column].iloc[i]) for i in train_rows]
    times, events = _step_times(table, columns, steps, rows, train_rows, notes)
    train["step_time_sec"] = metric_column(times)

    evals = pd.DataFrame({"step": pd.Series([steps[i] for i in eval_rows], dtype="int64")})
    evals["val_loss"] = metric_column([values["val_loss"][i] for i in eval_rows])
    accuracy = _by_row_or_step(table, columns, "val_accuracy", steps, eval_rows, notes)
    if any(a is not None and not 0.0 <= a <= 1.0 for a in accuracy):
        notes.append(
            f"{columns.get('val_accuracy')} has values outside 0..1 (a percentage?): val_accuracy empty"
        )
        accuracy = [None] * len(eval_rows)
    evals["val_accuracy"] = metric_column(accuracy)
    notes += _missing_notes(columns, aliases, eval_rows)
    return WideFrames(
        train.reindex(columns=TRAIN_COLUMNS), evals.reindex(columns=EVAL_COLUMNS), events, notes
    )


def _cells(table: Table, column: str | None, parse: Any) -> list[Any]:
    """Every row's value of one column, parsed; RunImportError naming the row and column."""
    if column is None:
        return [None] * len(table.frame)
    parsed = []
    for name, cell in zip(table.row_names, table.frame[column].tolist(), strict=True):
        try:
            parsed.append(parse(cell))
        except ValueError as error:
            raise RunImportError(f"{table.path}, {name}, column {column!r}: {error}") from error
    return parsed


def _by_row_or_step(
    table: Table, columns: ColumnMap, name: str, steps: list[int | None], rows: list[int], notes: list[str]
) -> list[float | None]:
    """A metric for each row: its own cell, else the first value logged at the same step."""
    values = _cells(table, columns.get(name), to_float)
    at_step: dict[int, float] = {}
    for step, value in zip(steps, values, strict=True):
        if step is not None and value is not None:
            at_step.setdefault(step, value)
    picked = []
    joined = 0
    for i in rows:
        value = values[i]
        if value is None and steps[i] in at_step:
            value = at_step[steps[i]]
            joined += 1
        picked.append(value)
    if joined:
        notes.append(f"{name} for {joined} rows taken from another row logged at the same step")
    return picked


def _step_times(
    table: Table,
    columns: ColumnMap,
    steps: list[int | None],
    rows: list[int],
    train_rows: list[int],
    notes: list[str],
) -> tuple[list[float | None], list[tuple[int, str]]]:
    if columns.get("step_time_sec") is not None:
        notes.append(f"step_time_sec from column {columns.get('step_time_sec')!r}")
        return _by_row_or_step(table, columns, "step_time_sec", steps, train_rows, notes), []
    counter = columns.get("elapsed_sec") or columns.get("timestamp_sec")
    if counter is None:
        notes.append("no step-time or elapsed-time column (e.g. _runtime): step_time_sec is empty")
        return [None] * len(train_rows), []
    key = "elapsed_sec" if columns.get("elapsed_sec") else "timestamp_sec"
    elapsed = _cells(table, columns.get(key), to_float)
    times, resets = step_times_from_elapsed([steps[i] for i in rows], [elapsed[i] for i in rows])
    by_row = dict(zip(rows, times, strict=True))
    notes.append(
        f"step_time_sec from {counter!r} deltas / step deltas between consecutive logged rows: "
        "the average over each logging interval; the first row has no earlier time"
    )
    events = [(step, f"run resumed: {counter} restarted (a new process)") for step in resets]
    return [by_row[i] for i in train_rows], events


def _missing_notes(columns: ColumnMap, aliases: dict[str, list[str]], eval_rows: list[int]) -> list[str]:
    notes = []
    if columns.get("grad_norm") is None:
        notes.append(
            f"no grad_norm column (looked for {', '.join(aliases['grad_norm'])}): "
            "gradient-norm and clip checks cannot run"
        )
    if columns.get("learning_rate") is None:
        notes.append(
            f"no learning-rate column (looked for {', '.join(aliases['learning_rate'])}): "
            "the LR cannot be checked against a schedule"
        )
    if not eval_rows:
        notes.append("no validation-loss values: evaluation checks cannot run")
    if columns.get("shard_id") is None:
        notes.append("no shard column: per-shard checks cannot run")
    return notes


def _text(cell: Any) -> str | None:
    return None if cell is None or str(cell) == "" else str(cell)
