"""TensorBoard event files (``events.out.tfevents.*``) -> canonical run.

What is read
------------
An event file, or a folder searched recursively for them, read with TensorBoard's own reader
(``event_file_loader.RawEventFileLoader``); legacy ``simple_value`` scalars (PyTorch's
SummaryWriter, Megatron) and TF2 ``scalars`` tensors are read alike, as the float32 written.
Scalar tags are read by the metric-name resolver (``importers.metric_names`` through
``aliases.column_map``): Megatron-LM's ``lm loss``, ``grad-norm``, ``learning-rate``,
``iteration-time``, ``lm loss validation``, Hugging Face's ``train/loss``, ``eval/loss``,
Lightning's ``train_loss``, ``valid_loss``, ``lr-AdamW`` ... are read from their words, and a
copy plotted against samples (``lm loss vs samples``) is never taken. The file named in
``$RUN_DIAGNOSIS_ALIASES`` wins. Tags it cannot place are listed as "not understood".

Rows are kept as logged: values of different tags are paired by step (the k-th value of a tag
at step s goes with the k-th value of the other tags at step s), rows come in the order their
step first appears, files are read in the order TensorBoard names them (creation time). A step
written twice (a resumed run) stays twice.

Events: a drop of ``loss-scale`` becomes "loss scale overflow: scale reduced to X"; every
event file after the first in the run folder that holds training scalars means a new writer,
i.e. the training process was restarted, and is written as such at the step the new file
starts (a later file with only evaluation/test tags is the test phase after ``fit()``).
A Hugging Face ``args`` text summary (``TrainingArguments`` as JSON) gives the config
through the Hugging Face rules of ``training_args``.

Only one run folder is read: event files in several folders (``lightning_logs/version_0``,
``version_1`` ...) are an error naming them; folders without scalars (``add_hparams``
sub-folders) are ignored with a note.

What cannot be known
--------------------
* Checkpoints, interrupts and errors are not in event files.
* Without an ``args`` text summary the config is unknown (Megatron does not write its arguments
  to TensorBoard); each unknown key is noted.
* Step time only when a time tag (``iteration-time``) was logged; wall-clock stamps are not
  turned into step times (they include evaluation and logging gaps).
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tensorboard.backend.event_processing import event_file_loader
from tensorboard.compat.proto import event_pb2
from tensorboard.util import tensor_util

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import ColumnMap, column_map, evaluation_sets, load_aliases, metric_frame
from run_diagnosis.importers.canonical import EVENT_COLUMNS, TRAIN_COLUMNS, RunData
from run_diagnosis.importers.training_args import (
    config_from,
    run_results,
    schedule_from_args,
    steps_per_epoch_from_log,
)
from run_diagnosis.run_files import OPTIONAL_EVAL_COLUMNS, csv_columns

FORMAT = "tensorboard"
DESCRIPTION = "TensorBoard event files (events.out.tfevents.*): a file, or a folder searched recursively"

EVENT_FILE_MARK = "tfevents"
TRAIN_FIELDS = ("loss", "grad_norm", "learning_rate", "step_time_sec")
EVAL_FIELDS = ("val_loss", "val_accuracy", *OPTIONAL_EVAL_COLUMNS)
SCALAR_PLUGIN = "scalars"
LEGACY_KINDS = {"histo": "histograms", "image": "images", "audio": "audio", "tensor": "tensor"}


@dataclass
class _EventFile:
    """What one event file holds: scalar points in file order, and the other tags by plugin."""

    path: Path
    points: list[tuple[str, int, float]] = field(default_factory=list)
    other_tags: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    records: int = 0
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- finding files


def _is_event_file(path: Path) -> bool:
    return path.is_file() and EVENT_FILE_MARK in path.name


def _event_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted((p for p in path.rglob(f"*{EVENT_FILE_MARK}*") if p.is_file()), key=_file_order)
    return [path] if _is_event_file(path) else []


def _file_order(path: Path) -> tuple[str, int, str]:
    """Folder, then creation time in the name (events.out.tfevents.<unix time>.<host>...)."""
    found = re.search(r"tfevents\.(\d+)", path.name)
    return (str(path.parent), int(found.group(1)) if found else 0, path.name)


def sniff(path: Path) -> bool:
    """True for an event file, or a folder with one anywhere below it."""
    try:
        if path.is_dir():
            return next((p for p in path.rglob(f"*{EVENT_FILE_MARK}*") if p.is_file()), None) is not None
        return _is_event_file(path)
    except OSError:
        return False


# --------------------------------------------------------------------------- reading one file


def _complete_records(path: Path) -> tuple[int, int, int]:
    """(complete TFRecord frames, bytes they span, file size), from the frame lengths alone."""
    size = path.stat().st_size
    count = offset = 0
    with path.open("rb") as handle:
        while offset + 12 <= size:
            handle.seek(offset)
            (length,) = struct.unpack("<Q", handle.read(8))
            end = offset + 12 + length + 4
            if end > size:
                break
            count, offset = count + 1, end
    return count, offset, size


def _float32(value: float | np.floating[Any]) -> float:
    """A float32 as written (0.1, not 0.10000000149011612): its shortest decimal form."""
    return float(str(np.float32(value)))


def _tensor_scalar(tensor: Any) -> float:
    """The number in a scalar tensor (TF2 summaries); NaN if it holds more than one value."""
    if len(tensor.float_val) == 1 and not tensor.tensor_content:
        return _float32(tensor.float_val[0])
    if len(tensor.double_val) == 1 and not tensor.tensor_content:
        return float(tensor.double_val[0])
    array = tensor_util.make_ndarray(tensor)
    value = array.reshape(-1)[0] if array.size == 1 else math.nan
    return _float32(value) if isinstance(value, np.float32) else float(value)


def _text(tensor: Any) -> str:
    array = tensor_util.make_ndarray(tensor).reshape(-1)
    return array[0].decode("utf-8", errors="replace") if array.size else ""


def _events(path: Path, file: _EventFile) -> Iterator[event_pb2.Event]:
    for raw in event_file_loader.RawEventFileLoader(str(path)).Load():
        file.records += 1
        yield event_pb2.Event.FromString(raw)


def _read_file(path: Path) -> _EventFile:
    """Scalars (legacy simple_value or TF2 'scalars' tensors), text summaries, other tags' kinds."""
    file = _EventFile(path)
    frames, covered, size = _complete_records(path)
    if size == 0:
        file.notes.append(f"{path.name}: empty event file (0 bytes)")
        return file
    if frames == 0:
        raise RunImportError(
            f"{path}: not a TensorBoard event file (no complete TFRecord frame in {size} bytes); "
            "expected events.out.tfevents.* written by a SummaryWriter"
        )
    kinds: dict[str, str] = {}  # tag -> plugin name (TF2 writes the metadata with the first value only)
    for event in _events(path, file):
        for value in event.summary.value:
            field_name = value.WhichOneof("value")
            if field_name == "simple_value":
                file.points.append((value.tag, int(event.step), _float32(value.simple_value)))
                continue
            kind = kinds.setdefault(
                value.tag,
                value.metadata.plugin_data.plugin_name or LEGACY_KINDS.get(field_name or "", "unknown"),
            )
            if kind == SCALAR_PLUGIN and field_name == "tensor":
                file.points.append((value.tag, int(event.step), _tensor_scalar(value.tensor)))
            else:
                file.other_tags.setdefault(value.tag, kind)
                if kind == "text" and field_name == "tensor":
                    file.texts.setdefault(value.tag, _text(value.tensor))
    if covered < size:
        file.notes.append(
            f"{path.name}: the last {size - covered} bytes are an incomplete record (the file was cut off "
            "or is still being written); the events before it were read"
        )
    if file.records < frames:
        file.notes.append(
            f"{path.name}: record {file.records + 1} of {frames} fails its checksum (corrupted); "
            f"the {frames - file.records} records from there on were not read"
        )
    return file


