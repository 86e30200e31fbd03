"""The canonical run in memory (RunData) and its writer: the five files every importer writes.

The file names, column order and config keys are those of `run_files` (the one contract,
checked against the dbt macros that read the files); they are re-exported here for the importers.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from run_diagnosis.importers.metric_names import (
    is_adversarial,
    is_reinforcement,
    reinforcement_loop_names,
    resolve,
)
from run_diagnosis.importers.reference_keys import reference_keys
from run_diagnosis.run_files import (
    EVAL_COLUMNS,
    EVENT_COLUMNS,
    FILE_SUFFIXES,
    INTERVAL_MEAN_KEY,
    LOSS_OBJECTIVE_KEY,
    OPTIONAL_TOP_KEYS,
    REQUIRED_SCHEDULE_KEYS,
    REQUIRED_TOP_KEYS,
    SHARD_COLUMNS,
    TRAIN_COLUMNS,
    csv_columns,
    run_file,
)

__all__ = [
    "EVAL_COLUMNS",
    "EVENT_COLUMNS",
    "FILE_SUFFIXES",
    "NO_TRAINING_LOSS",
    "REQUIRED_SCHEDULE_KEYS",
    "REQUIRED_TOP_KEYS",
    "SHARD_COLUMNS",
    "TRAIN_COLUMNS",
    "RunData",
    "config_document",
    "stitch_runs",
    "write_run",
]

# the note of a run that logs its validation loss only: diagnosed on that series alone
NO_TRAINING_LOSS = (
    "no training loss is logged, only the validation loss {name!r}: the checks of the training curve "
    "cannot run, the validation series is diagnosed alone"
)

# numpy column types DuckDB reads from a frame as the same numbers (float16 it does not read)
NUMERIC_DTYPES = frozenset(
    ["float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"]
)


@dataclass
class RunData:
    """A training run in canonical form, before it is written to disk.

    train/evals/shards/events are DataFrames with (a subset of) the canonical
    columns; a missing column is written empty. schedule and config hold what
    the source says; None means the source does not say. files names, by kind, a
    canonical CSV already on disk whose rows are that kind's (read by reference:
    its frame is then empty and write_run copies the file byte for byte).
    """

    source_format: str
    source_path: str
    train: pd.DataFrame
    evals: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=EVAL_COLUMNS))
    shards: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SHARD_COLUMNS))
    events: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=EVENT_COLUMNS))
    run_name: str | None = None
    schedule: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    layout: dict[str, Any] | None = None  # what an inferring reader understood (provenance.layout)
    files: dict[str, Path] = field(default_factory=dict)  # kind -> a canonical CSV copied as it is
    loss_name: str | None = None  # the logged name the training loss was read from, when one was chosen
    # step_time_sec read off a clock's differences (aliases.step_times_from_elapsed): each the mean over
    # the steps since the previous logged row; run_config.json then says step_time_is_interval_mean
    interval_mean_times: bool = False
    # every metric and counter name the log holds: beside the loss read, they can say what it is (a
    # reinforcement-learning loop's episodes and rewards: _loss_objective)
    logged_names: tuple[str, ...] = ()


# the text an importer's event starts with when the log ends before its planned epochs while no
# step count for the plan is known (the event_patterns seed's epochs_unfinished kind matches it)
EPOCHS_UNFINISHED = "epochs unfinished: "


# the text an importer's event starts with when every record of the log was written several times
# over (a process per GPU each writing every line) and each is read once (event_patterns:
# log_written_several_times); the log_quality check reports it
WRITTEN_SEVERAL_TIMES = "log written several times: "


def written_several_times_event(first_step: int, copies: int, records: int) -> tuple[int, str]:
    """The event saying ``copies`` records of the log were exact copies of the record before them
    (``records`` kept, each read once), at the log's first step."""
    times = (copies + records) / records if records else 0
    return (
        first_step,
        f"{WRITTEN_SEVERAL_TIMES}{copies} training record(s) are exact copies of the one before them "
        f"(each of the {records} written about {times:.0f} times: several processes writing every "
        "line); each was read once",
    )


# the text an importer's event starts with when a logged term of the training loss switched on or
# off (exactly 0 on the rows before, not after, or the reverse): from there the loss is another sum,
# its level moved by design (event_patterns: objective_change); the loss_spikes check reads it
LOSS_TERMS_CHANGED = "loss terms changed: "


