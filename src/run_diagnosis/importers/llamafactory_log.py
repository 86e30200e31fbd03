"""LLaMA-Factory ``trainer_log.jsonl`` -> canonical run.

LLaMA-Factory's LogCallback appends one JSON object per Trainer log call to
``<output_dir>/trainer_log.jsonl``: ``current_steps``, ``total_steps``, ``loss`` (train logs),
``eval_loss`` (eval logs), ``predict_loss``, ``learning_rate`` (``lr`` in newer versions),
``epoch``, ``percentage``, ``elapsed_time``/``remaining_time`` ("H:MM:SS", whole seconds,
"1 day, H:MM:SS" past 24 h), ``throughput``, ``total_tokens``. The Trainer's final summary
log has none of the loss keys: it becomes the event "run finished".

Which file is the train source
------------------------------
An output folder usually holds both ``trainer_log.jsonl`` and the Trainer's own
``trainer_state.json``. The state is richer (``grad_norm``, unrounded values, checkpoint
bookkeeping) and the jsonl is the only one with timing, so for a *folder* holding both
this importer reads the train/eval rows, config and events through ``hf_trainer`` from
``trainer_state.json`` and merges ``step_time_sec`` into them by step from the jsonl.
``hf_trainer.sniff`` declines such folders, so in the registry's sniffing order (hf_trainer
before llamafactory_log) the folder still reaches this importer. Given the *file*
``trainer_log.jsonl`` (or a folder without a state), only the jsonl is read.

step_time_sec
-------------
(elapsed_time - previous line's elapsed_time) / (current_steps - previous line's
current_steps): the average over one logging interval, not a single step's time. An
interval that contains a checkpoint save includes the save; eval lines separate
evaluations from the next interval. elapsed_time has whole-second resolution (about
±1 s per interval). The first line has no earlier time, so its step time is empty; an
elapsed_time that goes backwards marks a new process (a resume) and is an event.

Lines written twice
-------------------
Two processes appending to one log (a logging callback not limited to rank 0) write every
line twice, interleaved. A line equal to an earlier one in every key and value, elapsed_time
included, is read once and the importer's notes count them (``aliases.without_repeated_records``);
a resumed run's replayed lines carry their own clock, so they are kept.

What cannot be known from the jsonl alone: grad_norm, val_accuracy (its ``accuracy`` key
is the DPO reward accuracy, not token accuracy), shard ids, and the LR schedule unless
training arguments sit beside it (``training_args.yaml`` etc., read by ``training_args``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import (
    ColumnMap,
    column_map,
    evaluation_sets,
    load_aliases,
    metric_column,
    read_jsonl,
    sniff_file,
    step_times_from_elapsed,
    to_float,
    to_step,
    without_repeated_records,
)
from run_diagnosis.importers.canonical import EVAL_COLUMNS, TRAIN_COLUMNS, RunData, events_frame
from run_diagnosis.importers.hf_trainer import load_state_run
from run_diagnosis.importers.training_args import (
    STATE_FILE,
    config_from,
    explain_unknowns,
    find_training_args,
    schedule_from_args,
)

FORMAT = "llamafactory_log"
DESCRIPTION = "LLaMA-Factory trainer_log.jsonl (file or output folder; merged with trainer_state.json there)"
LOG_FILE = "trainer_log.jsonl"
LOSS_FIELDS = ("loss", "val_loss", "test_loss")
TIMING_NOTE = (
    "step_time_sec from trainer_log.jsonl: elapsed_time delta / step delta between consecutive log lines, "
    "i.e. the average over each logging interval (whole-second clock, checkpoint saves included); "
    "the first interval has no earlier time and is empty"
)


def sniff(path: Path) -> bool:
    """trainer_log.jsonl, a .jsonl whose first line has current_steps/total_steps, or a folder with one."""
    if path.is_dir():
        return (path / LOG_FILE).is_file()
    return sniff_file(path, LOG_FILE, ".jsonl", lambda handle: _is_log_line(handle.readline()))


def _is_log_line(line: str) -> bool:
    first = json.loads(line or "null")
    return isinstance(first, dict) and "current_steps" in first and "total_steps" in first


def load(path: Path) -> RunData:
    """Read a LLaMA-Factory log (see the module docstring for the folder/file choice)."""
    log_path = path / LOG_FILE if path.is_dir() else path
    if not log_path.is_file():
        raise RunImportError(f"{path}: expected {LOG_FILE} in this folder; it is not there")
    lines, repeats = without_repeated_records(read_jsonl(log_path))
    records = [_Record.parse(number, raw, log_path) for number, raw in lines]
    keys = _keys(records)
    if path.is_dir() and (path / STATE_FILE).is_file():
        run = _merged(path, records, keys)
    else:
        run = _standalone(path, log_path, records, keys)
    if repeats:
        run.notes.insert(0, _repeats_note(repeats))
    return run


def _keys(records: list[_Record]) -> ColumnMap:
    """The numeric keys of the log lines read by the metric-name resolver (loss, eval_loss,
    predict_loss, lr ...); the line counter is the format's own ``current_steps``."""
    numeric = dict.fromkeys(
        key
        for record in records
        for key, value in record.raw.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    )
    return column_map(numeric, load_aliases())


