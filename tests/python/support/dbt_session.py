"""Run the dbt project on fixture runs from pytest, fast, through the project's dbt harness.

`run_diagnosis.dbt_runner` parses the project once per process (a partial parse from a stable
folder) and every build reuses that manifest in-process, so a fixture build costs the models
and tests, not a parse. Each build writes its own DuckDB file (same file name, its own folder:
the manifest names the database after the file) and its own target folder.

A build costs about as much for twenty small runs as for one (dbt's per-node overhead, not the
SQL, is most of it), so `DbtSession.build_many` writes many fixture runs into one folder of run
folders (run_id = the sub-folder's name) and builds them at once. Each run then gets its own
`Diagnosis`, which sees only that run: its queries go through views `main.<table>` that keep
the run's rows, and its failing tests count the run's rows in each test's stored failures.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import duckdb
import pandas as pd
import pytest

from run_diagnosis.dbt_runner import build_run, failed_tests, manifest_nodes
from run_diagnosis.run_files import FILE_SUFFIXES

DB_NAME = "run_diagnosis.duckdb"
# dbt threads of a fixture build: the profile's two, one a core; four cost about 10% more CPU
# (dbt's per-node Python contends for the GIL) and made no build shorter on the 2-core machine
THREADS = 2


class WritesRun(Protocol):
    """A fixture run that writes its files into a folder (a RunBuilder, or one with edits)."""

    def write(self, folder: Path) -> Path: ...


FixtureRun = WritesRun | Path  # a fixture run: its writer, or a run folder whose files are linked
MakeRun = Callable[..., FixtureRun]
# a folder name with Jinja, glob metacharacters, a quote, shell syntax and an emoji: the folder
# holding the fixture runs of a shared build (conftest.py) has it, so it reaches every such
# build as the run folder's parent and in every file path
HOSTILE_NAME = "run {{ 7*7 }} {% if true %}x{% endif %} [x] ? * 'q' $(echo hi) 🙂"
BUILT = "built"  # the name the built database is attached under in a run's view
# The unit tests check the SQL on fixed inputs (a unit test is never an increment: it reads
# nothing of the run), so they give the same answer whatever run is built: the sample's `ci`
# build in scripts/test.sh runs them, no fixture build does.
UNIT_TESTS = "resource_type:unit_test"
# Structural tests (keys, accepted values, invariants) guard the SQL on the data; the sample
# build and a few fixture builds run them. Most fixture builds only need the
# models and the anomaly tests, which is about three times faster.
STRUCTURAL_DATA_TESTS = [
    f"test_name:{name}"
    for name in [
        "unique",
        "not_null",
        "accepted_values",
        "relationships",
        "expression_is_true",
        "accepted_range",
        "values_increasing",
        "no_gaps",
        "unique_combination_of_columns",
    ]
]
STRUCTURAL_TESTS = [UNIT_TESTS, *STRUCTURAL_DATA_TESTS]


def fixture_run(make: MakeRun) -> pytest.MarkDecorator:
    """Mark a test's fixture run (conftest.py builds a module's runs together):
    make(**the test's parameters it names) -> RunBuilder; the test takes `diagnosis`."""
    return pytest.mark.fixture_run.with_args(make)


def sql_text(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def run_connection(db_path: Path, run_id: str) -> duckdb.DuckDBPyConnection:
    """An in-memory connection where `main.<table>` is the built table's rows of one run.

    The built file is attached read-only as `built`; every table or view of its `main` schema
    that has a run_id column becomes a view keeping `run_id = <run_id>`, every other one (seeds,
    bookkeeping) a view of all its rows, so SQL written for a one-run build works unchanged.
    """
    connection = duckdb.connect()
    connection.execute(f"attach {sql_text(str(db_path))} as {BUILT} (read_only)")
    tables = connection.execute(
        "select t.table_name, bool_or(c.column_name = 'run_id') as has_run_id "
        "from information_schema.tables as t inner join information_schema.columns as c "
        "on c.table_catalog = t.table_catalog and c.table_schema = t.table_schema "
        "and c.table_name = t.table_name "
        "where t.table_catalog = ? and t.table_schema = 'main' group by t.table_name",
        [BUILT],
    ).fetchall()
    for name, has_run_id in tables:
        keep = f" where run_id = {sql_text(run_id)}" if has_run_id else ""
        connection.execute(f'create view main."{name}" as select * from {BUILT}.main."{name}"{keep}')
    return connection


@functools.cache
def built_nodes(target_path: Path) -> dict[str, Any]:
    """The nodes of a build's manifest.json, read once per build."""
    return manifest_nodes(target_path, [])


@dataclass
class Diagnosis:
    """What one build produced for one run: the DuckDB file, the target folder and dbt's output.

    run_id None: the build holds this run only. Otherwise the build holds several runs (one
    `build_many`) and everything read here is this run's share: `db_path`, `target_path` and
    `output` are the whole build's."""

    folder: Path
    db_path: Path
    target_path: Path
    output: str
    success: bool
    errors: list[str]
    run_id: str | None = None
    _connection: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)

    def query(self, sql: str) -> pd.DataFrame:
        if self.run_id is None:
            with duckdb.connect(str(self.db_path), read_only=True) as connection:
                return connection.sql(sql).df()
        return self._run_view().sql(sql).df()

    def _run_view(self) -> duckdb.DuckDBPyConnection:
        """This run's view of the shared build (run_connection), opened once."""
        if self._connection is None:
            self._connection = run_connection(self.db_path, str(self.run_id))
        return self._connection

    def findings(self) -> pd.DataFrame:
        return self.query("select * from main.findings order by harm_rank")

    def table(self, name: str) -> pd.DataFrame:
        return self.query(f"select * from main.{name}")

    def failing_tests(self) -> dict[str, int]:
        """Anomaly tests (meta.category) that failed or warned, with their failure counts
        (this run's failing rows, read from the test's stored failures, in a shared build)."""
        failed = [t for t in failed_tests(self.target_path) if t.category]
        if self.run_id is None:
            return {t.name: t.failures or 0 for t in failed}
        nodes = built_nodes(self.target_path)
        counts = {t.name: self._stored_failures(nodes.get(t.unique_id) or {}, t.name) for t in failed}
        return {name: count for name, count in counts.items() if count}

    def _stored_failures(self, node: Mapping[str, Any], name: str) -> int:
        schema, alias = node.get("schema"), node.get("alias")
        assert schema and alias, f"test {name}: no stored failures in the manifest (store_failures)"
        sql = f'select count(*) from {BUILT}."{schema}"."{alias}" where run_id = ?'
        return int(self._run_view().execute(sql, [self.run_id]).fetchall()[0][0])


@dataclass
class FixtureRuns:
    """The fixture runs of one test module, built together: by test (node id) and by name."""

    by_test: dict[str, Diagnosis]
    by_name: dict[str, Diagnosis]

    def __getitem__(self, name: str) -> Diagnosis:
        return self.by_name[name]


class DbtSession:
    """Numbered builds of fixture runs under one work folder."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.count = 0

    def _out(self, name: str | None) -> Path:
        self.count += 1
        return self.work_dir / (name or f"build_{self.count}")

    def build(
        self,
        run_dir: Path,
        name: str | None = None,
        *,
        structural_tests: bool = False,
        select: str | None = None,
    ) -> Diagnosis:
        return self._build(run_dir, self._out(name), structural_tests, select)

    def _build(
        self, run_dir: Path, out: Path, structural_tests: bool, select: str | None = None
    ) -> Diagnosis:
        structural = [] if structural_tests else STRUCTURAL_DATA_TESTS
        excluded = ["path:seeds/anthropic_*", UNIT_TESTS, *structural]
        excluding = " ".join(excluded)
        result = build_run(
            run_dir, out / DB_NAME, out, select=select, exclude=excluding, threads=THREADS, check=False
        )
        return Diagnosis(
            out, result.db_path, result.target_path, result.output, result.ok, list(result.errors)
        )

    def build_many(
        self,
        runs: Mapping[str, FixtureRun],
        name: str | None = None,
        *,
        structural: bool = False,
        folder_name: str = "runs",
    ) -> dict[str, Diagnosis]:
        """Write every run (a RunBuilder or another writer, or a run folder whose files are linked)
        into <work>/<build>/<folder_name>/<run_id>/ and build them in one dbt build; one Diagnosis
        per run (its `folder` the run's folder), each seeing only its own run."""
        out = self._out(name)
        runs_folder = out / folder_name
        for run_id, run in runs.items():
            assert is_folder_name(run_id), f"run id {run_id!r} is not one folder name"
            write_run(run, runs_folder / run_id)
        whole = self._build(runs_folder, out / "dbt", structural)
        return {
            run_id: Diagnosis(
                runs_folder / run_id,
                whole.db_path,
                whole.target_path,
                whole.output,
                whole.success,
                whole.errors,
                run_id,
            )
            for run_id in runs
        }


def write_run(run: FixtureRun, folder: Path) -> None:
    """A fixture run's files in folder: written by its writer, or linked from a run folder."""
    if not isinstance(run, Path):
        run.write(folder)
        return
    folder.mkdir(parents=True)
    for suffix in FILE_SUFFIXES.values():
        for path in run.glob(f"*{suffix}"):
            (folder / path.name).symlink_to(path.resolve())


def is_folder_name(name: str) -> bool:
    """One folder name (any characters but a slash and NUL), never `.` or `..`."""
    return bool(name) and name not in (".", "..") and not set(name) & {"/", "\0"}


def run_folder_name(text: str, limit: int = 60) -> str:
    """A plain folder name (letters, digits, `._-`) for a run id made of free text."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:limit].strip("-.") or "run"
