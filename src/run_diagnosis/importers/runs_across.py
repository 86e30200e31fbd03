"""Histories written across: one row a run, one column an epoch, each file named by its metric.

What is read
------------
A folder (or one file) of CSV files whose header is an index cell (empty, or a label such as
``fold``) and then consecutive whole numbers (``1,2,...,100`` or ``0,1,...``: the epochs), each
row a run's label and then one number an epoch: what pandas writes for a list of per-run
histories (``pd.DataFrame([h.history['loss'] for h in folds]).to_csv('train_losses.csv')``, one
row a cross-validation fold or a seed). The file's stem names the metric (``train_losses``,
``val_losses``, ``train_accuracies``) through the metric-name resolver; rows with the same label
in several files are one run. Two or more rows are several runs (``list_runs``: one report each,
``run-diagnosis diagnose`` on the folder); one row is one run.

Conventions, modelled
---------------------
* **A column is an epoch**: the header's numbers are the counter (rows_are = epoch); an empty
  cell at a row's end is an epoch that run did not reach (an early stop), not a value.
* **At least MIN_EPOCHS columns**: fewer numbered columns are a small table, not a history.
* A file of another shape (text between the numbers, a header that is not consecutive whole
  numbers) is not such a table: the other readers take it.
"""

from __future__ import annotations

import csv
import itertools
from functools import partial
from pathlib import Path

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import own_files
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import Record, build_frames, number
from run_diagnosis.importers.metric_names import assign
from run_diagnosis.importers.tracker_exports import Loader, only_run
from run_diagnosis.run_files import ROWS_ARE_KEY

FORMAT = "runs_across"
DESCRIPTION = "per-run histories written across, one row a run (fold, seed) and one column an epoch"

SUFFIXES = (".csv", ".tsv")
MAX_BYTES = 16 * 1024 * 1024
# fewer numbered columns than this are a small table of a few values, not a history over epochs
MIN_EPOCHS = 3

Table = tuple[list[int], dict[str, list[float | None]]]  # the epochs, each run's values by its label


def _table(path: Path) -> Table | None:
    """The epochs and each row's values of a file written across, None when it is not one."""
    if not path.is_file() or path.suffix.lower() not in SUFFIXES or path.stat().st_size > MAX_BYTES:
        return None
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        rows = [row for row in csv.reader(handle, delimiter=delimiter) if any(cell.strip() for cell in row)]
    if len(rows) < 2:
        return None
    header = [cell.strip() for cell in rows[0]]
    epochs = [number(cell) for cell in header[1:]]
    if len(epochs) < MIN_EPOCHS or any(e is None or not e.is_integer() for e in epochs):
        return None
    counter = [int(e) for e in epochs if e is not None]
    if counter[0] not in (0, 1) or any(b - a != 1 for a, b in itertools.pairwise(counter)):
        return None
    if number(header[0]) is not None:
        return None  # a first column of numbers: a row of values, not a run's label
    runs: dict[str, list[float | None]] = {}
    for row in rows[1:]:
        cells = [cell.strip() for cell in row]
        if len(cells) != len(header) or cells[0] in runs:
            return None
        values = [number(cell) if cell else None for cell in cells[1:]]
        if any(value is None for value, cell in zip(values, cells[1:], strict=True) if cell):
            return None  # text between the numbers
        runs[cells[0]] = values
    return counter, runs


def _tables(path: Path) -> dict[str, tuple[Path, Table]]:
    """The tables written across that ``path`` is or holds, by metric name (the file's stem)."""
    found: dict[str, tuple[Path, Table]] = {}
    for file in own_files(path):
        table = _table(file)
        if table is not None:
            found[file.stem] = (file, table)
    return found


def _readable(tables: dict[str, tuple[Path, Table]]) -> bool:
    """A training or validation loss among the tables' names, all of them over the same epochs."""
    if not tables or len({tuple(table[0]) for _, table in tables.values()}) != 1:
        return False
    columns = assign(list(tables)).columns
    return "loss" in columns or "val_loss" in columns


def sniff(path: Path) -> bool:
    try:
        return _readable(_tables(path))
    except OSError:
        return False


def _load_run(tables: dict[str, tuple[Path, Table]], label: str, source: Path, n_runs: int) -> RunData:
    epochs = next(iter(tables.values()))[1][0]
    records = []
    for index, epoch in enumerate(epochs):
        values = {
            name: table[1].get(label, [None] * len(epochs))[index] for name, (_, table) in tables.items()
        }
        if any(value is not None for value in values.values()):
            records.append(Record(epoch, values, f"column {epoch}"))
    frames = build_frames(records, str(source))
    files = ", ".join(file.name for file, _ in tables.values())
    notes = [
        f"histories written across ({files}): row {label!r} of {n_runs}, one column an epoch "
        f"({epochs[0]}..{epochs[-1]}); the files' names say the metric",
        "a per-epoch table: rows are epochs, not steps; the checks needing steps say they could not run",
    ]
    return frames.run(
        FORMAT,
        str(source),
        run_name=f"{source.name} {label}" if n_runs > 1 else source.name,
        config={ROWS_ARE_KEY: "epoch"},
        notes=notes,
    )


def list_runs(path: Path) -> list[tuple[str, str, Loader]]:
    tables = _tables(path)
    if not _readable(tables):
        raise RunImportError(
            f"{path}: no histories written across (a CSV whose header is an index cell, then the "
            "epochs 1, 2, 3 ...; one row a run)"
        )
    labels = list(dict.fromkeys(label for _, table in tables.values() for label in table[1]))
    source = path if path.is_dir() else path.parent
    return [
        (
            f"row {label}" if len(labels) > 1 else source.name,
            f"{source}: row {label!r} of {', '.join(file.name for file, _ in tables.values())}",
            partial(_load_run, tables, label, source, len(labels)),
        )
        for label in labels
    ]


def load(path: Path) -> RunData:
    if not path.exists():
        raise RunImportError(f"{path}: no such file or folder")
    return only_run(path, list_runs(path))
