"""Megatron-LM CI "golden values": the per-step metrics a functional test is compared against.

What is read
------------
``golden_values_*.json`` (or a folder holding exactly one), shaped
``{metric: {"start_step": a, "end_step": b, "step_interval": k, "values": {"<step>": v}}}``
(older files give ``values`` as a list, one value per ``step_interval`` from ``start_step``).
``lm loss`` becomes ``loss`` and ``iteration-time`` (seconds) becomes ``step_time_sec``; any
other metric (``num-zeros``, ``mem-allocated-bytes``, ...) is summarised in the notes only.

The config comes from ``model_config.yaml`` beside the JSON: its ``MODEL_ARGS``
(``--lr``, ``--min-lr``, ``--lr-decay-style``, ``--lr-warmup-fraction``, ``--train-iters``,
``--clip-grad``, ``--global-batch-size``, ``--save-interval`` ...) go through the same Megatron
rules as a log's arguments dump (``text_logs.megatron_config``).

What cannot be known
--------------------
* No grad norm, learning rate or validation loss is recorded: those columns stay empty.
* The YAML lists only the arguments the test sets; Megatron defaults for the rest are not stated
  and stay unknown (each is noted).
* ``--save-interval`` and ``TEST_TYPE: ckpt-resume`` say the CI job saves and resumes, but the
  golden values do not record when; this is written as a note, never as an event.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import column_map, files_to_read, load_aliases, metric_frame, sniff_path
from run_diagnosis.importers.canonical import EVENT_COLUMNS, TRAIN_COLUMNS, RunData
from run_diagnosis.importers.text_log_megatron import megatron_config

FORMAT = "megatron_golden_values"
DESCRIPTION = (
    "Megatron-LM CI golden values JSON ({metric: {start_step, end_step, step_interval, values}}) "
    "with model_config.yaml beside it"
)

# the canonical train columns a golden-values metric can feed (the metric names, 'lm loss',
# 'iteration-time', are read by the metric-name resolver)
TRAIN_FIELDS = ("loss", "grad_norm", "learning_rate", "step_time_sec")
CONFIG_FILE = "model_config.yaml"
MAX_SNIFF_BYTES = 50 * 1024 * 1024


def _looks_golden(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and bool(document)
        and all(isinstance(v, dict) and "values" in v and "start_step" in v for v in document.values())
    )


def _sniff_file(path: Path) -> bool:
    if path.suffix.lower() != ".json" or not path.is_file() or path.stat().st_size > MAX_SNIFF_BYTES:
        return False
    try:
        return _looks_golden(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False


def _json_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def sniff(path: Path) -> bool:
    """True for a golden-values JSON, or a folder holding one."""
    return sniff_path(path, _json_files, _sniff_file)


def _resolve(path: Path) -> Path:
    found = files_to_read(path, _json_files, _sniff_file)
    if len(found) == 1:
        return found[0]
    if not found:
        raise RunImportError(f"{path}: no golden-values JSON in this folder (expected {DESCRIPTION})")
    names = ", ".join(p.name for p in found)
    raise RunImportError(f"{path}: {len(found)} golden-values files ({names}); pass the one to read")


def _value(file: Path, metric: str, step: Any, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RunImportError(
            f"{file}: metric {metric!r}, step {step}: expected a number, "
            f"found {type(value).__name__} {value!r}"
        )
    try:
        return float(value)
    except ValueError:
        raise RunImportError(
            f"{file}: metric {metric!r}, step {step}: expected a number or 'nan', found {value!r}"
        ) from None


def _series(file: Path, metric: str, body: Any) -> list[tuple[int, float]]:
    """(step, value) pairs of one metric, in file order."""
    if not isinstance(body, dict) or "values" not in body:
        raise RunImportError(
            f"{file}: metric {metric!r}: expected an object with 'start_step', 'end_step', 'step_interval' "
            f"and 'values', found {type(body).__name__}"
        )
    values = body["values"]
    if isinstance(values, dict):
        pairs = []
        for key, value in values.items():
            try:
                step = int(key)
            except ValueError:
                raise RunImportError(
                    f"{file}: metric {metric!r}: key {key!r} in 'values' is not a step number"
                ) from None
            pairs.append((step, _value(file, metric, key, value)))
        return pairs
    if isinstance(values, list):
        start, interval = body.get("start_step"), body.get("step_interval")
        if not isinstance(start, int) or not isinstance(interval, int) or interval <= 0:
            raise RunImportError(
                f"{file}: metric {metric!r}: 'values' is a list, so integer 'start_step' and positive "
                f"'step_interval' are needed; found start_step={start!r}, step_interval={interval!r}"
            )
        return [
            (start + i * interval, _value(file, metric, start + i * interval, v))
            for i, v in enumerate(values)
        ]
    raise RunImportError(
        f"{file}: metric {metric!r}: 'values' must be an object {{step: value}} or a list, "
        f"found {type(values).__name__}"
    )


def _metrics(names: list[str]) -> tuple[dict[str, str], list[str]]:
    """golden-values metric -> canonical train column, by the metric-name resolver (loss first),
    and the resolver's notes (names not understood)."""
    mapping = column_map(names, load_aliases())
    metrics = {mapping.columns[field]: field for field in TRAIN_FIELDS if field in mapping.columns}
    return metrics, mapping.notes


