"""Hugging Face Trainer ``trainer_state.json`` -> canonical run.

What is read
------------
* ``trainer_state.json`` (the file, a folder holding it, or an output folder whose
  ``checkpoint-N/`` sub-folders hold it: the highest N is read, its ``log_history``
  covers the earlier ones). The keys are read by the metric-name resolver
  (``importers.metric_names``; names it cannot place are listed as "not understood") and
  ``log_history`` rows are sorted by kind:

  - a row with the loss key (``loss``) is a train row: ``step``, ``loss``, ``grad_norm``
    (absent before transformers 4.38), ``learning_rate``;
  - a row with the eval-loss key (``eval_loss``) is an eval row; ``eval_accuracy`` or
    ``eval_mean_token_accuracy`` becomes ``val_accuracy`` (share 0..1);
  - the final summary row (``train_runtime``...) is not a step: it becomes the event
    "run finished" and ``config.train_runtime_sec``;
  - rows without ``step`` (``predict_*`` rows from ``trainer.predict``) are skipped, and
    counted in the notes, as are rows of any other shape.

  Top-level keys give ``total_steps`` (max_steps), ``batch_size`` (train_batch_size, per
  device), ``num_epochs``, ``logging_interval``/``eval_interval``/``checkpoint_interval``
  (logging_steps/eval_steps/save_steps: transformers records them even when the strategy
  is "no", so they are checked against the rows actually logged).
* Training arguments beside the state, when present (both may be, the file wins):
  ``training_args.json``/``.yaml``/``.yml`` or any small ``*.json``/``*.yaml`` whose top level
  has ``learning_rate`` or ``lr_scheduler_type``; and console dumps of ``TrainingArguments``
  in text files (``*.txt``, ``*.log``, ``*.out``, e.g. the ``cmd.txt`` a user saved), read
  with ``ARGS_DUMP_START``/``ARGS_DUMP_LINE`` (importers.training_args). They give the LR schedule
  (lr_scheduler_type, learning_rate, warmup_steps/warmup_ratio), ``grad_clip_norm``
  (max_grad_norm), the evaluation/save strategies, seed, optimizer and precision.

What cannot be known
--------------------
* ``step_time_sec``: trainer_state.json has no per-step timing (only the run-level
  ``train_runtime``, which includes evaluation), so the column stays empty. LLaMA-Factory
  folders also hold ``trainer_log.jsonl`` with elapsed times: ``llamafactory_log`` reads
  such a folder and merges its step times into these rows.
* ``shard_id``: never logged by the Trainer.
* The schedule, when no training arguments sit beside the state: the logged
  ``learning_rate`` column is described in the notes, but its shape is not turned into a
  configured schedule (checking the curve against itself would prove nothing).
* Checkpoints: only those the state names (``best_model_checkpoint``, or the state read
  from inside a ``checkpoint-N`` folder) become events.
* ``grad_norm`` is the norm *before* clipping (what ``clip_grad_norm_`` returns), recorded
  as ``config.grad_norm_measured = "before_clipping"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
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
    read_text,
    sniff_file,
)
from run_diagnosis.importers.canonical import EVAL_COLUMNS, TRAIN_COLUMNS, RunData, events_frame
from run_diagnosis.importers.training_args import (
    STATE_FILE,
    config_from,
    epoch_fallback_events,
    explain_unknowns,
    find_training_args,
    float_or_none,
    positive_int,
    run_results,
    schedule_from_args,
)

FORMAT = "hf_trainer_state"
DESCRIPTION = "Hugging Face Trainer trainer_state.json (the file, its folder, or a folder of checkpoint-N/)"

LLAMAFACTORY_LOG = "trainer_log.jsonl"  # a folder holding it is read by importers.llamafactory_log
CHECKPOINT_DIR = re.compile(r"^checkpoint-(\d+)$")

SUMMARY_KEY = "train_runtime"  # the Trainer's end-of-training row (train_loss there is the run's mean)
# eval keys that describe the evaluation itself, not the model: not listed as unused metrics
EVAL_BOOKKEEPING_QUANTITIES = ("elapsed", "throughput", "tokens", "counter", "step_time")


def sniff(path: Path) -> bool:
    """A trainer_state.json (or JSON with log_history), or a folder of one.

    A folder that also holds LLaMA-Factory's trainer_log.jsonl is left to llamafactory_log,
    which reads the same state and adds the step times.
    """
    if path.is_dir():
        if (path / LLAMAFACTORY_LOG).is_file():
            return False
        return (path / STATE_FILE).is_file() or bool(_checkpoint_states(path))
    return sniff_file(path, STATE_FILE, ".json", lambda handle: '"log_history"' in handle.read(4096))


def load(path: Path) -> RunData:
    """Read a trainer_state.json (see the module docstring for what is and is not read)."""
    return load_state_run(path)


def load_state_run(path: Path, step_times: Mapping[int, float] | None = None, timing: str = "") -> RunData:
    """load(), optionally with seconds per step from another file of the same run.

    ``step_times`` maps a step to its step_time_sec; ``timing`` is the note saying where
    those times come from and what they mean (it replaces the "no timing" note).
    """
    state_path, events = _locate_state(path)
    notes: list[str] = []
    if state_path.parent != path and path.is_dir():
        notes.append(f"read {state_path.relative_to(path)} (the latest checkpoint's state)")
    state = read_state(state_path)
    rows = _split_log_history(state["log_history"], state_path)
    notes += rows.notes
    epochs = [(r["step"], r["epoch"]) for r in rows.train]
    events += _best_checkpoint_event(state) + rows.events + epoch_fallback_events(epochs)
    train = _train_frame(rows.train)
    evals = _eval_frame(rows.evals, notes)

    args, sources = find_training_args(state_path.parent, train["learning_rate"], notes)
    if sources:
        notes.append(f"training arguments read from {', '.join(sources)}")
    run = RunData(
        source_format=FORMAT,
        source_path=str(path),
        train=train,
        evals=evals,
        events=events_frame(events),
        run_name=_run_name(args, state_path),
        notes=notes,
        logged_names=tuple(
            dict.fromkeys(k for row in state["log_history"] if isinstance(row, dict) for k in row)
        ),
    )
    total_steps = positive_int(state.get("max_steps")) or positive_int(args.get("max_steps"))
    run.schedule = schedule_from_args(args, total_steps, notes) if args else {}
    train_steps = [r["step"] for r in rows.train]
    eval_steps = [r["step"] for r in rows.evals]
    run.config = config_from(state, args, train_steps, eval_steps, total_steps, notes, epochs)
    if rows.train_runtime is not None:
        run.config["train_runtime_sec"] = rows.train_runtime
    run.config.update(run_results(state_path.parent, notes))
    explain_unknowns(run, bool(sources), STATE_FILE)
    _grad_norm_notes(run, rows)
    if step_times is None:
        _timing_notes(run, state, rows)
    else:
        run.train["step_time_sec"] = metric_column([step_times.get(int(s)) for s in run.train["step"]])
        run.notes.append(timing)
    _stopped_note(run, state, rows)
    return run


# ---------------------------------------------------------------- locating and reading


def _checkpoint_states(folder: Path) -> list[tuple[int, Path]]:
    found = []
    for child in folder.iterdir():
        match = CHECKPOINT_DIR.match(child.name)
        if match and (child / STATE_FILE).is_file():
            found.append((int(match.group(1)), child / STATE_FILE))
    return sorted(found)


def _locate_state(path: Path) -> tuple[Path, list[tuple[int, str]]]:
    """The state file to read, and checkpoint events shown by the folder layout."""
    events: list[tuple[int, str]] = []
    if path.is_dir():
        checkpoints = _checkpoint_states(path)
        for step, state in checkpoints:
            events.append((step, f"checkpoint saved: {state.parent.name}"))
        if (path / STATE_FILE).is_file():
            state_path = path / STATE_FILE
        elif checkpoints:
            state_path = checkpoints[-1][1]
        else:
            shown = ", ".join(sorted(p.name for p in path.iterdir())[:10]) or "nothing"
            raise RunImportError(
                f"{path}: expected {STATE_FILE} or checkpoint-N/{STATE_FILE} in this folder; found: {shown}"
            )
    else:
        state_path = path
    match = CHECKPOINT_DIR.match(state_path.parent.name)
    if match and not any(event[0] == int(match.group(1)) for event in events):
        events.append((int(match.group(1)), f"checkpoint saved: {state_path.parent.name}"))
    return state_path, events


def _best_checkpoint_event(state: dict[str, Any]) -> list[tuple[int, str]]:
    """'best checkpoint: checkpoint-N' when the state names one (Windows or POSIX path)."""
    best = state.get("best_model_checkpoint")
    if not isinstance(best, str):
        return []
    name = re.split(r"[\\/]", best.rstrip("\\/"))[-1]
    match = CHECKPOINT_DIR.match(name)
    if not match:
        return []
    metric = state.get("best_metric")
    suffix = f" (best_metric {metric:.6g})" if isinstance(metric, (int, float)) else ""
    return [(int(match.group(1)), f"best checkpoint: {name}{suffix}")]


def read_state(path: Path) -> dict[str, Any]:
    """The parsed state; RunImportError on unreadable, invalid, truncated or empty input."""
    text = read_text(path, "JSON")
    if not text.strip():
        raise RunImportError(f"{path}: the file is empty: expected a trainer_state.json JSON object")
    try:
        state = json.loads(text)
    except json.JSONDecodeError as error:
        raise RunImportError(
            f"{path}: not valid JSON at line {error.lineno}, column {error.colno} (character {error.pos} "
            f"of {len(text)}): {error.msg}. Expected a complete trainer_state.json; "
            "the file may be truncated (copied while training was writing it?)"
        ) from error
    if not isinstance(state, dict):
        raise RunImportError(
            f"{path}: expected a JSON object with 'log_history'; found a {type(state).__name__}"
        )
    history = state.get("log_history")
    if not isinstance(history, list):
        keys = ", ".join(sorted(state)[:12]) or "none"
        raise RunImportError(
            f"{path}: key 'log_history': expected a list of logged rows; "
            f"found {type(history).__name__ if 'log_history' in state else 'no such key'} (keys: {keys})"
        )
    if not history:
        raise RunImportError(
            f"{path}: key 'log_history' is empty: expected logged rows with 'loss' and 'step'; "
            "found 0 rows, so there is nothing to diagnose (was the state saved before the first log step?)"
        )
    return state


class _Rows:
    """log_history sorted by kind."""

    def __init__(self) -> None:
        self.train: list[dict[str, Any]] = []
        self.evals: list[dict[str, Any]] = []
        self.events: list[tuple[int, str]] = []
        self.notes: list[str] = []
        self.train_runtime: float | None = None
        self.has_grad_norm = False


def _log_keys(history: list[Any]) -> ColumnMap:
    """The keys of the logged rows (not the end-of-training summary) read by the metric-name
    resolver: which key is the loss ('loss'), the eval loss ('eval_loss'), the eval accuracy
    ('eval_accuracy', 'eval_mean_token_accuracy'), the grad norm and the LR."""
    keys = dict.fromkeys(
        str(key)
        for row in history
        if isinstance(row, dict) and "step" in row and SUMMARY_KEY not in row
        for key, value in row.items()
        if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool)
    )
    return column_map(keys, load_aliases())


def _logged_names(history: list[Any]) -> tuple[str, ...]:
    """Every key the log_history's records hold, in first-seen order."""
    return tuple(dict.fromkeys(key for row in history if isinstance(row, dict) for key in row))


