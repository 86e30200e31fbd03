"""PyTorch Lightning CSVLogger folder (``metrics.csv`` + ``hparams.yaml``) -> canonical run.

What is read
------------
* ``metrics.csv``: Lightning's sparse wide CSV, one row per logging call and empty cells
  elsewhere (``epoch``, ``step``, ``train_loss_step``, ``val_loss``, ``lr-AdamW``...). It is cut
  into train and eval rows by ``wide_table.split_wide``, the columns read by the metric-name
  resolver (``importers.metric_names``): ``train_loss_step``/``train_loss``/``loss`` -> loss,
  ``val_loss``/``valid_loss`` -> val_loss, ``lr-AdamW`` (LearningRateMonitor) -> learning_rate,
  ``grad_2.0_norm_total`` -> grad_norm. An epoch aggregate (``train_loss_epoch``) is read only
  when no per-step loss was logged, or when it holds more values than its per-step twin
  (``train_loss_step``: epochs shorter than log_every_n_steps log a step value only now and then;
  ``wide_table._prefer_fuller_epoch_loss``), and the notes say so.
  Lightning's ``step`` counts from 0: a complete run's last logged step is total_steps - 1.
* ``hparams.yaml`` beside it (whatever the LightningModule saved with
  ``save_hyperparameters``): ``lr``/``learning_rate`` -> peak_lr, ``num_epochs``/``max_epochs``
  -> num_epochs (else a key whose last word is ``epochs`` or ``epoch`` after count words only:
  ``nb_epochs``, ``max_epoch``, OpenSTL's ``epoch: 200``; the file is saved once, before training,
  so it holds settings, not the epoch reached), ``max_steps`` -> total_steps, ``batch_size``,
  ``gradient_clip_val`` -> grad_clip_norm, ``warmup_steps``, ``min_lr``; a key the top level
  lacks is taken from a training section (``training:``, ``trainer:``, ``optim:``, ..., at any
  depth up to SECTION_DEPTH: a grouped config, or one saved whole under wrappers, plans the run as
  a flat one; two sections disagreeing leave it out); everything is also kept under
  ``config.hparams``. Python-object YAML tags (``!!python/...``) are read as plain data.
* A ``lightning_logs`` folder holding one ``version_N`` is read as that version. Holding
  several, consecutive versions that continue each other are ONE run resumed (``version_runs``):
  Lightning starts a new version folder for every ``fit()``, also one that restores a
  checkpoint, whose step counter then goes on from the checkpoint. A version continues the
  previous one when its first logged step is later than the previous one's first (it did not
  start from scratch) and at most one logging interval plus ``FLUSH_STEPS`` past the previous
  one's last (the CSVLogger writes its rows every ``flush_logs_every_n_steps`` = 100 steps by
  default, so a crash loses up to that many), and no training hyperparameter differs
  (``recipe_changes``: a number, or a text that is not a path; a path, a switch (true/false)
  and a value set on one side only, such as the checkpoint to resume from, are the
  environment of the new process and only named in the event). Such versions are read as one
  run: rows one after the other (a replayed stretch is a new attempt, as in every resumed log),
  a "run resumed" event at each new version's first step (``canonical.stitch_runs``). Versions
  that do not continue each other (a sweep: each starts at its first step again, with other
  hyperparameters) are separate runs: ``load`` of the folder is then an error that lists them,
  and ``diagnose`` reads them as several runs (``multi_run``).

What cannot be known
--------------------
* The schedule type: a bare ``lr`` is the peak LR of an unknown schedule (type, min_lr and
  decay stay empty); without an ``lr-*`` column the LR actually used is not logged at all.
* ``total_steps`` unless ``max_steps`` is given: with ``num_epochs`` and regular epoch ends
  in the CSV it is computed as num_epochs x steps per epoch, and the notes say so.
  Without either, a log whose epoch counter ends before num_epochs gets an ``epochs
  unfinished`` event at its last step (it ended in epoch e of the E planned).
* step_time_sec (Lightning logs no per-step time; a custom ``epoch_time`` column is per
  epoch and is only mentioned in the notes), checkpoints, how the run ended, shard ids.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from run_diagnosis.importers import RunImportError, script_settings
from run_diagnosis.importers.aliases import UNREADABLE, column_map, load_aliases, python_literal, to_step
from run_diagnosis.importers.canonical import (
    EPOCHS_UNFINISHED,
    RunData,
    add_event,
    epochs_unfinished_event,
    stitch_runs,
)
from run_diagnosis.importers.reference_keys import TolerantLoader, side_documents, walk_keys
from run_diagnosis.importers.training_args import (
    as_number,
    config_from,
    grad_norm_measured_by_name,
    positive_int,
)
from run_diagnosis.importers.wide_table import Table, read_table, split_wide
from run_diagnosis.run_files import ROWS_ARE_KEY

FORMAT = "lightning_csv"
DESCRIPTION = "PyTorch Lightning CSVLogger folder (metrics.csv + hparams.yaml), e.g. lightning_logs/version_0"
METRICS_FILE = "metrics.csv"
HPARAMS_FILE = "hparams.yaml"
VERSION_DIR = re.compile(r"^version_(\d+)$")

# canonical key -> hparams.yaml keys that give it; the first key present wins
HPARAM_KEYS: dict[str, list[str]] = {
    "peak_lr": ["lr", "learning_rate", "max_lr", "peak_lr"],
    "min_lr": ["min_lr"],
    "warmup_steps": ["warmup_steps"],
    "num_epochs": ["num_epochs", "max_epochs", "epochs", "n_epochs"],
    "total_steps": ["max_steps", "total_steps", "num_steps"],
    "batch_size": ["batch_size", "train_batch_size"],
    "grad_clip_norm": ["gradient_clip_val", "grad_clip_norm", "grad_clip", "max_grad_norm", "clip_grad_norm"],
}
SCHEDULE_KEYS = ("peak_lr", "min_lr", "warmup_steps")
# the sections of a nested config that hold the run's training settings (Hydra / OmegaConf
# configs saved as hparams: trainer.max_steps, optim.lr, training.warmup_steps); a `model:` or
# `data:` section's numbers (a layer's dropout, a dataset's length) are not the run's plan
TRAINING_SECTIONS = frozenset(
    {
        "training",
        "train",
        "trainer",
        "optim",
        "optimizer",
        "optimization",
        "solver",
        "hparams",
        "hyperparameters",
    }
)
# how deep the training sections of a nested config are looked for: a dataclass or Hydra config
# saved whole wraps them (cfg -> experiment -> trainer -> max_epochs), deeper is a model's parts
SECTION_DEPTH = 3
# a planned epoch count under another project's name (train_epochs, total_epochs, nb_epochs):
# the word 'epochs' last, the words before it only ones that say "how many, for training"
EPOCH_COUNT_QUALIFIERS = frozenset({"train", "training", "max", "num", "n", "nb", "total", "number", "of"})
META_TAGS_FILE = "meta_tags.csv"  # Lightning's TestTube-era logger: the hyperparameters as key,value rows
FLUSH_STEPS = 100  # CSVLogger(flush_logs_every_n_steps=100): the rows a crash can lose
PATH_LIKE = re.compile(r"[/\\]|\.[A-Za-z0-9]{1,6}$")  # a directory or a file name (model.ckpt)


def sniff(path: Path) -> bool:
    """metrics.csv with a step column, a folder holding one, or a folder of version_N/metrics.csv."""
    if path.is_dir():
        # a metrics.csv without a step column is another logger's table (an RL script's episode,
        # reward, loss): the generic reader's
        return sniff(path / METRICS_FILE) or bool(_versions(path))
    if path.name != METRICS_FILE or not path.is_file():
        return False
    try:
        return "step" in pd.read_csv(path, nrows=0).columns
    except (ValueError, pd.errors.EmptyDataError, pd.errors.ParserError):
        return False


def load(path: Path, aliases: Path | None = None) -> RunData:
    """Read one Lightning CSVLogger version, or the versions of one resumed run (see the module
    docstring)."""
    if path.is_dir() and not (path / METRICS_FILE).is_file():
        chains = version_runs(path)
        if len(chains) == 1 and len(chains[0]) > 1:
            return load_versions(chains[0], aliases)
    metrics, notes = _metrics_file(path)
    table = read_table(metrics)
    wide = split_wide(table, aliases)
    notes += table.notes + wide.notes
    if "epoch_time" in table.frame.columns:
        notes.append("epoch_time column (seconds per epoch, a custom metric) is not turned into step times")
    hparams = _read_hparams(metrics.parent / HPARAMS_FILE, notes)
    picked = pick_hparams(hparams, notes)
    epochs_source = "num_epochs in the hparams"
    if "num_epochs" not in picked and "total_steps" not in picked:
        side, epochs_source = _side_config_epochs(metrics.parent, notes, _epochs_logged(table))
        picked.update(side)
    total_steps = positive_int(picked.get("total_steps"))
    if total_steps is None:
        total_steps = _total_from_epochs(table, picked.get("num_epochs"), notes)
    if "warmup_steps" not in picked:
        picked.update(_warmup_from_epochs(hparams, picked.get("num_epochs"), total_steps, table, notes))
    run = wide.run(
        FORMAT,
        path,
        run_name=_run_name(metrics),
        schedule={key: picked.get(key) for key in SCHEDULE_KEYS if picked.get(key) is not None},
        notes=notes,
    )
    run.config = config_from(
        {}, {}, list(wide.train["step"]), list(wide.evals["step"]), total_steps, notes, wide.epochs
    )
    run.config.update(
        {key: picked[key] for key in ("num_epochs", "batch_size", "grad_clip_norm") if key in picked}
    )
    if wide.counted_by_epoch:
        run.config[ROWS_ARE_KEY] = "epoch"
    if hparams:
        run.config["hparams"] = hparams
    norm_name = column_map(list(map(str, table.frame.columns)), load_aliases(aliases)).get("grad_norm")
    if grad_norm_measured_by_name(norm_name):
        run.config["grad_norm_measured"] = grad_norm_measured_by_name(norm_name)
        run.notes.append(f"{norm_name} is Lightning's grad_norm() total, logged before clipping")
    _schedule_notes(run, picked)
    _ended_early_note(run, table, picked.get("num_epochs"), total_steps, epochs_source)
    return run


# ---------------------------------------------------------------- versions of one run


@dataclass(frozen=True)
class _Version:
    """What decides whether a version folder continues the one before it."""

    folder: Path
    first: int  # first and last logged step
    last: int
    interval: int  # the usual distance between logged steps
    hparams: dict[str, Any]


def _version(folder: Path) -> _Version | None:
    """The step range of a version's training rows (the rows with a training loss, as the
    resolver reads the header; None: none read), and its hparams."""
    metrics = folder / METRICS_FILE
    try:
        header = list(pd.read_csv(metrics, nrows=0).columns)
        loss = column_map(header, load_aliases()).get("loss")
        if "step" not in header or loss is None:
            return None
        rows = pd.read_csv(metrics, usecols=["step", loss])
    except (ValueError, pd.errors.EmptyDataError, pd.errors.ParserError):
        return None
    steps = pd.to_numeric(rows["step"], errors="coerce")[rows[loss].notna()]
    logged = sorted({int(s) for s in steps.dropna()})
    if not logged:
        return None
    gaps = pd.Series([b - a for a, b in itertools.pairwise(logged)], dtype="float64")
    interval = int(gaps.median()) if not gaps.empty else 1
    return _Version(folder, logged[0], logged[-1], max(interval, 1), _read_hparams(folder / HPARAMS_FILE, []))


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        return {k: v for key, inner in value.items() for k, v in _flat(inner, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): value}


def recipe_changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The hyperparameters set in both that differ, as (training recipe, environment) key lists.
    A number (or a list holding numbers) or a text that is not a path is the recipe; a path or a
    file name, a true/false switch, and a value null on one side are the environment."""
    recipe: list[str] = []
    environment: list[str] = []
    old, new = _flat(before), _flat(after)
    for key in (k for k in old if k in new and old[k] != new[k]):
        (environment if _environment(old[key], new[key]) else recipe).append(key)
    return recipe, environment


