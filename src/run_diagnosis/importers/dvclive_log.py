"""DVCLive output folders (``dvclive.Live``): one TSV history per metric, a summary, the params.

What is read
------------
DVCLive writes one tab-separated history file per metric, a row per ``log_metric`` call, and the
latest values as a JSON summary. Where depends on the version (iterative/dvclive's writer,
``Metric.output_path`` / ``Live.metrics_file``):

* **1.0 and later** (October 2022 on): ``<dir>/plots/metrics/<name>.tsv``, the summary
  ``<dir>/metrics.json``, the params ``<dir>/params.yaml`` (``Live.log_params``; the HF and
  Lightning integrations log the TrainingArguments / hyperparameters there), ``<dir>/dvc.yaml``
  (2.x) or a project ``dvc.yaml`` (3.x) naming them. ``<dir>`` is ``dvclive`` by default.
* **0.5 - 0.12**: ``<dir>/scalars/<name>.tsv`` and the summary ``<dir>.json`` beside the folder.
* **0.0 - 0.4**: ``<dir>/<name>.tsv`` and ``<dir>.json``.

A name with ``/`` is a sub-folder (``train/loss`` -> ``train/loss.tsv``). Each file's header is
``[timestamp,] step, <metric>``: ``timestamp`` (epoch milliseconds) is always there before 1.0 and
only with ``log_metric(..., timestamp=True)`` since; the metric column is the full name before
2.0 and its last part (``loss``) since. The metric's name here is its path (``train/loss``); it
goes through the metric-name resolver (``metric_frames``), names it cannot place are named in a
"not understood" note. The project's DVC ``params.yaml`` (the folder above ``<dir>``) is read too;
``<dir>/params.yaml`` wins where both set a key.

DVCLive's conventions, modelled
-------------------------------
* **The step is DVCLive's own counter** (``Live.step``, advanced by ``next_step``): the Lightning
  logger sets it to the trainer's global step, the Keras and fastai callbacks advance it once
  per epoch, and the Hugging Face callback (``transformers.integrations.DVCLiveCallback``)
  advances it once per ``on_log`` call, so a training log and an evaluation at the same trainer
  step are two DVCLive steps. When the params are Hugging Face TrainingArguments the trainer's
  step is recovered from them: the k-th training-loss row is step k x ``logging_steps`` (after a
  first row at step 1 with ``logging_first_step``), the j-th evaluation step j x ``eval_steps``
  (evaluation by steps), otherwise the step of the training row logged before it. The notes say
  which. A run resumed with ``resume_from_checkpoint`` cannot be seen this way (the rows only count).
* **Names** come from the integrations' ``standardize_metric_name``: HF ``eval_loss`` ->
  ``eval/loss`` (its per-log ``loss`` stays ``loss``; the run's mean ``train_loss``, logged once at
  the end with ``train_runtime``, becomes ``train/loss``), Keras ``loss`` / ``val_loss`` ->
  ``train/loss`` / ``eval/loss``, Lightning ``train_loss_step`` -> ``train/step/loss``, fastai
  ``valid_loss`` -> ``eval/loss``.
* **Non-finite values**: since 2.15.1 a NaN or infinite value is written as the text ``nan`` /
  ``inf``: read back as NaN and inf (a finding). Any other text value (``log_metric`` accepts
  strings) is not a number: left out and counted in a note naming the file and line.
* **Params**: Hugging Face TrainingArguments give the schedule, clip limit, intervals and
  ``grad_norm_measured: before_clipping`` (as for MLflow / Trackio, ``settings_from_params``);
  other params are read by meaning of their last key, whatever the nesting (``lr`` /
  ``learning_rate`` -> peak LR, ``warmup_steps``, ``epochs`` / ``max_epochs``, ``max_steps``,
  ``grad_clip`` / ``gradient_clip_val``, ``vocab_size``, ``model_name``), as for Lightning's
  ``hparams.yaml``; each reading is a note.
* **Summary**: the summary's ``step`` is the last step DVCLive finished; a value in the summary
  without a history file (``log_metric(..., plot=False)``) is a single final number: named in
  a note, not diagnosed.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import column_map, load_aliases, read_text
from run_diagnosis.importers.canonical import RunData
from run_diagnosis.importers.lightning_csv import pick_hparams
from run_diagnosis.importers.metric_frames import (
    HF_ARGUMENT_KEYS,
    build_frames,
    flat_keys,
    number,
    records_from_long,
    settings_from_params,
)
from run_diagnosis.importers.training_args import (
    config_from,
    grad_norm_measured_by_name,
    normalise_enum,
    positive_int,
)

FORMAT = "dvclive"
DESCRIPTION = (
    "DVCLive folder (dvclive/plots/metrics/<name>.tsv + metrics.json + params.yaml; "
    "older: dvclive/scalars/*.tsv or dvclive/*.tsv + dvclive.json)"
)

DEFAULT_DIR = "dvclive"
PARAMS_FILE = "params.yaml"
TSV = ".tsv"
TIMESTAMP = "timestamp"
STEP = "step"
# what each leaf key of non-HF params means (beyond lightning_csv.HPARAM_KEYS): the model's
# output vocabulary sets the loss's chance level; a seq2seq model's loss is over its target vocabulary
CONFIG_TEXT_KEYS = {
    "model_name": [
        "model_name",
        "model_name_or_path",
        "base_model",
        "pretrained_model",
        "pretrained_model_name",
        "model_checkpoint",
    ],
    "tokenizer_name": ["tokenizer_name"],
}
VOCAB_KEYS = ["vocab_size", "target_vocab_size", "n_vocab"]
# the HF Trainer's end-of-training log (train_runtime ...), as DVCLive names it before / since 2.0
HF_SUMMARY_NAMES = {"train_runtime", "train/runtime"}
Row = tuple[int, str, float | None, float | None]  # (step, metric name, value, timestamp in seconds)


@dataclass(frozen=True)
class LiveDir:
    """Where one DVCLive output lives: its folder, the folder of its history files, its
    summary file and the layout's name (for the notes)."""

    root: Path
    history: Path
    summary: Path
    layout: str


