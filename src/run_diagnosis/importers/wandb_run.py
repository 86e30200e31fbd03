"""A W&B run folder (``wandb/run-<date>-<id>/``) read from its ``run-<id>.wandb`` file -> canonical run.

What is read
------------
The ``.wandb`` file is W&B's local datastore: a 7-byte header (``:W&B``, magic, version),
then LevelDB-log framing (32 KiB blocks; each chunk has a 7-byte header: CRC32, length,
type FULL/FIRST/MIDDLE/LAST) around protobuf ``Record`` messages. This module decodes the
protobuf wire format by hand (no ``wandb`` package needed) and keeps:

* ``history`` records (field 2): ``HistoryItem`` messages (``wandb_internal.proto``) of a name
  and ``value_json`` (field 16), one wide row per record, read like a W&B history export
  (``importers.wandb_history``: the same column aliases, step, step times from ``_runtime``).
  The name is ``key`` (field 1, older clients) or ``nested_key`` (field 2, a repeated string:
  the path of a metric logged as a nested dict; newer clients write every name there, a
  one-element path for a flat name). As W&B's own reader does, a path is joined with ".", and a
  value that is a JSON object is flattened the same way (``{"a": {"b": 1}}`` is ``a.b``), except
  W&B media and table objects (an object with ``_type``), which are not scalars;
* the ``exit`` record (field 18): without one the run did not finish (killed, crashed or
  still writing), which becomes an event at the last logged step;
* the config from ``files/config.yaml`` beside it (HF Trainer arguments when the run used
  the Trainer), as ``wandb_history`` reads it.

A file cut off while the run was writing (a chunk runs past the end) is read up to the last
complete record; that, or a ``files/wandb-summary.json`` whose ``_step`` is beyond the last
history record, makes a "partial copy: ..." event at the last step (the report says the log is
partial before judging it).

A run folder whose ``.wandb`` file was not kept (it is often the one large file left out of a
commit) and whose console output (``files/output.log``) no importer reads is read from its
``files/wandb-summary.json``: the values the run logged last, one row at its ``_step``
(``summary_only``, ``load_summary``). An epoch mean of the training loss stands for it there before
a per-step one (the last batch's loss is one noisy draw). Only the checks that need no curve can
judge such a run (the accuracy gap, a level at chance); the report lists the others as unable to
run, and a note says the run was read from its final values.

What cannot be known: console output, system metrics and the summaries' other values are not
read; ``grad_norm_square`` (a squared norm) is not a gradient norm.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from run_diagnosis.importers import RunImportError, metric_names
from run_diagnosis.importers.canonical import EVENT_COLUMNS, RunData
from run_diagnosis.importers.wandb_history import load_table
from run_diagnosis.importers.wide_table import Table

FORMAT = "wandb_run"
# beside config.yaml: its `_step` (how far the run got); for a run without history, its values
SUMMARY_FILE = "wandb-summary.json"
SUMMARY_METRIC_FIELDS = {"loss", "val_loss", "val_accuracy", "test_accuracy", "test_loss"}
DESCRIPTION = "W&B run folder (run-*.wandb datastore file, with files/config.yaml)"
HEADER = struct.Struct("<4sHB")
HEADER_IDENT, HEADER_MAGIC = b":W&B", 0xBEE1
CHUNK = struct.Struct("<IHB")
BLOCK = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
HISTORY_FIELD, EXIT_FIELD = 2, 18
ITEM_FIELD, KEY_FIELD, NESTED_KEY_FIELD, VALUE_FIELD = 1, 1, 2, 16
MEDIA_TYPE_KEY = "_type"  # W&B data types (images, tables, histograms) serialise with it


def _summary_path(folder: Path) -> Path | None:
    """The summary of a W&B run folder (``files/wandb-summary.json``). Only there: a folder that
    holds a summary beside a log of its own (the ``files/`` folder itself, with ``output.log``) is
    read from that log by the importer that reads it."""
    path = folder / "files" / SUMMARY_FILE
    return path if path.is_file() else None


def summary_row(folder: Path) -> dict[str, Any] | None:
    """The numbers of a W&B run folder's wandb-summary.json, flattened as the history is (None
    without a readable one). W&B's own keys (``_wandb``, ``_timestamp``...) are kept except its
    internal record; an epoch mean of a metric drops the per-step or unqualified twin of the same
    field and split (train_loss_local / train_loss_epoch: the epoch mean is the level)."""
    path = _summary_path(folder)
    if path is None:
        return None
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict):
        return None
    row: dict[str, Any] = {}
    for key, value in summary.items():
        if key != "_wandb":
            _add_scalars(row, key, value)
    meanings = {key: metric_names.resolve(key) for key in row}
    epoch_fields = {(m.field, m.split) for m in meanings.values() if m.field and m.aggregation == "epoch"}
    kept = {}
    for key, value in row.items():
        meaning = meanings[key]
        if meaning.aggregation == "epoch" or (meaning.field, meaning.split) not in epoch_fields:
            kept[key] = value
    return kept


def _readable_summary(path: Path) -> dict[str, Any] | None:
    """The summary row of a W&B run folder without its .wandb history, when it holds a loss or an
    accuracy at a step past 0 (a run that logged nothing, or stopped in its first minute, has only
    W&B's own keys); else None."""
    if not path.is_dir() or any(path.glob("*.wandb")):
        return None
    row = summary_row(path) or {}
    fields = {metric_names.resolve(key).field for key in row}
    step = row.get("_step")
    has_metrics = bool(fields & SUMMARY_METRIC_FIELDS) and isinstance(step, int | float) and step > 0
    return row if has_metrics else None


def summary_only(path: Path) -> bool:
    """A W&B run folder read from its summary alone (_readable_summary)."""
    return _readable_summary(path) is not None


def load_summary(path: Path, row: dict[str, Any]) -> RunData:
    """A run read from its summary alone (``row``, _readable_summary): one row of final values at the
    run's last ``_step``."""
    summary = path / "files" / SUMMARY_FILE
    frame = pd.DataFrame({key: pd.Series([value], dtype="object") for key, value in row.items()})
    table = Table(frame, [SUMMARY_FILE], summary)
    run = load_table(table, path, summary, config_dir=summary.parent)
    run.source_format = FORMAT
    run.run_name = path.name.removeprefix("run-")
    run.notes.insert(
        0,
        f"{path}: a W&B run folder without its run-<id>.wandb history and no console log this tool reads: "
        f"read from {SUMMARY_FILE}, the values the run logged last (one row at W&B step "
        f"{int(row['_step'])}); "
        "the checks that need a curve cannot run",
    )
    return run


def _wandb_file(path: Path) -> Path | None:
    if path.is_file():
        return path if path.suffix == ".wandb" else None
    if not path.is_dir():
        return None
    found = sorted(path.glob("*.wandb"))
    return found[0] if len(found) == 1 else None


def sniff(path: Path) -> bool:
    """A ``.wandb`` file with W&B's header, or a folder holding exactly one; or a run folder read
    from its summary alone (summary_only)."""
    file = _wandb_file(path)
    if file is None:
        return summary_only(path)
    try:
        with file.open("rb") as handle:
            ident, magic, _ = HEADER.unpack(handle.read(HEADER.size))
    except (OSError, struct.error):
        return False
    return ident == HEADER_IDENT and magic == HEADER_MAGIC


def records(data: bytes) -> tuple[list[bytes], bool]:
    """The protobuf records of a datastore file, and whether the file ends cleanly."""
    out: list[bytes] = []
    pending = b""
    position = HEADER.size
    while position + CHUNK.size <= len(data):
        left = BLOCK - position % BLOCK
        if left < CHUNK.size:  # block trailer padding
            position += left
            continue
        _, length, kind = CHUNK.unpack_from(data, position)
        if length == 0 and kind == 0:  # zero padding to the end of the block
            position += left
            continue
        chunk = data[position + CHUNK.size : position + CHUNK.size + length]
        if len(chunk) < length:
            return out, False
        position += CHUNK.size + length
        if kind == FULL:
            out.append(chunk)
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            out.append(pending + chunk)
            pending = b""
    return out, not pending and len(data) - position < CHUNK.size


def _varint(data: bytes, index: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if index >= len(data):
            raise ValueError("truncated varint")
        byte = data[index]
        index += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, index


def fields(message: bytes) -> Iterator[tuple[int, Any]]:
    """(field number, value) of a protobuf message: ints for varints, bytes otherwise."""
    index = 0
    value: int | bytes
    while index < len(message):
        key, index = _varint(message, index)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, index = _varint(message, index)
        elif wire == 2:
            size, index = _varint(message, index)
            value, index = message[index : index + size], index + size
        elif wire == 1:
            value, index = message[index : index + 8], index + 8
        elif wire == 5:
            value, index = message[index : index + 4], index + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, value


def _item(item: bytes) -> tuple[str, bytes] | None:
    """(name, value_json) of one HistoryItem: the ``nested_key`` path joined with ".", else ``key``;
    None for an item without a name or a value."""
    key: bytes | None = None
    path: list[str] = []
    text: bytes | None = None
    for number, value in fields(item):
        if not isinstance(value, bytes):
            continue
        if number == KEY_FIELD:
            key = value
        elif number == NESTED_KEY_FIELD:
            path.append(value.decode("utf-8"))
        elif number == VALUE_FIELD:
            text = value
    name = ".".join(path) if path else (key or b"").decode("utf-8")
    if not name or text is None:
        return None
    return name, text


def _add_scalars(row: dict[str, Any], name: str, value: Any) -> None:
    """Numbers of one logged value into ``row``: a JSON object is flattened with "." (W&B's own
    reading of a nested dict); W&B media/table objects and text are not scalars."""
    if isinstance(value, dict):
        if MEDIA_TYPE_KEY in value:
            return
        for key, inner in value.items():
            _add_scalars(row, f"{name}.{key}", inner)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        row[name] = value


def _history_row(message: bytes) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for number, item in fields(message):
        if number != ITEM_FIELD or not isinstance(item, bytes):
            continue
        found = _item(item)
        if found is not None:
            _add_scalars(row, found[0], json.loads(found[1].decode("utf-8")))
    return row


def _summary_step(folder: Path) -> int | None:
    """The `_step` the run's wandb-summary.json reached (None without a readable one): when it is
    beyond the last history record, the .wandb file is a copy taken while the run was writing."""
    path = folder / SUMMARY_FILE
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    step = summary.get("_step") if isinstance(summary, dict) else None
    return int(step) if isinstance(step, int | float) and not isinstance(step, bool) else None


def load(path: Path) -> RunData:
    """Read the run's ``.wandb`` file, or its summary alone (see the module docstring)."""
    file = _wandb_file(path)
    if file is None:
        row = _readable_summary(path)
        if row is not None:
            return load_summary(path, row)
        raise RunImportError(f"{path}: expected one run-*.wandb file (a W&B run folder)")
    data = file.read_bytes()
    if len(data) < HEADER.size or HEADER.unpack_from(data)[0] != HEADER_IDENT:
        raise RunImportError(f"{file}: not a W&B datastore file (no ':W&B' header)")
    found, clean = records(data)
    rows: list[dict[str, Any]] = []
    exited = False
    try:
        for record in found:
            for number, value in fields(record):
                if number == HISTORY_FIELD and isinstance(value, bytes):
                    rows.append(_history_row(value))
                elif number == EXIT_FIELD:
                    exited = True
    except (ValueError, UnicodeDecodeError) as error:
        raise RunImportError(f"{file}: a record cannot be decoded: {error}") from error
    if not rows:
        raise RunImportError(f"{file}: no history records (nothing was logged with wandb.log)")
    keys = list(dict.fromkeys(key for row in rows for key in row))
    frame = pd.DataFrame({key: pd.Series([row.get(key) for row in rows], dtype="object") for key in keys})
    table = Table(frame, [f"history record {n}" for n in range(1, len(rows) + 1)], file)
    config_dir = file.parent / "files" if (file.parent / "files").is_dir() else file.parent
    run = load_table(table, path, file, config_dir=config_dir)
    run.source_format = FORMAT
    run.run_name = file.stem.removeprefix("run-")
    last = int(run.train["step"].max()) if not run.train.empty else 0
    ends: list[tuple[int, str]] = []
    if not clean:
        run.notes.append(f"{file.name} ends inside a record: the file was copied while the run was writing")
        cut = f"partial copy: {file.name} ends inside a record, copied while the run was writing"
        ends.append((last, cut))
    reached = _summary_step(config_dir)
    history_steps = [int(row["_step"]) for row in rows if isinstance(row.get("_step"), int | float)]
    logged = max(history_steps, default=None)
    if reached is not None and logged is not None and reached > logged:
        text = (
            f"partial copy: {file.name} holds history up to W&B step {logged}, but the run's summary "
            f"(wandb-summary.json) reached step {reached}"
        )
        run.notes.append(text)
        ends.append((last, text))
    if not exited:
        no_exit = "run ended without an exit record: killed, crashed or still running (W&B datastore)"
        ends.append((last, no_exit))
    if ends:
        run.events = pd.concat([run.events, pd.DataFrame(ends, columns=EVENT_COLUMNS)], ignore_index=True)
    run.notes.append(
        f"{len(rows)} history records read from {file.name}; exit record {'present' if exited else 'absent'}"
    )
    if any(isinstance(v, float) and math.isnan(v) for row in rows for v in row.values()):
        run.notes.append("some history values are NaN")
    return run
