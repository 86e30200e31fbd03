"""MLflow tracking stores: the SQLite database (``mlflow.db``) and the file store (``mlruns/``).

What is read
------------
* **SQLite store** (the default backend from MLflow 3.7: ``sqlite:///mlflow.db``): the tables
  ``metrics(key, value, timestamp, step, is_nan, run_uuid)``, ``params(key, value, run_uuid)``,
  ``tags`` and ``runs(run_uuid, name, status, lifecycle_stage, experiment_id, ...)``, read with
  Python's sqlite3, the file opened read-only. A file, or a folder holding ``mlflow.db``.
* **File store** (MLflow <= 3.6; 3.13 refuses it unless ``MLFLOW_ALLOW_FILE_STORE=true``):
  ``mlruns/<experiment>/<run>/metrics/<key>`` with lines ``timestamp value step`` (a key with
  ``/`` is a sub-folder), ``params/<key>``, ``tags/mlflow.runName`` and ``meta.yaml``. The
  ``mlruns`` folder, one experiment folder, or one run folder.

A store holding several runs (deleted runs aside) is several runs: ``list_runs`` names them and
``run-diagnosis diagnose`` builds them together (one report each and a fleet page).

MLflow's conventions, modelled
------------------------------
* **NaN is a flag**: the SQL store writes a NaN as ``value = 0`` with ``is_nan = 1``, and +-inf as
  +-1.7976931348623157e308 (``sys.float_info.max``). Read naively, a diverged run shows a loss of
  0 (a "perfect" loss). Here ``is_nan`` gives NaN and the float max gives inf: nan_loss sees them.
* Metric keys are whatever the logging code chose (HF's ``MLflowCallback``: ``loss``,
  ``learning_rate``, ``grad_norm``, ``eval_loss``; Lightning: user keys; Keras autolog: one
  step per epoch): they go through the resolver. Timestamps are epoch milliseconds: step times
  are their deltas over the steps between records (an average per logging interval).
* Params are text. When they are a Hugging Face ``TrainingArguments`` (``MLflowCallback`` logs
  them all), the schedule, clip limit and intervals are read from them as for a
  ``trainer_state.json`` (``importers.training_args``); HF's ``grad_norm`` is measured before
  clipping.
* The run's status gives its end: ``FINISHED`` a normal end, ``FAILED`` a crash, ``KILLED`` a
  manual stop (an event at the last logged step); ``RUNNING`` a run still training (or one
  whose process died without telling the store: it cannot be told apart).
"""

from __future__ import annotations

import math
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import (
    build_frames,
    number,
    records_from_long,
    settings_from_params,
)

FORMAT = "mlflow"
DESCRIPTION = "MLflow tracking store: SQLite mlflow.db (MLflow >= 3.7) or file store mlruns/<exp>/<run>/"

DB_NAMES = ("mlflow.db",)
DB_SUFFIXES = {".db", ".sqlite", ".sqlite3"}
SQLITE_MAGIC = b"SQLite format 3\x00"
METRIC_COLUMNS = {"key", "value", "timestamp", "step", "is_nan", "run_uuid"}
FLOAT_MAX = sys.float_info.max
FILE_STORE_STATUS = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}
STATUS_EVENTS = {
    "FINISHED": "run finished: MLflow run status FINISHED",
    "FAILED": "run crashed: MLflow run status FAILED",
    "KILLED": "run killed: MLflow run status KILLED (stopped by hand or by the scheduler)",
}


@dataclass(frozen=True)
class StoredRun:
    """One run of a store: its id, name, status and how to read its metrics and params."""

    run_id: str
    name: str
    status: str | None
    read: Callable[[], tuple[list[tuple[int, str, float | None, float | None]], dict[str, str]]]


# ------------------------------------------------------------------ SQLite store


def _database(path: Path) -> Path | None:
    if path.is_dir():
        found = [path / n for n in DB_NAMES if (path / n).is_file()]
        return found[0] if found else None
    return path if path.is_file() and (path.name in DB_NAMES or path.suffix in DB_SUFFIXES) else None


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)


