"""Logged metric records -> the canonical train and eval frames, every name read by the resolver.

Shared by the importers whose source is a stream of (step, {metric name: value}) records with
names the tool chose (MLflow, Trackio, Parquet exports, Keras, torchtune, fairseq, OLMo /
Composer / DeepSpeed stdout). Each importer turns its layout into ``Record``s and says what its
format means by its numbers (``Conventions``); this module does the rest the same way for all:

* every name goes through ``metric_names.assign`` (no name table here): the plain training loss
  is ``loss``, the plain validation loss ``val_loss``, and so on; ambiguities and names it could
  not place become notes;
* a train row is a record with a training-loss value (a logged NaN or inf is kept: it is a
  finding), an eval row one with a validation-loss value; learning rate and grad norm come from
  the same record, else from the first record of the same step that has them;
* units: a loss the resolver reads as perplexity or bits, or that the format logs in bits
  (fairseq), is converted to nats (``units``); an accuracy in percent to a share; a step time
  in ms to seconds;
* step time: a step-time metric when logged, else the deltas of an elapsed-time or timestamp
  metric over the steps between consecutive records (an average over the logging interval);
  a counter that goes backwards is a new process (a "run resumed" event).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from run_diagnosis.importers import NoLossError, RunImportError, training_args
from run_diagnosis.importers.aliases import (
    DECIMAL_COMMA,
    UNREADABLE,
    clock_reset_events,
    column_map,
    evaluation_sets,
    files_to_read,
    is_decimal_comma,
    load_aliases,
    metric_column,
    python_literal,
    step_times_from_elapsed,
)
from run_diagnosis.importers.canonical import (
    NO_TRAINING_LOSS,
    TRAIN_COLUMNS,
    RunData,
    events_frame,
)
from run_diagnosis.importers.metric_names import Assignment, resolve
from run_diagnosis.importers.units import SECONDS_PER_TIME_UNIT, UnitError, convert
from run_diagnosis.run_files import OPTIONAL_EVAL_COLUMNS, csv_columns


@dataclass
class Record:
    """One logging call: its step, its values by logged name (None: not logged), where it is."""

    step: int
    values: dict[str, float | None]
    origin: str  # "line 12", "row 3": for errors and notes


@dataclass(frozen=True)
class Conventions:
    """What a format means by its numbers, beyond the names."""

    loss_unit: str | None = None  # unit of losses whose name states none (fairseq: "bits")
    step_time_unit: str | None = None  # unit of a step-time metric whose name states none
    timestamp_unit: str | None = None  # "ms" for millisecond timestamps (MLflow)


@dataclass
class Frames:
    """The canonical frames cut out of the records, with the notes on how."""

    train: pd.DataFrame
    evals: pd.DataFrame
    events: list[tuple[int, str]]
    notes: list[str]
    assignment: Assignment
    interval_mean_times: bool = False  # step_time_sec from a clock's differences: each the interval's mean

    def run(self, source_format: str, source_path: str, **fields: Any) -> RunData:
        notes = [*self.notes, *fields.pop("notes", [])]
        events = [*self.events, *fields.pop("events", [])]
        fields.setdefault("loss_name", self.assignment.get("loss"))
        fields.setdefault("interval_mean_times", self.interval_mean_times)
        fields.setdefault("logged_names", tuple(self.assignment.meanings))
        return RunData(
            source_format,
            source_path,
            self.train,
            self.evals,
            events=events_frame(events),
            notes=notes,
            **fields,
        )


def number(value: Any, decimal_comma: bool = False) -> float | None:
    """A logged value as a float: None when absent or not numeric text, nan/inf kept; thousands
    separators (``8,388,608``) are removed, a decimal comma (``0,4216``: digits after it that are
    no group of three) is a decimal point; so is every single comma of a file that writes decimal
    commas (decimal_comma: its ``1,218`` is 1.218, not 1218)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    if "," in text:
        decimal = is_decimal_comma(text) or (decimal_comma and DECIMAL_COMMA.fullmatch(text))
        text = text.replace(",", ".") if decimal else text.replace(",", "")
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _converted(name: str, fieldname: str, value: float | None, conventions: Conventions) -> float | None:
    if value is None or not math.isfinite(value):
        return value
    meaning = resolve(name)
    unit = meaning.unit
    if fieldname in ("loss", "val_loss") and unit in (None, "nats"):
        unit = conventions.loss_unit
    if fieldname == "step_time_sec":
        return value * SECONDS_PER_TIME_UNIT.get(unit or conventions.step_time_unit, 1.0)
    if fieldname in ("elapsed_sec", "timestamp_sec"):
        scale = SECONDS_PER_TIME_UNIT.get(
            unit or (conventions.timestamp_unit if fieldname == "timestamp_sec" else None), 1.0
        )
        return value * scale
    if fieldname in ("loss", "val_loss", "val_accuracy"):
        try:
            return convert(fieldname, value, unit)
        except UnitError as error:
            raise RunImportError(f"{name}: {error}") from error
    return value