def _repeats_note(repeats: list[int]) -> str:
    shown = ", ".join(str(n) for n in repeats[:5]) + (" ..." if len(repeats) > 5 else "")
    return (
        f"{len(repeats)} lines of {LOG_FILE} repeat an earlier line exactly (lines {shown}; every key "
        "and value, elapsed_time included): the log was written twice at once (e.g. by two processes), "
        "so each line is read once"
    )


class _Record:
    """One log line, with its step and elapsed seconds parsed."""

    def __init__(self, number: int, raw: dict[str, Any], step: int, elapsed: float | None) -> None:
        self.number = number
        self.raw = raw
        self.step = step
        self.elapsed = elapsed

    @classmethod
    def parse(cls, number: int, raw: dict[str, Any], path: Path) -> _Record:
        try:
            step = to_step(raw.get("current_steps"))
        except ValueError as error:
            raise RunImportError(f"{path}, line {number}, key 'current_steps': {error}") from error
        if step is None:
            found = ", ".join(sorted(raw)) or "an empty object"
            raise RunImportError(
                f"{path}, line {number}: expected key 'current_steps' (a LLaMA-Factory log line); "
                f"found {found}"
            )
        elapsed = raw.get("elapsed_time")
        try:
            seconds = None if elapsed is None else pd.to_timedelta(str(elapsed)).total_seconds()
        except ValueError as error:
            raise RunImportError(
                f"{path}, line {number}, key 'elapsed_time': expected H:MM:SS; found {elapsed!r}"
            ) from error
        return cls(number, raw, step, seconds)

    def has(self, keys: ColumnMap, name: str) -> bool:
        """Whether the line logged the key the resolver chose for canonical field `name` (or one of
        the field's evaluation sets)."""
        chosen: Sequence[str | None] = keys.assignment.sets.get(name) or [keys.get(name)]
        return any(key is not None and key in self.raw for key in chosen)

    def number_at(self, key: str, path: Path) -> float | None:
        try:
            return to_float(self.raw.get(key))
        except ValueError as error:
            raise RunImportError(f"{path}, line {self.number}, key {key!r}: {error}") from error


def _step_times(records: list[_Record], notes: list[str]) -> tuple[list[float | None], list[tuple[int, str]]]:
    times, resets = step_times_from_elapsed(
        [r.step for r in records], [r.elapsed for r in records], notes, f"{LOG_FILE}'s elapsed_time"
    )
    events = [(step, "run resumed: elapsed_time restarted (a new training process)") for step in resets]
    return times, events