def loss_terms_changed_event(step: int, term: str, switched_on: bool, rows_before: int) -> tuple[int, str]:
    """The event saying the training loss's logged term ``term`` switched on (``switched_on``) or
    off at ``step``, after ``rows_before`` logged rows in the other state."""
    before = "exactly 0" if switched_on else "not 0"
    return (
        step,
        f"{LOSS_TERMS_CHANGED}{term!r} switched {'on' if switched_on else 'off'} at step {step} ({before} on "
        f"the {rows_before} logged rows before): the training loss sums other terms from here",
    )


def epochs_unfinished_event(
    last_step: int, epochs_logged: int, num_epochs: int, where: str
) -> tuple[int, str]:
    """The event saying a log ends in epoch ``epochs_logged`` (counting from 1) of the
    ``num_epochs`` planned (``where`` names the source of the plan), at its last step."""
    return (
        last_step,
        f"{EPOCHS_UNFINISHED}the log ends in epoch {epochs_logged} of the {num_epochs} planned ({where})",
    )


def events_frame(events: Iterable[tuple[int, str]]) -> pd.DataFrame:
    """(step, event) pairs as the canonical events frame, in step order (ties keep their order)."""
    ordered: list[tuple[int, str]] = sorted(events, key=lambda e: e[0])
    return pd.DataFrame(ordered, columns=EVENT_COLUMNS)


def add_event(run: RunData, event: tuple[int, str]) -> None:
    """One more (step, event) pair in the run's events, kept in step order."""
    run.events = events_frame([*run.events.itertuples(index=False, name=None), event])


def stitch_runs(
    parts: Sequence[tuple[str, RunData]],
    resumes: Sequence[tuple[int, str] | None],
    *,
    source_format: str,
    source_path: str,
    run_name: str,
    notes: list[str],
) -> RunData:
    """Parts of one run split by resumes (each a new process writing its own log), in order, as
    one run: rows as logged one after the other (a replayed stretch stays: the staging models
    tell the attempts apart), each later part's resume event (``resumes[i - 1]`` for part i,
    None when the part's own events already say it resumed), its events (one logged before the
    part's first step belongs to its start), the first part's schedule and config updated by
    what later parts state, and the later parts' notes under their name (before the first part's)."""
    first = parts[0][1]
    events = [first.events]
    schedule, config = dict(first.schedule), dict(first.config)
    later_notes: list[str] = []
    for (name, part), resume in zip(parts[1:], resumes, strict=True):
        start = int(min([*part.train["step"], *part.evals["step"]], default=0))
        if resume is not None:
            events.append(pd.DataFrame([resume], columns=EVENT_COLUMNS))
        own = part.events.copy()
        own.loc[own["step"] < start, "step"] = start
        events.append(own)
        schedule.update({k: v for k, v in part.schedule.items() if v is not None})
        config.update({k: v for k, v in part.config.items() if v is not None})
        later_notes += [f"{name}: {note}" for note in part.notes]
    return RunData(
        source_format=source_format,
        source_path=source_path,
        train=pd.concat([part.train for _, part in parts], ignore_index=True),
        evals=pd.concat([part.evals for _, part in parts], ignore_index=True),
        events=pd.concat(events, ignore_index=True).drop_duplicates().astype({"step": "int64"}),
        run_name=run_name,
        schedule=schedule,
        config=config,
        notes=notes + later_notes + first.notes,
    )


def numeric_select(df: pd.DataFrame, columns: list[str]) -> str | None:
    """The SQL that writes df's canonical columns as pandas' to_csv(float_format="%.10g") writes
    them, when every column df has is a plain integer or float one (a float through printf with
    the same format, NaN as an empty cell; a column df lacks or holds only nulls: empty); None
    otherwise (text, objects, nullable types: pandas writes those)."""
    if df.columns.has_duplicates:
        return None
    parts = []
    for column in columns:
        if column not in df.columns or (df[column].dtype == object and df[column].isna().all()):
            parts.append(f"null as {column}")  # absent or all unknown: empty cells
            continue
        dtype = df[column].dtype
        if not isinstance(dtype, np.dtype) or dtype.name not in NUMERIC_DTYPES:
            return None
        quoted = f'"{column}"'
        if dtype.kind == "f":  # NaN is not NULL in DuckDB: as pandas, an empty cell
            parts.append(
                f"case when isnan({quoted}) then null else printf('%.10g', {quoted}) end as {column}"
            )
        else:
            parts.append(f"{quoted} as {column}")
    return "select " + ", ".join(parts) + " from frame"


