"""A database written by another version of the project is rebuilt, not appended to.

Every model is an incremental table (macros/incremental_runs.sql). A user who upgrades the
project and builds into the database of the previous version has tables whose columns may
differ from what the new models write (before issue 14 they had no run_id at all): appending
to them would fail. The on-run-start hook compares the project's checksum with the one kept
by the last complete build and, when they differ, drops every model table first."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest

from run_diagnosis.dbt_runner import build_run
from support.dbt_session import DB_NAME, STRUCTURAL_TESTS
from support.run_builder import RunBuilder

EXCLUDE = " ".join(["path:seeds/anthropic_*", *STRUCTURAL_TESTS])
RESET_MESSAGE = "built by another version of the project"


def build(run_dir: Path, out: Path) -> str:
    # the seeds and models only: the test compares tables, no model reads a test's result
    result = build_run(
        run_dir,
        out / DB_NAME,
        out,
        select="resource_type:seed resource_type:model",
        exclude=EXCLUDE,
        check=False,
    )
    assert result.ok, "\n".join(result.errors) or result.output[-3000:]
    return result.output


def findings(db_path: Path) -> pd.DataFrame:
    with duckdb.connect(str(db_path), read_only=True) as con:
        return con.execute("select * from main.findings order by finding_id").df()


def columns(db_path: Path, table: str) -> list[str]:
    with duckdb.connect(str(db_path), read_only=True) as con:
        return [row[0] for row in con.execute(f"describe main.{table}").fetchall()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pd.DataFrame]:
    root = tmp_path_factory.mktemp("upgrade")
    run_dir = root / "run" / "lr-4x"
    RunBuilder(seed=5).plant_lr_scale(4.0).write(run_dir)
    output = build(run_dir, root / "out")
    assert RESET_MESSAGE not in output  # a new database has nothing to reset
    return run_dir, root / "out", findings(root / "out" / DB_NAME)


def test_database_from_before_run_id_is_rebuilt(built: tuple[Path, Path, pd.DataFrame]) -> None:
    run_dir, out, before = built
    db_path = out / DB_NAME
    # the previous version: tables without run_id, no record of the project that built them
    with duckdb.connect(str(db_path)) as con:
        # (int_train_steps_measured: the wide per-step table; int_gradients_checked, named here before,
        # is now a view of it)
        for table in ("int_train_steps_measured", "findings"):
            legacy = f"select * exclude (run_id) from main.{table}"
            con.execute(f"create or replace table main.{table} as {legacy}")
        con.execute("drop table main.built_project")
    output = build(run_dir, out)
    assert RESET_MESSAGE in output
    assert "run_id" in columns(db_path, "int_train_steps_measured")
    assert "run_id" in columns(db_path, "int_gradients_checked")
    pd.testing.assert_frame_equal(findings(db_path), before)
    # (a build of an unchanged project drops nothing: test_warehouse.py's unchanged folder keeps
    # every row's DuckDB rowid)


def test_changed_project_drops_stale_columns(built: tuple[Path, Path, pd.DataFrame]) -> None:
    run_dir, out, before = built
    db_path = out / DB_NAME
    # a table with a column the current models no longer write, built by another project version
    with duckdb.connect(str(db_path)) as con:
        con.execute("alter table main.step_metrics add column retired_flag boolean")
        con.execute("update main.built_project set checksum = 'an older version'")
    output = build(run_dir, out)
    assert RESET_MESSAGE in output
    assert "retired_flag" not in columns(db_path, "step_metrics")
    pd.testing.assert_frame_equal(findings(db_path), before)
