"""The lines of an unknown training log as records: what ``generic_log`` infers a layout from.

A record is one logged moment: its counters (``step 120``, ``epoch 3/10``, ``[0][ 40/44]``), its
numeric name-value pairs (``loss 3.21``, ``lr=6e-04``, ``dt 405ms``) and where it came from (line,
rank, a split word such as ``valid`` written outside the names). Four sources give records:

* console lines (``console_records``): each line is cleaned (rank prefix, timestamp, log level
  and logger name, tqdm bars, glued warnings), cut into segments at ``|``, ``,``, ``;``, tabs,
  brackets and `` - ``, and each number is named by the words left of it in its segment
  (``Train Loss=0.07``, ``loss: 3.2``, ``step 120``) or, with nothing there, by a rate written
  after it (``414 tok/s``). An unnamed ``N/M`` (or a whole number alone in its brackets,
  ``Epoch: [3][120]``) right after a counter is that counter's inner
  count (``epoch 143: 85 / 282``, ``Epoch: [0][ 10/44]``). Python/JSON dicts in a line
  (``{'loss': 3.21, 'epoch': 0.31}``) give their numeric keys. A line with numbers but no
  counter continues the record just above it (a block: ``[step=10/100]`` then one
  ``name=value`` line per metric, or ``Validation perplexity: 5.4`` after a step line); a
  counter line with no metric yet (``Epoch 15/100``) takes the next metrics line however far;
  a pass's progress states after such a line (Keras ``3/9 ━━━ 2s - loss: 0.41``, a running value
  printed as the pass goes) are superseded by its last (``9/9 ... - loss: 0.38 - val_loss: 0.44``:
  the pass's values), and the callbacks' messages inside it (``Epoch 3: val_loss improved ...``)
  are no record;
* delimited tables (``table_records``): CSV/TSV with a header (repeated headers dropped) or a
  headerless counter,value table, whose value is then named by the file name (``loss_log``);
* JSON documents (``json_records``): ``{name: [values]}`` columns, a list of objects, or a list
  of numbers named by the file name;
* JSON lines (``jsonl_records``): one object a line.

Every line that gives no record is counted with its reason (``Skipped``): the importer reports
how many lines were skipped and why, with two examples each. Nothing here decides what a name
means: that is the metric-name resolver's job (``metric_names``), called by ``generic_log``.
"""

from __future__ import annotations

import bisect
import calendar
import csv
import io
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from run_diagnosis.importers import metric_names
from run_diagnosis.importers.aliases import UNREADABLE, python_literal, writes_decimal_commas

EXAMPLES_KEPT = 2
EXAMPLE_CHARS = 160
# a counterless metrics line continues the record above it when at most this many lines lie
# between them (block layouts print one metric a line; a status line may sit in between)
CONTINUATION_GAP = 3
# the reason a counterless line of numbers that continues no record is skipped for
COUNTERLESS = "numbers without a counter (settings, summaries)"
# a headerless two-column table's first column is its counter when these first rows hold whole numbers
COUNTER_PROBE_ROWS = 200
ROW_COUNTER = "row counter"  # the name such a first column is given
# a pass header alone on its line (``Epoch 3/50``: Keras, and loops printing as it does)
PASS_HEADER = re.compile(r"^\s*Epoch\s+\d+\s*/\s*\d+\s*$", re.I)
# a progress state inside a pass: an unnamed done/total first on the line, then values
PROGRESS_STATE = re.compile(r"^\s*(?P<done>\d+)\s*/\s*(?P<total>\d+)(?![\d.:=/])")
# a callback's message inside a pass (Keras ModelCheckpoint, ReduceLROnPlateau, EarlyStopping)
# ("Epoch 3: val_loss improved from 0.52 to 0.49", "Epoch 7: early stopping"), not an epoch's summary in
# name-value pairs ("Epoch 3: train_loss=0.52, val_dice=0.71": its first word is a name, then = or :)
CALLBACK_MESSAGE = re.compile(r"^\s*Epoch\s+\d+\s*:\s+[A-Za-z][\w./-]*\b(?!\s*[=:])", re.I)
# a console with no counter on any line (print(f"Training loss: {loss}, validation loss: {val}") once
# an epoch): its counterless lines that name the same numbers, a training loss among them, are its
# rows, numbered in file order, when at least this many lines do (fewer is a summary, not a series)
COUNTERLESS_MIN_ROWS = 10
# a line with more characters than this is not a log line (a minified document); its head is read
LINE_CHARS = 20000
# a pass header followed by the same counterless value lines again and again (``Epoch : 3`` then
# ``Loss : 2.61`` once a batch): one row a line (a batch), numbered in file order, when the passes
# hold this many such rows at the median; fewer is a train and a val value printed alike, not batches
BATCH_ROWS_MIN = 4

ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
RANK_PREFIX = re.compile(r"^\s*\[(?:rank|default|worker)\s*(\d+)\]\s*:?\s*", re.I)
NUMBERED_PREFIX = re.compile(r"^(\d{1,4}): ")
TIMESTAMP = re.compile(
    r"^\s*[\[(]?\s*(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}[ T_]?)?\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?"
    r"(?:\s?(?:Z|[+-]\d{2}:?\d{2}|[AP]M))?\s*[\])]?[\s:,|-]*"
)
# a line's leading date and time (Python logging, loguru, ISO): its wall-clock moment
DATED_STAMP = re.compile(
    r"^\s*[\[(]?\s*(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})[ T_]?(\d{1,2}):(\d{2})(?::(\d{2}))?(?:[.,](\d+))?"
)
# a whole number in brackets opening a line of name=value metrics: the step (clu's metric writer)
LEADING_STEP = re.compile(r"^\s*\[(\d+)\]\s+(?=[A-Za-z_][\w/.\-]*\s*=)")
# a whole number and a closing parenthesis opening a line of named metrics, "name - value",
# "name: value" or "name=value": the line's count (the first-order-motion family's logger writes
# "00000012) perceptual - 53.7; warp_loss - 0.46" once an epoch, the count zero-padded to 8 digits)
LEADING_COUNT = re.compile(r"^\s*(\d+)\)\s+(?=[A-Za-z_][\w/.\-]*\s*(?:=|:|\s-\s))")
# glog's prefix (Caffe, PaddlePaddle, MXNet's and TensorFlow's C++ side), after any progress dots the
# trainer printed without a newline before it (Paddle's --dot_period: '......I0305 23:00:29.74 ...')
GLOG_PREFIX = re.compile(r"^\.*[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+\S+:\d+\]\s*")
LEVEL = re.compile(r"^(.{0,80}?)\b(INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|TRACE|NOTICE)\b[\]\s:|\-]*")
LOGGER_GLUED = re.compile(r"^[\w.<>]+:(?=[^\s\d])")  # "__main__:Epoch", "tensorflow:loss"
LOGGER_DASHED = re.compile(r"^[\w.<>]*[._:][\w.<>:]*\s+-\s+")  # "yolox.core.trainer:after_iter:246 - "
WARNING_TEXT = re.compile(r"(?:\S+\.py:\d+: \w*Warning\b|\bwarnings\.warn\(|^\s*\w*Warning: )")
TRACEBACK_START = re.compile(r"^\s*Traceback \(most recent call last\)")
TRACEBACK_END = re.compile(r"^[\w.]*(?:Error|Exception|Interrupt|Exit|Warning)\b.*")
# a loop's own message that someone stopped it (a KeyboardInterrupt the script caught and reported:
# 'Training interrupted by user - Step 55', 'stopped by the user', 'manually interrupted')
STOPPED_BY_USER = re.compile(
    r"\b(?:(?:interrupted|stopped|aborted|cancell?ed) by (?:the )?user|training (?:was )?interrupted"
    r"|manually (?:stopped|interrupted))\b",
    re.I,
)
TQDM_BAR = re.compile(
    r"(?:\d{1,3}%\s*\|[^|\n]{0,80}\|\s*)?(?P<n>[\d.]+)\s*/\s*(?P<m>[\d.]+|\?)\s*\[(?P<inside>[^\]\[]*)\]"
)
TQDM_TIME = re.compile(r"^\s*(?:\d+:)?\d+:\d+\s*(?:<\s*(?:\?|(?:\d+:)?\d+:\d+))?\s*$")
TQDM_RATE = re.compile(r"^\s*(?:[\d.]+|\?)\s*(?:(?P<per>[A-Za-z]+)/s|s/(?P<each>[A-Za-z]+))\s*$")
KERAS_BAR = re.compile(r"\[[=>.\-]{3,}\]")
MARKDOWN_HEADING = re.compile(r"^#{1,6}\s+\S")
MARKDOWN_FENCE = re.compile(r"^\s*(```|~~~)")

