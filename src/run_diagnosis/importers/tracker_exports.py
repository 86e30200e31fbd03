"""Shared by the Trackio and Parquet importers: one run's long or wide metric rows -> RunData.

Both sources hold several runs side by side (a Trackio project, a Neptune export, a Trackio
Parquet export), keyed by a run column; ``runs_of`` groups rows by it and ``run_data`` builds one
run through ``metric_frames`` (names read by the resolver, NaN kept, step times from the
timestamps) and ``settings_from_params`` (schedule and clip limit when the run's config is a set
of Hugging Face TrainingArguments).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import (
    Record,
    build_frames,
    number,
    records_from_long,
    settings_from_params,
)

Loader = Callable[[], RunData]


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
