"""Plain-text training logs: llm.c, nanoGPT and Megatron-LM / Megatron-DeepSpeed output.

What is read
------------
One text file (or a folder holding exactly one such file) that a training script printed or
wrote. The known layouts ("shapes") live in one table, ``SHAPES``: each shape is a list of line
types, each line type one compiled regex whose named groups map to canonical fields through
``GROUPS`` (``step_time_ms`` becomes ``step_time_sec`` divided by 1000, and so on).

* ``llmc_main_log``: llm.c ``main.log`` (``-o DIR``): ``s:<step> trl:<loss> lr:<lr> norm:<norm>``,
  ``s:<step> tel:<val loss>``; ``s:<step> eval:<acc>`` is HellaSwag accuracy, which is not a
  validation token accuracy, so it is only summarised in the notes.
* ``llmc_stdout``: llm.c / llm.c ``train_gpt2.py`` / build-nanogpt stdout:
  ``step    1/19560 | train loss 11.01 | norm 15.4 | lr 8.57e-07 | 1234.56 ms | ...`` (fields in
  any order, ``loss X (+0.1z)`` accepted), ``val loss X``, ``HellaSwag: a/b = acc``, and the
  ``| Parameter | Value |`` table llm.c prints at start (the run config).
* ``nanogpt_stdout``: nanoGPT ``iter 100: loss 4.2345, time 35.21ms, mfu 12.3%`` and
  ``step 100: train loss 4.1, val loss 4.2``; ``Overriding: key = value`` lines give config.
* ``build_nanogpt_log``: build-nanogpt ``log.txt``: ``<step> train <loss>``, ``<step> val <loss>``.
* ``megatron``: Megatron-LM / Megatron-DeepSpeed stdout: ``iteration N/ M | ... |`` lines,
  ``validation loss at iteration N | lm loss value: ...`` lines and the ``arguments`` dump
  (``  lr ........ 0.0003``), which gives the config (see ``megatron_config``).

The shape is chosen by counting, in the first ``SNIFF_LINES`` lines, the lines each shape
recognises; the shape with most matches wins (if none matches there, ``load`` counts over the
whole file before giving up). CRLF endings, ANSI colour escapes and tqdm carriage-return
redraws are removed first; a file with NUL bytes or mostly undecodable bytes is refused before
any regex runs.

Rows are kept as logged: no sorting, no de-duplication. Multi-rank output: in the two real
Megatron-DeepSpeed logs every ``iteration`` and ``validation loss`` line appears once (Megatron
prints them from one rank), while launcher lines, NCCL lines and the KeyboardInterrupt
tracebacks repeat once per rank; events are therefore written once per (step, text).

Events come from what the log prints: checkpoint saves/loads, KeyboardInterrupt, launcher
SIGTERM, Python exceptions, CUDA OOM, NCCL watchdog timeouts, non-zero Megatron skipped/NaN
iteration counts, and drops of the fp16 loss scale. An event with no step of its own gets the
step of the last logged train or validation line (0 before the first one).

What cannot be known
--------------------
* Megatron iteration lines are averages over ``log_interval`` iterations; single-step spikes
  inside an interval are invisible. The config says so (``step_time_is_interval_mean: true``):
  the slow-step check then judges each logged row by the time lost over its whole window.
* llm.c ``main.log`` carries no config at all; the llm.c stdout table does not state the
  gradient clip (hard-coded in the trainer); nanoGPT prints only the settings that were
  overridden, not its defaults. Every unknown config value stays None with a note.
* Shard ids are never printed by these tools: ``shard_id`` stays empty.
* Logged NaN/inf values are kept as the text ``nan``/``inf`` so they reach the CSV
  (``write_run`` would write a float NaN as an empty cell).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from importers import RunImportError
from importers.aliases import metric_column
from importers.canonical import EVAL_COLUMNS, EVENT_COLUMNS, TRAIN_COLUMNS, RunData
from importers.units import UNIT_PATTERN, UnitError, convert

FORMAT = "text_log"
DESCRIPTION = (
    "plain-text training log: llm.c main.log or stdout, nanoGPT stdout, "
    "Megatron-LM / Megatron-DeepSpeed stdout"
)

SNIFF_LINES = 2000
SNIFF_BYTES = 4 * 1024 * 1024
BINARY_PROBE_BYTES = 64 * 1024
TEXT_SUFFIXES = {".log", ".txt", ".out", ".err", ".stdout"}
GENERIC_STEMS = {"main", "log", "logs", "train", "training", "stdout", "output", "out", "nohup", "run"}

NUM = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|(?i:nan|inf(?:inity)?))"


# an optional unit after a loss value (`val loss 2.41 BPC`): group <column>_unit, see importers.units
def _unit(column: str) -> str:
    return rf"(?:\s*(?P<{column}_unit>{UNIT_PATTERN})(?![\w/]))?"


CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))  # not tab/newlines/ESC
ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")

# named group -> (canonical field, factor). The other groups: step; total_steps,
# global_batch_size, loss_scale, skipped_iterations, nan_iterations (BOOKKEEPING, read by
# _Parser._bookkeeping); key/value (settings); metric (side metrics); event template fields.
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


def _fields(anchor: str, *optional: str) -> re.Pattern[str]:
    """anchor, then each optional field captured wherever it sits later in the line (any order)."""
    return re.compile(anchor + "".join(f"(?=(?:.*?{part})?)" for part in optional))


def _line(name: str, kind: str, regex: str, **options: Any) -> LineType:
    return LineType(name=name, kind=kind, pattern=re.compile(regex), **options)


# events any training script may print (checked after the shape's own line types)
COMMON_EVENTS: tuple[LineType, ...] = (
    _line(
        "keyboard_interrupt",
        "event",
        r"^\s*KeyboardInterrupt|KeyboardInterrupt\s*$",
        needle="KeyboardInterrupt",
        event="training interrupted: KeyboardInterrupt (manual stop)",
    ),
    _line(
        "launcher_sigterm",
        "event",
        r"Main process received SIGTERM",
        needle="SIGTERM",
        event="launcher stopped: main process received SIGTERM",
    ),
    _line(
        "signal_received",
        "event",
        r"Signal \d+ \((?P<signal>SIG[A-Z]+)\) received by PID",
        needle="received by PID",
        event="worker received {signal}",
    ),
    _line(
        "cuda_oom",
        "event",
        r"CUDA out of memory|OutOfMemoryError",
        event="error: CUDA out of memory",
    ),
    _line(
        "nccl_watchdog",
        "event",
        r"Watchdog caught collective operation timeout",
        needle="Watchdog",
        event="NCCL watchdog timeout: a collective operation timed out",
    ),
    _line(
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
    config: Callable[[_Parsed], _Config]
    notes: tuple[str, ...] = ()

    @property
    def evidence(self) -> tuple[LineType, ...]:
        return tuple(lt for lt in self.line_types if lt.evidence)


@dataclass
class _Config:
    schedule: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Parsed:
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


def _number(value: Any) -> float | None:
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


def _integer(value: Any) -> int | None:
    number = _number(value)
    if number is None or not math.isfinite(number) or number != int(number):
        return None
    return int(number)


def _flag(value: Any) -> bool | None:
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


def _schedule_type(style: Any, warmup_steps: int | None, notes: list[str]) -> str | None:
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


def _frame(columns: Mapping[str, list[Any]], order: list[str]) -> pd.DataFrame:
    data: dict[str, pd.Series] = {}
    for name in order:
        values = columns[name]
        if name == "step":
            data[name] = pd.Series(values, dtype="int64")
        elif name == "shard_id":
            data[name] = pd.Series([None] * len(values), dtype=object)
        else:
            data[name] = metric_column(values)
    return pd.DataFrame(data, columns=order)


# --------------------------------------------------------------------------- reading text


def _binary_reason(sample: bytes) -> str | None:
    """Why sample is not text (NUL bytes, control bytes, undecodable bytes), or None."""
    if not sample:
        return None
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None  # UTF-16 with BOM (PowerShell redirection): decoded as text
    nul = sample.find(b"\x00")
    if nul >= 0:
        return f"NUL byte at offset {nul}"
    control = len(sample) - len(sample.translate(None, CONTROL_BYTES))
    if control > len(sample) * 0.01:
        return f"{control} control bytes in the first {len(sample)} bytes"
    decoded = sample.decode("utf-8", errors="replace")
    bad = decoded.count("\ufffd")
    if bad > max(8, len(decoded) * 0.05):
        return f"{bad} bytes that are not UTF-8 text in the first {len(sample)} bytes"
    return None


def _decode(raw: bytes) -> str:
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8", errors="replace")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", errors="replace")
    return raw.decode("utf-8", errors="replace")


def _split_lines(text: str) -> tuple[list[tuple[int, str]], bool]:
    """(line number, text) pairs; tqdm '\\r' redraws become separate lines with the same number.

    The bool says whether the text ended with a newline (False: the last line may be cut off).
    """
    if "\x1b" in text:
        text = ANSI_ESCAPE.sub("", text)
    ends_with_newline = text.endswith("\n")
    physical = text.split("\n")
    if ends_with_newline:
        physical.pop()
    lines: list[tuple[int, str]] = []
    for number, line in enumerate(physical, start=1):
        if "\r" in line:
            lines.extend((number, part) for part in line.split("\r") if part.strip())
        elif line.strip():
            lines.append((number, line))
    return lines, ends_with_newline


def _read_lines(path: Path, limit: int | None = None) -> tuple[list[tuple[int, str]], bool]:
    """Decoded, cleaned lines of path (the first ``limit`` bytes when given)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read() if limit is None else handle.read(limit)
    except OSError as error:
        raise RunImportError(f"{path}: cannot be read ({error.strerror or error})") from error
    reason = _binary_reason(raw[:BINARY_PROBE_BYTES])
    if reason is not None:
        raise RunImportError(
            f"{path}: binary data, not a text log ({reason}). Expected a plain-text training log "
            f"({DESCRIPTION})."
        )
    return _split_lines(_decode(raw))