def _environment(old: Any, new: Any) -> bool:
    """Whether a changed value describes where and how the process runs, not what it trains."""
    values = (old, new)
    if any(v is None or isinstance(v, bool) for v in values):
        return True
    if all(isinstance(v, str) for v in values):
        return any(PATH_LIKE.search(v) for v in values)
    items = [*old, *new] if isinstance(old, list) and isinstance(new, list) else []
    return bool(items) and not any(isinstance(v, int | float) and not isinstance(v, bool) for v in items)


def _continues(before: _Version, after: _Version) -> bool:
    """Whether ``after`` is ``before``'s run resumed (module docstring)."""
    started_later = after.first > before.first
    near_end = after.first <= before.last + before.interval + FLUSH_STEPS
    return started_later and near_end and not recipe_changes(before.hparams, after.hparams)[0]


def version_runs(folder: Path) -> list[list[Path]]:
    """The runs in a folder of ``version_N`` folders: consecutive versions that continue each
    other are one run (module docstring); in version order."""
    chains: list[list[Path]] = []
    previous: _Version | None = None
    for path in _versions(folder):
        current = _version(path)
        if chains and previous is not None and current is not None and _continues(previous, current):
            chains[-1].append(path)
        else:
            chains.append([path])
        previous = current
    return chains