def _is_mlflow_db(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return False
        with _connect(path) as con:
            columns = {row[1] for row in con.execute("pragma table_info(metrics)")}
            runs = {row[1] for row in con.execute("pragma table_info(runs)")}
    except (OSError, sqlite3.Error):
        return False
    return columns >= METRIC_COLUMNS and "run_uuid" in runs


def _sql_value(value: Any, is_nan: Any) -> float | None:
    if is_nan:
        return math.nan
    number_ = number(value)
    if number_ is not None and abs(number_) >= FLOAT_MAX:
        return math.copysign(math.inf, number_)
    return number_


def _sql_runs(path: Path) -> list[StoredRun]:
    try:
        with _connect(path) as con:
            rows = con.execute(
                "select run_uuid, coalesce(name, run_uuid), status from runs "
                "where coalesce(lifecycle_stage, 'active') <> 'deleted' order by start_time, run_uuid"
            ).fetchall()
            with_metrics = {r[0] for r in con.execute("select distinct run_uuid from metrics")}
    except sqlite3.Error as error:
        raise RunImportError(f"{path}: cannot read the MLflow database: {error}") from error

    def reader(run_uuid: str) -> Callable[[], tuple[list[Any], dict[str, str]]]:
        def read() -> tuple[list[Any], dict[str, str]]:
            with _connect(path) as con:
                metrics = con.execute(
                    "select step, key, value, is_nan, timestamp from metrics where run_uuid = ?", [run_uuid]
                ).fetchall()
                params = dict(
                    con.execute("select key, value from params where run_uuid = ?", [run_uuid]).fetchall()
                )
            rows = [
                (int(step or 0), key, _sql_value(value, is_nan), ts / 1000.0 if ts is not None else None)
                for step, key, value, is_nan, ts in metrics
            ]
            return rows, params

        return read

    return [StoredRun(r[0], str(r[1]), r[2], reader(r[0])) for r in rows if r[0] in with_metrics]


# ------------------------------------------------------------------ file store


def _is_run_folder(path: Path) -> bool:
    return (path / "meta.yaml").is_file() and (path / "metrics").is_dir()


def _run_folders(path: Path) -> list[Path]:
    """Run folders under path: itself, its children (an experiment) or grandchildren (mlruns)."""
    if not path.is_dir():
        return []
    if _is_run_folder(path):
        return [path]
    children = sorted(p for p in path.iterdir() if p.is_dir())
    runs = [c for c in children if _is_run_folder(c)]
    if runs:
        return runs
    return [g for c in children for g in sorted(c.iterdir()) if g.is_dir() and _is_run_folder(g)]


def _meta(folder: Path) -> dict[str, Any]:
    try:
        document = yaml.safe_load((folder / "meta.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return {}
    return document if isinstance(document, dict) else {}


def _file_run(folder: Path) -> StoredRun:
    meta = _meta(folder)
    name_file = folder / "tags" / "mlflow.runName"
    name = meta.get("run_name") or (
        name_file.read_text(encoding="utf-8").strip() if name_file.is_file() else None
    )
    status = meta.get("status")
    status_name = FILE_STORE_STATUS.get(status, str(status)) if status is not None else None

    def read() -> tuple[list[Any], dict[str, str]]:
        rows = []
        metrics = folder / "metrics"
        for file in sorted(p for p in metrics.rglob("*") if p.is_file()):
            key = file.relative_to(metrics).as_posix()
            for line_number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) not in (2, 3):
                    raise RunImportError(
                        f"{file}, line {line_number}: expected 'timestamp value step', found {line!r}"
                    )
                step = int(parts[2]) if len(parts) == 3 else 0
                stamp_ms = number(parts[0])
                rows.append((step, key, number(parts[1]), stamp_ms / 1000.0 if stamp_ms else None))
        params_dir = folder / "params"
        params = {
            p.relative_to(params_dir).as_posix(): p.read_text(encoding="utf-8").strip()
            for p in (sorted(params_dir.rglob("*")) if params_dir.is_dir() else [])
            if p.is_file()
        }
        return rows, params

    return StoredRun(folder.name, str(name or folder.name), status_name, read)


# ------------------------------------------------------------------ the importer


def stored_runs(path: Path) -> list[StoredRun]:
    database = _database(path)
    if database is not None and _is_mlflow_db(database):
        return _sql_runs(database)
    # a deleted run stays on disk in the file store until garbage-collected: left out
    return [_file_run(f) for f in _run_folders(path) if _meta(f).get("lifecycle_stage") != "deleted"]


def sniff(path: Path) -> bool:
    try:
        database = _database(path)
        if database is not None:
            return _is_mlflow_db(database)
        return bool(_run_folders(path))
    except OSError:
        return False


def list_runs(path: Path) -> list[tuple[str, str, Callable[[], RunData]]]:
    """(name, where, loader) of each run in the store (for multi_run: several runs, one build)."""
    return [
        (run.name, f"MLflow run {run.run_id} in {path}", partial(_load_run, path, run))
        for run in stored_runs(path)
    ]


def load(path: Path) -> RunData:
    runs = stored_runs(path)
    if not runs:
        raise RunImportError(f"{path}: an MLflow store without any run that logged metrics")
    if len(runs) > 1:
        names = ", ".join(r.name for r in runs[:10])
        raise RunImportError(
            f"{path}: the store holds {len(runs)} runs ({names}): diagnose the store, one report per run"
        )
    return _load_run(path, runs[0])


def _load_run(path: Path, run: StoredRun) -> RunData:
    rows, params = run.read()
    records = records_from_long(rows, f"MLflow run {run.run_id}")
    frames = build_frames(records, f"{path} (run {run.name})")
    notes = [f"MLflow run {run.run_id} ({run.name}), status {run.status}"]
    nan_count = sum(1 for r in rows if r[2] is not None and math.isnan(r[2]))
    if nan_count:
        notes.append(f"{nan_count} metric values stored as NaN (is_nan flag / 'nan'): kept as NaN, not as 0")
    schedule, config = settings_from_params(params, frames, notes)
    events = []
    last_step = max((r[0] for r in rows), default=0)
    if run.status in STATUS_EVENTS:
        events.append((last_step, STATUS_EVENTS[run.status]))
    elif run.status == "RUNNING":
        notes.append(
            "status RUNNING: the run is still training, or its process died without telling the store"
        )
    return frames.run(
        FORMAT, str(path), run_name=run.name, schedule=schedule, config=config, notes=notes, events=events
    )
