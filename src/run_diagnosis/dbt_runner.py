"""Run `dbt build` of this project on one run folder, in its own DuckDB file and target folder.

    result = build_run(run_dir, db_path, work_dir, progress=print)

`run_dir` holds the five canonical files (None: the seeds, the team's sample run). The
build reads the folder from the environment variable RUN_DIAGNOSIS_RUN_DIR (never from
--vars: a var is rendered as Jinja, so a folder named `{{ 7*7 }}` would run code), writes
the DuckDB file named by RUN_DIAGNOSIS_DB and keeps dbt's target and logs under `work_dir`,
so two builds never clobber each other or the repository's own `target/`. A database path
with characters DuckDB or dbt read specially (`?`, `#`, `{`, quotes, non-ASCII) is built in
a temporary folder and moved into place. dbt runs from the project folder (the profile's relative
paths are resolved from there): RUN_DIAGNOSIS_PROJECT_DIR, else the checkout this package is
installed from (run_diagnosis.project).

dbt runs in-process (`dbtRunner`) and parses the project once per process: the run folder and
the database come from environment variables read at run time, so one manifest serves every
build with the same database file name (the manifest names the catalog after it), the same mode
(run folder or seeds: the seeds are `ref`s only then) and the same --vars. That parse is itself a
partial parse from a stable folder (.dbt_state/parse/<key>/, locked while in use), so the next
process re-parses only changed files. In-process builds take a process-wide lock (dbt and
dbt-duckdb keep global state) and set, then restore, the environment variables. With
`in_process=False` (or RUN_DIAGNOSIS_DBT_SUBPROCESS=1) dbt runs as a subprocess instead: the dbt
next to the running Python, else the one on PATH.

Progress comes from dbt's structured events (JSON console lines, or callbacks in-process); the
counts and "which anomaly tests fired" (`failed_tests`) come from `run_results.json` joined to
`manifest.json`. A failed build raises `DbtBuildError` carrying dbt's own error lines
(for bad input, the project's "run_diagnosis: <file> row N: ..." messages).

One writer at a time (docs/reliability.md): a build holds a lock beside its database
(`<db>.lock`, safe_io.exclusive); a second build of the same database is refused
(`BuildRefused`, naming the holder) or waits `wait_sec`. A database that cannot be opened
(truncated, written by another DuckDB version) is moved aside to `<db>.unreadable` and built
anew: it is derived from the run files, which are the source of truth. A database held open by
another program, a folder that is full or not writable, are `BuildRefused` with what to do.
With `complete=True`, a build whose only failures are data tests (an invariant that does not
hold: a defect of this tool, not of the run) builds the models those failures skipped
anyway, so the marts are whole and the report can name the failed tests.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from run_diagnosis import jinja_cache
from run_diagnosis.project import project_dir as find_project_dir
from run_diagnosis.run_files import FILE_SUFFIXES
from run_diagnosis.safe_io import Busy, exclusive, folder_problem, folder_problem_in

DB_ENV_VAR = "RUN_DIAGNOSIS_DB"
RUN_DIR_ENV_VAR = "RUN_DIAGNOSIS_RUN_DIR"
SUBPROCESS_ENV_VAR = "RUN_DIAGNOSIS_DBT_SUBPROCESS"  # "1": run dbt as a subprocess, not in-process
# dbt's log file (<out>/dbt/logs/dbt.log): "info" keeps every node's start, result and error; "debug"
# adds every SQL statement and its timing (tools/benchmark.py reads those), which costs about a
# sixth of the nodes' thread time on a small run (docs/performance.md)
FILE_LOG_LEVEL_ENV_VAR = "RUN_DIAGNOSIS_DBT_FILE_LOG_LEVEL"
FILE_LOG_LEVELS = ("debug", "info", "warn", "error", "none")
DEFAULT_FILE_LOG_LEVEL = "info"
PARSE_SUBDIR = Path(".dbt_state") / "parse"  # under the project: one stable parse folder per key
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
# test statuses that mean the test found rows (an anomaly test "fired")
TEST_PROBLEM_STATUSES = ("fail", "warn")
# set while the models a failed test skipped are built (macros/incremental_runs.sql keeps the
# failed build's batch of runs and does not start over)
COMPLETING_ENV_VAR = "RUN_DIAGNOSIS_COMPLETING"
LOCK_SUFFIX = ".lock"  # <db>.lock beside the database: held while a build writes it
UNREADABLE_SUFFIX = ".unreadable"  # where a database that cannot be opened is moved aside
# a failed build whose folder has less free space than this failed for want of space, whatever
# its error says: DuckDB reports a database file it could not finish writing on a full disk as
# "not a valid DuckDB database file", with no word of the space
FULL_FOLDER_FREE_BYTES = 1024 * 1024
# what DuckDB says about a database file it cannot read (rebuilt), and about one open elsewhere
UNREADABLE_DB_TEXTS = (
    "could not read enough bytes",
    "not a valid duckdb database",
    "corrupt database file",
    "does not match stored checksum",
    "database file with version number",
    "serialization error",
)
DB_LOCKED_TEXT = "could not set lock on file"

# DuckDB's budget (profiles.yml reads both variables; one set in the environment is kept as is).
# memory_limit: MEMORY_PER_LOG_BYTE bytes per byte of the run's train logs, at least MIN_MEMORY,
# at most AVAILABLE_SHARE of the memory the machine (or its cgroup) has free when the build
# starts. The factor is measured on a 10M-step log (524 MB of CSV; docs/performance.md): with
# the spike baseline's passes built one statement each (int_loss_baselines_computed's pre-hook
# on DuckDB) and one model at a time (build_threads), the whole diagnosis ran in a 3.3 GB limit
# (6.3 bytes a byte) with a peak of 3.99 GB for the process tree; the one query holding every
# pass had stopped out of memory at 4 GB and needed 5.5 GB (11.3 bytes a byte). Beyond the
# limit DuckDB spills sorts, joins and most windows to disk. The share leaves the rest to dbt,
# Python and the machine's other work. threads: the cores this process may use.
MEMORY_ENV_VAR = "RUN_DIAGNOSIS_MEMORY_LIMIT"
THREADS_ENV_VAR = "RUN_DIAGNOSIS_DUCKDB_THREADS"
MEMORY_PER_LOG_BYTE = 6
# dbt runs one model at a time (not the profile's two) when the train logs exceed this: the
# per-step models of a run of millions of steps each need most of DuckDB's budget, and two of
# them side by side share it (docs/performance.md, "Three tables instead of one query")
SERIAL_BUILD_LOG_BYTES = 200 * 1024**2
# the floor: at 1M steps (52 MB of log) 512 MB gave a peak of 821 MB and the same findings in one
# build, but stopped out of memory in 2 of 4 (two per-step models side by side, each pinning more
# than half of it: which ones overlap depends on dbt's scheduling); 1 GB has never stopped one
# (peak 1.29 GB; docs/performance.md)
MIN_MEMORY = 1024**3
AVAILABLE_SHARE = 0.5
MB = 1024**2


class DbtBuildError(Exception):
    """dbt could not build the project: the message holds dbt's relevant error lines."""

    def __init__(self, message: str, result: BuildResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class BuildRefused(DbtBuildError):
    """The build could not be run where it was asked to: its database is being built or is open
    in another process, or its folder is full or not writable. The message says which and what
    to do; nothing was changed."""


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
    output: str = ""  # dbt's console messages (info and above), one per line
    completed: bool = False  # data tests failed, and the models they skipped were built anyway

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def marts_complete(self) -> bool:
        """Every model built: the build passed, or only data tests failed and it was completed."""
        return self.ok or self.completed

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

    def failed_tests(self) -> list[FailedTest]:
        """The data tests that failed or warned in this build (with their meta.category)."""
        return failed_tests(self.target_path)

    def summary(self) -> str:
        return (
            f"PASS={self.n_pass} WARN={self.n_warn} ERROR={self.n_error} SKIP={self.n_skip} "
            f"in {self.elapsed_sec:.1f} s"
        )


def available_memory(root: Path = Path("/")) -> int | None:
    """Bytes free for a new process: /proc/meminfo's MemAvailable, less when a cgroup (v2) caps
    this process lower (memory.max less memory.current); None when neither can be read."""
    found: list[int] = []
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in (root / "proc" / "meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    cgroup = root / "sys" / "fs" / "cgroup"
    with contextlib.suppress(OSError, ValueError):
        cap = (cgroup / "memory.max").read_text().strip()
        if cap != "max":
            found.append(int(cap) - int((cgroup / "memory.current").read_text().strip()))
    return max(min(found), 0) if found else None


def usable_cores(root: Path = Path("/")) -> int:
    """The cores this process may run on (its CPU affinity), fewer when a cgroup (v2) quota
    allows fewer (cpu.max: quota period); at least 1."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    with contextlib.suppress(OSError, ValueError):
        quota, period = (root / "sys" / "fs" / "cgroup" / "cpu.max").read_text().split()
        if quota != "max":
            cores = min(cores, math.ceil(int(quota) / int(period)))
    return max(cores, 1)


def run_log_bytes(run_dir: Path | None, project_dir: Path) -> int:
    """The size of the train logs a build reads: the run folder's, or each of its run folders'
    (a warehouse), or the seeds' (the sample run)."""
    suffix = FILE_SUFFIXES["train"]
    if run_dir is None:
        return sum(path.stat().st_size for path in (project_dir / "seeds").glob(f"*{suffix}"))
    logs = [*run_dir.glob(f"*{suffix}"), *run_dir.glob(f"*/*{suffix}")]
    return sum(path.stat().st_size for path in logs if path.is_file())


def duckdb_settings(run_dir: Path | None, project_dir: Path) -> dict[str, str]:
    """DuckDB's memory_limit and threads for a build of run_dir, from the machine and the run's
    size (see MEMORY_PER_LOG_BYTE); a variable already set in the environment is not given."""
    settings: dict[str, str] = {}
    if not os.environ.get(MEMORY_ENV_VAR):
        wanted = max(MIN_MEMORY, MEMORY_PER_LOG_BYTE * run_log_bytes(run_dir, project_dir))
        free = available_memory()
        limit = wanted if free is None else min(wanted, int(free * AVAILABLE_SHARE))
        settings[MEMORY_ENV_VAR] = f"{max(limit // MB, 1)}MB"
    if not os.environ.get(THREADS_ENV_VAR):
        settings[THREADS_ENV_VAR] = str(usable_cores())
    return settings


def build_threads(run_dir: Path | None, project_dir: Path) -> int | None:
    """dbt's threads for a build of run_dir: 1 when one run's train logs exceed
    SERIAL_BUILD_LOG_BYTES, else None (the profile's). A warehouse of many small runs keeps its
    threads: every window is partitioned by run, so only one large run fills the budget."""
    if run_dir is None:
        return None
    suffix = FILE_SUFFIXES["train"]
    per_run: dict[Path, int] = {}
    for path in [*run_dir.glob(f"*{suffix}"), *run_dir.glob(f"*/*{suffix}")]:
        if path.is_file():
            per_run[path.parent] = per_run.get(path.parent, 0) + path.stat().st_size
    return 1 if max(per_run.values(), default=0) > SERIAL_BUILD_LOG_BYTES else None


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


def file_log_level() -> str:
    """The level of dbt's log file: RUN_DIAGNOSIS_DBT_FILE_LOG_LEVEL, else DEFAULT_FILE_LOG_LEVEL."""
    level = os.environ.get(FILE_LOG_LEVEL_ENV_VAR, "").strip().lower() or DEFAULT_FILE_LOG_LEVEL
    if level not in FILE_LOG_LEVELS:
        raise DbtBuildError(
            f"{FILE_LOG_LEVEL_ENV_VAR}={level!r}: expected one of {', '.join(FILE_LOG_LEVELS)}"
        )
    return level


def dbt_arguments(
    target_path: Path,
    log_path: Path,
    select: str | None = None,
    exclude: str | None = None,
    extra_vars: Mapping[str, Any] | None = None,
    *,
    command: str = "build",
    project_dir: Path | None = None,
    threads: int | None = None,
    full_refresh: bool = False,
    indirect_selection: str | None = None,
) -> list[str]:
    """dbt's arguments (no executable): JSON console events, text log file, own target and log folders;
    project_dir None: the run_diagnosis project (run_diagnosis.project)."""
    project_dir = find_project_dir() if project_dir is None else project_dir
    args = [
        "--log-format",
        "json",
        "--log-format-file",
        "debug",
        "--log-level-file",
        file_log_level(),
        command,
    ]
    args += ["--profiles-dir", str(project_dir), "--project-dir", str(project_dir)]
    args += ["--target-path", str(target_path), "--log-path", str(log_path)]
    if "run_dir" in (extra_vars or {}):
        raise DbtBuildError(
            "run_dir is not a var: pass the folder as build_run(run_dir=...) (env RUN_DIAGNOSIS_RUN_DIR)"
        )
    if extra_vars:
        args += ["--vars", json.dumps(dict(extra_vars))]  # JSON is YAML
    if select:
        args += ["--select", select]
    if exclude:
        args += ["--exclude", exclude]
    if indirect_selection:
        args += ["--indirect-selection", indirect_selection]
    if threads:
        args += ["--threads", str(threads)]
    if full_refresh:
        args += ["--full-refresh"]
    return args


def dbt_command(
    target_path: Path,
    log_path: Path,
    select: str | None = None,
    exclude: str | None = None,
    extra_vars: Mapping[str, Any] | None = None,
) -> list[str]:
    """The `dbt build` command line for a subprocess (the dbt of this environment)."""
    return [dbt_executable(), *dbt_arguments(target_path, log_path, select, exclude, extra_vars)]


@dataclass
class _EventReader:
    """Turns dbt's JSON console events into short progress lines and collects error messages."""

    progress: Progress | None
    total: int = 0
    done: int = 0
    next_report: int = 1
    error_messages: list[str] = field(default_factory=list)
    warned_tests: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)

    def feed_event(self, event: Any) -> None:
        """An in-process dbt event (EventMsg), read like its JSON console line. A debug event
        (most of them: every SQL statement) is none of those read, and is not converted."""
        from dbt_common.events.functions import msg_to_dict

        if event.info.level == "debug":
            return
        message = msg_to_dict(event)
        info, data = message.get("info", {}), message.get("data", {})
        self._handle(info.get("name", ""), info.get("level", ""), info.get("msg", ""), data)

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
        if level not in ("", "debug") and msg:
            self.output.append(msg)
        if name == "FoundStats":
            self._say(f"dbt: found {data.get('stat_line', msg)}")
        elif msg.startswith("run_diagnosis: incremental build"):
            self._say(f"dbt: {msg.removeprefix('run_diagnosis: ')}")
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


def _run_streaming(command: list[str], env: Mapping[str, str], reader: _EventReader, cwd: Path) -> int:
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
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


# ------------------------------------------------------------------ in-process dbt

_LOCK = threading.RLock()  # dbt and dbt-duckdb keep process-wide state: one in-process dbt at a time
_MANIFESTS: dict[tuple[str, ...], Any] = {}  # parsed manifests by (project, db name, mode, vars)


@contextmanager
def _environment(env: Mapping[str, str | None]) -> Iterator[None]:
    """Set (None: unset) the given environment variables and the cwd, restoring both after."""
    saved = {name: os.environ.get(name) for name in env}
    cwd = Path.cwd()
    try:
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        os.chdir(cwd)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def release_database() -> None:
    """Close the DuckDB database dbt-duckdb keeps open in this process, so the report (and
    the next build, of another file) can open files the way a separate process would."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    with DuckDBConnectionManager._LOCK:
        environment: Any = DuckDBConnectionManager._ENV  # typed None in dbt-duckdb, set while open
        if environment is not None:
            environment.close()
            DuckDBConnectionManager._ENV = None


@contextmanager
def _no_logging_tracebacks() -> Iterator[None]:
    """dbt's log file handler cannot write on a full disk, and Python's logging prints a traceback
    on stderr for every line it drops; the build's own error says what happened (the folder is
    full), so those are not printed while dbt runs."""
    saved = logging.raiseExceptions
    logging.raiseExceptions = False
    try:
        yield
    finally:
        logging.raiseExceptions = saved


def invoke(args: list[str], env: Mapping[str, str | None], manifest: Any = None, callbacks: Any = ()) -> Any:
    """One in-process dbt command (dbtRunnerResult) with env set and cwd the project; stdout captured."""
    from dbt.cli.main import dbtRunner

    jinja_cache.install()  # each Jinja source compiled once per process, not once per node per build
    named = "--project-dir" in args
    project_dir = Path(args[args.index("--project-dir") + 1]) if named else find_project_dir()
    with _LOCK, _environment(env), contextlib.redirect_stdout(io.StringIO()), _no_logging_tracebacks():
        os.chdir(project_dir)
        try:
            return dbtRunner(manifest=manifest, callbacks=list(callbacks)).invoke(args)
        finally:
            release_database()


def parsed_manifest(
    project_dir: Path, db_name: str, run_dir_mode: bool, extra_vars: Mapping[str, Any]
) -> Any:
    """The project parsed for this key, once per process; the parse is a partial parse from a
    stable folder, locked so two processes never write its state at once."""
    vars_json = json.dumps(dict(extra_vars), sort_keys=True)
    key = (str(project_dir), db_name, "run_dir" if run_dir_mode else "seeds", vars_json)
    with _LOCK:
        if key in _MANIFESTS:
            return _MANIFESTS[key]
        digest = hashlib.sha1(vars_json.encode()).hexdigest()[:8]
        folder = project_dir / PARSE_SUBDIR / f"{db_name}-{key[2]}-{digest}"
        folder.mkdir(parents=True, exist_ok=True)
        args = dbt_arguments(
            folder / "target",
            folder / "logs",
            extra_vars=extra_vars,
            command="parse",
            project_dir=project_dir,
        )
        # the parse's own manifest.json is read by nothing (each build writes its own; the next
        # parse reads partial_parse.msgpack, written either way): not written
        args = ["--no-write-json", *args]
        # a fixed database path and run folder: dbt's partial parse needs the same profile and env
        env = {
            DB_ENV_VAR: str(folder / f"{db_name}.duckdb"),
            RUN_DIR_ENV_VAR: str(folder) if run_dir_mode else None,
        }
        with (folder / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            result = invoke(args, env)
        if not result.success:
            raise DbtBuildError(f"dbt parse failed: {result.exception or result.result}")
        _MANIFESTS[key] = result.result
        return result.result


def _run_in_process(
    args: list[str], env: Mapping[str, str | None], reader: _EventReader, extra_vars: Mapping[str, Any]
) -> int:
    """dbt in this process on the cached manifest; the exit code dbt's CLI would give."""
    project_dir = Path(args[args.index("--project-dir") + 1])
    db_name = Path(str(env[DB_ENV_VAR])).stem
    try:
        manifest = parsed_manifest(project_dir, db_name, env.get(RUN_DIR_ENV_VAR) is not None, extra_vars)
    except DbtBuildError as error:  # a project that does not parse: exit code 2, as dbt's CLI
        reader.error_messages.append(str(error))
        return 2
    # the events reach the reader as callbacks: the console's JSON lines (captured, unread) are
    # not written; the log file is (at file_log_level())
    quiet = ["--log-level", "none"]
    result = invoke([*quiet, *args], env, manifest, [reader.feed_event])
    if result.exception is not None:
        reader.error_messages.append(str(result.exception))
        return 2
    return 0 if result.success else 1