def load_versions(folders: list[Path], aliases: Path | None = None) -> RunData:
    """Version folders of one run resumed, read as one run (``canonical.stitch_runs``)."""
    parts = [(folder.name, load(folder, aliases)) for folder in folders]
    for _, earlier in parts[:-1]:  # resumed: only the last version's end says where the run stopped
        ended = earlier.events["event"].astype(str).str.startswith(EPOCHS_UNFINISHED)
        earlier.events = earlier.events[~ended]
    resumes: list[tuple[int, str] | None] = []
    names = ", ".join(name for name, _ in parts)
    notes = [
        f"{names} read as one run resumed {len(parts) - 1} time(s): each version starts inside or "
        "right after the previous one's steps, with the same training hyperparameters"
    ]
    for (_, before), (name, after) in itertools.pairwise(parts):
        first, last = int(after.train["step"].min()), int(before.train["step"].max())
        replayed = f"steps {first}-{last} logged again" if first <= last else "no step logged twice"
        event = f"run resumed: {name} restarted the run at step {first} in a new process ({replayed})"
        resumes.append((first, event))
        old, new = (_flat(part.config.get("hparams", {})) for part in (before, after))
        _, environment = recipe_changes(old, new)
        if environment:
            changes = "; ".join(f"{key} {old[key]!r} -> {new[key]!r}" for key in environment)
            notes.append(f"{name}: hparams that changed at the resume (not the training recipe): {changes}")
    return stitch_runs(
        parts,
        resumes,
        source_format=FORMAT,
        source_path=str(folders[0].parent),
        run_name=f"{folders[0].parent.name}/{folders[0].name}",
        notes=notes,
    )


