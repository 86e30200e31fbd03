"""A wide metrics table (one row per logging call, one column per metric) -> canonical frames.

Shared by the importers whose source is such a table (W&B history and chart exports, W&B run
files, Lightning's metrics.csv): ``read_table`` reads a CSV (cells kept as text) or JSONL
(values kept as JSON gave them), dropping the band columns and the run prefix of a W&B chart
export; ``split_wide`` cuts the train rows (a loss present), eval rows (a validation loss
present) and "run resumed" events out of it, the numeric columns read by the metric-name resolver
(``aliases.column_map``; the user's alias file wins).
See ``wandb_history`` for what is read and what cannot be known.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from run_diagnosis.importers import NoLossError, RunImportError
from run_diagnosis.importers.aliases import (
    ColumnMap,
    column_map,
    evaluation_sets,
    load_aliases,
    metric_column,
    read_jsonl,
    step_times_from_elapsed,
    to_float,
    to_step,
)
from run_diagnosis.importers.canonical import (
    NO_TRAINING_LOSS,
    TRAIN_COLUMNS,
    RunData,
    events_frame,
)
from run_diagnosis.importers.metric_names import resolve
from run_diagnosis.importers.training_args import epoch_fallback_events
from run_diagnosis.importers.units import SECONDS_PER_TIME_UNIT, cell_parser, column_unit, split_cell
from run_diagnosis.run_files import OPTIONAL_EVAL_COLUMNS, csv_columns

# names the resolver reads as each field, for messages
EXAMPLES = {
    "step": "step, global_step, iter, trainer/global_step, _step",
    "loss": "loss, train_loss, train/loss, lm loss, train/CrossEntropyLoss",
    "grad_norm": "grad_norm, gnorm, norm, optim/total_grad_norm",
    "learning_rate": "lr, learning_rate, lr-AdamW, optim/LR (group 0)",
}
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
    epochs: list[tuple[int, float | None]] = field(default_factory=list)  # (step, logged epoch)
    loss_name: str | None = None  # the column the training loss was read from
    counted_by_epoch: bool = False  # no step column: the epoch numbers the rows, one train row an epoch
    interval_mean_times: bool = False  # step_time_sec from a clock's differences: each the interval's mean
    logged_names: tuple[str, ...] = ()  # every column of the table

    def run(self, source_format: str, path: Path, **fields: Any) -> RunData:
        """The run these frames hold, read from `path`; `fields`: RunData's other fields."""
        fields.setdefault("loss_name", self.loss_name)
        fields.setdefault("interval_mean_times", self.interval_mean_times)
        fields.setdefault("logged_names", self.logged_names)
        return RunData(
            source_format, str(path), self.train, self.evals, events=events_frame(self.events), **fields
        )


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


def chart_columns(columns: Sequence[Any]) -> tuple[list[str], str | None, list[str]]:
    """W&B chart exports: drop __MIN/__MAX bands, strip a common '<run> - ' prefix."""
    kept = [str(c) for c in columns if not CHART_BAND.search(str(c))]
    dropped = [str(c) for c in columns if CHART_BAND.search(str(c))]
    metric = [c for c in kept if c != "Step"]
    matches = [CHART_COLUMN.match(c) for c in metric]
    runs = {m.group("run") for m in matches if m}
    if metric and all(matches) and len(runs) == 1:
        keys = {c: m.group("key") for c, m in zip(metric, matches, strict=True) if m}
        return [c if c == "Step" else keys[c] for c in kept], runs.pop(), dropped
    return kept, None, dropped


def _normalised(table: Table) -> Table:
    columns, run_name, dropped = chart_columns(list(table.frame.columns))
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


def _prefer_fuller_epoch_loss(table: Table, columns: ColumnMap, notes: list[str]) -> None:
    """Of a per-step loss `<name>_step` and its epoch aggregate `<name>_epoch` (Lightning's
    self.log(on_step=True, on_epoch=True)), the one holding more values is read, whichever the
    resolver chose: an epoch shorter than log_every_n_steps logs a step value only now and then
    (one in twelve epochs of five steps, at Lightning's default 50), while a run of one long epoch
    has one epoch mean beside many step values; the fuller series is the run's. As many of each (a
    step value logged once an epoch): the epoch means, each the mean of every batch of its epoch
    where a step value is one batch's."""
    chosen = columns.get("loss")
    if chosen is None:
        return
    twins = {"_step": "_epoch", "_epoch": "_step"}
    suffix = next((end for end in twins if chosen.endswith(end)), None)
    if suffix is None:
        return
    sibling = chosen.removesuffix(suffix) + twins[suffix]
    if sibling not in table.frame.columns:
        return
    counts = {
        name: int(pd.to_numeric(table.frame[name], errors="coerce").notna().sum())
        for name in (chosen, sibling)
    }
    if counts[sibling] == counts[chosen] and sibling.endswith("_epoch"):
        columns.columns["loss"] = sibling
        notes.append(
            f"loss <- {sibling!r}, not {chosen!r}: as many values of each (one step value an epoch), and an "
            "epoch mean averages every batch of its epoch where a step value is one batch's"
        )
    elif counts[sibling] > counts[chosen]:
        columns.columns["loss"] = sibling
        kind = "epoch means" if sibling.endswith("_epoch") else "per-step values"
        why = "epochs shorter than the logging interval" if kind == "epoch means" else "epochs longer than it"
        notes.append(
            f"loss <- {sibling!r} ({counts[sibling]} values), not {chosen!r} ({counts[chosen]}): the {kind} "
            f"are the fuller series ({why})"
        )