# --------------------------------------------------------------------------- shape detection


def _scores(lines: Iterable[tuple[int, str]]) -> dict[str, int]:
    scores = {shape.name: 0 for shape in SHAPES}
    evidence = [(shape.name, shape.evidence) for shape in SHAPES]
    for _, line in lines:
        for name, types in evidence:
            if any(lt.match(line) for lt in types):
                scores[name] += 1
    return scores


def _best_shape(lines: list[tuple[int, str]]) -> Shape | None:
    head = [item for item in lines if item[0] <= SNIFF_LINES]
    scores = _scores(head)
    best = max(SHAPES, key=lambda shape: scores[shape.name])  # ties: first in SHAPES
    return best if scores[best.name] > 0 else None


def _no_shape_error(path: Path, lines: list[tuple[int, str]]) -> RunImportError:
    tried = "; ".join(f"{shape.name} ({shape.example})" for shape in SHAPES)
    shown = " | ".join(f"line {n}: {text.strip()[:120]!r}" for n, text in lines[:5])
    return RunImportError(
        f"{path}: no known training-log shape matched (counted the first {SNIFF_LINES} lines, then the "
        f"whole file). Shapes tried: {tried}. First non-empty lines found: {shown}"
    )


# --------------------------------------------------------------------------- the pass


