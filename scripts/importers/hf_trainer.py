"""Hugging Face Trainer ``trainer_state.json`` -> canonical run.

What is read
------------
* ``trainer_state.json`` (the file, a folder holding it, or an output folder whose
  ``checkpoint-N/`` sub-folders hold it: the highest N is read, its ``log_history``
  covers the earlier ones). ``log_history`` rows are sorted by kind:

  - a row with ``loss`` is a train row: ``step``, ``loss``, ``grad_norm`` (absent before
    transformers 4.38), ``learning_rate``;
  - a row with ``eval_loss`` is an eval row; ``eval_accuracy`` or ``eval_mean_token_accuracy``
    becomes ``val_accuracy`` (share 0..1);
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
  with ``ARGS_DUMP_START``/``ARGS_DUMP_LINE`` below. They give the LR schedule
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

import ast
import itertools
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from importers import RunImportError
from importers.aliases import metric_column
from importers.canonical import EVAL_COLUMNS, EVENT_COLUMNS, REQUIRED_SCHEDULE_KEYS, TRAIN_COLUMNS, RunData

FORMAT = "hf_trainer_state"
DESCRIPTION = "Hugging Face Trainer trainer_state.json (the file, its folder, or a folder of checkpoint-N/)"

STATE_FILE = "trainer_state.json"
LLAMAFACTORY_LOG = "trainer_log.jsonl"  # a folder holding it is read by importers.llamafactory_log
CHECKPOINT_DIR = re.compile(r"^checkpoint-(\d+)$")

# A console dump of TrainingArguments, as transformers prints it when asked to log the args:
#     ... Seq2SeqTrainingArguments(
#     learning_rate=2e-05,
#     lr_scheduler_type=linear,
#     )
# ARGS_DUMP_START ends the line that opens the dump; each argument is then one line
# `key=value,`; the dump ends at a line holding only `)`. Values are read with
# ast.literal_eval (numbers, True/False/None, lists, dicts) and kept as text otherwise.
ARGS_DUMP_START = re.compile(r"(?P<name>\w*TrainingArguments)\(\s*$")
ARGS_DUMP_LINE = re.compile(r"^(?P<key>[A-Za-z_]\w*)=(?P<value>.*),\s*$")
# The Trainer's banner line "Total train batch size (w. parallel, distributed & accumulation) = 6"
TOTAL_BATCH_LINE = re.compile(
    r"Total train batch size \(w\. parallel, distributed & accumulation\) = ([\d,]+)"
)
TEXT_SUFFIXES = (".txt", ".log", ".out")
ARGS_FILE_NAMES = ("training_args.json", "training_args.yaml", "training_args.yml")
ARGS_KEYS = ("learning_rate", "lr_scheduler_type")
MAX_SIDE_FILE_BYTES = 50_000_000

# transformers lr_scheduler_type -> canonical schedule type
SCHEDULE_TYPES = {
    "linear": "warmup_linear",
    "cosine": "warmup_cosine",
    "cosine_with_min_lr": "warmup_cosine",
    "constant": "constant",
    "constant_with_warmup": "constant_with_warmup",
}
ENUM_KEYS = ("lr_scheduler_type", "evaluation_strategy", "eval_strategy", "save_strategy", "optim")
EVAL_ACCURACY_KEYS = ("eval_accuracy", "eval_mean_token_accuracy")
EVAL_BOOKKEEPING = ("eval_runtime", "eval_samples_per_second", "eval_steps_per_second", "eval_num_tokens")


def sniff(path: Path) -> bool:
    """A trainer_state.json (or JSON with log_history), or a folder of one.

    A folder that also holds LLaMA-Factory's trainer_log.jsonl is left to llamafactory_log,
    which reads the same state and adds the step times.
    """
    if path.is_dir():
        if (path / LLAMAFACTORY_LOG).is_file():
            return False
        return (path / STATE_FILE).is_file() or bool(_checkpoint_states(path))
    if path.name == STATE_FILE:
        return True
    if path.suffix != ".json":
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return '"log_history"' in handle.read(4096)
    except OSError:
        return False


RESULT_FILES = ("all_results.json", "train_results.json", "eval_results.json")
RESULT_COUNTS = ("train_samples", "eval_samples")


def run_results(folder: Path, notes: list[str]) -> dict[str, int]:
    """train_samples / eval_samples from the Trainer's *_results.json in ``folder`` or up to two
    folders above it (a TensorBoard ``runs/<name>/`` sits two levels below them)."""
    for place in (folder, *list(folder.parents)[:2]):
        for name in RESULT_FILES:
            path = place / name
            try:
                document = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
            except (OSError, ValueError):
                notes.append(f"{path}: not readable as JSON, ignored")
                continue
            if not isinstance(document, dict):
                continue
            counts = {key: int(document[key]) for key in RESULT_COUNTS if isinstance(document.get(key), int)}
            if counts:
                notes.append(f"{', '.join(counts)} from {path.name}")
                return counts
    return {}


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
    events += _best_checkpoint_event(state) + rows.events
    train = _train_frame(rows.train)
    evals = _eval_frame(rows.evals, notes)

    args, sources = find_training_args(state_path.parent)
    if sources:
        notes.append(f"training arguments read from {', '.join(sources)}")
    run = RunData(
        source_format=FORMAT,
        source_path=str(path),
        train=train,
        evals=evals,
        events=pd.DataFrame(sorted(events, key=lambda e: e[0]), columns=EVENT_COLUMNS),
        run_name=_run_name(args, state_path),
        notes=notes,
    )
    total_steps = _positive_int(state.get("max_steps")) or _positive_int(args.get("max_steps"))
    run.schedule = schedule_from_args(args, total_steps, notes) if args else {}
    train_steps = [r["step"] for r in rows.train]
    eval_steps = [r["step"] for r in rows.evals]
    run.config = config_from(state, args, train_steps, eval_steps, total_steps, notes)
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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise RunImportError(f"{path}: cannot read ({error.strerror})") from error
    except UnicodeDecodeError as error:
        raise RunImportError(f"{path}: not UTF-8 text (byte {error.start}): expected JSON") from error
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


def _split_log_history(history: list[Any], path: Path) -> _Rows:
    rows = _Rows()
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
        if "loss" in row:
            rows.train.append(
                {"step": step, **{k: row.get(k) for k in ("loss", "grad_norm", "learning_rate")}}
            )
            rows.has_grad_norm |= "grad_norm" in row
            known = True
        if "eval_loss" in row:
            accuracy = next((row[k] for k in EVAL_ACCURACY_KEYS if k in row), None)
            rows.evals.append({"step": step, "val_loss": row["eval_loss"], "val_accuracy": accuracy})
            unmapped_eval |= {
                k for k in row if k.startswith("eval_") and k not in (*EVAL_ACCURACY_KEYS, *EVAL_BOOKKEEPING)
            }
            unmapped_eval.discard("eval_loss")
            known = True
        if "train_runtime" in row:
            rows.train_runtime = _float_or_none(row["train_runtime"])
            rows.events.append((step, f"run finished: train_runtime {row['train_runtime']} s"))
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
        frame[column] = metric_column([_float_or_none(r[column]) for r in rows])
    return frame.reindex(columns=TRAIN_COLUMNS)


def _eval_frame(rows: list[dict[str, Any]], notes: list[str]) -> pd.DataFrame:
    if not rows:
        notes.append("no eval rows in log_history: evaluation checks cannot run")
        return pd.DataFrame(columns=EVAL_COLUMNS)
    frame = pd.DataFrame({"step": pd.Series([r["step"] for r in rows], dtype="int64")})
    frame["val_loss"] = metric_column([_float_or_none(r["val_loss"]) for r in rows])
    accuracy = [_float_or_none(r["val_accuracy"]) for r in rows]
    if any(a is not None and not 0.0 <= a <= 1.0 for a in accuracy):
        notes.append("eval accuracy has values outside 0..1 (a percentage?): val_accuracy left empty")
        accuracy = [None] * len(rows)
    frame["val_accuracy"] = metric_column(accuracy)
    return frame


# ---------------------------------------------------------------- training arguments


def find_training_args(folder: Path) -> tuple[dict[str, Any], list[str]]:
    """TrainingArguments-style keys found beside a run: (merged args, file names used).

    A console dump in a text file is the base; an argument file (JSON/YAML) overrides it.
    """
    args: dict[str, Any] = {}
    sources: list[str] = []
    for path in sorted(p for p in folder.iterdir() if p.suffix in TEXT_SUFFIXES and p.is_file()):
        dump = _text_dump(path)
        if dump:
            args.update(dump)
            sources.append(f"{path.name} (TrainingArguments console dump)")
            break
    for path in _argument_files(folder):
        document = unwrap_wandb_config(_read_side_document(path))
        if isinstance(document, dict) and any(key in document for key in ARGS_KEYS):
            args.update(document)
            sources.append(path.name)
            break
    return {k: _normalise_enum(k, v) for k, v in args.items()}, sources


def _argument_files(folder: Path) -> list[Path]:
    named = [folder / name for name in ARGS_FILE_NAMES if (folder / name).is_file()]
    others = sorted(
        p
        for p in folder.iterdir()
        if p.suffix in (".json", ".yaml", ".yml") and p.is_file() and p.name != STATE_FILE and p not in named
    )
    return [p for p in named + others if p.stat().st_size <= 1_000_000]


def unwrap_wandb_config(document: Any) -> Any:
    """W&B's config.yaml stores each key as {desc, value}: keep just the values."""
    if not isinstance(document, dict):
        return document
    entries = {k: v for k, v in document.items() if k not in ("wandb_version", "_wandb")}
    if entries and all(isinstance(v, dict) and "value" in v for v in entries.values()):
        return {k: v["value"] for k, v in entries.items()}
    return document