def _split_log_history(history: list[Any], path: Path) -> _Rows:
    rows = _Rows()
    keys = _log_keys(history)
    loss, val_loss, accuracy = keys.get("loss"), keys.get("val_loss"), keys.get("val_accuracy")
    train_keys = {
        "loss": loss,
        "grad_norm": keys.get("grad_norm"),
        "learning_rate": keys.get("learning_rate"),
    }
    rows.notes += keys.notes
    loss_sets = keys.assignment.sets.get("val_loss", [])
    eval_keys = loss_sets or ([val_loss] if val_loss is not None else [])
    no_step: dict[str, int] = {}
    other: dict[str, int] = {}
    unmapped_eval: set[str] = set()
    for index, row in enumerate(history):
        if not isinstance(row, dict):
            raise RunImportError(
                f"{path}: log_history[{index}]: expected an object of logged values; found {row!r:.80}"
            )
        if "step" not in row:
            kind = "predict_*" if any(str(k).startswith("predict_") for k in row) else ", ".join(sorted(row))
            no_step[kind] = no_step.get(kind, 0) + 1
            continue
        step = _row_step(row, index, path)
        known = False
        if SUMMARY_KEY in row:
            rows.train_runtime = float_or_none(row[SUMMARY_KEY])
            rows.events.append((step, f"run finished: train_runtime {row[SUMMARY_KEY]} s"))
            known = True
        elif loss is not None and loss in row:
            values = {k: row.get(c) if c else None for k, c in train_keys.items()}
            rows.train.append({"step": step, "epoch": row.get("epoch"), **values})
            rows.has_grad_norm |= train_keys["grad_norm"] is not None and train_keys["grad_norm"] in row
            known = True
        if SUMMARY_KEY not in row and any(key in row for key in eval_keys):
            if not loss_sets:
                rows.evals.append(
                    {"step": step, "val_loss": row[val_loss], "val_accuracy": row.get(accuracy or "")}
                )
            unmapped_eval |= {k for k in row if _unused_eval_metric(keys, k)}
            known = True
        if not known:
            kind = ", ".join(sorted(k for k in row if k not in ("step", "epoch"))) or "epoch only"
            other[kind] = other.get(kind, 0) + 1
    for kind, count in no_step.items():
        rows.notes.append(f"skipped {count} log_history rows without 'step' ({kind}: not training steps)")
    for kind, count in other.items():
        rows.notes.append(
            f"skipped {count} log_history rows that are neither train nor eval rows (keys: {kind})"
        )
    if keys.assignment.sets:
        _evaluation_sets(history, keys, rows)
    if unmapped_eval:
        rows.notes.append(
            f"eval metrics not in the canonical eval log (kept out): {', '.join(sorted(unmapped_eval))}"
        )
    if not rows.train:
        raise RunImportError(
            f"{path}: log_history has {len(history)} rows but none is a train row: expected rows with "
            f"'loss' and 'step'; found {len(rows.evals)} eval rows and "
            f"{sum(no_step.values()) + sum(other.values())} others"
        )
    return rows