class _Parser:
    """One pass over the lines of a detected shape."""

    def __init__(self, shape: Shape) -> None:
        self.parsed = _Parsed(shape=shape)
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
        unit = found.groupdict().get(f"{group}_unit")
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
        total = _integer(groups.get("total_steps"))
        if total is not None:
            parsed.total_steps.append(total)
        batch = _integer(groups.get("global_batch_size"))
        if batch is not None:
            parsed.batch_sizes.append(batch)
        scale = _number(groups.get("loss_scale"))
        if scale is not None:
            if parsed.loss_scales and scale < parsed.loss_scales[-1]:
                self._event(step, f"loss scale overflow: scale reduced to {scale:g}")
            parsed.loss_scales.append(scale)
        skipped = _integer(groups.get("skipped_iterations"))
        if skipped:
            fp16 = _flag(parsed.settings.get("fp16")) or (scale is not None and scale > 1.0)
            cause = "loss scale overflow" if fp16 else "optimizer step skipped"
            self._event(
                step,
                f"skipped iteration ({cause}): {skipped} skipped in the log interval ending at "
                f"iteration {step}",
            )
        nans = _integer(groups.get("nan_iterations"))
        if nans:
            self._event(
                step,
                f"nan iteration: {nans} iteration(s) with NaN/inf loss in the log interval ending at {step}",
            )


# --------------------------------------------------------------------------- config readers


def _no_config(parsed: _Parsed) -> _Config:
    return _Config(
        notes=[
            f"{parsed.shape.name}: the log carries no run config (learning-rate schedule, gradient clip, "
            "batch size, total steps are all unknown); supply a run_config.json to check them"
        ]
    )


def _missing_notes(result: _Config, source: str) -> None:
    for key in ("type", "peak_lr", "min_lr", "warmup_steps", "decay_steps"):
        if result.schedule.get(key) is None:
            result.notes.append(f"lr_schedule.{key}: not stated in {source}")
    for key in ("grad_clip_norm", "total_steps"):
        if result.config.get(key) is None:
            result.notes.append(f"{key}: not stated in {source}")


def _llmc_table_config(parsed: _Parsed) -> _Config:
    """llm.c's start-up ``| Parameter | Value |`` table (train_gpt2.cu / llama3 variants)."""
    table = {re.sub(r"\s+", " ", k.lower()): v for k, v in parsed.settings.items()}
    result = _Config()
    if not table:
        return _no_config(parsed)
    peak = _number(table.get("learning rate (lr)"))
    warmup = _integer(table.get("warmup iterations"))
    total = _integer(table.get("train_num_batches"))
    if total is None:
        total = _integer(table.get("max_steps"))
        total = total if total is not None and total > 0 else None
    frac = _number(table.get("final lr fraction"))
    style = table.get("lr scheduler")
    kind = _schedule_type(style, warmup, result.notes)
    result.schedule = {
        "type": kind,
        "peak_lr": peak,
        "min_lr": peak * frac if peak is not None and frac is not None else None,
        "warmup_steps": warmup,
        "decay_steps": total,
        "source_type": style,
    }
    if style is None:
        result.notes.append("llm.c table has no 'LR scheduler' row (older llm.c); schedule type unknown")
    if kind in ("constant", "constant_with_warmup"):
        result.schedule["min_lr"] = peak
    elif frac is not None:
        result.notes.append("min_lr = learning rate (LR) x final LR fraction from the llm.c table")
    tokens = _integer(table.get("total batch size"))
    seq = _integer(table.get("sequence length t"))
    checkpoint_every = _integer(table.get("checkpoint_every"))
    result.config = {
        "total_steps": total,
        "grad_clip_norm": None,
        "batch_size": tokens // seq if tokens and seq else None,
        "eval_interval": _integer(table.get("val_loss_every")),
        "checkpoint_interval": checkpoint_every if checkpoint_every else None,
        "data_parallel_workers": _integer(table.get("num_processes")),
        "weight_decay": _number(table.get("weight decay")),
        "seq_length": seq,
        "batch_size_tokens": tokens,
    }
    result.notes.append(
        "grad_clip_norm: llm.c clips in code but its log table does not print the threshold; left unknown"
    )
    if tokens and seq:
        result.notes.append(f"batch_size = total batch size {tokens} tokens / sequence length {seq}")
    if checkpoint_every == 0:
        result.notes.append("checkpoint_every is 0 in the llm.c table: checkpointing was off")
    _missing_notes(result, "the llm.c parameter table")
    return result


def _nanogpt_config(parsed: _Parsed) -> _Config:
    """nanoGPT echoes only overridden settings (config file and ``--key=value``)."""
    settings = parsed.settings
    if not settings:
        return _no_config(parsed)
    peak = _number(settings.get("learning_rate"))
    warmup = _integer(settings.get("warmup_iters"))
    decay_lr = _flag(settings.get("decay_lr"))
    micro = _integer(settings.get("batch_size"))
    accumulation = _integer(settings.get("gradient_accumulation_steps"))
    result = _Config()
    result.schedule = {
        "type": "constant" if decay_lr is False else ("warmup_cosine" if decay_lr else None),
        "peak_lr": peak,
        "min_lr": peak if decay_lr is False else _number(settings.get("min_lr")),
        "warmup_steps": warmup,
        "decay_steps": _integer(settings.get("lr_decay_iters")),
    }
    result.config = {
        "total_steps": _integer(settings.get("max_iters")),
        "grad_clip_norm": _number(settings.get("grad_clip")),
        "batch_size": micro * accumulation if micro and accumulation else None,
        "eval_interval": _integer(settings.get("eval_interval")),
        "weight_decay": _number(settings.get("weight_decay")),
        "seq_length": _integer(settings.get("block_size")),
    }
    result.notes.append(
        "nanoGPT prints only the settings it overrides; settings left at nanoGPT's train.py defaults are "
        "not in the log and stay unknown"
    )
    if micro and accumulation:
        result.notes.append(f"batch_size = batch_size {micro} x gradient_accumulation_steps {accumulation}")
    _missing_notes(result, "the nanoGPT log")
    return result


