"""fairseq training logs written with ``--log-format json`` (the console or ``--log-file``).

What is read
------------
One text file (or a folder holding one) whose lines carry fairseq's JSON stats, in either
logging layout:

* ``2021-03-08 12:31:36 | INFO | train_inner | {"epoch": 1, "update": 0.0, "loss": "16.475", ...}``
* ``[2022-04-08 18:48:05,372][train_inner][INFO] - {"epoch": 1, ...}`` (hydra, fairseq >= 0.10)

``train_inner`` lines are the interval averages every ``log_interval`` updates (step =
``num_updates``); ``valid`` lines (``valid_`` prefix, step = ``valid_num_updates``) are the
evaluations; ``train`` lines (``train_`` prefix) are the epoch averages, read only when a log has
no ``train_inner`` line (they would repeat the same updates as a second, smoothed series). The
names go through the metric-name resolver (importers.metric_names): ``loss`` is the training
loss, ``valid_loss`` the validation loss, ``gnorm`` the gradient norm, ``lr``, ``wall``.

fairseq's logging conventions, modelled
---------------------------------------
* **Values are strings** (``"16.475"``), rounded to 3-4 digits: read as numbers.
* **Losses are in bits** (base 2: the criterions divide by ``math.log(2)``; ``ppl`` is
  ``2 ** loss``): converted to nats (x ln 2), so they compare with every other format.
* **``gnorm`` is the norm before clipping** (``clip_grad_norm_`` returns the total norm before it
  scales): the config says ``grad_norm_measured: before_clipping``, so a norm above
  ``--clip-norm`` is clipping at work, not a violation.
* **``clip``** is the share of the interval's updates whose norm exceeded ``--clip-norm``, in
  percent: a ready-made clip rate, summarised in the notes (how often clipping fired).
* **Skipped updates**: ``NOTE: gradient overflow detected, ignoring gradient, setting loss scale
  to: X`` is an fp16 overflow: the update was skipped. Each becomes an event at the last logged
  update (the exact update is not printed); without those lines (a log at WARNING level), a
  drop of ``loss_scale`` between intervals is the event.
* Every row is an **interval mean** over ``log_interval`` updates; a one-update spike is diluted.
  ``wall`` is the elapsed time: step_time_sec is its delta per update over each interval
  (``step_time_is_interval_mean: true``).
* The config: the hydra config dict (``{'_name': None, 'common': ...}``) or the older
  ``Namespace(...)`` line gives ``max_update``, ``clip_norm`` (0: clipping off), ``lr``,
  ``warmup_updates`` and the scheduler (``polynomial_decay`` with power 1 is a linear decay,
  ``cosine`` a cosine; ``inverse_sqrt`` and others are kept by name: the schedule cannot be
  rebuilt for them).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import UNREADABLE, python_literal, read_text, sniff_path
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.metric_frames import Conventions, Record, build_frames, number, single_file

FORMAT = "fairseq"
DESCRIPTION = (
    "fairseq --log-format json output: train_inner / valid / train JSON stats lines (plain or hydra)"
)

STATS_LINE = re.compile(
    r"(?:\|\s*(?P<tag>train_inner|train|valid)\s*\|\s*|\]\[(?P<htag>train_inner|train|valid)\]\[[A-Z]+\]\s*-\s*)"
    r"(?P<json>\{\".*\})\s*$"
)
OVERFLOW = re.compile(
    r"gradient overflow detected, ignoring gradient, setting loss scale to: (?P<scale>[\d.e+-]+)"
)
HYDRA_CONFIG = re.compile(r"\]\[fairseq_cli\.train\]\[INFO\] - (?P<dict>\{'_name'.*\})\s*$")
NAMESPACE = re.compile(r"(?:^|\| )Namespace\((?P<args>.*)\)\s*$")
SNIFF_LINES = 3000
SUFFIXES = {".log", ".txt", ".out", ".json", ".jsonl", ""}
SCHEDULES = {"cosine": "warmup_cosine", "fixed": "constant", "triangular": None}


def _candidates(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in SUFFIXES)


def _sniff_file(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number_, line in enumerate(handle):
                if number_ >= SNIFF_LINES:
                    return False
                if STATS_LINE.search(line):
                    return True
    except OSError:
        return False
    return False


def sniff(path: Path) -> bool:
    return sniff_path(path, _candidates, _sniff_file)


def _json(line_number: int, text: str, path: Path) -> dict[str, Any]:
    try:
        found = json.loads(text)
    except json.JSONDecodeError as error:
        raise RunImportError(
            f"{path}, line {line_number}: fairseq stats are not valid JSON ({error.msg})"
        ) from error
    if not isinstance(found, dict):
        raise RunImportError(f"{path}, line {line_number}: expected a JSON object of stats")
    return found


def _step(stats: dict[str, Any], key: str, line_number: int, path: Path) -> int:
    value = number(stats.get(key))
    if value is None or not math.isfinite(value):
        raise RunImportError(
            f"{path}, line {line_number}: no {key!r} in the stats: the update number is unknown"
        )
    return int(value)


def load(path: Path) -> RunData:
    source = single_file(path, _candidates, _sniff_file, "fairseq log")
    lines = read_text(source, "fairseq log lines").splitlines()
    inner: list[Record] = []
    epoch_end: list[Record] = []
    valid: list[Record] = []
    events: list[tuple[int, str]] = []
    config_text: str | None = None
    last_update = 0
    clip_rates: list[float] = []
    scales: list[tuple[int, float]] = []
    for line_number, line in enumerate(lines, start=1):
        found = STATS_LINE.search(line)
        if found:
            tag = found.group("tag") or found.group("htag")
            stats = _json(line_number, found.group("json"), source)
            origin = f"line {line_number}"
            if tag == "train_inner":
                last_update = _step(stats, "num_updates", line_number, source)
                values = {k: number(v) for k, v in stats.items()}
                inner.append(Record(last_update, values, origin))
                clip, scale = values.get("clip"), values.get("loss_scale")
                if clip is not None:
                    clip_rates.append(clip)
                if scale is not None:
                    scales.append((last_update, scale))
            elif tag == "valid":
                step = _step(stats, "valid_num_updates", line_number, source)
                valid.append(Record(step, {k: number(v) for k, v in stats.items()}, origin))
            else:
                step = _step(stats, "train_num_updates", line_number, source)
                epoch_end.append(Record(step, {k: number(v) for k, v in stats.items()}, origin))
            continue
        overflow = OVERFLOW.search(line)
        if overflow:
            events.append(
                (
                    last_update,
                    f"fp16 gradient overflow: update skipped, loss scale reduced to {overflow['scale']}",
                )
            )
            continue
        if config_text is None and (HYDRA_CONFIG.search(line) or NAMESPACE.search(line)):
            config_text = line
    notes: list[str] = []
    train = inner
    if not inner:
        train = epoch_end
        notes.append("no train_inner lines: the training rows are the epoch averages (train_ lines)")
    elif epoch_end:
        notes.append(
            f"{len(epoch_end)} epoch-average train_ lines left out (they repeat the train_inner updates)"
        )
    frames = build_frames([*train, *valid], str(source), Conventions(loss_unit="bits"))
    notes.append("losses are logged in bits (fairseq divides by ln 2): converted to nats")
    if clip_rates:
        fired = sum(1 for c in clip_rates if c > 0)
        notes.append(
            f"clip (share of updates clipped, %): clipping fired in {fired} of {len(clip_rates)} "
            f"logging intervals, mean {sum(clip_rates) / len(clip_rates):.1f}% of updates"
        )
    overflow_lines = bool(events)
    for (_, before), (step, after) in itertools.pairwise(scales):
        # a drop between intervals is only news when the overflow lines themselves are missing
        # (they are INFO messages: a log at WARNING level has the scale alone)
        if after < before and not overflow_lines:
            events.append(
                (step, f"loss scale dropped from {before:g} to {after:g} (fp16 overflow: updates skipped)")
            )
    schedule, config = _config(config_text, notes)
    config["grad_norm_measured"] = "before_clipping"
    return frames.run(
        FORMAT,
        str(source),
        schedule=schedule,
        config=config,
        notes=notes,
        events=events,
        interval_mean_times=True,
    )


def _config(line: str | None, notes: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Schedule and config from the hydra config dict or the Namespace line (None: unknown)."""
    if line is None:
        notes.append("no fairseq config line (hydra dict or Namespace): schedule and clip limit unknown")
        return {}, {}
    args: dict[str, Any] = {}
    hydra = HYDRA_CONFIG.search(line)
    if hydra:
        document = python_literal(hydra.group("dict"))
        if document is UNREADABLE or not isinstance(document, dict):
            notes.append("the hydra config line could not be read as a Python literal: config unknown")
            return {}, {}
        for section in ("optimization", "lr_scheduler", "dataset", "checkpoint", "common"):
            if isinstance(document.get(section), dict):
                args.update({k: v for k, v in document[section].items() if k not in args})
        scheduler = document.get("lr_scheduler") or {}
        args["lr_scheduler"] = scheduler.get("_name") if isinstance(scheduler, dict) else None
    else:
        found = NAMESPACE.search(line)
        for key, value in re.findall(
            r"(\w+)=('[^']*'|\[[^\]]*\]|[^,]+)", found.group("args") if found else ""
        ):
            parsed = python_literal(value)
            args[key] = value if parsed is UNREADABLE else parsed
    lr = args.get("lr")
    peak = lr[0] if isinstance(lr, list | tuple) and lr else lr
    clip = args.get("clip_norm")
    kind = str(args.get("lr_scheduler") or "")
    schedule: dict[str, Any] = {"peak_lr": peak, "warmup_steps": args.get("warmup_updates")}
    if kind == "polynomial_decay" and float(args.get("power", 1.0) or 1.0) == 1.0:
        schedule.update(
            type="warmup_linear",
            min_lr=args.get("end_learning_rate", 0.0),
            decay_steps=args.get("total_num_update") or args.get("max_update"),
        )
    elif SCHEDULES.get(kind):
        schedule.update(type=SCHEDULES[kind], decay_steps=args.get("max_update"), min_lr=args.get("min_lr"))
    else:
        schedule["type"] = kind or None
        notes.append(
            f"lr scheduler {kind or 'unknown'!r}: its curve cannot be rebuilt, the LR-schedule checks skip it"
        )
    config: dict[str, Any] = {
        "total_steps": args.get("max_update") or None,
        "grad_clip_norm": clip if clip else None,
    }
    if clip is not None and not clip:
        notes.append("clip_norm 0: gradient clipping is off in this run")
    return schedule, config
