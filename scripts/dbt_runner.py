"""Run `dbt build` of this project on one run folder, in its own DuckDB file and target folder.

    result = build_run(run_dir, db_path, work_dir, progress=print)

`run_dir` holds the five canonical files (None: the seeds, the team's sample run). The
build reads the folder from the environment variable RUN_DIAGNOSIS_RUN_DIR (never from
--vars: a var is rendered as Jinja, so a folder named `{{ 7*7 }}` would run code), writes
the DuckDB file named by RUN_DIAGNOSIS_DB and keeps dbt's target and logs under `work_dir`,
so two builds never clobber each other or the repository's own `target/`. A database path
with characters DuckDB or dbt read specially (`?`, `#`, `{`, quotes, non-ASCII) is built in
a temporary folder and moved into place. dbt runs from the repository root (the profile's relative
paths are resolved from there), with the dbt of the running Python's environment.

Progress comes from dbt's structured (JSON) console events; the counts come from
`run_results.json`. A failed build raises `DbtBuildError` carrying dbt's own error lines
(for bad input, the project's "run_diagnosis: <file> row N: ..." messages).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DB_ENV_VAR = "RUN_DIAGNOSIS_DB"
RUN_DIR_ENV_VAR = "RUN_DIAGNOSIS_RUN_DIR"
# characters a DuckDB file path may hold as is; anything else is built elsewhere and moved
SAFE_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+ ")

Progress = Callable[[str], None]

# run_results.json statuses, grouped as dbt's own "Done. PASS=.. WARN=.. ERROR=.." line
PASS_STATUSES = frozenset({"success", "pass"})
ERROR_STATUSES = frozenset({"error", "fail", "runtime error"})
SKIP_STATUSES = frozenset({"skipped"})
# console events that mark one node (seed, model, test) as finished
NODE_DONE_EVENTS = frozenset({"LogModelResult", "LogSeedResult", "LogTestResult", "SkippingDetails"})
PROGRESS_STEPS = 4  # say "n of N done" this many times during the build
MAX_ERROR_LINES = 20


class DbtBuildError(Exception):
    """dbt could not build the project: the message holds dbt's relevant error lines."""

    def __init__(self, message: str, result: BuildResult | None = None) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class BuildResult:
    """What one `dbt build` did: exit code, where its files are, and its node statuses."""

    exit_code: int
    db_path: Path
    target_path: Path
    log_path: Path
    elapsed_sec: float
    status_counts: Mapping[str, int] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    warned_tests: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def n_pass(self) -> int:
        return self._count(PASS_STATUSES)

    @property
    def n_warn(self) -> int:
        return self._count({"warn"})

    @property
    def n_error(self) -> int:
        return self._count(ERROR_STATUSES)

    @property
    def n_skip(self) -> int:
        return self._count(SKIP_STATUSES)

    def _count(self, statuses: Iterable[str]) -> int:
        return sum(self.status_counts.get(status, 0) for status in statuses)

    def summary(self) -> str:
        return (
            f"PASS={self.n_pass} WARN={self.n_warn} ERROR={self.n_error} SKIP={self.n_skip} "
            f"in {self.elapsed_sec:.1f} s"
        )


def dbt_executable() -> str:
    """The dbt next to the running Python (the project venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "dbt"
    if beside.exists():
        return str(beside)
    found = shutil.which("dbt")
    if found is None:
        raise DbtBuildError(
            f"dbt not found: neither {beside} nor `dbt` on PATH; install requirements.txt in the venv"
        )
    return found


def dbt_command(
    target_path: Path,
    log_path: Path,
    select: str | None = None,
    exclude: str | None = None,
    extra_vars: Mapping[str, Any] | None = None,
) -> list[str]:
    """The `dbt build` command line (JSON console events, text log file, own target and log folders)."""
    command = [dbt_executable(), "--log-format", "json", "--log-format-file", "debug", "build"]
    command += ["--profiles-dir", str(REPO_ROOT), "--project-dir", str(REPO_ROOT)]
    command += ["--target-path", str(target_path), "--log-path", str(log_path)]
    if "run_dir" in (extra_vars or {}):
        raise DbtBuildError(
            "run_dir is not a var: pass the folder as build_run(run_dir=...) (env RUN_DIAGNOSIS_RUN_DIR)"
        )
    if extra_vars:
        command += ["--vars", json.dumps(dict(extra_vars))]  # JSON is YAML
    if select:
        command += ["--select", select]
    if exclude:
        command += ["--exclude", exclude]
    return command


@dataclass
class _EventReader:
    """Turns dbt's JSON console events into short progress lines and collects error messages."""

    progress: Progress | None
    total: int = 0
    done: int = 0
    next_report: int = 1
    error_messages: list[str] = field(default_factory=list)
    warned_tests: list[str] = field(default_factory=list)

    def feed(self, line: str) -> None:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            if line.strip():
                self.error_messages.append(line.strip())  # not an event: a crash before logging started
            return
        info, data = event.get("info", {}), event.get("data", {})
        self._handle(info.get("name", ""), info.get("level", ""), info.get("msg", ""), data)

    def _handle(self, name: str, level: str, msg: str, data: dict[str, Any]) -> None:
        if name == "FoundStats":
            self._say(f"dbt: found {data.get('stat_line', msg)}")
        elif name == "LogStartLine":
            self.total = max(self.total, int(data.get("total") or 0))
        elif name in NODE_DONE_EVENTS:
            self._node_done(name, level, data)
        elif name == "RunResultError" or (level == "error" and name not in {"RunResultFailure"}):
            self.error_messages.append(str(data.get("msg") or msg))

    def _node_done(self, name: str, level: str, data: dict[str, Any]) -> None:
        self.done += 1
        if name == "LogTestResult" and level == "warn":
            self.warned_tests.append(str(data.get("name", "")))
        if self.total and self.done * PROGRESS_STEPS >= self.next_report * self.total:
            self.next_report += 1
            warned = f", {len(self.warned_tests)} anomaly test(s) warned" if self.warned_tests else ""
            self._say(f"dbt: {self.done} of {self.total} nodes done{warned}")

    def _say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)