def read_run_results(target_path: Path) -> list[dict[str, Any]]:
    """The `results` of target/run_results.json ([] when dbt wrote none, e.g. a parse error)."""
    path = target_path / "run_results.json"
    if not path.exists():
        return []
    return list(json.loads(path.read_text(encoding="utf-8")).get("results", []))


# ------------------------------------------------------------------ which tests fired


@dataclass(frozen=True)
class FailedTest:
    """One dbt data test that failed or warned in the last build."""

    name: str
    unique_id: str
    status: str
    failures: int | None
    category: str | None
    severity: str | None
    message: str | None


def read_target_json(path: Path, notes: list[str]) -> dict[str, Any] | None:
    """A JSON object dbt wrote (run_results.json, manifest.json); None (and a note) when unusable."""
    if not path.is_file():
        notes.append(f"{path} not found: the dbt test results are not in this report")
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        notes.append(f"{path} could not be read ({exc}): the dbt test results are not in this report")
        return None
    if not isinstance(data, dict):
        notes.append(f"{path} is not a JSON object: ignored")
        return None
    return data


def node_meta(node: Mapping[str, Any]) -> dict[str, Any]:
    """config.meta (dbt >= 1.10), falling back to the node's top-level meta."""
    config = node.get("config") or {}
    meta = dict(node.get("meta") or {})
    meta.update(config.get("meta") or {})
    return meta