# --------------------------------------------------------------------------- assembling the run


def _tag_map(tags: list[str]) -> ColumnMap:
    """Tags -> canonical fields by the resolver (the user's alias file wins), plus the loss-scale
    tag: the plainest tag whose words name a loss scale ('loss-scale', not 'loss-scale vs samples')."""
    mapping = column_map(tags, load_aliases())
    meanings = mapping.assignment.meanings
    scales = sorted(
        (tag for tag in tags if meanings[tag].quantity == "loss_scale"),
        key=lambda tag: (meanings[tag].rank, meanings[tag].words),
    )
    if scales and "loss_scale" not in mapping.columns:
        mapping.columns["loss_scale"] = scales[0]
    return mapping


def _rows(points: list[tuple[str, int, float]], fields: dict[str, str], columns: list[str]) -> pd.DataFrame:
    """Pair the mapped tags' values by (step, k-th occurrence), rows in order of first appearance."""
    tag_field = {tag: name for name, tag in fields.items() if name in columns}
    seen: dict[tuple[str, int], int] = {}
    rows: dict[tuple[int, int], dict[str, float]] = {}
    for tag, step, value in points:
        name = tag_field.get(tag)
        if name is None:
            continue
        occurrence = seen.get((name, step), 0)
        seen[(name, step)] = occurrence + 1
        rows.setdefault((step, occurrence), {})[name] = value
    return metric_frame([step for step, _ in rows], list(rows.values()), columns)


