"""Plain-text training logs: llm.c, nanoGPT and Megatron-LM / Megatron-DeepSpeed output.

What is read
------------
One text file (or a folder holding exactly one such file) that a training script printed or
wrote. The known layouts ("shapes") live in one table, ``SHAPES``: each shape is a list of line
types, each line type one compiled regex whose named groups map to canonical fields through
``GROUPS`` (``step_time_ms`` becomes ``step_time_sec`` divided by 1000, and so on). The line
types, shapes and the pass over the lines are in ``text_log_core``; each log family's shapes and
config reader in its own module: ``text_log_llmc`` (llm.c), ``text_log_nanogpt`` (nanoGPT,
build-nanogpt), ``text_log_megatron`` (Megatron). This module reads the file, picks the shape
and assembles the run.

* ``llmc_main_log``: llm.c ``main.log`` (``-o DIR``): ``s:<step> trl:<loss> lr:<lr> norm:<norm>``,
  ``s:<step> tel:<val loss>``; ``s:<step> eval:<acc>`` is HellaSwag accuracy, which is not a
  validation token accuracy, so it is only summarised in the notes.
* ``llmc_stdout``: llm.c / llm.c ``train_gpt2.py`` / build-nanogpt stdout:
  ``step    1/19560 | train loss 11.01 | norm 15.4 | lr 8.57e-07 | 1234.56 ms | ...`` (fields in
  any order, ``loss X (+0.1z)`` accepted), ``val loss X``, ``HellaSwag: a/b = acc``, and the
  ``| Parameter | Value |`` table llm.c prints at start (the run config).
* ``nanogpt_stdout``: nanoGPT ``iter 100: loss 4.2345, time 35.21ms, mfu 12.3%`` and
  ``step 100: train loss 4.1, val loss 4.2``; ``Overriding: key = value`` lines give config.
* ``build_nanogpt_log``: build-nanogpt ``log.txt``: ``<step> train <loss>``, ``<step> val <loss>``.
* ``megatron``: Megatron-LM / Megatron-DeepSpeed stdout: ``iteration N/ M | ... |`` lines,
  ``validation loss at iteration N | lm loss value: ...`` lines and the ``arguments`` dump
  (``  lr ........ 0.0003``), which gives the config (see ``megatron_config``).

The shape is chosen by counting, in the first ``SNIFF_LINES`` lines, the lines each shape
recognises; the shape with most matches wins (if none matches there, ``load`` counts over the
whole file before giving up). CRLF endings, ANSI colour escapes and tqdm carriage-return
redraws are removed first; a file with NUL bytes or mostly undecodable bytes is refused before
any regex runs.

Rows are kept as logged: no sorting, no de-duplication. Multi-rank output: in the two real
Megatron-DeepSpeed logs every ``iteration`` and ``validation loss`` line appears once (Megatron
prints them from one rank), while launcher lines, NCCL lines and the KeyboardInterrupt
tracebacks repeat once per rank; events are therefore written once per (step, text).

Events come from what the log prints: checkpoint saves/loads, KeyboardInterrupt, launcher
SIGTERM, Python exceptions, CUDA OOM, NCCL watchdog timeouts, non-zero Megatron skipped/NaN
iteration counts, and drops of the fp16 loss scale. An event with no step of its own gets the
step of the last logged train or validation line (0 before the first one).

What cannot be known
--------------------
* Megatron iteration lines are averages over ``log_interval`` iterations; single-step spikes
  inside an interval are invisible. The config says so (``step_time_is_interval_mean: true``):
  the slow-step check then judges each logged row by the time lost over its whole window.
* llm.c ``main.log`` carries no config at all; the llm.c stdout table does not state the
  gradient clip (hard-coded in the trainer); nanoGPT prints only the settings that were
  overridden, not its defaults. Every unknown config value stays None with a note.
* Shard ids are never printed by these tools: ``shard_id`` stays empty.
* Logged NaN/inf values are kept as the text ``nan``/``inf`` so they reach the CSV
  (``write_run`` would write a float NaN as an empty cell).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from run_diagnosis.importers import RunImportError
from run_diagnosis.importers.aliases import files_to_read, metric_column, sniff_path
from run_diagnosis.importers.canonical import EVAL_COLUMNS, EVENT_COLUMNS, TRAIN_COLUMNS, RunData, stitch_runs
from run_diagnosis.importers.text_log_core import LogParser, ParsedLog, Shape
from run_diagnosis.importers.text_log_llmc import LLMC_MAIN_LOG, LLMC_STDOUT
from run_diagnosis.importers.text_log_megatron import MEGATRON
from run_diagnosis.importers.text_log_nanogpt import BUILD_NANOGPT_LOG, NANOGPT_STDOUT

FORMAT = "text_log"
DESCRIPTION = (
    "plain-text training log: llm.c main.log or stdout, nanoGPT stdout, "
    "Megatron-LM / Megatron-DeepSpeed stdout"
)

SNIFF_LINES = 2000
SNIFF_BYTES = 4 * 1024 * 1024
BINARY_PROBE_BYTES = 64 * 1024
TEXT_SUFFIXES = {".log", ".txt", ".out", ".err", ".stdout"}
GENERIC_STEMS = {"main", "log", "logs", "train", "training", "stdout", "output", "out", "nohup", "run"}


CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))  # not tab/newlines/ESC
ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


# the known shapes, by log family (one module each); ties in detection go to the first
SHAPES = (LLMC_MAIN_LOG, LLMC_STDOUT, NANOGPT_STDOUT, BUILD_NANOGPT_LOG, MEGATRON)


def _frame(columns: Mapping[str, list[Any]], order: list[str]) -> pd.DataFrame:
    data: dict[str, pd.Series] = {}
    for name in order:
        values = columns[name]
        if name == "step":
            data[name] = pd.Series(values, dtype="int64")
        elif name == "shard_id":
            data[name] = pd.Series([None] * len(values), dtype=object)
        else:
            data[name] = metric_column(values)
    return pd.DataFrame(data, columns=order)


# --------------------------------------------------------------------------- reading text


def _binary_reason(sample: bytes) -> str | None:
    """Why sample is not text (NUL bytes, control bytes, undecodable bytes), or None."""
    if not sample:
        return None
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None  # UTF-16 with BOM (PowerShell redirection): decoded as text
    nul = sample.find(b"\x00")
    if nul >= 0:
        return f"NUL byte at offset {nul}"
    control = len(sample) - len(sample.translate(None, CONTROL_BYTES))
    if control > len(sample) * 0.01:
        return f"{control} control bytes in the first {len(sample)} bytes"
    decoded = sample.decode("utf-8", errors="replace")
    bad = decoded.count("\ufffd")
    if bad > max(8, len(decoded) * 0.05):
        return f"{bad} bytes that are not UTF-8 text in the first {len(sample)} bytes"
    return None


def _decode(raw: bytes) -> str:
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8", errors="replace")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", errors="replace")
    return raw.decode("utf-8", errors="replace")


def _split_lines(text: str) -> tuple[list[tuple[int, str]], bool]:
    """(line number, text) pairs; tqdm '\\r' redraws become separate lines with the same number.

    The bool says whether the text ended with a newline (False: the last line may be cut off).
    """
    if "\x1b" in text:
        text = ANSI_ESCAPE.sub("", text)
    ends_with_newline = text.endswith("\n")
    physical = text.split("\n")
    if ends_with_newline:
        physical.pop()
    lines: list[tuple[int, str]] = []
    for number, line in enumerate(physical, start=1):
        if "\r" in line:
            lines.extend((number, part) for part in line.split("\r") if part.strip())
        elif line.strip():
            lines.append((number, line))
    return lines, ends_with_newline


def _read_lines(path: Path, limit: int | None = None) -> tuple[list[tuple[int, str]], bool]:
    """Decoded, cleaned lines of path (the first ``limit`` bytes when given)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read() if limit is None else handle.read(limit)
    except OSError as error:
        raise RunImportError(f"{path}: cannot be read ({error.strerror or error})") from error
    reason = _binary_reason(raw[:BINARY_PROBE_BYTES])
    if reason is not None:
        raise RunImportError(
            f"{path}: binary data, not a text log ({reason}). Expected a plain-text training log "
            f"({DESCRIPTION})."
        )
    return _split_lines(_decode(raw))


