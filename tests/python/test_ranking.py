"""Ranking by cost: a costly problem ranks above a cheap one (in its ledger, with
severity never rising down the ranking), a symptom sits below its cause, and the
closing report of a clean run says nothing is wrong above low."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from run_diagnosis.report import write_report
from support.dbt_session import Diagnosis, fixture_run
from support.run_builder import RunBuilder


def ranked(diagnosis: Diagnosis) -> list[str]:
    return diagnosis.findings()["finding_id"].tolist()


@pytest.mark.parametrize(
    ("plant", "strong", "weak"),
    [
        (lambda b: b.plant_lr_scale(6.0).plant_stall(70, 6), "lr_above_peak:run", "slow_steps:stalls"),
        (
            # one unclipped step that validation never sees costs ~nothing; overfitting costs final - best
            lambda b: b.plant_overfitting(100, 0.08).plant_clip_violation(60, 60, 1.2),
            "overfitting:100",
            "grad_clip_violation:60",
        ),
        (
            lambda b: b.plant_slow_stretch(100, 160, 8.0).plant_loss_spike(40, 1, 1.8),
            "slow_steps:100",
            "loss_spikes:40",
        ),
    ],
)
@fixture_run(lambda plant: plant(RunBuilder()))
def test_strong_problem_ranks_above_weak_one(diagnosis: Diagnosis, plant, strong: str, weak: str) -> None:
    order = ranked(diagnosis)
    assert strong in order and weak in order, order
    assert order.index(strong) < order.index(weak)
    summary = diagnosis.table("run_summary").iloc[0]
    assert summary["fix_first_finding_id"] == strong


@fixture_run(lambda: RunBuilder().plant_bad_shard(3.0)[0])
def test_symptom_ranks_below_its_cause_even_when_larger(diagnosis: Diagnosis) -> None:
    _, shard = RunBuilder().plant_bad_shard(3.0)
    findings = diagnosis.findings().set_index("finding_id")
    cause = f"bad_data_shard:{shard}"
    symptoms = findings[findings["caused_by"] == cause]
    assert not symptoms.empty
    assert (symptoms["harm_rank"] > findings.loc[cause, "harm_rank"]).all()
    assert findings.loc[cause, "harm_score"] >= symptoms["harm_score"].max()
    assert not symptoms["is_root_cause"].any()


def test_clean_run_report_says_nothing_above_low(clean_run: Diagnosis, tmp_path: Path) -> None:
    paths = write_report(clean_run.db_path, clean_run.target_path, tmp_path, progress=None)
    markdown = paths["markdown"].read_text()
    assert "Nothing serious found: no finding above low severity." in markdown
    assert json.loads(paths["findings"].read_text()) == []


@fixture_run(lambda: RunBuilder().plant_lr_scale(3.0).plant_restart(130, 100, unclipped_after=True))
def test_report_ranks_findings_json_like_the_mart(diagnosis: Diagnosis, tmp_path: Path) -> None:
    paths = write_report(
        diagnosis.db_path, diagnosis.target_path, tmp_path, progress=None, run_id=diagnosis.run_id
    )
    findings = json.loads(paths["findings"].read_text())
    assert [f["finding_id"] for f in findings] == ranked(diagnosis)
    assert [f["rank"] for f in findings] == list(range(1, len(findings) + 1))
    assert findings[0]["finding_id"] == "lr_above_peak:run"
    markdown = paths["markdown"].read_text()
    assert "beats the runner-up" in markdown