# the subfolders Keras' TensorBoard callback writes one run into: its training and validation
# scalars under the same tags (epoch_loss), told apart by the folder
SPLIT_FOLDERS = frozenset({"train", "validation", "eval", "evaluation", "val", "valid", "test"})


def is_split_pair(folders: list[Path]) -> bool:
    """Sibling folders named by splits, one of them train (Keras: logdir/train, logdir/validation):
    one run whose splits were written apart, not several runs."""
    names = {folder.name.lower() for folder in folders}
    return (
        len(folders) > 1
        and len({folder.parent for folder in folders}) == 1
        and "train" in names
        and names <= SPLIT_FOLDERS
    )


def _split_tags(files: list[_EventFile], notes: list[str]) -> None:
    """Prefix the tags of the non-train split folders with the folder's name (validation/epoch_loss),
    so the resolver reads them as that split's metrics."""
    for file in files:
        split = file.path.parent.name
        if split.lower() == "train":
            continue
        file.points = [(f"{split}/{tag}", step, value) for tag, step, value in file.points]
    shown = ", ".join(sorted({file.path.parent.name for file in files}))
    notes.append(f"split folders of one run ({shown}, as Keras' TensorBoard callback writes): tags prefixed")


def _run_folder(files: list[_EventFile], root: Path, notes: list[str]) -> list[_EventFile]:
    with_scalars = [f for f in files if f.points]
    if not with_scalars:
        described = "; ".join(
            f"{f.path.name}: "
            + (", ".join(f"{tag} ({kind})" for tag, kind in list(f.other_tags.items())[:15]) or "no tags")
            for f in files
        )
        raise RunImportError(
            f"{root}: no scalar data in {len(files)} event file(s) (expected scalar tags such as "
            f"'train/loss' or 'lm loss'); found: {described}"
        )
    folders = sorted({f.path.parent for f in with_scalars})
    if is_split_pair(folders):
        _split_tags(with_scalars, notes)
        return with_scalars
    if len(folders) > 1:
        shown = ", ".join(str(folder.relative_to(root) if root.is_dir() else folder) for folder in folders)
        raise RunImportError(
            f"{root}: event files with scalars in {len(folders)} folders ({shown}); these are separate runs "
            "(or a resume written to a new folder): pass the one folder to diagnose"
        )
    skipped = [f for f in files if not f.points and f.path.parent != folders[0]]
    if skipped:
        notes.append(f"{len(skipped)} event file(s) without scalars in other folders ignored (e.g. hparams)")
    return [f for f in files if f.path.parent == folders[0]]