# ---------------------------------------------------------------- files


def _versions(folder: Path) -> list[Path]:
    found = [
        (int(match.group(1)), p)
        for p in folder.iterdir()
        if (match := VERSION_DIR.match(p.name)) and (p / METRICS_FILE).is_file()
    ]
    return [p for _, p in sorted(found, key=lambda numbered: numbered[0])]


def _metrics_file(path: Path) -> tuple[Path, list[str]]:
    if not path.is_dir():
        return path, []
    if (path / METRICS_FILE).is_file():
        return path / METRICS_FILE, []
    versions = _versions(path)
    if len(versions) == 1:
        return versions[0] / METRICS_FILE, [f"read {versions[0].name}, the only version in {path.name}"]
    if not versions:
        raise RunImportError(f"{path}: expected {METRICS_FILE} or version_N/{METRICS_FILE}; found neither")
    shown = ", ".join(v.name for v in versions[:8]) + (", ..." if len(versions) > 8 else "")
    raise RunImportError(
        f"{path}: holds {len(versions)} Lightning runs ({shown}); expected one run: "
        f"pass one version folder, e.g. {versions[0]}"
    )


def _read_hparams(path: Path, notes: list[str]) -> dict[str, Any]:
    if not path.is_file() and (path.parent / META_TAGS_FILE).is_file():
        return _read_meta_tags(path.parent / META_TAGS_FILE, notes)
    if not path.is_file():
        notes.append(f"no {HPARAMS_FILE} beside {METRICS_FILE}: learning rate, epochs and clipping unknown")
        return {}
    try:
        # TolerantLoader is a SafeLoader: it builds plain data only, never Python objects
        text = path.read_text(encoding="utf-8")
        document = yaml.load(text, Loader=TolerantLoader)
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise RunImportError(f"{path}: not readable as YAML: {error}") from error
    if document is None:
        notes.append(f"{HPARAMS_FILE} is empty")
        return {}
    if isinstance(document, str):
        # 'EMBEDDING_DIM = 32' lines: a script's constants written as Python assignments, which
        # YAML reads as one string
        document = _assignments(text) or document
    if not isinstance(document, dict):
        # the log is still the run: the file is set aside, said in the notes, not fatal
        notes.append(
            f"{HPARAMS_FILE} set aside: expected a mapping of hyperparameters, found a "
            f"{type(document).__name__}; learning rate, epochs and clipping unknown"
        )
        return {}
    return {str(k): _json_safe(v) for k, v in document.items()}