def _train_frame(series: dict[str, list[tuple[int, float]]], metrics: dict[str, str]) -> pd.DataFrame:
    """One row per step, steps in order of first appearance (the loss first)."""
    steps: dict[int, dict[str, float]] = {}
    for metric, column in metrics.items():
        for step, value in series.get(metric, []):
            steps.setdefault(step, {})[column] = value
    return metric_frame(list(steps), list(steps.values()), TRAIN_COLUMNS)


def _model_args(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(MODEL_ARGS with underscore names, the whole YAML document)."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise RunImportError(f"{path}:{where}: not valid YAML ({error})") from error
    if not isinstance(document, dict):
        raise RunImportError(f"{path}: expected a mapping with MODEL_ARGS, found {type(document).__name__}")
    model_args = document.get("MODEL_ARGS")
    if not isinstance(model_args, dict):
        raise RunImportError(
            f"{path}: key MODEL_ARGS: expected a mapping of '--flag: value', "
            f"found {type(model_args).__name__}"
        )
    args = {str(k).lstrip("-").replace("-", "_"): v for k, v in model_args.items()}
    return args, document


def _config(file: Path, train: pd.DataFrame) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    config_path = file.parent / CONFIG_FILE
    if not config_path.is_file():
        return {}, {}, [f"no {CONFIG_FILE} beside {file.name}: the run config is unknown"]
    args, document = _model_args(config_path)
    schedule, config, notes = megatron_config(args, CONFIG_FILE)
    notes = [f"config from {CONFIG_FILE} MODEL_ARGS", *notes]
    test_type = document.get("TEST_TYPE")
    save_interval = config.get("checkpoint_interval")
    if save_interval or test_type:
        notes.append(
            f"{CONFIG_FILE} states --save-interval {save_interval} and TEST_TYPE {test_type}: the CI job "
            "saves checkpoints and (for ckpt-resume) restarts from one, but the golden values do not record "
            "when, so no checkpoint or resume events are written"
        )
    if len(train) and config.get("total_steps") and int(train["step"].max()) != config["total_steps"]:
        notes.append(
            f"golden values end at step {int(train['step'].max())}, --train-iters is {config['total_steps']}"
        )
    return schedule, config, notes


def load(path: Path) -> RunData:
    """Read a golden-values JSON (and model_config.yaml beside it) into a RunData."""
    file = _resolve(path)
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise RunImportError(
            f"{file}: line {error.lineno}, column {error.colno}: not valid JSON ({error.msg})"
        ) from error
    except (OSError, UnicodeDecodeError) as error:
        raise RunImportError(f"{file}: cannot be read as UTF-8 text ({error})") from error
    if not isinstance(document, dict) or not document:
        raise RunImportError(
            f"{file}: expected a JSON object {{metric: {{...}}}}, found {type(document).__name__}"
        )
    series = {metric: _series(file, metric, body) for metric, body in document.items()}
    metrics, resolver_notes = _metrics(list(series))
    if not any(series.get(metric) for metric in metrics):
        raise RunImportError(
            f"{file}: no metric reads as a training loss, grad norm, learning rate or step time "
            f"(e.g. 'lm loss', 'iteration-time'); found {', '.join(document)}"
        )
    train = _train_frame(series, metrics)
    absent = [field.replace("_", " ") for field in TRAIN_FIELDS if field not in metrics.values()]
    notes = [
        "Megatron-LM CI golden values: one value per step for comparing test runs; lm loss is the training "
        "loss of each iteration, iteration-time is seconds per iteration",
        f"golden values carry no {', '.join([*absent, 'validation loss'])}",
        *resolver_notes,
    ]
    for metric, column in metrics.items():
        points = series.get(metric, [])
        if points and len(points) != len(train):
            notes.append(
                f"{metric} covers {len(points)} of {len(train)} steps "
                f"(steps {points[0][0]}-{points[-1][0]}); {column} is empty elsewhere"
            )
        elif not points:
            notes.append(f"no {metric!r} metric: train_log.{column} is empty")
        bad = [step for step, value in points if not math.isfinite(value)]
        if bad:
            notes.append(f"{metric} is NaN/inf at {len(bad)} steps (first {bad[0]}); written as text")
    for metric, points in series.items():
        if metric not in metrics and points:
            values = [v for _, v in points]
            notes.append(
                f"metric {metric!r} ({len(points)} steps, {min(values):g} to {max(values):g}) "
                "has no canonical column; not imported"
            )
    schedule, config, config_notes = _config(file, train)
    return RunData(
        source_format=FORMAT,
        source_path=str(file),
        train=train,
        events=pd.DataFrame(columns=EVENT_COLUMNS),
        run_name=file.parent.name,
        schedule=schedule,
        config=config,
        notes=notes + config_notes,
    )
