"""Console output of OLMo / OLMo-core, Composer (LLM Foundry) and DeepSpeed.

What is read
------------
One text file (or a folder holding one) with metric *blocks* or DeepSpeed step lines:

* **OLMo** (``olmo/train.py``) and **OLMo-core** console: a header ``[step=N/M,epoch=E]`` (after
  the logger's prefix) followed by indented ``name=value`` lines (``train/CrossEntropyLoss=3.674``,
  ``optim/total_grad_norm=0.71``, ``throughput/total_tokens=8,388,608``; OLMo-core spells them
  ``train/CE loss``, ``optim/total grad norm``, ``optim/LR (group 0)``, ``optim/step skipped``).
  Evaluation metrics are logged in a block of the step they ran at (``eval/.../CrossEntropyLoss``).
* **Composer** ``ConsoleLogger``: a header ``[batch=N/M]:`` (optionally ``[epoch=E][batch=N/M]:``)
  followed by ``\\t Train loss/train/total: 7.2`` / ``Eval metrics/eval/LanguageCrossEntropy: 3.1``.
* **DeepSpeed**: ``[Rank 0] step=N, skipped=K, lr=[...], mom=[...]`` every ``steps_per_print``
  (the LR of the first parameter group) and, from the pipeline engine, ``steps: N loss: X iter
  time (s): T samples/sec: S``. DeepSpeed itself prints no loss otherwise: the loss comes from
  the blocks or pipeline lines of the same file.

Every metric name goes through the resolver (importers.metric_names).

Logging conventions, modelled
-----------------------------
* **Which norm**: OLMo's ``optim/total_grad_norm``, OLMo-core's ``optim/total grad norm`` and
  Composer's ``l2_norm/grad/global`` are measured before clipping (``clip_grad_norm_`` returns
  the total norm before it scales): ``grad_norm_measured: before_clipping``.
* **What "skipped" means**: OLMo-core ``optim/step skipped=1`` is a step whose update the
  optimizer skipped (a non-finite or spiking loss / gradient): the logged loss of such a step
  can look finite. DeepSpeed's ``skipped=K`` counts the fp16 overflow steps so far: where it
  rises, steps were skipped. Each skip is an event (read as a loss-scale overflow); a NaN loss
  printed as ``nan`` stays a NaN.
* **Thousands separators** (``8,388,608``) are removed; a header's ``/M`` is the planned length
  (``total_steps``).
* OLMo's ``TrainConfig(...)`` dump gives the optimizer LR, the scheduler (``cosine_with_warmup``
  with ``t_warmup``, ``alpha_f``: min LR = alpha_f x peak), ``max_grad_norm`` and the intervals.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path
from typing import Any

from run_diagnosis.importers.aliases import read_text, sniff_path
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import (
    Conventions,
    Counters,
    Record,
    build_frames,
    number,
    single_file,
)

FORMAT = "trainer_stdout"
DESCRIPTION = (
    "OLMo / OLMo-core or Composer console output ([step=N/M] or [batch=N/M] metric blocks), "
    "DeepSpeed stdout (step=N, skipped=K, lr=[...]; steps: N loss: X)"
)

BLOCK_HEADER = re.compile(
    r"(?:\[epoch=\d+\])?\[(?:step|batch)=(?P<step>\d+)(?:/(?P<total>\d+))?(?:,[^\]]*)?\]:?\s*$"
)  # OLMo [step=N/M,epoch=E], OLMo-core [step=N/M, eta=...], Composer [epoch=E][batch=N/M]:
ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
OLMO_METRIC = re.compile(r"^\s+(?P<name>[A-Za-z][^=\n]*?)=(?P<value>[-+\w.,]+)\s*$")
COMPOSER_METRIC = re.compile(r"^\s+(?:(?P<phase>Train|Eval)\s+)(?P<name>[^:\n]+):\s*(?P<value>[-+\w.,]+)\s*$")
DEEPSPEED_STEP = re.compile(r"step=(?P<step>\d+), skipped=(?P<skipped>\d+), lr=\[(?P<lr>[^\],]*)")
DEEPSPEED_PIPE = re.compile(r"steps: (?P<step>\d+) loss: (?P<loss>\S+) iter time \(s\): (?P<time>\S+)")
LINE_TIME = re.compile(r"^\s*\[?(?P<time>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)")
OLMO_CONFIG = re.compile(r"TrainConfig\((?P<body>.*)\)\s*$")
SKIPPED_NAMES = ("optim/step skipped", "optim/step_skipped")
SNIFF_LINES = 5000
SUFFIXES = {".log", ".txt", ".out", ".err", ".stdout", ""}
MIN_BLOCKS = 2
SCHEDULE_TYPES = {
    "cosine_with_warmup": "warmup_cosine",
    "linear_with_warmup": "warmup_linear",
    "constant": "constant",
}


def _candidates(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in SUFFIXES)


def _sniff_file(path: Path) -> bool:
    blocks = deepspeed = 0
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for index, line in enumerate(handle):
                if index >= SNIFF_LINES:
                    break
                line = ANSI_ESCAPE.sub("", line)
                if BLOCK_HEADER.search(line):
                    blocks += 1
                elif DEEPSPEED_PIPE.search(line):
                    deepspeed += 1
    except OSError:
        return False
    return blocks >= MIN_BLOCKS or deepspeed >= MIN_BLOCKS


def sniff(path: Path) -> bool:
    return sniff_path(path, _candidates, _sniff_file)


def load(path: Path) -> RunData:
    source = single_file(path, _candidates, _sniff_file, "OLMo / Composer / DeepSpeed log")
    text = read_text(source, "OLMo, Composer or DeepSpeed console output")
    lines = ANSI_ESCAPE.sub("", text).splitlines()
    records: list[Record] = []
    skipped = Counters()
    events: list[tuple[int, str]] = []
    totals: set[int] = set()
    config_line: str | None = None
    current: Record | None = None
    for line_number, line in enumerate(lines, start=1):
        header = BLOCK_HEADER.search(line)
        if header:
            current = Record(int(header["step"]), _line_time(line), f"line {line_number}")
            records.append(current)
            if header["total"]:
                totals.add(int(header["total"]))
            continue
        if current is not None:
            metric = COMPOSER_METRIC.match(line) or OLMO_METRIC.match(line)
            if metric:
                name = metric["name"].strip()
                if metric.groupdict().get("phase") == "Eval" and not name.lower().startswith(
                    ("eval", "metrics/eval")
                ):
                    name = f"eval/{name}"
                current.values[name] = number(metric["value"])
                continue
            current = None
        step_line = DEEPSPEED_STEP.search(line)
        if step_line:
            step = int(step_line["step"])
            records.append(Record(step, {"lr": number(step_line["lr"])}, f"line {line_number}"))
            skipped.feed(
                step,
                float(step_line["skipped"]),
                "DeepSpeed skipped {n} step(s) (fp16 overflow; {total} so far)",
            )
            continue
        pipe = DEEPSPEED_PIPE.search(line)
        if pipe:
            values = {"loss": number(pipe["loss"]), "iter_time_s": number(pipe["time"])}
            records.append(Record(int(pipe["step"]), values, f"line {line_number}"))
            continue
        if config_line is None and OLMO_CONFIG.search(line):
            config_line = line
    for record in records:
        for name in SKIPPED_NAMES:
            flag = record.values.get(name)
            if flag is not None and math.isfinite(flag) and flag > 0:
                events.append(
                    (record.step, f"optimizer step skipped ({name}={flag:g}): overflow or non-finite update")
                )
    frames = build_frames(records, str(source), Conventions(step_time_unit="s"))
    notes: list[str] = []
    schedule, config = _olmo_config(config_line, notes)
    if len(totals) == 1 and config.get("total_steps") is None:
        config["total_steps"] = totals.pop()
    if schedule.get("type") and schedule.get("decay_steps") is None:
        schedule["decay_steps"] = config.get("total_steps")
    if skipped.events:
        notes.append(f"DeepSpeed skipped= counter rose {len(skipped.events)} time(s): fp16 overflow steps")
    # DeepSpeed's printed norm is engine.get_global_grad_norm(): ZeRO's step() sets
    # _global_grad_norm = scaled_global_norm() / loss scale before unscale_and_clip_grads
    # (deepspeed/runtime/zero/stage_1_and_2.py); OLMo / Composer: see the module docstring
    config["grad_norm_measured"] = "before_clipping"
    return frames.run(
        FORMAT, str(source), schedule=schedule, config=config, notes=notes, events=[*events, *skipped.events]
    )


def _line_time(line: str) -> dict[str, float | None]:
    """The logger's timestamp at the start of a header line as ``_timestamp`` (seconds), if any."""
    found = LINE_TIME.match(line)
    if not found:
        return {}
    try:
        moment = dt.datetime.fromisoformat(found["time"].replace(",", "."))
    except ValueError:
        return {}
    return {"_timestamp": moment.replace(tzinfo=dt.UTC).timestamp()}


