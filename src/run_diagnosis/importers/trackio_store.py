"""Trackio projects (Hugging Face's local tracker; TRL's default ``report_to``): the SQLite file.

What is read
------------
``~/.cache/huggingface/trackio/<project>.db`` (or a folder holding one): the table
``metrics(run_id, run_name, step, timestamp, metrics)``, one row per ``trackio.log`` call with the
logged values as a JSON object, and ``configs(run_name, config)``, the run's config as JSON.
Read with Python's sqlite3, the file opened read-only. A project holds several runs: each run
name is one run (``list_runs``), built together with the others. The Parquet export of a project
(``<project>.parquet``, the JSON flattened into columns) is read by the ``parquet`` importer.

Trackio's conventions, modelled
-------------------------------
* **Non-finite values are text**: Trackio stores NaN as ``"NaN"`` and infinities as
  ``"Infinity"`` / ``"-Infinity"`` inside the JSON (JSON has no NaN): read back as NaN and inf.
* The names are the logging code's: TRL / transformers' ``TrackioCallback`` logs ``train/loss``,
  ``train/learning_rate``, ``train/grad_norm`` (before clipping), ``eval/loss``; they go through
  the resolver. ``timestamp`` is ISO text: step times are its deltas per step.
* The config of a TRL / transformers run is its TrainingArguments: schedule, clip limit and
  intervals are read from it as for ``trainer_state.json``.
"""

from __future__ import annotations

import json
import sqlite3
from functools import partial
from pathlib import Path
from typing import Any

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import flat_keys
from run_diagnosis.importers.tracker_exports import Loader, run_data, wide_records

FORMAT = "trackio"
DESCRIPTION = (
    "Trackio project database <project>.db (metrics(run_name, step, timestamp, metrics JSON), configs)"
)

SQLITE_MAGIC = b"SQLite format 3\x00"
METRIC_COLUMNS = {"run_name", "step", "timestamp", "metrics"}


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)


def _is_project(path: Path) -> bool:
    try:
        if not path.is_file() or path.suffix != ".db":
            return False
        with path.open("rb") as handle:
            if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return False
        with _connect(path) as con:
            columns = {row[1] for row in con.execute("pragma table_info(metrics)")}
    except (OSError, sqlite3.Error):
        return False
    return columns >= METRIC_COLUMNS


def _project(path: Path) -> Path | None:
    if path.is_dir():
        found = sorted(p for p in path.glob("*.db") if _is_project(p))
        return found[0] if len(found) == 1 else None
    return path if _is_project(path) else None


def sniff(path: Path) -> bool:
    return _project(path) is not None


def _json(text: Any, where: str) -> dict[str, Any]:
    """A JSON column (Trackio writes text or orjson bytes) as a dict."""
    try:
        document = json.loads(text) if isinstance(text, str | bytes) else text
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        why = error.msg if isinstance(error, json.JSONDecodeError) else error.reason
        raise RunImportError(f"{where}: not valid JSON ({why})") from error
    return document if isinstance(document, dict) else {}


def list_runs(path: Path) -> list[tuple[str, str, Loader]]:
    project = _project(path)
    if project is None:
        return []
    try:
        with _connect(project) as con:
            names = [
                r[0] for r in con.execute("select run_name from metrics group by run_name order by min(id)")
            ]
    except sqlite3.Error as error:
        raise RunImportError(f"{project}: cannot read the Trackio project: {error}") from error
    return [(name, f"Trackio run {name!r} in {project}", partial(_load_run, project, name)) for name in names]


def load(path: Path) -> RunData:
    runs = list_runs(path)
    if not runs:
        raise RunImportError(f"{path}: not a Trackio project database with logged metrics")
    if len(runs) > 1:
        raise RunImportError(
            f"{path}: the project holds {len(runs)} runs ({', '.join(r[0] for r in runs[:10])}): "
            "diagnose the project, one report per run"
        )
    return runs[0][2]()


def _load_run(project: Path, name: str) -> RunData:
    with _connect(project) as con:
        rows = con.execute(
            "select step, timestamp, metrics from metrics where run_name = ? order by id", [name]
        ).fetchall()
        tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        configs = (
            con.execute("select config from configs where run_name = ?", [name]).fetchall()
            if "configs" in tables
            else []
        )
    wide = [
        {
            "step": step,
            "timestamp": timestamp,
            **flat_keys(_json(metrics, f"{project}, run {name}, step {step}")),
        }
        for step, timestamp, metrics in rows
    ]
    params = flat_keys(_json(configs[0][0], f"{project}, config of run {name}")) if configs else {}
    notes = [f"Trackio run {name!r} of project {project.stem}"]
    return run_data(FORMAT, str(project), name, wide_records(wide, set(), f"{project}"), params, notes)