# --------------------------------------------------------------------------- shape detection


def _scores(lines: Iterable[tuple[int, str]]) -> dict[str, int]:
    scores = {shape.name: 0 for shape in SHAPES}
    evidence = [(shape.name, shape.evidence) for shape in SHAPES]
    for _, line in lines:
        for name, types in evidence:
            if any(lt.match(line) for lt in types):
                scores[name] += 1
    return scores


def _best_shape(lines: list[tuple[int, str]]) -> Shape | None:
    head = [item for item in lines if item[0] <= SNIFF_LINES]
    scores = _scores(head)
    best = max(SHAPES, key=lambda shape: scores[shape.name])  # ties: first in SHAPES
    return best if scores[best.name] > 0 else None


def _no_shape_error(path: Path, lines: list[tuple[int, str]]) -> RunImportError:
    tried = "; ".join(f"{shape.name} ({shape.example})" for shape in SHAPES)
    shown = " | ".join(f"line {n}: {text.strip()[:120]!r}" for n, text in lines[:5])
    return RunImportError(
        f"{path}: no known training-log shape matched (counted the first {SNIFF_LINES} lines, then the "
        f"whole file). Shapes tried: {tried}. First non-empty lines found: {shown}"
    )


# --------------------------------------------------------------------------- assembling the run