def failed_test(result: Mapping[str, Any], node: Mapping[str, Any]) -> FailedTest:
    """A run_results entry of a failed/warned test, with its node's meta.category and severity."""
    unique_id = str(result.get("unique_id"))
    failures = result.get("failures")
    category = node_meta(node).get("category")
    severity = (node.get("config") or {}).get("severity")
    return FailedTest(
        name=str(node.get("name") or unique_id.split(".")[-1]),
        unique_id=unique_id,
        status=str(result.get("status")),
        failures=int(failures) if isinstance(failures, int | float) else None,
        category=str(category) if category is not None else None,
        severity=str(severity).lower() if severity is not None else None,
        message=result.get("message"),
    )


def is_failed_test(result: Mapping[str, Any]) -> bool:
    """A run_results entry of a data test that failed or warned (an anomaly test "fired")."""
    return str(result.get("unique_id", "")).startswith("test.") and (
        str(result.get("status") or "").lower() in TEST_PROBLEM_STATUSES
    )


def manifest_nodes(target_path: Path, notes: list[str]) -> dict[str, Any]:
    """The nodes of target_path/manifest.json ({} and a note when it is missing or unusable)."""
    return (read_target_json(target_path / "manifest.json", notes) or {}).get("nodes") or {}


def failed_tests_of(run_results: Mapping[str, Any], nodes: Mapping[str, Any]) -> list[FailedTest]:
    """The failed or warned data tests of a run_results.json document, with their manifest meta."""
    return [
        failed_test(result, nodes.get(result.get("unique_id")) or {})
        for result in run_results.get("results") or []
        if is_failed_test(result)
    ]


