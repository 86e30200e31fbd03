"""Importers: turn the logs a training tool writes into the canonical five files.

Each importer module exposes:
- ``FORMAT``: a short name shown to users (``--format`` value);
- ``DESCRIPTION``: one line for ``diagnose.py --help``;
- ``sniff(path: Path) -> bool``: cheap check that ``path`` (a file or a folder) is in this format;
- ``load(path: Path) -> RunData``: parse it; raise ``RunImportError`` with a clear message on bad input;
- optionally ``explain(path: Path) -> str | None``: why a file no importer takes cannot be read
  (what was found and how to map it), used for the error instead of the list of formats.

The registry below is the one list of importers; order is the sniffing order
(most specific first). The other modules here are shared by importers, not importers:
``canonical`` (RunData and its writer), ``aliases`` and ``units`` (metric names and units),
``training_args`` (training arguments -> schedule and config), ``wide_table`` (a wide
metrics table -> canonical frames), ``text_log_core`` and the ``text_log_<family>`` modules
(the shapes ``text_logs`` reads).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from run_diagnosis.importers.canonical import RunData


class RunImportError(Exception):
    """The input cannot be read as a training run; the message says what was expected and found."""


IMPORTER_MODULES = [
    "run_diagnosis.importers.canonical_files",
    "run_diagnosis.importers.tensorboard_events",
    "run_diagnosis.importers.hf_trainer",
    "run_diagnosis.importers.llamafactory_log",
    "run_diagnosis.importers.megatron_golden",
    "run_diagnosis.importers.lightning_csv",
    "run_diagnosis.importers.wandb_history",
    "run_diagnosis.importers.wandb_run",
    "run_diagnosis.importers.text_logs",
    # last: it infers the layout of any line-oriented log, so it only reads what the others decline
    "run_diagnosis.importers.generic_log",
]


def importers() -> list[ModuleType]:
    """The importer modules that exist, in sniffing order."""
    found = []
    for name in IMPORTER_MODULES:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
    return found


def by_format(fmt: str) -> ModuleType:
    for module in importers():
        if fmt == module.FORMAT:
            return module
    known = ", ".join(m.FORMAT for m in importers())
    raise RunImportError(f"unknown format {fmt!r}; known formats: {known}")


def detect(path: Path) -> ModuleType:
    """The first importer whose sniff accepts path, or a RunImportError naming what was expected."""
    if not path.exists():
        raise RunImportError(f"{path}: no such file or folder")
    for module in importers():
        if module.sniff(path):
            return module
    for module in importers():
        explain = getattr(module, "explain", None)
        reason = explain(path) if explain is not None else None
        if reason:
            raise RunImportError(reason)
    expected = "; ".join(f"{m.FORMAT} ({m.DESCRIPTION})" for m in importers())
    shown = sorted(p.name for p in path.iterdir())[:10] if path.is_dir() else [path.name]
    raise RunImportError(
        f"{path}: not a training log this tool can read. Found: {', '.join(shown) or 'an empty folder'}. "
        f"Expected one of: {expected}"
    )


def load_run(path: Path, fmt: str | None = None) -> RunData:
    module = by_format(fmt) if fmt else detect(path)
    return module.load(path)