def _read_side_document(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError):
        return None  # a side file we cannot read is not the run's log; it just gives no arguments


def _text_dump(path: Path) -> dict[str, Any] | None:
    """The last TrainingArguments dump in a text file (None for binary files or no dump)."""
    if path.stat().st_size > MAX_SIDE_FILE_BYTES:
        return None
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        return None
    return parse_arguments_dump(raw.decode("utf-8", errors="replace"))


def parse_arguments_dump(text: str) -> dict[str, Any] | None:
    """Parse the last ``...TrainingArguments(`` console dump in text (see ARGS_DUMP_*)."""
    found: dict[str, Any] | None = None
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if current is None:
            if ARGS_DUMP_START.search(line):
                current = {}
            continue
        if line.strip() == ")":
            found, current = current, None
            continue
        match = ARGS_DUMP_LINE.match(line)
        if match:
            current[match.group("key")] = _dump_value(match.group("value"))
    if found is not None:
        totals = TOTAL_BATCH_LINE.findall(text)
        if totals:
            found["_total_train_batch_size"] = int(totals[-1].replace(",", ""))
    return found


def _dump_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _normalise_enum(key: str, value: Any) -> Any:
    """'SchedulerType.LINEAR' (older dumps) -> 'linear'."""
    if key in ENUM_KEYS and isinstance(value, str):
        return value.rsplit(".", 1)[-1].lower() if re.fullmatch(r"\w+\.\w+", value) else value.lower()
    return value