def failed_tests(target_path: Path) -> list[FailedTest]:
    """The data tests of the last build in target_path that failed or warned."""
    notes: list[str] = []
    run_results = read_target_json(target_path / "run_results.json", notes) or {}
    return failed_tests_of(run_results, manifest_nodes(target_path, notes))


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
    threads: int | None = None,
    project_dir: Path | None = None,
    in_process: bool | None = None,
    full_refresh: bool = False,
    indirect_selection: str | None = None,
    complete: bool = False,
    wait_sec: float = 0.0,
) -> BuildResult:
    """Run `dbt build` on run_dir (None: the seeds) into db_path; target and logs under work_dir.

    select/exclude are dbt node selections (e.g. exclude="resource_type:unit_test": the unit
    tests check the SQL on fixed inputs, so they give the same answer for every run);
    indirect_selection is dbt's --indirect-selection (eager, cautious, buildable, empty).

    Raises DbtBuildError (with dbt's error lines) when dbt exits non-zero, unless check is
    False: then the failed result is returned (its `errors` say what went wrong).
    in_process None: in-process unless RUN_DIAGNOSIS_DBT_SUBPROCESS=1. run_dir may hold one run
    or a folder of run folders; a database built before is updated run by run (only new or
    changed runs are rebuilt) unless full_refresh.

    Raises BuildRefused, whatever `check`, when another build holds the database beyond
    wait_sec seconds, another program has it open, or its folder is full or not writable.
    complete: when only data tests failed, build the models they skipped (`completed`).
    project_dir None: the run_diagnosis project (run_diagnosis.project; ProjectNotFound).
    """
    project_dir = find_project_dir() if project_dir is None else project_dir
    if run_dir is not None and not run_dir.is_dir():
        raise DbtBuildError(f"run folder {run_dir} does not exist or is not a folder")
    if threads is None:
        threads = build_threads(run_dir, project_dir)
    db_path, work_dir = db_path.resolve(), work_dir.resolve()
    target_path, log_path = work_dir / "target", work_dir / "logs"
    for folder in (db_path.parent, work_dir):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise BuildRefused(folder_problem(error, folder)) from error
    if in_process is None:
        in_process = os.environ.get(SUBPROCESS_ENV_VAR) != "1"
    reader = _EventReader(progress)
    started = time.monotonic()

    def arguments(**changes: Any) -> list[str]:
        settings: dict[str, Any] = {
            "select": select,
            "exclude": exclude,
            "extra_vars": extra_vars,
            "project_dir": project_dir,
            "threads": threads,
            "full_refresh": full_refresh,
            "indirect_selection": indirect_selection,
            **changes,
        }
        return dbt_arguments(target_path, log_path, **settings)

    with _database_lock(db_path, wait_sec, progress), _buildable_db_path(db_path) as build_db:
        env: dict[str, str | None] = {
            RUN_DIR_ENV_VAR: str(run_dir.resolve()) if run_dir is not None else None,
            DB_ENV_VAR: str(build_db),
            COMPLETING_ENV_VAR: None,
            **duckdb_settings(run_dir, project_dir),
        }

        def invoke_dbt(args: list[str], **env_changes: str) -> int:
            full = {**env, **env_changes}
            if in_process:
                return _run_in_process(args, full, reader, extra_vars or {})
            full_env = {k: v for k, v in {**os.environ, **full}.items() if v is not None}
            return _run_streaming([dbt_executable(), *args], full_env, reader, project_dir)

        _set_aside_if_unreadable(db_path, progress)
        (target_path / "run_results.json").unlink(missing_ok=True)  # never a previous build's results
        exit_code = invoke_dbt(arguments())
        if exit_code and _says_unreadable(reader.error_messages) and db_path.exists():
            _set_aside(db_path, "; ".join(reader.error_messages[-1:]), progress)
            reader.error_messages.clear()
            exit_code = invoke_dbt(arguments())
        completed = exit_code != 0 and complete and _complete(target_path, arguments, invoke_dbt, progress)
    _refuse_on_folder_problem(reader.error_messages, db_path.parent, failed=exit_code != 0)
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
        output="\n".join(reader.output),
        completed=completed,
    )
    if progress is not None:
        state = "done" if result.ok else "data tests FAILED, models completed" if completed else "FAILED"
        progress(f"dbt: {state}: {result.summary()}")
    if check and not result.ok:
        raise DbtBuildError(failure_message(result), result)
    return result