def _merged(folder: Path, records: list[_Record], keys: ColumnMap) -> RunData:
    clock_notes: list[str] = []
    times, resume_events = _step_times(records, clock_notes)
    by_step: dict[int, float] = {}
    repeated = 0
    for record, seconds in zip(records, times, strict=True):
        if record.has(keys, "loss") and seconds is not None:
            repeated += record.step in by_step
            by_step[record.step] = seconds  # a step logged twice (resumed run): the later process's time
    note = TIMING_NOTE
    if repeated:
        note += f"; {repeated} steps appear twice in the jsonl (resumed run): the later time is used"
    run = load_state_run(folder, by_step, note)
    run.source_format = FORMAT
    run.interval_mean_times = True
    run.notes.insert(
        0, f"train/eval rows, grad_norm and config from {STATE_FILE}; step times from {LOG_FILE}"
    )
    run.notes.extend(clock_notes)
    logged = {r.step for r in records if r.has(keys, "loss")}
    absent = int(run.train["step"].map(lambda s: int(s) not in logged).sum())
    if absent:
        run.notes.append(f"{absent} train rows of {STATE_FILE} have no line in {LOG_FILE}: no step time")
    if resume_events:
        events = list(run.events.itertuples(index=False, name=None)) + resume_events
        run.events = events_frame(events)
    return run


def _standalone(path: Path, log_path: Path, records: list[_Record], keys: ColumnMap) -> RunData:
    notes: list[str] = list(keys.notes)
    times, events = _step_times(records, notes)
    train_rows = [(r, t) for r, t in zip(records, times, strict=True) if r.has(keys, "loss")]
    if not train_rows:
        raise RunImportError(
            f"{log_path}: expected lines with a training loss (e.g. 'loss'); "
            f"found {len(records)} lines, none with one"
        )
    train = pd.DataFrame({"step": pd.Series([r.step for r, _ in train_rows], dtype="int64")})
    for name in ("loss", "learning_rate", "grad_norm"):
        key = keys.get(name)
        train[name] = metric_column([r.number_at(key, log_path) if key else None for r, _ in train_rows])
    train["step_time_sec"] = metric_column([t for _, t in train_rows])
    eval_records = [r for r in records if r.has(keys, "val_loss")]
    evals = pd.DataFrame({"step": pd.Series([r.step for r in eval_records], dtype="int64")})
    evals["val_loss"] = metric_column(
        [r.number_at(keys.get("val_loss") or "", log_path) for r in eval_records]
    )
    evals = evals.reindex(columns=EVAL_COLUMNS)
    sets = evaluation_sets(
        keys, lambda _field, key: [(r.step, r.number_at(key, log_path)) for r in records if key in r.raw]
    )
    if sets is not None:
        evals, set_notes = sets
        notes += set_notes
    events += [
        (r.step, "run finished") for r in records if not any(r.has(keys, name) for name in LOSS_FIELDS)
    ]
    predict = sum(r.has(keys, "test_loss") for r in records)
    if predict:
        notes.append(
            f"skipped {predict} {keys.get('test_loss')} lines (test-set evaluation, not training steps)"
        )

    totals = {int(r.raw["total_steps"]) for r in records if isinstance(r.raw.get("total_steps"), int)}
    total_steps = max(totals) if totals else None
    if len(totals) > 1:
        notes.append(f"total_steps changes within the log ({sorted(totals)}): the largest is used")
    args, sources = find_training_args(log_path.parent, train["learning_rate"], notes)
    if sources:
        notes.append(f"training arguments read from {', '.join(sources)}")
    run = RunData(
        source_format=FORMAT,
        source_path=str(path),
        train=train.reindex(columns=TRAIN_COLUMNS),
        evals=evals,
        events=events_frame(events),
        run_name=log_path.parent.name,
        schedule=schedule_from_args(args, total_steps, notes) if args else {},
        notes=notes,
    )
    run.config = config_from({}, args, list(train["step"]), list(evals["step"]), total_steps, notes)
    run.interval_mean_times = True
    _standalone_notes(run, log_path, sources)
    return run


def _standalone_notes(run: RunData, log_path: Path, sources: list[str]) -> None:
    if run.train["grad_norm"].isna().all():
        hint = " (the trainer_state.json beside it has it: pass the folder)"
        beside = (log_path.parent / STATE_FILE).is_file()
        run.notes.append(
            f"no grad_norm in {LOG_FILE}: gradient-norm and clip checks cannot run{hint if beside else ''}"
        )
    run.notes.append(TIMING_NOTE)
    if run.evals.empty:
        run.notes.append("no eval lines in the log: evaluation checks cannot run")
    else:
        run.notes.append("no token accuracy in trainer_log.jsonl: val_accuracy is empty")
    explain_unknowns(run, bool(sources), LOG_FILE)