def schedule_from_args(args: dict[str, Any], total_steps: int | None, notes: list[str]) -> dict[str, Any]:
    """The canonical lr_schedule from TrainingArguments-style keys (HF semantics)."""
    source_type = args.get("lr_scheduler_type")
    kind = SCHEDULE_TYPES.get(str(source_type)) if source_type is not None else None
    peak = _float_or_none(args.get("learning_rate"))
    schedule: dict[str, Any] = {
        "type": kind,
        "peak_lr": peak,
        "min_lr": None,
        "warmup_steps": None,
        "decay_steps": total_steps if kind else None,
    }
    if source_type is not None:
        schedule["source_type"] = source_type
    if source_type is not None and kind is None:
        notes.append(f"lr_scheduler_type={source_type} has no canonical equivalent: schedule type left empty")
    if kind in ("constant", "constant_with_warmup"):
        schedule["min_lr"] = peak
    elif source_type == "cosine_with_min_lr":
        schedule["min_lr"] = _min_lr_from_kwargs(args.get("lr_scheduler_kwargs"), peak, notes)
    elif kind:
        schedule["min_lr"] = 0.0  # transformers' linear and cosine schedules decay to 0
    schedule["warmup_steps"] = 0 if kind == "constant" else _warmup_steps(args, total_steps, notes)
    return schedule


def _min_lr_from_kwargs(kwargs: Any, peak: float | None, notes: list[str]) -> float | None:
    if isinstance(kwargs, str):
        kwargs = _dump_value(kwargs)
    if isinstance(kwargs, dict):
        if _float_or_none(kwargs.get("min_lr")) is not None:
            return _float_or_none(kwargs["min_lr"])
        rate = _float_or_none(kwargs.get("min_lr_rate"))
        if rate is not None and peak is not None:
            return rate * peak
    notes.append("cosine_with_min_lr without min_lr/min_lr_rate in lr_scheduler_kwargs: min_lr unknown")
    return None


def _warmup_steps(args: dict[str, Any], total_steps: int | None, notes: list[str]) -> int | None:
    steps = _float_or_none(args.get("warmup_steps"))
    ratio = _float_or_none(args.get("warmup_ratio"))
    if steps is not None and steps >= 1:
        return int(steps)
    if steps is not None and 0 < steps < 1:
        ratio = steps  # transformers >= 5 takes a fractional warmup_steps as a ratio
    if ratio:
        if total_steps is None:
            notes.append(f"warmup_ratio={ratio} but total steps unknown: warmup_steps unknown")
            return None
        warmup = math.ceil(ratio * total_steps)
        notes.append(
            f"warmup_steps = ceil(warmup_ratio {ratio} x {total_steps} steps) = {warmup} "
            "(as transformers computes it)"
        )
        return warmup
    return 0 if steps == 0 or ratio == 0 else None