def _loss_rows_only(train: pd.DataFrame, has_loss: bool, notes: list[str]) -> pd.DataFrame:
    """Keep the steps that logged a loss. A step that logged only the LR (or the grad norm) on its
    own (Lightning's LearningRateMonitor at the first step of an epoch, the loss at its last)
    is not a training step without a loss: its values go to the next loss row that lacks them."""
    if not has_loss or train.empty:
        return train
    train = train.sort_values("step", kind="stable").reset_index(drop=True)
    has_value = train["loss"].notna()
    if has_value.all():
        return train
    group = has_value[::-1].cumsum()[::-1]  # rows up to and including the next loss row
    filled = train.groupby(group, sort=False).transform(lambda column: column.ffill())
    filled["step"] = train["step"]
    kept = filled[has_value].reset_index(drop=True)
    notes.append(
        f"{int((~has_value).sum())} TensorBoard steps logged no loss (only LR or grad norm): their "
        "values moved to the next step with a loss"
    )
    return kept


def _restart_events(files: list[_EventFile], train_tags: set[str], notes: list[str]) -> list[tuple[int, str]]:
    """A later event file with training scalars is a new writer: a restart. One holding only
    evaluation / test / predict tags is the phase after ``fit()`` (``trainer.test``, a final
    ``evaluate``) writing its own file: not a restart."""
    events = []
    previous: int | None = None
    for file in files:
        if not file.points:
            continue
        steps = [step for _, step, _ in file.points]
        if previous is not None and not any(tag in train_tags for tag, _, _ in file.points):
            tags = sorted({tag for tag, _, _ in file.points})
            notes.append(
                f"event file {file.path.name} holds no training scalars (only {', '.join(tags[:8])}): "
                "an evaluation/test phase after training, not a restart"
            )
            continue
        if previous is not None:
            events.append(
                (
                    steps[0],
                    f"training process restarted: new TensorBoard event file {file.path.name} starts at "
                    f"step {steps[0]} (the previous file ended at step {previous})",
                )
            )
        previous = steps[-1]
    return events


def _loss_scale_events(points: list[tuple[str, int, float]], tag: str | None) -> list[tuple[int, str]]:
    if tag is None:
        return []
    events, previous = [], None
    for name, step, value in points:
        if name != tag:
            continue
        if previous is not None and value < previous:
            events.append((step, f"loss scale overflow: scale reduced to {value:g}"))
        previous = value
    return events