def _run_streaming(command: list[str], env: Mapping[str, str], reader: _EventReader) -> int:
    try:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    except OSError as error:
        raise DbtBuildError(f"could not start dbt ({command[0]}): {error}") from error
    assert process.stdout is not None
    with process:
        for line in process.stdout:
            reader.feed(line)
    return process.returncode


def read_run_results(target_path: Path) -> list[dict[str, Any]]:
    """The `results` of target/run_results.json ([] when dbt wrote none, e.g. a parse error)."""
    path = target_path / "run_results.json"
    if not path.exists():
        return []
    return list(json.loads(path.read_text(encoding="utf-8")).get("results", []))


def error_lines(message: str) -> list[str]:
    """The useful lines of a dbt error message: not blank, not the '> in macro' call trace."""
    return [
        line.strip() for line in message.splitlines() if line.strip() and not line.strip().startswith(">")
    ]


def _collect_errors(results: list[dict[str, Any]], streamed: list[str]) -> tuple[str, ...]:
    messages = [str(r.get("message") or "") for r in results if r.get("status") in ERROR_STATUSES]
    lines: list[str] = []
    for message in messages or streamed:
        lines += [line for line in error_lines(message) if line not in lines]
    return tuple(lines[:MAX_ERROR_LINES])


def build_run(
    run_dir: Path | None,
    db_path: Path,
    work_dir: Path,
    *,
    select: str | None = None,
    exclude: str | None = None,
    progress: Progress | None = None,
    extra_vars: Mapping[str, Any] | None = None,
    check: bool = True,
) -> BuildResult:
    """Run `dbt build` on run_dir (None: the seeds) into db_path; target and logs under work_dir.

    select/exclude are dbt node selections (e.g. exclude="resource_type:unit_test": the unit
    tests check the SQL on fixed inputs, so they give the same answer for every run).

    Raises DbtBuildError (with dbt's error lines) when dbt exits non-zero, unless check is
    False: then the failed result is returned (its `errors` say what went wrong).
    """
    if run_dir is not None and not run_dir.is_dir():
        raise DbtBuildError(f"run folder {run_dir} does not exist or is not a folder")
    db_path, work_dir = db_path.resolve(), work_dir.resolve()
    target_path, log_path = work_dir / "target", work_dir / "logs"
    db_path.parent.mkdir(parents=True, exist_ok=True)
    work_dir.mkdir(parents=True, exist_ok=True)
    stale = target_path / "run_results.json"
    stale.unlink(missing_ok=True)  # never report a previous build's results as this one's
    command = dbt_command(target_path, log_path, select, exclude, extra_vars)
    env = {k: v for k, v in os.environ.items() if k != RUN_DIR_ENV_VAR}
    if run_dir is not None:
        env[RUN_DIR_ENV_VAR] = str(run_dir.resolve())
    reader = _EventReader(progress)
    started = time.monotonic()
    with _buildable_db_path(db_path) as build_db:
        env[DB_ENV_VAR] = str(build_db)
        exit_code = _run_streaming(command, env, reader)
    results = read_run_results(target_path)
    result = BuildResult(
        exit_code=exit_code,
        db_path=db_path,
        target_path=target_path,
        log_path=log_path,
        elapsed_sec=time.monotonic() - started,
        status_counts=dict(Counter(str(r.get("status")) for r in results)),
        errors=_collect_errors(results, reader.error_messages) if exit_code else (),
        warned_tests=tuple(reader.warned_tests),
    )
    if progress is not None:
        progress(f"dbt: {'done' if result.ok else 'FAILED'}: {result.summary()}")
    if check and not result.ok:
        raise DbtBuildError(failure_message(result), result)
    return result


@contextmanager
def _buildable_db_path(db_path: Path) -> Iterator[Path]:
    """db_path itself when DuckDB can open it as written, else a temporary file moved there after."""
    if set(str(db_path)) <= SAFE_PATH_CHARS:
        yield db_path
        return
    with tempfile.TemporaryDirectory(prefix="run_diagnosis_db_") as folder:
        built = Path(folder) / "".join(c if c in SAFE_PATH_CHARS else "_" for c in db_path.name)
        try:
            yield built
        finally:
            if built.exists():
                shutil.move(str(built), db_path)


def failure_message(result: BuildResult) -> str:
    """What went wrong, in dbt's words, and where the full log is."""
    lines = list(result.errors) or [f"dbt exited with code {result.exit_code} without an error message"]
    body = "\n".join(f"  {line}" for line in lines)
    return (
        f"dbt build failed (exit code {result.exit_code}):\n{body}\nfull log: {result.log_path / 'dbt.log'}"
    )