# ---------------------------------------------------------------- config


def config_from(
    state: dict[str, Any],
    args: dict[str, Any],
    train_steps: list[int],
    eval_steps: list[int],
    total_steps: int | None,
    notes: list[str],
) -> dict[str, Any]:
    """Canonical config keys from trainer_state top-level keys (``state``, may be empty) and
    TrainingArguments-style ``args``, checked against the steps actually logged."""
    config: dict[str, Any] = {
        "total_steps": total_steps,
        "batch_size": _positive_int(state.get("train_batch_size"))
        or _positive_int(args.get("per_device_train_batch_size")),
        "num_epochs": _number(state.get("num_train_epochs", args.get("num_train_epochs"))),
    }
    logging = _interval(state.get("logging_steps", args.get("logging_steps")), total_steps)
    config["logging_interval"] = choose_interval(
        "logging_interval (logging_steps)", logging, train_steps, notes
    )
    config["eval_interval"] = _eval_interval(state, args, eval_steps, total_steps, notes)
    config["checkpoint_interval"] = _checkpoint_interval(state, args, total_steps, notes)
    config.update(_args_config(args, notes))
    epochs = config["num_epochs"]
    if total_steps and epochs and epochs > 1:
        config["steps_per_epoch"] = round(total_steps / epochs)
        notes.append(
            f"steps_per_epoch = total steps {total_steps} / num_train_epochs {epochs:g} = "
            f"{config['steps_per_epoch']} (used to find epoch boundaries: there are no shard ids)"
        )
    if config["batch_size"] is not None and "train_batch_size" in state:
        notes.append("batch_size is the per-device batch (train_batch_size in trainer_state.json)")
    return config


def _eval_interval(
    state: dict[str, Any], args: dict[str, Any], eval_steps: list[int], total: int | None, notes: list[str]
) -> int | None:
    strategy = args.get("eval_strategy", args.get("evaluation_strategy"))
    stated = _interval(state.get("eval_steps", args.get("eval_steps")), total)
    if not eval_steps:
        if stated is not None:
            notes.append(
                f"eval_steps={stated} is recorded but log_history has no eval rows "
                "(evaluation was off): eval_interval left empty"
            )
        return None
    if strategy == "epoch":
        observed = regular_interval(eval_steps)
        notes.append(
            f"evaluation_strategy=epoch: evaluations once per epoch; eval_interval "
            f"{'= ' + str(observed) + ' steps, as logged' if observed else 'left empty (irregular epochs)'}"
        )
        return observed
    return choose_interval("eval_interval (eval_steps)", stated, eval_steps, notes)


def _checkpoint_interval(
    state: dict[str, Any], args: dict[str, Any], total: int | None, notes: list[str]
) -> int | None:
    strategy = args.get("save_strategy")
    stated = _interval(state.get("save_steps", args.get("save_steps")), total)
    if strategy in ("no", "epoch", "best"):
        notes.append(
            f"save_strategy={strategy}: no checkpoint every save_steps"
            f"{f' (save_steps={stated} is recorded but unused)' if stated else ''}; "
            "checkpoint_interval left empty"
        )
        return None
    if stated is None:
        notes.append("checkpoint_interval (save_steps) not stated: unknown")
    return stated