def _config(
    texts: dict[str, str], train: pd.DataFrame, evals: pd.DataFrame, epochs: list[tuple[int, float]]
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Config from a Hugging Face ``args`` text summary (TrainingArguments as JSON), if any; else
    only the steps per epoch, from an epoch tag logged against the step (`epochs`)."""
    notes: list[str] = []
    try:
        args = json.loads(texts.get("args", ""))
    except json.JSONDecodeError:
        args = None
    if not isinstance(args, dict) or "learning_rate" not in args:
        notes.append(
            "no run config in the event files (only a Hugging Face 'args' text summary would give one): "
            "learning-rate schedule, gradient clip and total steps are unknown"
        )
        per_epoch = steps_per_epoch_from_log(epochs, notes) if epochs else None
        return {}, ({"steps_per_epoch": per_epoch} if per_epoch else {}), notes
    notes.append("config from the 'args' text summary (Hugging Face TrainingArguments)")
    max_steps = args.get("max_steps")
    total = max_steps if isinstance(max_steps, int) and max_steps > 0 else None
    if total is None:
        notes.append("args.max_steps is not set (training by epochs): total_steps unknown")
    schedule = schedule_from_args(args, total, notes)
    config = config_from({}, args, train["step"].tolist(), evals["step"].tolist(), total, notes, epochs)
    return schedule, config, notes


def load(path: Path) -> RunData:
    """Read the event files of one run into a RunData (see the module docstring)."""
    if not path.exists():
        raise RunImportError(f"{path}: no such file or folder")
    paths = _event_files(path)
    if not paths:
        raise RunImportError(f"{path}: no TensorBoard event files (events.out.tfevents.*) found")
    notes: list[str] = []
    read: list[_EventFile] = []
    for file_path in paths:
        try:
            read.append(_read_file(file_path))
        except RunImportError as error:
            if len(paths) == 1:
                raise
            notes.append(f"skipped: {error}")
    if not read:
        raise RunImportError(
            f"{path}: none of the {len(paths)} event files could be read: {'; '.join(notes)}"
        )
    files = _run_folder(read, path, notes)
    for file in files:
        notes.extend(file.notes)
    points = [point for file in files for point in file.points]
    tags = list(dict.fromkeys(tag for tag, _, _ in points))
    mapping = _tag_map(tags)
    notes.extend(mapping.notes)
    fields = {
        name: tag
        for name, tag in mapping.columns.items()
        if name in (*TRAIN_FIELDS, *EVAL_FIELDS, "loss_scale")
    }
    if not any(name in fields for name in (*TRAIN_FIELDS, *EVAL_FIELDS)):
        unknown = mapping.assignment.not_understood
        raise RunImportError(
            f"{path}: scalar tags {', '.join(tags[:30])} include none this tool knows as loss, grad norm, "
            "learning rate, step time or validation loss/accuracy"
            + (f" (not understood: {', '.join(unknown[:30])})" if unknown else "")
            + "; name them in a YAML file (e.g. 'loss: [my/tag]') and point RUN_DIAGNOSIS_ALIASES at it"
        )
    train = _loss_rows_only(_rows(points, fields, TRAIN_COLUMNS), "loss" in fields, notes)
    evals = _rows(points, fields, csv_columns("eval", list(fields)))
    sets = evaluation_sets(
        mapping, lambda _field, name: [(step, value) for tag, step, value in points if tag == name]
    )
    if sets is not None:
        evals, set_notes = sets
        notes += set_notes
    used = set(fields.values()) | {tag for sets in mapping.assignment.sets.values() for tag in sets}
    notes.append("TensorBoard tags used: " + ", ".join(f"{name} <- {tag!r}" for name, tag in fields.items()))
    not_understood = set(mapping.assignment.not_understood)  # already in one "not understood" note
    unused = [tag for tag in tags if tag not in used and tag not in not_understood]
    if unused:
        notes.append(
            f"scalar tags read but not imported (no canonical column, or a variant of one): "
            f"{', '.join(unused[:25])}{' ...' if len(unused) > 25 else ''}"
        )
    for name in TRAIN_FIELDS:
        if name not in fields:
            notes.append(f"no TensorBoard tag for {name}: train_log.{name} is empty")
    if "step_time_sec" not in fields:
        notes.append("wall-clock times of the events are not turned into step times")
    train_tags = {tag for name, tag in fields.items() if name in TRAIN_FIELDS}
    events = _loss_scale_events(points, fields.get("loss_scale")) + _restart_events(files, train_tags, notes)
    texts = {tag: text for file in files for tag, text in file.texts.items()}
    epoch_tag = mapping.columns.get("epoch")
    epochs = [(step, value) for tag, step, value in points if epoch_tag is not None and tag == epoch_tag]
    schedule, config, config_notes = _config(texts, train, evals, epochs)
    config.update(run_results(path if path.is_dir() else path.parent, config_notes))
    notes.append("TensorBoard event files carry no checkpoint, interrupt or error events")
    folder = files[0].path.parent
    return RunData(
        source_format=FORMAT,
        source_path=str(path),
        train=train,
        evals=evals,
        events=pd.DataFrame(events, columns=EVENT_COLUMNS).astype({"step": "int64"}),
        run_name=folder.name,
        schedule=schedule,
        config=config,
        notes=notes + config_notes,
        loss_name=fields.get("loss"),
        logged_names=tuple(tags),
    )
