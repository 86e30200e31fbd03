"""Plain-text training logs, the shared part: line types, log shapes and the one pass over the lines.

A log shape (``Shape``) is a list of line types (``LineType``: one compiled regex whose named
groups map to canonical fields through ``GROUPS``) and a config reader. The shapes of each log
family live in their own module (``text_log_llmc``, ``text_log_nanogpt``, ``text_log_megatron``);
``text_logs`` detects the shape of a file, runs ``LogParser`` over its lines and assembles the run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.canonical import EVAL_COLUMNS, TRAIN_COLUMNS
from run_diagnosis.importers.units import UNIT_PATTERN, UnitError, convert

NUM = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|(?i:nan|inf(?:inity)?))"


# an optional unit after a loss value (`val loss 2.41 BPC`): group <column>unit_suffix, see importers.units
def unit_suffix(column: str) -> str:
    return rf"(?:\s*(?P<{column}unit_suffix>{UNIT_PATTERN})(?![\w/]))?"


# named group -> (canonical field, factor). The other groups: step; total_steps,
# global_batch_size, loss_scale, skipped_iterations, nan_iterations (BOOKKEEPING, read by
# LogParser._bookkeeping); key/value (settings); metric (side metrics); event template fields.
GROUPS: dict[str, tuple[str, float]] = {
    "loss": ("loss", 1.0),
    "grad_norm": ("grad_norm", 1.0),
    "learning_rate": ("learning_rate", 1.0),
    "step_time_sec": ("step_time_sec", 1.0),
    "step_time_ms": ("step_time_sec", 0.001),
    "val_loss": ("val_loss", 1.0),
    "val_accuracy": ("val_accuracy", 1.0),
}
BOOKKEEPING = {"total_steps", "global_batch_size", "loss_scale", "skipped_iterations", "nan_iterations"}


@dataclass(frozen=True)
class LineType:
    """One kind of line: ``kind`` says what a match becomes.

    kinds: ``train`` / ``eval`` (a row), ``event`` (``event`` is a str.format template over the
    groups plus ``step``), ``setting`` (groups ``key``/``value`` into the config settings),
    ``side_metric`` (group ``metric``: a logged number that has no canonical column).
    ``evidence`` lines count when detecting the shape. ``needle`` is a cheap substring test run
    before the regex. ``next_step``: the event belongs to the step after the last logged one.
    """

    name: str
    kind: str
    pattern: re.Pattern[str]
    needle: str | None = None
    event: str | None = None
    evidence: bool = False
    next_step: bool = False
    values: tuple[tuple[str, str, float], ...] = field(init=False, default=())
    bookkeeping: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        groups = self.pattern.groupindex
        object.__setattr__(self, "values", tuple((g, *GROUPS[g]) for g in groups if g in GROUPS))
        object.__setattr__(self, "bookkeeping", any(g in BOOKKEEPING for g in groups))

    def match(self, line: str) -> re.Match[str] | None:
        if self.needle is not None and self.needle not in line:
            return None
        return self.pattern.search(line)


def any_order(anchor: str, *optional: str) -> re.Pattern[str]:
    """anchor, then each optional field captured wherever it sits later in the line (any order)."""
    return re.compile(anchor + "".join(f"(?=(?:.*?{part})?)" for part in optional))


def make_line(name: str, kind: str, regex: str, **options: Any) -> LineType:
    return LineType(name=name, kind=kind, pattern=re.compile(regex), **options)


# events any training script may print (checked after the shape's own line types)
COMMON_EVENTS: tuple[LineType, ...] = (
    make_line(
        "keyboard_interrupt",
        "event",
        r"^\s*KeyboardInterrupt|KeyboardInterrupt\s*$",
        needle="KeyboardInterrupt",
        event="training interrupted: KeyboardInterrupt (manual stop)",
    ),
    make_line(
        "launcher_sigterm",
        "event",
        r"Main process received SIGTERM",
        needle="SIGTERM",
        event="launcher stopped: main process received SIGTERM",
    ),
    make_line(
        "signal_received",
        "event",
        r"Signal \d+ \((?P<signal>SIG[A-Z]+)\) received by PID",
        needle="received by PID",
        event="worker received {signal}",
    ),
    make_line(
        "cuda_oom",
        "event",
        r"CUDA out of memory|OutOfMemoryError",
        event="error: CUDA out of memory",
    ),
    make_line(
        "nccl_watchdog",
        "event",
        r"Watchdog caught collective operation timeout",
        needle="Watchdog",
        event="NCCL watchdog timeout: a collective operation timed out",
    ),
    make_line(
        "python_exception",
        "event",
        r"^(?P<error>[A-Za-z_][\w.]*(?:Error|Exception))(?P<message>:.*)?$",
        event="error: {error}{message}",
    ),
)


@dataclass(frozen=True)
class Shape:
    """A log layout: its line types (tried in order, first match wins) and its config reader."""

    name: str
    description: str
    example: str
    line_types: tuple[LineType, ...]
    config: Callable[[ParsedLog], LogConfig]
    notes: tuple[str, ...] = ()
    # its step times are each the mean over the steps since the previous logged line (RunData's field)
    interval_mean_times: bool = False

    @property
    def evidence(self) -> tuple[LineType, ...]:
        return tuple(lt for lt in self.line_types if lt.evidence)


@dataclass
class LogConfig:
    schedule: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class ParsedLog:
    """What one pass over the lines collected."""

    shape: Shape
    train: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in TRAIN_COLUMNS})
    evals: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in EVAL_COLUMNS})
    events: list[tuple[int, str]] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    side_metrics: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    total_steps: list[int] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)
    loss_scales: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    last_step: int | None = None


# --------------------------------------------------------------------------- value helpers


def parse_number(value: Any) -> float | None:
    """A float from a logged or configured value; None for None/'None'/empty/non-numeric text."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    if text.lower() in {"", "none", "null"}:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_integer(value: Any) -> int | None:
    number = parse_number(value)
    if number is None or not math.isfinite(number) or number != int(number):
        return None
    return int(number)


