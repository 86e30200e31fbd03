"""Many runs in one build (issue 14): every model carries run_id, runs built together give
exactly what each gives alone, and adding a run to a built warehouse processes only that
run's rows (the runs already built are neither read nor rewritten)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from run_diagnosis.dbt_runner import build_run
from support.dbt_session import DB_NAME, THREADS
from support.paths import SEEDS
from support.run_builder import RunBuilder

# the marts a report reads, compared run by run (every column but run_id)
MARTS = ("findings", "run_summary", "check_coverage", "audit_summary", "step_metrics", "eval_metrics")
ORDER = {
    "findings": "finding_id",
    "run_summary": "run_id",
    "check_coverage": "category",
    "audit_summary": "file_kind, outcome, reason",
    "step_metrics": "train_row_id",
    "eval_metrics": "step, is_counted",
}
# the models only: what is compared is the marts (no model reads a test's result), and data
# tests on a run's rows are the same tests whether it is built alone or with others
EXCLUDE = "path:seeds/anthropic_* resource_type:test resource_type:unit_test"
# the marts that describe the fleet as a whole (a category across runs): keyed by category
ACROSS_RUNS = {"recurring_findings", "recurring_finding_hyperparameters"}
OF_NO_RUN = {"check_catalog"}  # one row a finding category, from the check folders' metadata


def fixture_runs() -> dict[str, RunBuilder]:
    """Three runs that differ in every way the models partition by: one clean, one whose
    optimizer ran the LR 4x above the config, one that crashed and replayed
    steps without clipping after the resume. Same shard ids, steps and eval steps in all three,
    so a join or window missing run_id mixes them."""
    return {
        "clean": RunBuilder(seed=3),
        "lr-4x": RunBuilder(seed=5).plant_lr_scale(4.0),
        "replayed": RunBuilder(seed=9).plant_restart(crash_after=150, resume_from=120, unclipped_after=True),
    }


def build(run_dir: Path, out: Path) -> Path:
    result = build_run(run_dir, out / DB_NAME, out, exclude=EXCLUDE, threads=THREADS, check=False)
    assert result.ok, "\n".join(result.errors) or result.output[-3000:]
    return result.db_path


def mart_rows(db_path: Path, mart: str, run_id: str) -> pd.DataFrame:
    with duckdb.connect(str(db_path), read_only=True) as con:
        frame = con.execute(
            f"select * exclude (run_id) from main.{mart} where run_id = ? order by {ORDER[mart]}", [run_id]
        ).df()
    return frame.reset_index(drop=True)


def row_ids(db_path: Path, table: str) -> pd.DataFrame:
    """DuckDB's rowid of every row by run: a row deleted and written again gets a new one."""
    with duckdb.connect(str(db_path), read_only=True) as con:
        return con.execute(
            f"select run_id, min(rowid) as first_row, max(rowid) as last_row, count(*) as n "
            f"from main.{table} group by run_id order by run_id"
        ).df()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each run built alone, then all of them built together in one folder of run folders."""
    root = tmp_path_factory.mktemp("warehouse")
    together = root / "runs"
    built: dict[str, Path] = {}
    for name, builder in fixture_runs().items():
        builder.write(together / name)
        alone = root / "alone" / name
        builder.write(alone / name)
        built[name] = build(alone / name, root / "builds" / name)
    built["together"] = build(together, root / "builds" / "together")
    return built


@pytest.mark.parametrize("mart", MARTS)
def test_runs_built_together_give_what_each_gives_alone(warehouse: dict[str, Path], mart: str) -> None:
    for name in fixture_runs():
        alone = mart_rows(warehouse[name], mart, name)
        together = mart_rows(warehouse["together"], mart, name)
        assert len(alone) > 0 or mart == "findings", f"{mart} is empty for {name}: the test could not fail"
        pd.testing.assert_frame_equal(together, alone, check_dtype=False, obj=f"{mart} of run {name}")


def test_the_runs_really_differ(warehouse: dict[str, Path]) -> None:
    """The comparison above means something only if the runs' findings differ."""
    categories = {
        name: set(mart_rows(warehouse["together"], "findings", name)["category"]) for name in fixture_runs()
    }
    assert "lr_above_peak" in categories["lr-4x"] and "lr_above_peak" not in categories["clean"]
    assert "run_restart" in categories["replayed"] and "run_restart" not in categories["clean"]


def test_every_model_carries_run_id(warehouse: dict[str, Path]) -> None:
    with duckdb.connect(str(warehouse["together"]), read_only=True) as con:
        tables = con.execute(
            "select table_name from information_schema.tables where table_schema = 'main' "
            "and table_name not in ('run_batch', 'built_runs', 'built_project') "
            "and table_name not like 'anthropic_%' "
            "and table_name not in "
            "(select table_name from information_schema.columns where column_name = 'run_id')"
        ).df()["table_name"]
        seeds = {p.stem for p in SEEDS.rglob("*.csv")}
    assert sorted(set(tables) - seeds) == sorted(ACROSS_RUNS | OF_NO_RUN)


def test_adding_a_run_processes_only_its_rows(tmp_path: Path) -> None:
    runs = fixture_runs()
    folder, out = tmp_path / "runs", tmp_path / "build"
    for name in ("clean", "lr-4x"):
        runs[name].write(folder / name)
    db_path = build(folder, out)
    before = {mart: {n: mart_rows(db_path, mart, n) for n in ("clean", "lr-4x")} for mart in MARTS}
    ids_before = {t: row_ids(db_path, t) for t in ("stg_training__steps", "findings", "step_metrics")}

    runs["replayed"].write(folder / "replayed")
    result = build_run(folder, out / DB_NAME, out, exclude=EXCLUDE, threads=THREADS, check=False)
    assert result.ok, "\n".join(result.errors)
    assert "incremental build: 1 of 3 run(s) new or changed" in result.output

    for table, ids in ids_before.items():
        after = row_ids(db_path, table)
        old = after[after["run_id"] != "replayed"].reset_index(drop=True)
        pd.testing.assert_frame_equal(old, ids, obj=f"{table}: rows of the runs already built")
        new = after[after["run_id"] == "replayed"]
        assert len(new) == 1 and int(new["first_row"].iloc[0]) > int(ids["last_row"].max())
    for mart in MARTS:
        for name, rows in before[mart].items():
            pd.testing.assert_frame_equal(mart_rows(db_path, mart, name), rows, obj=f"{mart} of {name}")
    assert "run_restart" in set(mart_rows(db_path, "findings", "replayed")["category"])

    # nothing new: nothing is rebuilt; a run whose log grew is rebuilt, alone
    result = build_run(folder, out / DB_NAME, out, exclude=EXCLUDE, threads=THREADS, check=False)
    assert "incremental build: 0 of 3 run(s) new or changed" in result.output
    train_log = next((folder / "clean").glob("*train_log.csv"))
    lines = train_log.read_text().splitlines()
    shutil.copy(train_log, tmp_path / "train_log.bak")
    train_log.write_text("\n".join(lines[:-40]) + "\n")  # the same run, 40 steps earlier
    result = build_run(folder, out / DB_NAME, out, exclude=EXCLUDE, threads=THREADS, check=False)
    assert result.ok and "incremental build: 1 of 3 run(s) new or changed" in result.output
    summary = mart_rows(db_path, "run_summary", "clean")
    assert int(summary["last_step"].iloc[0]) == int(before["run_summary"]["clean"]["last_step"].iloc[0]) - 40