def _assignments(text: str) -> dict[str, Any]:
    """{name: value} of text whose every line is 'NAME = value' (a value read as a Python
    literal, else kept as text); {} when any line is something else."""
    found: dict[str, Any] = {}
    for line in filter(str.strip, text.splitlines()):
        match = re.fullmatch(r"([A-Za-z_]\w*)\s*=\s*(.+?)\s*", line)
        if match is None:
            return {}
        value = python_literal(match.group(2))
        found[match.group(1)] = match.group(2) if value is UNREADABLE else value
    return found


def _epochs_logged(table: Table) -> int:
    """The epochs the CSV reached (its epoch counter counts from 0), 0 without one."""
    if "epoch" not in table.frame.columns:
        return 0
    logged = [e for e in (as_number(v) for v in table.frame["epoch"]) if e is not None and math.isfinite(e)]
    return int(max(logged)) + 1 if logged else 0


def _side_config_epochs(folder: Path, notes: list[str], logged_epochs: int) -> tuple[dict[str, Any], str]:
    """The planned epoch count from the other small config files beside metrics.csv (a project's
    own config.json/default.yaml, at any depth), when hparams.yaml gives none: used only when the
    files name exactly one epoch count (two different ones may be two stages' plans); else from
    the training script beside it (importers.script_settings). With where it was found."""
    found: dict[str, tuple[str, Any]] = {}
    for name, document in side_documents(folder, skip=(HPARAMS_FILE,)):
        for _, key, value in walk_keys(document):
            epochs = pick_hparams({key: value}, []).get("num_epochs")
            if epochs is not None:
                found[f"{name}: {key}"] = (str(epochs), epochs)
    values = {text for text, _ in found.values()}
    if not values:
        # none in a config file: the training script beside it (pl.Trainer(max_epochs=35))
        planned = script_settings.planned_epochs(folder, notes, logged_epochs)
        if planned is None:
            return {}, ""
        where = f"{planned[1]} beside {METRICS_FILE}"
        notes.append(f"num_epochs = {planned[0]}, from {where}")
        return {"num_epochs": planned[0]}, where
    if len(values) != 1:
        notes.append(f"epoch counts beside {METRICS_FILE} disagree ({', '.join(sorted(found))}): none used")
        return {}, ""
    where, (_, epochs) = next(iter(found.items()))
    notes.append(f"num_epochs = {epochs}, from {where} beside {METRICS_FILE} (the only epoch count there)")
    return {"num_epochs": epochs}, f"{where} beside {METRICS_FILE}"