def _write_csv(df: pd.DataFrame, columns: list[str], path: Path) -> None:
    """One canonical CSV: through DuckDB when the frame is plain numbers (a 1M-row log in about 2
    s instead of 10 s of per-value Python formatting; the same bytes), else through pandas."""
    select = numeric_select(df, columns)
    if select is None:
        _frame(df, columns).to_csv(path, index=False, float_format="%.10g")
        return
    with duckdb.connect() as connection:
        connection.register("frame", df)
        connection.execute(f"copy ({select}) to {_sql_text(str(path))} (header, delimiter ',')")


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _frame(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    out = df.copy()
    for column in columns:
        if column not in out.columns:
            out[column] = None
    return out[columns]


def _clean(value: Any) -> Any:
    """JSON-safe config value: NaN/inf become null, numpy scalars plain Python."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _loss_objective(loss_name: str, logged_names: Sequence[str] = ()) -> tuple[str, str] | None:
    """What the loss read is, when the checks must read it otherwise (config loss_objective), and why:
    a GAN player's, a reinforcement-learning loss (named for one, or a plain loss logged beside a
    reinforcement-learning loop's episodes or rewards), one term of a sum whose total is not logged."""
    if is_adversarial(loss_name):
        return "adversarial", "is a GAN player's"
    moving = "its targets move with the policy, so its level is no measure of learning"
    if is_reinforcement(loss_name):
        return "reinforcement", f"is a reinforcement-learning loss (a value, policy or TD loss): {moving}"
    loop = reinforcement_loop_names(logged_names)
    if loop:
        return "reinforcement", (
            f"is logged beside a reinforcement-learning loop's episodes or rewards ({', '.join(loop[:3])}): "
            f"the agent's value, TD or policy loss, and {moving} (a TD loss rises as the returns grow)"
        )
    if resolve(loss_name).term:
        return (
            "term",
            "is one term of a sum whose total is not logged (its course can differ from the total's)",
        )
    return None


def config_document(run: RunData) -> dict[str, Any]:
    """The run_config.json document: every required key present, null when unknown."""
    schedule = {key: _clean(run.schedule.get(key)) for key in REQUIRED_SCHEDULE_KEYS}
    schedule.update({k: _clean(v) for k, v in run.schedule.items() if k not in schedule})
    document: dict[str, Any] = {"run_name": run.run_name, "lr_schedule": schedule}
    for key in REQUIRED_TOP_KEYS + OPTIONAL_TOP_KEYS:
        document[key] = _clean(run.config.get(key))
    document.update({k: _clean(v) for k, v in run.config.items() if k not in document})
    if run.interval_mean_times:  # slow_steps judges such a row by the time its whole window lost
        document[INTERVAL_MEAN_KEY] = True
    # the uniform-guess reference (vocabulary, classes, model and tokenizer names) at the top level
    lifted, lifted_notes = reference_keys(document, run.source_path)
    document.update(lifted)
    objective = (
        _loss_objective(run.loss_name, run.logged_names)
        if run.loss_name is not None and document.get(LOSS_OBJECTIVE_KEY) is None
        else None
    )
    if objective is not None:
        document[LOSS_OBJECTIVE_KEY], why = objective
        lifted_notes.append(f"{LOSS_OBJECTIVE_KEY} = {objective[0]}: the loss read, {run.loss_name}, {why}")
    unknown = [k for k in REQUIRED_SCHEDULE_KEYS if schedule[k] is None]
    unknown += [k for k in REQUIRED_TOP_KEYS if document[k] is None]
    document["provenance"] = {
        "source_format": run.source_format,
        "source_path": run.source_path,
        "unknown_fields": unknown,
        "notes": run.notes + lifted_notes,
    }
    if run.layout is not None:
        document["provenance"]["layout"] = run.layout
    return document


def write_run(run: RunData, out_dir: Path, prefix: str = "") -> dict[str, Path]:
    """Write the five canonical files into out_dir (a file of run.files copied byte for byte);
    returns kind -> path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    frames = {"train": run.train, "eval": run.evals, "shards": run.shards, "events": run.events}
    paths: dict[str, Path] = {}
    for kind, frame in frames.items():
        path = run_file(out_dir, kind, prefix)
        if kind in run.files:
            shutil.copyfile(run.files[kind], path)
        else:
            valued = [c for c in frame.columns if frame[c].notna().any()]
            _write_csv(frame, csv_columns(kind, valued), path)
        paths[kind] = path
    path = run_file(out_dir, "config", prefix)
    path.write_text(json.dumps(config_document(run), indent=2) + "\n", encoding="utf-8")
    paths["config"] = path
    return paths
