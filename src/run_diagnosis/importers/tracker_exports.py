"""Shared by the Trackio, Parquet and long-CSV importers: one run's long or wide metric rows -> RunData.

These sources hold several runs side by side (a Trackio project, a Neptune export, a Trackio
Parquet export, an MLflow metric download), keyed by a run column; ``table_runs`` lists the runs
of a table (its columns and rows) and ``run_data`` builds one run through ``metric_frames`` (names
read by the resolver, NaN kept, step times from the timestamps) and ``settings_from_params``
(schedule and clip limit when the run's config is a set of Hugging Face TrainingArguments).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import (
    Record,
    build_frames,
    number,
    records_from_long,
    settings_from_params,
)

Loader = Callable[[], RunData]

# the columns of a metric table: the run it belongs to, a long table's metric name and value
RUN_COLUMNS = ("run_name", "run_id", "run", "sys/id", "experiment")
NAME_COLUMNS = ("attribute_path", "metric", "key", "name", "path", "tag")
VALUE_COLUMNS = ("float_value", "value", "int_value")
BOOKKEEPING = {"id", "log_id", "space_id", "project_id", "project", "attribute_type", *RUN_COLUMNS}


def seconds(value: Any) -> float | None:
    """A timestamp as epoch seconds: a datetime, ISO text, or a number (seconds, or ms when large)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return moment.timestamp()
    if isinstance(value, int | float):
        return float(value) / 1000.0 if value > 1e11 else float(value)
    try:
        moment = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return number(value)
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).timestamp()


def wide_records(rows: Iterable[Mapping[str, Any]], skip: set[str], origin: str) -> list[Record]:
    """Records of wide rows (one per logging call): step, optional timestamp, metric columns;
    the `skip` columns (ids, run name) are not metrics."""
    records = []
    for index, row in enumerate(rows):
        step = number(row.get("step"))
        if step is None or not math.isfinite(step):
            continue
        values = {k: number(v) for k, v in row.items() if k not in skip and k not in ("step", "timestamp")}
        values = {k: v for k, v in values.items() if v is not None}
        if "timestamp" in row:
            values["_timestamp"] = seconds(row["timestamp"])
        records.append(Record(int(step), values, f"{origin} row {index + 1}"))
    return records


def run_data(
    source_format: str,
    source: str,
    run_name: str,
    records: list[Record],
    params: Mapping[str, Any],
    notes: list[str],
) -> RunData:
    frames = build_frames(records, f"{source} (run {run_name})")
    schedule, config = settings_from_params(params, frames, notes)
    return frames.run(source_format, source, run_name=run_name, schedule=schedule, config=config, notes=notes)


def long_records(rows: Iterable[tuple[Any, str, Any, Any]], origin: str) -> list[Record]:
    """Records of long rows (step, name, value, timestamp)."""
    return records_from_long(
        ((int(number(s) or 0), str(n), number(v), seconds(t)) for s, n, v, t in rows), origin
    )


def table_layout(columns: list[str]) -> str | None:
    """'long' (a metric-name column and a value column), 'wide' (a step column), or None."""
    names = [c for c in NAME_COLUMNS if c in columns]
    values = [c for c in VALUE_COLUMNS if c in columns]
    if names and values:
        return "long"
    return "wide" if "step" in columns else None


def table_runs(
    source_format: str, path: Path, columns: list[str], rows: list[tuple[Any, ...]], kind: str
) -> list[tuple[str, str, Loader]]:
    """The runs of a metric table (its run column's values; the file's stem without one):
    (name, where, loader). ``kind`` names the table in the notes ('Parquet', 'CSV')."""
    layout = table_layout(columns)
    if layout is None:
        raise RunImportError(
            f"{path}: neither a long table ({'/'.join(NAME_COLUMNS)} + {'/'.join(VALUE_COLUMNS)}) "
            f"nor a wide one (a step column); found columns {', '.join(columns[:20])}"
        )
    run_column = next((c for c in RUN_COLUMNS if c in columns), None)
    index = columns.index(run_column) if run_column else None
    names = list(dict.fromkeys(str(row[index]) for row in rows)) if index is not None else [path.stem]
    table = (source_format, path, columns, rows, layout, run_column, kind)
    return [(name, f"run {name} of {path}", partial(_table_run, *table, name)) for name in names]


def _table_run(
    source_format: str,
    path: Path,
    columns: list[str],
    rows: list[tuple[Any, ...]],
    layout: str,
    run_column: str | None,
    kind: str,
    name: str,
) -> RunData:
    dicts = [dict(zip(columns, row, strict=True)) for row in rows]
    mine = [d for d in dicts if run_column is None or str(d[run_column]) == name]
    notes = [f"{layout} {kind} table, run {name!r}"]
    if layout == "wide":
        records = wide_records(mine, BOOKKEEPING, str(path))
        return run_data(source_format, str(path), name, records, {}, notes)
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
    return run_data(source_format, str(path), name, long_records(series, str(path)), params, notes)


def only_run(path: Path, runs: list[tuple[str, str, Loader]]) -> RunData:
    """The one run of a table read as a single run; several are refused (diagnose the whole)."""
    if len(runs) > 1:
        raise RunImportError(
            f"{path}: the export holds {len(runs)} runs ({', '.join(r[0] for r in runs[:10])}): "
            "diagnose it as a whole, one report per run"
        )
    return runs[0][2]()
