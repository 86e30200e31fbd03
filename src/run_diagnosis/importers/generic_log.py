"""Any line-oriented training log: the layout is inferred, not known in advance.

Used after every specific importer declined (it is last in ``IMPORTER_MODULES``), or with
``--format generic`` / ``--map``. What it reads: a console log a training script printed, a
delimited table (CSV/TSV under any file name), a JSON document of metric arrays or of records,
JSON lines, or Python dicts printed one a line (``generic_lines`` turns each into records).

How the layout is inferred
--------------------------
1. **Records.** Every line with a counter (step, iter, iteration, epoch, global_step,
   num_updates, ``N/M`` forms) and named numbers is a record; a line with numbers and no counter
   continues the record above it (block layouts); everything else is skipped and counted by
   reason.
2. **Names.** Every metric name goes through the metric-name resolver (``metric_names.assign``;
   a split word written outside the names, as in ``valid | epoch 3 | loss 2.1``, is put in front
   of them). ``--map`` entries win. The training loss is the resolver's choice; when two names
   are equally plausible, the one on more lines, and the inference is marked low-confidence.
   With no total loss but loss components (YOLO's box/obj/cls), one component stands in,
   marked low-confidence. A logged component of the training loss that switches on or off
   (exactly 0 on 5 rows or more, then not 0 on as many, or the reverse: a term a schedule adds
   at an epoch) is a ``loss terms changed`` event at its first row (``term_switches``): the loss
   sums other terms from there, and the loss_spikes check reads a level it moves to as no spike.
3. **Layouts.** Records are grouped by what they carry (their counters, their loss names, the
   split word): the group with most lines carrying the training loss gives the training rows,
   the group with most lines carrying a validation loss (a test loss when there is none) the
   evaluation rows. Other groups are named in the notes.
4. **Counter.** A step-like counter wins over an epoch counter. A step counter that restarts
   every time the epoch advances (``Epoch 2 | Step 0/6501``), or that runs the same cycle again
   and again, is an inner count: the step is ``epoch x steps-per-epoch + inner``. An epoch
   counter alone makes a per-epoch run: rows are epochs (``rows_are: epoch`` in the config,
   and the checks that need steps say so in check_coverage). With no counter (HF dicts that
   carry only a fractional epoch, arrays), rows are numbered in file order. An evaluation
   without the training counter (``test epoch:3``) gets the step of the last training row
   before it. A counter that goes back is a restart: both attempts are kept as logged and a
   "resuming from step N" event marks it. Identical records in a row (ranks printing the same
   line) are kept once; with rank prefixes (``[rank1]:``, ``1: ``) only the lowest rank is read.
5. **Units.** ``405ms``, ``1.2s`` and ``12.3k`` are read with their units; a loss named in bits
   or as a perplexity is converted to nats (``importers.units``); a percentage accuracy to a share.
6. **Folders.** A folder is read when exactly one file in it reads as a log, or when its files are
   one run written per split (``_split_family``: ``train_losses.csv`` beside ``test_losses.csv``,
   ``train.csv`` beside ``val.csv``): the training file's rows, then each held-out file's under the
   split its name carries; another log beside them is passed over with a note.

What it says it understood
--------------------------
``RunData.layout`` (written as ``provenance.layout`` in run_config.json and shown first in the
report): the format, which lines became training and evaluation rows (count and an example),
the counter and how it was read, which name feeds which field, the numeric names not
understood, the skipped lines by reason with two examples each, and the confidence with its
reasons. A file that cannot be read is refused with what was found and how to map it
(``--map step=iter,loss=train/CrossEntropyLoss``, or the same in ``<log>.map.yaml`` beside it).
"""

from __future__ import annotations

import io
import itertools
import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AnyStr

import pandas as pd
import yaml

from run_diagnosis.importers import RunImportError, metric_names, script_settings, yolo_results
from run_diagnosis.importers.aliases import clock_reset_events, metric_column, step_times_from_elapsed
from run_diagnosis.importers.canonical import (
    EVAL_COLUMNS,
    TRAIN_COLUMNS,
    RunData,
    add_event,
    epochs_unfinished_event,
    events_frame,
    loss_terms_changed_event,
    written_several_times_event,
)
from run_diagnosis.importers.generic_lines import (
    ANSI_ESCAPE,
    COMMON_DELIMITERS,
    ROW_COUNTER,
    TIME_UNITS,
    Record,
    Skipped,
    aligned_lines,
    console_records,
    console_table,
    counter_kind,
    is_counter,
    json_records,
    jsonl_records,
    literal,
    looks_like_markdown,
    meaning,
    name_tokens,
    named_lists,
    sniff_delimiter,
    split_word,
    table_records,
    wrapped_log,
)
from run_diagnosis.importers.units import SECONDS_PER_TIME_UNIT, UnitError, accuracy_to_share, loss_to_nats
from run_diagnosis.run_files import (
    EVAL_DATA_KEY,
    OPTIONAL_EVAL_COLUMNS,
    ROWS_ARE_KEY,
    TRAIN_DATA_KEY,
    ZERO_TERMS_KEYS,
)

FORMAT = "generic"
DESCRIPTION = (
    "any other line-oriented training log (console output, CSV/TSV, JSON arrays or records, "
    "JSON lines, printed dicts): the layout is inferred and reported"
)

SNIFF_BYTES = 2 * 1024 * 1024
# the head a sniff reads is SNIFF_BYTES of what the file holds once each line's carriage-return
# redraws are reduced to its last state (a tqdm bar redrawn for every one of 240,000 steps writes
# megabytes on one line before the first metric), read from at most HEAD_READ_FACTOR times as much
HEAD_READ_FACTOR = 16
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # the byte-order marks a UTF-16 log opens with
# One run written twice in a folder (a table beside the console that printed it): the files agree
# on every training loss once the more precise one is rounded as the other prints it. Five rows at
# least, so that a few equal numbers of two short runs are not taken for one run; decimals are
# counted up to 8 (a float32 loss carries about 7 significant digits), with a slack of 1e-9 for
# the binary representation of a decimal number.
COPY_MIN_ROWS = 5
COPY_DECIMALS_MAX = 8
COPY_ROUNDING_SLACK = 1e-9
# One run written at two granularities (a per-batch log beside its per-epoch log): the longer holds
# k times the shorter's rows (k >= 2, the same every epoch), and each of the shorter's losses is the
# mean of its k batch losses within this share of its size (or the half unit of the decimals it
# prints, when that is larger): a float32 sum of a few hundred losses is off by about 1e-6 of it, and
# two runs' losses do not agree to 0.1% on five epochs or more.
MEANS_RELATIVE_SLACK = 1e-3
BINARY_PROBE_BYTES = 64 * 1024
TEXT_SUFFIXES = {".log", ".txt", ".out", ".err", ".stdout", ".csv", ".tsv", ".json", ".jsonl", ".ndjson", ""}
MAP_FILE = "run_diagnosis.map.yaml"
GENERIC_STEMS = {
    "main",
    "log",
    "logs",
    "train",
    "training",
    "stdout",
    "output",
    "out",
    "nohup",
    "run",
    "metrics",
}
MIN_TRAIN_ROWS = 2
# fewer training rows than this, and the inference rests on little evidence
FEW_ROWS = 10
# an epoch counter is a per-epoch log when its value advances on most rows (not repeated per batch)
EPOCH_ADVANCE_SHARE = 0.9
# a counter that changes on fewer than this share of consecutive rows stays on most of them: beside
# one that moves, it is an outer count (passes over the data), never the step (a step moves every row)
STILL_COUNTER_SHARE = 0.5
# an outer count whose value never changes while the inner counter advances, and that advances at
# more than half of the inner counter's restarts, holds it: the other restarts re-enter a pass (a
# resume that appends to the same file starts the pass again under the same outer value)
OUTER_ADVANCE_SHARE = 0.5
# a step counter's cycle: each reset returns to the first value and each cycle reaches the
# same maximum within this share of it
CYCLE_TOLERANCE = 0.02
ENCODINGS = ("gb18030", "cp1252")
CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))
NAMES_SHOWN = 12
REPEATED = "identical record repeated (several ranks or a duplicated line)"
# a last row's ETA that leaves fewer steps than this is a finished run's rounding, not a plan
ETA_MIN_STEPS_LEFT = 2
# identical records in a row are a second writer's copies (dropped) when at least this share of
# the records is repeated: a process per GPU writing every line repeats every record; a lower
# share is a few lines logged twice, a defect of the log that the checks report
REPEATED_WRITERS_SHARE = 0.5


# --------------------------------------------------------------------------- reading the file


@dataclass
class Parsed:
    """A file's records and how it was read."""

    path: Path
    kind: str  # console | csv | tsv | json | jsonl
    records: list[Record]
    skipped: Skipped
    n_lines: int
    markdown: bool = False
    ends_with_newline: bool = True
    last_line: int = 0
    notes: list[str] = field(default_factory=list)


def _binary_reason(sample: bytes) -> str | None:
    control = len(sample) - len(sample.translate(None, CONTROL_BYTES))
    if control > len(sample) * 0.01:
        return f"{control} control bytes in the first {len(sample)} bytes"
    return None


