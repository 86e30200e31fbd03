"""Long metric tables as CSV or TSV: one row per (run, step, metric, value), as trackers export them.

What is read
------------
A ``.csv`` / ``.tsv`` file, or a folder holding exactly one such table, whose header names a
metric column (``metric``, ``key``, ``tag``, ``name``, ``attribute_path``), a value column
(``value``, ``float_value``) and a ``step`` column; header names are matched without case and with
spaces and dashes read as underscores (``Run ID`` is ``run_id``). Such tables are:

* the metric history MLflow's UI downloads (``Run, Run ID, metric, step, timestamp, value``), or
  ``MlflowClient.get_metric_history`` written out;
* tbparse's ``SummaryReader(logdir).scalars`` (``step, tag, value``) saved as CSV;
* any tracker's history melted to long form (one row per metric and step);
* TensorBoard's own "Download CSV" of a scalar: ``Wall time,Step,Value``, one tag per file named
  ``run-<run>-tag-<tag>.csv`` (a ``/`` in either written as ``_``). The file name says which
  metric the values are: a file or a folder of them is read as one long table whose metric is the
  tag, ``<run>/<tag>`` when the runs are splits (Keras' ``train`` and ``validation`` writers: the
  resolver reads ``validation/epoch_loss`` as the validation loss), and whose other run names are
  several runs; ``Wall time`` (seconds since the epoch) gives the step times.

The table is read with DuckDB's CSV reader (delimiter, quoting and types sniffed) and its rows go
the way of a Parquet export's long table (``tracker_exports``, shared with ``parquet_export``): a
run column (``run_name``, ``run_id``, ``run``) with several values is several runs, one report
each; the metric names go through the resolver (names it cannot place are named in a "not
understood" note); timestamps (seconds or milliseconds since the epoch) give the step times.

Conventions, modelled
---------------------
* A step column is required: a long table without one (``metric, value``) is a summary of final
  values, not a history, and is left to the other readers.
* A fractional step is no optimizer step: such a row is refused with its metric and step named.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import duckdb

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import own_files
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.generic_lines import split_word
from run_diagnosis.importers.tracker_exports import (
    NAME_COLUMNS,
    VALUE_COLUMNS,
    Loader,
    only_run,
    table_runs,
)

FORMAT = "long_csv"
DESCRIPTION = (
    "long metric table as CSV/TSV: one row per (run, step, metric, value) (MLflow download, tbparse)"
)

SUFFIXES = (".csv", ".tsv")
HEADER_BYTES = 8192  # the header line is read from the file's start
SEPARATORS = re.compile(r"[\s\-]+")
# TensorBoard's "Download CSV" of one scalar: its header, and its file name run-<run>-tag-<tag>
DOWNLOAD_HEADER = ["wall_time", "step", "value"]  # as the header reads; _table calls wall_time timestamp
DOWNLOAD_NAME = re.compile(r"run[-_](?P<run>.*?)-tag-(?P<tag>.+)")


def _normalised(name: str) -> str:
    return SEPARATORS.sub("_", name.strip().lower())


def _header(path: Path) -> list[str]:
    """The header cells of a CSV/TSV file, normalised; [] when it has none readable."""
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            first = handle.read(HEADER_BYTES).splitlines()
    except OSError:
        return []
    if not first:
        return []
    delimiter = "\t" if "\t" in first[0] else ","
    return [_normalised(cell) for cell in next(csv.reader([first[0]], delimiter=delimiter), [])]


def _is_long(header: list[str]) -> bool:
    """A long table's header: a step column, a metric-name column and a value column."""
    return (
        "step" in header
        and any(c in header for c in NAME_COLUMNS)
        and any(c in header for c in VALUE_COLUMNS)
    )


def _is_scalar_download(path: Path, header: list[str]) -> bool:
    """TensorBoard's CSV download of one scalar: a .csv headed 'Wall time,Step,Value'."""
    return path.suffix.lower() == ".csv" and header == DOWNLOAD_HEADER


def _tables(path: Path) -> tuple[Path | None, list[Path]]:
    """The long table ``path`` is, or the one such table a folder holds (None otherwise), and the
    TensorBoard scalar downloads it is or holds: each file's header read once."""
    headers = {file: _header(file) for file in own_files(path) if file.suffix.lower() in SUFFIXES}
    long = [file for file, header in headers.items() if _is_long(header)]
    downloads = [file for file, header in headers.items() if _is_scalar_download(file, header)]
    return (long[0] if len(long) == 1 else None), downloads


def sniff(path: Path) -> bool:
    try:
        table, downloads = _tables(path)
    except OSError:
        return False
    return table is not None or bool(downloads)


def _run_and_tag(stem: str) -> tuple[str, str]:
    """('train', 'epoch_loss') of 'run-train-tag-epoch_loss'; ('', stem) of a file renamed."""
    named = DOWNLOAD_NAME.fullmatch(stem)
    return (named.group("run"), named.group("tag")) if named else ("", stem)


def _download_table(files: list[Path], label: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The scalar downloads as one long table: (run, step, metric, value, timestamp) rows. Runs
    that are splits (train, validation) are one run's series, the split prefixed to the tag, and
    that run is named ``label``, as is the one run of downloads that name a single one ('.', the
    log folder's root, or any); downloads of several other runs are several runs, named by them."""
    named = [(_run_and_tag(f.stem), f) for f in files]
    runs = {run for (run, _), _ in named}
    splits = all(split_word(run) for run in runs) if len(runs) > 1 else False
    several = len(runs) > 1 and not splits  # several experiments, one report each
    rows: list[tuple[Any, ...]] = []
    for (run, tag), file in named:
        columns, values = _table(file)
        metric = f"{run}/{tag}" if splits else tag
        owner = run if several else label
        step, value, wall = (columns.index(name) for name in ("step", "value", "timestamp"))
        rows += [(owner, row[step], metric, row[value], row[wall]) for row in values]
    return ["run", "step", "metric", "value", "timestamp"], rows


def _table(path: Path) -> tuple[list[str], list[tuple[Any, ...]]]:
    try:
        with duckdb.connect() as con:
            cursor = con.execute("select * from read_csv(?, header = true)", [str(path)])
            columns = [_normalised(d[0]) for d in cursor.description]
            if "timestamp" not in columns and "wall_time" in columns:
                # tbparse's and TensorBoard's wall time: seconds since the epoch, the rows' timestamps
                columns[columns.index("wall_time")] = "timestamp"
            return columns, cursor.fetchall()
    except duckdb.Error as error:
        raise RunImportError(f"{path}: not readable as a CSV table: {error}") from error


def list_runs(path: Path) -> list[tuple[str, str, Loader]]:
    table, downloads = _tables(path)
    if table is None and downloads:
        source = path if path.is_dir() else downloads[0]
        columns, rows = _download_table(downloads, source.stem)
        return table_runs(FORMAT, source, columns, rows, "CSV (TensorBoard scalar downloads)")
    if table is None:
        raise RunImportError(
            f"{path}: no long metric table (a CSV/TSV whose header names a step column, a metric column "
            f"({'/'.join(NAME_COLUMNS)}) and a value column ({'/'.join(VALUE_COLUMNS)}))"
        )
    columns, rows = _table(table)
    return table_runs(FORMAT, table, columns, rows, "CSV")


def load(path: Path) -> RunData:
    return only_run(path, list_runs(path))
