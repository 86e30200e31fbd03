"""A canonical run folder (the five files of ``importers.canonical``) -> RunData, unchanged.

What is read
------------
The files are found by suffix (``*train_log.csv``, ``*eval_log.csv``, ``*shard_info.csv``,
``*run_events.csv``, ``*run_config.json``) with any common prefix, in a folder or beside
one of them given as the path. The CSVs are read as text (``dtype=str``,
``keep_default_na=False``), so every cell is written back exactly as it was: no float
re-formatting, ``nan`` stays ``nan``, an empty cell stays empty, no rows are dropped,
sorted or de-duplicated. ``run_config.json`` is read as-is: ``run_name`` and
``lr_schedule`` go to their RunData fields, every other key (nested ones included) to
``RunData.config``, so ``write_run`` reproduces the document. A previous ``provenance``
block is not copied (``write_run`` writes a new one) but its notes are carried over.

By reference (``load(path, by_reference=True)``, what ``run-diagnosis diagnose`` uses): a CSV
whose header names exactly the canonical columns is not read at all, only named in
``RunData.files``, and ``write_run`` copies it byte for byte (a 1M-row log: a copy of 50 MB
instead of 4 s of pandas text in and out). The dbt build then reads the file as it was written
(a blank line, a cut-off last row, a BOM, CRLF line ends are seen and audited by the staging
models, as in a build on the folder itself); ``validate_run`` has checked it before. A file with
other columns is read and rewritten as above.

What cannot be known: nothing is inferred. A missing optional file is written empty (and
noted); a missing train log, or a file without one of its canonical columns, is an error (as in
``validate_run`` and the dbt build); columns outside the canonical ones are dropped by
``write_run`` (and noted).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.canonical import FILE_SUFFIXES, TRAIN_COLUMNS, RunData
from run_diagnosis.run_files import CSV_COLUMNS, csv_columns, run_file

FORMAT = "canonical"
DESCRIPTION = "the five canonical files (*train_log.csv, *eval_log.csv, ...): their folder or one of them"

EXPECTED = ", ".join(f"*{suffix}" for suffix in FILE_SUFFIXES.values())


def sniff(path: Path) -> bool:
    """A folder with one *train_log.csv (or one of the five files) whose header has step and loss."""
    try:
        folder, prefix = locate(path)
        header = pd.read_csv(run_file(folder, "train", prefix), nrows=0, dtype=str).columns
    except (RunImportError, OSError, ValueError, pd.errors.EmptyDataError, pd.errors.ParserError):
        return False
    return "step" in header and "loss" in header


def locate(path: Path) -> tuple[Path, str]:
    """The folder and the common file-name prefix of a canonical run."""
    train_suffix = FILE_SUFFIXES["train"]
    if path.is_dir():
        logs = sorted(path.glob(f"*{train_suffix}"))
        if not logs:
            raise RunImportError(
                f"{path}: no *{train_suffix} here: "
                f"expected the canonical files {EXPECTED} (any common prefix)"
            )
        if len(logs) > 1:
            shown = ", ".join(p.name for p in logs)
            raise RunImportError(f"{path}: holds {len(logs)} train logs ({shown}): pass the one to read")
        return path, logs[0].name[: -len(train_suffix)]
    suffix = next((s for s in FILE_SUFFIXES.values() if path.name.endswith(s)), None)
    if suffix is None:
        raise RunImportError(f"{path}: not a canonical file: expected a name ending in one of {EXPECTED}")
    prefix = path.name[: -len(suffix)]
    if not (path.parent / f"{prefix}{train_suffix}").is_file():
        raise RunImportError(
            f"{path.parent}: no {prefix}{train_suffix} beside {path.name}: the canonical files "
            f"{EXPECTED} must include the train log"
        )
    return path.parent, prefix


def load(path: Path, *, by_reference: bool = False) -> RunData:
    """Read the five files as they are (see the module docstring); by_reference: a CSV with
    exactly the canonical columns is named in RunData.files instead (its frame left empty)."""
    folder, prefix = locate(path)
    notes: list[str] = []
    frames: dict[str, pd.DataFrame] = {}
    files: dict[str, Path] = {}
    for kind in CSV_COLUMNS:
        csv_path = run_file(folder, kind, prefix)
        frames[kind] = _read_csv(csv_path, kind, notes, header_only=by_reference)
        own = set(csv_columns(kind, list(frames[kind].columns)))
        if by_reference and csv_path.is_file() and set(frames[kind].columns) == own:
            files[kind] = csv_path
        elif by_reference and csv_path.is_file():  # other columns: read, and rewritten by write_run
            frames[kind] = _read_csv(csv_path, kind, [])
    missing = [c for c in ("step", "loss") if c not in frames["train"].columns]
    if missing:
        train_path = run_file(folder, "train", prefix)
        raise RunImportError(
            f"{train_path}: no {' or '.join(missing)} column: expected columns {','.join(TRAIN_COLUMNS)}; "
            f"found {','.join(frames['train'].columns)}"
        )
    document = _read_config(run_file(folder, "config", prefix), notes)
    schedule = document.pop("lr_schedule", None) or {}
    if not isinstance(schedule, dict):
        raise RunImportError(
            f"{run_file(folder, 'config', prefix)}: key 'lr_schedule': expected an object; "
            f"found {schedule!r:.60}"
        )
    run_name = document.pop("run_name", None)
    notes = _carried_notes(document.pop("provenance", None)) + notes
    return RunData(
        source_format=FORMAT,
        source_path=str(path),
        train=frames["train"],
        evals=frames["eval"],
        shards=frames["shards"],
        events=frames["events"],
        run_name=run_name if run_name is None else str(run_name),
        schedule=schedule,
        config=document,
        notes=notes,
        files=files,
    )


def _read_csv(path: Path, kind: str, notes: list[str], header_only: bool = False) -> pd.DataFrame:
    columns = CSV_COLUMNS[kind]
    if not path.is_file():
        if kind == "train":
            raise RunImportError(f"{path.parent}: no {path.name}: expected the canonical files {EXPECTED}")
        notes.append(f"no {path.name}: written empty")
        return pd.DataFrame(columns=columns)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, nrows=0 if header_only else None)
    except pd.errors.EmptyDataError as error:
        raise RunImportError(
            f"{path}: the file is empty: expected a header row {','.join(columns)} (rows may be absent)"
        ) from error
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise RunImportError(f"{path}: not readable as CSV: {error}") from error
    absent = [c for c in columns if c not in frame.columns]
    extra = [str(c) for c in frame.columns if c not in csv_columns(kind, list(frame.columns))]
    if absent:  # a dropped column is an input error, as in validate_run and the dbt build
        raise RunImportError(
            f"{path}: row 1 (header): missing column(s) {', '.join(absent)}: expected "
            f"{','.join(columns)}; found {','.join(map(str, frame.columns))}"
        )
    if extra:
        notes.append(f"{path.name}: columns {', '.join(extra)} are not canonical and are not written")
    return frame


def _read_config(path: Path, notes: list[str]) -> dict[str, Any]:
    if not path.is_file():
        notes.append(f"no {path.name}: schedule and config unknown (written as nulls)")
        return {}
    try:
        # utf-8-sig: a BOM is accepted as in the CSVs; NaN/Infinity kept as text (not turned into
        # "unknown"), so the diagnosis reports them as impossible values
        document = json.loads(path.read_text(encoding="utf-8-sig"), parse_constant=str)
    except UnicodeDecodeError as error:
        raise RunImportError(f"{path}: not UTF-8 text (byte {error.start}): expected JSON") from error
    except json.JSONDecodeError as error:
        raise RunImportError(
            f"{path}: not valid JSON at line {error.lineno}, column {error.colno}: {error.msg}; "
            "expected the run_config.json object"
        ) from error
    if not isinstance(document, dict):
        raise RunImportError(f"{path}: expected a JSON object; found a {type(document).__name__}")
    return document


def _carried_notes(provenance: Any) -> list[str]:
    if not isinstance(provenance, dict):
        return []
    notes = [str(n) for n in provenance.get("notes") or []]
    origin = provenance.get("source_format")
    if origin and origin != FORMAT:
        notes.insert(
            0, f"first imported from {origin} ({provenance.get('source_path')}); re-read as canonical"
        )
    return notes
