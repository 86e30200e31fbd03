"""Many runs in one build (issue 14): every model carries run_id, runs built together give
exactly what each gives alone, and adding a run to a built warehouse processes only that
run's rows (the runs already built are neither read nor rewritten).

The runs "together" are the session's shared fixture build (conftest.py: these three among every
module's fixture runs, in one build). "Alone" is a warehouse grown one run at a time: each build
adds one run, and an incremental build processes only the run that is new, so each run's rows are
computed with no other run's in the batch, while the runs built before are left as they were.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from run_diagnosis.dbt_runner import BuildResult, build_run
from support.dbt_session import DB_NAME, THREADS, FixtureRuns, MakeRun
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


def warehouse_runs() -> dict[str, RunBuilder]:
    """Three runs that differ in every way the models partition by: one clean, one whose
    optimizer ran the LR 4x above the config, one that crashed and replayed
    steps without clipping after the resume. Same shard ids, steps and eval steps in all three,
    so a join or window missing run_id mixes them."""
    return {
        "warehouse-clean": RunBuilder(seed=3),
        "warehouse-lr-4x": RunBuilder(seed=5).plant_lr_scale(4.0),
        "warehouse-replayed": RunBuilder(seed=9).plant_restart(
            crash_after=150, resume_from=120, unclipped_after=True
        ),
    }


def warehouse_run(name: str) -> RunBuilder:
    return warehouse_runs()[name]


# built with every other module's fixture runs in the session's shared build: "together"
FIXTURE_RUNS: dict[str, MakeRun] = {name: functools.partial(warehouse_run, name) for name in warehouse_runs()}
CLEAN, LR_4X, REPLAYED = warehouse_runs()


def build(run_dir: Path, out: Path) -> BuildResult:
    result = build_run(run_dir, out / DB_NAME, out, exclude=EXCLUDE, threads=THREADS, check=False)
    assert result.ok, "\n".join(result.errors) or result.output[-3000:]
    return result


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


@dataclass(frozen=True)
class Grown:
    """A warehouse grown one run at a time: its database, its run folders, what each build said,
    and the rows and row ids of the runs already built just before each later build."""

    db_path: Path
    folder: Path
    outputs: list[str]
    marts_before: list[dict[str, dict[str, pd.DataFrame]]]
    ids_before: list[dict[str, pd.DataFrame]]


ROW_ID_TABLES = ("stg_training__steps", "findings", "step_metrics")


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> Grown:
    root = tmp_path_factory.mktemp("warehouse")
    folder, out = root / "runs", root / "build"
    runs = warehouse_runs()
    outputs: list[str] = []
    marts_before: list[dict[str, dict[str, pd.DataFrame]]] = []
    ids_before: list[dict[str, pd.DataFrame]] = []
    db_path = out / DB_NAME
    for name, builder in runs.items():
        if outputs:  # the runs built so far, as they are before this run is added
            built = list(runs)[: len(outputs)]
            marts_before.append({mart: {n: mart_rows(db_path, mart, n) for n in built} for mart in MARTS})
            ids_before.append({table: row_ids(db_path, table) for table in ROW_ID_TABLES})
        builder.write(folder / name)
        outputs.append(build(folder, out).output)
    return Grown(db_path, folder, outputs, marts_before, ids_before)


@pytest.mark.parametrize("mart", MARTS)
def test_runs_built_together_give_what_each_gives_alone(
    grown: Grown, fixture_runs: FixtureRuns, mart: str
) -> None:
    for name in warehouse_runs():
        alone = mart_rows(grown.db_path, mart, name)
        together = mart_rows(fixture_runs[name].db_path, mart, name)
        assert len(alone) > 0 or mart == "findings", f"{mart} is empty for {name}: the test could not fail"
        pd.testing.assert_frame_equal(together, alone, check_dtype=False, obj=f"{mart} of run {name}")


def test_the_runs_really_differ(grown: Grown) -> None:
    """The comparison above means something only if the runs' findings differ."""
    categories = {
        name: set(mart_rows(grown.db_path, "findings", name)["category"]) for name in warehouse_runs()
    }
    assert "lr_above_peak" in categories[LR_4X] and "lr_above_peak" not in categories[CLEAN]
    assert "run_restart" in categories[REPLAYED] and "run_restart" not in categories[CLEAN]


def test_every_model_carries_run_id(grown: Grown) -> None:
    with duckdb.connect(str(grown.db_path), read_only=True) as con:
        tables = con.execute(
            "select table_name from information_schema.tables where table_schema = 'main' "
            "and table_name not in ('run_batch', 'built_runs', 'built_project') "
            "and table_name not like 'anthropic_%' "
            "and table_name not in "
            "(select table_name from information_schema.columns where column_name = 'run_id')"
        ).df()["table_name"]
        seeds = {p.stem for p in SEEDS.rglob("*.csv")}
    assert sorted(set(tables) - seeds) == sorted(ACROSS_RUNS | OF_NO_RUN)


def test_adding_a_run_processes_only_its_rows(grown: Grown) -> None:
    runs = list(warehouse_runs())
    for added, output in enumerate(grown.outputs[1:], start=1):
        assert f"incremental build: 1 of {added + 1} run(s) new or changed" in output
        before = grown.ids_before[added - 1]
        for table, ids in before.items():
            after = row_ids(grown.db_path, table)
            old = after[after["run_id"].isin(runs[:added])].reset_index(drop=True)
            pd.testing.assert_frame_equal(
                old, ids, check_dtype=False, obj=f"{table}: rows of the runs already built"
            )
            new = after[after["run_id"] == runs[added]]
            # written after every row already there (a table may hold none yet: the clean run's findings)
            assert len(new) == 1 and (ids.empty or int(new["first_row"].iloc[0]) > int(ids["last_row"].max()))
        for mart, by_run in grown.marts_before[added - 1].items():
            for name, rows in by_run.items():
                pd.testing.assert_frame_equal(
                    mart_rows(grown.db_path, mart, name), rows, obj=f"{mart} of {name}"
                )


def test_an_unchanged_warehouse_rebuilds_nothing_and_a_grown_log_only_its_run(
    grown: Grown, tmp_path: Path
) -> None:
    # nothing new: nothing is rebuilt; a run whose log grew is rebuilt, alone. The last test of the
    # module: it changes the grown warehouse
    out = grown.db_path.parent
    result = build_run(grown.folder, grown.db_path, out, exclude=EXCLUDE, threads=THREADS, check=False)
    assert "incremental build: 0 of 3 run(s) new or changed" in result.output
    last_step = int(mart_rows(grown.db_path, "run_summary", CLEAN)["last_step"].iloc[0])
    train_log = next((grown.folder / CLEAN).glob("*train_log.csv"))
    lines = train_log.read_text().splitlines()
    train_log.write_text("\n".join(lines[:-40]) + "\n")  # the same run, 40 steps earlier
    result = build_run(grown.folder, grown.db_path, out, exclude=EXCLUDE, threads=THREADS, check=False)
    assert result.ok and "incremental build: 1 of 3 run(s) new or changed" in result.output
    assert int(mart_rows(grown.db_path, "run_summary", CLEAN)["last_step"].iloc[0]) == last_step - 40