@contextmanager
def _database_lock(db_path: Path, wait_sec: float, progress: Progress | None) -> Iterator[None]:
    """Hold <db>.lock for the build; another build of the same database is BuildRefused."""
    lock_file = db_path.with_name(db_path.name + LOCK_SUFFIX)
    try:
        with exclusive(lock_file, f"the database {db_path}", wait_sec, progress):
            yield
    except Busy as error:
        advice = "Wait for that build to finish, or build into another database."
        raise BuildRefused(f"{error}. {advice}") from error
    except OSError as error:
        if error.filename is not None and Path(error.filename) == lock_file:
            raise BuildRefused(folder_problem(error, db_path.parent)) from error
        raise


def _says_unreadable(messages: Iterable[str]) -> bool:
    text = " ".join(messages).lower()
    return any(words in text for words in UNREADABLE_DB_TEXTS)


def _set_aside_if_unreadable(db_path: Path, progress: Progress | None) -> None:
    """Open the database the way the build will; one that cannot be read is moved aside (the run
    files are the source of truth: the build writes it anew); one open in another program is
    BuildRefused naming that program."""
    if not db_path.is_file():
        return
    import duckdb

    try:
        duckdb.connect(str(db_path)).close()
    except duckdb.Error as error:
        message = " ".join(str(error).split())
        if DB_LOCKED_TEXT in message.lower():
            held_by = message.split("Conflicting lock is held in", 1)[-1].split(". See also")[0].strip()
            raise BuildRefused(
                f"the database {db_path} is open in another program ({held_by}); close it (a report, a "
                "notebook, the DuckDB command line) or build into another database"
            ) from error
        if "permission denied" in message.lower():
            problem = f"the database {db_path} cannot be opened for writing (permission denied)"
            raise BuildRefused(problem) from error
        _set_aside(db_path, message, progress)