def _decode(raw: bytes, notes: list[str]) -> str:
    """UTF-8 (a few bad bytes replaced), else the first of GB18030 / Windows-1252 that decodes
    every byte (a console of a Chinese or Western Windows machine), else UTF-8 with replacements."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    elif raw.startswith(UTF16_BOMS):
        return raw.decode("utf-16", errors="replace")
    text = raw.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if bad <= max(16, len(text) // 1000):
        return text
    for encoding in ENCODINGS:
        try:
            decoded = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        notes.append(f"not UTF-8: read as {encoding}")
        return decoded
    return text


def read_lines(
    path: Path, limit: int | None = None
) -> tuple[list[tuple[int, str]], bool, Skipped, list[str]]:
    """(line number, text) of a text file: NUL runs removed, ANSI codes removed, a carriage-
    return redraw reduced to its last state; lines with undecodable bytes counted."""
    try:
        with path.open("rb") as handle:
            raw = handle.read() if limit is None else _head(handle, limit)
    except OSError as error:
        raise RunImportError(f"{path}: cannot be read ({error.strerror or error})") from error
    skipped = Skipped()
    notes: list[str] = []
    utf16 = raw.startswith(UTF16_BOMS)
    nuls = 0 if utf16 else raw.count(b"\x00")
    if nuls:
        raw = raw.replace(b"\x00", b"")
        notes.append(f"{nuls} NUL bytes removed (a log truncated and written to again leaves them)")
    reason = None if utf16 else _binary_reason(raw[:BINARY_PROBE_BYTES])
    if reason is not None:
        raise RunImportError(f"{path}: binary data, not a text log ({reason})")
    text = ANSI_ESCAPE.sub("", _decode(raw, notes))
    ends = text.endswith("\n") or limit is not None
    lines: list[tuple[int, str]] = []
    undecodable = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if "\r" in line:
            superseded, line = redraw_states(line, "\r")
            for part in superseded:
                skipped.add("progress redraw (carriage return)", number, part)
        undecodable += "\ufffd" in line
        lines.append((number, line))
    if lines and not lines[-1][1]:
        lines.pop()
    if undecodable:
        notes.append(f"{undecodable} lines hold bytes that are not UTF-8 (replaced; the lines are read)")
    return lines, ends, skipped, notes


def redraw_states(line: AnyStr, carriage_return: AnyStr) -> tuple[list[AnyStr], AnyStr]:
    """A line's carriage-return redraws (a progress bar drawn again in place): the states a later one
    superseded, and the last non-blank state, the one the line shows (empty when all are blank)."""
    states = [part for part in line.split(carriage_return) if part.strip()]
    return states[:-1], (states[-1] if states else line[:0])


def _head(handle: io.BufferedReader, limit: int) -> bytes:
    """The first `limit` bytes of a file once each line's carriage-return redraws are reduced to its
    last state (redraw_states, as read_lines reduces them), from at most HEAD_READ_FACTOR x limit
    bytes read; a file without redraws (or in UTF-16, whose line ends are two bytes) gives its first
    `limit` bytes."""
    kept: list[bytes] = []
    size, budget = 0, HEAD_READ_FACTOR * limit
    utf16 = handle.peek(2)[:2] in UTF16_BOMS
    while size < limit and budget > 0:
        line = handle.read(budget) if utf16 else handle.readline(budget)
        if not line:
            break
        budget -= len(line)
        body = line.rstrip(b"\r\n")
        if not utf16 and b"\r" in body:
            line = redraw_states(body, b"\r")[1] + line[len(body) :]
        kept.append(line)
        size += len(line)
    return b"".join(kept)[:limit]


def parse_file(path: Path, limit: int | None = None) -> Parsed:
    """The records of one file, read as the shape its content has."""
    lines, ends, skipped, notes = read_lines(path, limit)
    nonblank = [text for _, text in lines if text.strip()]
    stem = path.stem
    kind, records = "console", None
    whole = "\n".join(text for _, text in lines).strip()
    if whole[:1] in "[{" and (limit is None or len(whole) < limit):
        document = literal(whole)
        if document is not None:
            found = json_records(document, stem)
            kind = "json"
            if found is None:
                notes.append("a JSON document of another shape")
                return Parsed(path, kind, [], skipped, len(lines), notes=notes)
            records = found
            if isinstance(document, dict) and (wrapped := wrapped_log(document)) is not None:
                notes.append(
                    f"the log is the list under {wrapped[0]!r} (one object a row); the document's other "
                    "keys, a summary, are not rows"
                )
    if records is None and nonblank and (lists := named_lists(nonblank)) is not None:
        kind, records = "json", json_records(lists, stem)
        notes.append("one printed list a line ('name: [values]'): the position in the lists is the counter")
    if records is None and nonblank and _mostly_json_objects(nonblank):
        kind, records = "jsonl", jsonl_records(lines, skipped)
    if records is None and nonblank and not looks_like_markdown(nonblank):
        delimiter = sniff_delimiter(nonblank)
        table = table_records(lines, delimiter, stem, skipped) if delimiter else None
        if table is not None:
            kind, records = ("tsv" if delimiter == "\t" else "csv"), table.records
            if delimiter not in COMMON_DELIMITERS:
                notes.append(f"a table delimited by {delimiter!r} (every line holds it as often)")
            if table.clock_left_out:
                notes.append(
                    "every row opens with a date and time: when it was written, not read as a number"
                )
            if table.counted_by_first_column:
                notes.append(f"no header row: the value column is named after the file ({stem!r})")
            elif table.named_by_file:
                notes.append(
                    f"no header row and a first column of fractions (no counter): it is named after the file "
                    f"({stem!r}), the second column is left unnamed, and the rows are numbered in file order"
                )
        else:
            aligned = aligned_lines(lines)
            table = table_records(aligned, "\t", stem, skipped) if aligned else None
            if table is not None:
                kind, records = "aligned", table.records
                notes.append("a table aligned by spaces: its first line names the columns")
            else:
                printed = console_table(lines, skipped_table := Skipped())
                table = table_records(printed, "\t", stem, skipped_table) if printed else None
                if table is not None:
                    kind, records = "aligned", table.records
                    skipped.merge(skipped_table)
                    notes.append(
                        f"a table the console prints between its other lines: {' '.join(table.header)!r} "
                        "names its columns"
                    )
    markdown = False
    if records is None:
        markdown = looks_like_markdown(nonblank)
        records = console_records(lines, skipped)
    last = lines[-1][0] if lines else 0
    return Parsed(path, kind, records, skipped, len(lines), markdown, ends, last, notes)


def _mostly_json_objects(lines: list[str]) -> bool:
    head = lines[:20]
    objects = sum(1 for line in head if line.lstrip().startswith("{") and isinstance(literal(line), dict))
    return objects >= max(2, 0.6 * len(head))


# --------------------------------------------------------------------------- names


def _named(record: Record) -> dict[str, tuple[float, str | None]]:
    """The record's metrics under the names the resolver reads: a split word written outside
    the names goes in front of names that state none ('valid' + 'loss' -> 'validation loss')."""
    split = record.split
    if split is None:
        for counter in record.counters:
            split = meaning(counter).split
            if split:
                break
    if split is None:
        return record.metrics
    named = {}
    for name, value in record.metrics.items():
        named[name if meaning(name).split else f"{split} {name}"] = value
    return named


# from 2**24 on a float32 has no fraction left: whole values there say nothing about a count
FLOAT32_WHOLE_FROM = 2.0**24


def _logged_losses(
    records: list[Record], on_lines: Counter[str], mapped: set[str]
) -> dict[str, list[tuple[float, str | None]]]:
    """The (value, unit) pairs logged under each name the resolver reads as a loss and no
    override maps: what _whole_number_losses and _timed_losses judge."""
    return {
        name: [r.named[name] for r in records if name in r.named]
        for name in on_lines
        if name not in mapped and meaning(name).quantity == "loss"
    }


def _whole_number_losses(logged: dict[str, list[tuple[float, str | None]]]) -> list[str]:
    """Names read as a loss whose values are all whole numbers (with at least two different
    ones): token or example counts, not a mean loss. Not when every value is at least
    FLOAT32_WHOLE_FROM: a float32 loss that large (a mean squared error of unscaled prices,
    6.1e11) prints whole whatever it measures."""
    found = []
    for name, pairs in logged.items():
        values = {value for value, _ in pairs}
        if (
            len(values) > 1
            and all(math.isfinite(v) and float(v).is_integer() for v in values)
            and not all(abs(v) >= FLOAT32_WHOLE_FROM for v in values)
        ):
            found.append(name)
    return found


def _timed_losses(logged: dict[str, list[tuple[float, str | None]]]) -> list[str]:
    """Names read as a loss whose every value is written with a time unit ('Cost: 715.7 sec'):
    what a pass cost in time, not a loss."""
    return [name for name, pairs in logged.items() if all(unit in TIME_UNITS.values() for _, unit in pairs)]


def _same_term(name: str, candidates: list[str]) -> str | None:
    """The candidate named as ``name`` but for its split words ('val/cls_loss' for 'train/cls_loss')."""
    words = [w for w in name_tokens(name) if not metric_names.is_split_word(w)]
    for candidate in candidates:
        if [w for w in name_tokens(candidate) if not metric_names.is_split_word(w)] == words:
            return candidate
    return None


# a bare split name is a loss only when its series falls: its last rows' median is below its first rows'
# (an accuracy named by its split alone rises); this many rows at each end
BARE_SPLIT_END_ROWS = 3


# words that say what kind of file a name comes from, not what it measures: a headerless table named
# after its file ('train_log.txt', 'val_history.csv') is named by its split alone
FILE_KIND_WORDS = frozenset(
    {"log", "logs", "history", "hist", "record", "records", "file", "output", "results"}
)


def _bare_split_losses(records: list[Record], on_lines: Counter[str]) -> dict[str, str]:
    """Field -> name for a file whose numbers are named by a split word alone ('train', 'val'; a
    headerless table named after its file, 'train_log', with a file-kind word beside the split):
    when the training split's series falls over the run (a loss, not an accuracy), it is the
    training loss and a validation (or else test) split's the held-out loss. Empty otherwise."""
    by_split: dict[str, str] = {}
    for name in on_lines:
        split = split_word(name)
        words = [w for w in name_tokens(name) if w.lower() not in FILE_KIND_WORDS]
        if split and len(words) == 1 and not is_counter(name):
            by_split.setdefault(split, name)
    train = by_split.get("train")
    if train is None:
        return {}
    values = [v for r in records if (pair := r.named.get(train)) is not None and math.isfinite(v := pair[0])]
    if len(values) < 2 * BARE_SPLIT_END_ROWS or min(values) < 0:
        return {}
    if statistics.median(values[-BARE_SPLIT_END_ROWS:]) >= statistics.median(values[:BARE_SPLIT_END_ROWS]):
        return {}
    chosen = {"loss": train}
    held_out = by_split.get("validation") or by_split.get("test")
    if held_out:
        chosen["val_loss"] = held_out
    return chosen


def _choose(
    field_name: str,
    assignment: metric_names.Assignment,
    on_lines: Counter[str],
    doubts: list[str],
    zeros: frozenset[str] = frozenset(),
) -> str | None:
    """The source name of a field: the resolver's choice (among equals, the name on more lines);
    with no eligible name, a component of the quantity stands in (named in doubts), not one that
    is exactly 0 on every row (``zeros``: a term that never engaged, as a detector's box loss on
    images without a labelled object, says nothing of the training) while another is not."""
    chosen = assignment.columns.get(field_name)
    tied = assignment.ambiguous.get(field_name)
    if tied and field_name not in assignment.overridden:
        chosen = max(tied, key=lambda n: (on_lines[n], -tied.index(n)))
        doubts.append(f"two candidate {field_name} names: {', '.join(tied)} (used {chosen!r}, on more lines)")
    if chosen in zeros and field_name not in assignment.overridden:
        rank = assignment.meanings[chosen].rank
        others = [
            n
            for n in assignment.candidates.get(field_name, [])
            if n not in zeros and assignment.meanings[n].rank == rank
        ]
        if others:
            doubts.append(
                f"{chosen!r} is exactly 0 on every row (a term that never engaged): {others[0]!r} stands in"
            )
            chosen = others[0]
    if chosen is None:
        parts = [n for n in assignment.candidates.get(field_name, []) if assignment.meanings[n].rank == 2]
        parts = [n for n in parts if n not in zeros] or parts
        if parts:
            # a component named a loss ('vf_loss') before one named by its term alone ('kl', which a
            # PPO or distillation log prints as a diagnostic beside its losses), then the fuller series,
            # then an actor-critic's value side ('value_loss' before 'policy_loss': metric_names._value_side)
            chosen = max(
                parts,
                key=lambda n: (
                    metric_names.says_loss(n),
                    on_lines[n],
                    metric_names.is_value_side(n),
                    -parts.index(n),
                ),
            )
            doubts.append(
                f"no total {field_name} is logged: {chosen!r}, one of its components "
                f"({', '.join(parts)}), stands in for it"
            )
    return chosen


# --------------------------------------------------------------------------- counters


@dataclass
class Counting:
    """How a layout's rows are numbered."""

    kind: str  # step | epoch | composite | record | index
    name: str | None
    detail: str
    steps: list[int]
    total: float | None = None
    map_record: Callable[[Record], int | None] | None = None  # a step for another layout's record
    steps_per_epoch: int | None = None  # rows an epoch, when an epoch counter groups the rows
    epochs_logged: int | None = None  # epochs the rows reach (begun), when an epoch counter numbers them
    # the counter's first value repeated on consecutive rows is a launch that ended on its first row
    # and a new one (_relaunched_epochs): a restart, as a counter that goes back is
    repeats_are_launches: bool = False