# a number: digits with optional thousands commas, decimals, exponent; nan/inf; not glued to a word
NUMBER = (
    r"[-+]?(?:\d{1,3}(?:,\d{3})+(?![\d.])|\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
    r"|(?i:[-+]?(?:nan|inf(?:inity)?))"
)
CLOCK = r"\d{1,3}:\d{2}(?::\d{2})?(?:\.\d+)?"
VALUE = re.compile(
    rf"(?<![\w.])(?P<clock>{CLOCK})(?![\w:])"
    rf"|(?<![\w.])(?P<num>{NUMBER})(?:\s*/\s*(?P<total>\d+))?"
    r"(?P<unit>\s?(?:%|ms|us|s|sec|secs|min|h|k|K|M|G|B|Mb|MB|GB|KB|dB)(?![A-Za-z]))?(?![\w.])"
)
# the running average an AverageMeter prints after the value ('Loss 5.00142 (inf)': the last
# batch's loss, then the mean since the epoch began, as PyTorch's ImageNet example and its ports do)
RUNNING_AVERAGE = re.compile(rf"\s*\(\s*(?P<average>{NUMBER})\s*\)")
UNIT_SCALE = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9}
TIME_UNITS = {"ms": "ms", "us": "us", "s": "s", "sec": "s", "secs": "s", "min": "min", "h": "h"}
RATE_AFTER = re.compile(r"^\s*(?P<rate>[A-Za-z][\w]*(?:/[A-Za-z]+)+|[A-Za-z]+/[\w]+)")
SEGMENT_SPLIT = re.compile(r"\s*(?:\|\|?|;|\t|\s-\s|[\[\]{}]|,(?!\d{3}(?!\d))|\s{3,})\s*")
NAME_STRIP = " \t:=@#>-~*'\"`"
NAME_MAX_WORDS = 5
LABEL_COLUMN = "label"  # the header given to a column that repeats one word naming the values beside it
COUNTER_WORDS_EXCLUDED = {"max", "total", "per", "every", "planned"}
# a counter word glued to its number ('EP12', 'Epoch3', 'iter500', 'step40': print("EP%d" % epoch)),
# standing alone (not inside a longer word or name): read as the word and the number
GLUED_COUNTER = re.compile(r"(?<![\w.])(epoch|ep|step|iter|iteration)(\d+)(?![\w.])", re.IGNORECASE)
# the PyTorch tutorials' progress line (translation, character RNNs): the time since the start (and
# the time left), then "(iteration percent%)" and the average loss printed bare, as '%s (%d %d%%) %.4f'
# prints it ("0m 24s (- 5m 10s) (5000 6%) 3.5270"), or named by a later edit ("(10000 100%) training
# loss = 2.94"): the iteration is the counter and a bare number is the loss the tutorial averages
TUTORIAL_PROGRESS = re.compile(
    r"(?:^|[\s>:|-])\d+m\s+\d+s(?:\s+\(-\s*\d+m\s+\d+s\))?\s+\((?P<count>\d+)\s+\d{1,3}%\)\s*(?P<rest>.*)$"
)
BARE_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# a number printed as its tensor or NumPy scalar, as a loop prints it without .item()
# (print(f"loss: {loss}")) or a list of them:
# "tensor(2.3294, grad_fn=<AddBackward0>)", "tensor(0.5, device='cuda:0')", NumPy 2's "np.float64(0.69)"
SCALAR_REPR = re.compile(r"\b(?:tensor|(?:np|numpy)\.(?:float|int)\d+)\(\s*([^,()\s]+)[^()]*\)")
PROSE_WORDS = 8  # a segment of more words than this before its number is prose, not a name
# a table aligned by spaces: three named columns at least (a counter, a loss and one more), and its
# rows of numbers on 80% of the lines after the header (a warning or a repeated header may interleave)
ALIGNED_MIN_COLUMNS = 3
ALIGNED_ROW_SHARE = 0.8
SPLIT_NESTING = 3  # split -> output feature -> metric: the levels of a split-keyed JSON document read


@dataclass
class Record:
    """One logged moment: counters, metrics (name -> (value, unit as logged)), origin."""

    line: int
    counters: dict[str, float] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)  # counter -> M of "N/M"
    inner: tuple[float, float | None] | None = None  # an unnamed N/M after the first counter
    metrics: dict[str, tuple[float, str | None]] = field(default_factory=dict)
    split: str | None = None  # a split word written outside the names ("valid | epoch 3 | loss")
    rank: int | None = None
    text: str = ""
    source: str = "line"  # line | bar | dict | row | object | column
    last_line: int = 0
    named: dict[str, tuple[float, str | None]] = field(default_factory=dict)  # metrics as resolved
    own: frozenset[str] = frozenset()  # the names on the record's own line (not its continuation)
    clock: float | None = None  # the line's leading date and time, in seconds (None: not stamped)
    # a counter printed abbreviated ('step:2K', LeRobot's format_big_number): half the unit of its
    # last printed digit, in counts (500 for '2K'), the most its printed value can be off
    rounding: dict[str, float] = field(default_factory=dict)
    # the names whose running average, printed after the value, is not finite where the value is: a
    # non-finite value fell in the averaged interval, and the record holds that average instead
    nonfinite_average: set[str] = field(default_factory=set)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.metrics)


@dataclass
class Skipped:
    """Lines that gave no record, by reason, with the first examples of each."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    # the line number and text of the last traceback's exception line (``KeyboardInterrupt``)
    last_exception: tuple[int, str] | None = None
    # the line number and text of the last line saying the user stopped the run (STOPPED_BY_USER)
    last_stop: tuple[int, str] | None = None

    def add(self, reason: str, number: int, text: str) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        kept = self.examples.setdefault(reason, [])
        if len(kept) < EXAMPLES_KEPT:
            shown = " ".join(text.split())
            kept.append(f"line {number}: {shown[:EXAMPLE_CHARS]}")

    def restore(self, reason: str, numbers: list[int]) -> None:
        """Lines counted under reason that became rows after all: no longer skipped."""
        left = self.counts.get(reason, 0) - len(numbers)
        shown = tuple(f"line {n}:" for n in numbers)  # as add() writes an example
        kept = [e for e in self.examples.get(reason, []) if not e.startswith(shown)]
        if left > 0:
            self.counts[reason], self.examples[reason] = left, kept
        else:
            self.counts.pop(reason, None)
            self.examples.pop(reason, None)

    def merge(self, other: Skipped) -> None:
        """Another reading's skipped lines counted here too (kept when that reading is used)."""
        for reason, n in other.counts.items():
            self.counts[reason] = self.counts.get(reason, 0) + n
            kept = self.examples.setdefault(reason, [])
            kept += other.examples.get(reason, [])[: max(0, EXAMPLES_KEPT - len(kept))]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {
            reason: {"lines": n, "examples": self.examples.get(reason, [])}
            for reason, n in sorted(self.counts.items(), key=lambda item: -item[1])
        }


# --------------------------------------------------------------------------- values and names


@lru_cache(maxsize=4096)
def meaning(name: str) -> metric_names.Meaning:
    """What the metric-name resolver reads in a name (a log repeats the same names on every line)."""
    return metric_names.resolve(name)


@lru_cache(maxsize=4096)
def name_tokens(name: str) -> tuple[str, ...]:
    return tuple(metric_names.tokens(name))