def _set_aside(db_path: Path, reason: str, progress: Progress | None) -> None:
    """Move an unreadable database (and its write-ahead log) to <db>.unreadable, replacing an older one."""
    for path in (db_path, db_path.with_name(db_path.name + ".wal")):
        if path.exists():
            path.replace(path.with_name(path.name + UNREADABLE_SUFFIX))
    if progress is not None:
        progress(
            f"the database {db_path} cannot be read ({reason[:200]}): moved aside to "
            f"{db_path.name}{UNREADABLE_SUFFIX} (delete it when done) and built anew from the run files"
        )


def _refuse_on_folder_problem(messages: Iterable[str], folder: Path, failed: bool) -> None:
    problem = folder_problem_in(" ".join(messages), folder)
    if problem is None and failed and _free_bytes(folder) < FULL_FOLDER_FREE_BYTES:
        problem = f"{folder} is full (no space left on its device)"
    if problem is not None:
        advice = "Free space or choose another folder, then build again."
        raise BuildRefused(f"{problem}: the build stopped. {advice}")


def _free_bytes(folder: Path) -> float:
    """Free bytes on the folder's device (infinite when it cannot be asked)."""
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return math.inf


def _node_name(unique_id: str) -> str:
    """model.run_diagnosis.run_summary -> run_summary; test.run_diagnosis.<name>.<hash> -> <name>."""
    parts = unique_id.split(".")
    return parts[2] if len(parts) > 2 else unique_id


