"""The team's sample run (the seeds): the failing tests list every problem a
careful reader of the five files finds, each with its evidence, and the
committed diagnosis in analyses/ is the one the report produces today."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from run_diagnosis.report import write_report
from support.dbt_session import Diagnosis
from support.paths import REPO
from support.sample_build import sample_build
from support.severity_agreement import describe, disagreements


@pytest.fixture(scope="module")
def sample() -> Diagnosis:
    """The sample's `ci` build (every test), the one the committed diagnosis comes from:
    scripts/test.sh's, or made once here (sample_build.py)."""
    build = sample_build()
    diagnosis = Diagnosis(
        build.db_path.parent, build.db_path, build.target_path, build.output, build.ok, list(build.errors)
    )
    assert diagnosis.success, diagnosis.errors
    return diagnosis


def by_id(sample: Diagnosis) -> pd.DataFrame:
    return sample.findings().set_index("finding_id")


def test_every_problem_of_the_sample_is_found(sample: Diagnosis) -> None:
    found = set(by_id(sample).index)
    expected = {
        "lr_above_peak:run",
        "lr_schedule_mismatch:scaled_peak",
        "bad_data_shard:8",
        "loss_spikes:89",
        "loss_spikes:105",
        "run_restart:101",
        "grad_clip_violation:105",
        "slow_steps:160",
        "data_repetition:run",
        "step_sequence:replayed",
        "step_sequence:exact_duplicates",
        "step_sequence:out_of_order",
        "log_quality:accuracy_percent",
        "log_quality:eval_step_repeated",
        "log_quality:unknown_shard_ids",
        "log_quality:missing_step_time_sec",
        "log_quality:source_label_variants",
        "log_quality:duplicate_shard_rows",
    }
    assert expected <= found, expected - found
    assert not {"overfitting", "nan_loss", "no_learning", "eval_contamination"} & set(
        sample.findings()["category"]
    )


def test_fix_first_is_the_bad_shard_then_the_lr_their_ranges_overlapping(sample: Diagnosis) -> None:
    # measured by retraining: LR 0.198, shard 0.169, within each other's noise; estimated
    # 0.120 and 0.245 (docs/costing.md): the order is not settled, both must be fixed
    findings = by_id(sample)
    summary = sample.table("run_summary").iloc[0]
    assert summary["fix_first_finding_id"] == "bad_data_shard:8"
    assert summary["runner_up_finding_id"] == "lr_above_peak:run"
    assert summary["fix_first_ranges_overlap"]
    lr = findings.loc["lr_above_peak:run"]
    assert lr["observed_value"] == pytest.approx(0.024)
    assert "8.0x" in lr["title"]
    assert "data_parallel_workers = 8" in lr["evidence"]


def test_causes_and_symptoms_of_the_sample(sample: Diagnosis) -> None:
    findings = by_id(sample)
    assert findings.loc["loss_spikes:89", "caused_by"] == "bad_data_shard:8"
    assert pd.isna(
        findings.loc["grad_clip_violation:105", "caused_by"]
    )  # clipping lost on resume: its own root cause
    assert findings.loc["log_quality:eval_step_repeated", "caused_by"] == "run_restart:101"
    assert findings.loc["run_restart:101", "steps_affected"] == 37


def test_cleaned_numbers_of_the_sample(sample: Diagnosis) -> None:
    summary = sample.table("run_summary").iloc[0]
    assert (summary["steps_logged"], summary["steps_counted"]) == (278, 240)
    assert (summary["best_eval_step"], summary["best_val_loss"]) == (240, pytest.approx(3.09157))
    audit = sample.table("audit_summary")
    assert audit.groupby("file_kind")["n_rows"].sum().to_dict() == {
        "train": 278,
        "eval": 14,
        "shards": 13,
        "events": 8,
        "config": 1,
    }


def test_failing_tests_read_as_the_problem_list(sample: Diagnosis) -> None:
    failing = sample.failing_tests()
    assert set(failing) == {
        "learning_rate_above_configured_peak",
        "learning_rate_departs_from_configured_schedule",
        "data_shard_consistently_worse",
        "loss_spikes_above_robust_baseline",
        "run_crashed_and_resumed",
        "grad_norm_above_clip_norm",
        "step_time_slowdown",
        "data_seen_more_than_once",
        "step_sequence_not_monotonic",
        "logs_need_repair",
    }
    listed = " ".join(sample.output.split())
    assert "17 problem(s) above info severity in this run, worst first" in listed
    assert (
        "#1 HIGH bad_data_shard:8, steps 89-112: costs 0.245 (0.128 to 0.387) of final validation loss "
        "(7.9% of it)" in listed
    )
    assert "#5 MEDIUM slow_steps:160, steps 160-185: costs 17.7 s" in listed
    assert "INCOMPLETE" not in listed and "no anomaly test failed" not in listed


def test_severity_and_rank_agree_everywhere(sample: Diagnosis) -> None:
    """Every finding's final severity and rank are the same in the findings mart, the stored
    failures of its anomaly test, the problem list dbt printed, findings.json and report.md."""
    found = disagreements(sample.db_path, sample.target_path, sample.output, ["sample-run"], False)
    assert not found, describe(found)


def normalised(markdown: str) -> list[str]:
    """The report without the lines naming the database path and the build time."""
    volatile = ("From the marts in", "From dbt results generated at")
    return [line for line in markdown.splitlines() if not line.startswith(volatile)]


def test_committed_sample_diagnosis_is_current(sample: Diagnosis, tmp_path: Path) -> None:
    paths = write_report(sample.db_path, sample.target_path, tmp_path, progress=None)
    committed = (REPO / "analyses" / "sample_run_diagnosis.md").read_text()
    assert normalised(paths["markdown"].read_text()) == normalised(committed), (
        "analyses/sample_run_diagnosis.md is stale: run bash scripts/diagnose_sample.sh"
    )
