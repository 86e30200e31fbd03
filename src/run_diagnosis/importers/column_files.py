"""Metric histories saved one per file as a bare column of numbers, each file named by its metric.

What is read
------------
A folder (or one file) of text files (``.csv``, ``.txt``, ``.tsv``, ``.dat``), each holding one
number per line and nothing else but, at most, one header line naming it (or one line of numbers
and nothing else: a series written across, as a callback appending ``',<loss>'`` each epoch writes
it, read in order; or lines of ten or more numbers each, one a pass, as a loop writing an epoch's
batch losses on one line writes them, read line after line, unless their first numbers count 0, 1,
2 ...: a headerless table's rows): what
``np.savetxt('loss.csv', history.history['loss'])`` writes for each key of a Keras history
(``loss.csv``, ``val_loss.csv``, ``acc.csv``, ``val_acc.csv``), a training loop's
``np.savetxt('train_losses.txt', losses)``, or one series written by pandas
(``pd.DataFrame({'loss': losses}).to_csv('loss.csv', index=False)``: a ``loss`` header line; an
unnamed column's header line is pandas' default label ``0``, not a logged value, when the numbers
under it are not whole numbers).
The header, or else the file's stem, is the metric's name and goes through the metric-name
resolver (names it cannot place are named in a "not understood" note); the i-th number of a file
is its i-th logged value.

Conventions, modelled
---------------------
* **No counter**: the rows are numbered from 1 in file order, in every file alike. A row is an
  epoch when a validation loss is saved beside the training loss with as many rows (Keras logs
  both once an epoch: rows_are = epoch); otherwise what a row is (an epoch, a batch) is unknown
  and the rows are read as steps.
* **The training loss is the column the resolver chooses**, or, when several read as one and the
  first has no validation loss as long as it beside it, the first that has (``train_loss.csv`` and
  ``val_loss.csv`` of 20 rows beside another experiment's ``loss.csv`` of 5: a history's pair is
  logged together); the others are named as not used.
* **Only columns as long as the training loss are joined** to it: a file of another length was
  logged at another rate (per batch beside per epoch) and row i of it is no row i of the loss; it
  is named in a note and not used.
* A file with any other line (two columns, a second header, text between the numbers) is not
  such a column: the other readers take it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import own_files
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import Record, build_frames, number
from run_diagnosis.importers.metric_names import assign
from run_diagnosis.run_files import ROWS_ARE_KEY

FORMAT = "column_files"
DESCRIPTION = (
    "one bare column of numbers per file, each file named by its metric (np.savetxt of a Keras history)"
)

SUFFIXES = (".csv", ".txt", ".tsv", ".dat")
MAX_BYTES = 16 * 1024 * 1024  # a column of numbers larger than this is no saved history
MIN_ROWS = 2  # one value is a summary, not a series
# a header line naming the column: one name (pandas' to_csv(index=False) of one series, np.savetxt's
# header='loss' written as '# loss'), no delimiter, no spaces inside
HEADER = re.compile(r"[A-Za-z_][\w./-]*")
# one line of numbers is a series written across (a history appended to one line): its delimiter,
# and the fewest values that make it a series rather than one record of a few metrics
ROW_DELIMITER = re.compile(r"[,;\t]")
MIN_ROW_VALUES = 3
# lines of numbers written across, one a pass (an epoch's batch losses): each holds at least this many
# (a headerless table's rows hold a few metrics each)
PASS_MIN_VALUES = 10
# the header line pandas writes for an unnamed column (pd.DataFrame(losses).to_csv(index=False))
PANDAS_DEFAULT_LABEL = "0"


class Column(NamedTuple):
    """A bare column as read: its file, its numbers, and the number of each of its lines when it is
    several lines written across, one a pass (rows_across; empty otherwise)."""

    file: Path
    values: list[float]
    passes: list[int]


def column(path: Path) -> tuple[str, list[float], list[int]] | None:
    """The metric name, numbers and passes (see Column) of a bare-column file (one number per
    non-blank line, after one header line naming it or none: then the file's stem names it; or
    numbers written across, rows_across), None when it is not one (read until its first line that
    is neither)."""
    if not path.is_file() or path.suffix.lower() not in SUFFIXES:
        return None
    if path.stat().st_size > MAX_BYTES:
        return None
    lines = rows_across(path)
    if lines is not None:
        passes = [len(line) for line in lines] if len(lines) > 1 else []
        return path.stem, [value for line in lines for value in line], passes
    name, values, first = path.stem, list[float](), None
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                continue
            first = line.strip() if first is None else first
            value = number(line) if "," not in line and "\t" not in line else None
            if value is None:
                header = line.strip().lstrip("#").strip().strip("'\"")
                if values or name != path.stem or not HEADER.fullmatch(header):
                    return None
                name = header
                continue
            values.append(value)
    if first == PANDAS_DEFAULT_LABEL and values[1:] and not all(v.is_integer() for v in values[1:]):
        # pandas writes an unnamed column's label, 0, as its header line: not a logged value
        values = values[1:]
    return (name, values, []) if len(values) >= MIN_ROWS else None


def rows_across(path: Path) -> list[list[float]] | None:
    """The lines of numbers of a file written across, read in order: one line of at least
    MIN_ROW_VALUES numbers (a callback appending ',<loss>' to one line each epoch: a leading or
    trailing empty field is no value), or several of at least PASS_MIN_VALUES each, one a pass (a
    loop writing ','.join(batch_losses) once an epoch) whose first numbers do not count 0, 1, 2 ...
    or 1, 2, 3 ... (a headerless table's rows: its first column a counter); None otherwise."""
    lines: list[list[float]] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for text in handle:
            if not text.strip():
                continue
            cells = ROW_DELIMITER.split(text.strip()) if ROW_DELIMITER.search(text) else []
            while cells and not cells[0].strip():
                cells = cells[1:]
            while cells and not cells[-1].strip():
                cells = cells[:-1]
            values = [number(cell) for cell in cells]
            if len(values) < MIN_ROW_VALUES or any(value is None for value in values):
                return None
            lines.append([value for value in values if value is not None])
    if not lines:
        return None
    if len(lines) > 1:
        firsts = [line[0] for line in lines]
        counted = any(firsts == [start + i for i in range(len(firsts))] for start in (0.0, 1.0))
        if counted or min(len(line) for line in lines) < PASS_MIN_VALUES:
            return None
    return lines


def _columns(path: Path) -> dict[str, Column]:
    """The bare columns ``path`` is or holds, by metric name (the header's, or the file's stem)."""
    found: dict[str, Column] = {}
    for file in own_files(path):
        read = column(file)
        if read is not None and read[0] not in found:
            name, values, passes = read
            found[name] = Column(file, values, passes)
    return found


def _training_loss(columns: dict[str, Column]) -> tuple[str | None, list[str]]:
    """The column the resolver chooses as the training loss, if one, and every column it reads as
    one; of several, the first with a validation loss as long as it beside it (a Keras history's
    loss/val_loss pair, logged together) when the resolver's first choice has none."""
    if not columns:
        return None, []
    assignment = assign(list(columns))
    candidates = assignment.candidates.get("loss", [])
    lengths = {len(columns[name][1]) for name in assignment.candidates.get("val_loss", [])}
    paired = [name for name in candidates if len(columns[name][1]) in lengths]
    chosen = assignment.columns.get("loss")
    return (paired[0] if paired and chosen not in paired else chosen), candidates


def sniff(path: Path) -> bool:
    try:
        return _training_loss(_columns(path))[0] is not None
    except OSError:
        return False


def load(path: Path) -> RunData:
    if not path.exists():
        raise RunImportError(f"{path}: no such file or folder")
    columns = _columns(path)
    loss, candidates = _training_loss(columns)
    if loss is None:
        names = ", ".join(columns) or "none"
        raise RunImportError(
            f"{path}: expected one bare column of numbers named as a training loss (loss.csv, "
            f"train_loss.txt); bare columns found: {names}"
        )
    rows = len(columns[loss][1])
    # the chosen loss and the columns as long as it; another training-loss column is left out (the
    # resolver would take it in the chosen one's place)
    others = set(candidates) - {loss}
    joined = {n: c.values for n, c in columns.items() if len(c.values) == rows and n not in others}
    notes = [
        f"bare columns of numbers, one per file, named by their headers or files: {', '.join(joined)} "
        f"({rows} rows each, numbered from 1 in file order: no counter is logged)"
    ]
    passes = columns[loss].passes
    if passes:
        sizes = ", ".join(str(size) for size in passes[:5]) + (" ..." if len(passes) > 5 else "")
        notes.append(
            f"{columns[loss][0].name} holds {len(passes)} lines of numbers written across ({sizes} "
            "values): one a pass, read line after line (what a row is, a batch or an epoch, is not logged)"
        )

    def shown(name: str) -> str:
        return f"{columns[name][0].name} ({len(columns[name][1])} rows)"

    apart = [shown(n) for n in columns if n not in joined and n not in others]
    if apart:
        notes.append(
            f"not joined to the {rows} rows of {columns[loss][0].name}: {', '.join(apart)} "
            "(another length: logged at another rate)"
        )
    if others:
        notes.append(
            f"the training loss is {columns[loss][0].name}, chosen among the columns read as one; "
            f"not used: {', '.join(shown(n) for n in sorted(others))}"
        )
    records = [
        Record(index + 1, {name: values[index] for name, values in joined.items()}, f"row {index + 1}")
        for index in range(rows)
    ]
    source = str(columns[loss][0].parent if path.is_dir() else path)
    frames = build_frames(records, source)
    config: dict[str, object] = {}
    if "val_loss" in frames.assignment.columns:
        config[ROWS_ARE_KEY] = "epoch"
        notes.append(
            "a validation loss saved beside the training loss with as many rows: each row is an epoch "
            "(the checks needing steps say they could not run)"
        )
    else:
        notes.append("what a row is (an epoch, a batch) is not logged: the rows are read as steps")
    return frames.run(FORMAT, source, run_name=Path(source).name, config=config, notes=notes)