# a name the chosen loss is continued under must carry it on this many lines at least: one line
# under another name after the series is a summary ("final training loss: 0.23"), not a series
RENAMED_MIN_LINES = 2


def _renamed_losses(
    records: list[Record], loss: str, assignment: metric_names.Assignment, notes: list[str]
) -> None:
    """A training loss printed under another name on a stretch of the log of its own, wholly after
    (or before) the chosen name's lines and never on a line with it, whose counter starts below where
    the earlier stretch's ended, is the same series renamed by an edited script between launches
    appended to one file ('(75000 100%) 1.5692', then '(5000 50%) training loss = 3.5225'): its records
    carry it under the chosen name, so the counter's going back between them is seen (run_restart). A
    candidate of the same rank only (no component of a sum); a closing summary ('train_loss' at the
    last epoch) does not go back and stays apart."""
    rank = assignment.meanings[loss].rank
    for other in assignment.candidates.get("loss", []):
        if other == loss or assignment.meanings[other].rank != rank:
            continue
        chosen = [r for r in records if loss in r.named]
        carrying = [r for r in records if other in r.named]
        lines = [r.line for r in carrying]
        if len(lines) < RENAMED_MIN_LINES or not chosen or any(loss in r.named for r in carrying):
            continue
        if min(lines) > chosen[-1].line or max(lines) < chosen[0].line:
            earlier, later = (chosen, carrying) if min(lines) > chosen[-1].line else (carrying, chosen)
            # a new launch: the later stretch's counter starts below where the earlier one ended (a run's
            # closing summary, "train_loss" at the last epoch, does not go back)
            shared = earlier[-1].counters.keys() & later[0].counters.keys()
            if not any(later[0].counters[c] < earlier[-1].counters[c] for c in shared):
                continue
            for record in carrying:
                record.named[loss] = record.named.pop(other)
            notes.append(
                f"{other!r} on lines {min(lines)}-{max(lines)}, a launch of its own "
                f"{'after' if later is carrying else 'before'} the {loss!r} lines, its counter starting "
                "over: the same training loss under another name (a script edited between launches), "
                f"read as {loss!r}"
            )


def _value(record: Record, name: str) -> float | None:
    return record.counters.get(name)


def _relaunched_epochs(values: list[float | None]) -> bool:
    """One row an epoch in a file that holds several launches: the counter goes back to its first
    value at least once (a launch appended to the file, starting over), and the only value it
    repeats on consecutive rows is that first one (a launch that ended after its first epoch, then
    the next). An epoch logged on several rows repeats its other values too ('epoch:1' on every
    batch of epoch 1), a fractional or missing value is no such counter."""
    if not values or any(v is None or not float(v).is_integer() for v in values):
        return False
    counts = [float(v or 0) for v in values]
    start, back = counts[0], False
    for before, after in itertools.pairwise(counts):
        if after == before and after != start:
            return False
        if after < before:
            if after != start:
                return False
            back = True
    return back


def _advancing_share(records: list[Record], name: str) -> float:
    """The share of consecutive rows on which counter `name` changes (1.0 for a step counter)."""
    values = [_value(r, name) for r in records]
    pairs = list(itertools.pairwise(values))
    return sum(a != b for a, b in pairs) / len(pairs) if pairs else 1.0


def _first_total(records: list[Record], name: str) -> float | None:
    """The total counter `name` counts to ('step:16/652' -> 652), from the first row that prints one."""
    return next((r.totals[name] for r in records if name in r.totals), None)


def _drops(values: list[float]) -> list[int]:
    return [i for i in range(1, len(values)) if values[i] < values[i - 1]]


def _cycle_period(values: list[float], drops: list[int], total: float | None) -> float | None:
    """Steps per cycle when the counter runs the same cycle again and again (an inner count)."""
    if not drops:
        return None
    start = values[0]
    starts = [values[i] for i in drops]
    peaks = [values[i - 1] for i in drops]
    interval = _interval(values)
    if total and all(p >= 0.9 * (total - 1) - 1 for p in peaks):
        # every drop follows a pass that reached its total (a tqdm bar's N/M at M): the next pass,
        # wherever its first kept state lands (a console capture of a redrawn bar keeps a few states
        # of each pass, '12/1541' or '2/1541'; the log may open at the end of the first pass)
        return total
    if any(abs(s - start) > max(2 * interval, 0.01 * max(peaks)) for s in starts):
        return None
    if len(drops) >= 2 and max(peaks) - min(peaks) <= CYCLE_TOLERANCE * max(peaks):
        return max(peaks) + interval - start
    return None


def _count(records: list[Record], step_override: str | None) -> Counting:
    """The counter of the training layout and each row's step (see the module docstring)."""
    n = len(records)
    present = Counter(name for r in records for name in r.counters)
    names = [name for name, k in present.items() if k >= 0.9 * n]
    if step_override and step_override in present:
        names = [step_override]
    steps_like = [c for c in names if c not in ("index", ROW_COUNTER) and counter_kind(c) == "step"]
    epochs_like = [c for c in names if counter_kind(c) == "epoch"]
    epoch = epochs_like[0] if epochs_like else None
    if epoch is None and len(steps_like) > 1:
        # two counters where one stays on most rows while another moves ('iteration:1 step:16/652':
        # the iteration counts passes over the data): the still one is the outer count, an epoch
        shares = {c: _advancing_share(records, c) for c in steps_like}
        moving = [c for c in steps_like if shares[c] >= EPOCH_ADVANCE_SHARE]
        still = [c for c in steps_like if shares[c] < STILL_COUNTER_SHARE]
        if moving and still:
            epoch, steps_like = still[0], moving
    if steps_like:
        name = min(
            steps_like, key=lambda c: (len(_drops([_value(r, c) or 0 for r in records])), names.index(c))
        )
        if epoch is None:
            epoch = _unnamed_outer(records, name)
        return _step_counting(records, name, epoch)
    if epoch is not None and all(r.inner is not None for r in records):
        return _inner_counting(records, epoch)
    if epoch is not None:
        values = [_value(r, epoch) for r in records]
        whole = all(v is not None and float(v).is_integer() for v in values)
        advancing = sum(1 for a, b in itertools.pairwise(values) if b != a)
        relaunched = _relaunched_epochs(values)
        if whole and (n == 1 or advancing >= EPOCH_ADVANCE_SHARE * (n - 1) or relaunched):
            steps = [int(v or 0) for v in values]
            total = records[0].totals.get(epoch)
            return Counting(
                "epoch",
                epoch,
                f"{epoch!r}: one row an epoch" + (", in launches appended to one file" if relaunched else ""),
                steps,
                total,
                map_record=_int_counter(epoch),
                repeats_are_launches=relaunched,
            )
        why = "fractional" if not whole else "repeated on consecutive lines"
        counting = _record_counting(records, f"{epoch!r} is {why}: rows numbered in file order")
        counting.epochs_logged = _epochs_begun([v for v in values if v is not None])
        # a whole epoch repeated on its rows, or a fractional one (HF's 'epoch': 0.43) whose whole
        # part does: the rows of each epoch
        counting.steps_per_epoch = _rows_per_epoch(
            values
            if whole
            else [None if v is None or not math.isfinite(v) else float(math.floor(v)) for v in values]
        )
        planned = _first_total(records, epoch)
        if whole and planned and counting.steps_per_epoch:
            # 'Epoch [1/50]' on every row of an epoch: the plan is 50 epochs of that many rows
            counting.total = planned * counting.steps_per_epoch
            counting.detail += (
                f"; {epoch!r} counts to {planned:g}: planned {planned:g} epochs of "
                f"{counting.steps_per_epoch} rows = {counting.total:g} rows"
            )
        return counting
    for name in (ROW_COUNTER, "index"):
        if name in names:
            steps = [int(_value(r, name) or 0) for r in records]
            what = "the first column (no header)" if name == ROW_COUNTER else "the position in the arrays"
            return Counting(
                "index",
                name,
                f"{what}: no step or epoch is named",
                steps,
                map_record=_int_counter(name),
            )
    return _record_counting(records, "no counter on the lines: rows numbered in file order")


def _holds_inner(outer: list[float | None], inner: list[float]) -> bool:
    """Whether an outer count holds an inner counter: it never changes while the inner one advances,
    and it advances at more than OUTER_ADVANCE_SHARE of the inner counter's restarts."""
    drops = _drops(inner)
    if not drops or any(v is None for v in outer):
        return False
    starts = set(drops)
    still = all(outer[i] == outer[i - 1] for i in range(1, len(inner)) if i not in starts)
    advanced = sum(1 for i in drops if (outer[i] or 0) > (outer[i - 1] or 0))
    return still and advanced > OUTER_ADVANCE_SHARE * len(drops)


def _unnamed_outer(records: list[Record], inner: str) -> str | None:
    """A column no word names ('e' beside 'batch' and 'loss') that is an outer count of the inner
    counter (_holds_inner) and holds whole numbers only: it is moved to the record's counters and
    counted as an epoch."""
    values = [_value(r, inner) or 0.0 for r in records]
    if not _drops(values):
        return None
    for name in records[0].metrics:
        if meaning(name).quantity is not None:
            continue
        outer = [r.metrics[name][0] if name in r.metrics else None for r in records]
        whole = all(v is not None and math.isfinite(v) and float(v).is_integer() for v in outer)
        if whole and len(set(outer)) > 1 and _holds_inner(outer, values):
            for record in records:
                record.counters[name] = record.metrics.pop(name)[0]
                record.named.pop(name, None)
            return name
    return None