def _header(path: Path) -> list[str] | None:
    """The columns of a DVCLive history file (``[timestamp,] step, <metric>``), else None."""
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            first = handle.readline().rstrip("\r\n")
    except OSError:
        return None
    columns = first.split("\t")
    if STEP not in columns:
        return None
    rest = [c for c in columns if c not in (STEP, TIMESTAMP)]
    return columns if len(rest) == 1 and rest[0] and len(columns) in (2, 3) else None


def _histories(folder: Path, recursive: bool) -> list[Path]:
    if not folder.is_dir():
        return []
    found = folder.rglob(f"*{TSV}") if recursive else folder.glob(f"*{TSV}")
    return sorted(p for p in found if p.is_file())


def _live_dir(folder: Path) -> LiveDir | None:
    """The DVCLive output in `folder` itself, in whichever layout its version wrote."""
    beside = folder.parent / f"{folder.name}.json"
    for layout, history, summary in (
        ("plots/metrics (DVCLive >= 1.0)", folder / "plots" / "metrics", folder / "metrics.json"),
        ("scalars (DVCLive 0.5 - 0.12)", folder / "scalars", beside),
    ):
        files = _histories(history, recursive=True)
        if files and any(_header(f) for f in files):
            return LiveDir(folder, history, summary, layout)
    # the oldest layout (0.0 - 0.4): the TSVs in the folder itself, the summary beside it; only a
    # folder with that summary or DVCLive's default name is taken (not any folder of TSVs)
    if not (beside.is_file() or folder.name == DEFAULT_DIR):
        return None
    files = _histories(folder, recursive=True)
    if files and any(_header(f) for f in files):
        return LiveDir(folder, folder, beside, "<dir>/*.tsv (DVCLive 0.0 - 0.4)")
    return None


def live_dirs(path: Path) -> list[LiveDir]:
    """The DVCLive outputs at `path`: the folder itself, or its sub-folders one level down (a
    project holding ``dvclive/``); a summary file (``metrics.json``, ``dvclive.json``) stands
    for its folder."""
    if path.is_file():
        if path.name == "metrics.json":
            path = path.parent
        elif path.suffix == ".json" and path.with_suffix("").is_dir():
            path = path.with_suffix("")
        else:
            return []
    if not path.is_dir():
        return []
    own = _live_dir(path)
    if own is not None:
        return [own]
    found = []
    for child in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
        live = _live_dir(child)
        if live is not None:
            found.append(live)
    return found