def build_frames(records: Sequence[Record], source: str, conventions: Conventions = Conventions()) -> Frames:
    """The canonical frames of `records` (in file order); RunImportError naming `source` when
    there is no training loss. The user's alias file (``RUN_DIAGNOSIS_ALIASES``) wins over the
    resolver, as for every importer (``aliases.column_map``)."""
    if not records:
        raise RunImportError(f"{source}: no logged metrics found")
    names = list(dict.fromkeys(name for record in records for name in record.values))
    mapping = column_map(names, load_aliases())
    assignment = mapping.assignment
    columns = mapping.columns
    notes = list(mapping.notes)
    if "loss" not in columns and "val_loss" not in columns:
        raise NoLossError(
            f"{source}: no training-loss metric among the logged names ({', '.join(names[:20])}"
            f"{' ...' if len(names) > 20 else ''}); "
            "name it in an alias file (RUN_DIAGNOSIS_ALIASES: loss: [NAME])"
        )
    notes.append(
        "metric names: "
        + ", ".join(f"{fieldname} <- {name!r}" for fieldname, name in columns.items() if fieldname != "step")
    )

    def value(record: Record, fieldname: str) -> float | None:
        name = columns.get(fieldname)
        if name is None:
            return None
        return _converted(name, fieldname, record.values.get(name), conventions)

    train_rows = [r for r in records if value(r, "loss") is not None]
    eval_rows = [r for r in records if value(r, "val_loss") is not None]
    if not train_rows and eval_rows:
        notes.append(NO_TRAINING_LOSS.format(name=columns.get("val_loss")))
    train = pd.DataFrame({"step": pd.Series([r.step for r in train_rows], dtype="int64")})
    train["loss"] = metric_column([value(r, "loss") for r in train_rows])
    for fieldname in ("grad_norm", "learning_rate"):
        train[fieldname] = metric_column(
            _by_row_or_step(records, train_rows, lambda r, f=fieldname: value(r, f))
        )
    times, events, interval_means = _step_times(records, train_rows, columns, value, notes)
    train["step_time_sec"] = metric_column(times)

    evals = pd.DataFrame({"step": pd.Series([r.step for r in eval_rows], dtype="int64")})
    evals["val_loss"] = metric_column([value(r, "val_loss") for r in eval_rows])
    accuracy = _by_row_or_step(records, eval_rows, lambda r: value(r, "val_accuracy"))
    if any(a is not None and math.isfinite(a) and not 0.0 <= a <= 1.0 for a in accuracy):
        notes.append(f"{columns.get('val_accuracy')} has values outside 0..1: val_accuracy left empty")
        accuracy = [None] * len(eval_rows)
    evals["val_accuracy"] = metric_column(accuracy)
    for optional in OPTIONAL_EVAL_COLUMNS:  # a detector's mAP50, a ROC AUC: written only when logged
        if columns.get(optional) is not None:
            scores = _by_row_or_step(records, eval_rows, lambda r, f=optional: value(r, f))
            evals[optional] = metric_column(scores)
    sets = evaluation_sets(
        mapping,
        lambda fieldname, name: [
            (r.step, _converted(name, fieldname, r.values.get(name), conventions)) for r in records
        ],
    )
    if sets is not None:
        evals, set_notes = sets
        notes += set_notes
    notes += _missing(columns, not evals.empty)
    return Frames(
        train.reindex(columns=TRAIN_COLUMNS),
        evals.reindex(columns=csv_columns("eval", list(evals.columns))),
        events,
        notes,
        assignment,
        interval_means,
    )


def _by_row_or_step(records: Sequence[Record], rows: Sequence[Record], get: Any) -> list[float | None]:
    """A metric for each row: its own value, else the first value logged at the same step."""
    at_step: dict[int, float] = {}
    for record in records:
        found = get(record)
        if found is not None:
            at_step.setdefault(record.step, found)
    picked = []
    for row in rows:
        found = get(row)
        picked.append(found if found is not None else at_step.get(row.step))
    return picked


def _step_times(
    records: Sequence[Record],
    train_rows: Sequence[Record],
    columns: Mapping[str, str],
    value: Any,
    notes: list[str],
) -> tuple[list[float | None], list[tuple[int, str]], bool]:
    """Each training row's step time, the resume events a clock going back shows, and whether
    the times are the means over the logging intervals (read off a clock's differences)."""
    if "step_time_sec" in columns:
        notes.append(f"step_time_sec from {columns['step_time_sec']!r}")
        return _by_row_or_step(records, train_rows, lambda r: value(r, "step_time_sec")), [], False
    counter = (
        "elapsed_sec" if "elapsed_sec" in columns else "timestamp_sec" if "timestamp_sec" in columns else None
    )
    if counter is None:
        notes.append("no step-time, elapsed-time or timestamp metric: step_time_sec is empty")
        return [None] * len(train_rows), [], False
    with_time = [r for r in records if value(r, counter) is not None]
    times, resets = step_times_from_elapsed(
        [r.step for r in with_time], [value(r, counter) for r in with_time], notes, repr(columns[counter])
    )
    by_record = {id(r): t for r, t in zip(with_time, times, strict=True)}
    if any(t is not None for t in times):
        notes.append(
            f"step_time_sec from {columns[counter]!r} deltas / step deltas between consecutive records: "
            "the average over each logging interval (a checkpoint or an evaluation inside it included)"
        )
    events = clock_reset_events(resets, columns[counter])
    return [by_record.get(id(r)) for r in train_rows], events, any(t is not None for t in times)