def _rows_per_epoch(values: list[float | None]) -> int | None:
    """The median number of rows of a whole epoch, when a whole-number epoch counter repeats on the
    rows of each epoch and advances by one (the last epoch, maybe cut short, is not counted); None
    with fewer than two whole epochs or a counter that goes back or skips."""
    runs = [(value, len(list(group))) for value, group in itertools.groupby(values)]
    if any(b[0] is None or a[0] is None or b[0] != a[0] + 1 for a, b in itertools.pairwise(runs)):
        return None
    whole = sorted(length for _, length in runs[:-1])
    return whole[len(whole) // 2] if len(whole) >= 2 else None


def _int(value: float | None) -> int | None:
    return None if value is None or not math.isfinite(value) else int(value)


def _int_counter(name: str) -> Callable[[Record], int | None]:
    """A record's counter `name` as a whole step (None when absent or not finite)."""
    return lambda record: _int(_value(record, name))


def _record_counting(records: list[Record], detail: str) -> Counting:
    return Counting("record", None, detail, list(range(1, len(records) + 1)))


def unrounded(records: list[Record], name: str, values: list[float]) -> list[float] | None:
    """The exact counts of a counter printed abbreviated on some rows ('step:1K' three rows running
    for 1000, 1200, 1400): the rows are logged at a regular interval (the interval of the rows it
    prints in full, when two or more follow each other; else the one its first and last rows
    span), so row i is at first + i x interval; accepted when every printed value is within its
    rounding (Record.rounding) of that, else None (an irregular log keeps its printed values)."""
    n = len(values)
    if n < 2 or not any(name in r.rounding for r in records):
        return None
    exact = [
        values[i + 1] - values[i]
        for i in range(n - 1)
        if name not in records[i].rounding and name not in records[i + 1].rounding
    ]
    interval = statistics.median(exact) if exact else (values[-1] - values[0]) / (n - 1)
    if interval <= 0:
        return None
    full = [i for i in range(n) if name not in records[i].rounding]
    first = values[full[0]] - full[0] * interval if full else values[0]
    fitted = [first + i * interval for i in range(n)]
    slack = ROUNDED_COUNTER_SLACK * interval
    if any(
        abs(f - v) > records[i].rounding.get(name, 0.0) + slack
        for i, (f, v) in enumerate(zip(fitted, values, strict=True))
    ):
        return None
    return [float(round(f)) for f in fitted]


def _step_counting(records: list[Record], name: str, epoch: str | None) -> Counting:
    values = [_value(r, name) or 0.0 for r in records]
    exact = unrounded(records, name, values)
    detail = f"{name!r}"
    if exact is not None:
        abbreviated = sum(1 for r in records if name in r.rounding)
        detail += (
            f" (printed abbreviated on {abbreviated} rows, '2K' standing for 1,500 to 2,500: read at the "
            f"rows' regular interval of {exact[1] - exact[0]:g})"
        )
        values = exact
    total = _first_total(records, name)
    drops = _drops(values)
    plain = Counting("step", name, detail, [int(v) for v in values], total, map_record=_int_counter(name))
    # a step counter that never moves beside an epoch that does ('epoch:3 iter:0/18' on the one
    # line an epoch prints): each row starts the counter's cycle again
    frozen = epoch is not None and len(values) > 1 and len(set(values)) == 1
    if frozen:
        drops = list(range(1, len(values)))
    if not drops:
        return plain
    if epoch is not None:
        epochs = [_value(r, epoch) for r in records]
        advanced = [i for i in drops if (epochs[i] or 0) > (epochs[i - 1] or 0)]
        if all(e is not None for e in epochs) and (
            len(advanced) >= EPOCH_ADVANCE_SHARE * len(drops) or _holds_inner(epochs, values)
        ):
            period = _positions(total if total else _cycle_length(values), values)
            first = min(e for e in epochs if e is not None)
            steps = [int(((e or 0) - first) * period + v) for e, v in zip(epochs, values, strict=True)]
            detail = f"{name!r} restarts each {epoch!r}: step = ({epoch} - {first:g}) x {period:g} + {name}"

            def mapped(r: Record) -> int | None:
                e, v = _value(r, epoch), _value(r, name)
                return None if e is None or v is None else int((e - first) * period + v)

            counting = Counting("composite", name, detail, steps, None, map_record=mapped)
            counting.epochs_logged = _epochs_begun([e for e in epochs if e is not None])
            return counting
    if frozen:
        return plain
    cycle_length = _cycle_period(values, drops, total)
    if cycle_length:
        # a bar that shows both 0/M and M/M (tqdm: 0 before the pass's first update, whose postfix already
        # carries that batch's values) puts a pass's 0 where the pass before it ended: it is its first batch
        counted_to_total = cycle_length == total  # a cycle the counter's /M states, not one inferred
        first_batch = 1 if counted_to_total and min(values) == 0 and max(values) >= cycle_length else 0
        steps, cycle = [], 0
        for i, v in enumerate(values):
            # a pass's end state after the end state of the pass before (no state of the pass between
            # them kept) is the next pass too; the same state printed twice (the same values) is not
            again = (
                counted_to_total
                and i > 0
                and v >= cycle_length
                and values[i - 1] >= cycle_length
                and records[i].metrics != records[i - 1].metrics
            )
            cycle += i in drops or again
            # (unless the pass's '1/M' follows: then its '0/M' shows the values before it, and keeps 0)
            before_one = i + 1 < len(values) and values[i + 1] == 1
            steps.append(int(cycle * cycle_length + (v or (0 if before_one else first_batch))))
        detail = (
            f"{name!r} runs the same cycle of {cycle_length:g} again ({cycle + 1} cycles): "
            f"step = cycle x {cycle_length:g} + {name}"
        )
        return Counting("composite", name, detail, steps, None)
    return plain


def _positions(period: float, values: Sequence[float]) -> float:
    """The positions an epoch's inner counter takes: its period, or one more when it counts from 0 and
    reaches the period (`Step 000/335` .. `Step 335/335`: 336 rows an epoch). Counted as `period`, the
    next epoch's 0 would land on this one's last step, and every epoch boundary would read as a
    step logged twice (a resume)."""
    return max(values) + 1 if values and min(values) == 0 and max(values) >= period else period


def _cycle_length(values: list[float]) -> float:
    """The length of an inner counter's cycle with no /M: its logging interval past the largest value (the
    first value being one interval in: 9, 19, .. 99 or 10, 20, .. 100 of 100). A cycle is never shorter than
    its largest value: when the interval says so (batches 49 and 74 of each epoch, the epoch's last batch
    logged off the every-50 interval), the largest value is the cycle's last, counted from 0 (75 long),
    or from 1 when the counter starts at 1."""
    by_interval = max(values) + _interval(values) - values[0]
    if by_interval >= max(values):
        return by_interval
    return max(values) + (0 if min(values) == 1 else 1)


def _interval(values: list[float]) -> float:
    gaps = [b - a for a, b in itertools.pairwise(values) if b > a]
    return min(gaps) if gaps else 1.0


def _inner_counting(records: list[Record], epoch: str) -> Counting:
    """An epoch counter with an unnamed inner N/M (``Epoch: [3][ 10/44]``): step = epoch x M + N."""
    totals = [r.inner[1] for r in records if r.inner and r.inner[1]]
    period = max(totals) if totals else max((r.inner[0] for r in records if r.inner), default=0) + 1
    period = _positions(period, [r.inner[0] for r in records if r.inner])
    first = min(_value(r, epoch) or 0 for r in records)

    def mapped(r: Record) -> int | None:
        e = _value(r, epoch)
        return None if e is None or r.inner is None else int((e - first) * period + r.inner[0])

    steps = [mapped(r) or 0 for r in records]
    counting = Counting(
        "composite",
        epoch,
        f"{epoch!r} with an inner count of {period:g}: step = ({epoch} - {first:g}) x {period:g} + inner",
        steps,
        None,
        map_record=mapped,
    )
    counting.epochs_logged = _epochs_begun([v for v in (_value(r, epoch) for r in records) if v is not None])
    return counting


def _epochs_begun(epochs: list[float]) -> int | None:
    """How many epochs a whole-number epoch counter (from its first value) or a fractional one
    (epochs completed: 2.3 is in the third) reaches; None without finite values."""
    finite = [e for e in epochs if math.isfinite(e)]
    if not finite:
        return None
    if all(float(e).is_integer() for e in finite):
        return int(max(finite) - min(finite)) + 1
    return max(1, math.ceil(max(finite)))


# --------------------------------------------------------------------------- assembling the run


@dataclass
class Layout:
    key: tuple[Any, ...]
    records: list[Record]


def _layout_key(record: Record, loss_names: set[str]) -> tuple[Any, ...]:
    return (
        record.source,
        frozenset(record.counters),
        record.inner is not None,
        record.split,
    )


def _largest(records: list[Record], name: str, loss_names: set[str]) -> tuple[list[Record], list[Layout]]:
    """The layout with most records carrying name, and the other layouts carrying it."""
    groups: dict[tuple[Any, ...], list[Record]] = {}
    for record in records:
        if name in record.named:
            groups.setdefault(_layout_key(record, loss_names), []).append(record)
    # among layouts with as many records, the one whose counters order its rows (more distinct
    # values): a layout whose counter is the same on every row ('Batch=1000' printed mid-pass beside
    # 'Pass=3 Batch=1472' at each pass's end) carries no order
    ordered = sorted(
        groups.items(),
        key=lambda item: (-len(item[1]), -len({tuple(sorted(r.counters.items())) for r in item[1]})),
    )
    if not ordered:
        return [], []
    return ordered[0][1], [Layout(k, v) for k, v in ordered[1:]]


def _kept_ranks(records: list[Record], skipped: Skipped) -> list[Record]:
    ranks = {r.rank for r in records if r.rank is not None}
    if not ranks:
        return records
    lowest = min(ranks)
    kept = []
    for record in records:
        if record.rank is not None and record.rank != lowest:
            skipped.add(f"record of another rank (rank {lowest} is read)", record.line, record.text)
        else:
            kept.append(record)
    return kept


def _deduplicated(
    records: list[Record], steps: list[int], skipped: Skipped, notes: list[str]
) -> tuple[list[Record], list[int]]:
    """Identical records in a row (same step, same values) kept once when the whole log is written
    so (several processes writing every line: at least REPEATED_WRITERS_SHARE of the records
    repeated). An isolated repeat is a glitch of the log itself (a relaunch that appended its
    first record again, a line written twice): kept, for the checks to set aside and report."""
    kept_r: list[Record] = []
    kept_s: list[int] = []
    repeats: list[Record] = []
    for record, step in zip(records, steps, strict=True):
        if kept_r and kept_s[-1] == step and kept_r[-1].named == record.named:
            repeats.append(record)
            continue
        kept_r.append(record)
        kept_s.append(step)
    if not repeats:
        return records, steps
    if len(repeats) < REPEATED_WRITERS_SHARE * len(kept_r):
        notes.append(
            f"{len(repeats)} record(s) repeat the record before them exactly (e.g. line "
            f"{repeats[0].line}), too few to be a second process writing the log: kept as logged, so the "
            "checks report the repeat"
        )
        return records, steps
    for record in repeats:
        skipped.add(REPEATED, record.line, record.text)
    return kept_r, kept_s


def _convert_loss(value: float, unit: str | None) -> float:
    if unit in (None, "nats", "s", "ms", "%") or not math.isfinite(value):
        return value
    try:
        return loss_to_nats(value, unit)
    except UnitError:
        return value


def _field_values(
    rows: list[Record], name: str | None, field_name: str, notes: list[str], terms: Sequence[str] = ()
) -> list[float | None]:
    """The values of a field's source name on each row; ``terms``: the field is logged only as the
    terms of a sum and ``name`` stands in for it: a row where another term is NaN or infinite has
    a non-finite sum, and the stand-in takes that value (YOLO's val/cls_loss = inf beside a finite
    val/box_loss is a non-finite validation loss)."""
    if name is None:
        return [None] * len(rows)
    read = meaning(name)
    values: list[float | None] = []
    carried = 0
    for record in rows:
        entry = record.named.get(name)
        if entry is None:
            values.append(None)
            continue
        value, unit = entry
        broken = next(
            (
                record.named[term][0]
                for term in terms
                if term != name and term in record.named and not math.isfinite(record.named[term][0])
            ),
            None,
        )
        if broken is not None and math.isfinite(value):
            value, unit, carried = broken, None, carried + 1
        if field_name in ("loss", "val_loss"):
            value = _convert_loss(value, read.unit if read.unit in ("bits", "perplexity") else None)
        elif field_name == "step_time_sec":
            scale = SECONDS_PER_TIME_UNIT.get(unit or read.unit or "s", 1.0)
            value = value * scale
        elif field_name == "val_accuracy":
            percent = unit == "%" or read.unit == "percent"
            value = accuracy_to_share(value, "%") if percent else value
        values.append(value)
    if field_name in ("loss", "val_loss") and read.unit in ("bits", "perplexity"):
        notes.append(f"{name!r} is in {read.unit}: converted to nats")
    if carried:
        notes.append(
            f"{field_name} <- {name!r} is non-finite on {carried} row(s) where another term of the sum is "
            "(NaN or inf): the sum, the loss, is non-finite there"
        )
    if field_name == "val_accuracy" and any(v is not None and not 0 <= v <= 1 for v in values):
        notes.append(f"{name!r} has values outside 0..1 and no % sign: val_accuracy left empty")
        return [None] * len(rows)
    return values


def load_map(path: Path) -> dict[str, str]:
    """The --map entries written beside a log: <log>.map.yaml, <stem>.map.yaml or
    run_diagnosis.map.yaml in its folder ('field: name' lines)."""
    folder = path if path.is_dir() else path.parent
    candidates = (
        []
        if path.is_dir()
        else [path.with_name(f"{path.name}.map.yaml"), path.with_name(f"{path.stem}.map.yaml")]
    )
    candidates.append(folder / MAP_FILE)
    for candidate in candidates:
        if candidate.is_file():
            try:
                document = yaml.safe_load(candidate.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError) as error:
                raise RunImportError(f"{candidate}: not readable as a map (YAML): {error}") from error
            if not isinstance(document, dict):
                raise RunImportError(
                    f"{candidate}: expected 'field: name' lines (loss: train/CrossEntropyLoss)"
                )
            try:
                return metric_names.parse_map(",".join(f"{k}={v}" for k, v in document.items()))
            except ValueError as error:
                raise RunImportError(f"{candidate}: {error}") from error
    return {}


def _refusal(path: Path, found: str) -> RunImportError:
    return RunImportError(
        f"{path}: not a training log this tool can read: {found}. If it is one, say which names are "
        "its counter and its loss: --map step=<counter>,loss=<loss name>[,val_loss=<name>] "
        f"(or the same as 'field: name' lines in {path.name}.map.yaml beside it)"
    )


def _names_found(records: list[Record]) -> str:
    counts = Counter(name for r in records for name in r.named)
    shown = ", ".join(f"{name} ({n})" for name, n in counts.most_common(NAMES_SHOWN))
    return shown or "none"


def infer(parsed: Parsed, overrides: Mapping[str, str] | None = None) -> RunData:
    """The run a parsed file holds, with the layout it was read by (RunImportError when none)."""
    path = parsed.path
    if parsed.markdown:
        n = len(parsed.records)
        raise _refusal(
            path, f"a Markdown document (headings, code blocks): its {n} log-like lines are an example"
        )
    skipped = parsed.skipped
    records = _kept_ranks(parsed.records, skipped)
    for record in records:
        record.named = _named(record)
    with_metrics = [r for r in records if r.named]
    if not with_metrics:
        raise _refusal(path, f"{parsed.n_lines} lines, none with a counter and named numbers ({parsed.kind})")
    on_lines = Counter(name for r in with_metrics for name in r.named)
    overrides = dict(overrides or {})
    step_override = overrides.pop("step", None) or overrides.pop("epoch", None)
    notes: list[str] = list(parsed.notes)
    logged = _logged_losses(with_metrics, on_lines, set(overrides.values()))
    counts = _whole_number_losses(logged)
    if counts:
        notes.append(
            f"{', '.join(repr(c) for c in counts)}: whole numbers only, a count and not a loss (a mean "
            "loss is not a whole number on every line): not read as a loss"
        )
    timed = _timed_losses(logged)
    if timed:
        notes.append(
            f"{', '.join(repr(t) for t in timed)}: every value written with a time unit, a duration "
            "and not a loss: not read as a loss"
        )
    assignable = [n for n in on_lines if n not in counts and n not in timed]
    assignment = metric_names.assign(assignable, overrides)
    doubts: list[str] = []
    # the losses exactly 0 on every row: a term that never engaged stands in for no loss
    zeros = frozenset(name for name, pairs in logged.items() if pairs and all(v == 0 for v, _ in pairs))
    loss = _choose("loss", assignment, on_lines, doubts, zeros)
    bare = _bare_split_losses(with_metrics, on_lines) if loss is None and not overrides else {}
    if bare:
        # a file that names no quantity at all, only its splits ({"epoch": 1, "train": 0.83, "val": 0.73}):
        # the number a training log records for each split is its loss
        assignment = metric_names.assign(assignable, bare)
        loss = bare["loss"]
        doubts.append(
            f"no name says what is measured: {', '.join(repr(n) for n in bare.values())}, named by their "
            "split alone and falling over the run, are read as the losses of their splits"
        )
    if loss is None:
        raise _refusal(
            path,
            f"{len(with_metrics)} lines with a counter and numbers, names {_names_found(with_metrics)}; "
            "none of them reads as a training loss",
        )
    if "loss" not in overrides:
        _renamed_losses(with_metrics, loss, assignment, notes)
    loss_names = {n for f in ("loss", "val_loss", "test_loss") for n in assignment.candidates.get(f, [])}
    train, others = _largest(with_metrics, loss, loss_names)
    counting = _count(train, step_override)
    # a column no word names that the counting read as an outer count (_unnamed_outer) is understood
    assignment.not_understood = [
        n for n in assignment.not_understood if not all(n in r.counters for r in train)
    ]
    train_steps = counting.steps
    written = len(train)
    if len(train) >= 2 and counting.kind != "record":
        train, train_steps = _deduplicated(train, train_steps, skipped, notes)
    copies = written - len(train)  # the records a second writer repeated, read once
    cut = not parsed.ends_with_newline and len(train) >= 2 and train[-1].line == parsed.last_line
    if cut and train[-1].named.keys() < train[-2].named.keys():
        skipped.add("last line cut off mid-write", train[-1].line, train[-1].text)
        train, train_steps = train[:-1], train_steps[:-1]
    if len(train) < MIN_TRAIN_ROWS:
        raise _refusal(path, f"only {len(train)} line carries a training loss ({loss!r}): not a series")
    if counting.kind == "record":
        starts = fresh_starts([(r.named.get(loss) or (None, None))[0] for r in train])
        if starts:
            train_steps = _renumbered(len(train), starts)
            counting.detail += "; numbered from 1 again where the loss started over"
            notes.append(
                f"the loss started over {len(starts)} time(s) with no counter to say so (lines "
                f"{', '.join(str(train[i].line) for i in starts)}): each time it went back to the level of "
                "its first rows and fell again at their pace, a rerun appended to the same file; the rows "
                "are numbered from 1 again there"
            )
    val_field = "val_loss"
    val = _choose("val_loss", assignment, on_lines, doubts, zeros)
    if val is not None and assignment.columns.get("loss") in zeros and loss not in zeros:
        # the training loss stands in with another term than the resolver's first: the held-out loss
        # is the same term, so that the two compare ('train/cls_loss' with 'val/cls_loss')
        val = _same_term(loss, assignment.candidates.get("val_loss", [])) or val
    if val is None and assignment.columns.get("test_loss"):
        val, val_field = assignment.columns["test_loss"], "test_loss"
        notes.append(f"the held-out loss is named a test loss ({val!r}): it is used as the validation loss")
    evals, _ = _largest(with_metrics, val, loss_names) if val else ([], [])
    eval_steps = _eval_steps(evals, train, train_steps, counting)
    shared = assignment.shared_by_most(
        "learning_rate", lambda name: [(r.named.get(name) or (None, None))[0] for r in train]
    )
    if shared:
        notes.append(
            f"learning_rate <- {shared!r}: the schedule most of the parameter groups share at every row "
            "(a group apart, as YOLO's biases warmed down from warmup_bias_lr, is not the run's)"
        )
    train_frame, interval_means, clock_resets = _train_frame(train, train_steps, assignment, loss, notes)
    eval_frame = _eval_frame(evals, eval_steps, assignment, val, notes, val_field)
    restarts = _restart_events(train, train_steps, counting)
    # an elapsed clock that went back where the counter carried on: a new process resumed the run
    # (Ultralytics' resume continues the epoch count; its results.csv 'time' starts over)
    counted = {step for step, _ in restarts}
    clock = repr(assignment.columns.get("step_time_sec"))
    events = (
        restarts
        + clock_reset_events([s for s in clock_resets if s not in counted], clock)
        + _plan_changes(train, train_steps, restarts)
        + _ending_events(train, train_steps, skipped)
        + ([written_several_times_event(train_steps[0], copies, len(train))] if copies else [])
        + term_switches(train, train_steps, [n for n in assignment.candidates.get("loss", []) if n != loss])
    )
    chosen = {"loss": loss, "val_loss": val, "val_field": val_field}
    layout = _layout(
        parsed, (train, train_steps, evals), counting, assignment, chosen, others, doubts, restarts
    )
    low = [f"low confidence: {d}" for d in layout["low_confidence"]]
    notes = [_summary_note(layout), *notes, *assignment.notes(), *low]
    if skipped.counts:
        reasons = ", ".join(f"{reason} ({n})" for reason, n in Counter(skipped.counts).most_common())
        notes.append(f"lines skipped: {reasons}; two examples of each in provenance.layout")
    config: dict[str, Any] = {"total_steps": _total(counting, train_steps)}
    if config["total_steps"] is None and counting.kind == "step":
        config["total_steps"] = _total_from_eta(train, train_steps, train_frame, notes)
    if counting.steps_per_epoch:
        config["steps_per_epoch"] = counting.steps_per_epoch
        notes.append(
            f"steps_per_epoch = {counting.steps_per_epoch}: the median number of training rows an epoch "
            "(the epoch counter repeats on the rows of each epoch; one row a step assumed)"
        )
    config.update(_zero_terms(assignment, zeros, notes))
    if counting.kind == "epoch":
        config[ROWS_ARE_KEY] = "epoch"
        notes.append(
            "a per-epoch log: rows are epochs, not steps; the checks needing steps say they could not run"
        )
    notes.append(
        "the log states no learning-rate schedule, clipping or batch size: those config values are unknown"
    )
    return RunData(
        source_format=FORMAT,
        source_path=str(path),
        train=train_frame,
        evals=eval_frame,
        events=events_frame(events),
        run_name=path.parent.name if path.stem.lower() in GENERIC_STEMS else path.stem,
        schedule={},
        config=config,
        notes=notes,
        layout=layout,
        loss_name=layout["fields"].get("loss"),
        interval_mean_times=interval_means,
        logged_names=(*assignment.meanings, *([counting.name] if counting.name else [])),
    )


# the words naming a detector's box-regression loss terms (YOLO's box and DFL, DETR's GIoU, mmdet's bbox)
LOCALISATION_TERMS = frozenset({"box", "bbox", "giou", "ciou", "diou", "iou", "dfl"})


def _zero_terms(
    assignment: metric_names.Assignment, zeros: frozenset[str], notes: list[str]
) -> dict[str, str]:
    """For each split, its box-regression loss terms (LOCALISATION_TERMS) exactly 0 on every row while
    another of its terms is not, as the config fields of ZERO_TERMS_KEYS. A box term is computed over the
    predictions matched to a labelled box, so it is 0 only where no labelled box reached the loss: a
    split without targets. A class term of 0 is a one-class detector (YOLOv5 logs cls_loss 0), and a
    split all of whose terms are 0 logs no loss at all (YOLOv9's validation): neither says so."""
    found: dict[str, str] = {}
    for field_name, key in ZERO_TERMS_KEYS.items():
        terms = [n for n in assignment.candidates.get(field_name, []) if assignment.meanings[n].term]
        zero = [n for n in terms if n in zeros and LOCALISATION_TERMS & set(name_tokens(n))]
        if zero and any(n not in zeros for n in terms):
            found[key] = ", ".join(zero)
            notes.append(
                f"{', '.join(repr(n) for n in zero)}: exactly 0 on every row while the split's other loss "
                "terms are not: no labelled box reached the loss there (a split without targets)"
            )
    return found


def _total_from_eta(
    train: list[Record], steps: list[int], frame: pd.DataFrame, notes: list[str]
) -> int | None:
    """The planned length from the last training row's ETA (detectron2's eta_seconds, mmengine's
    'eta: 1:02:03'): the time the trainer expected to go, over its time per step, is the steps it
    had left. None without an ETA in seconds or a step time on that row, or with no time left."""
    last = train[-1] if train else None
    if last is None or frame.empty:
        return None
    etas = [v for n, (v, unit) in last.named.items() if "eta" in name_tokens(n) and unit in (None, "s")]
    step_time = frame["step_time_sec"].iloc[-1]
    if not etas or not math.isfinite(etas[0]) or etas[0] <= 0 or not (step_time > 0):
        return None
    left = round(etas[0] / float(step_time))
    if left < ETA_MIN_STEPS_LEFT:
        return None
    total = steps[-1] + left
    notes.append(
        f"total_steps about {total}: the last row's ETA {etas[0]:.0f} s at {float(step_time):.3g} s a step "
        f"leaves {left} steps after step {steps[-1]} (the trainer's own estimate of its planned length)"
    )
    return total


def _total(counting: Counting, steps: list[int]) -> int | None:
    if counting.total and counting.total >= max(steps, default=0):
        return int(counting.total)
    return None


def _eval_steps(evals: list[Record], train: list[Record], steps: list[int], counting: Counting) -> list[int]:
    """Each evaluation's step: by the training counter when it carries it, else the step of
    the last training row before it in the file (the first training row's before any)."""
    if not evals:
        return []
    by_line = sorted(zip((r.line for r in train), steps, strict=True))
    result = []
    for record in evals:
        mapped = counting.map_record(record) if counting.map_record else None
        if mapped is None:
            earlier = [s for line, s in by_line if line <= record.line]
            mapped = earlier[-1] if earlier else by_line[0][1]
        result.append(mapped)
    return result


# a logged "time" that is a clock (Ultralytics' results.csv 'time': seconds since the start)
ELAPSED_MIN_RISING_SHARE = 0.9
ELAPSED_MIN_GROWTH = 3.0
ELAPSED_MIN_ROWS = 5  # fewer rows rise together by chance


# a log with no counter holds reruns appended to it (a loop or a notebook cell that opens the file
# with 'a'): the loss jumps to RELAUNCH_JUMP x its level or more, onto the level of the run's
# first rows (the run came down through it, to within RELAUNCH_LEVEL_RATIO, in its first quarter),
# stays above where it was (RELAUNCH_BACK x) for RELAUNCH_MIN_ROWS rows and for RELAUNCH_PACE_SHARE
# of the rows the first run took from that level, and over the next RELAUNCH_FALL_ROWS rows falls
# by RELAUNCH_PACE_SHARE of what the first run fell over as many rows (a fall of
# RELAUNCH_MIN_EARLY_FALL or more): a fresh start relearns at the first run's pace, where a spike
# comes back at once and a divergence stays up. Not in a loss whose median change from row to row is
# RELAUNCH_MAX_SCATTER of its level or more: there a jump to twice the level and a stretch of harder
# batches are the log's own noise, and the level alone cannot tell them from a rerun (a segmentation
# fine-tune of batch 2 whose single-batch losses scatter 0.4-3.3, 57% from row to row, is no rerun;
# the corpus's counterless logs with appended reruns are epoch means that move 0.2-2% from row to row)
RELAUNCH_JUMP = 2.0
RELAUNCH_LEVEL_RATIO = 1.25
RELAUNCH_BACK = 1.1
RELAUNCH_MIN_ROWS = 5
RELAUNCH_PACE_SHARE = 0.5
RELAUNCH_FALL_ROWS = 10
RELAUNCH_MIN_EARLY_FALL = 0.05
RELAUNCH_LEVEL_ROWS = 5  # the rows before a jump whose median is the level it jumped from
RELAUNCH_MAX_SCATTER = 0.2


def fresh_starts(losses: list[float | None]) -> list[int]:
    """The rows of a counterless loss series where a rerun starts (see RELAUNCH_JUMP)."""
    values = [v if v is not None and math.isfinite(v) and v > 0 else None for v in losses]
    present = [v for v in values if v is not None]
    changes = [abs(b - a) / ((a + b) / 2) for a, b in itertools.pairwise(present)]
    if changes and statistics.median(changes) >= RELAUNCH_MAX_SCATTER:
        return []  # a loss this noisy jumps to twice its level on its own
    starts: list[int] = []
    first = 0
    for j in range(1, len(values)):
        before = [v for v in values[max(first, j - RELAUNCH_LEVEL_ROWS) : j] if v is not None]
        value = values[j]
        if value is None or not before:
            continue
        level = statistics.median(before)
        if value >= RELAUNCH_JUMP * level and _starts_over(values, first, j, level):
            starts.append(j)
            first = j
    return starts


def _starts_over(values: list[float | None], first: int, j: int, level: float) -> bool:
    """Whether the jump at row j starts the run over (fresh_starts), the run so far from row first."""
    value = values[j]
    assert value is not None
    quarter = range(first, first + max(1, (j - first) // 4))
    # the first row the run so far came down to that level at (or started under it): in its first quarter
    matched = next(
        (i for i in quarter if (v := values[i]) is not None and v <= RELAUNCH_LEVEL_RATIO * value), None
    )
    if matched is None:
        return False
    back = RELAUNCH_BACK * level

    def rows_above(start: int, stop: int) -> int:
        count = 0
        for v in values[start:stop]:
            if v is not None and v <= back:
                break
            count += 1
        return count

    pace = rows_above(matched, j)  # the rows the first run took from that level down to where it was
    if rows_above(j, len(values)) < max(RELAUNCH_MIN_ROWS, RELAUNCH_PACE_SHARE * pace):
        return False
    rows = min(RELAUNCH_FALL_ROWS, len(values) - j, j - matched)
    if rows < RELAUNCH_MIN_ROWS:
        return False

    def fall(start: int) -> float:
        window = [v for v in values[start : start + rows] if v is not None]
        return 1 - statistics.median(window[-3:]) / statistics.median(window[:3])

    early_fall = fall(matched)
    return early_fall >= RELAUNCH_MIN_EARLY_FALL and fall(j) >= RELAUNCH_PACE_SHARE * early_fall


def _renumbered(n: int, starts: list[int]) -> list[int]:
    """Row numbers from 1, again from 1 at each fresh start."""
    steps, number, again = [], 0, set(starts)
    for i in range(n):
        number = 1 if i in again else number + 1
        steps.append(number)
    return steps


def _train_frame(
    rows: list[Record], steps: list[int], assignment: metric_names.Assignment, loss: str, notes: list[str]
) -> tuple[pd.DataFrame, bool, list[int]]:
    """The canonical train frame, whether its step times are the means over the logging intervals
    (read off a clock's differences: an elapsed-time field or the lines' timestamps), and the steps
    at which an elapsed-time field went backwards (step_times_from_elapsed's resets)."""
    data: dict[str, pd.Series] = {"step": pd.Series(steps, dtype="int64")}
    sources = {"loss": loss, **{f: assignment.columns.get(f) for f in TRAIN_COLUMNS[3:]}}
    interval_means = False
    resets: list[int] = []
    averaged = [step for row, step in zip(rows, steps, strict=True) if loss in row.nonfinite_average]
    if averaged:
        notes.append(
            f"loss <- the running average printed after {loss!r} at {len(averaged)} row(s) (steps "
            f"{averaged[0]}-{averaged[-1]}): it is not finite where the printed value is, so a non-finite "
            "loss fell in that interval (an average keeps it until the meter resets)"
        )
    for column in TRAIN_COLUMNS[1:]:
        if column == "shard_id":
            data[column] = pd.Series([None] * len(rows), dtype=object)
            continue
        if column == "step_time_sec" and sources.get(column) is None:
            values = _times_from_clock(rows, steps, notes)
            interval_means = any(v is not None for v in values)
            data[column] = metric_column(values)
            continue
        values = _field_values(rows, sources.get(column), column, notes, assignment.terms.get(column, ()))
        if column == "step_time_sec" and _is_elapsed(values):
            values, resets = step_times_from_elapsed(steps, values, notes, repr(sources.get(column)))
            interval_means = any(v is not None for v in values)
            if interval_means:
                notes.append(
                    f"step_time_sec <- {sources.get(column)!r} read as elapsed time (it only grows, "
                    f"{ELAPSED_MIN_GROWTH:g}x or more over the run): seconds per step from its differences"
                )
        data[column] = metric_column(values)
    return pd.DataFrame(data, columns=TRAIN_COLUMNS), interval_means, resets


def _is_elapsed(values: list[float | None]) -> bool:
    """A time column that is a clock, not a duration: it rises on ELAPSED_MIN_RISING_SHARE of its
    consecutive rows (a new attempt may start it over) and ends ELAPSED_MIN_GROWTH x its first
    value or more. Step durations scatter around their level; only a run that slowed smoothly
    and without noise 3x over would look like this."""
    seen = [v for v in values if v is not None and math.isfinite(v)]
    if len(seen) < ELAPSED_MIN_ROWS or seen[0] <= 0:
        return False
    rising = sum(1 for a, b in itertools.pairwise(seen) if b > a)
    return rising >= ELAPSED_MIN_RISING_SHARE * (len(seen) - 1) and seen[-1] >= ELAPSED_MIN_GROWTH * seen[0]


def _times_from_clock(rows: list[Record], steps: list[int], notes: list[str]) -> list[float | None]:
    """Seconds per step from the training lines' leading date and time, when the log logs no step
    time: the time between consecutive training lines over the steps between them (a counter that
    goes back, a new attempt, starts over). None for every row when the lines carry no date."""
    clocks = [r.clock for r in rows]
    if sum(c is not None for c in clocks) < MIN_TRAIN_ROWS:
        return [None] * len(rows)
    times, _ = step_times_from_elapsed(steps, clocks, notes, "the lines' timestamps")
    if any(t is not None for t in times):
        notes.append(
            "step_time_sec from the training lines' timestamps: the seconds between consecutive training "
            "lines over the steps between them (whatever else ran in between, an evaluation or a "
            "checkpoint, included)"
        )
    return times


def _eval_frame(
    rows: list[Record],
    steps: list[int],
    assignment: metric_names.Assignment,
    val: str | None,
    notes: list[str],
    val_field: str = "val_loss",
) -> pd.DataFrame:
    if not rows or val is None:
        return pd.DataFrame(columns=EVAL_COLUMNS)
    accuracy = assignment.columns.get("val_accuracy")
    frame = pd.DataFrame(
        {
            "step": pd.Series(steps, dtype="int64"),
            "val_loss": metric_column(
                _field_values(rows, val, "val_loss", notes, assignment.terms.get(val_field, ()))
            ),
            "val_accuracy": metric_column(_field_values(rows, accuracy, "val_accuracy", notes)),
        },
        columns=EVAL_COLUMNS,
    )
    for optional in OPTIONAL_EVAL_COLUMNS:  # a detector's mAP50, a ROC AUC: written only when logged
        score = assignment.columns.get(optional)
        if score is not None:
            frame[optional] = metric_column(_field_values(rows, score, optional, notes))
    return frame


def _ending_events(rows: list[Record], steps: list[int], skipped: Skipped) -> list[tuple[int, str]]:
    """A traceback after the last training line: the run stopped there (an exception or an
    interrupt), an event at the last logged step that names it; and a line after it saying the user
    stopped the run (a KeyboardInterrupt the script caught and reported itself)."""
    if not rows:
        return []
    last = max(r.last_line for r in rows)
    after = "after the last training line"
    endings = (
        (skipped.last_exception, f"Traceback (most recent call last) {after} ended the log"),
        (skipped.last_stop, f"training interrupted by the user {after} (a manual stop)"),
    )
    # an exception or a stop before the last training line is one the run survived (training went on)
    return [(steps[-1], f"{what}: {seen[1]}") for seen, what in endings if seen and seen[0] > last]


def _restart_events(rows: list[Record], steps: list[int], counting: Counting) -> list[tuple[int, str]]:
    events = []
    what = counting.name or "row order"
    for i in range(1, len(steps)):
        if steps[i] < steps[i - 1]:
            events.append(
                (
                    steps[i],
                    f"resuming from step {steps[i]}: the counter {what} went back from {steps[i - 1]} to "
                    f"{steps[i]} at line {rows[i].line} (a restart; both attempts kept as logged)",
                )
            )
        elif counting.repeats_are_launches and steps[i] == steps[i - 1] == steps[0]:
            events.append(
                (
                    steps[i],
                    f"resuming from step {steps[i]}: the counter {what} started over at {steps[i]} at line "
                    f"{rows[i].line}, the launch before it having ended on its first row (a restart; both "
                    "attempts kept as logged)",
                )
            )
    return events


# a counter printed abbreviated is read at its rows' regular interval when every printed value lies
# within its rounding of that; this share of the interval more allows the interval's own rounding
ROUNDED_COUNTER_SLACK = 0.01
# a logged term of the loss switched on or off when it held one state (exactly 0, or not) on this
# many logged rows before a row and the other state on as many from it: a hinge or margin term that
# is 0 on a few batches by chance changes nothing, a term a schedule turns on at an epoch stays on
TERM_STATE_MIN_ROWS = 5


def term_switches(rows: list[Record], steps: list[int], terms: Sequence[str]) -> list[tuple[int, str]]:
    """The steps where a logged term of the training loss (``terms``: the other names the resolver
    reads as the training loss, its components) switched on or off: exactly 0 on the
    TERM_STATE_MIN_ROWS rows before and not 0 on as many from it, or the reverse. A term a schedule
    adds at an epoch (a second stage's loss, an auxiliary loss from epoch N) moves the total to
    another level by design, which the loss_spikes check must not read as a spike."""
    events: list[tuple[int, str]] = []
    for term in terms:
        logged = [
            (step, value != 0)
            for row, step in zip(rows, steps, strict=True)
            if (pair := row.named.get(term)) is not None and math.isfinite(value := pair[0])
        ]
        run = 1  # rows of the current state up to the row before i
        for i in range(1, len(logged)):
            if logged[i][1] == logged[i - 1][1]:
                run += 1
                continue
            after = logged[i : i + TERM_STATE_MIN_ROWS]
            if (
                run >= TERM_STATE_MIN_ROWS
                and len(after) == TERM_STATE_MIN_ROWS
                and all(state == logged[i][1] for _, state in after)
            ):
                events.append(loss_terms_changed_event(logged[i][0], term, logged[i][1], run))
            run = 1
    return events


def _plan_changes(
    rows: list[Record], steps: list[int], restarts: list[tuple[int, str]]
) -> list[tuple[int, str]]:
    """A new launch in the same log: the epochs a row says it counts to ('Epoch 01/50') differ from
    the previous row's ('Epoch 02/10'). One run plans its epochs once; a changed plan is a process
    started again with other settings (its rows numbered in file order, or its counter starting
    over), an event at the first row of the new plan unless a restart is already there."""
    events: list[tuple[int, str]] = []
    seen = {step for step, _ in restarts}
    planned: dict[str, float] = {}
    for row, step in zip(rows, steps, strict=True):
        for name, total in row.totals.items():
            if counter_kind(name) != "epoch":
                continue
            before = planned.get(name)
            planned[name] = total
            if before is None or before == total or step in seen:
                continue
            seen.add(step)
            count = _value(row, name)
            at = f"{count:g} of {total:g}" if count is not None else f"of {total:g}"
            events.append(
                (
                    step,
                    f"run resumed: a new launch restarted the {name!r} count at line {row.line} ({at}; the "
                    f"rows before counted to {before:g}): the planned epochs changed",
                )
            )
    return events


def _layout(
    parsed: Parsed,
    rows: tuple[list[Record], list[int], list[Record]],
    counting: Counting,
    assignment: metric_names.Assignment,
    chosen: dict[str, str | None],
    others: list[Layout],
    doubts: list[str],
    events: list[tuple[int, str]],
) -> dict[str, Any]:
    """provenance.layout: what the reader understood (see the module docstring)."""
    train, steps, evals = rows
    loss, val, field = chosen["loss"], chosen["val_loss"], chosen["val_field"]
    fields = {f: n for f, n in assignment.columns.items() if f not in ("loss", "val_loss")}
    fields["loss"] = str(loss)
    if val:
        fields["val_loss"] = val
    used = set(fields.values())
    understood = sorted(n for n, m in assignment.meanings.items() if m.understood and n not in used)
    low = list(doubts)
    if len(train) < FEW_ROWS:
        low.append(f"only {len(train)} training lines")
    if events:
        low.append(f"the counter goes back {len(events)} time(s) (restarts kept as attempts)")
    if counting.kind in ("record", "index"):
        low.append(f"no step counter: {counting.detail}")
    if counting.kind == "composite":
        low.append(f"the step is rebuilt from the counters: {counting.detail}")
    return {
        "reader": FORMAT,
        "format": parsed.kind,
        "lines": parsed.n_lines,
        "train": {
            "rows": len(train),
            "first_line": train[0].line,
            "example": train[0].text[:160],
            "counter": {"kind": counting.kind, "name": counting.name, "how": counting.detail},
            "epochs_logged": counting.epochs_logged,
            "steps": [steps[0], steps[-1]],
        },
        "eval": (
            {"rows": len(evals), "first_line": evals[0].line, "example": evals[0].text[:160], "field": field}
            if evals
            else None
        ),
        "fields": fields,
        "other_layouts": [
            {"rows": len(layout.records), "example": layout.records[0].text[:160]} for layout in others[:5]
        ],
        "not_used": understood[: NAMES_SHOWN * 2],
        "not_understood": [n for n in assignment.not_understood if n not in used][: NAMES_SHOWN * 2],
        "skipped_lines": parsed.skipped.total,
        "skipped": parsed.skipped.as_dict(),
        "confidence": "low" if low else "high",
        "low_confidence": low,
    }


def _summary_note(layout: dict[str, Any]) -> str:
    train = layout["train"]
    ev = layout["eval"]
    fields = ", ".join(f"{f} <- {n!r}" for f, n in layout["fields"].items())
    text = (
        f"inferred layout ({layout['format']}, {layout['confidence']} confidence): {train['rows']} training "
        f"rows from lines like {train['example']!r}, counter {train['counter']['how']}"
    )
    if ev:
        text += f"; {ev['rows']} evaluation rows from lines like {ev['example']!r}"
    return text + f"; {fields}; {layout['skipped_lines']} lines skipped"


# --------------------------------------------------------------------------- the importer API


def _candidates(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES and not p.name.endswith(".map.yaml")
    )


@dataclass
class SplitFamily:
    """Files of one run cut by split: one named for training, the others for a held-out split, the
    rest of their names alike (train.csv and val.csv; train_losses.csv and test_losses.csv)."""

    train: Path
    held_out: list[tuple[Path, str]]  # (file, the split word its name carries)
    passed_over: list[Path]  # other files read as logs beside them


def _split_family(readable: list[Path], unread: Sequence[Path] = ()) -> SplitFamily | None:
    """The split family among the files of a folder that each read as a log, or None: exactly one
    file whose name carries the training split, at least one whose name carries a held-out split
    (validation or test), the words of their names other than the split alike. Such files are
    one run written per split, each holding the split's numbers under the same names ('avg_loss').
    A held-out member may be one of the folder's files that does not read as a log alone (`unread`),
    when it holds numbers: a headerless table is named after its file, so `val_loss.txt` holds a
    validation loss and no training loss (beside `train_loss.txt`)."""
    by_words: dict[tuple[str, ...], list[tuple[Path, str, str]]] = {}
    for file in [*readable, *unread]:
        words = name_tokens(file.stem)
        splits = [(w, metric_names.WORDS[w].value) for w in words if metric_names.is_split_word(w)]
        if len(splits) != 1:
            continue
        rest = tuple(w for w in words if w != splits[0][0])
        by_words.setdefault(rest, []).append((file, splits[0][0], splits[0][1]))
    families: list[tuple[Path, list[tuple[Path, str]]]] = []
    for members in by_words.values():
        trains = [f for f, _, split in members if split == "train" and f in readable]
        if len(trains) != 1:
            continue  # (a held-out file is parsed only beside a training file)
        held = [
            (f, word)
            for f, word, split in members
            if split in ("validation", "test") and (f in readable or _holds_records(f))
        ]
        if held:
            families.append((trains[0], held))
    if len(families) != 1:
        return None
    train, held_out = families[0]
    named = {train, *(f for f, _ in held_out)}
    return SplitFamily(train, held_out, [f for f in readable if f not in named])


def _family_parsed(family: SplitFamily) -> Parsed:
    """The training file's records followed by each held-out file's, the latter marked with the split
    their file names (as a split word written outside the names: 'avg_loss' of test_losses.csv is
    'test avg_loss'), numbered after the training file's lines so each keeps its own rows."""
    parsed = parse_file(family.train)
    offset = parsed.n_lines
    for file, word in family.held_out:
        held = parse_file(file)
        for record in held.records:
            record.split = record.split or word
            record.line += offset
            record.last_line += offset
        parsed.records.extend(held.records)
        offset += held.n_lines
    shown = ", ".join(f"{f.name} ({word})" for f, word in family.held_out)
    parsed.notes.append(
        f"one run written per split: the training rows from {family.train.name}, the held-out ones from "
        f"{shown}, each file's numbers under its split (the names say what, the file names say which split)"
    )
    if family.passed_over:
        parsed.notes.append(
            f"also read as logs but not used: {', '.join(f.name for f in family.passed_over)} "
            "(the files written per split are the run's tables)"
        )
    return parsed


def _holds_records(path: Path) -> bool:
    """A file in which the reader finds numbered records (on its first SNIFF_BYTES)."""
    try:
        return bool(parse_file(path, SNIFF_BYTES).records)
    except (RunImportError, OSError, ValueError, RecursionError):
        return False


def _read(path: Path, limit: int | None) -> RunData | None:
    """The run a file reads as (on its first `limit` bytes), or None when it reads as no log."""
    try:
        return infer(parse_file(path, limit), load_map(path))
    except (RunImportError, OSError, ValueError, RecursionError):
        return None


def _readable(path: Path, limit: int | None) -> bool:
    return _read(path, limit) is not None


def _family_candidates(folder: Path, runs: Mapping[Path, RunData]) -> tuple[list[Path], list[Path]]:
    """The folder's files that read as a log, and the others (_split_family's arguments)."""
    return list(runs), [p for p in _candidates(folder) if p not in runs]


def _folder_runs(folder: Path, limit: int | None) -> dict[Path, RunData]:
    """The files of a folder that read as a log (on their first `limit` bytes), each with its run,
    in name order: read once, for the split family and the copies to decide on."""
    runs = {path: _read(path, limit) for path in _candidates(folder)}
    return {path: run for path, run in runs.items() if run is not None}


def _decimals(values: pd.Series) -> int:
    """The fewest decimals that write every value as it is (at most COPY_DECIMALS_MAX)."""
    for places in range(COPY_DECIMALS_MAX):
        if ((values - values.round(places)).abs() <= COPY_ROUNDING_SLACK).all():
            return places
    return COPY_DECIMALS_MAX


@dataclass
class Copies:
    """Files of one folder that each hold the same run's training losses (a table written beside the
    console that printed it, a per-epoch log beside its per-batch one): one is read, the others are
    passed over, as the note says."""

    chosen: Path
    note: str  # which file is read, and which are passed over and why


def _train_losses(runs: dict[Path, RunData]) -> list[tuple[Path, pd.Series]]:
    """Each file's training losses, as floats numbered from 0 (what _copies and _epoch_means compare)."""
    return [(path, run.train["loss"].astype(float).reset_index(drop=True)) for path, run in runs.items()]


def _copies(runs: dict[Path, RunData]) -> Copies | None:
    """The files among a folder's logs that hold one run's training losses written twice or more
    (history.csv beside the train.log that printed the same epochs), or None: every file gives the
    same number of training rows (at least COPY_MIN_ROWS) and the same losses, each file's numbers
    equal to the most precise one's rounded to the decimals that file prints. Two runs do not give
    the same losses row for row; one run's files do, whatever their layout. The most precise file is
    read (on a tie, the one with more evaluation rows, then the first by name)."""
    series = _train_losses(runs)
    if len(series) < 2:
        return None
    rows = {len(losses) for _, losses in series}
    if len(rows) != 1 or min(rows) < COPY_MIN_ROWS or any(losses.isna().any() for _, losses in series):
        return None
    places = {path: _decimals(losses) for path, losses in series}
    order = list(runs)
    finest_path, finest = max(
        series, key=lambda item: (places[item[0]], len(runs[item[0]].evals), -order.index(item[0]))
    )
    for path, losses in series:
        step = 10.0 ** -places[path]
        if ((finest.round(places[path]) - losses).abs() > step + COPY_ROUNDING_SLACK).any():
            return None
    others = [(path, places[path]) for path, _ in series if path != finest_path]
    shown = ", ".join(f"{f.name} ({decimals} decimals)" for f, decimals in others)
    note = (
        f"one run written {len(others) + 1} times: {finest_path.name} ({places[finest_path]} decimals) is "
        f"read; {shown} {'holds' if len(others) == 1 else 'hold'} the same {len(finest)} training losses "
        "rounded, passed over"
    )
    return Copies(finest_path, note)


def _epoch_means(runs: dict[Path, RunData]) -> Copies | None:
    """Two files of a folder that hold one run's training losses at two granularities (a training
    script's per-epoch losses.json beside its batch_losses.json), or None: the longer has k times
    the shorter's rows (k >= 2, at least COPY_MIN_ROWS epochs) and each of the shorter's losses is
    the mean of its k batch losses (MEANS_RELATIVE_SLACK). The per-epoch file is read, as any log of
    epochs; the per-batch one is passed over, with a note."""
    if len(runs) != 2:
        return None
    shorter, longer = sorted(_train_losses(runs), key=lambda item: len(item[1]))
    (epochs_path, epochs), (batches_path, batches) = shorter, longer
    per_epoch, left = divmod(len(batches), len(epochs)) if len(epochs) else (0, 1)
    if left or per_epoch < 2 or len(epochs) < COPY_MIN_ROWS or epochs.isna().any() or batches.isna().any():
        return None
    means = batches.groupby(batches.index // per_epoch).mean()
    slack = (epochs.abs() * MEANS_RELATIVE_SLACK).clip(lower=0.5 * 10.0 ** -_decimals(epochs))
    if ((means - epochs).abs() > slack + COPY_ROUNDING_SLACK).any():
        return None
    note = (
        f"one run written at two granularities: {epochs_path.name} ({len(epochs)} rows) is read; "
        f"{batches_path.name} holds its {len(batches)} batch losses, {per_epoch} a row, whose means are "
        "its rows: passed over"
    )
    return Copies(epochs_path, note)


def _one_run_in_files(runs: dict[Path, RunData]) -> Copies | None:
    """One run written to several files of a folder: copies of its losses, or its epochs' means."""
    return _copies(runs) or _epoch_means(runs)


def sniff(path: Path) -> bool:
    """A text file in which a training-loss series is found (on its first SNIFF_BYTES), or a
    folder holding exactly one such file."""
    try:
        if path.is_dir():
            runs = _folder_runs(path, SNIFF_BYTES)
            return (
                len(runs) == 1
                or _split_family(*_family_candidates(path, runs)) is not None
                or (_one_run_in_files(runs) is not None)
            )
        return path.is_file() and _readable(path, SNIFF_BYTES)
    except OSError:
        return False


def _not_one_log(folder: Path, readable: Sequence[Path]) -> str:
    """The error for a folder that holds no training log, or several that are not one run's (not
    one run's splits, not copies of one log): which files read as logs, and what to do."""
    looked = ", ".join(p.name for p in _candidates(folder)) or "no text files"
    found = "none" if not readable else ", ".join(p.name for p in readable)
    return (
        f"{folder}: expected one training log in this folder; read as logs: {found} (looked at: {looked}). "
        "Pass the file itself."
    )


def explain(path: Path) -> str | None:
    """Why a file is not read, for the error of a file no importer takes; for a folder, only when it
    holds several files that each read as a training log (which to diagnose is the user's choice)."""
    if path.is_dir():
        try:
            readable = list(_folder_runs(path, SNIFF_BYTES))
        except OSError:
            return None
        return _not_one_log(path, readable) if len(readable) > 1 else None
    if not path.is_file():
        return None
    try:
        infer(parse_file(path), load_map(path))
    except RunImportError as error:
        return str(error)
    except (OSError, ValueError, RecursionError) as error:
        return f"{path}: cannot be read: {error}"
    return None


def load(path: Path, overrides: Mapping[str, str] | None = None) -> RunData:
    """Read a log of any line-oriented layout (see the module docstring); ``overrides``
    (field -> name, from --map) win over the map file beside the log, which wins over inference."""
    if not path.exists():
        raise RunImportError(f"{path}: no such file or folder")
    file, family, copies = path, None, None
    if path.is_dir():
        runs = _folder_runs(path, None)
        readable = list(runs)
        family = _split_family(*_family_candidates(path, runs)) if readable else None
        copies = _one_run_in_files(runs) if family is None else None
        if copies is not None:
            readable = [copies.chosen]
        if len(readable) != 1 and family is None:
            raise RunImportError(_not_one_log(path, readable))
        file = family.train if family is not None else readable[0]
    mapping = {**load_map(file), **dict(overrides or {})}
    parsed = parse_file(file) if family is None else _family_parsed(family)
    run = infer(parsed, mapping)
    if copies is not None:
        run.notes.append(copies.note)
    first_row = ((run.layout or {}).get("train") or {}).get("first_line") or 0
    own = script_settings.logged_settings(file, first_row) or script_settings.settings_beside(file)
    _planned_epochs(run, file.parent, own)
    _configured_lr(run, file.parent)
    _dataset_splits(run, file.parent)
    run.config.update(script_settings.early_stopping(file.parent, run.notes))
    return run


def _script_plan_of_steps(run: RunData, folder: Path, own: list[script_settings.Setting]) -> None:
    """Rows that are steps, numbered with an epoch counter (``iteration:3 step:16/652``, HF's
    fractional epoch): the epochs a training script beside the log plans, when the log ends in an
    earlier one, are an epochs_unfinished event at the last step (run_ended_early says so, low)."""
    logged = ((run.layout or {}).get("train") or {}).get("epochs_logged")
    if not logged:
        return
    planned = script_settings.planned_epochs(folder, run.notes, logged, own)
    if planned is None or logged >= planned[0]:
        return
    add_event(run, epochs_unfinished_event(int(run.train["step"].max()), logged, planned[0], planned[1]))


def _planned_epochs(run: RunData, folder: Path, own: list[script_settings.Setting]) -> None:
    """A log of one row an epoch with no planned length of its own takes it from the Ultralytics
    argument file beside it (args.yaml / opt.yaml: `epochs`), else from the training scripts
    beside it (importers.script_settings: `epochs=50`, `EPOCHS = 100`), so a run that stopped
    before its plan is told (run_ended_early); the counter's first value (0 or 1) says which row
    is the last."""
    if run.config.get("total_steps") is not None or run.train.empty:
        return
    if run.config.get(ROWS_ARE_KEY) != "epoch":
        _script_plan_of_steps(run, folder, own)
        return
    first = int(run.train["step"].min())
    if first not in (0, 1):
        return
    logged = int(run.train["step"].max()) - first + 1
    planned = yolo_results.planned_epochs(folder) or script_settings.planned_epochs(
        folder, run.notes, logged, own
    )
    if planned is None:
        return
    epochs, name = planned
    last = first + epochs - 1
    run.config["total_steps"] = last
    run.notes.append(
        f"planned length from {name} beside the log: epochs {epochs} (the last epoch is step {last}, "
        f"the counter starting at {first})"
    )


def _dataset_splits(run: RunData, folder: Path) -> None:
    """The training and validation data an Ultralytics run read, from the dataset file its
    arguments name (``yolo_results.dataset_splits``), so a validation set that is the training set
    is told (eval_contamination)."""
    splits = yolo_results.dataset_splits(folder)
    if splits is None or TRAIN_DATA_KEY in run.config:
        return
    train, val, name = splits
    run.config[TRAIN_DATA_KEY], run.config[EVAL_DATA_KEY] = train, val
    run.notes.append(
        f"training data {train!r} and validation data {val!r} from {name} (the run's dataset file)"
    )


def _configured_lr(run: RunData, folder: Path) -> None:
    """The peak LR and optimizer of an Ultralytics run from its argument files beside the log
    (``yolo_results.configured_lr``: lr0, unless its optimizer is 'auto'), so the logged LR can be
    held against what was configured."""
    if run.schedule.get("peak_lr") is not None or "learning_rate" not in (run.layout or {}).get("fields", {}):
        return
    configured = yolo_results.configured_lr(folder)
    if configured is None:
        return
    lr0, optimizer, source = configured
    run.schedule["peak_lr"] = lr0
    run.config.setdefault("optimizer", {"name": optimizer})
    run.notes.append(f"peak_lr = lr0 {lr0:g} and optimizer {optimizer} from {source} (the run's arguments)")