def parse_flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes", "enabled"}:
        return True
    if text in {"false", "0", "no", "disabled"}:
        return False
    return None


# source schedule name (lower case, '-' and ' ' as '_') -> canonical schedule type; the same
# names hf_trainer uses: the warmup_* types hold for any warmup length, including 0
SCHEDULE_TYPES = {
    "cosine": "warmup_cosine",
    "linear": "warmup_linear",
    "constant": "constant",
    "inverse_square_root": "warmup_inverse_sqrt",
    "wsd": "warmup_stable_decay",
}


def schedule_type(style: Any, warmup_steps: int | None, notes: list[str]) -> str | None:
    """Canonical type of a Megatron/llm.c schedule name; None (with a note) when it has none."""
    if style is None or str(style).strip().lower() in {"", "none"}:
        return None
    name = re.sub(r"[^a-z0-9]+", "_", str(style).strip().lower()).strip("_")
    kind = SCHEDULE_TYPES.get(name)
    if kind == "constant" and warmup_steps:
        return "constant_with_warmup"
    if kind is None:
        notes.append(f"schedule {style!r} has no canonical type: lr_schedule.type left empty")
    return kind


# --------------------------------------------------------------------------- the pass


class LogParser:
    """One pass over the lines of a detected shape."""

    def __init__(self, shape: Shape) -> None:
        self.parsed = ParsedLog(shape=shape)
        self.types = shape.line_types + COMMON_EVENTS
        self._seen_events: set[tuple[int, str]] = set()

    def first_match(self, line: str) -> tuple[LineType, re.Match[str]] | None:
        for line_type in self.types:
            found = line_type.match(line)
            if found is not None:
                return line_type, found
        return None

    def feed(self, number: int, line: str) -> None:
        hit = self.first_match(line)
        if hit is not None:
            self._handle(hit[0], hit[1], number)

    def _step(self, found: re.Match[str]) -> int:
        step = found.group("step") if "step" in found.re.groupindex else None
        if step is not None:
            return int(step)
        return self.parsed.last_step if self.parsed.last_step is not None else 0

    def _event(self, step: int, text: str) -> None:
        if (step, text) not in self._seen_events:
            self._seen_events.add((step, text))
            self.parsed.events.append((step, text))

    def _handle(self, line_type: LineType, found: re.Match[str], number: int) -> None:
        parsed = self.parsed
        kind = line_type.kind
        if kind in ("train", "eval"):
            self._record(line_type, found)
        elif kind == "setting":
            key, value = found.group("key").strip(), found.group("value").strip()
            previous = parsed.settings.setdefault(key, value)
            if previous != value:
                parsed.notes.append(
                    f"setting {key!r} printed twice with different values ({previous!r}, then {value!r} "
                    f"at line {number}); the first is used"
                )
        elif kind == "event":
            step = self._step(found)
            if line_type.next_step and found.groupdict().get("step") is None:
                step = (parsed.last_step + 1) if parsed.last_step is not None else 0
            fields = {k: (v or "").strip()[:200] for k, v in found.groupdict().items() if k != "step"}
            self._event(step, (line_type.event or "").format(step=step, **fields))
        elif kind == "side_metric":
            parsed.side_metrics.setdefault(line_type.name, []).append(
                (self._step(found), float(found.group("metric")))
            )

    def _record(self, line_type: LineType, found: re.Match[str]) -> None:
        """A train or eval row: the step, then each canonical column (None when not on the line)."""
        step = self._step(found)
        target = self.parsed.train if line_type.kind == "train" else self.parsed.evals
        values: dict[str, float] = {}
        for group, column, factor in line_type.values:
            text = found.group(group)
            if text is not None:
                values[column] = self._in_canonical_unit(column, float(text) * factor, found, group)
        for column, cells in target.items():
            cells.append(step if column == "step" else values.get(column))
        self.parsed.last_step = step
        if line_type.bookkeeping:
            self._bookkeeping(found.groupdict(), step)

    def _in_canonical_unit(self, column: str, value: float, found: re.Match[str], group: str) -> float:
        """The value converted from the unit printed after it (BPC, bits, ppl, %), if any."""
        unit = found.groupdict().get(f"{group}unit_suffix")
        if not unit:
            return value
        try:
            converted = convert(column, value, unit)
        except UnitError as error:
            raise RunImportError(f"{column} {value} {unit}: {error}") from error
        note = f"{column} printed in {unit}: converted to nats (a loss) or a share (an accuracy)"
        if note not in self.parsed.notes:
            self.parsed.notes.append(note)
        return converted

    def _bookkeeping(self, groups: Mapping[str, str | None], step: int) -> None:
        """Megatron extras: total iterations, batch size, loss-scale drops, skipped/NaN counts."""
        parsed = self.parsed
        total = parse_integer(groups.get("total_steps"))
        if total is not None:
            parsed.total_steps.append(total)
        batch = parse_integer(groups.get("global_batch_size"))
        if batch is not None:
            parsed.batch_sizes.append(batch)
        scale = parse_number(groups.get("loss_scale"))
        if scale is not None:
            if parsed.loss_scales and scale < parsed.loss_scales[-1]:
                self._event(step, f"loss scale overflow: scale reduced to {scale:g}")
            parsed.loss_scales.append(scale)
        skipped = parse_integer(groups.get("skipped_iterations"))
        if skipped:
            fp16 = parse_flag(parsed.settings.get("fp16")) or (scale is not None and scale > 1.0)
            cause = "loss scale overflow" if fp16 else "optimizer step skipped"
            self._event(
                step,
                f"skipped iteration ({cause}): {skipped} skipped in the log interval ending at "
                f"iteration {step}",
            )
        nans = parse_integer(groups.get("nan_iterations"))
        if nans:
            self._event(
                step,
                f"nan iteration: {nans} iteration(s) with NaN/inf loss in the log interval ending at {step}",
            )


# --------------------------------------------------------------------------- config readers


def no_config(parsed: ParsedLog) -> LogConfig:
    return LogConfig(
        notes=[
            f"{parsed.shape.name}: the log carries no run config (learning-rate schedule, gradient clip, "
            "batch size, total steps are all unknown); supply a run_config.json to check them"
        ]
    )


def missing_notes(result: LogConfig, source: str) -> None:
    for key in ("type", "peak_lr", "min_lr", "warmup_steps", "decay_steps"):
        if result.schedule.get(key) is None:
            result.notes.append(f"lr_schedule.{key}: not stated in {source}")
    for key in ("grad_clip_norm", "total_steps"):
        if result.config.get(key) is None:
            result.notes.append(f"{key}: not stated in {source}")