def split_wide(table: Table, alias_file: Path | None = None) -> WideFrames:
    """Train rows (loss present) and eval rows (val_loss present) of a wide table, its numeric
    columns read by the metric-name resolver (the user's `alias_file` or $RUN_DIAGNOSIS_ALIASES wins)."""
    frame = table.frame
    if frame.empty:
        raise RunImportError(f"{table.path}: no data rows: expected one row per logged step")
    columns = column_map(numeric_columns(frame), load_aliases(alias_file))
    notes = list(columns.notes)
    _prefer_fuller_epoch_loss(table, columns, notes)
    # a run that logs only its validation loss (a Lightning CSV of validation rows) is diagnosed
    # on that series: the training-loss checks are then listed as unable to run
    needed = (("step", "step"),) if columns.get("val_loss") else (("loss", "training-loss"), ("step", "step"))
    # no step column but an epoch counter (Lightning's TestTube-era CSV: train_loss, epoch,
    # created_at): the epoch is the counter, one row an epoch when it never repeats on a train row
    step_column = columns.get("step")
    if step_column is None and columns.get("epoch") is not None:
        step_column = columns.get("epoch")
        notes.append(f"no step column: the epoch counter {step_column!r} numbers the rows")
    for required, what in needed:
        if (step_column if required == "step" else columns.get(required)) is None:
            raise (NoLossError if required == "loss" else RunImportError)(
                f"{table.path}: no {what} column: no numeric column reads as the {what} "
                f"(e.g. {EXAMPLES[required]}); found columns: {', '.join(map(str, frame.columns))}"
                f"{_not_understood(columns)}. Name yours in an alias file ('{required}: [name]', "
                "RUN_DIAGNOSIS_ALIASES, see importers/aliases.py)"
            )
    steps = _cells(table, step_column, to_step)
    epoch_column = columns.get("epoch")
    if epoch_column is not None and epoch_column != step_column:
        composed = within_epoch_steps(steps, _cells(table, epoch_column, to_float))
        if composed is not None:
            steps, period = composed
            notes.append(
                f"{step_column!r} starts again each {epoch_column!r}: step = ({epoch_column} - first) "
                f"x {period} + {step_column}"
            )
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
    if columns.get("val_loss") is None and columns.get("val_accuracy") is not None:
        # no held-out loss at all: the evaluations are the rows with an accuracy (accuracy-only
        # evaluations: staging sets them aside from the loss checks; overfitting:accuracy_gap reads them)
        accuracy_cells = _cells(table, columns.get("val_accuracy"), to_float)
        eval_rows = [i for i in rows if accuracy_cells[i] is not None]
        if eval_rows:
            notes.append(
                f"no validation loss logged: {len(eval_rows)} evaluation(s) with only an accuracy "
                f"({columns.get('val_accuracy')})"
            )
    if not train_rows and not eval_rows:
        raise RunImportError(
            f"{table.path}: column {columns.get('loss') or columns.get('val_loss')!r} has no values: "
            "expected a training loss on some rows"
        )
    if not train_rows:
        notes.append(NO_TRAINING_LOSS.format(name=columns.get("val_loss")))

    train = pd.DataFrame({"step": pd.Series([steps[i] for i in train_rows], dtype="int64")})
    train["loss"] = metric_column([values["loss"][i] for i in train_rows])
    for name in ("grad_norm", "learning_rate"):
        train[name] = metric_column(_by_row_or_step(table, columns, name, steps, train_rows, notes))
    shard_column = columns.get("shard_id")
    if shard_column is not None:
        train["shard_id"] = [_text(frame[shard_column].iloc[i]) for i in train_rows]
    times, events, interval_means = _step_times(table, columns, steps, rows, train_rows, notes)
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
    for optional in OPTIONAL_EVAL_COLUMNS:  # a detector's mAP50, a ROC AUC: written only when logged
        if columns.get(optional) is not None:
            scores = _by_row_or_step(table, columns, optional, steps, eval_rows, notes)
            evals[optional] = metric_column(scores)

    def read(fieldname: str, name: str) -> list[tuple[int, float | None]]:
        cells = _cells(table, name, cell_parser(fieldname, name, to_float))
        return [(steps[i], cells[i]) for i in rows]

    sets = evaluation_sets(columns, read)
    if sets is not None:
        evals, set_notes = sets
        eval_rows = list(evals.index)
        notes += set_notes
    notes.append("columns used: " + columns.used())
    notes += _missing_notes(columns, eval_rows)
    epochs = read("epoch", epoch_column) if epoch_column is not None and epoch_column != step_column else []
    events = events + epoch_fallback_events(epochs)
    counted_by_epoch = step_column != columns.get("step") and not train["step"].duplicated().any()
    return WideFrames(
        train.reindex(columns=TRAIN_COLUMNS),
        evals.reindex(columns=csv_columns("eval", list(evals.columns))),
        events,
        notes,
        epochs,
        columns.get("loss"),
        counted_by_epoch,
        interval_means,
        tuple(map(str, frame.columns)),
    )


