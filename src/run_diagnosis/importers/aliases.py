"""What the tabular importers share (Lightning CSV, W&B history, LLaMA-Factory, TensorBoard tags).

1. ``column_map``: which source column feeds which canonical field. The meaning of every name
   comes from the metric-name resolver (``importers.metric_names``: ``val_loss``,
   ``valid/loss``, ``lr-AdamW/pg1``, ``train_loss_step`` ... are read from their words), so no
   importer keeps a table of whole names. Names it cannot place come back as one grouped
   "not understood: ..." note, ambiguities (two equally plausible loss columns) as one note each.

   The user's alias file still wins: a YAML or JSON file passed as the ``aliases`` argument of an
   importer's ``load`` or named by the environment variable ``RUN_DIAGNOSIS_ALIASES``::

       loss: [my_train_loss]          # the first of these names present in a file is the loss
       grad_norm: [optim/total_norm]
       lr: lr-*                       # keys may be any name the resolver places (lr, norm,
                                      # train_loss, val_acc); names may be shell-style globs

   A key it cannot place or a non-string name is an error naming the file and the key.

2. Cell parsing: ``to_float`` / ``to_step`` turn a cell (CSV text or a JSON value) into a
   number, keeping ``nan``/``inf`` (a NaN loss is a finding, not a missing value);
   ``python_literal`` reads a printed Python value (a dict, a list, True/None) quietly; and
   ``metric_column`` builds a column that keeps them visible after ``write_run`` (which
   writes a float NaN as an empty cell, the same as "not logged").

3. ``read_jsonl``: one JSON object per line, with errors that name the line;
   ``without_repeated_records`` reads a line repeated exactly (the same log written by two
   processes at once) once.

4. ``step_times_from_elapsed``: the canonical ``step_time_sec`` derived from an elapsed-time
   counter (W&B ``_runtime``, LLaMA-Factory ``elapsed_time``), i.e. the average seconds per
   step over each logging interval.

5. ``evaluation_sets``: the canonical eval frame when the resolver found several evaluation
   sets feeding the validation loss (``Assignment.sets``: ``eval_<set>_loss`` of an HF Trainer
   given a dict of eval datasets, Lightning's ``val_loss/dataloader_idx_<i>``). The policy, the
   same for every importer: when every set is logged at the same steps, the validation series
   is their mean at each step (one number per evaluation, as if the sets were one set, each
   set weighted equally); otherwise it is the first set (lowest number, else first logged) and
   the others are named in the notes, not diagnosed.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import math
import os
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any, TextIO

import pandas as pd
import yaml

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.metric_names import FIELDS, Assignment, Meaning, assign, field_of

ENV_VAR = "RUN_DIAGNOSIS_ALIASES"


def load_aliases(path: Path | None = None) -> dict[str, list[str]]:
    """The user's alias table (canonical field -> names, first present wins), read from ``path``
    or else from ``$RUN_DIAGNOSIS_ALIASES``; empty when neither is given."""
    if path is None and os.environ.get(ENV_VAR):
        path = Path(os.environ[ENV_VAR])
    if path is None:
        return {}
    return _read_user_table(path)


def _read_user_table(path: Path) -> dict[str, list[str]]:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise RunImportError(f"{path}: cannot read the alias file ({error.strerror})") from error
    except yaml.YAMLError as error:
        raise RunImportError(f"{path}: not valid YAML/JSON: {error}") from error
    if not isinstance(document, dict):
        found = type(document).__name__
        raise RunImportError(f"{path}: expected a mapping canonical_field -> [source names]; found a {found}")
    table: dict[str, list[str]] = {}
    for key, names in document.items():
        try:
            name = field_of(str(key))
        except ValueError:
            known = ", ".join(FIELDS)
            raise RunImportError(
                f"{path}: key {key!r} is not a canonical field; expected one of: {known}"
            ) from None
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise RunImportError(f"{path}: key {key!r}: expected a list of column names; found {names!r}")
        table[name] = names
    return table


@dataclass
class ColumnMap:
    """Which source column feeds which canonical field (see ``column_map``), with its notes."""

    columns: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    assignment: Assignment = field(default_factory=Assignment)

    def get(self, name: str) -> str | None:
        return self.columns.get(name)

    def meaning(self, name: str) -> Meaning | None:
        """The resolver's reading of a source name (None for a name it was not given)."""
        return self.assignment.meanings.get(name)

    def used(self) -> str:
        """'loss <- train/loss, val_loss <- valid_loss', for the notes."""
        return ", ".join(f"{name} <- {column!r}" for name, column in self.columns.items())

    def feeds_a_field(self, name: str) -> bool:
        """Whether the source name feeds a canonical field (chosen, or one of its evaluation sets)."""
        return name in self.columns.values() or any(name in sets for sets in self.assignment.sets.values())