def _missing(columns: Mapping[str, str], has_evals: bool) -> list[str]:
    notes = []
    if "grad_norm" not in columns:
        notes.append("no gradient-norm metric: gradient-norm and clip checks cannot run")
    if "learning_rate" not in columns:
        notes.append("no learning-rate metric: the LR cannot be checked against a schedule")
    if not has_evals:
        notes.append("no validation-loss values: evaluation checks cannot run")
    notes.append("no shard ids in this format: per-shard checks cannot run")
    return notes


def flat_keys(document: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested config or summary flattened, its keys joined with ``/`` (``model/lr``)."""
    flat: dict[str, Any] = {}
    for key, value in document.items():
        if isinstance(value, Mapping):
            flat.update(flat_keys(value, f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def records_from_rows(rows: Iterable[tuple[int, Mapping[str, Any], str]]) -> list[Record]:
    """Records from (step, {name: raw value}, origin) rows, values read with ``number``."""
    return [Record(step, {k: number(v) for k, v in values.items()}, origin) for step, values, origin in rows]


@dataclass
class Counters:
    """A cumulative counter per record (DeepSpeed ``skipped=K``) turned into events where it rises."""

    events: list[tuple[int, str]] = field(default_factory=list)
    last: float | None = None

    def feed(self, step: int, count: float | None, what: str) -> None:
        if count is None or not math.isfinite(count):
            return
        if self.last is not None and count > self.last:
            self.events.append((step, what.format(n=int(count - self.last), total=int(count))))
        self.last = count


def single_file(
    path: Path, candidates: Callable[[Path], list[Path]], sniff_one: Callable[[Path], bool], what: str
) -> Path:
    """The one file of `what` at path (the file itself, or the one in the folder that sniffs as it);
    RunImportError naming what was found otherwise."""
    files = files_to_read(path, candidates, sniff_one)
    if len(files) != 1:
        found = ", ".join(f.name for f in files) or "none"
        raise RunImportError(f"{path}: expected one {what}, found {len(files)}: {found}")
    return files[0]


def records_from_long(
    rows: Iterable[tuple[int, str, float | None, float | None]], origin: str
) -> list[Record]:
    """Records from a long table's (step, name, value, timestamp in seconds or None) rows: one
    record per step, in step order (then time); a name logged twice at one step opens a second
    record of that step (a replay after a resume, kept). The record's ``_timestamp`` is the
    earliest time logged with it."""
    ordered = sorted(rows, key=lambda r: (r[0], r[3] if r[3] is not None else -math.inf))
    records: list[Record] = []
    current: Record | None = None
    for step, name, value, seconds in ordered:
        if current is None or current.step != step or name in current.values:
            current = Record(step, {}, f"{origin}, step {step}")
            records.append(current)
        current.values[name] = value
        if seconds is not None and current.values.get("_timestamp") is None:
            current.values["_timestamp"] = seconds
    return records


HF_ARGUMENT_KEYS = ("learning_rate", "lr_scheduler_type", "max_grad_norm")


def _param_value(text: Any) -> Any:
    """A logged param (text) as the Python value it prints (numbers, booleans, lists), else text."""
    if not isinstance(text, str):
        return text
    value = python_literal(text)
    if value is UNREADABLE:
        return {"true": True, "false": False, "none": None}.get(text.strip().lower(), text)
    return value


def settings_from_params(
    params: Mapping[str, Any], frames: Frames, notes: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Schedule and config from a tracked run's params (MLflow params, Trackio config) when they
    are Hugging Face TrainingArguments (what HF's MLflow and Trackio callbacks log), read as
    ``importers.training_args`` reads them; otherwise nothing is guessed."""
    args = {key.split("/")[-1]: _param_value(value) for key, value in params.items()}
    if not all(key in args for key in HF_ARGUMENT_KEYS):
        notes.append(
            f"the run's {len(params)} params are not Hugging Face TrainingArguments: "
            "schedule and clip limit unknown"
        )
        return {}, {}
    steps = training_args.positive_int(args.get("max_steps"))
    train_steps = [int(s) for s in frames.train["step"]]
    total = steps or (max(train_steps) if train_steps else None)
    if not steps:
        notes.append("max_steps not set in the params: total steps taken as the last logged step")
    schedule = training_args.schedule_from_args(args, total, notes)
    config = training_args.config_from(
        {}, args, train_steps, [int(s) for s in frames.evals["step"]], total, notes
    )
    if "grad_norm" in frames.assignment.columns:
        config["grad_norm_measured"] = "before_clipping"
        notes.append("params are Hugging Face TrainingArguments: grad_norm is measured before clipping")
    return schedule, config
