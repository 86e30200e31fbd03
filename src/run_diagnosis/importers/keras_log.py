"""Keras per-epoch logs: a ``CSVLogger`` file or a saved ``History.history`` JSON.

What is read
------------
* ``keras.callbacks.CSVLogger(filename)`` (default name ``training.log``, often ``*.csv``): a
  header ``epoch,<metric>,...`` (the metric columns sorted by name; the separator is CSVLogger's
  ``separator``: ``,``, ``;`` or a tab; a title line or two above it is skipped), one row per
  epoch, the epoch counted from 0. Appending to an existing file (``append=True``, a resumed fit) repeats
  epochs: rows are kept as logged, so the replay shows.
* ``json.dump(history.history, f)``: ``{"loss": [...], "val_loss": [...], ...}``, one list entry
  per epoch (optionally with an ``"epoch"`` list).

Keras' logging conventions, modelled
------------------------------------
* **Rows are epochs**: each value is the mean over the epoch's batches (the training loss) or
  the evaluation after the epoch (``val_*``). The canonical step is the number of epochs
  completed (epoch + 1), so a spike inside an epoch is invisible and the step-level checks see
  one point per epoch; the notes say so.
* Names go through the resolver: ``loss``, ``val_loss``, ``accuracy`` / ``val_accuracy`` (also
  ``sparse_categorical_accuracy``), ``lr`` / ``learning_rate`` (logged by
  ``ReduceLROnPlateau`` / ``LearningRateScheduler``). Keras logs no gradient norm and no time:
  those checks cannot run.
* A NaN loss is written as ``nan`` by CSVLogger (``TerminateOnNaN`` then stops the fit): kept.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from run_diagnosis.importers import RunImportError, script_settings
from run_diagnosis.importers.aliases import files_to_read, read_text, sniff_path, writes_decimal_commas
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import Record, build_frames, number, single_file
from run_diagnosis.importers.metric_names import resolve
from run_diagnosis.run_files import ROWS_ARE_KEY

FORMAT = "keras"
DESCRIPTION = "Keras CSVLogger file (epoch,loss,val_loss,...) or History.history JSON; one row per epoch"

CSV_SUFFIXES = {".csv", ".log", ".txt", ""}
JSON_SUFFIXES = {".json"}
SEPARATORS = (",", ";", "\t")
MAX_JSON_BYTES = 64 * 1024 * 1024  # a History JSON is small; a larger .json is not one
HEADER_SEARCH_LINES = 3  # a title line or two before the header (seen in real files) is skipped


def _candidates(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in CSV_SUFFIXES | JSON_SUFFIXES)


def _csv_header(path: Path) -> tuple[int, str, list[str]] | None:
    """(line index, separator, columns) of a CSVLogger header: the first of the file's first
    HEADER_SEARCH_LINES lines that starts with ``epoch`` and a separator (CSVLogger's
    ``separator`` argument: ``,`` by default, ``;`` or a tab); None when there is none."""
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            lines = [handle.readline() for _ in range(HEADER_SEARCH_LINES)]
    except OSError:
        return None
    for index, line in enumerate(lines):
        for separator in SEPARATORS:
            if line.startswith(f"epoch{separator}"):
                return index, separator, [h.strip() for h in next(csv.reader([line], delimiter=separator))]
    return None


def _is_history(document: Any) -> bool:
    if not isinstance(document, dict) or "loss" not in document:
        return False
    lists = [v for v in document.values() if isinstance(v, list)]
    return len(lists) == len(document) and len({len(v) for v in lists}) == 1 and len(lists[0]) > 0


def _sniff_file(path: Path) -> bool:
    if path.suffix in JSON_SUFFIXES:
        try:
            if path.stat().st_size > MAX_JSON_BYTES:
                return False
            return _is_history(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return False
    if path.suffix not in CSV_SUFFIXES:
        return False
    found = _csv_header(path)
    if found is None:
        return False
    columns = found[2]
    # CSVLogger writes one row an epoch, the epoch and the logs' metrics: a batch or step counter
    # beside the epoch ('epoch,batch,loss') is a per-batch table of another writer
    return "loss" in columns and len(columns) > 2 and not any(resolve(c).field == "step" for c in columns)


def sniff(path: Path) -> bool:
    """One Keras log, or a folder holding exactly one: a folder of several (a training log beside
    a validation log, appended sessions per file) is the generic reader's, which reads a run
    written one file per split."""
    if not path.is_dir():
        return sniff_path(path, _candidates, _sniff_file)
    try:
        return len(files_to_read(path, _candidates, _sniff_file)) == 1
    except OSError:  # a folder that cannot be listed or a file that cannot be read: as sniff_path does
        return False


def load(path: Path) -> RunData:
    source = single_file(path, _candidates, _sniff_file, "Keras log (CSVLogger file or History JSON)")
    records, decimal_comma = (
        (_json_records(source), False) if source.suffix in JSON_SUFFIXES else _csv_records(source)
    )
    frames = build_frames(records, str(source))
    notes = [
        "each row is an epoch: step = epochs completed (epoch + 1); the training loss is the mean over the "
        "epoch's batches, so a spike inside an epoch is invisible",
    ]
    if decimal_comma:
        notes.append(
            "the file writes decimal commas (0,4216: a locale's export): every comma is read as a "
            "decimal point"
        )
    # one row an epoch, always (CSVLogger and History write at epoch end): the checks judge epochs as
    # epochs (a jump of an epoch's mean, a slow epoch) and say which checks need one row a step
    config: dict[str, Any] = {"total_steps": None, ROWS_ARE_KEY: "epoch"}
    # the epochs a training script beside the log plans (model.fit(..., epochs=50)): step N is
    # epoch N completed, so the plan's last step is its epoch count
    logged = int(frames.train["step"].max()) if not frames.train.empty else 0
    planned = script_settings.planned_epochs(source.parent, notes, logged)
    if planned is not None:
        config["total_steps"] = planned[0]
        notes.append(f"total_steps = {planned[0]}: the planned epochs, from {planned[1]} beside the log")
    config.update(script_settings.early_stopping(source.parent, notes))
    return frames.run(FORMAT, str(source), config=config, notes=notes)


def _csv_records(path: Path) -> tuple[list[Record], bool]:
    """The rows, and whether the file writes decimal commas (a cell such as 0,4216 or 12,5, which no
    thousands grouping writes: then its 1,218 is 1.218 too)."""
    read_text(path, "a Keras CSVLogger file")  # a clear error for a file that is not UTF-8 text
    found = _csv_header(path)
    if found is None:
        raise RunImportError(
            f"{path}: no CSVLogger header (a line starting 'epoch,' or 'epoch;') in its first lines"
        )
    skip, separator, _ = found
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, sep=separator, skiprows=skip)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise RunImportError(f"{path}: not readable as a CSVLogger file: {error}") from error
    decimal = writes_decimal_commas(frame.to_numpy().ravel())
    records = []
    for index, row in enumerate(frame.to_dict("records")):
        line = index + skip + 2
        epoch = number(row.pop("epoch"))
        if epoch is None or not math.isfinite(epoch) or epoch != int(epoch):
            raise RunImportError(f"{path}, line {line}: epoch {epoch!r} is not a whole number")
        values = {str(k): number(v, decimal) for k, v in row.items()}
        records.append(Record(int(epoch) + 1, values, f"line {line}"))
    return records, decimal


def _json_records(path: Path) -> list[Record]:
    document = json.loads(read_text(path, "a Keras History JSON"))
    if not _is_history(document):
        raise RunImportError(f"{path}: expected {{'loss': [...], 'val_loss': [...]}} with equal-length lists")
    epochs = document.pop("epoch", None)
    length = len(document["loss"])
    records = []
    for index in range(length):
        epoch = number(epochs[index]) if epochs else index
        step = int(epoch) + 1 if epoch is not None and math.isfinite(epoch) else index + 1
        records.append(Record(step, {k: number(v[index]) for k, v in document.items()}, f"entry {index}"))
    return records