def sniff(path: Path) -> bool:
    try:
        return bool(live_dirs(path))
    except OSError:
        return False


def load(path: Path) -> RunData:
    if not path.exists():
        raise RunImportError(f"{path}: no such file or folder")
    found = live_dirs(path)
    if not found:
        raise RunImportError(
            f"{path}: no DVCLive history files (plots/metrics/<name>.tsv, scalars/<name>.tsv or "
            "<dir>/<name>.tsv with a 'step' column)"
        )
    if len(found) > 1:
        names = ", ".join(str(f.root) for f in found)
        raise RunImportError(f"{path}: holds {len(found)} DVCLive folders ({names}): diagnose one of them")
    return load_live(found[0])


# ---------------------------------------------------------------- histories


def read_history(path: Path, name: str, notes: list[str]) -> list[Row]:
    """(DVCLive step, name, value, timestamp in seconds) for each row of one history file;
    RunImportError naming the file, line and column of a value that cannot be read."""
    read_text(path, "a DVCLive metric history (tab-separated)")  # a clear error for non-UTF-8 bytes
    columns = _header(path)
    if columns is None:
        raise RunImportError(
            f"{path}, line 1: expected the header 'step<TAB>{name.rsplit('/', 1)[-1]}' (optionally with "
            "'timestamp' first), found another header"
        )
    try:
        frame = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, on_bad_lines="error")
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise RunImportError(f"{path}: not readable as a DVCLive history: {error}") from error
    metric = next(c for c in columns if c not in (STEP, TIMESTAMP))
    rows: list[Row] = []
    text_lines: list[int] = []
    for index, (raw_step, raw_value, raw_time) in enumerate(
        zip(
            frame[STEP],
            frame[metric],
            frame[TIMESTAMP] if TIMESTAMP in frame.columns else [None] * len(frame),
            strict=True,
        )
    ):
        line = index + 2
        step = number(raw_step)
        if step is None or not math.isfinite(step) or step != int(step) or step < 0:
            raise RunImportError(f"{path}, line {line}, column 'step': {raw_step!r} is not a step number")
        seconds = None
        if raw_time is not None:
            stamp = number(raw_time)
            if stamp is None or not math.isfinite(stamp):
                raise RunImportError(
                    f"{path}, line {line}, column 'timestamp': {raw_time!r} is not epoch milliseconds"
                )
            seconds = stamp / 1000.0
        value = number(raw_value)
        if value is None:
            text_lines.append(line)
            continue
        rows.append((int(step), name, value, seconds))
    if text_lines:
        notes.append(
            f"{path.name} ({name}): {len(text_lines)} value(s) are text, not numbers (first at line "
            f"{text_lines[0]}): left out"
        )
    return rows


def _metric_name(live: LiveDir, path: Path) -> str:
    return path.relative_to(live.history).with_suffix("").as_posix()


# ---------------------------------------------------------------- params and summary