def number_value(text: str) -> float | None:
    """'1,218' -> 1218.0, '2.5e-4' -> 0.00025, 'nan' -> nan; None when not a number."""
    cleaned = text.replace(",", "").strip()
    try:
        return float(cleaned)
    except ValueError:
        return None


def clock_seconds(text: str) -> float:
    """'1:54:27' -> 6867.0 (h:m:s), '02:39' -> 159.0 (m:s)."""
    parts = [float(p) for p in text.split(":")]
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + part
    return seconds


def cell_value(value: Any) -> tuple[float, str | None] | None:
    """A JSON/dict/CSV cell as (number, unit): numbers, numeric strings ('3.412', '94.9%',
    '405ms'); None for text, booleans and empty cells."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value), None
    if not isinstance(value, str):
        return None
    text = value.strip()
    found = VALUE.fullmatch(text)
    if not found or found.group("clock") or found.group("total"):
        return None
    number = number_value(found.group("num"))
    if number is None:
        return None
    return scaled(number, (found.group("unit") or "").strip() or None)


def scaled(number: float, unit: str | None) -> tuple[float, str | None]:
    """A multiplier suffix applied (12.3k -> 12300); other units kept for the importer."""
    if unit in UNIT_SCALE:
        return number * UNIT_SCALE[unit], None
    if unit in TIME_UNITS:
        return number, TIME_UNITS[unit]
    return number, unit


@lru_cache(maxsize=8192)
def name_from(text: str) -> str:
    """The name a number is logged under: the words left of it in its segment, without the
    separators around them ('  Train Loss=' -> 'Train Loss', 'INFO:tensorflow:loss = ' -> 'loss')."""
    name = text.strip(NAME_STRIP)
    if ":" in name:  # "Epoch 1: Train Loss" is cut before; "module:loss" keeps its last part
        name = name.rsplit(":", 1)[1].strip(NAME_STRIP) or name.strip(NAME_STRIP)
    if name.count("(") > name.count(")"):  # "(loss" of "x (loss 3.2" -> "loss"
        name = name.rsplit("(", 1)[1]
    elif name.count(")") > name.count("("):  # ") D_A" after "(epoch: 1, iters: 100) D_A: 0.25" -> "D_A"
        name = name.rsplit(")", 1)[1]
    name = name.strip(NAME_STRIP + "(")
    words = name.split()
    if len(words) > NAME_MAX_WORDS:
        name = " ".join(words[-NAME_MAX_WORDS:])
    return name if any(character.isalpha() for character in name) else ""


@lru_cache(maxsize=4096)
def is_counter(name: str) -> bool:
    """A counter name (step, iter, iteration, epoch, global_step, num_updates, Batch)."""
    if meaning(name).quantity != "counter" or "/" in name:
        return False
    return not COUNTER_WORDS_EXCLUDED & set(name_tokens(name))


def is_leading_episode(name: str, value: float, record: Record) -> bool:
    """A line that opens with an episode number (``Episode 10/500 | Reward: -483 | Loss: 24.1``): a
    reinforcement-learning loop's progress counter. Only first on its line (an episode count among
    other metrics, SB3's ``time/episodes``, stays a metric)."""
    return (
        name_tokens(name) in {("episode",), ("episodes",)}
        and not record.counters
        and not record.metrics
        and value >= 0
        and float(value).is_integer()
    )


def counter_kind(name: str) -> str:
    """'epoch' for an epoch counter, 'step' for every other counter."""
    return "epoch" if {"epoch", "epochs", "ep"} & set(name_tokens(name)) else "step"


def split_word(text: str) -> str | None:
    """The split a short free segment names ('valid', 'train_inner', "valid on 'valid' subset")."""
    words = name_tokens(text)
    if not words or len(words) > 4:
        return None
    for word in words:
        entry = metric_names.WORDS.get(word)
        if entry is not None and entry.kind == "split":
            return entry.value
    return None


# --------------------------------------------------------------------------- cleaning a line


@dataclass
class Cleaned:
    text: str
    rank: int | None
    bar: Record | None  # a tqdm bar's counter and postfix metrics, when it carried any
    warning: bool  # a warning was glued to the line (cut off)
    had_bar: bool
    clock: float | None = None  # the line's leading date and time, in seconds


def clock_of(text: str) -> float | None:
    """Seconds since 1970 of a line's leading date and time (`2025-04-24 21:17:53,828`), read
    as UTC (only differences are used); None without a full date or with an impossible one."""
    stamp = DATED_STAMP.match(text)
    if stamp is None:
        return None
    year, month, day, hour, minute, second, fraction = stamp.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0))
    except ValueError:
        return None
    return calendar.timegm(moment.timetuple()) + (float(f"0.{fraction}") if fraction else 0.0)


def strip_prefixes(text: str) -> str:
    """Timestamp, log level and logger name in front of the message."""
    text = GLOG_PREFIX.sub("", text)
    stamp = TIMESTAMP.match(text)
    if stamp and stamp.end() > 0 and re.search(r"\d:\d", stamp.group(0)):
        text = text[stamp.end() :]
    level = LEVEL.match(text)
    if level and not re.search(r"(?:^|\s)[-+]?\d", level.group(1)) and len(level.group(1).split()) <= 4:
        text = text[level.end() :]
    for _ in range(3):
        glued = LOGGER_GLUED.match(text) or LOGGER_DASHED.match(text)
        if not glued:
            break
        text = text[glued.end() :]
    return text


def tqdm_bar(line: int, found: re.Match[str]) -> Record | None:
    """A tqdm bar whose postfix carries metrics: its count is the counter, named by its rate unit."""
    parts = [p.strip() for p in found.group("inside").split(",")]
    if not parts or not TQDM_TIME.match(parts[0]):
        return None
    unit = "it"
    if len(parts) > 1:
        rate = TQDM_RATE.match(parts[1])
        if rate:
            unit = rate.group("per") or rate.group("each") or "it"
    record = Record(line=line, source="bar", text=found.group(0), last_line=line)
    for part in parts[2:]:
        key, sep, raw = part.partition("=")
        value = cell_value(raw) if sep else None
        if value is not None and key.strip():
            record.metrics[key.strip()] = value
    if not record.metrics:
        return None
    record.own = record.names
    count = number_value(found.group("n"))
    if count is None:
        return None
    name = "epoch" if unit.lower().startswith("epoch") else ("batch" if unit.lower() == "it" else unit)
    record.counters[name] = count
    total = number_value(found.group("m")) if found.group("m") != "?" else None
    if total is not None:
        record.totals[name] = total
    return record


def clean(number: int, raw: str, numbered_ranks: bool) -> Cleaned:
    text = raw[:LINE_CHARS]
    rank = None
    prefix = RANK_PREFIX.match(text) or (NUMBERED_PREFIX.match(text) if numbered_ranks else None)
    if prefix:
        rank, text = int(prefix.group(1)), text[prefix.end() :]
    clock = clock_of(text)
    text = strip_prefixes(text)
    warning = WARNING_TEXT.search(text)
    if warning:
        text = text[: warning.start()]
    bar = None
    had_bar = False
    bars = list(TQDM_BAR.finditer(text))
    if bars:
        had_bar = True
        bar = tqdm_bar(number, bars[-1])
        kept, last = [], 0
        for found in bars:
            kept.append(text[last : found.start()])
            last = found.end()
        kept.append(text[last:])
        text = " | ".join(part for part in kept if part.strip())
    if KERAS_BAR.search(text):
        had_bar = True
        text = KERAS_BAR.sub(" | ", text)
    text = GLUED_COUNTER.sub(r"\1 \2", text)
    # both forms hold a parenthesis: most lines have none and skip both searches (about a fifth of
    # this function's time on a plain 'step 12 | loss 2.5' line)
    if "(" in text:
        text = SCALAR_REPR.sub(r"\1", text)
        progress = TUTORIAL_PROGRESS.search(text)
        if progress:
            rest = progress.group("rest").strip()
            text = f"iter {progress.group('count')} | " + (
                f"loss {rest}" if BARE_NUMBER.fullmatch(rest) else rest
            )
    return Cleaned(text.strip(), rank, bar, warning is not None, had_bar, clock)