def column_map(names: Iterable[Any], aliases: dict[str, list[str]] | None = None) -> ColumnMap:
    """Assign ``names`` (the numeric columns or tags of one source) to canonical fields through the
    metric-name resolver; ``aliases`` (``load_aliases``: field -> names, first present wins,
    globs allowed) override it."""
    present = [str(n) for n in names]
    overrides: dict[str, str] = {}
    notes: list[str] = []
    for name, accepted in (aliases or {}).items():
        for alias in accepted:
            matches = sorted(fnmatch.filter(present, alias), key=lambda c: (len(c), c))
            if matches:
                overrides[name] = matches[0]
                if len(matches) > 1:
                    notes.append(f"{name}: alias {alias!r} matches {', '.join(matches)}; used {matches[0]!r}")
                break
    assignment = assign(present, overrides)
    return ColumnMap(dict(assignment.columns), notes + assignment.notes(), assignment)


# what python_literal returns for text that is no Python literal
UNREADABLE: Any = object()


def python_literal(text: str) -> Any:
    """The value of a printed Python literal (numbers, strings, True/None, lists, dicts), else
    UNREADABLE. Quiet: an invalid escape in a logged string is no warning for the user to read."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return UNREADABLE


# a comma between digits: thousands separators (OLMo prints ``8,388,608``: groups of three, the first
# not 0), else a decimal comma (``0,4216``, ``12,5``: a European locale's export), never both
THOUSANDS = re.compile(r"[+-]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d*)?(?:[eE][+-]?\d+)?")
DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+(?:[eE][+-]?\d+)?")


def is_decimal_comma(text: str) -> bool:
    """A cell whose comma can only be a decimal comma (``0,4216``, ``12,5``; not ``1,218``)."""
    text = text.strip()
    return bool(DECIMAL_COMMA.fullmatch(text)) and not THOUSANDS.fullmatch(text)


def writes_decimal_commas(cells: Iterable[Any]) -> bool:
    """Whether a file's cells write decimal commas: one of them can only be one (then its ``1,218``
    is 1.218 too, every comma a decimal point)."""
    return any(isinstance(cell, str) and "," in cell and is_decimal_comma(cell) for cell in cells)


def to_float(value: Any) -> float | None:
    """A cell as a float: None for an empty cell, nan/inf kept; ValueError for text or objects."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, float) and math.isnan(value):
        return value
    try:
        return float(value)  # also reads "nan", "inf", "1e-5"
    except ValueError:
        raise ValueError(f"not a number: {value!r}") from None


def to_step(value: Any) -> int | None:
    """A cell as an integer step: None when empty; ValueError when not a whole number."""
    number = to_float(value)
    if number is None:
        return None
    if not math.isfinite(number) or number != int(number):
        raise ValueError(f"not a whole step number: {value!r}")
    return int(number)


def metric_column(values: Sequence[float | None]) -> pd.Series:
    """A canonical metric column that survives write_run: NaN/inf stay visible as text.

    With only finite values (or gaps) the column is float (written with write_run's format);
    if any value is NaN or infinite, every value becomes text, formatted like write_run
    formats floats (``%.10g``), with ``nan``/``inf``/``-inf`` spelled out and gaps empty.
    """
    if all(v is None or math.isfinite(v) for v in values):
        return pd.Series([math.nan if v is None else v for v in values], dtype="float64")
    return pd.Series([None if v is None else _text(v) for v in values], dtype="object")


