"""Training arguments beside a run -> the canonical schedule and config: shared by the importers.

Hugging Face Trainer ``TrainingArguments`` (an argument file, or the console dump transformers
prints), W&B's ``config.yaml`` and the Trainer's ``*_results.json`` say how a run was configured;
``find_training_args`` finds them beside a run, ``schedule_from_args`` and ``config_from`` turn
them into the canonical ``lr_schedule`` and config keys (checked against the steps actually
logged), ``explain_unknowns`` names what is still unknown. Used by the Hugging Face, LLaMA-Factory,
TensorBoard, Lightning and W&B importers.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from run_diagnosis.importers.aliases import UNREADABLE, python_literal
from run_diagnosis.importers.canonical import REQUIRED_SCHEDULE_KEYS, RunData
from run_diagnosis.importers.reference_keys import read_side_document, unwrap_wandb_config

NO_EPOCH_COUNT = 2**63 - 1  # sys.maxsize: transformers' num_train_epochs for a dataset without a length

STATE_FILE = "trainer_state.json"  # the Trainer's state: read by hf_trainer, never an argument file

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
RESULT_FILES = ("all_results.json", "train_results.json", "eval_results.json")
# A launch script beside the run (run.sh: `python train.py --learning_rate 2e-5 --lr_scheduler_type
# cosine ...`) holds the arguments when the trainer saved none. A script can launch other runs than
# the one logged (a sweep, another model), so its arguments are used only when its learning_rate is
# the peak the log shows, within SCRIPT_LR_AGREEMENT of it (a logged LR is the configured one to
# float32 rounding; a tenth leaves room for a warmup that was logged a step before its top).
SCRIPT_SUFFIXES = (".sh", ".bash", ".slurm")
SCRIPT_ARGUMENT = re.compile(r"^--(?P<key>[A-Za-z_][\w.-]*)(?:=(?P<value>.*))?$")
SCRIPT_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?(?P<name>[A-Za-z_]\w*)=(?P<value>[^\s;]+)\s*$")
SCRIPT_LR_AGREEMENT = 0.1
# DeepSpeed's config names its own scheduler; given one, DeepSpeed drives the LR, not the Trainer's
# lr_scheduler_type (transformers' integration leaves it in charge)
DEEPSPEED_KEYS = ("zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size", "fp16", "bf16")
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


# ---------------------------------------------------------------- training arguments


def find_training_args(
    folder: Path, logged_lr: Iterable[Any] = (), notes: list[str] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """TrainingArguments-style keys found beside a run: (merged args, file names used).

    A launch script's arguments are the base (when its learning_rate is the logged peak,
    ``logged_lr``), a console dump in a text file overrides them, an argument file (JSON/YAML)
    overrides both; ``notes`` hears why a script was not used and what DeepSpeed's config changes.
    """
    notes = notes if notes is not None else []
    args, sources = _script_arguments(folder, logged_lr, notes)
    _deepspeed_scheduler_note(folder, notes)
    for path in sorted(p for p in folder.iterdir() if p.suffix in TEXT_SUFFIXES and p.is_file()):
        dump = _text_dump(path)
        if dump:
            args.update(dump)
            sources.append(f"{path.name} (TrainingArguments console dump)")
            break
    for path in _argument_files(folder):
        document = unwrap_wandb_config(read_side_document(path))
        if isinstance(document, dict) and any(key in document for key in ARGS_KEYS):
            args.update(document)
            sources.append(path.name)
            break
    return {k: normalise_enum(k, v) for k, v in args.items()}, sources


def _script_arguments(
    folder: Path, logged_lr: Iterable[Any], notes: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """The ``--key value`` arguments of the launch scripts in ``folder`` that agree on each key
    (SCRIPT_* above), when their learning_rate is the logged peak."""
    seen: dict[str, set[str]] = {}
    names = []
    for path in sorted(p for p in folder.iterdir() if p.suffix in SCRIPT_SUFFIXES and p.is_file()):
        if path.stat().st_size > 1_000_000:
            continue
        found = parse_script_arguments(path.read_text(encoding="utf-8", errors="replace"))
        if any(key in found for key in ARGS_KEYS):
            names.append(path.name)
            for key, values in found.items():
                seen.setdefault(key, set()).update(values)
    if not names:
        return {}, []
    args = {key: _dump_value(next(iter(values))) for key, values in seen.items() if len(values) == 1}
    peak = max((v for v in map(float_or_none, logged_lr) if v is not None and 0 < v < math.inf), default=None)
    configured = float_or_none(args.get("learning_rate"))
    where = ", ".join(names)
    if peak is None or configured is None or abs(configured - peak) > SCRIPT_LR_AGREEMENT * peak:
        logged = "no LR logged" if peak is None else f"{peak:g}"
        notes.append(
            f"{where}: launch script arguments not used: its learning_rate ({args.get('learning_rate')}) "
            f"is not the logged peak ({logged}), so it may launch another run"
        )
        return {}, []
    ambiguous = sorted(key for key, values in seen.items() if len(values) > 1)
    if ambiguous:
        notes.append(f"{where}: {', '.join(ambiguous)} given different values: not used")
    return args, [f"{where} (launch script arguments; its learning_rate is the logged peak)"]


def parse_script_arguments(text: str) -> dict[str, set[str]]:
    """The values of each ``--key value`` / ``--key=value`` argument in a shell script, line
    continuations joined and ``$NAME``/``${NAME}`` replaced by the script's own ``NAME=value``
    assignments (a value still holding ``$`` is left out)."""
    # a comment line ends at its newline even when it ends in a backslash (bash): drop them first
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    text = text.replace("\\\n", " ")
    assigned = {
        m.group("name"): m.group("value").strip("'\"")
        for m in map(SCRIPT_ASSIGNMENT.match, text.splitlines())
        if m
    }
    found: dict[str, set[str]] = {}
    for line in text.splitlines():
        try:
            tokens = shlex.split(line.rstrip().removesuffix("\\"), comments=True)  # a dangling continuation
        except ValueError:
            continue  # an unbalanced quote: not an argument line we can read
        tokens = [
            re.sub(r"\$\{?(\w+)\}?", lambda m: assigned.get(m.group(1), m.group(0)), tok) for tok in tokens
        ]
        for index, token in enumerate(tokens):
            match = SCRIPT_ARGUMENT.match(token)
            if not match:
                continue
            value = match.group("value")
            if value is None and index + 1 < len(tokens) and not tokens[index + 1].startswith("--"):
                value = tokens[index + 1]
            if value is not None and "$" not in value:
                found.setdefault(match.group("key").replace("-", "_"), set()).add(value)
    return found


def _deepspeed_scheduler_note(folder: Path, notes: list[str]) -> None:
    for path in sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file()):
        if path.name == STATE_FILE or path.stat().st_size > 1_000_000:
            continue
        document = read_side_document(path)
        if not isinstance(document, dict) or not any(key in document for key in DEEPSPEED_KEYS):
            continue
        scheduler = document.get("scheduler")
        if isinstance(scheduler, dict) and scheduler.get("type"):
            notes.append(
                f"{path.name} is a DeepSpeed config with its own scheduler, {scheduler['type']} "
                f"({json.dumps(scheduler.get('params', {}))}): DeepSpeed drives the LR with it, "
                "not with the Trainer's lr_scheduler_type"
            )


def _argument_files(folder: Path) -> list[Path]:
    named = [folder / name for name in ARGS_FILE_NAMES if (folder / name).is_file()]
    others = sorted(
        p
        for p in folder.iterdir()
        if p.suffix in (".json", ".yaml", ".yml") and p.is_file() and p.name != STATE_FILE and p not in named
    )
    return [p for p in named + others if p.stat().st_size <= 1_000_000]


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
    value = python_literal(text)
    return text if value is UNREADABLE else value


def normalise_enum(key: str, value: Any) -> Any:
    """'SchedulerType.LINEAR' (older dumps) -> 'linear'."""
    if key in ENUM_KEYS and isinstance(value, str):
        return value.rsplit(".", 1)[-1].lower() if re.fullmatch(r"\w+\.\w+", value) else value.lower()
    return value


def schedule_from_args(args: dict[str, Any], total_steps: int | None, notes: list[str]) -> dict[str, Any]:
    """The canonical lr_schedule from TrainingArguments-style keys (HF semantics)."""
    source_type = args.get("lr_scheduler_type")
    kind = SCHEDULE_TYPES.get(str(source_type)) if source_type is not None else None
    peak = float_or_none(args.get("learning_rate"))
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
        if float_or_none(kwargs.get("min_lr")) is not None:
            return float_or_none(kwargs["min_lr"])
        rate = float_or_none(kwargs.get("min_lr_rate"))
        if rate is not None and peak is not None:
            return rate * peak
    notes.append("cosine_with_min_lr without min_lr/min_lr_rate in lr_scheduler_kwargs: min_lr unknown")
    return None


def _warmup_steps(args: dict[str, Any], total_steps: int | None, notes: list[str]) -> int | None:
    steps = float_or_none(args.get("warmup_steps"))
    ratio = float_or_none(args.get("warmup_ratio"))
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
    logged_epochs: Sequence[tuple[int, Any]] = (),
) -> dict[str, Any]:
    """Canonical config keys from trainer_state top-level keys (``state``, may be empty) and
    TrainingArguments-style ``args``, checked against the steps actually logged. Steps per epoch
    come from total steps / num_train_epochs, else from ``logged_epochs`` ((step, epoch) of the
    train rows, ``steps_per_epoch_from_log``); never 0."""
    config: dict[str, Any] = {
        "total_steps": total_steps,
        "batch_size": positive_int(state.get("train_batch_size"))
        or positive_int(args.get("per_device_train_batch_size")),
        "num_epochs": as_number(state.get("num_train_epochs", args.get("num_train_epochs"))),
    }
    logging = _interval(state.get("logging_steps", args.get("logging_steps")), total_steps)
    config["logging_interval"] = choose_interval(
        "logging_interval (logging_steps)", logging, train_steps, notes
    )
    config["eval_interval"] = _eval_interval(state, args, eval_steps, total_steps, notes)
    config["checkpoint_interval"] = _checkpoint_interval(state, args, total_steps, notes)
    config.update(_args_config(args, notes))
    epochs = config["num_epochs"]
    if epochs is not None and (epochs >= NO_EPOCH_COUNT or (total_steps and epochs > total_steps)):
        notes.append(
            f"num_train_epochs={epochs:g} is not an epoch count (more epochs than steps): transformers "
            "writes sys.maxsize when max_steps is set and the training data has no length (a streamed "
            "dataset); num_epochs left empty"
        )
        config["num_epochs"] = epochs = None
    if total_steps and epochs and epochs > 1:
        config["steps_per_epoch"] = round(total_steps / epochs)
        notes.append(
            f"steps_per_epoch = total steps {total_steps} / num_train_epochs {epochs:g} = "
            f"{config['steps_per_epoch']} (used to find epoch boundaries: there are no shard ids)"
        )
    elif epochs is None and logged_epochs:
        config["steps_per_epoch"] = steps_per_epoch_from_log(logged_epochs, notes)
    if config["batch_size"] is not None and "train_batch_size" in state:
        notes.append("batch_size is the per-device batch (train_batch_size in trainer_state.json)")
    return config


def steps_per_epoch_from_log(logged: Sequence[tuple[int, Any]], notes: list[str]) -> int | None:
    """Optimizer steps per epoch from the epoch the Trainer logs with each row, or None.

    The whole part of the logged epoch counts the epochs completed in both of the Trainer's
    ways of counting (a sized dataset: epoch = step / steps per epoch; a dataset without a
    length, num_train_epochs = sys.maxsize: the fraction is the step within the epoch / max_steps,
    not a share of an epoch). So epoch boundary k lies between the last step logged before the
    whole part reaches k and the first step at which it does; steps per epoch is the middle of
    what all boundaries allow (each bound / k), or of the last boundary's when the epochs
    differ in length."""
    read = [(int(step), float_or_none(epoch)) for step, epoch in logged]
    points = sorted((step, epoch) for step, epoch in read if epoch is not None and 0 <= epoch < math.inf)
    crossings: list[tuple[int, int, int]] = []  # (boundary k, last step before it, first step after)
    previous_step, previous_whole = 0, 0
    for step, epoch in points:
        whole = math.floor(epoch)
        crossings += [(k, previous_step, step) for k in range(previous_whole + 1, whole + 1)]
        previous_step, previous_whole = step, whole
    if not crossings:
        reached = f"{points[-1][1]:g} at step {points[-1][0]}" if points else "not logged"
        notes.append(f"steps_per_epoch unknown: the logged epoch reaches {reached}: no epoch boundary to see")
        return None
    lower = max(before / k for k, before, _ in crossings)
    upper = min(after / k for k, _, after in crossings)
    k, before, after = crossings[-1]
    middle = (lower + upper) / 2 if lower <= upper else (before + after) / (2 * k)
    per_epoch = round(middle)
    if per_epoch < 1:
        notes.append("steps_per_epoch unknown: the logged epochs end within the first steps")
        return None
    notes.append(
        f"steps_per_epoch = {per_epoch}: from the logged epoch against step (epoch {k} begins between steps "
        f"{before} and {after}; {len(crossings)} boundaries), as num_train_epochs does not give it "
        "(used to find epoch boundaries: there are no shard ids)"
    )
    return per_epoch


# The epoch counter a trainer logs beside the step only grows within one run; one falling back
# by more than its rounding (the Trainer rounds it to 2 decimals) while the step goes on is a
# resume from the run's checkpoint onto other data or another batch size: the step, optimizer
# and log history carried over, the epoch accounting started again.
EPOCH_FALLBACK_MIN = 0.02


def epoch_fallback_events(logged: Sequence[tuple[int, Any]]) -> list[tuple[int, str]]:
    """A resume event at each row (in log order) where the logged epoch falls back while the step advances."""
    points = [  # in log order: a second run appended to the same log starts its step again
        (int(step), epoch)
        for step, value in logged
        if (epoch := float_or_none(value)) is not None and 0 <= epoch < math.inf
    ]
    events = []
    for (before_step, before), (step, epoch) in itertools.pairwise(points):
        if step > before_step and epoch < before - EPOCH_FALLBACK_MIN:
            events.append(  # at the checkpoint it resumed from, as a resuming trainer logs it
                (
                    before_step,
                    f"resuming from step {before_step} with its epoch count restarted (read from the log: "
                    f"the logged epoch fell back from {before:g} at step {before_step} to {epoch:g} at step "
                    f"{step} while the step went on: a resume onto other data or another batch size)",
                )
            )
    return events


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


# Lightning's grad_norm() utility (lightning.pytorch.utilities.grad_norm, and the Trainer's
# track_grad_norm before 2.0) names the total norm grad_<p>_norm_total; the hook it is documented
# for, on_before_optimizer_step, runs before clipping (Precision._after_closure calls the hook, then
# _clip_gradients), so a logged norm of that name is the norm before clipping. Other names are a
# user's own metric: when they were measured is not known.
LIGHTNING_TOTAL_NORM = re.compile(r"^(?:.*/)?grad_(?:\d+(?:\.\d+)?|inf)_norm_total(?:_step|_epoch)?$")


def grad_norm_measured_by_name(name: str | None) -> str | None:
    """``before_clipping`` when the grad-norm metric's name is Lightning's grad_norm() total."""
    return "before_clipping" if name and LIGHTNING_TOTAL_NORM.match(name) else None


def _args_config(args: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """Config keys only the training arguments state (empty without arguments)."""
    if not args:
        return {}
    config: dict[str, Any] = {}
    clip = float_or_none(args.get("max_grad_norm"))
    if clip is not None and clip <= 0:
        notes.append(f"max_grad_norm={clip}: gradient clipping was disabled")
        clip = None
    config["grad_clip_norm"] = clip
    if clip is not None:
        # the HF Trainer logs the total norm clip_grad_norm_ returns: the norm before clipping,
        # whichever tracker it is logged to (trainer_state, W&B, MLflow), so a norm above the
        # clip is the clip at work, not a violation
        config["grad_norm_measured"] = "before_clipping"
    for key in ("gradient_accumulation_steps", "seed"):
        if as_number(args.get(key)) is not None:
            config[key] = as_number(args[key])
    optimizer = {
        name: value
        for name, value in (
            ("name", args.get("optim")),
            ("betas", [args.get("adam_beta1"), args.get("adam_beta2")]),
            ("weight_decay", float_or_none(args.get("weight_decay"))),
            ("eps", float_or_none(args.get("adam_epsilon"))),
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
        per_device = positive_int(args.get("per_device_train_batch_size"))
        accumulation = positive_int(args.get("gradient_accumulation_steps")) or 1
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
    number = float_or_none(value)
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
    # index labels of train (pandas types them Hashable; two valid values make none of them None)
    peak_at: Any = rates.idxmax()
    last_at: Any = rates.last_valid_index()
    first_at: Any = rates.first_valid_index()
    steps = train["step"]
    return (
        f"logged learning_rate: {rates[first_at]:.3g} at step {steps[first_at]}, "
        f"peak {rates[peak_at]:.3g} at step {steps[peak_at]}, "
        f"{rates[last_at]:.3g} at the last logged step {steps[last_at]} "
        "(described, not turned into a configured schedule)"
    )


def float_or_none(value: Any) -> float | None:
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


def as_number(value: Any) -> int | float | None:
    number = float_or_none(value)
    if number is None:
        return None
    return int(number) if number.is_integer() else number


def positive_int(value: Any) -> int | None:
    number = float_or_none(value)
    return int(number) if number is not None and number > 0 and number.is_integer() else None
