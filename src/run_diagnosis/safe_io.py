"""Writing safely: one writer at a time, whole files or none, and errors that say which folder.

* ``exclusive(lock_file, what)``: an advisory lock (``flock``) held while a database is built
  or an output folder is written. A second writer is told who holds it (process id, host,
  start time, command) and refused (``Busy``), or waits up to ``wait_sec`` saying so. The
  kernel drops the lock when its holder dies, even by SIGKILL, so a killed build never leaves
  a stale lock behind; the file itself stays (its text names the last holder).
* ``holder(lock_file)``: who holds a lock now (None when nobody does).
* ``write_files_atomically(texts)``: every file written under a temporary name first, then
  renamed into place; when one write fails (a full disk), the temporary files are removed and
  the files already in place are left untouched, so a reader never sees a half-written report
  or a report whose parts come from two diagnoses.
* ``folder_problem(error, folder)``: an OSError as the sentence a user needs ("<folder> is full
  (no space left on its device)", "<folder> is not writable (permission denied)").
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

LOCK_POLL_SEC = 0.5  # how often a waiting writer tries the lock again
# errno -> what it means for the folder written to
FOLDER_ERRORS = {
    errno.ENOSPC: "is full (no space left on its device)",
    errno.EDQUOT: "is full (disk quota exceeded)",
    errno.EACCES: "is not writable (permission denied)",
    errno.EPERM: "is not writable (operation not permitted)",
    errno.EROFS: "is not writable (read-only file system)",
}
# the same conditions as other programs (DuckDB, dbt) word them in their error messages (not
# "permission denied": in a build's errors that may be about a run file it reads)
FOLDER_ERROR_TEXTS = {
    "no space left on device": FOLDER_ERRORS[errno.ENOSPC],
    "disk quota exceeded": FOLDER_ERRORS[errno.EDQUOT],
    "read-only file system": FOLDER_ERRORS[errno.EROFS],
}


class Busy(Exception):
    """Another process holds the lock; the message names it."""


def folder_problem(error: OSError, folder: Path) -> str:
    """What an OSError met while writing into folder means, in one sentence."""
    meaning = FOLDER_ERRORS.get(error.errno or 0)
    if meaning is not None:
        return f"{folder} {meaning}"
    return f"cannot write into {folder}: {error.strerror or error}"


def folder_problem_in(text: str, folder: Path) -> str | None:
    """The folder problem another program reports in its error text (None when there is none)."""
    lowered = text.lower()
    found = (meaning for words, meaning in FOLDER_ERROR_TEXTS.items() if words in lowered)
    meaning = next(found, None)
    return None if meaning is None else f"{folder} {meaning}"


def _holder_line() -> str:
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    command = " ".join(sys.argv)[:200] or "python"
    return f"pid {os.getpid()} on {socket.gethostname()}, since {started}: {command}"


def _read_holder(fd: int) -> str:
    with contextlib.suppress(OSError):
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 4096).decode("utf-8", errors="replace").strip()
        if text:
            return text
    return "a process that left no name"


def holder(lock_file: Path) -> str | None:
    """Who holds the lock now, or None when nobody does (or there is no lock file)."""
    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextmanager
def exclusive(
    lock_file: Path, what: str, wait_sec: float = 0.0, progress: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold an exclusive lock on lock_file while the block runs (see the module docstring).

    Raises Busy naming the holder when another process holds it beyond wait_sec, and OSError
    when the lock file cannot be created (the folder is full or not writable)."""
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + max(wait_sec, 0.0)
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                held_by = _read_holder(fd)
                if time.monotonic() >= deadline:
                    waited = f" (waited {wait_sec:.0f} s)" if wait_sec > 0 else ""
                    raise Busy(f"{what} is in use by another process{waited}: {held_by}") from None
                if not told and progress is not None:
                    progress(f"waiting for {what}: in use by {held_by}")
                    told = True
                time.sleep(LOCK_POLL_SEC)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (_holder_line() + "\n").encode("utf-8"))
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def write_files_atomically(texts: Mapping[Path, str]) -> None:
    """Write every file under a temporary name, then rename them all into place (see the module
    docstring); an OSError of a write leaves the folder as it was and is raised."""
    written: list[tuple[Path, Path]] = []
    try:
        for path, text in texts.items():
            temporary = path.with_name(f".{path.name}.tmp")
            written.append((temporary, path))
            temporary.write_text(text, encoding="utf-8")
    except OSError:
        for temporary, _ in written:
            temporary.unlink(missing_ok=True)
        raise
    for temporary, path in written:
        temporary.replace(path)