def _read_meta_tags(path: Path, notes: list[str]) -> dict[str, Any]:
    """TestTube's meta_tags.csv (key,value rows, every value as text): the values parsed as YAML
    scalars (0.02 -> 0.02, "[10, 10]" -> a list), an unparsable one kept as text."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise RunImportError(f"{path}: not readable as key,value rows: {error}") from error
    if list(frame.columns[:2]) != ["key", "value"]:
        notes.append(
            f"{META_TAGS_FILE}: expected columns key,value; found {', '.join(frame.columns)}: ignored"
        )
        return {}
    notes.append(f"hyperparameters read from {META_TAGS_FILE} (the TestTube-era logger's hparams)")
    return {str(k): _json_safe(_yaml_scalar(v)) for k, v in zip(frame["key"], frame["value"], strict=True)}


def _yaml_scalar(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _training_sections(
    document: dict[str, Any], path: str = "", depth: int = 0
) -> list[tuple[str, dict[str, Any]]]:
    """The training sections (TRAINING_SECTIONS) of a nested config, at any depth up to
    SECTION_DEPTH, by dotted path: a Hydra or dataclass config saved whole nests them under
    wrappers (`cfg.experiment.trainer.max_epochs`)."""
    sections = []
    for key, values in document.items():
        if not isinstance(values, dict):
            continue
        dotted = f"{path}.{key}" if path else str(key)
        if str(key).lower() in TRAINING_SECTIONS:
            sections.append((dotted, values))
        if depth < SECTION_DEPTH:
            sections.extend(_training_sections(values, dotted, depth + 1))
    return sections


def _with_sections(hparams: dict[str, Any], notes: list[str], source: str) -> dict[str, Any]:
    """`hparams` with the settings of its training sections (TRAINING_SECTIONS: `training:`,
    `trainer:`, `optimizer:` ..., at any depth up to SECTION_DEPTH), for the keys the top level
    lacks: a config that groups its settings (`training: {max_steps: 50, warmup_steps: 500}`) plans
    the run as one that writes them flat. A key two sections give with different values is left
    out (which one the run used is not said)."""
    found: dict[str, dict[str, Any]] = {}
    for section, values in _training_sections(hparams):
        for key, value in values.items():
            if key not in hparams and not isinstance(value, dict | list):
                found.setdefault(key, {})[section] = value
    merged = dict(hparams)
    wanted = {key.lower() for keys in HPARAM_KEYS.values() for key in keys}
    used = []
    for key, by_section in found.items():
        if len({json.dumps(v, default=str) for v in by_section.values()}) != 1:
            continue
        merged[key] = next(iter(by_section.values()))
        if str(key).lower() in wanted:
            used.append(f"{next(iter(by_section))}.{key}")
    if used:
        notes.append(f"{source}: settings read from its sections: {', '.join(sorted(used))}")
    return merged


def pick_hparams(hparams: dict[str, Any], notes: list[str], source: str = HPARAMS_FILE) -> dict[str, Any]:
    """The canonical values `hparams` give (HPARAM_KEYS, first key present wins; a key the top
    level lacks is looked up in its training sections), each reading noted; also used for
    DVCLive's params (`source`: the file named in the notes)."""
    hparams = _with_sections(hparams, notes, source)
    picked: dict[str, Any] = {}
    # a key in any case ('LEARNING_RATE', a script's constants): the exact spelling first
    folded: dict[str, str] = {}
    for name in hparams:
        folded.setdefault(str(name).lower(), name)
    for target, keys in HPARAM_KEYS.items():
        for wanted in keys:
            key = wanted if wanted in hparams else folded.get(wanted.lower(), wanted)
            number = as_number(hparams.get(key))
            if number is not None and target == "grad_clip_norm" and number <= 0:
                notes.append(f"{source}: {key}={hparams[key]}: gradient clipping disabled")
                break
            if number is not None:
                picked[target] = number
                if key != target and target != "peak_lr":  # peak_lr has its own note
                    notes.append(f"{source}: {key}={hparams[key]} read as {target}")
                break
    if "num_epochs" not in picked:
        for key, value in hparams.items():
            words = str(key).lower().split("_")
            number = as_number(value)
            # the singular too ('epoch: 200', 'max_epoch: 50' in OpenSTL's and mmcv-style configs): the
            # hyperparameters are saved once, before training, so they hold settings, never the epoch reached
            count_word = words[-1] in ("epochs", "epoch")
            if (
                count_word
                and set(words[:-1]) <= EPOCH_COUNT_QUALIFIERS
                and number is not None
                and number >= 1
            ):
                picked["num_epochs"] = number
                notes.append(f"{source}: {key}={value} read as num_epochs (a count of epochs, by its words)")
                break
    return picked


# ---------------------------------------------------------------- inferred and unknown values


def _epoch_ends(table: Table) -> list[int]:
    """The last logged step of each epoch, for the epochs before the last one; none when the log
    skips an epoch number (a log written every 50 steps of a 2-step epoch holds epochs 24, 49, 74:
    the last row of an epoch it holds is not where that epoch ended)."""
    if "epoch" not in table.frame.columns or "step" not in table.frame.columns:
        return []
    last: dict[int, int] = {}
    for epoch, step in zip(table.frame["epoch"], table.frame["step"], strict=True):
        try:
            e, s = to_step(epoch), to_step(step)
        except ValueError:
            return []
        if e is not None and s is not None:
            last[e] = max(s, last.get(e, s))
    epochs = sorted(last)
    if any(b - a != 1 for a, b in itertools.pairwise(epochs)):
        return []
    return [last[e] for e in epochs[:-1]]


def _regular_epoch_length(ends: list[int]) -> int | None:
    """The steps of an epoch when every epoch that ended in the log (``ends``: its last steps,
    _epoch_ends) has the same length, counting from step 0; None when none ended or they differ."""
    if not ends:
        return None
    length = ends[0] + 1
    return length if all(b - a == length for a, b in itertools.pairwise(ends)) else None