def _candidates(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)


def _sniff_file(path: Path) -> bool:
    try:
        lines, _ = _read_lines(path, SNIFF_BYTES)
    except RunImportError:
        return False
    return _best_shape(lines) is not None


def sniff(path: Path) -> bool:
    """True for a text file (or a folder with such a file) in which a shape of SHAPES matches."""
    return sniff_path(path, _candidates, _sniff_file)


def _resolve(path: Path) -> Path:
    matching = files_to_read(path, _candidates, _sniff_file)
    if len(matching) == 1:
        return matching[0]
    if not matching:
        looked = ", ".join(p.name for p in _candidates(path)) or "no .log/.txt/.out/.err/.stdout files"
        raise RunImportError(
            f"{path}: no text training log in this folder (looked at: {looked}); expected {DESCRIPTION}"
        )
    raise _SeveralLogs(matching)


# a log whose losses match a richer log's on this share of common steps is its summary
LOSS_AGREEMENT = 0.9


class _SeveralLogs(Exception):
    """A folder with several text logs: ``load`` reads them as one run when they fit together."""

    def __init__(self, files: list[Path]) -> None:
        super().__init__(", ".join(p.name for p in files))
        self.files = files


def _span(run: RunData) -> tuple[int, int]:
    steps = [int(s) for s in run.train["step"]] + [int(s) for s in run.evals["step"]]
    return min(steps), max(steps)


def _size(run: RunData) -> tuple[int, int]:
    return len(run.train), int(run.train.notna().sum().sum())


def _covers(outer: RunData, inner: RunData) -> bool:
    """``outer`` holds what ``inner`` logs: its steps, more fields, the same losses (a summary log)."""
    (outer_first, outer_last), (inner_first, inner_last) = _span(outer), _span(inner)
    if not (outer_first <= inner_first and inner_last <= outer_last and _size(outer) > _size(inner)):
        return False
    both = pd.merge(outer.train[["step", "loss"]], inner.train[["step", "loss"]], on="step").dropna()
    outer_loss, inner_loss = both["loss_x"].astype(float), both["loss_y"].astype(float)
    agree = (outer_loss - inner_loss).abs() <= 1e-4 * outer_loss.abs().clip(lower=1.0)
    return not both.empty and bool(agree.mean() >= LOSS_AGREEMENT)