def _complete(
    target_path: Path,
    arguments: Callable[..., list[str]],
    invoke_dbt: Callable[..., int],
    progress: Progress | None,
) -> bool:
    """When the build's only failures are data tests, build the models they skipped (`dbt run`)
    and run the tests those skipped (`dbt test`), and merge their results into run_results.json.
    True when every model then built."""
    path = target_path / "run_results.json"
    if not path.is_file():
        return False
    first = json.loads(path.read_text(encoding="utf-8"))
    results: list[dict[str, Any]] = list(first.get("results") or [])

    def kind(result: Mapping[str, Any]) -> str:
        return str(result.get("unique_id", "")).split(".", 1)[0]

    broken = [r for r in results if kind(r) != "test" and r.get("status") in ERROR_STATUSES]
    failed = [r for r in results if kind(r) == "test" and r.get("status") in ("fail", "error")]
    if broken or not failed:
        return False
    skipped = [r for r in results if r.get("status") in SKIP_STATUSES]
    models = sorted({_node_name(r["unique_id"]) for r in skipped if kind(r) in ("model", "seed", "snapshot")})
    tests = sorted({_node_name(r["unique_id"]) for r in skipped if kind(r) == "test"})
    if progress is not None:
        progress(
            f"dbt: {len(failed)} data test(s) failed: building the {len(models)} model(s) they skipped anyway"
        )
    later: list[dict[str, Any]] = []
    for command, names in (("run", models), ("test", tests)):
        if not names:
            continue
        path.unlink(missing_ok=True)
        args = arguments(command=command, select=" ".join(names), exclude=None)
        invoke_dbt(args, **{COMPLETING_ENV_VAR: "1"})
        later += read_run_results(target_path)
    by_id = {str(r.get("unique_id")): r for r in later}
    merged = [by_id.pop(str(r.get("unique_id")), r) for r in results] + list(by_id.values())
    path.write_text(json.dumps({**first, "results": merged}, indent=2), encoding="utf-8")
    return all(r.get("status") in PASS_STATUSES for r in merged if kind(r) in ("model", "seed", "snapshot"))


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