def within_epoch_steps(
    steps: Sequence[int | None], epochs: Sequence[float | None]
) -> tuple[list[int | None], int] | None:
    """(steps, period) when the step counter counts within an epoch ('epoch,batch,loss': the
    batch starts again at each epoch): it goes back, and only ever where the epoch advances, so
    step = (epoch - first epoch) x period + counter, the period the counter's span plus its
    interval; None otherwise (a counter that never goes back, or goes back without the epoch: an
    appended restart, which must show)."""
    rows = [
        (i, s, e)
        for i, (s, e) in enumerate(zip(steps, epochs, strict=True))
        if s is not None and e is not None
    ]
    if len(rows) < 2 or not all(math.isfinite(e) and e == int(e) for _, _, e in rows):
        return None
    neighbours = list(itertools.pairwise(rows))
    drops = [(a, b) for a, b in neighbours if b[1] < a[1]]
    if not drops or any(b[2] <= a[2] for a, b in drops) or any(b[2] < a[2] for a, b in neighbours):
        return None
    gaps = [b[1] - a[1] for a, b in neighbours if b[1] > a[1]]
    values = [s for _, s, _ in rows]
    period = max(values) - min(values) + (min(gaps) if gaps else 1)
    first = min(e for _, _, e in rows)
    composed: list[int | None] = [None] * len(steps)
    for i, s, e in rows:
        composed[i] = int((e - first) * period + s)
    return composed, period


def _not_understood(columns: ColumnMap) -> str:
    names = columns.assignment.not_understood
    return f" (not understood: {', '.join(names)})" if names else ""


def numeric_columns(frame: pd.DataFrame) -> list[str]:
    """The columns with at least one numeric cell (text columns such as a run name are not metrics)."""
    return [
        str(column) for column in frame.columns if any(_is_number(cell) for cell in frame[column].tolist())
    ]


def _is_number(cell: Any) -> bool:
    """A number, or a number with a unit ('2.41 bits', units.split_cell)."""
    try:
        return to_float(cell) is not None
    except ValueError:
        pass
    try:
        split_cell(str(cell))
    except ValueError:
        return False
    return True


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
        value, step = values[i], steps[i]
        if value is None and step is not None and step in at_step:
            value = at_step[step]
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
) -> tuple[list[float | None], list[tuple[int, str]], bool]:
    """Each training row's step time, the resume events a clock starting over shows, and whether
    the times are the means over the logging intervals (read off a clock's differences)."""
    if columns.get("step_time_sec") is not None:
        notes.append(f"step_time_sec from column {columns.get('step_time_sec')!r}")
        return _by_row_or_step(table, columns, "step_time_sec", steps, train_rows, notes), [], False
    counter = columns.get("elapsed_sec") or columns.get("timestamp_sec")
    if counter is None:
        notes.append("no step-time or elapsed-time column (e.g. _runtime): step_time_sec is empty")
        return [None] * len(train_rows), [], False
    key = "elapsed_sec" if columns.get("elapsed_sec") else "timestamp_sec"
    # a clock kept in another unit than seconds says so in its name (elapsed_hours, elapsed_ms)
    scale = SECONDS_PER_TIME_UNIT.get(resolve(counter).unit, 1.0)
    elapsed = [None if v is None else v * scale for v in _cells(table, columns.get(key), to_float)]
    row_steps = [step for i in rows if (step := steps[i]) is not None]  # rows: those with a step
    times, resets = step_times_from_elapsed(row_steps, [elapsed[i] for i in rows], notes, repr(counter))
    by_row = dict(zip(rows, times, strict=True))
    if any(t is not None for t in times):
        notes.append(
            f"step_time_sec from {counter!r} deltas / step deltas between consecutive logged rows: "
            "the average over each logging interval; the first row has no earlier time"
        )
    events = [(step, f"run resumed: {counter} restarted (a new process)") for step in resets]
    return [by_row[i] for i in train_rows], events, any(t is not None for t in times)


def _missing_notes(columns: ColumnMap, eval_rows: list[int]) -> list[str]:
    notes = []
    if columns.get("grad_norm") is None:
        notes.append(
            f"no grad_norm column (no column reads as one, e.g. {EXAMPLES['grad_norm']}): "
            "gradient-norm and clip checks cannot run"
        )
    if columns.get("learning_rate") is None:
        notes.append(
            f"no learning-rate column (no column reads as one, e.g. {EXAMPLES['learning_rate']}): "
            "the LR cannot be checked against a schedule"
        )
    if not eval_rows:
        notes.append("no validation-loss values: evaluation checks cannot run")
    if columns.get("shard_id") is None:
        notes.append("no shard column: per-shard checks cannot run")
    return notes


def _text(cell: Any) -> str | None:
    return None if cell is None or str(cell) == "" else str(cell)