def _yaml(path: Path, notes: list[str]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        document = yaml.safe_load(read_text(path, "YAML params"))
    except yaml.YAMLError as error:
        raise RunImportError(f"{path}: not valid YAML: {error}") from error
    if document is None:
        return {}
    if not isinstance(document, dict):
        notes.append(f"{path}: not a mapping of params ({type(document).__name__}): not read")
        return {}
    return document


def read_params(live: LiveDir, notes: list[str]) -> dict[str, Any]:
    """The run's params, flattened with ``/``: the project's DVC ``params.yaml`` (the folder
    above the DVCLive folder), overridden by DVCLive's own ``params.yaml``."""
    params: dict[str, Any] = {}
    for path in (live.root.parent / PARAMS_FILE, live.root / PARAMS_FILE):
        document = flat_keys(_yaml(path, notes))
        if document:
            notes.append(f"{len(document)} params read from {path}")
        params.update(document)
    return params


def _summary(live: LiveDir, history_names: set[str], last_step: int | None, notes: list[str]) -> None:
    """What the summary file adds: values with no history, and a step the histories lack."""
    if not live.summary.is_file():
        notes.append(
            f"no summary file ({live.summary.name}): the run may have stopped before its first step ended"
        )
        return
    try:
        document = json.loads(read_text(live.summary, "the DVCLive summary (JSON)"))
    except json.JSONDecodeError as error:
        notes.append(
            f"{live.summary}: not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}): "
            "the summary is not used (the histories are)"
        )
        return
    if not isinstance(document, dict):
        notes.append(f"{live.summary}: not a JSON object: not used")
        return
    flat = flat_keys(document)
    summary_step = positive_int(flat.pop(STEP, None))
    only = sorted(k for k in flat if k not in history_names)
    if only:
        shown = ", ".join(f"{k}={flat[k]}" for k in only[:10])
        notes.append(
            f"{live.summary.name}: {len(only)} value(s) without a history file (logged with plot=False, a "
            f"single final number each, not diagnosed): {shown}{' ...' if len(only) > 10 else ''}"
        )
    if summary_step is not None and last_step is not None and summary_step > last_step:
        notes.append(
            f"{live.summary.name} says step {summary_step}, the histories end at DVCLive step {last_step}: "
            "rows of the last steps are missing from the history files"
        )


# ---------------------------------------------------------------- steps of the HF callback


def _is_hf(args: Mapping[str, Any]) -> bool:
    return all(key in args for key in HF_ARGUMENT_KEYS)


def _interval(value: Any) -> int | None:
    step = number(value)
    return int(step) if step is not None and math.isfinite(step) and step >= 1 and step == int(step) else None


def trainer_steps(
    rows: Sequence[Row],
    args: Mapping[str, Any],
    notes: list[str],
) -> Sequence[Row]:
    """The rows at the HF trainer's global steps instead of DVCLive's ``on_log`` counter (see the
    module docstring); the rows unchanged, with a note, when the arguments do not allow it."""
    names = list(dict.fromkeys(r[1] for r in rows))
    columns = column_map(names, load_aliases()).columns
    loss, val = columns.get("loss"), columns.get("val_loss")
    logging = normalise_enum("logging_strategy", args.get("logging_strategy", "steps"))
    every = _interval(args.get("logging_steps"))
    if loss is None or str(logging) != "steps" or every is None:
        notes.append(
            "step is DVCLive's count of the HF callback's log calls, not the trainer's step "
            f"(logging_strategy {logging!r}, logging_steps {args.get('logging_steps')!r}): "
            "schedule checks compare LRs by that count"
        )
        return rows
    train_at = sorted({r[0] for r in rows if r[1] == loss})
    first = bool(args.get("logging_first_step"))
    mapping = {
        s: (1 if first and k == 0 else (k if first else k + 1) * every) for k, s in enumerate(train_at)
    }
    strategy = normalise_enum(
        "eval_strategy", args.get("eval_strategy", args.get("evaluation_strategy", "no"))
    )
    eval_every = _interval(args.get("eval_steps")) or every
    eval_at = sorted({r[0] for r in rows if r[1] == val and r[0] not in mapping}) if val else []
    by_count = str(strategy) == "steps"
    for j, step in enumerate(eval_at):
        if by_count:
            mapping[step] = (j + 1) * eval_every
    previous = 0
    for step in sorted({r[0] for r in rows}):
        if step in mapping:
            previous = mapping[step]
        else:
            mapping[step] = previous
    ordered = [mapping[s] for s in sorted(mapping)]
    if any(b < a for a, b in itertools.pairwise(ordered)):
        notes.append(
            "step is DVCLive's count of the HF callback's log calls: the trainer steps computed from "
            f"logging_steps {every} and eval_steps {eval_every} would go backwards, so they are not used"
        )
        return rows
    notes.append(
        f"step: DVCLive counts the HF callback's log calls; the trainer's step is recovered from the "
        f"TrainingArguments: training row k at k x logging_steps {every}"
        + (" (the first at step 1, logging_first_step)" if first else "")
        + (
            f", evaluation j at j x eval_steps {eval_every}"
            if by_count and eval_at
            else ", other rows at the step of the training row logged before them"
        )
        + "; a resumed run (resume_from_checkpoint) would be counted on, not restarted"
    )
    return [(mapping[s], n, v, t) for s, n, v, t in rows]


# ---------------------------------------------------------------- non-HF params


def _by_leaf(params: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """The params by their last key, lower-cased; a leaf set twice to different values is
    ambiguous: left out, with a note."""
    leaves: dict[str, Any] = {}
    clashes: set[str] = set()
    for key, value in params.items():
        leaf = key.rsplit("/", 1)[-1].lower()
        if leaf in leaves and leaves[leaf] != value:
            clashes.add(leaf)
        leaves.setdefault(leaf, value)
    for leaf in sorted(clashes):
        notes.append(f"params: {leaf!r} is set more than once with different values: not used")
        leaves.pop(leaf)
    return leaves


def settings_from_own_params(
    params: Mapping[str, Any], train_steps: list[int], eval_steps: list[int], notes: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Schedule and config from params that are not HF TrainingArguments, read by meaning."""
    leaves = _by_leaf(params, notes)
    picked = pick_hparams(leaves, notes, source=PARAMS_FILE)
    schedule = {k: picked[k] for k in ("peak_lr", "min_lr", "warmup_steps") if k in picked}
    total = positive_int(picked.get("total_steps"))
    if total is None:
        notes.append("no max_steps in the params: total_steps unknown")
    config = config_from({}, {}, train_steps, eval_steps, total, notes)
    config.update({k: picked[k] for k in ("num_epochs", "batch_size", "grad_clip_norm") if k in picked})
    for fieldname, keys in {**CONFIG_TEXT_KEYS, "vocab_size": VOCAB_KEYS}.items():
        key = next((k for k in keys if leaves.get(k) not in (None, "")), None)
        if key is None:
            continue
        value = positive_int(leaves[key]) if fieldname == "vocab_size" else str(leaves[key])
        if value is not None:
            config[fieldname] = value
            notes.append(f"{PARAMS_FILE}: {key}={leaves[key]} read as {fieldname}")
    if "peak_lr" in schedule:
        notes.append(f"peak_lr {schedule['peak_lr']} from the params; the schedule type is not stated")
    return schedule, config


# ---------------------------------------------------------------- the run


def load_live(live: LiveDir) -> RunData:
    notes = [f"DVCLive folder {live.root} ({live.layout})"]
    rows: list[Row] = []
    names: set[str] = set()
    for path in _histories(live.history, recursive=True):
        if live.history == live.root and _header(path) is None:
            notes.append(f"{path.name}: not a DVCLive history (no 'step' and one metric column): not read")
            continue
        name = _metric_name(live, path)
        names.add(name)
        rows += read_history(path, name, notes)
    if not rows:
        raise RunImportError(f"{live.history}: the DVCLive history files hold no rows")
    last_step = max(r[0] for r in rows)
    _summary(live, names, last_step, notes)
    params = read_params(live, notes)
    args = {key.rsplit("/", 1)[-1]: value for key, value in params.items()}
    hf = _is_hf(args)
    if hf:
        rows = list(trainer_steps(rows, args, notes))
    elif names & HF_SUMMARY_NAMES:
        notes.append(
            "the metrics look like the Hugging Face callback's (train_runtime, logged once by the HF Trainer "
            "at the end) but the params hold no TrainingArguments: the step is DVCLive's count of log calls "
            "(a training log and an evaluation are two steps), not the trainer's step"
        )
    records = records_from_long(rows, str(live.history))
    frames = build_frames(records, str(live.history))
    if hf:
        schedule, config = settings_from_params(params, frames, notes)
    else:
        schedule, config = settings_from_own_params(
            params,
            [int(s) for s in frames.train["step"]],
            [int(s) for s in frames.evals["step"]],
            notes,
        )
        norm_name = frames.assignment.columns.get("grad_norm")
        if grad_norm_measured_by_name(norm_name):  # DVCLive's Lightning logger
            config["grad_norm_measured"] = grad_norm_measured_by_name(norm_name)
            notes.append(f"{norm_name} is Lightning's grad_norm() total, logged before clipping")
    return frames.run(
        FORMAT, str(live.root), run_name=live.root.name, schedule=schedule, config=config, notes=notes
    )
