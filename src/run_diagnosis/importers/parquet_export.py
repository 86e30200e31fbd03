"""Parquet exports of tracked runs: Neptune-style long tables and wide tables (Trackio export).

What is read
------------
A ``.parquet`` file or a folder of them (read with DuckDB's ``read_parquet``, columns matched by
name across the files), in one of two layouts:

* **long**: one row per (run, step, metric): ``neptune-exporter``'s schema (``run_id``,
  ``attribute_path``, ``attribute_type``, ``step``, ``timestamp``, ``float_value``,
  ``int_value``, ``string_value`` ...), or any table with a metric-name column (``metric``,
  ``attribute_path``, ``key``, ``name``) and a ``value`` / ``float_value`` column. Rows without a
  step (Neptune's single-value attributes: ``parameters/...``, ``config/...``) are the run's
  params.
* **wide**: one row per logging call: ``step``, optional ``timestamp``, one column per metric
  (Trackio's ``<project>.parquet``: ``run_name``, ``step``, ``timestamp``, metrics flattened).

A run column (``run_id``, ``run_name``, ``run``, ``sys/id``) with several values is several runs
(``list_runs``); metric names go through the resolver.

Conventions, modelled
---------------------
* Neptune ``step`` is a decimal (``decimal128(18, 6)``): a fractional step is not an optimizer
  step; such rows are refused with the values named. NaN in a float column stays NaN.
* Trackio's export keeps its ``"NaN"`` / ``"Infinity"`` text: read as NaN and inf.
* Params that are Hugging Face TrainingArguments give the schedule and clip limit (as MLflow).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.tracker_exports import Loader, only_run, table_layout, table_runs

FORMAT = "parquet"
DESCRIPTION = (
    "Parquet export: Neptune-style long table (run, step, metric, value) or wide table (Trackio export)"
)

MAGIC = b"PAR1"


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*.parquet") if _is_parquet(p))
    return [path] if _is_parquet(path) else []


def _is_parquet(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return path.is_file() and handle.read(4) == MAGIC
    except OSError:
        return False


def _table(path: Path) -> tuple[list[str], list[tuple[Any, ...]]]:
    files = _files(path)
    if not files:
        raise RunImportError(f"{path}: no Parquet file (expected *.parquet starting with PAR1)")
    listing = ", ".join("'" + str(f).replace("'", "''") + "'" for f in files)
    try:
        with duckdb.connect() as con:
            cursor = con.execute(f"select * from read_parquet([{listing}], union_by_name = true)")
            columns = [d[0] for d in cursor.description]
            return columns, cursor.fetchall()
    except duckdb.Error as error:
        raise RunImportError(f"{path}: not readable as Parquet: {error}") from error


def sniff(path: Path) -> bool:
    files = _files(path) if path.exists() else []
    if not files:
        return False
    try:
        with duckdb.connect() as con:
            cursor = con.execute("select * from read_parquet(?) limit 0", [str(files[0])])
            return table_layout([d[0] for d in cursor.description]) is not None
    except duckdb.Error:
        return False


def list_runs(path: Path) -> list[tuple[str, str, Loader]]:
    columns, rows = _table(path)
    return table_runs(FORMAT, path, columns, rows, "Parquet")


def load(path: Path) -> RunData:
    return only_run(path, list_runs(path))
