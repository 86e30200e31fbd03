"""The canonical run folder: the five files every writer writes and the dbt project reads.

The one place that names the files, their columns and the config keys. Every writer (the
importers through ``importers.canonical.write_run``, the benchmark's synthetic runs, the
tests' ``RunBuilder``) and every checker before dbt (``validate_run.py``) takes them from
here; ``tests/python/test_run_files.py`` checks them against the macros that read the files
(``run_file_spec`` and ``config_fields``). Standard library only: ``validate_run.py`` runs
before pandas is imported.
"""

from __future__ import annotations

from pathlib import Path

# kind -> column order of the CSV files (the dbt project finds each file by its suffix)
TRAIN_COLUMNS = ["step", "shard_id", "loss", "grad_norm", "learning_rate", "step_time_sec"]
EVAL_COLUMNS = ["step", "val_loss", "val_accuracy"]
SHARD_COLUMNS = ["shard_id", "n_examples", "source"]
EVENT_COLUMNS = ["step", "event"]
CSV_COLUMNS = {"train": TRAIN_COLUMNS, "eval": EVAL_COLUMNS, "shards": SHARD_COLUMNS, "events": EVENT_COLUMNS}
# kind -> columns a file may carry after its own (a writer writes one only when it has values; a file
# without it is read as if it were empty): val_map50, a detector's validation mean average precision
# at IoU 0.5 (a share, 0..1), the score learning_progress judges a detector by; val_auc, the area
# under the ROC curve on validation (a share, 0..1; 0.5 is chance at any class balance)
OPTIONAL_EVAL_COLUMNS = ["val_map50", "val_auc"]
OPTIONAL_CSV_COLUMNS = {"eval": OPTIONAL_EVAL_COLUMNS}


def csv_columns(kind: str, present: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The columns of a kind's file: its own, then those of its optional columns in present."""
    return CSV_COLUMNS[kind] + [c for c in OPTIONAL_CSV_COLUMNS.get(kind, []) if c in present]


# kind -> file-name suffix (any common prefix before it)
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
REQUIRED_CONFIG_KEYS = tuple([f"lr_schedule.{key}" for key in REQUIRED_SCHEDULE_KEYS] + REQUIRED_TOP_KEYS)

# the config field an importer sets when each logged step_time_sec is the mean over the
# logging interval since the previous row (Megatron, LLaMA-Factory): slow_steps then judges a
# stall by its window (int_step_times_profiled)
INTERVAL_MEAN_KEY = "step_time_is_interval_mean"

# the config field an importer sets (to the script's name) when a script beside the log stops the
# run early on a validation plateau (script_settings.early_stopping): overfitting reads a rise that
# ended the run as the one early stopping watched for
EARLY_STOPPING_KEY = "early_stopping"

# the config fields an importer sets from a dataset file that names the run's training and
# validation data (an Ultralytics data YAML's `train` and `val`, joined to its `path`): the same
# places in both means the run validated on its training data (eval_contamination)
TRAIN_DATA_KEY = "train_data"
EVAL_DATA_KEY = "eval_data"

# the config field an importer sets to "epoch" when each train row is an epoch, not a step (a
# per-epoch log read by the generic reader): check_coverage then says which checks need steps
ROWS_ARE_KEY = "rows_are"

# the config field set to "adversarial" when the training loss read is a GAN player's (a
# discriminator/critic's or a generator's, metric_names.is_adversarial): its level follows the
# balance of the two players, so learning_progress does not read a rise of it as no learning; to
# "reinforcement" for a value, policy or TD loss (metric_names.is_reinforcement), "term" for one term
# of a sum whose total is not logged
LOSS_OBJECTIVE_KEY = "loss_objective"

# the config fields an importer sets to the names of a split's box-regression loss terms that are
# exactly 0 on every row while another term of the same split is not: no labelled box reached the loss
# in that split (no targets); learning_progress and log_quality read them beside the mAP
ZERO_TERMS_KEYS = {"loss": "train_zero_loss_terms", "val_loss": "val_zero_loss_terms"}

# config key path -> expected JSON type; the keys stg_training__config reads (macro config_fields)
CONFIG_TYPES = {
    "lr_schedule.type": "text",
    "lr_schedule.peak_lr": "number",
    "lr_schedule.min_lr": "number",
    "lr_schedule.warmup_steps": "integer",
    "lr_schedule.decay_steps": "integer",
    "grad_clip_norm": "number",
    "total_steps": "integer",
    "run_name": "text",
    "batch_size": "integer",
    "eval_interval": "integer",
    "checkpoint_interval": "integer",
    "data_parallel_workers": "integer",
    "data.n_shards": "integer",
    "data.shuffle_shards_each_epoch": "text",
    "precision": "text",
    "steps_per_epoch": "integer",
    "grad_norm_measured": "text",
    INTERVAL_MEAN_KEY: "text",
    ROWS_ARE_KEY: "text",
    LOSS_OBJECTIVE_KEY: "text",
    ZERO_TERMS_KEYS["loss"]: "text",
    ZERO_TERMS_KEYS["val_loss"]: "text",
    "vocab_size": "integer",
    "num_classes": "integer",
    "num_classes_basis": "text",
    "output_head": "text",
    "model_name": "text",
    "tokenizer_name": "text",
    "optimizer.name": "text",
}


def run_file(folder: Path, kind: str, prefix: str = "") -> Path:
    """The path of one canonical file of a run: <folder>/<prefix><suffix of kind>."""
    return folder / f"{prefix}{FILE_SUFFIXES[kind]}"
