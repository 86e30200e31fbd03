"""The canonical run: the five files every importer writes and the dbt project reads.

One place defines the file names, the column order and the config keys, so the
importers, `diagnose.py` and the tests agree on what a run folder holds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

# file suffix -> column order (the dbt project finds each file by its suffix)
TRAIN_COLUMNS = ["step", "shard_id", "loss", "grad_norm", "learning_rate", "step_time_sec"]
EVAL_COLUMNS = ["step", "val_loss", "val_accuracy"]
SHARD_COLUMNS = ["shard_id", "n_examples", "source"]
EVENT_COLUMNS = ["step", "event"]

FILE_SUFFIXES = {
    "train": "train_log.csv",
    "eval": "eval_log.csv",
    "shards": "shard_info.csv",
    "events": "run_events.csv",
    "config": "run_config.json",
}

# keys the config must carry; an importer that cannot know one writes it as null
# (a declared unknown) and says why in provenance.notes
REQUIRED_SCHEDULE_KEYS = ["type", "peak_lr", "min_lr", "warmup_steps", "decay_steps"]
REQUIRED_TOP_KEYS = ["grad_clip_norm", "total_steps"]
OPTIONAL_TOP_KEYS = ["batch_size", "eval_interval", "checkpoint_interval", "data_parallel_workers"]


@dataclass
class RunData:
    """A training run in canonical form, before it is written to disk.

    train/evals/shards/events are DataFrames with (a subset of) the canonical
    columns; a missing column is written empty. schedule and config hold what
    the source says; None means the source does not say.
    """

    source_format: str
    source_path: str
    train: pd.DataFrame
    evals: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=EVAL_COLUMNS))
    shards: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SHARD_COLUMNS))
    events: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=EVENT_COLUMNS))
    run_name: str | None = None
    schedule: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _frame(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    out = df.copy()
    for column in columns:
        if column not in out.columns:
            out[column] = None
    return out[columns]


def _clean(value: Any) -> Any:
    """JSON-safe config value: NaN/inf become null, numpy scalars plain Python."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def config_document(run: RunData) -> dict[str, Any]:
    """The run_config.json document: every required key present, null when unknown."""
    schedule = {key: _clean(run.schedule.get(key)) for key in REQUIRED_SCHEDULE_KEYS}
    schedule.update({k: _clean(v) for k, v in run.schedule.items() if k not in schedule})
    document: dict[str, Any] = {"run_name": run.run_name, "lr_schedule": schedule}
    for key in REQUIRED_TOP_KEYS + OPTIONAL_TOP_KEYS:
        document[key] = _clean(run.config.get(key))
    document.update({k: _clean(v) for k, v in run.config.items() if k not in document})
    unknown = [k for k in REQUIRED_SCHEDULE_KEYS if schedule[k] is None]
    unknown += [k for k in REQUIRED_TOP_KEYS if document[k] is None]
    document["provenance"] = {
        "source_format": run.source_format,
        "source_path": run.source_path,
        "unknown_fields": unknown,
        "notes": run.notes,
    }
    return document


def write_run(run: RunData, out_dir: Path, prefix: str = "") -> dict[str, Path]:
    """Write the five canonical files into out_dir; returns kind -> path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    frames = {
        "train": (run.train, TRAIN_COLUMNS),
        "eval": (run.evals, EVAL_COLUMNS),
        "shards": (run.shards, SHARD_COLUMNS),
        "events": (run.events, EVENT_COLUMNS),
    }
    paths: dict[str, Path] = {}
    for kind, (frame, columns) in frames.items():
        path = out_dir / f"{prefix}{FILE_SUFFIXES[kind]}"
        _frame(frame, columns).to_csv(path, index=False, float_format="%.10g")
        paths[kind] = path
    path = out_dir / f"{prefix}{FILE_SUFFIXES['config']}"
    path.write_text(json.dumps(config_document(run), indent=2) + "\n", encoding="utf-8")
    paths["config"] = path
    return paths
