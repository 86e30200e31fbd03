"""Why a check fired and how close the others came (docs/margins.md): the limit every threshold
finding carries (findings.threshold_value / threshold_name), the check_margins mart, and the
report's "Near misses" section and margins.json, on fixture runs with the LR planted just under
and just over its tolerance, a run with several problems planted, and the clean run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from run_diagnosis.project import thresholds
from run_diagnosis.report import write_report
from support.dbt_session import Diagnosis, fixture_run
from support.run_builder import RunBuilder

THRESHOLDS = thresholds(Path(__file__).resolve().parents[2])
TOLERANCE = THRESHOLDS["lr_relative_tolerance"].value
NEAR_MISS = THRESHOLDS["near_miss_min_margin"].value
CLIP_TOLERANCE = THRESHOLDS["clip_tolerance"].value
PEAK_LR = RunBuilder.peak_lr
# a run's statistics: every one is present on every run (the config is the spine)
STATISTICS = {
    "lr_above_peak:max_lr_ratio_to_peak",
    "grad_clip_violation:max_grad_norm_ratio_to_clip",
    "loss_spikes:max_share_of_spike_bar_excess",
    "loss_spikes:loss_jumps_at_resume",
    "loss_spikes:epoch_loss_jumps",
    "slow_steps:longest_slow_run_steps",
    "slow_steps:worst_stall_medians_lost",
    "overfitting:final_rise_over_minimum",
    "overfitting:sustained_rise_share",
    "overfitting:accuracy_gap_to_training",
    "nan_loss:non_finite_steps",
    "nan_loss:loss_scale_overflow_events",
    "nan_loss:non_finite_eval_losses",
    "step_sequence:replayed_rows",
    "step_sequence:exact_duplicate_rows",
    "step_sequence:out_of_order_rows",
}
# the LR used up 90% of its tolerance above the peak: under the limit, above near_miss_min_margin
UNDER_FACTOR = 1 + (NEAR_MISS + (1 - NEAR_MISS) / 2) * TOLERANCE
OVER_FACTOR = 1 + 2 * TOLERANCE


def margins(diagnosis: Diagnosis) -> pd.DataFrame:
    return diagnosis.table("check_margins").set_index("margin_id")


def report(diagnosis: Diagnosis, out: Path) -> dict[str, Path]:
    return write_report(diagnosis.db_path, diagnosis.target_path, out, None, diagnosis.run_id)


def near_miss_section(markdown: str) -> str:
    """The "Near misses" section of report.md, up to the next heading."""
    assert "### Near misses" in markdown
    return markdown.split("### Near misses", 1)[1].split("\n#", 1)[0]


def fired_agrees_with_findings(diagnosis: Diagnosis) -> None:
    """has_fired (over a check's statistics sharing a finding-id pattern) is true exactly when the
    findings mart has a finding with such an id (what tests/check_margins_agree_with_findings.sql
    checks in SQL)."""
    rows = margins(diagnosis).reset_index()
    ids = diagnosis.findings()["finding_id"].tolist()
    for pattern, group in rows.groupby("finding_id_pattern"):
        prefix = pattern.removesuffix("%")
        found = any(i.startswith(prefix) if pattern.endswith("%") else i == pattern for i in ids)
        assert bool(group["has_fired"].any()) == found, (pattern, ids, group.to_dict("records"))
    assert not (rows["is_near_miss"] & rows["has_check_fired"]).any()  # a check that fired has no near miss


def limits_are_crossed(diagnosis: Diagnosis) -> None:
    """Every finding that names a limit has its observed value at or past it, and a var name."""
    limited = diagnosis.findings().dropna(subset=["threshold_value"])
    assert limited["threshold_name"].notna().all(), limited[["finding_id", "threshold_name"]]
    assert THRESHOLDS.keys() >= set(limited["threshold_name"]), set(limited["threshold_name"])
    beyond = limited["observed_value"] >= limited["threshold_value"] * (1 - 1e-9)
    assert beyond.all(), limited.loc[~beyond, ["finding_id", "observed_value", "threshold_value"]]


@fixture_run(lambda: RunBuilder().plant_lr_scale(UNDER_FACTOR))
def test_lr_just_under_its_tolerance_is_a_near_miss(diagnosis: Diagnosis, tmp_path: Path) -> None:
    assert (diagnosis.findings()["category"] == "lr_above_peak").sum() == 0
    row = margins(diagnosis).loc["lr_above_peak:max_lr_ratio_to_peak"]
    assert row["observed_value"] == pytest.approx(UNDER_FACTOR, rel=1e-6)
    assert row["threshold_value"] == pytest.approx(1 + TOLERANCE)
    assert row["threshold_name"] == "lr_relative_tolerance"
    assert row["margin"] == pytest.approx((UNDER_FACTOR - 1) / TOLERANCE, rel=1e-4)
    assert not row["has_fired"] and row["is_near_miss"]
    assert set(margins(diagnosis).index) == STATISTICS
    fired_agrees_with_findings(diagnosis)
    paths = report(diagnosis, tmp_path)
    section = near_miss_section(paths["markdown"].read_text(encoding="utf-8"))
    expected = "- lr_above_peak: max_lr_ratio_to_peak 1.045 against the limit 1.05 (lr_relative_tolerance)"
    assert expected in section
    html = paths["html"].read_text(encoding="utf-8")
    assert "Near misses</h3>" in html and "lr_above_peak: max_lr_ratio_to_peak" in html
    written = {m["margin_id"]: m for m in json.loads(paths["margins"].read_text(encoding="utf-8"))}
    assert set(written) == STATISTICS
    assert written["lr_above_peak:max_lr_ratio_to_peak"]["is_near_miss"] is True


@fixture_run(lambda: RunBuilder().plant_lr_scale(OVER_FACTOR))
def test_lr_over_its_tolerance_fires_with_its_limit(diagnosis: Diagnosis, tmp_path: Path) -> None:
    found = diagnosis.findings().query("category == 'lr_above_peak'")
    assert len(found) == 1
    finding = found.iloc[0]
    assert finding["observed_value"] == pytest.approx(PEAK_LR * OVER_FACTOR, rel=1e-6)
    assert finding["threshold_value"] == pytest.approx(PEAK_LR * (1 + TOLERANCE))
    assert finding["threshold_name"] == "lr_relative_tolerance"
    assert finding["expected_value"] == pytest.approx(PEAK_LR)  # the existing columns keep their values
    row = margins(diagnosis).loc["lr_above_peak:max_lr_ratio_to_peak"]
    assert row["has_fired"] and not row["is_near_miss"]
    assert row["margin"] >= 1
    assert row["margin"] == pytest.approx((OVER_FACTOR - 1) / TOLERANCE, rel=1e-4)
    fired_agrees_with_findings(diagnosis)
    limits_are_crossed(diagnosis)
    paths = report(diagnosis, tmp_path)
    assert "lr_above_peak" not in near_miss_section(paths["markdown"].read_text(encoding="utf-8"))
    html = paths["html"].read_text(encoding="utf-8")
    assert "against the limit 0.00315 (lr_relative_tolerance)" in html
    findings_json = json.loads(paths["findings"].read_text(encoding="utf-8"))
    lr = next(f for f in findings_json if f["category"] == "lr_above_peak")
    assert lr["threshold_name"] == "lr_relative_tolerance"
    assert lr["threshold_value"] == pytest.approx(PEAK_LR * (1 + TOLERANCE))


@fixture_run(
    lambda: (
        RunBuilder()
        .plant_clip_violation(120, 126, 1.6)
        .plant_loss_spike(60, 3, 3.0)
        .plant_stall(205, 9.0)
        .plant_nan([230])
    )
)
def test_fired_checks_agree_with_the_findings(diagnosis: Diagnosis) -> None:
    rows = margins(diagnosis)
    for statistic in (
        "grad_clip_violation:max_grad_norm_ratio_to_clip",
        "loss_spikes:max_share_of_spike_bar_excess",
        "slow_steps:worst_stall_medians_lost",
        "nan_loss:non_finite_steps",
    ):
        assert rows.loc[statistic, "has_fired"], statistic
        assert rows.loc[statistic, "margin"] >= 1, statistic
    assert rows.loc["nan_loss:non_finite_steps", "observed_value"] == 1
    assert not rows.loc["lr_above_peak:max_lr_ratio_to_peak", "has_fired"]
    fired_agrees_with_findings(diagnosis)
    limits_are_crossed(diagnosis)
    clip = diagnosis.findings().query("category == 'grad_clip_violation'").iloc[0]
    assert clip["threshold_name"] == "clip_tolerance"
    assert clip["threshold_value"] == pytest.approx(RunBuilder.grad_clip_norm * (1 + CLIP_TOLERANCE))
    spike = diagnosis.findings().query("category == 'loss_spikes'").iloc[0]
    bars = {"spike_n_mads", "spike_min_relative_excess", "spike_min_absolute_excess"}
    assert spike["threshold_name"] in bars
    assert spike["expected_value"] < spike["threshold_value"] < spike["observed_value"]
    nan = diagnosis.findings().query("category == 'nan_loss'").iloc[0]
    assert pd.isna(nan["threshold_value"]) and pd.isna(nan["threshold_name"])  # a count of events


def test_clean_run_has_no_near_miss(clean_run: Diagnosis, tmp_path: Path) -> None:
    rows = margins(clean_run)
    assert set(rows.index) == STATISTICS
    assert not rows["has_fired"].any()
    assert not rows["is_near_miss"].any()
    assert (rows["margin"].dropna() < NEAR_MISS).all(), rows[["observed_value", "margin"]]
    # the LR follows its schedule: it reaches the peak (margin 0), no further
    assert rows.loc["lr_above_peak:max_lr_ratio_to_peak", "margin"] == pytest.approx(0, abs=1e-6)
    paths = report(clean_run, tmp_path)
    assert near_miss_section(paths["markdown"].read_text(encoding="utf-8")).strip().endswith("- None.")
