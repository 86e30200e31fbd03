"""Fleet marts (issue 14): several runs in one build, each compared with the baseline it names.

Three fixture runs built together: a healthy baseline; a copy of it (same seed) that names it as
its baseline, whose loss departs from step 150 (+25% by step 180), whose steps are 30% slower
from step 100 and which has a loss spike of its own at step 60; and a copy with another seed
(another shard order) that names the baseline too and must stay within its noise. Then the same
diverged run built alone, and the real Lightning sweep (../shared/real-logs, 40 trials), every
trial naming version_0 as its baseline.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from run_diagnosis import multi_run
from run_diagnosis.dbt_runner import read_run_results
from run_diagnosis.importers.canonical import write_run
from support.dbt_session import DbtSession, Diagnosis, FixtureRuns, MakeRun
from support.paths import REAL_LOGS
from support.run_builder import RunBuilder

BASELINE, DIVERGED, CLEAN = "baseline", "diverged", "clean-seed"
DIVERGE_FROM, DIVERGE_RAMP, DIVERGE_EXCESS = 150, 30, 0.25
SLOW_FROM, SLOW_FACTOR = 100, 1.3
SPIKE_AT = 60
BASELINE_CATEGORIES = ("baseline_divergence", "baseline_slowdown")

SWEEP = REAL_LOGS / "lightning-slm-sweep"
SWEEP_BASELINE = "version_0"


def plant_divergence(builder: RunBuilder, first: int, ramp: int, excess: float) -> RunBuilder:
    """Training and validation loss rise from `first`, reaching +excess (relative) `ramp` steps later."""
    for frame, column in ((builder.train, "loss"), (builder.evals, "val_loss")):
        rise = np.clip((frame["step"].to_numpy() - first) / ramp, 0, 1)
        frame[column] = frame[column] * (1 + excess * rise)
    return builder


def fleet_runs() -> dict[str, RunBuilder]:
    diverged = RunBuilder(seed=7).plant_config(baseline_run_id=BASELINE)
    plant_divergence(diverged, DIVERGE_FROM, DIVERGE_RAMP, DIVERGE_EXCESS)
    diverged.plant_slow_stretch(SLOW_FROM, diverged.total_steps, SLOW_FACTOR)
    diverged.plant_loss_spike(SPIKE_AT, 3, 3.0)  # a problem of its own, found with or without the baseline
    return {
        BASELINE: RunBuilder(seed=7),
        DIVERGED: diverged,
        CLEAN: RunBuilder(seed=8).plant_config(baseline_run_id=BASELINE),
    }


# the three runs again, under the session's build with the structural tests (conftest.py), which
# then hold on the comparison marts too; the fleet build below needs only the models and the
# anomaly tests (the fleet-wide marts count the runs of their build: it holds these three alone)
STRUCTURAL_COPIES = {BASELINE: BASELINE, DIVERGED: "fleet-diverged", CLEAN: "fleet-clean-seed"}
FIXTURE_RUNS_STRUCTURAL = set(STRUCTURAL_COPIES.values())


@pytest.fixture(scope="module")
def fleet(dbt_session: DbtSession, tmp_path_factory: pytest.TempPathFactory) -> Diagnosis:
    folder = tmp_path_factory.mktemp("fleet")
    for name, builder in fleet_runs().items():
        builder.write(folder / name)
    diagnosis = dbt_session.build(folder)
    assert diagnosis.success, diagnosis.output[-3000:]
    return diagnosis


def by_run(frame: pd.DataFrame) -> dict[str, dict]:
    return {row["run_id"]: row for row in frame.to_dict("records")}


def primary_comparisons(diagnosis: Diagnosis) -> dict[str, dict]:
    return by_run(diagnosis.query("select * from main.run_comparisons where is_primary_axis"))


def test_runs_has_one_row_per_run_with_its_baseline(fleet: Diagnosis) -> None:
    runs = by_run(fleet.table("runs"))
    assert set(runs) == {BASELINE, DIVERGED, CLEAN}
    assert pd.isna(runs[BASELINE]["baseline_run_id"]) and not runs[BASELINE]["is_baseline_in_build"]
    for name in (DIVERGED, CLEAN):
        assert runs[name]["baseline_run_id"] == BASELINE and runs[name]["is_baseline_in_build"]
        assert runs[name]["steps_counted"] == 240
    # the diverged run's worst problem is its divergence, and it is the one to fix first
    assert runs[DIVERGED]["worst_severity"] in ("high", "critical")
    assert runs[DIVERGED]["fix_first_category"] == "baseline_divergence"
    assert runs[DIVERGED]["final_val_loss"] > runs[BASELINE]["final_val_loss"] * 1.2
    for row in runs.values():
        counts = sum(row[f"n_{s}"] for s in ("critical", "high", "medium", "low", "info"))
        assert counts == row["n_findings"]


def test_diverged_run_departs_beyond_noise_and_is_slower(fleet: Diagnosis) -> None:
    both_axes = fleet.query(f"select * from main.run_comparisons where run_id = '{DIVERGED}'")
    assert sorted(both_axes["align_axis"]) == ["step", "tokens"]  # both configs give batch_size
    comparison = primary_comparisons(fleet)[DIVERGED]
    assert comparison["align_axis"] == "tokens"
    # planted from step 150, +25% by 180: seen while it ramps up, and still there at the end
    assert DIVERGE_FROM <= comparison["divergence_step"] <= DIVERGE_FROM + DIVERGE_RAMP
    assert comparison["is_departing_at_end"]
    assert comparison["end_loss_delta"] > 0.5
    assert comparison["final_val_loss_delta"] > 0.5
    # 30% slower per step from step 100, found within half the smoothing window
    assert SLOW_FROM <= comparison["slowdown_step"] <= SLOW_FROM + 15
    assert comparison["slowdown_ratio"] == pytest.approx(SLOW_FACTOR, abs=0.03)
    # same schedule, same gradients: only the loss and the step time differ
    assert comparison["lr_differing_share"] == 0
    assert comparison["grad_norm_ratio"] == pytest.approx(1.0, abs=0.01)


def test_clean_seed_stays_within_the_baselines_noise(fleet: Diagnosis) -> None:
    comparison = primary_comparisons(fleet)[CLEAN]
    assert comparison["compared_points"] > 200
    assert pd.isna(comparison["divergence_step"])
    assert pd.isna(comparison["slowdown_step"])
    assert comparison["step_time_ratio"] == pytest.approx(1.0, abs=0.05)


def test_divergence_findings(fleet: Diagnosis) -> None:
    found = fleet.query(
        "select run_id, finding_id, category, severity, ledger, first_step, title, compute_seconds_lost "
        f"from main.findings where category in {BASELINE_CATEGORIES}"
    )
    assert set(found["run_id"]) == {DIVERGED}, found
    rows = {row["category"]: row for row in found.to_dict("records")}
    divergence, slowdown = rows["baseline_divergence"], rows["baseline_slowdown"]
    assert divergence["ledger"] == "model" and divergence["severity"] in ("high", "critical")
    assert divergence["finding_id"] == f"baseline_divergence:{divergence['first_step']}"
    assert f"Diverges from its baseline {BASELINE} at step {divergence['first_step']}" in divergence["title"]
    assert slowdown["ledger"] == "compute" and slowdown["severity"] in ("low", "medium")
    assert "30.0% slower per step than its baseline" in slowdown["title"]
    assert slowdown["compute_seconds_lost"] > 0
    # the anomaly tests on the detector report it
    failing = fleet.failing_tests()
    assert failing.get("loss_diverges_from_baseline") == 1
    assert failing.get("step_time_slower_than_baseline") == 1


def test_recurring_findings_across_runs(fleet: Diagnosis) -> None:
    recurring = fleet.table("recurring_findings").set_index("category")
    assert recurring.loc["baseline_divergence", "runs_hit"] == 1
    assert recurring.loc["baseline_divergence", "run_ids_hit"] == DIVERGED
    assert recurring.loc["baseline_divergence", "share_of_runs"] == pytest.approx(1 / 3)
    assert (recurring["n_runs"] == 3).all()
    # the fixture runs share every numeric config field: no hyperparameter goes with anything
    assert fleet.table("recurring_finding_hyperparameters").empty


# the diverged run again, in the session's build of fixture runs (conftest.py), where no run is
# its baseline; and the structural copies
FIXTURE_RUNS: dict[str, MakeRun] = {
    DIVERGED: lambda: fleet_runs()[DIVERGED],
    **{
        copy: functools.partial(lambda name: fleet_runs()[name], name)
        for name, copy in STRUCTURAL_COPIES.items()
    },
}


def test_the_fleet_runs_hold_the_structural_tests(fixture_runs: FixtureRuns) -> None:
    """Built with the structural tests, with their baseline: the build succeeded, and the diverged
    copy was compared with its baseline there too."""
    diverged = fixture_runs[STRUCTURAL_COPIES[DIVERGED]]
    assert diverged.success, diverged.errors
    ran = {str(result["unique_id"]) for result in read_run_results(diverged.target_path)}
    assert any(node.startswith("test.run_diagnosis.not_null_run_comparisons") for node in ran)
    assert primary_comparisons(diverged)[diverged.run_id]["divergence_step"] >= DIVERGE_FROM


def test_run_built_without_its_baseline(fleet: Diagnosis, fixture_runs: FixtureRuns) -> None:
    """Without its baseline, the diverged run names a baseline that is not in the build: no
    comparison and no baseline finding; every other finding is the one it has in the fleet build."""
    alone = fixture_runs[DIVERGED]
    assert alone.success, alone.output[-3000:]
    assert BASELINE not in {path.name for path in alone.folder.parent.iterdir()}
    runs = by_run(alone.table("runs"))
    assert list(runs) == [DIVERGED]
    assert runs[DIVERGED]["baseline_run_id"] == BASELINE and not runs[DIVERGED]["is_baseline_in_build"]
    assert alone.table("run_comparisons").empty
    columns = "finding_id, category, severity, title, evidence, first_step, last_step"
    where = f"where run_id = '{DIVERGED}' and category not in {BASELINE_CATEGORIES} order by finding_id"
    together = fleet.query(f"select {columns} from main.findings {where}")
    assert "loss_spikes" in set(together["category"])
    assert set(alone.query("select category from main.findings")["category"]).isdisjoint(BASELINE_CATEGORIES)
    pd.testing.assert_frame_equal(alone.query(f"select {columns} from main.findings {where}"), together)


@pytest.mark.real_logs
@pytest.mark.skipif(not SWEEP.is_dir(), reason=f"{SWEEP} is absent: the real logs are not here")
def test_real_sweep_against_its_baseline(dbt_session: DbtSession, tmp_path: Path) -> None:
    """The 40-trial Lightning sweep in one build, every trial against version_0 (lr 5.3e-5, 20 epochs)."""
    sources = multi_run.find_runs(SWEEP)
    assert len(sources) == 40
    for source in sources:
        run = source.load()
        if source.name != SWEEP_BASELINE:
            run.config["baseline_run_id"] = SWEEP_BASELINE
        write_run(run, tmp_path / "runs" / source.name)
    diagnosis = dbt_session.build(tmp_path / "runs")
    assert diagnosis.success, diagnosis.output[-3000:]

    runs = by_run(diagnosis.table("runs"))
    assert len(runs) == 40
    assert sum(bool(row["is_baseline_in_build"]) for row in runs.values()) == 39
    lr = by_run(diagnosis.query("select run_id, peak_lr from main.stg_training__config"))
    baseline_lr = lr[SWEEP_BASELINE]["peak_lr"]
    comparisons = primary_comparisons(diagnosis)
    assert len(comparisons) == 39
    diverged = {run for run, row in comparisons.items() if not pd.isna(row["divergence_step"])}
    # the five trials at half the baseline's LR or less learn too slowly: they end 0.4-0.9 nats
    # above it, and their validation loss too
    too_low = {run for run in comparisons if lr[run]["peak_lr"] <= baseline_lr * 0.55}
    assert len(too_low) == 5 and too_low <= diverged
    assert all(comparisons[run]["final_val_loss_delta"] > 0.2 for run in too_low)
    # trials between those and the high-LR trials that were pruned do not diverge (most end below it)
    middle = {run for run in comparisons if baseline_lr * 0.8 <= lr[run]["peak_lr"] <= 3e-4}
    assert len(middle) >= 20 and not middle & diverged
    # version_26 (lr 6.3e-4) stalls 1.5 nats above the baseline over 2,295 steps
    assert "version_26" in diverged
    findings = diagnosis.query("select run_id from main.findings where category = 'baseline_divergence'")
    assert set(findings["run_id"]) == diverged
    # the divergence goes with both ends of the LR range: its range overlaps the others' ...
    recurring = diagnosis.table("recurring_finding_hyperparameters").set_index(["category", "field_name"])
    peak_lr = recurring.loc[("baseline_divergence", "peak_lr")]
    assert peak_lr["min_value_hit"] < baseline_lr < peak_lr["max_value_hit"]
    assert peak_lr["hit_range_position"] == "overlapping"
    # ... but mostly with the low end: five of the six runs hit are the too-low-LR trials
    assert peak_lr["median_value_hit"] < baseline_lr < peak_lr["median_value_not_hit"]