def metric_frame(steps: list[int], rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """A canonical frame of `columns`: `step` from `steps` (int64), each other column from the row
    dicts (a metric_column; a key a row lacks is a gap), `shard_id` all null (no shards logged)."""
    data: dict[str, pd.Series] = {"step": pd.Series(steps, dtype="int64")}
    for column in columns[1:]:
        if column == "shard_id":
            data[column] = pd.Series([None] * len(rows), dtype=object)
        else:
            data[column] = metric_column([row.get(column) for row in rows])
    return pd.DataFrame(data, columns=columns)


def _text(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.10g}"


# an elapsed clock that did not move between this share of the rows whose step advanced is coarser
# than the logging interval (a real clock in seconds moves between any two logged steps); among at
# least this many rows
COARSE_CLOCK_STILL_SHARE = 0.2
COARSE_CLOCK_MIN_ROWS = 5


def step_times_from_elapsed(
    steps: Sequence[int],
    elapsed: Sequence[float | None],
    notes: list[str] | None = None,
    name: str = "the clock",
) -> tuple[list[float | None], list[int]]:
    """Seconds per step for each logged row, from an elapsed-time counter.

    ``steps``/``elapsed`` are every logged row in file order (train and eval rows alike,
    so that evaluation time recorded by an eval row is not charged to the next train row).
    A row's value is (elapsed - previous elapsed) / (step - previous step): the *average*
    over the logging interval, including any checkpoint save in that interval. The first
    row, rows without a counter and rows whose step does not advance get None. Returns the
    values and the steps at which the counter went backwards (a new process: a resume).
    A clock printed coarser than the logging interval (it stands still between at least
    COARSE_CLOCK_STILL_SHARE of the rows whose step advanced: ``elapsed_hours`` to one decimal,
    six minutes, over rows a minute apart) measures no step: its differences are 0 or one
    quantum, so every value is None and ``notes`` (when given) says why.
    """
    times: list[float | None] = []
    resets: list[int] = []
    previous: tuple[int, float] | None = None
    for step, seconds in zip(steps, elapsed, strict=True):
        value = None
        if seconds is not None and math.isfinite(seconds):
            if previous is not None and seconds < previous[1]:
                resets.append(step)
            elif previous is not None and step > previous[0]:
                value = (seconds - previous[1]) / (step - previous[0])
            previous = (step, seconds)
        times.append(value)
    measured = [t for t in times if t is not None]
    still = sum(1 for t in measured if t == 0)
    if len(measured) >= COARSE_CLOCK_MIN_ROWS and still >= COARSE_CLOCK_STILL_SHARE * len(measured):
        if notes is not None:
            notes.append(
                f"{name} stood still between {still} of {len(measured)} logged rows whose step advanced: "
                "it is printed coarser than the logging interval, so its differences (0 or one quantum) "
                "measure no step: step_time_sec is left empty"
            )
        return [None] * len(times), resets
    return times, resets


def clock_reset_events(resets: Sequence[int], name: str) -> list[tuple[int, str]]:
    """The resume events of an elapsed-time clock that went backwards (step_times_from_elapsed's
    resets): a clock counted from the process's start begins again in a new process."""
    return [(step, f"run resumed: {name} went backwards (a new process)") for step in resets]


EVAL_SET_FIELDS = ("val_loss", "val_accuracy")


def evaluation_sets(
    columns: ColumnMap, read: Callable[[str, str], Iterable[tuple[int, float | None]]]
) -> tuple[pd.DataFrame, list[str]] | None:
    """The canonical eval frame and its notes when several evaluation sets feed ``val_loss`` or
    ``val_accuracy`` (None otherwise): see the module docstring (5) for the policy.
    ``read(field, name)`` gives the (step, value) pairs logged under ``name``, in the field's
    canonical unit; at a step logged twice (an evaluation re-run after a resume) the later value
    counts."""
    if not any(columns.assignment.sets.get(fieldname) for fieldname in EVAL_SET_FIELDS):
        return None
    notes: list[str] = []
    series: dict[str, dict[int, float]] = {}
    for fieldname in EVAL_SET_FIELDS:
        single = columns.get(fieldname)
        names = columns.assignment.sets.get(fieldname) or ([single] if single is not None else [])
        logged = {name: dict(read(fieldname, name)) for name in names}
        series[fieldname], note = _one_series(fieldname, logged)
        notes += [note] if note else []
    steps = sorted(series["val_loss"])
    rows = [{fieldname: series[fieldname].get(step) for fieldname in EVAL_SET_FIELDS} for step in steps]
    return metric_frame(steps, rows, ["step", *EVAL_SET_FIELDS]), notes


def _one_series(
    fieldname: str, logged_with_gaps: dict[str, dict[int, float | None]]
) -> tuple[dict[int, float], str]:
    """One series from the sets' series (name -> step -> value), and the note saying how."""
    logged = {
        name: {s: v for s, v in values.items() if v is not None} for name, values in logged_with_gaps.items()
    }
    if len(logged) < 2:
        return next(iter(logged.values()), {}), ""
    names = list(logged)
    listed = ", ".join(repr(n) for n in names)
    steps = [set(values) for values in logged.values()]
    if steps[0] and all(s == steps[0] for s in steps):
        mean = {step: fmean(values[step] for values in logged.values()) for step in sorted(steps[0])}
        return mean, (
            f"{fieldname} = the mean of {len(names)} evaluation sets logged at the same {len(mean)} steps "
            f"({listed}), each set weighted equally: a problem confined to one set is diluted"
        )
    return logged[names[0]], (
        f"{fieldname} <- {names[0]!r}, the first of {len(names)} evaluation sets ({listed}): they are "
        "not logged at the same steps, so they are not averaged; the other sets are not diagnosed"
    )


def sniff_file(path: Path, name: str, suffix: str, looks_right: Callable[[TextIO], bool]) -> bool:
    """Whether a file is in a format: its usual `name` says yes, else `looks_right` on the open
    file (read leniently as UTF-8) when it has the format's `suffix` or, whatever its name, opens
    as a JSON document (a trainer_state.json saved under another name is still one); unreadable
    or unparseable: no."""
    if path.name == name:
        return True
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            if path.suffix != suffix and not handle.read(64).lstrip().startswith("{"):
                return False
            handle.seek(0)
            return looks_right(handle)
    except (OSError, ValueError):  # ValueError: a JSON error
        return False


def sniff_path(
    path: Path, candidates: Callable[[Path], list[Path]], sniff_one: Callable[[Path], bool]
) -> bool:
    """A file `sniff_one` accepts, or a folder with such a file among its `candidates`."""
    try:
        if path.is_dir():
            return any(sniff_one(p) for p in candidates(path))
        return path.is_file() and sniff_one(path)
    except OSError:
        return False


def own_files(path: Path) -> list[Path]:
    """[path] for a file; a folder's files in name order; [] for a path that is neither."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else []


def files_to_read(
    path: Path, candidates: Callable[[Path], list[Path]], sniff_one: Callable[[Path], bool]
) -> list[Path]:
    """[path] for a file; for a folder, its `candidates` that `sniff_one` accepts (the caller says
    what none or several mean); RunImportError when the path does not exist."""
    if not path.exists():
        raise RunImportError(f"{path}: no such file or folder")
    if not path.is_dir():
        return [path]
    return [p for p in candidates(path) if sniff_one(p)]


def read_text(path: Path, expected: str) -> str:
    """The file as UTF-8 text; RunImportError naming the file when it cannot be read or decoded
    (`expected`: what the file should hold, for the message)."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise RunImportError(f"{path}: cannot read ({error.strerror})") from error
    except UnicodeDecodeError as error:
        raise RunImportError(f"{path}: not UTF-8 text (byte {error.start}): expected {expected}") from error


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; RunImportError naming the bad line."""
    text = read_text(path, "JSON lines")
    records: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise RunImportError(
                f"{path}, line {number}: not valid JSON ({error.msg} at column {error.colno}): "
                f"expected one JSON object per line; found {line.strip()[:80]!r}"
            ) from error
        if not isinstance(record, dict):
            raise RunImportError(
                f"{path}, line {number}: expected a JSON object of logged values; found {line.strip()[:80]!r}"
            )
        records.append((number, record))
    if not records:
        raise RunImportError(f"{path}: the file is empty: expected one JSON object per logged step")
    return records


def without_repeated_records(
    records: Sequence[tuple[int, dict[str, Any]]],
) -> tuple[list[tuple[int, dict[str, Any]]], list[int]]:
    """The records with each exact repeat of an earlier one left out, and the repeats' line numbers.

    A line equal to an earlier one in every key and value, its clock included, is the same log
    line written again: two processes appending to one log (every rank of a job whose logging
    callback is not limited to rank 0) write every line twice, interleaved. Read twice, each
    copy would be a row of its own, and a copy whose derived interval starts at its twin (zero
    steps, zero seconds) looks like a new attempt at that step. A resumed run logs a step again
    with its own clock and values, so it is never an exact repeat.
    """
    seen: set[str] = set()
    kept: list[tuple[int, dict[str, Any]]] = []
    repeats: list[int] = []
    for number, record in records:
        key = json.dumps(record, sort_keys=True, default=str)
        if key in seen:
            repeats.append(number)
            continue
        seen.add(key)
        kept.append((number, record))
    return kept, repeats
