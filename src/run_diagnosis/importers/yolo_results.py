"""YOLO ``results.txt``: the headerless per-epoch table of Ultralytics YOLOv3/v5 (before v6)
and of YOLOv4/YOLOv7 (WongKinYiu).

What is read
------------
One line per epoch, whitespace-separated, no header, 15 columns as ``train.py`` writes them
(``'%10s' * 2 + '%10.4g' * 13``):

``epoch/last_epoch  gpu_mem  box  obj  cls  total  targets  img_size  P  R  mAP@.5  mAP@.5:.95
val_box  val_obj  val_cls`` (YOLOv3 names the box term GIoU and its two mAP columns mAP and
F1; the positions are the same).

Conventions, modelled
---------------------
* **Rows are epochs**: ``i/N`` counts epochs from 0 to N, so the canonical step is the number
  of epochs completed (i + 1) and the planned length is N + 1 epochs (``total_steps``): a log
  ending before it stopped early.
* **The training loss is ``total``**: the sum of the box, objectness and class terms, each the
  mean over the epoch's batches (the loss the optimiser minimised, per image). The validation
  loss is logged only as its three terms; their sum is the validation loss on the same scale,
  computed here and said in the notes.
* The file logs no learning rate, gradient norm or step time: those checks cannot run. A
  resumed run (``--resume``) appends to the same file, so a replayed epoch shows as a repeated
  counter, kept as logged.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import yaml

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import read_text, sniff_path
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import Record, build_frames, number, single_file

# the run's arguments Ultralytics saves beside its results (args.yaml from YOLOv8 on, opt.yaml in
# YOLOv3/v5/v7): `epochs` is the planned length of a log whose rows are epochs
ARGS_FILES = ("args.yaml", "opt.yaml")
# the keys that make a YAML mapping beside a results table an Ultralytics argument file, with epochs
ULTRALYTICS_ARGUMENT_KEYS = ("lr0", "model", "hyp", "weights")
# YOLOv5/v7 save the hyperparameters (lr0, lrf, warmup_epochs ...) apart, in hyp.yaml
HYP_FILE = "hyp.yaml"

FORMAT = "yolo_results_txt"
DESCRIPTION = (
    "YOLOv3/v4/v5/v7 results.txt: headerless rows 'epoch/last gpu_mem box obj cls total ...', one per epoch"
)

# the columns train.py writes, in order (the first two are text: 'i/N' and '3.97G')
COLUMNS = (
    "epoch",
    "gpu_mem",
    "train/box_loss",
    "train/obj_loss",
    "train/cls_loss",
    "train/loss",
    "targets",
    "img_size",
    "metrics/precision",
    "metrics/recall",
    "metrics/mAP_0.5",
    "metrics/mAP_0.5:0.95",
    "val/box_loss",
    "val/obj_loss",
    "val/cls_loss",
)
VAL_TERMS = ("val/box_loss", "val/obj_loss", "val/cls_loss")
EPOCH = re.compile(r"^(\d+)/(\d+)$")
SNIFF_LINES = 3  # the first lines must all have the shape


def _candidates(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix == ".txt")


def _fields(line: str) -> list[str] | None:
    """The 15 cells of a results.txt line, or None when the line has another shape."""
    cells = line.split()
    if len(cells) != len(COLUMNS) or not EPOCH.match(cells[0]):
        return None
    if any(number(cell) is None for cell in cells[2:]):
        return None
    return cells


def _sniff_file(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            lines = [line for line in (handle.readline() for _ in range(SNIFF_LINES)) if line.strip()]
    except OSError:
        return False
    return bool(lines) and all(_fields(line) is not None for line in lines)


def sniff(path: Path) -> bool:
    return sniff_path(path, _candidates, _sniff_file)


def load(path: Path) -> RunData:
    source = single_file(path, _candidates, _sniff_file, "YOLO results.txt")
    text = read_text(source, "a YOLO results.txt")
    records: list[Record] = []
    last_epochs: set[int] = set()
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cells = _fields(line)
        if cells is None:
            raise RunImportError(
                f"{source}, line {line_number}: expected {len(COLUMNS)} columns starting 'epoch/last' "
                f"({' '.join(COLUMNS[:6])} ...), found {line.strip()[:80]!r}"
            )
        match = EPOCH.match(cells[0])
        assert match is not None  # _fields checked it
        epoch, last = int(match.group(1)), int(match.group(2))
        last_epochs.add(last)
        values = {name: number(cell) for name, cell in zip(COLUMNS[2:], cells[2:], strict=True)}
        terms = [values[name] for name in VAL_TERMS]
        values["val/loss"] = None if any(v is None for v in terms) else sum(v for v in terms if v is not None)
        records.append(Record(epoch + 1, values, f"line {line_number}"))
    frames = build_frames(records, str(source))
    notes = [
        "each row is an epoch: step = epochs completed (epoch + 1); the training loss is the 'total' column "
        "(box + objectness + class terms, each the mean over the epoch's batches)",
        "val_loss = val box + val obj + val cls: results.txt logs the validation loss only as its three "
        "terms; their sum is on the training total's scale",
    ]
    total_steps = max(last_epochs) + 1 if len(last_epochs) == 1 else None
    if len(last_epochs) > 1:
        notes.append(
            f"the lines name different last epochs ({', '.join(str(e) for e in sorted(last_epochs))}): "
            "the planned length is unknown"
        )
    return frames.run(
        FORMAT, str(source), config={"total_steps": total_steps}, notes=notes, run_name=source.parent.name
    )


def explain(path: Path) -> str | None:
    """A results.txt that is almost this layout: say which line breaks it."""
    files = [path] if path.is_file() else _candidates(path) if path.is_dir() else []
    for file in files:
        if file.name != "results.txt":
            continue
        try:
            first = next((line for line in file.open(encoding="utf-8", errors="replace") if line.strip()), "")
        except OSError:
            return None
        cells = first.split()
        if cells and EPOCH.match(cells[0]) and len(cells) != len(COLUMNS):
            return (
                f"{file}: a YOLO results.txt line with {len(cells)} columns; this reader knows the "
                f"{len(COLUMNS)}-column layout of YOLOv3/v4/v5/v7 ({' '.join(COLUMNS)})"
            )
    return None


def planned_epochs(folder: Path) -> tuple[int, str] | None:
    """The epochs an Ultralytics run planned (``epochs`` of its args.yaml / opt.yaml in ``folder``)
    and the file that says so; None without such a file or a positive whole number there."""
    for name, args in _arguments(folder):
        epochs = args.get("epochs")
        # an Ultralytics argument file also names its model or its initial LR (lr0: args.yaml of
        # YOLOv8 on), or its weights and hyperparameters file (hyp: opt.yaml of YOLOv5/v7, whose lr0
        # is in hyp.yaml)
        if (
            isinstance(epochs, int)
            and not isinstance(epochs, bool)
            and epochs > 0
            and any(key in args for key in ULTRALYTICS_ARGUMENT_KEYS)
        ):
            return epochs, name
    return None


def _arguments(folder: Path) -> list[tuple[str, dict[str, object]]]:
    """The Ultralytics argument files in ``folder`` that parse as a mapping, in ARGS_FILES order."""
    found = [(name, _yaml_mapping(folder / name)) for name in ARGS_FILES]
    return [(name, args) for name, args in found if args is not None]


def _yaml_mapping(path: Path) -> dict[str, object] | None:
    if not path.is_file():
        return None
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, yaml.YAMLError):
        return None
    return document if isinstance(document, dict) else None


# the splits of an Ultralytics dataset file (the YAML its argument file's `data` names): `path` is
# their root, `train` and `val` each a folder, a list file or a list of them, relative to the root
DATASET_SPLITS = ("train", "val")
# how far up from the run folder a relative `data` path is looked for (runs/detect/train -> the
# folder the training command ran in)
DATASET_PARENTS = 3


def _split_places(root: object, entry: object) -> tuple[str, ...] | None:
    """The places a dataset split names, each joined to the root and normalised (Windows or POSIX
    separators, `./`, trailing slashes): None when the entry is empty or not text."""
    entries = [entry] if isinstance(entry, str) else entry
    if (
        not isinstance(entries, list)
        or not entries
        or not all(isinstance(e, str) and e.strip() for e in entries)
    ):
        return None
    base = root.strip().replace("\\", "/") if isinstance(root, str) and root.strip() else ""
    places = []
    for item in entries:
        path = item.strip().replace("\\", "/")
        joined = (
            path if not base or path.startswith("/") or re.match(r"^[A-Za-z]:/", path) else f"{base}/{path}"
        )
        places.append(posixpath.normpath(joined))
    return tuple(sorted(places))


def dataset_splits(folder: Path) -> tuple[str, str, str] | None:
    """The training and validation data of an Ultralytics run, from the dataset file its argument
    file names (``data: coco128.yaml``), found as written, under the run folder or up to
    DATASET_PARENTS folders above it, or beside the log by its file name: (train, val, the file's
    name), each split its places joined by ', '. None when no such file, or a split it lacks."""
    for _, args in _arguments(folder):
        data = args.get("data")
        if not isinstance(data, str) or not data.strip().lower().endswith((".yaml", ".yml")):
            continue
        written = Path(data.strip().replace("\\", "/"))
        tried = [written] if written.is_absolute() else []
        tried += [base / written for base in [folder, *list(folder.parents)[:DATASET_PARENTS]]]
        tried.append(folder / written.name)
        for candidate in tried:
            mapping = _yaml_mapping(candidate)
            if mapping is None:
                continue
            train, val = (_split_places(mapping.get("path"), mapping.get(key)) for key in DATASET_SPLITS)
            if train is None or val is None:
                continue
            return ", ".join(train), ", ".join(val), candidate.name
    return None


def configured_lr(folder: Path) -> tuple[float, str, str] | None:
    """The initial learning rate an Ultralytics run was configured with (``lr0``, the peak its
    warmup rises to), its optimizer, and the files that say so; None when unknown.

    ``lr0`` is in args.yaml (YOLOv8 on) or in hyp.yaml beside opt.yaml (YOLOv5/v7; opt.yaml's
    ``hyp`` may also hold the mapping itself). With ``optimizer: auto`` (YOLOv8's default)
    Ultralytics ignores lr0 and picks the optimizer and its LR from the dataset's size, so no peak
    is known. The optimizer is opt.yaml's ``optimizer`` or, in older YOLOv5, ``adam: true``
    (Adam; SGD otherwise)."""
    arguments = _arguments(folder)
    if not arguments:
        return None
    args_name, args = arguments[0]
    inline = args.get("hyp")
    hyp = inline if isinstance(inline, dict) else _yaml_mapping(folder / HYP_FILE) or {}
    if "lr0" in args:
        source = args_name
    else:
        source = f"{args_name} (its hyp)" if isinstance(inline, dict) else f"{HYP_FILE} beside {args_name}"
    lr0 = args.get("lr0", hyp.get("lr0"))
    optimizer = args.get("optimizer")
    if optimizer is None and isinstance(args.get("adam"), bool):
        optimizer = "Adam" if args["adam"] else "SGD"
    if (
        not isinstance(lr0, int | float)
        or isinstance(lr0, bool)
        or lr0 <= 0
        or not isinstance(optimizer, str)
        or optimizer.lower() == "auto"
    ):
        return None
    return float(lr0), optimizer, source