def _args_config(args: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """Config keys only the training arguments state (empty without arguments)."""
    if not args:
        return {}
    config: dict[str, Any] = {}
    clip = _float_or_none(args.get("max_grad_norm"))
    if clip is not None and clip <= 0:
        notes.append(f"max_grad_norm={clip}: gradient clipping was disabled")
        clip = None
    config["grad_clip_norm"] = clip
    for key in ("gradient_accumulation_steps", "seed"):
        if _number(args.get(key)) is not None:
            config[key] = _number(args[key])
    optimizer = {
        name: value
        for name, value in (
            ("name", args.get("optim")),
            ("betas", [args.get("adam_beta1"), args.get("adam_beta2")]),
            ("weight_decay", _float_or_none(args.get("weight_decay"))),
            ("eps", _float_or_none(args.get("adam_epsilon"))),
        )
        if value is not None and value != [None, None]
    }
    if optimizer:
        config["optimizer"] = optimizer
    if "bf16" in args or "fp16" in args:
        config["precision"] = (
            "bf16" if args.get("bf16") is True else "fp16" if args.get("fp16") is True else "fp32"
        )
    total_batch = args.get("_total_train_batch_size")
    if isinstance(total_batch, int):
        config["global_batch_size"] = total_batch
        per_device = _positive_int(args.get("per_device_train_batch_size"))
        accumulation = _positive_int(args.get("gradient_accumulation_steps")) or 1
        if per_device and total_batch % (per_device * accumulation) == 0:
            config["data_parallel_workers"] = total_batch // (per_device * accumulation)
            notes.append(
                f"data_parallel_workers = total train batch {total_batch} / (per-device {per_device} x "
                f"accumulation {accumulation}), from the console banner"
            )
    return config


def choose_interval(label: str, stated: int | None, steps: list[int], notes: list[str]) -> int | None:
    """The interval to record: the stated one unless the logged rows show another regular one."""
    observed = regular_interval(steps)
    if stated is None:
        if observed is not None:
            notes.append(
                f"{label} not stated: every {observed} steps inferred from the {len(steps)} logged rows"
            )
        return observed
    if observed is not None and observed != stated:
        notes.append(
            f"{label}={stated} is recorded but rows were logged every {observed} steps: used {observed}"
        )
        return observed
    return stated


def regular_interval(steps: list[int]) -> int | None:
    """The common spacing of at least three distinct steps, or None when irregular."""
    distinct = sorted(set(steps))
    if len(distinct) < 3:
        return None
    gaps = {b - a for a, b in itertools.pairwise(distinct)}
    return gaps.pop() if len(gaps) == 1 else None


def _interval(value: Any, total_steps: int | None) -> int | None:
    """logging/eval/save steps: an int, or (transformers allows it) a ratio of total steps."""
    number = _float_or_none(value)
    if number is None or number <= 0:
        return None
    if number < 1:
        return math.ceil(number * total_steps) if total_steps else None
    return int(number)


# ---------------------------------------------------------------- notes


def explain_unknowns(run: RunData, had_args: bool, beside: str) -> None:
    """One note naming the required schedule/config values still unknown, and why."""
    unknown = [f"lr_schedule.{k}" for k in REQUIRED_SCHEDULE_KEYS if run.schedule.get(k) is None]
    unknown += [k for k in ("grad_clip_norm", "total_steps") if run.config.get(k) is None]
    if not unknown:
        return
    if had_args:
        run.notes.append(f"the training arguments do not state: {', '.join(unknown)}")
    else:
        run.notes.append(
            f"no training arguments beside {beside} (looked for training_args.json/.yaml, JSON/YAML "
            "with learning_rate, TrainingArguments dumps in *.txt/*.log/*.out): unknown: "
            f"{', '.join(unknown)}; schedule and clipping checks cannot run"
        )
    if run.schedule.get("type") is None:
        note = describe_lr_curve(run.train)
        if note:
            run.notes.append(note)


def describe_lr_curve(train: pd.DataFrame) -> str | None:
    """A factual one-line description of the logged learning rate, for runs without a schedule."""
    rates = pd.to_numeric(train.get("learning_rate", pd.Series(dtype="float64")), errors="coerce")
    if rates.notna().sum() < 2:
        return None
    peak_at = rates.idxmax()
    last_at = rates.last_valid_index()
    first_at = rates.first_valid_index()
    steps = train["step"]
    return (
        f"logged learning_rate: {rates[first_at]:.3g} at step {steps[first_at]}, "
        f"peak {rates[peak_at]:.3g} at step {steps[peak_at]}, "
        f"{rates[last_at]:.3g} at the last logged step {steps[last_at]} "
        "(described, not turned into a configured schedule)"
    )


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
    global_step = _positive_int(state.get("global_step"))
    if rows.train_runtime and global_step:
        message += (
            f" (train_runtime {rows.train_runtime:.0f} s over {global_step} steps = "
            f"{rows.train_runtime / global_step:.3g} s/step on average, evaluation included)"
        )
    run.notes.append(message)


def _stopped_note(run: RunData, state: dict[str, Any], rows: _Rows) -> None:
    global_step = _positive_int(state.get("global_step"))
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


def _float_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # YAML 1.1 reads "5e-5" as text
        except ValueError:
            return None
    return None


def _number(value: Any) -> int | float | None:
    number = _float_or_none(value)
    if number is None:
        return None
    return int(number) if number.is_integer() else number


def _positive_int(value: Any) -> int | None:
    number = _float_or_none(value)
    return int(number) if number is not None and number > 0 and number.is_integer() else None
