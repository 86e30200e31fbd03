"""torchtune metric logs: ``DiskLogger`` files and ``StdoutLogger`` output.

What is read
------------
One text file (or a folder holding one: ``log_<unix time>.txt``, what ``DiskLogger`` writes
under ``output_dir/logs``) with lines ``Step N | name:value name:value ...``, as torchtune's
``metric_logging.DiskLogger.log_dict`` and ``StdoutLogger`` print them: ``loss``, ``lr``,
``tokens_per_second_per_gpu``, ``grad_norm`` (only when the recipe clips: ``clip_grad_norm``
set), ``peak_memory_*``. Lines of the recipe's own logger around them are ignored. Names go
through the resolver.

torchtune's logging conventions, modelled
-----------------------------------------
* ``Step N`` is the optimizer step (``global_step``), counted across epochs; one line every
  ``log_every_n_steps`` steps. ``loss`` is the running loss averaged over the gradient-
  accumulation micro-batches of that step (not over the logging interval).
* ``grad_norm`` is what ``torch.nn.utils.clip_grad_norm_`` returns: the total norm **before**
  clipping (``grad_norm_measured: before_clipping``); it is logged only when clipping is on, so a
  log with grad_norm means a clip limit was set (its value is in the recipe config, not here).
* No evaluation loss is logged by the fine-tuning recipes (no validation set): the evaluation
  checks cannot run. No time stamps: ``tokens_per_second_per_gpu`` is throughput, not a step
  time, so step times stay unknown.
* A NaN loss prints as ``nan``: kept.
"""

from __future__ import annotations

import re
from pathlib import Path

from run_diagnosis.importers.aliases import read_text, sniff_path
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import Record, build_frames, number, single_file

FORMAT = "torchtune"
DESCRIPTION = "torchtune DiskLogger / StdoutLogger metric lines (Step N | loss:X lr:Y ...)"

STEP_LINE = re.compile(r"^\s*(?:\S+\s+)?Step (?P<step>\d+)\s*\|\s*(?P<metrics>\S+:\S+(?:\s+\S+:\S+)*)\s*$")
PAIR = re.compile(r"(?P<name>[^\s:]+):(?P<value>\S+)")
SUFFIXES = {".txt", ".log", ".out", ""}
SNIFF_LINES = 2000
MIN_LINES = 2


def _candidates(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in SUFFIXES)


def _sniff_file(path: Path) -> bool:
    found = 0
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for index, line in enumerate(handle):
                if index >= SNIFF_LINES:
                    break
                match = STEP_LINE.match(line)
                if match and any(p["name"] == "loss" for p in PAIR.finditer(match["metrics"])):
                    found += 1
    except OSError:
        return False
    return found >= MIN_LINES


def sniff(path: Path) -> bool:
    return sniff_path(path, _candidates, _sniff_file)


def load(path: Path) -> RunData:
    source = single_file(path, _candidates, _sniff_file, "torchtune log")
    records = []
    for line_number, line in enumerate(read_text(source, "torchtune metric lines").splitlines(), start=1):
        match = STEP_LINE.match(line)
        if not match:
            continue
        values = {p["name"]: number(p["value"]) for p in PAIR.finditer(match["metrics"])}
        records.append(Record(int(match["step"]), values, f"line {line_number}"))
    frames = build_frames(records, str(source))
    notes = ["torchtune logs the step's loss averaged over its gradient-accumulation micro-batches"]
    config: dict[str, object] = {}
    if "grad_norm" in frames.assignment.columns:
        config["grad_norm_measured"] = "before_clipping"
        notes.append(
            "grad_norm is logged only when clip_grad_norm is set: clipping was on (limit not in the log)"
        )
    return frames.run(FORMAT, str(source), config=config, notes=notes)
