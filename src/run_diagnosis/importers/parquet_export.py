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

import math
from functools import partial
from pathlib import Path
from typing import Any

import duckdb

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import number
from run_diagnosis.importers.tracker_exports import Loader, long_records, run_data, wide_records

FORMAT = "parquet"
DESCRIPTION = (
    "Parquet export: Neptune-style long table (run, step, metric, value) or wide table (Trackio export)"
)

MAGIC = b"PAR1"
RUN_COLUMNS = ("run_name", "run_id", "run", "sys/id", "experiment")
NAME_COLUMNS = ("attribute_path", "metric", "key", "name", "path")
VALUE_COLUMNS = ("float_value", "value", "int_value")
BOOKKEEPING = {"id", "log_id", "space_id", "project_id", "project", "attribute_type", *RUN_COLUMNS}


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


def _layout(columns: list[str]) -> str | None:
    names = [c for c in NAME_COLUMNS if c in columns]
    values = [c for c in VALUE_COLUMNS if c in columns]
    if names and values:
        return "long"
    return "wide" if "step" in columns else None


def sniff(path: Path) -> bool:
    files = _files(path) if path.exists() else []
    if not files:
        return False
    try:
        with duckdb.connect() as con:
            cursor = con.execute("select * from read_parquet(?) limit 0", [str(files[0])])
            return _layout([d[0] for d in cursor.description]) is not None
    except duckdb.Error:
        return False


def list_runs(path: Path) -> list[tuple[str, str, Loader]]:
    columns, rows = _table(path)
    layout = _layout(columns)
    if layout is None:
        raise RunImportError(
            f"{path}: neither a long table ({'/'.join(NAME_COLUMNS)} + {'/'.join(VALUE_COLUMNS)}) "
            f"nor a wide one (a step column); found columns {', '.join(columns[:20])}"
        )
    run_column = next((c for c in RUN_COLUMNS if c in columns), None)
    index = columns.index(run_column) if run_column else None
    names = list(dict.fromkeys(str(row[index]) for row in rows)) if index is not None else [path.stem]
    return [
        (
            name,
            f"run {name} of {path}",
            partial(_load_run, path, columns, rows, layout, run_column, name),
        )
        for name in names
    ]


def load(path: Path) -> RunData:
    runs = list_runs(path)
    if len(runs) > 1:
        raise RunImportError(
            f"{path}: the export holds {len(runs)} runs ({', '.join(r[0] for r in runs[:10])}): "
            "diagnose it as a whole, one report per run"
        )
    return runs[0][2]()


def _load_run(
    path: Path,
    columns: list[str],
    rows: list[tuple[Any, ...]],
    layout: str,
    run_column: str | None,
    name: str,
) -> RunData:
    dicts = [dict(zip(columns, row, strict=True)) for row in rows]
    mine = [d for d in dicts if run_column is None or str(d[run_column]) == name]
    notes = [f"{layout} Parquet table, run {name!r}"]
    if layout == "wide":
        records = wide_records(mine, BOOKKEEPING, str(path))
        return run_data(FORMAT, str(path), name, records, {}, notes)
    name_column = next(c for c in NAME_COLUMNS if c in columns)
    series, params = [], {}
    for row in mine:
        value = next((row[c] for c in VALUE_COLUMNS if c in row and row[c] is not None), None)
        step = number(row.get("step"))
        if step is None:
            params[str(row[name_column])] = value if value is not None else row.get("string_value")
            continue
        if not math.isfinite(step) or step != int(step):
            raise RunImportError(
                f"{path}: run {name}, metric {row[name_column]!r} at step {step}: not a whole step number"
            )
        series.append((int(step), str(row[name_column]), value, row.get("timestamp")))
    notes.append(f"{len(params)} single-value attributes read as the run's params")
    return run_data(FORMAT, str(path), name, long_records(series, str(path)), params, notes)
