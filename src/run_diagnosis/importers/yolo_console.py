"""Ultralytics console output: the per-epoch progress table that YOLOv5, YOLOv8 and YOLO11 print
while they train (a ``nohup`` log, a W&B run's ``files/output.log``).

What is read
------------
A header line naming the columns, then one progress row per redraw of the training bar::

          Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
         11/100      2.29G     0.9003     0.9219     0.8718         21        640: 100%|####| 1426/1426

The header is ``Epoch``, ``GPU_mem`` (``gpu_mem`` in older YOLOv5), the loss terms (``box_loss
cls_loss dfl_loss``; ``box_loss obj_loss cls_loss``; older ``box obj cls total``), then the
instance count (``Instances``, ``labels``, ``targets``) and the image size (``Size``,
``img_size``). Everything else (the validation table's ``Class Images ... mAP50`` rows, model
summaries, warnings) is not part of it.

Conventions, modelled
---------------------
* **A row's losses are running means** over the epoch's batches so far (Ultralytics updates the
  mean at every batch and redraws the bar): the last row printed for an epoch (its 100% redraw,
  or the last one of an epoch cut short) is the epoch's mean; the earlier redraws are not kept.
* **Rows are epochs.** YOLOv8 and YOLO11 print ``epoch/epochs`` counting from 1 (``1/100``:
  step = the epoch, planned length 100); YOLOv5 prints ``epoch/last`` counting from 0 (``0/299``:
  step = epoch + 1, planned length 300). Which is which is read from the first row's counter (a
  log whose first row is neither is read as counting from 1, said in the notes).
* **The training loss is the ``total`` column** when one is printed (older YOLOv5, as in its
  results.txt); else the first term (``box_loss``) stands in, as it does when the same run's
  ``results.csv`` is read (docs/metric-names.md), so both files of one run give one loss series;
  the terms are named in the notes. The validation table prints precision, recall and mAP only:
  no validation loss, learning rate, gradient norm or step time is read.
* A counter that goes back (``--resume`` appends to the same log) is kept as logged: the checks
  see the repeated epochs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import read_text, sniff_path
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import Record, build_frames, number, single_file

FORMAT = "ultralytics_console"
DESCRIPTION = (
    "Ultralytics YOLOv5/v8/11 console output (a nohup log, a W&B run's files/output.log): the "
    "'Epoch GPU_mem box_loss ... Instances Size' progress table, one row per epoch"
)

GPU_MEMORY = ("gpu_mem",)
COUNT_COLUMNS = ("instances", "labels", "targets")
SIZE_COLUMNS = ("size", "img_size")
TOTAL_COLUMN = "total"
COUNTER = re.compile(r"^(\d+)/(\d+)$")
GPU_CELL = re.compile(r"^\d+(\.\d+)?[GMK]?$")
SNIFF_BYTES = 1024 * 1024  # the table starts after the model summary and the dataset scan
TEXT_SUFFIXES = {".log", ".txt", ".out", ""}


@dataclass(frozen=True)
class Header:
    terms: tuple[str, ...]  # the loss columns, in order

    @property
    def width(self) -> int:
        return len(self.terms) + 4  # epoch, GPU memory, the terms, instances, size


def _header(text: str) -> Header | None:
    cells = text.split()
    if len(cells) < 5 or cells[0] != "Epoch" or cells[1].lower() not in GPU_MEMORY:
        return None
    if cells[-2].lower() not in COUNT_COLUMNS or cells[-1].lower() not in SIZE_COLUMNS:
        return None
    terms = tuple(cells[2:-2])
    if not all(re.fullmatch(r"[A-Za-z_]+", term) for term in terms):
        return None
    return Header(terms)


def _row(text: str, header: Header) -> tuple[int, int, dict[str, float]] | None:
    """(epoch, last, the terms' values by name) of a progress row under `header`, or None."""
    cells = text.split(":", 1)[0].split()
    if len(cells) != header.width:
        return None
    counter = COUNTER.match(cells[0])
    if counter is None or not GPU_CELL.match(cells[1]):
        return None
    values = [number(cell) for cell in cells[2:]]
    if any(value is None for value in values):
        return None
    named = zip(header.terms, values, strict=False)
    terms = {name: float(value) for name, value in named if value is not None}
    return int(counter.group(1)), int(counter.group(2)), terms


def _states(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every line and every carriage-return redraw within one."""
    states: list[tuple[int, str]] = []
    for number_, line in enumerate(text.split("\n"), start=1):
        states.extend((number_, part) for part in line.split("\r") if part.strip())
    return states


def _parse(text: str) -> tuple[Header | None, list[tuple[int, int, int, dict[str, float]]]]:
    """The first header and every progress row (line, epoch, last, terms) under a header. Rows
    before the first header are read with it: a console capture can lose the first header's line
    (the bar redraws over it), and a run prints one table throughout."""
    states = _states(text)
    first = next((found for _, state in states if (found := _header(state)) is not None), None)
    header = first
    rows = []
    for line, state in states:
        found = _header(state)
        if found is not None:
            header = found
            continue
        row = _row(state, header) if header is not None else None
        if row is not None:
            rows.append((line, *row))
    return first, rows


def _candidates(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in TEXT_SUFFIXES)


def _sniff_file(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    _, rows = _parse(head)
    return bool(rows)


def sniff(path: Path) -> bool:
    return sniff_path(path, _candidates, _sniff_file)


def load(path: Path) -> RunData:
    source = single_file(path, _candidates, _sniff_file, "Ultralytics console log")
    header, rows = _parse(read_text(source, "an Ultralytics console log"))
    if header is None or not rows:
        raise RunImportError(f"{source}: no 'Epoch GPU_mem ... Instances Size' progress rows found")
    # the last redraw of each epoch: a row whose next row has the same counter is an earlier redraw
    following = [*rows[1:], None]
    kept = [row for row, after in zip(rows, following, strict=True) if after is None or after[1] != row[1]]
    zero_based = kept[0][1] == 0
    terms = header.terms
    loss_term = TOTAL_COLUMN if TOTAL_COLUMN in terms else terms[0]
    records = []
    for line, epoch, _last, named in kept:
        # a later header of other columns names its own rows' terms: its total, else its first term
        row_term = TOTAL_COLUMN if TOTAL_COLUMN in named else next(iter(named))
        step = epoch + 1 if zero_based else epoch
        records.append(Record(step, {"train/loss": named[row_term]}, f"line {line}"))
    lasts = {row[2] for row in kept}
    notes = [
        f"each row is an epoch: the last progress row printed for it ({len(rows) - len(kept)} earlier "
        f"redraws of {len(kept)} epochs not kept: their losses are running means over part of the epoch)",
        f"the training loss is the '{loss_term}' column"
        + ("" if loss_term == TOTAL_COLUMN else f" (of the terms {', '.join(terms)} printed, with no total)")
        + ": the console prints no validation loss, learning rate, gradient norm or step time",
    ]
    if zero_based:
        notes.append("the counter starts at 0 (YOLOv5's 'epoch/last'): step = epoch + 1")
    elif kept[0][1] != 1:
        notes.append(
            f"the first row is epoch {kept[0][1]}: read as counting from 1 (YOLOv8/11's 'epoch/epochs')"
        )
    total_steps = None
    if len(lasts) == 1:
        (last,) = lasts
        total_steps = last + 1 if zero_based else last
    else:
        notes.append(
            f"the rows name different planned lengths ({', '.join(str(n) for n in sorted(lasts))}): unknown"
        )
    frames = build_frames(records, str(source))
    return frames.run(
        FORMAT, str(source), config={"total_steps": total_steps}, notes=notes, run_name=source.parent.name
    )