def _evaluation_sets(history: list[Any], keys: ColumnMap, rows: _Rows) -> None:
    """Eval rows from several evaluation sets, one row per set and step (aliases.evaluation_sets)."""

    def read(_field: str, key: str) -> list[tuple[int, float | None]]:
        return [
            (int(row["step"]), float_or_none(row[key]))
            for row in history
            if isinstance(row, dict) and key in row and "step" in row and SUMMARY_KEY not in row
        ]

    combined = evaluation_sets(keys, read)
    if combined is not None:
        frame, notes = combined
        rows.evals = [{str(k): v for k, v in record.items()} for record in frame.to_dict("records")]
        rows.notes += notes


def _unused_eval_metric(keys: ColumnMap, key: str) -> bool:
    """An evaluation metric the canonical eval log has no column for (eval_rouge1, eval_bleu)."""
    meaning = keys.meaning(key)
    return (
        meaning is not None
        and not keys.feeds_a_field(key)
        and meaning.split in ("validation", "test")
        and meaning.quantity not in EVAL_BOOKKEEPING_QUANTITIES
    )


def _row_step(row: dict[str, Any], index: int, path: Path) -> int:
    step = row["step"]
    if isinstance(step, bool) or not isinstance(step, (int, float)) or step != int(step):
        raise RunImportError(
            f"{path}: log_history[{index}], key 'step': expected a whole number; found {step!r}"
        )
    return int(step)