def _load_folder(folder: Path, files: list[Path]) -> RunData:
    """Several text logs of one run: a summary log (``log.txt``) whose steps another, richer log
    covers is left out; the rest must follow each other (a run split by a resume, one file per
    leg, of the same shape: each starts where the previous ended and goes further) and are read as
    one run, with a "resuming" event at each join. Other logs are separate runs: an error asking
    for one file."""
    runs = [(file, load(file)) for file in files]
    kept = [(f, r) for f, r in runs if not any(other is not r and _covers(other, r) for _, other in runs)]
    dropped = [f.name for f, _ in runs if all(f != k for k, _ in kept)]
    kept.sort(key=lambda item: _span(item[1]))
    for (previous, before), (file, after) in itertools.pairwise(kept):
        first, last = _span(before)
        tolerance = max(1, (last - first) // 100)
        same_shape = before.notes[:1] == after.notes[:1]  # "read as text-log shape ..."
        if not same_shape or _span(after)[0] < last - tolerance or _span(after)[1] <= last:
            raise RunImportError(
                f"{folder}: {len(files)} text training logs in this folder "
                f"({', '.join(f.name for f in files)}); pass one file: {previous.name} "
                f"(steps {first}-{last}) and {file.name} (steps {_span(after)[0]}-{_span(after)[1]}) "
                "do not continue each other, "
                "so they look like separate runs"
            )
    notes = [
        f"{len(files)} text logs in {folder.name}: " + ", ".join(f.name for f, _ in kept) + " read as one run"
    ]
    if dropped:
        notes.append(f"left out (their steps are covered by a richer log): {', '.join(dropped)}")
    first_run = kept[0][1]
    if len(kept) == 1:
        first_run.notes = notes + first_run.notes
        return first_run
    resumes: list[tuple[int, str] | None] = []
    for (_, before), (file, after) in itertools.pairwise(kept):
        join = _span(before)[1]
        resume = f"resuming from step {join}: log file {file.name} continues the run (a new process)"
        said = after.events["event"].str.contains("resum", case=False).any()
        resumes.append(None if said else (join, resume))
    return stitch_runs(
        [(Path(r.source_path).name, r) for _, r in kept],
        resumes,
        source_format=FORMAT,
        source_path=str(folder),
        run_name=folder.name,
        notes=notes,
    )


def _side_metric_notes(parsed: ParsedLog) -> list[str]:
    notes = []
    for name, points in parsed.side_metrics.items():
        step, value = points[-1]
        label = "HellaSwag accuracy" if name == "hellaswag" else name
        notes.append(
            f"{label} logged at {len(points)} points (last {value:g} at step {step}); it is not a validation "
            "token accuracy, so eval_log.val_accuracy stays empty"
        )
    return notes


def _summary_notes(parsed: ParsedLog, train: pd.DataFrame) -> list[str]:
    notes = []
    for column in ("loss", "grad_norm", "learning_rate", "step_time_sec"):
        if len(train) and train[column].isna().all():
            notes.append(
                f"no {column} in the {parsed.shape.name} training lines: train_log.{column} is empty"
            )
        elif len(train) and train[column].isna().any():
            notes.append(f"{int(train[column].isna().sum())} training lines carry no {column}")
    repeats = int(train["step"].duplicated().sum()) if len(train) else 0
    if repeats:
        notes.append(
            f"{repeats} training lines repeat an earlier step (a restart, or several ranks printing); "
            "kept as logged"
        )
    if parsed.loss_scales and not any(
        b < a for a, b in zip(parsed.loss_scales, parsed.loss_scales[1:], strict=False)
    ):
        first, last = parsed.loss_scales[0], parsed.loss_scales[-1]
        notes.append(f"fp16 loss scale never dropped ({first:g} at the first line, {last:g} at the last)")
    if len(set(parsed.batch_sizes)) > 1:
        notes.append(
            f"global batch size changes during the run "
            f"({min(parsed.batch_sizes)} to {max(parsed.batch_sizes)})"
        )
    return notes


def load(path: Path) -> RunData:
    """Parse a text training log into a RunData (see the module docstring for what is read)."""
    try:
        file = _resolve(path)
    except _SeveralLogs as several:
        return _load_folder(path, several.files)
    if file.stat().st_size == 0:
        raise RunImportError(f"{file}: the file is empty (0 bytes); expected a training log ({DESCRIPTION})")
    lines, ends_with_newline = _read_lines(file)
    if not lines:
        raise RunImportError(
            f"{file}: the file holds only blank lines; expected a training log ({DESCRIPTION})"
        )
    shape = _best_shape(lines)
    if shape is None:
        scores = _scores(lines)
        best = max(SHAPES, key=lambda s: scores[s.name])
        if scores[best.name] == 0:
            raise _no_shape_error(file, lines)
        shape = best
    parser = LogParser(shape)
    notes: list[str] = [f"read as text-log shape {shape.name!r} ({shape.description})"]
    *body, (last_number, last_line) = lines
    for number, line in body:
        parser.feed(number, line)
    hit = parser.first_match(last_line)
    if not ends_with_newline and hit is not None and hit[0].kind in ("train", "eval"):
        notes.append(
            f"line {last_number} (the last) has no line ending, so it may be cut off mid-write; "
            f"it was left out: {last_line.strip()[:160]!r}"
        )
    else:
        parser.feed(last_number, last_line)
        if not ends_with_newline:
            notes.append(
                f"the file does not end with a newline (last line {last_number}); it may have been cut off"
            )
    parsed = parser.parsed
    train = _frame(parsed.train, TRAIN_COLUMNS)
    evals = _frame(parsed.evals, EVAL_COLUMNS)
    if train.empty and evals.empty:
        shown = " | ".join(f"line {n}: {t.strip()[:100]!r}" for n, t in lines[-3:])
        raise RunImportError(
            f"{file}: recognised as {shape.name} ({shape.description}) but it holds no training or "
            f"validation lines (expected lines like {shape.example!r}); the log ends with: {shown}"
        )
    events = pd.DataFrame(parsed.events, columns=EVENT_COLUMNS).astype({"step": "int64"})
    cfg = shape.config(parsed)
    notes += list(shape.notes) + parsed.notes + _side_metric_notes(parsed) + _summary_notes(parsed, train)
    notes += cfg.notes
    notes.append(
        f"{len(train)} training lines, {len(evals)} validation lines, {len(events)} events from {len(lines)} "
        "non-empty lines; other lines ignored"
    )
    return RunData(
        source_format=FORMAT,
        source_path=str(file),
        train=train,
        evals=evals,
        events=events,
        run_name=file.parent.name if file.stem.lower() in GENERIC_STEMS else file.stem,
        schedule=cfg.schedule,
        config=cfg.config,
        notes=notes,
        interval_mean_times=shape.interval_mean_times,
    )