def _field(text: str, name: str) -> str | None:
    """The value of ``name=...`` in a dataclass repr (quotes stripped), or None."""
    found = re.search(rf"\b{re.escape(name)}=('[^']*'|[^,()]+)", text)
    return found.group(1).strip().strip("'") if found else None


def _int(text: str | None) -> int | None:
    value = number(text)
    return int(value) if value is not None and math.isfinite(value) and value == int(value) else None


def _olmo_config(line: str | None, notes: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Schedule and config from OLMo's TrainConfig(...) dump (fields read by name, never eval'd)."""
    if line is None:
        notes.append("no TrainConfig dump: schedule and clip limit unknown")
        return {}, {}
    optimizer = line[line.find("OptimizerConfig(") :] if "OptimizerConfig(" in line else line
    scheduler = line[line.find("SchedulerConfig(") :] if "SchedulerConfig(" in line else ""
    peak = number(_field(optimizer, "learning_rate"))
    alpha = number(_field(scheduler, "alpha_f"))
    kind = _field(scheduler, "name")
    schedule: dict[str, Any] = {
        "type": SCHEDULE_TYPES.get(kind or "", kind),
        "peak_lr": peak,
        "min_lr": peak * alpha if peak is not None and alpha is not None else None,
        "warmup_steps": _int(_field(scheduler, "t_warmup")),
        "decay_steps": _int(_field(scheduler, "t_max")),  # None: OLMo decays over max_duration
    }
    if kind and kind not in SCHEDULE_TYPES:
        notes.append(f"scheduler {kind!r}: its curve cannot be rebuilt, the LR-schedule checks skip it")
    duration = _field(line, "max_duration")  # '2500' steps, '2ep' epochs, '2e12T' tokens
    config: dict[str, Any] = {
        "grad_clip_norm": number(_field(line, "max_grad_norm")),
        "total_steps": _int(duration) if duration and duration.replace(".", "").isdigit() else None,
        "eval_interval": _int(_field(line, "eval_interval")),
        "checkpoint_interval": _int(_field(line, "save_interval")),
    }
    return schedule, config