# --------------------------------------------------------------------------- pairs of one line


DICT_START = re.compile(r"\{\s*['\"]")


def dict_spans(text: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Python/JSON dicts written in a line: (start, end, dict) for each that parses."""
    for start in (m.start() for m in DICT_START.finditer(text)):
        depth = 0
        for end in range(start, len(text)):
            if text[end] == "{":
                depth += 1
            elif text[end] == "}":
                depth -= 1
                if depth == 0:
                    parsed = literal(text[start : end + 1])
                    if isinstance(parsed, dict):
                        yield start, end + 1, parsed
                    break


def literal(text: str) -> Any:
    """JSON, else a Python literal (single quotes, True/None); None when neither parses."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    value = python_literal(text)
    return None if value is UNREADABLE else value


def flat_numbers(document: dict[str, Any]) -> dict[str, tuple[float, str | None]]:
    """The numeric entries of a dict, and those of a dict under a data split's name one level
    down ({"train": {"loss": 0.3}} is "train/loss": one epoch's metrics grouped by split); other
    nested dicts and lists are not metrics."""
    numbers = {}
    for key, value in document.items():
        if isinstance(value, dict) and is_split_name(str(key)):
            for inner, number in value.items():
                parsed = cell_value(number)
                if parsed is not None and str(inner).strip():
                    numbers[f"{key}/{inner}"] = parsed
            continue
        parsed = cell_value(value)
        if parsed is not None and str(key).strip():
            numbers[str(key)] = parsed
    return numbers


def is_split_name(name: str) -> bool:
    """A name that is one data split's word ('train', 'val', 'validation', 'test')."""
    tokens = name_tokens(name)
    return len(tokens) == 1 and metric_names.is_split_word(tokens[0])


def is_bare_inner(segment: str, found: re.Match[str], value: float, previous_counter: str | None) -> bool:
    """An unnamed whole number alone in its segment right after a counter's (``Epoch: [3][120]``)."""
    return (
        previous_counter is not None
        and found.group("total") is None
        and segment.strip() == found.group(0).strip()
        and value >= 0
        and float(value).is_integer()
    )


def is_split_counter(name: str, segment: str, found: re.Match[str], value: float, record: Record) -> bool:
    """A line that opens with a split word and a whole number alone in its segment (``Train 3,``,
    ``[ Train | 001/100 ]``): the number counts that split's passes (the ``/M``, when written, their
    planned total); only before any other counter or metric of the line."""
    return (
        bool(name)
        and not record.counters
        and not record.metrics
        and found.group("unit") is None
        and split_word(name) is not None
        and meaning(name).quantity is None
        and segment.strip() == f"{segment[: found.start()].strip()} {found.group(0).strip()}".strip()
        and value >= 0
        and float(value).is_integer()
    )


def parse_pairs(number: int, text: str) -> Record | None:
    """The counters and metrics of one cleaned line; None when it holds no named number."""
    record = Record(line=number, text=text, last_line=number)
    leading = LEADING_STEP.match(text)
    if leading:  # "[120] train_loss=0.31, lr=0.03" (clu's metric writer): the step in brackets
        record.counters["step"] = float(leading.group(1))
        text = text[leading.end() :]
    counted = LEADING_COUNT.match(text)
    if counted:  # "00000012) perceptual - 53.7; warp_loss - 0.46": the line's count
        record.counters["step"] = float(counted.group(1))
        text = text[counted.end() :]
    dicts = list(dict_spans(text))
    for start, end, document in reversed(dicts):
        for key, pair in flat_numbers(document).items():
            if is_counter(key):
                record.counters.setdefault(key, pair[0])
            else:
                record.metrics[key] = pair
        text = text[:start] + " | " + text[end:]
    if dicts:
        record.source = "dict"
    carried = ""
    previous_counter: str | None = None
    free: list[str] = []
    for segment in SEGMENT_SPLIT.split(text):
        if not segment:
            continue
        position = 0
        named_any = False
        for found in VALUE.finditer(segment):
            left = segment[position : found.start()]
            position = found.end()
            name = name_from(left)
            if len(left.split()) > PROSE_WORDS:
                name = ""
            if not name and carried and not named_any:
                name = carried
                if free and name_from(free[-1]) == carried:
                    # the segment named this number: it is no free word, but what it says before
                    # the name may be ("Epoch 1 - eval: avg_loss - 5.14": the split, eval)
                    named_by = free.pop()
                    before = named_by[: named_by.rfind(carried)].strip(NAME_STRIP)
                    if before:
                        free.append(before)
            after = RATE_AFTER.match(segment[position:])
            if found.group("clock"):
                if name:
                    record.metrics[name] = (clock_seconds(found.group("clock")), "s")
                    named_any = True
                previous_counter = None
                continue
            value = number_value(found.group("num"))
            if value is None:
                continue
            unit = (found.group("unit") or "").strip() or None
            total = found.group("total")
            if not name and total is not None and previous_counter is not None and record.inner is None:
                record.inner = (value, float(total))
                continue
            if not name and after:
                name, unit = after.group("rate"), None
                position += after.end()
            if is_split_counter(name, segment, found, value, record):
                # "Train 3, loss: 0.52" / "Test 3, loss: 0.61" (DGCNN, PointNet ports): the split
                # word names the line's split, the whole number after it is its counter
                record.counters["step"] = value
                if total is not None:
                    record.totals["step"] = float(total)
                record.split = split_word(name)
                previous_counter = "step"
                named_any = True
                continue
            if not name and is_bare_inner(segment, found, value, previous_counter) and record.inner is None:
                record.inner = (value, None)  # "Epoch: [3][120]": the epoch's inner count, no total
                continue
            if not name:
                continue
            named_any = True
            abbreviated = unit in UNIT_SCALE and is_counter(name) and name not in record.counters
            if abbreviated:
                # 'step:2K': a counter printed with a multiplier suffix is a counter rounded to its digits
                decimals = len(found.group("num").partition(".")[2])
                record.rounding[name] = scaled(0.5 * 10.0**-decimals, unit)[0]
                value, unit = scaled(value, unit)
            if (
                (is_counter(name) or is_leading_episode(name, value, record))
                and math.isfinite(value)
                and unit is None
            ):
                record.counters.setdefault(name, value)
                if total is not None:
                    record.totals[name] = float(total)
                previous_counter = name
                continue
            record.metrics[name] = scaled(value, unit)
            previous_counter = None
            average = RUNNING_AVERAGE.match(segment, position)
            if average and math.isfinite(value):
                mean = number_value(average.group("average"))
                if mean is not None and not math.isfinite(mean):
                    # an average over the interval that is not finite holds a value that was not
                    # (inf stays in a sum until the meter resets): the interval had a non-finite value
                    record.metrics[name] = (mean, unit)
                    record.nonfinite_average.add(name)
        if not named_any:
            rest = segment[position:] if position else segment
            carried = name_from(rest) if len(rest.split()) <= 3 and not VALUE.search(rest) else ""
            if position == 0:
                free.append(segment)
        else:
            carried = ""
    for segment in free:
        split = split_word(segment)
        if split:
            record.split = split
            break
    if not record.counters and not record.metrics:
        return None
    return record


# --------------------------------------------------------------------------- console logs


def looks_like_markdown(lines: list[str]) -> bool:
    """A Markdown document: headings and fenced code blocks (a README quoting a log)."""
    headings = sum(1 for line in lines if MARKDOWN_HEADING.match(line))
    fences = sum(1 for line in lines if MARKDOWN_FENCE.match(line))
    return headings >= 1 and fences >= 2


def numbered_rank_prefixes(lines: list[str]) -> bool:
    """``srun -l`` / ``torchrun --tee`` output: most lines start with 'N: ' (a rank)."""
    nonblank = [line for line in lines if line.strip()]
    if len(nonblank) < 4:
        return False
    prefixed = [NUMBERED_PREFIX.match(line) for line in nonblank]
    ranks = {p.group(1) for p in prefixed if p}
    return sum(1 for p in prefixed if p) >= 0.6 * len(nonblank) and len(ranks) > 1


def says_stopped_by_user(raw: str) -> bool:
    """A line in which the loop reports that the user stopped it (STOPPED_BY_USER). A substring test
    comes first, a tenth of the search's time: a log of millions of lines holds the message once, if
    at all, and each of the pattern's wordings holds one of these words."""
    lowered = raw.lower()
    return ("user" in lowered or "interrupt" in lowered or "manually" in lowered) and bool(
        STOPPED_BY_USER.search(raw)
    )


def console_records(lines: list[tuple[int, str]], skipped: Skipped) -> list[Record]:
    """Records of a console log (see the module docstring); every other line counted in skipped."""
    records: list[Record] = []
    numbered = numbered_rank_prefixes([text for _, text in lines])
    in_traceback = False
    in_pass: Record | None = None  # the record of the pass header whose progress states follow
    pass_state: tuple[int, str] | None = None  # its latest progress state (line, text)
    pass_finished = True  # whether that state reached its total (done == total)
    header: Record | None = None  # the latest counter record: its batch lines become rows (BatchRows)
    batches = BatchRows(records, skipped)
    # the counterless lines that continued no record (skipped, unless no line counts: counterless_rows)
    loose: list[Record] = []
    banners: list[tuple[int, str]] = []  # (line, split) of the lines without a value that name a split

    def close_pass() -> None:
        # a pass whose last state stopped short of its total (the log ends inside the epoch) holds a
        # running value over part of the epoch, not the epoch's: no row (its state counted as skipped)
        if in_pass is not None and pass_state is not None and not pass_finished:
            in_pass.metrics.clear()
            skipped.add(
                "progress state of a pass that never finished (a running value of part of it)", *pass_state
            )

    for number, raw in lines:
        if not raw.strip():
            continue
        if TRACEBACK_START.match(raw):
            in_traceback = True
            skipped.add("traceback", number, raw)
            continue
        if in_traceback:
            skipped.add("traceback", number, raw)
            if TRACEBACK_END.match(raw) and not raw.startswith((" ", "\t")):
                in_traceback = False
                skipped.last_exception = (number, " ".join(raw.split())[:EXAMPLE_CHARS])
            continue
        if says_stopped_by_user(raw):
            skipped.last_stop = (number, " ".join(raw.split())[:EXAMPLE_CHARS])
        cleaned = clean(number, raw, numbered)
        if cleaned.bar is not None:
            cleaned.bar.rank = cleaned.rank
            records.append(cleaned.bar)
            continue
        if in_pass is not None and CALLBACK_MESSAGE.match(cleaned.text):
            skipped.add(
                "a callback's message inside a pass (checkpoint, LR reduction, stopping)", number, raw
            )
            continue
        record = parse_pairs(number, cleaned.text) if cleaned.text else None
        state = PROGRESS_STATE.match(cleaned.text) if in_pass is not None else None
        if in_pass is not None and record is not None and state and not record.counters and record.metrics:
            # the pass's values so far: each state replaces the one before; the last holds the pass's
            if pass_state is not None:
                skipped.add("progress state superseded by a later one of its pass", *pass_state)
            pass_state, pass_finished = (number, raw), int(state["done"]) >= int(state["total"])
            in_pass.metrics.update(record.metrics)
            in_pass.last_line = number
            continue
        if record is None:
            reason = (
                "warning"
                if cleaned.warning
                else "progress bar"
                if cleaned.had_bar
                else "no name-value pair (text, banner or separator)"
            )
            skipped.add(reason, number, raw)
            banner = split_word(cleaned.text) if not cleaned.warning and not cleaned.had_bar else None
            if banner is not None:
                banners.append((number, banner))
            continue
        record.rank = cleaned.rank
        record.own = record.names
        record.clock = cleaned.clock
        if not record.metrics:  # '=== validate epoch 1 ===': a counter with a split word, a banner too
            named: list[str | None] = (
                [record.split] if record.split else [split_word(counter) for counter in record.counters]
            )
            banner = next((split for split in named if split), None)
            if banner is not None:
                banners.append((number, banner))
        if record.counters:
            close_pass()
            records.append(record)
            in_pass, pass_state = (record if PASS_HEADER.match(cleaned.text) else None), None
            header = record
            batches.open(record)
            continue
        if not records:
            batches.before_first(record, raw)
        if header is not None and batches.takes(header, records[-1] if records else None, record):
            current = records[-1]
            if batches.starts_row(current, record):
                records.append(batches.row(header, record, raw))
            else:
                current.metrics.update(record.metrics)
                current.last_line = number
            continue
        above = records[-1] if records else None  # (a pass's few rows may just have been taken back)
        if (
            above is not None
            and above.source != "bar"
            and not batches.sealed(above)
            and (number - above.last_line <= CONTINUATION_GAP + 1 or _awaits_values(above, record))
            and not _fields(above.names) & _fields(record.names)
            and not above.names & record.names
            and above.rank == record.rank
        ):
            above.metrics.update(record.metrics)
            above.last_line = number
            continue
        record.text = raw
        loose.append(record)
        skipped.add(COUNTERLESS, number, raw)
    close_pass()
    settled = batches.settle()
    sections(settled + loose, banners)
    if any(r.counters for r in settled):
        return settled
    rows = counterless_rows(loose)
    skipped.restore(COUNTERLESS, [r.line for r in rows])
    return rows + settled if rows else settled


# a shape of line is a section's own when it opens at least this share of the sections under the
# banners of a split: a banner of each loop, then that loop's lines
SECTION_OPENING_SHARE = 0.5


def sections(records: list[Record], banners: list[tuple[int, str]]) -> None:
    """The split of lines printed alike under banners that name splits in turn
    (``===== training epoch 1 =====``, ``Epoch 0 | loss = 0.033``, ``===== validate epoch 1 =====``,
    ``Epoch 0 | loss = 0.037``): a record without a split of its own takes the split of the last banner
    above it, where records of its very shape (the names the resolver reads) open most sections (at
    least SECTION_OPENING_SHARE of them) of two splits or more, whose banners come about as often
    (the loops take turns). A shape that follows one split's banners only, or training lines that
    carry on after each 'evaluate:dev' banner below one 'start training', names no section."""
    if len({split for _, split in banners}) < 2:
        return
    lines = [line for line, _ in banners]
    sections_of: Counter[str] = Counter(split for _, split in banners)
    opened: dict[frozenset[str], Counter[str]] = {}
    placed: list[tuple[Record, int, frozenset[str]]] = []
    for record in sorted((r for r in records if r.metrics and r.split is None), key=lambda r: r.line):
        at = bisect.bisect_right(lines, record.line) - 1
        # its shape: the names it carries that the resolver reads (a timing line glued on, 'Training
        # consumes 53.7 second', differs between the sections and says nothing of the shape)
        shape = frozenset(name for name in record.metrics if meaning(name).quantity)
        if at < 0 or not shape:
            continue
        if not placed or placed[-1][1] != at:  # the first record of the section under banner `at`
            opened.setdefault(shape, Counter())[banners[at][1]] += 1
        placed.append((record, at, shape))
    own = set()
    for shape, counts in opened.items():
        # the splits whose sections this shape opens, and how many banners each has: the loops take
        # turns, so as many banners of each (within a factor 1 / SECTION_OPENING_SHARE)
        banner_counts = [
            sections_of[split]
            for split in counts
            if counts[split] >= SECTION_OPENING_SHARE * sections_of[split]
        ]
        if len(banner_counts) >= 2 and min(banner_counts) >= SECTION_OPENING_SHARE * max(banner_counts):
            own.add(shape)
    for record, at, shape in placed:
        if shape in own:
            record.split = banners[at][1]


def counterless_rows(loose: list[Record]) -> list[Record]:
    """The rows of a console with no counter on any line: its counterless lines that name the same
    numbers (the most common set of names), a training loss among them, when COUNTERLESS_MIN_ROWS
    or more do; none otherwise."""
    shapes: dict[frozenset[str], list[Record]] = {}
    for record in loose:
        shapes.setdefault(record.names, []).append(record)
    for names, rows in sorted(shapes.items(), key=lambda item: -len(item[1])):
        if len(rows) < COUNTERLESS_MIN_ROWS:
            break
        if any(meaning(name).field == "loss" for name in names):
            return rows
    return []


class BatchRows:
    """A pass header's batch lines (``Epoch : 3``, then ``Loss : 2.61`` once a batch, no counter).
    The header takes the first batch's values as a continuation (its shape: the names it took);
    a counterless line that repeats names of that shape opens a row with the header's counters, and
    the next lines of the shape fill it until one repeats a name again. A line of another shape
    ends the pass's rows and fills none (a test loop printing ``Accuracy`` and ``Loss`` after
    training). A run of one-line rows of the first pass's shape just before the first header is
    that pass's (a loop printing its header after the first batch). A pass whose rows a line of
    another shape ends before BATCH_ROWS_MIN of them gives them back at once (a train and a val
    value printed alike, then more values: the header takes those as before); the rows are kept
    when the passes that took rows hold BATCH_ROWS_MIN at the median (``settle``), else they go
    back to skipped lines."""

    def __init__(self, records: list[Record], skipped: Skipped) -> None:
        self.records, self.skipped = records, skipped  # console_records' own, appended to there
        self.shape: frozenset[str] = frozenset()
        self.rows: list[Record] = []  # every row opened, in file order
        self.per_pass: list[int] = []  # rows opened under each header
        self.ended: set[int] = set()  # id() of a pass's last record once a line of another shape came
        self.leading: list[tuple[Record, str]] = []  # counterless records before the first header
        self.first: Record | None = None
        self.closed = False  # the current pass gave its rows back: it takes no more

    def open(self, header: Record) -> None:
        self.shape, self.closed = frozenset(), False
        if self.first is None:
            self.first = header
        self.per_pass.append(0)

    def before_first(self, record: Record, raw: str) -> None:
        self.leading.append((record, raw))

    def takes(self, header: Record, above: Record | None, record: Record) -> bool:
        """Whether the line is a batch row's (a new one, or the current one's next line)."""
        if above is None or self.closed or record.rank != above.rank or self.sealed(above):
            return False
        if not self.shape:
            # the first repeat of what the header took fixes the shape
            took = header.names - header.own
            if above is header and record.names & took and record.names <= took:
                self.shape = took
                return True
            return False
        if not (above is header or (self.rows and above is self.rows[-1])):
            return False
        if record.names <= self.shape:
            return True
        if self.per_pass[-1] < BATCH_ROWS_MIN:
            # the header on top again, taking the values after them as before
            self._take_back(self.per_pass[-1])
            self.per_pass[-1], self.shape, self.closed = 0, frozenset(), True
        else:
            self.ended.add(id(above))
        return False

    def _take_back(self, n: int) -> None:
        """The last n rows were no batches: out of the records, back to the skipped lines."""
        back = self.rows[len(self.rows) - n :]
        ids = {id(row) for row in back}
        self.records[:] = [r for r in self.records if id(r) not in ids]
        for row in back:
            self.skipped.add(COUNTERLESS, row.line, row.text)
        del self.rows[len(self.rows) - n :]

    @staticmethod
    def starts_row(above: Record | None, record: Record) -> bool:
        return above is None or bool(record.names & above.names)

    def row(self, header: Record, record: Record, raw: str) -> Record:
        row = Record(
            record.line,
            counters=dict(header.counters),
            totals=dict(header.totals),
            metrics=dict(record.metrics),
            rank=record.rank,
            text=raw,
            source="line",  # the header's layout: its row and its batches' rows are one series
            last_line=record.line,
            own=record.names,
            clock=record.clock,
        )
        self.rows.append(row)
        self.per_pass[-1] += 1
        return row

    def sealed(self, above: Record) -> bool:
        return id(above) in self.ended

    def settle(self) -> list[Record]:
        """The records, the batch rows kept or taken back (see the class)."""
        taken = sorted(n for n in self.per_pass if n)
        if not self.rows:
            return self.records
        if taken[len(taken) // 2] < BATCH_ROWS_MIN:
            self._take_back(len(self.rows))
            return self.records
        assert self.first is not None
        shape = self.first.names - self.first.own
        lead: list[tuple[Record, str]] = []
        next_line = self.first.line
        for record, raw in reversed(self.leading):  # the one-line rows right before the first header
            if record.names != shape or next_line - record.line > CONTINUATION_GAP + 1:
                break
            lead.insert(0, (record, raw))
            next_line = record.line
        if not lead:
            return self.records
        rows = [self.row(self.first, r, raw) for r, raw in lead]
        self.skipped.restore(COUNTERLESS, [r.line for r in rows])
        return rows + self.records


def _awaits_values(header: Record, record: Record) -> bool:
    """A counter line that has no metric yet ("Epoch 15/100") takes the next metrics line, however
    many counterless lines of something else (a library's out-of-memory notices) lie between: its
    values are still to come, and no record of another moment came in between."""
    return bool(header.counters) and not _fields(header.names) and bool(_fields(record.names))


def _fields(names: Iterable[str]) -> set[str]:
    """The canonical fields some of these names stand for (a second val loss is no continuation);
    a component of a field (SB3's entropy_loss beside its loss) stands for none."""
    found = {m.field for m in map(meaning, names) if m.rank < metric_names.COMPONENT}
    return {f for f in found if f is not None}


# --------------------------------------------------------------------------- tables


# a counter joined to its value by a hyphen, every line ('0001-64.5714': f"{epoch:04d}-{loss:.4f}"): a
# headerless counter,value table; only whole numbers then a plain decimal (no sign, no exponent), so
# that a negative value or an exponent is never split
HYPHEN_ROW = re.compile(r"\d+-\d+(?:\.\d+)?")
# a colon-joined table has a counter and at least two values: fewer is a console's 'Loss: 0.5'
COLON_MIN_COLUMNS = 3


# the delimiters a table is tried with first; another one is sniffed only when none of these fits
COMMON_DELIMITERS = (",", "\t", ";", "|")


def sniff_delimiter(lines: list[str]) -> str | None:
    """The delimiter of a table: the one that splits most of the first lines into the same
    number (>= 2) of fields (a hyphen only when every line is a counter, a hyphen and a value)."""
    sample = [line for line in lines[:50] if line.strip()]
    if len(sample) < 2:
        return None
    if all(HYPHEN_ROW.fullmatch(line.strip()) for line in sample):
        return "-"
    if _colon_table(sample):
        return ":"
    best = None
    for delimiter in COMMON_DELIMITERS:
        widths = [len(next(csv.reader([line], delimiter=delimiter))) for line in sample]
        common = max(set(widths), key=widths.count)
        share = widths.count(common) / len(widths)
        if common >= 2 and share >= 0.8 and (best is None or share > best[1]):
            best = (delimiter, share)
    return best[0] if best else _uncommon_delimiter(sample)


# characters that belong to a number, a name, a date or a printed structure, never a table's delimiter
NOT_DELIMITERS = frozenset(".-+_/:()[]{}'\"=%#*!?@&<>~`^$")


def _uncommon_delimiter(sample: list[str]) -> str | None:
    """A delimiter none of the usual ones is: a character (not a letter, digit or space, nor one that
    belongs to a number, a name or a date: NOT_DELIMITERS) that every sampled line holds the same
    number of times, once at least ('2024-11-29 18:15:04🫤0🫤4.4855', a logger's own separator).
    csv.Sniffer's idea, restricted to a count shared by every line."""
    counts = Counter(sample[0])
    for char, count in counts.most_common():
        if char.isalnum() or char.isspace() or char in NOT_DELIMITERS:
            continue
        if all(line.count(char) == count for line in sample):
            return char
    return None


def _colon_table(sample: list[str]) -> bool:
    """Rows of numbers joined by colons under a header of words joined the same way ('e : batch :
    loss : train 1', then '1 : 50 : 245.1 : 0.0156': f"{epoch} : {batch} : {loss}" appended to a
    file): every line splits on ':' into as many (>= COLON_MIN_COLUMNS) cells, no header cell a
    number and every other cell one. A colon also ends a console's labels ('Epoch: 1 Loss: 0.5')
    and joins a clock's fields, so nothing less than a whole table of numbers is read this way."""
    rows = [[cell.strip() for cell in line.split(":")] for line in sample]
    width = len(rows[0])
    return (
        width >= COLON_MIN_COLUMNS
        and all(len(cells) == width for cells in rows)
        and all(cell and cell_value(cell) is None for cell in rows[0])
        and all(cell_value(cell) is not None for cells in rows[1:] for cell in cells)
    )


def aligned_lines(lines: list[tuple[int, str]]) -> list[tuple[int, str]] | None:
    """A table whose columns are aligned by spaces (rllab / Berkeley `logz` loggers: 'Iteration
    Wall_Time  Samples  Train_Return ...' padded to fixed widths) rewritten tab-separated, or None:
    the first line names ALIGNED_MIN_COLUMNS or more columns (no cell a number), and most of the next
    lines (ALIGNED_ROW_SHARE of up to 50) hold as many cells, every one a number."""
    nonblank = [(n, text) for n, text in lines if text.strip()]
    if len(nonblank) < 2:
        return None
    header = nonblank[0][1].split()
    if len(header) < ALIGNED_MIN_COLUMNS or any(cell_value(c) is not None for c in header):
        return None
    sample = [text.split() for _, text in nonblank[1:51]]
    numeric = sum(
        len(cells) == len(header) and all(cell_value(c) is not None for c in cells) for cells in sample
    )
    if numeric < ALIGNED_ROW_SHARE * len(sample):
        return None
    return [(n, "\t".join(text.split())) for n, text in nonblank]


# a progress count printed as one cell of a table row ('3/29' under 'Epoch')
COUNT_CELL = re.compile(r"(\d+)/(\d+)")
# a console's table must hold this many rows under its headers to be read as one
CONSOLE_TABLE_MIN_ROWS = 10
# its first header is printed before the training starts: a log with none in its first lines is read
# line by line at once (a long console pays no second pass)
CONSOLE_TABLE_HEADER_LINES = 300


def console_table(lines: list[tuple[int, str]], skipped: Skipped) -> list[tuple[int, str]] | None:
    """A table a console prints between its other lines (old Ultralytics YOLOv3 and its JDE port:
    'Epoch  Batch  box  conf  id  total  nTargets  time' once, after a logger's prefix, then rows
    '0/29  0/165  0.227  2.06  19  158  83  59.6' among warnings and summaries): a line of three or
    more column names, a counter among them and no number, heads the rows below it with as many cells,
    each a number or a count 'N/M'; a row takes the latest header of its width. The first header comes
    within the first CONSOLE_TABLE_HEADER_LINES lines. Rewritten tab-separated,
    the header first (table_records reads it), the other lines set aside with their reason; None when
    fewer than CONSOLE_TABLE_MIN_ROWS rows fall under the first header."""
    headers: dict[int, list[str]] = {}
    first: list[str] | None = None
    first_line = 0
    rows: list[tuple[int, list[str]]] = []
    other: list[tuple[int, str]] = []
    for index, (number, raw) in enumerate(lines):
        if first is None and index >= CONSOLE_TABLE_HEADER_LINES:
            return None
        cells = strip_prefixes(raw.strip()).split()
        is_header = (
            len(cells) >= ALIGNED_MIN_COLUMNS
            and not any(cell_value(c) is not None or COUNT_CELL.fullmatch(c) for c in cells)
            and any(is_counter(c) for c in cells)
        )
        if is_header:
            headers[len(cells)] = cells
            if first is None:
                first, first_line = cells, number
        elif first and cells == headers.get(len(cells)):
            continue
        elif (
            first is not None
            and headers.get(len(cells)) == first
            and all(cell_value(c) is not None or COUNT_CELL.fullmatch(c) for c in cells)
        ):
            rows.append((number, cells))
        elif raw.strip():
            other.append((number, raw))
    if first is None or len(rows) < CONSOLE_TABLE_MIN_ROWS:
        return None
    for number, raw in other:
        skipped.add("not a row of the console's table", number, raw.strip())
    return [(first_line, "\t".join(first))] + [(n, "\t".join(cells)) for n, cells in rows]


@dataclass
class Table:
    records: list[Record]
    header: list[str]
    named_by_file: bool  # a headerless two-column table: a value is named after the file
    clock_left_out: bool = False  # a first column of dates and times, on every row, not read

    @property
    def counted_by_first_column(self) -> bool:
        return _counted_by_first_column(self.header, self.named_by_file)


def _counted_by_first_column(header: list[str], named_by_file: bool) -> bool:
    """A headerless counter,value table (not one whose first column holds fractions)."""
    return named_by_file and header[0] == ROW_COUNTER


def table_records(lines: list[tuple[int, str]], delimiter: str, stem: str, skipped: Skipped) -> Table | None:
    """Rows of a delimited table as records; None when it is not a table of numbers."""
    rows = [(n, [c.strip() for c in cells]) for n, cells in _csv_rows(lines, delimiter)]
    if len(rows) < 2:
        return None
    clock = all(len(cells) > 2 and _is_clock(cells[0]) for _, cells in rows[:COUNTER_PROBE_ROWS])
    if clock:  # a logger's date and time opening every row: when, not what; the numbers follow it
        rows = [(n, cells[1:]) for n, cells in rows]
    if delimiter != "," and writes_decimal_commas(c for _, cells in rows for c in cells):
        # a locale's export ('0;1,6667;1,8333'): every comma of the table is a decimal point
        rows = [(n, [c.replace(",", ".") for c in cells]) for n, cells in rows]
    _, first = rows[0]
    numeric_first = sum(cell_value(c) is not None for c in first)
    named_by_file = False
    if numeric_first == 0:
        header, body = first, rows[1:]
    elif len(first) == 2 and all(cell_value(c) is not None for c in first):
        header, body, named_by_file = [ROW_COUNTER, stem], rows, True
        if not _whole_numbers([cells[0] for _, cells in rows[:COUNTER_PROBE_ROWS] if cells]):
            # a first column that is not whole numbers counts nothing ('685.15,3.62': an epoch's loss,
            # then its seconds): the first value is the one the file is named for, rows in file order
            header = [stem, "column 2"]
    elif _labelled_values(rows[:COUNTER_PROBE_ROWS]):
        # 'Loss, 10.43' on every row (print('Loss,', loss, file=f) each epoch): the word names the
        # number beside it; no header and no counter, so the rows are numbered in file order
        header, body = [LABEL_COLUMN, first[0]], rows
    else:
        return None
    cells_read = [cell_value(c) is not None for _, cells in body[:50] for c in cells]
    if not cells_read or sum(cells_read) < 0.5 * len(cells_read):
        return None  # "step 710|loss 4.3" lines: a console log that uses the delimiter, not a table
    if len(set(header)) < len(header) or not all(header):
        header = [h or f"column {i + 1}" for i, h in enumerate(header)]
    header = _qualified_by_file(header, stem)
    counted = _counted_by_first_column(header, named_by_file)
    records = []
    for number, cells in body:
        if cells == header:
            skipped.add("repeated header row", number, delimiter.join(cells))
            continue
        if len(cells) != len(header):
            skipped.add("row with another number of cells", number, delimiter.join(cells))
            continue
        shown = ", ".join(f"{h}={c}" for h, c in zip(header, cells, strict=True))
        record = Record(line=number, source="row", text=shown, last_line=number)
        first_cell = cell_value(cells[0])
        if counted and first_cell is not None:
            record.counters[header[0]] = first_cell[0]
        for name, cell in zip(header, cells, strict=True):
            count = COUNT_CELL.fullmatch(cell)
            if count and is_counter(name):  # '3/29' under 'Epoch': the count and its total
                record.counters[name] = float(count.group(1))
                record.totals[name] = float(count.group(2))
        if filled(
            record,
            ((n, cell_value(c)) for n, c in zip(header, cells, strict=True) if n not in record.counters),
        ):
            records.append(record)
        else:
            skipped.add("row without numbers", number, delimiter.join(cells))
    return Table(records, header, named_by_file, clock) if records else None


def _is_clock(cell: str) -> bool:
    """A cell that is a date and a time and nothing else ('2024-11-29 18:15:04.852164')."""
    stamp = DATED_STAMP.match(cell)
    return stamp is not None and not cell[stamp.end() :].strip()


def _qualified_by_file(header: list[str], stem: str) -> list[str]:
    """A header whose columns only name splits (``train``, ``valid``) in a file named for what they
    hold (``losses.csv``, ``accuracy.csv``): each such column is that quantity of its split
    ('losses train', 'losses valid'); a file named for nothing (``log.csv``) leaves them as they are
    (generic_log._bare_split_losses reads them as losses when the training series falls)."""
    meaning = metric_names.resolve(stem)
    if meaning.quantity is None or meaning.split is not None:
        return header
    return [f"{stem} {h}" if metric_names.names_split_only(h) else h for h in header]


def _labelled_values(rows: list[tuple[int, list[str]]]) -> bool:
    """Rows of two cells, the first one same word on every row, the second a number."""
    words = {cells[0] for _, cells in rows if len(cells) == 2}
    return (
        len(rows) >= 2
        and all(len(cells) == 2 and cell_value(cells[1]) is not None for _, cells in rows)
        and len(words) == 1
        and cell_value(next(iter(words))) is None
        and bool(next(iter(words)).strip())
    )


def _whole_numbers(cells: list[str]) -> bool:
    """Every cell a finite whole number (what a counter of steps or epochs writes)."""
    values = [cell_value(c) for c in cells]
    return all(v is not None and math.isfinite(v[0]) and float(v[0]).is_integer() for v in values)


def _csv_rows(lines: list[tuple[int, str]], delimiter: str) -> Iterator[tuple[int, list[str]]]:
    for number, text in lines:
        if text.strip():
            yield number, next(csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True))


# --------------------------------------------------------------------------- JSON


# a line that names one printed list (print(f"loss_log: {losses}"), a series kept in a Python list and
# printed once at the end): "name: [v1, v2, ...]" or "name = [...]"
NAMED_LIST_LINE = re.compile(r"^\s*([A-Za-z_][\w./-]*)\s*[:=]\s*(\[.*\])\s*$")


def named_lists(lines: list[str]) -> dict[str, list[Any]] | None:
    """{name: values} of a file whose every line names one printed list of numbers ("loss_log:
    [tensor(2.33, grad_fn=...), ...]"), the file's series; None for any other file."""
    lists: dict[str, list[Any]] = {}
    for line in lines:
        found = NAMED_LIST_LINE.match(line)
        if not found:
            return None
        values = literal(SCALAR_REPR.sub(r"\1", found.group(2)))
        if not _numeric_array(values):
            return None
        lists[found.group(1)] = values
    return lists or None


def json_records(document: Any, stem: str) -> list[Record] | None:
    """Records of a JSON/Python document: {name: [values]} columns, the same grouped by split
    ({"training": {"combined": {"loss": [values]}}, "validation": {...}}: Ludwig's
    training_statistics.json), [objects], or [numbers] (named after the file); None for any other
    shape (a config, a results file of several runs keyed by their names)."""
    if isinstance(document, list) and document and all(isinstance(x, dict) for x in document):
        return objects_records(enumerate(document, start=1))
    if isinstance(document, list) and len(document) >= 2 and all(cell_value(x) for x in document):
        return column_records({stem: document})
    if isinstance(document, dict):
        numeric = {k: v for k, v in document.items() if _numeric_array(v)}
        if numeric:
            return column_records(numeric)
        by_split = split_keyed_columns(document)
        if by_split:
            return column_records(by_split)
        wrapped = wrapped_log(document)
        if wrapped is not None:
            return objects_records(enumerate(wrapped[1], start=1))
    return None


def wrapped_log(document: dict[str, Any]) -> tuple[str, list[dict[str, Any]]] | None:
    """(key, objects) when exactly one value of a document is a list of two or more objects and
    none is a list of anything else: a results file that keeps its log (one object an epoch) under
    one key beside a summary ({"best_epoch": 50, "test_metrics": {...}, "history": [...]}). A
    document of several such lists (several runs, or a log beside other tables) is not one run's."""
    lists = [(key, value) for key, value in document.items() if isinstance(value, list)]
    if len(lists) != 1:
        return None
    key, value = lists[0]
    if len(value) < 2 or not all(isinstance(item, dict) for item in value):
        return None
    return str(key), value


def _numeric_array(value: Any) -> bool:
    """A JSON array of two or more values, at least half of them numbers: a metric's series."""
    return (
        isinstance(value, list)
        and len(value) >= 2
        and sum(cell_value(x) is not None for x in value) >= len(value) / 2
    )


def split_keyed_columns(document: dict[str, Any]) -> dict[str, list[Any]]:
    """The numeric arrays of a document whose top-level keys are all data splits ('training',
    'validation', 'test') and whose values are objects, each array named by its path
    ('training/combined/loss'), at most SPLIT_NESTING levels down: one run's metrics grouped by
    split (Ludwig writes split -> output feature -> metric -> one value an epoch). A document
    keyed by anything else (runs, models, features) is not one run's log: empty."""
    if not document or not all(
        isinstance(value, dict) and is_split_name(key) for key, value in document.items()
    ):
        return {}
    columns: dict[str, list[Any]] = {}

    def walk(prefix: str, value: Any, depth: int) -> None:
        if isinstance(value, dict) and depth < SPLIT_NESTING:
            for key, inner in value.items():
                walk(f"{prefix}/{key}", inner, depth + 1)
        elif _numeric_array(value):
            columns[prefix] = value

    for split, metrics in document.items():
        walk(split, metrics, 1)
    return columns


def column_records(columns: dict[str, list[Any]]) -> list[Record]:
    """Equal-position values of named arrays as records; the array index is the counter unless
    an array is itself a counter (epoch, step)."""
    length = max(len(v) for v in columns.values())
    records = []
    for index in range(length):
        shown = ", ".join(f"{n}[{index}]={v[index]}" for n, v in columns.items() if index < len(v))
        record = Record(line=index + 1, source="column", text=shown[:EXAMPLE_CHARS], last_line=index + 1)
        record.counters["index"] = float(index)
        cells = (
            (name, cell_value(values[index]) if index < len(values) else None)
            for name, values in columns.items()
        )
        if filled(record, cells):
            records.append(record)
    return records


def filled(record: Record, cells: Iterable[tuple[str, tuple[float, str | None] | None]]) -> bool:
    """Put each named value in the record's counters or metrics; True when it has a metric."""
    for name, value in cells:
        if value is None:
            continue
        if is_counter(name):
            record.counters[name] = value[0]
        else:
            record.metrics[name] = value
    record.own = record.names
    return bool(record.metrics)


def objects_records(objects: Iterable[tuple[int, dict[str, Any]]]) -> list[Record]:
    records = []
    for number, document in objects:
        text = json.dumps(document)[:EXAMPLE_CHARS]
        record = Record(line=number, source="object", text=text, last_line=number)
        if filled(record, flat_numbers(document).items()):
            records.append(record)
    return records


def jsonl_records(lines: list[tuple[int, str]], skipped: Skipped) -> list[Record]:
    objects = []
    for number, text in lines:
        if not text.strip():
            continue
        parsed = literal(text.strip())
        if isinstance(parsed, dict):
            objects.append((number, parsed))
        else:
            skipped.add("not a JSON object", number, text)
    return objects_records(objects)