def megatron_config(
    args: Mapping[str, Any], source: str, iteration_total: int | None = None
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Schedule, config and notes from Megatron arguments (underscore names, text or YAML values).

    ``args`` is the ``arguments`` dump of a Megatron log (every argument, defaults included) or
    the MODEL_ARGS of a CI ``model_config.yaml`` (only what the test sets). Megatron's own rules
    are applied and each derivation is noted: lr_decay_iters defaults to train_iters; warmup from
    lr_warmup_fraction is a fraction of the decay iterations; sample counts are divided by
    global_batch_size; token counts (Megatron-DeepSpeed) by global_batch_size x seq_length.
    """
    notes: list[str] = []

    def stated(key: str) -> Any:
        value = args.get(key)
        return None if isinstance(value, str) and value.strip().lower() in {"none", ""} else value

    batch = _integer(stated("global_batch_size"))
    seq = _integer(stated("seq_length")) or _integer(stated("encoder_seq_length"))
    tokens_per_step = batch * seq if batch and seq else None

    token_based: list[str] = []

    def from_tokens(key: str) -> int | None:
        """A schedule length in tokens has no fixed length in steps: with token dropping or a
        sequence-length curriculum a step consumes fewer tokens than batch x seq_length (the
        real Megatron-DeepSpeed logs reach only ~42% of a warmup that would be 715 steps).
        So it is recorded as unknown, and the schedule checks say they could not run."""
        tokens = _number(stated(key))
        if not tokens:
            return None
        token_based.append(key)
        per_step = (
            f" (~{tokens / tokens_per_step:.0f} steps at {tokens_per_step} tokens per step)"
            if tokens_per_step
            else ""
        )
        notes.append(
            f"{key} = {tokens:.0f} tokens{per_step}: Megatron-DeepSpeed schedules by consumed tokens, and "
            "a step's token count varies (token dropping, sequence-length curricula), so the schedule "
            "length in steps is unknown: warmup/decay left empty, the LR schedule check cannot run"
        )
        return None

    def from_samples(key: str) -> int | None:
        samples = _number(stated(key))
        if not samples or not batch:
            return None
        notes.append(f"{key} = {samples:.0f} samples / global_batch_size {batch}")
        return int(samples // batch)

    total = _integer(stated("train_iters"))
    if total is None:
        total = from_samples("train_samples")
    if total is None and iteration_total is not None:
        total = iteration_total
        notes.append(f"total_steps {iteration_total} taken from the 'iteration N/ M' lines")

    decay = from_tokens("lr_decay_tokens")
    if decay is None:
        decay = _integer(stated("lr_decay_iters"))
    if decay is None:
        decay = from_samples("lr_decay_samples")
    if decay is None and total is not None:
        decay = total
        notes.append("lr_decay_iters not set: Megatron decays over train_iters, so decay_steps = total_steps")

    warmup = from_tokens("lr_warmup_tokens")
    if warmup is None and _number(stated("lr_warmup_fraction")) is not None:
        fraction = _number(stated("lr_warmup_fraction"))
        if decay is not None and fraction is not None:
            warmup = round(fraction * decay)
            notes.append(f"warmup_steps = lr_warmup_fraction {fraction:g} x decay steps {decay}")
    if warmup is None and _integer(stated("lr_warmup_iters")):
        warmup = _integer(stated("lr_warmup_iters"))
    if warmup is None:
        warmup = from_samples("lr_warmup_samples")
    if warmup is None and (stated("lr_warmup_iters") is not None or stated("lr_warmup_samples") is not None):
        warmup = 0

    if token_based:
        warmup = decay = None
    fp16, bf16 = _flag(stated("fp16")), _flag(stated("bf16"))
    precision = "fp16" if fp16 else "bf16" if bf16 else ("fp32" if fp16 is False and bf16 is False else None)
    kind = _schedule_type(stated("lr_decay_style"), warmup, notes)
    schedule = {
        "type": kind,
        "peak_lr": _number(stated("lr")),
        "min_lr": _number(stated("min_lr")),
        "warmup_steps": warmup,
        "decay_steps": decay,
        "source_type": stated("lr_decay_style"),
    }
    if kind in ("constant", "constant_with_warmup"):
        notes.append(f"constant schedule: min_lr = peak_lr (Megatron ignores min_lr {schedule['min_lr']})")
        schedule["min_lr"] = schedule["peak_lr"]
    config = {
        "grad_clip_norm": _number(stated("clip_grad")),
        "total_steps": total,
        "batch_size": batch,
        "eval_interval": _integer(stated("eval_interval")),
        "checkpoint_interval": _integer(stated("save_interval")),
        "data_parallel_workers": _integer(stated("data_parallel_size")),
        "precision": precision,
        "seq_length": seq,
        "micro_batch_size": _integer(stated("micro_batch_size")),
        "weight_decay": _number(stated("weight_decay")),
        "seed": _integer(stated("seed")),
        "log_interval": _integer(stated("log_interval")),
    }
    if config["grad_clip_norm"] == 0:
        notes.append("clip_grad is 0: Megatron does not clip gradients")
    if config["checkpoint_interval"] is not None and "save" in args and stated("save") is None:
        notes.append("save_interval is set but no --save folder: no checkpoints were written")
    if batch is not None:
        notes.append("batch_size is global_batch_size (sequences per step)")
    defaults = {
        "lr": "no default (required)",
        "min_lr": "0.0",
        "lr_decay_style": "linear",
        "clip_grad": "1.0",
        "global_batch_size": "micro_batch_size x data-parallel size",
        "eval_interval": "1000",
        "save_interval": "none",
    }
    for key, default in defaults.items():
        if key not in args:
            notes.append(f"{source} does not set {key} (Megatron's default: {default}); left unknown")
    if total is None:
        notes.append(f"{source} states neither train_iters nor train_samples; total_steps unknown")
    return schedule, config, notes


def _megatron_log_config(parsed: _Parsed) -> _Config:
    if not parsed.settings:
        result = _no_config(parsed)
        result.notes[0] = "megatron: no 'arguments' dump in the log; the run config is unknown"
        if parsed.total_steps:
            result.config["total_steps"] = parsed.total_steps[-1]
            result.notes.append("total_steps taken from the 'iteration N/ M' lines")
    else:
        total = parsed.total_steps[-1] if parsed.total_steps else None
        result = _Config(*megatron_config(parsed.settings, "the arguments dump", total))
    # "elapsed time per iteration" is the mean over the iterations since the previous iteration line
    result.config["step_time_is_interval_mean"] = True
    result.notes.append("step_time_sec is Megatron's elapsed time per iteration: a log-interval mean")
    return result


# --------------------------------------------------------------------------- the shape table

_MEGATRON_ITERATION = _fields(
    r"\biteration\s+(?P<step>\d+)\s*/\s*(?P<total_steps>\d+)\s*\|",
    rf"elapsed time per iteration \(ms\):\s*(?P<step_time_ms>{NUM})",
    rf"\blearning rate:\s*(?P<learning_rate>{NUM})",
    r"\bglobal batch size:\s*(?P<global_batch_size>\d+)",
    rf"\blm loss:\s*(?P<loss>{NUM})",
    rf"\bloss scale:\s*(?P<loss_scale>{NUM})",
    rf"\bgrad norm:\s*(?P<grad_norm>{NUM})",
    r"number of skipped iterations:\s*(?P<skipped_iterations>\d+)",
    r"number of nan iterations:\s*(?P<nan_iterations>\d+)",
)

_LLMC_STEP = _fields(
    r"^\s*step\s+(?P<step>\d+)\s*(?:/\s*(?P<total_steps>\d+)\s*)?(?=\|)"
    rf"(?=.*?\|\s*(?:train\s+)?loss:?\s+{NUM})",
    rf"\|\s*(?:train\s+)?loss:?\s+(?P<loss>{NUM}){_unit('loss')}",
    rf"\|\s*norm:?\s+(?P<grad_norm>{NUM})",
    rf"\|\s*lr:?\s+(?P<learning_rate>{NUM})",
    # `1234.5 ms`, `dt 1234.5ms` (llm.c), `dt: 1234.5ms` / `elapsed_time: dt=1234.5ms` (build-nanogpt)
    rf"\|\s*\(?\s*(?:elapsed_time:\s*)?(?:dt[:=]?\s*)?(?P<step_time_ms>{NUM})\s*ms\b",
)

SHAPES = (
    Shape(
        name="llmc_main_log",
        description="llm.c main.log (written with -o DIR)",
        example="s:<step> trl:<loss> lr:<lr> norm:<norm> / s:<step> tel:<val loss>",
        line_types=(
            _line(
                "llmc_train",
                "train",
                rf"^s:(?P<step>\d+) trl:(?P<loss>{NUM})"
                rf"(?: lr:(?P<learning_rate>{NUM}))?(?: norm:(?P<grad_norm>{NUM}))?\s*$",
                needle="trl:",
                evidence=True,
            ),
            _line(
                "llmc_val",
                "eval",
                rf"^s:(?P<step>\d+) tel:(?P<val_loss>{NUM})\s*$",
                needle="tel:",
                evidence=True,
            ),
            _line(
                "hellaswag",
                "side_metric",
                rf"^s:(?P<step>\d+) eval:(?P<metric>{NUM})\s*$",
                needle="eval:",
                evidence=True,
            ),
        ),
        config=_no_config,
        notes=(
            "llm.c main.log steps are 0-based: 's:0 trl' is the first optimizer step and 's:N tel' is the "
            "validation loss after N steps",
            "llm.c main.log prints lr with 6 decimals: learning rates below 5e-7 read as 0",
            "llm.c main.log has no step time (stdout has it as '... ms')",
        ),
    ),
    Shape(
        name="llmc_stdout",
        description="llm.c / train_gpt2.py / build-nanogpt stdout",
        example="step    1/19560 | train loss 11.01 | norm 15.4 | lr 8.57e-07 | 1234.56 ms",
        line_types=(
            LineType("llmc_step", "train", _LLMC_STEP, needle="step", evidence=True),
            _line(
                "llmc_cpu_step",
                "train",
                rf"^step (?P<step>\d+): train loss (?P<loss>{NUM}) \(took (?P<step_time_ms>{NUM}) ms\)",
                needle="took",
                evidence=True,
            ),
            _line(
                "llmc_val",
                "eval",
                rf"^\s*(?:val loss|validation loss:)\s+(?P<val_loss>{NUM}){_unit('val_loss')}\s*$",
                evidence=True,
            ),
            _line(
                "bn_checkpoint_loaded",
                "event",
                r"^Loaded checkpoint from (?P<path>[^,\s]+),.*?\bstep (?P<resumed>\d+)",
                event="resuming from step {resumed}: loaded checkpoint {path}",
            ),
            _line(
                "hellaswag",
                "side_metric",
                rf"^HellaSwag(?: accuracy)?:\s*\d+\s*/\s*\d+\s*=\s*(?P<metric>{NUM})",
                needle="HellaSwag",
            ),
            _line(
                "llmc_table",
                "setting",
                r"^\|\s*(?P<key>[^|]*?[A-Za-z][^|]*?)\s*\|\s*(?P<value>[^|]*?)\s*\|\s*$",
            ),
            _line(
                "llmc_skip",
                "event",
                rf"^skipping update due to (?P<what>loss|grad) z-score of (?P<z>{NUM})",
                event="skipped update: {what} z-score {z} above the skip threshold",
                next_step=True,
            ),
            _line(
                "llmc_checkpoint",
                "event",
                r"^Writing (?:model|state) to (?P<path>\S+)",
                event="checkpoint saved: {path}",
            ),
        ),
        config=_llmc_table_config,
        notes=(
            "llm.c stdout numbers steps from 1 ('step 1/N' is the first optimizer step); 'val loss' lines "
            "carry no step and get the number of steps completed before them",
        ),
    ),
    Shape(
        name="nanogpt_stdout",
        description="nanoGPT train.py stdout",
        example="iter 100: loss 4.2345, time 35.21ms, mfu 12.3% / step 100: train loss 4.1, val loss 4.2",
        line_types=(
            _line(
                "nanogpt_iter",
                "train",
                rf"^iter\s+(?P<step>\d+):\s*loss\s+(?P<loss>{NUM}){_unit('loss')}(?:,\s*time\s+(?P<step_time_ms>{NUM})\s*ms)?",
                needle="iter",
                evidence=True,
            ),
            _line(
                "nanogpt_eval",
                "eval",
                rf"^step\s+(?P<step>\d+):\s*train loss\s+{NUM}(?:\s*{UNIT_PATTERN})?,"
                rf"\s*val loss\s+(?P<val_loss>{NUM})" + _unit("val_loss"),
                needle="val loss",
                evidence=True,
            ),
            _line("nanogpt_override", "setting", r"^Overriding:\s*(?P<key>\w+)\s*=\s*(?P<value>.+?)\s*$"),
            _line(
                "nanogpt_config_echo",
                "setting",
                r"^(?P<key>[a-z_][a-z0-9_]*)\s*=\s*(?P<value>[^=#]+?)\s*(?:#.*)?$",
            ),
            _line(
                "nanogpt_checkpoint",
                "event",
                r"^saving checkpoint to (?P<path>\S+)",
                event="checkpoint saved: {path}",
            ),
            _line(
                "nanogpt_resume",
                "event",
                r"^Resuming training from (?P<path>\S+)",
                event="resuming from checkpoint: {path}",
            ),
        ),
        config=_nanogpt_config,
        notes=(
            "nanoGPT's iter loss is the last micro-batch's loss x gradient_accumulation_steps (an estimate, "
            "not the batch mean); it prints no grad norm or learning rate",
        ),
    ),
    Shape(
        name="build_nanogpt_log",
        description="build-nanogpt log.txt",
        example="<step> train <loss> / <step> val <loss> / <step> hella <acc>",
        line_types=(
            _line(
                "bn_train",
                "train",
                rf"^(?P<step>\d+) train (?P<loss>{NUM}){_unit('loss')}\s*$",
                needle="train",
                evidence=True,
            ),
            _line(
                "bn_val",
                "eval",
                rf"^(?P<step>\d+) val (?P<val_loss>{NUM}){_unit('val_loss')}\s*$",
                needle="val",
                evidence=True,
            ),
            _line(
                "hellaswag",
                "side_metric",
                rf"^(?P<step>\d+) hella (?P<metric>{NUM})\s*$",
                needle="hella",
                evidence=True,
            ),
        ),
        config=_no_config,
        notes=(
            "build-nanogpt log.txt has train and val loss only: no grad norm, learning rate or step time",
        ),
    ),
    Shape(
        name="megatron",
        description="Megatron-LM / Megatron-DeepSpeed stdout",
        example="iteration N/ M | ... | lm loss: ... | / validation loss at iteration N | lm loss value: ...",
        line_types=(
            LineType("megatron_iteration", "train", _MEGATRON_ITERATION, needle="iteration", evidence=True),
            _line(
                "megatron_validation",
                "eval",
                r"validation loss at iteration\s+(?P<step>\d+)(?!\d)(?! on test)[^|]*\|"
                rf".*?lm loss value:\s*(?P<val_loss>{NUM})",
                needle="validation loss",
                evidence=True,
            ),
            _line(
                "megatron_validation_end",
                "eval",
                r"validation loss at the end of training for val data\s*\|"
                rf".*?lm loss value:\s*(?P<val_loss>{NUM})",
                needle="end of training",
                evidence=True,
            ),
            _line(
                "megatron_arguments_header",
                "ignored",
                r"^-+ arguments -+\s*$",
                needle="arguments",
                evidence=True,
            ),
            _line(
                "megatron_argument",
                "setting",
                r"^  (?P<key>[a-z_][a-z0-9_]*) \.{2,} (?P<value>.*?)\s*$",
                evidence=True,
            ),
            _line(
                "megatron_checkpoint_saved",
                "event",
                r"saved checkpoint (?:at|from) iteration\s+(?P<step>\d+)",
                needle="saved checkpoint",
                event="checkpoint saved: iteration {step}",
            ),
            _line(
                "megatron_checkpoint_loaded",
                "event",
                r"load(?:ing|ed) checkpoint from\s+\S+.*?\bat iteration\s+(?P<step>\d+)",
                needle="checkpoint from",
                event="resuming from checkpoint at iteration {step}",
            ),
            _line(
                "no_checkpoint_deepspeed",
                "event",
                r"Unable to find latest file at",
                needle="Unable to find latest",
                event="no checkpoint to resume from (DeepSpeed: unable to find the 'latest' file)",
            ),
            _line(
                "no_checkpoint_megatron",
                "event",
                r"could not find the metadata file",
                needle="metadata file",
                event="no checkpoint to resume from (Megatron: could not find the checkpoint metadata file)",
            ),
            _line(
                "megatron_exit",
                "event",
                rf"exiting program (?:at iteration\s+(?P<step>\d+)|after (?P<minutes>{NUM}) minutes)",
                needle="exiting program",
                event="run stopped by Megatron: exit condition reached (iteration {step})",
            ),
        ),
        config=_megatron_log_config,
        notes=(
            "Megatron iteration lines are averages over the log interval: each train row is the mean lm loss "
            "and mean time per iteration of the iterations since the previous line",
        ),
    ),
)


# --------------------------------------------------------------------------- assembling the run


def _candidates(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)


def _sniff_file(path: Path) -> bool:
    try:
        lines, _ = _read_lines(path, SNIFF_BYTES)
    except RunImportError:
        return False
    return _best_shape(lines) is not None


def sniff(path: Path) -> bool:
    """True for a text file (or a folder with such a file) in which a shape of SHAPES matches."""
    try:
        if path.is_dir():
            return any(_sniff_file(p) for p in _candidates(path))
        return path.is_file() and _sniff_file(path)
    except OSError:
        return False


def _resolve(path: Path) -> Path:
    if not path.exists():
        raise RunImportError(f"{path}: no such file or folder")
    if not path.is_dir():
        return path
    matching = [p for p in _candidates(path) if _sniff_file(p)]
    if len(matching) == 1:
        return matching[0]
    if not matching:
        looked = ", ".join(p.name for p in _candidates(path)) or "no .log/.txt/.out/.err/.stdout files"
        raise RunImportError(
            f"{path}: no text training log in this folder (looked at: {looked}); expected {DESCRIPTION}"
        )
    raise _SeveralLogs(matching)


# a log whose losses match a richer log's on this share of common steps is its summary
LOSS_AGREEMENT = 0.9


class _SeveralLogs(Exception):
    """A folder with several text logs: ``load`` reads them as one run when they fit together."""

    def __init__(self, files: list[Path]) -> None:
        super().__init__(", ".join(p.name for p in files))
        self.files = files


def _span(run: RunData) -> tuple[int, int]:
    steps = [int(s) for s in run.train["step"]] + [int(s) for s in run.evals["step"]]
    return min(steps), max(steps)


def _size(run: RunData) -> tuple[int, int]:
    return len(run.train), int(run.train.notna().sum().sum())


def _covers(outer: RunData, inner: RunData) -> bool:
    """``outer`` holds what ``inner`` logs: its steps, more fields, the same losses (a summary log)."""
    (outer_first, outer_last), (inner_first, inner_last) = _span(outer), _span(inner)
    if not (outer_first <= inner_first and inner_last <= outer_last and _size(outer) > _size(inner)):
        return False
    both = pd.merge(outer.train[["step", "loss"]], inner.train[["step", "loss"]], on="step").dropna()
    outer_loss, inner_loss = both["loss_x"].astype(float), both["loss_y"].astype(float)
    agree = (outer_loss - inner_loss).abs() <= 1e-4 * outer_loss.abs().clip(lower=1.0)
    return not both.empty and bool(agree.mean() >= LOSS_AGREEMENT)


def _load_folder(folder: Path, files: list[Path]) -> RunData:
    """Several text logs of one run: a summary log (``log.txt``) whose steps another, richer log
    covers is left out; the rest must follow each other (a run split by a resume, one file per
    leg, of the same shape: each starts where the previous ended and goes further) and are read as
    one run, with a "resuming" event at each join. Other logs are separate runs: an error asking
    for one file."""
    runs = [(file, load(file)) for file in files]
    kept = [(f, r) for f, r in runs if not any(other is not r and _covers(other, r) for _, other in runs)]
    dropped = [f.name for f, _ in runs if all(f != k for k, _ in kept)]
    kept.sort(key=lambda item: _span(item[1]))
    for (previous, before), (file, after) in itertools.pairwise(kept):
        first, last = _span(before)
        tolerance = max(1, (last - first) // 100)
        same_shape = before.notes[:1] == after.notes[:1]  # "read as text-log shape ..."
        if not same_shape or _span(after)[0] < last - tolerance or _span(after)[1] <= last:
            raise RunImportError(
                f"{folder}: {len(files)} text training logs in this folder "
                f"({', '.join(f.name for f in files)}); pass one file: {previous.name} "
                f"(steps {first}-{last}) and {file.name} (steps {_span(after)[0]}-{_span(after)[1]}) "
                "do not continue each other, "
                "so they look like separate runs"
            )
    notes = [
        f"{len(files)} text logs in {folder.name}: " + ", ".join(f.name for f, _ in kept) + " read as one run"
    ]
    if dropped:
        notes.append(f"left out (their steps are covered by a richer log): {', '.join(dropped)}")
    first_run = kept[0][1]
    if len(kept) == 1:
        first_run.notes = notes + first_run.notes
        return first_run
    events = [first_run.events]
    for (_, before), (file, after) in itertools.pairwise(kept):
        join = _span(before)[1]
        if not after.events["event"].str.contains("resum", case=False).any():
            resume = f"resuming from step {join}: log file {file.name} continues the run (a new process)"
            events.append(pd.DataFrame([(join, resume)], columns=EVENT_COLUMNS))
        # events printed before the file's first step (a checkpoint load) belong to its start
        later = after.events.copy()
        later.loc[later["step"] < _span(after)[0], "step"] = _span(after)[0]
        events.append(later)
    schedule = dict(first_run.schedule)
    config = dict(first_run.config)
    for _, later in kept[1:]:
        schedule.update({k: v for k, v in later.schedule.items() if v is not None})
        config.update({k: v for k, v in later.config.items() if v is not None})
        notes += [f"{Path(later.source_path).name}: {note}" for note in later.notes]
    return RunData(
        source_format=FORMAT,
        source_path=str(folder),
        train=pd.concat([r.train for _, r in kept], ignore_index=True),
        evals=pd.concat([r.evals for _, r in kept], ignore_index=True),
        events=pd.concat(events, ignore_index=True).drop_duplicates().astype({"step": "int64"}),
        run_name=folder.name,
        schedule=schedule,
        config=config,
        notes=notes + first_run.notes,
    )


def _side_metric_notes(parsed: _Parsed) -> list[str]:
    notes = []
    for name, points in parsed.side_metrics.items():
        step, value = points[-1]
        label = "HellaSwag accuracy" if name == "hellaswag" else name
        notes.append(
            f"{label} logged at {len(points)} points (last {value:g} at step {step}); it is not a validation "
            "token accuracy, so eval_log.val_accuracy stays empty"
        )
    return notes


def _summary_notes(parsed: _Parsed, train: pd.DataFrame) -> list[str]:
    notes = []
    for column in ("loss", "grad_norm", "learning_rate", "step_time_sec"):
        if len(train) and train[column].isna().all():
            notes.append(
                f"no {column} in the {parsed.shape.name} training lines: train_log.{column} is empty"
            )
        elif len(train) and train[column].isna().any():
            notes.append(f"{int(train[column].isna().sum())} training lines carry no {column}")
    repeats = int(train["step"].duplicated().sum()) if len(train) else 0
    if repeats:
        notes.append(
            f"{repeats} training lines repeat an earlier step (a restart, or several ranks printing); "
            "kept as logged"
        )
    if parsed.loss_scales and not any(
        b < a for a, b in zip(parsed.loss_scales, parsed.loss_scales[1:], strict=False)
    ):
        first, last = parsed.loss_scales[0], parsed.loss_scales[-1]
        notes.append(f"fp16 loss scale never dropped ({first:g} at the first line, {last:g} at the last)")
    if len(set(parsed.batch_sizes)) > 1:
        notes.append(
            f"global batch size changes during the run "
            f"({min(parsed.batch_sizes)} to {max(parsed.batch_sizes)})"
        )
    return notes


def load(path: Path) -> RunData:
    """Parse a text training log into a RunData (see the module docstring for what is read)."""
    try:
        file = _resolve(path)
    except _SeveralLogs as several:
        return _load_folder(path, several.files)
    if file.stat().st_size == 0:
        raise RunImportError(f"{file}: the file is empty (0 bytes); expected a training log ({DESCRIPTION})")
    lines, ends_with_newline = _read_lines(file)
    if not lines:
        raise RunImportError(
            f"{file}: the file holds only blank lines; expected a training log ({DESCRIPTION})"
        )
    shape = _best_shape(lines)
    if shape is None:
        scores = _scores(lines)
        best = max(SHAPES, key=lambda s: scores[s.name])
        if scores[best.name] == 0:
            raise _no_shape_error(file, lines)
        shape = best
    parser = _Parser(shape)
    notes: list[str] = [f"read as text-log shape {shape.name!r} ({shape.description})"]
    *body, (last_number, last_line) = lines
    for number, line in body:
        parser.feed(number, line)
    hit = parser.first_match(last_line)
    if not ends_with_newline and hit is not None and hit[0].kind in ("train", "eval"):
        notes.append(
            f"line {last_number} (the last) has no line ending, so it may be cut off mid-write; "
            f"it was left out: {last_line.strip()[:160]!r}"
        )
    else:
        parser.feed(last_number, last_line)
        if not ends_with_newline:
            notes.append(
                f"the file does not end with a newline (last line {last_number}); it may have been cut off"
            )
    parsed = parser.parsed
    train = _frame(parsed.train, TRAIN_COLUMNS)
    evals = _frame(parsed.evals, EVAL_COLUMNS)
    if train.empty and evals.empty:
        shown = " | ".join(f"line {n}: {t.strip()[:100]!r}" for n, t in lines[-3:])
        raise RunImportError(
            f"{file}: recognised as {shape.name} ({shape.description}) but it holds no training or "
            f"validation lines (expected lines like {shape.example!r}); the log ends with: {shown}"
        )
    events = pd.DataFrame(parsed.events, columns=EVENT_COLUMNS).astype({"step": "int64"})
    cfg = shape.config(parsed)
    notes += list(shape.notes) + parsed.notes + _side_metric_notes(parsed) + _summary_notes(parsed, train)
    notes += cfg.notes
    notes.append(
        f"{len(train)} training lines, {len(evals)} validation lines, {len(events)} events from {len(lines)} "
        "non-empty lines; other lines ignored"
    )
    return RunData(
        source_format=FORMAT,
        source_path=str(file),
        train=train,
        evals=evals,
        events=events,
        run_name=file.parent.name if file.stem.lower() in GENERIC_STEMS else file.stem,
        schedule=cfg.schedule,
        config=cfg.config,
        notes=notes,
    )