def _total_from_epochs(table: Table, num_epochs: Any, notes: list[str]) -> int | None:
    epochs = positive_int(num_epochs)
    ends = _epoch_ends(table)
    per_epoch = _regular_epoch_length(ends)
    if epochs is None or len(ends) < 2 or per_epoch is None:
        notes.append("total_steps unknown: no max_steps in hparams and no regular epoch length to compute it")
        return None
    notes.append(
        f"total_steps = num_epochs {epochs} x {per_epoch} steps per epoch = {epochs * per_epoch}: computed "
        f"(hparams have no max_steps; epochs end at steps {ends[0]}, {ends[1]}, ... counting from 0)"
    )
    return epochs * per_epoch


def _warmup_from_epochs(
    hparams: dict[str, Any], num_epochs: Any, total_steps: int | None, table: Table, notes: list[str]
) -> dict[str, Any]:
    """warmup_steps from a warmup counted in epochs (hparams ``warmup_epochs``, as timm, MAE and
    many LightningModules take it): warmup_epochs x the steps of an epoch, known from the
    configured length (total_steps / num_epochs) or a regular epoch length in the log. When the
    warmup is as long as the planned epochs or longer, the run never leaves it whatever an epoch
    holds: with no epoch length known, the log's steps so far in its only epoch are a lower bound
    of one epoch, enough to say so. Otherwise (the epoch length unknown) it stays unknown."""
    warmup_epochs = as_number(hparams.get("warmup_epochs"))
    epochs = as_number(num_epochs)
    if warmup_epochs is None or warmup_epochs <= 0:
        return {}
    ends = _epoch_ends(table)
    if total_steps and epochs:
        per_epoch, basis = total_steps / epochs, f"total_steps {total_steps} / num_epochs {epochs:g}"
    elif (length := _regular_epoch_length(ends)) is not None:
        per_epoch, basis = float(length), f"epochs of {length} steps in the log"
    elif epochs and warmup_epochs >= epochs and not ends and "step" in table.frame.columns:
        steps = [s for s in (to_step(v) for v in table.frame["step"]) if s is not None]
        if not steps:
            return {}
        per_epoch = float(max(steps) + 1)
        basis = f"at least the {max(steps) + 1} steps logged in the first epoch (no epoch ended)"
    else:
        notes.append(
            f"{HPARAMS_FILE}: warmup_epochs={warmup_epochs:g} but the steps of an epoch unknown: "
            "warmup_steps unknown"
        )
        return {}
    warmup = math.ceil(warmup_epochs * per_epoch)
    notes.append(f"{HPARAMS_FILE}: warmup_steps = warmup_epochs {warmup_epochs:g} x {basis} = {warmup}")
    return {"warmup_steps": warmup}


def _schedule_notes(run: RunData, picked: dict[str, Any]) -> None:
    if "peak_lr" in picked:
        run.notes.append(
            f"lr={picked['peak_lr']} taken as peak_lr; the schedule type, min_lr and decay are not stated "
            "(type left empty)"
        )
    if "grad_clip_norm" not in picked:
        run.notes.append("no gradient_clip_val in hparams: grad_clip_norm unknown")


def _ended_early_note(
    run: RunData, table: Table, num_epochs: Any, total_steps: int | None, epochs_source: str
) -> None:
    """Note a log that ends before its planned epochs; with no step count for the plan (no
    max_steps, no regular epoch length: e.g. no epoch ever ended) also log it as an event at the
    last step, which int_run_ends_measured reads as an end of kind epochs_unfinished
    (``epochs_source`` says where the plan was found)."""
    epochs = positive_int(num_epochs)
    logged = _epochs_logged(table)
    if epochs is None or not logged or logged >= epochs:
        return
    run.notes.append(
        f"the log ends in epoch {logged - 1} (counting from 0) of num_epochs {epochs}: "
        "the run stopped early (pruned, early-stopped, or crashed: the CSV does not say which)"
    )
    steps = [*run.train["step"], *run.evals["step"]]
    if total_steps is None and steps:
        add_event(run, epochs_unfinished_event(int(max(steps)), logged, epochs, epochs_source))


def _run_name(metrics: Path) -> str:
    folder = metrics.parent
    if VERSION_DIR.match(folder.name) and folder.parent.name:
        return f"{folder.parent.name}/{folder.name}"
    return folder.name


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