def _train_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame({"step": pd.Series([r["step"] for r in rows], dtype="int64")})
    for column in ("loss", "grad_norm", "learning_rate"):
        frame[column] = metric_column([float_or_none(r[column]) for r in rows])
    return frame.reindex(columns=TRAIN_COLUMNS)


def _eval_frame(rows: list[dict[str, Any]], notes: list[str]) -> pd.DataFrame:
    if not rows:
        notes.append("no eval rows in log_history: evaluation checks cannot run")
        return pd.DataFrame(columns=EVAL_COLUMNS)
    frame = pd.DataFrame({"step": pd.Series([r["step"] for r in rows], dtype="int64")})
    frame["val_loss"] = metric_column([float_or_none(r["val_loss"]) for r in rows])
    accuracy = [float_or_none(r["val_accuracy"]) for r in rows]
    if any(a is not None and not 0.0 <= a <= 1.0 for a in accuracy):
        notes.append("eval accuracy has values outside 0..1 (a percentage?): val_accuracy left empty")
        accuracy = [None] * len(rows)
    frame["val_accuracy"] = metric_column(accuracy)
    return frame


def _grad_norm_notes(run: RunData, rows: _Rows) -> None:
    if rows.has_grad_norm:
        run.config["grad_norm_measured"] = "before_clipping"
        run.notes.append(
            "grad_norm is the total norm before clipping (what transformers' clip_grad_norm_ returns "
            "and logs): values above grad_clip_norm mean clipping was active, not that it failed"
        )
    else:
        run.notes.append(
            "no grad_norm in this log (transformers<4.38 did not log it): "
            "gradient-norm and clip checks cannot run"
        )


def _timing_notes(run: RunData, state: dict[str, Any], rows: _Rows) -> None:
    message = "trainer_state.json has no per-step timing: step_time_sec is empty"
    global_step = positive_int(state.get("global_step"))
    if rows.train_runtime and global_step:
        message += (
            f" (train_runtime {rows.train_runtime:.0f} s over {global_step} steps = "
            f"{rows.train_runtime / global_step:.3g} s/step on average, evaluation included)"
        )
    run.notes.append(message)


def _stopped_note(run: RunData, state: dict[str, Any], rows: _Rows) -> None:
    global_step = positive_int(state.get("global_step"))
    max_steps = run.config.get("total_steps")
    if rows.train_runtime is None and global_step and max_steps and global_step < max_steps:
        run.notes.append(
            f"state stops at global_step {global_step} of max_steps {max_steps} with no final summary row: "
            "a mid-run checkpoint copy, or the run stopped early (the state does not say which)"
        )


# ---------------------------------------------------------------- small helpers


def _run_name(args: dict[str, Any], state_path: Path) -> str:
    name = args.get("run_name")
    if isinstance(name, str) and name:
        return name
    folder = state_path.parent
    return folder.parent.name if CHECKPOINT_DIR.match(folder.name) else folder.name
