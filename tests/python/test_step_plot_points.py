"""The report reads the steps as its plots draw them (issue 22): the step_plot_points mart holds
every row of a short run and, of a long one, each pixel column's envelope of every plotted series
and every row drawn as a point, never every step row. A long run (30,000 steps, above
report_plot_all_rows_max) and a short one (240) are built; the long run's plots from the mart
must look like plots of every row (same axes, same points), and the report's check of
run_summary's counts must still count every row.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from run_diagnosis import report_plots
from run_diagnosis.project import thresholds
from run_diagnosis.report_content import build_double_check, step_row_counts
from run_diagnosis.report_data import ReportData, load_report_data
from run_diagnosis.report_plots import Plot
from run_diagnosis.report_story import PageOne, build_page_one
from support.dbt_session import Diagnosis, FixtureRuns, MakeRun
from support.run_builder import RunBuilder

LONG_STEPS = 30_000  # 33 steps a pixel column
FIXTURE_RUNS: dict[str, MakeRun] = {
    "plot-points-long": lambda: (
        RunBuilder(
            total_steps=LONG_STEPS, n_shards=LONG_STEPS // 8, eval_interval=1000, checkpoint_interval=1000
        )
        .plant_loss_spike(13_000, 2, 3.0)
        .plant_clip_violation(17_000, 17_010, 2.0)
        .plant_slow_stretch(25_000, 25_100, 4.0)
        .plant_restart(crash_after=8_100, resume_from=8_000)
    ),
    "plot-points-short": lambda: RunBuilder().plant_loss_spike(120, 2, 2.5),
}
SERIES = (
    "loss", "loss_baseline", "learning_rate", "expected_learning_rate", "grad_norm", "grad_clip_norm",
    "step_time_sec",
)  # fmt: skip
STEP_PLOTS: tuple[Callable[[ReportData, PageOne], Plot], ...] = (
    report_plots.plot_loss,
    report_plots.plot_learning_rate,
    report_plots.plot_grad_norm,
    report_plots.plot_step_times,
)


def threshold(name: str) -> Any:
    return thresholds()[name].value


WINDOWS = threshold("report_step_time_windows")


@pytest.fixture(scope="module")
def long_run(fixture_runs: FixtureRuns) -> Diagnosis:
    return fixture_runs["plot-points-long"]


@pytest.fixture(scope="module")
def short_run(fixture_runs: FixtureRuns) -> Diagnosis:
    return fixture_runs["plot-points-short"]


def report_data(diagnosis: Diagnosis) -> ReportData:
    return load_report_data(diagnosis.db_path, diagnosis.target_path, diagnosis.run_id, with_history=False)


def by_row(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["step", "train_row_id"]).reset_index(drop=True)


def test_a_short_run_keeps_every_step_row(short_run: Diagnosis) -> None:
    steps, points = short_run.table("step_metrics"), short_run.table("step_plot_points")
    assert len(points) == len(steps) and not points["is_downsampled"].any()
    assert sorted(points["train_row_id"]) == sorted(steps["train_row_id"])
    shared = [c for c in steps.columns if c in points.columns]
    pd.testing.assert_frame_equal(by_row(points[shared]), by_row(steps[shared]))


def test_the_report_reads_a_bounded_number_of_rows_of_a_long_run(long_run: Diagnosis) -> None:
    steps = long_run.table("step_metrics")
    assert len(steps) > threshold("report_plot_all_rows_max")
    data = report_data(long_run)
    points = data.step_points
    assert points["is_downsampled"].all()
    drawn_as_points = ~points["is_counted"] | points["is_loss_spike"] | points["is_clip_violation"]
    drawn_as_points |= points["is_slow_step"] | points["is_step_time_outlier"]
    drawn_as_points |= points["is_step_time_window_middle"]
    # per pixel column of the run: the first, last, lowest and highest row of each series (the LR's
    # ratio to the schedule too); of each zoom on a root finding: those of its series
    findings = long_run.findings()
    n_zooms = int((findings["caused_by"].isna() & findings["first_step"].notna()).sum())
    columns = threshold("report_plot_pixel_columns")
    bound = columns * (2 + 2 * (len(SERIES) + 1)) + n_zooms * columns * 4
    assert (~drawn_as_points).sum() <= bound
    assert len(points) < len(steps) / 2, f"{len(points)} of {len(steps)} rows read"


def pixel_columns(steps: pd.DataFrame) -> np.ndarray:
    """The run's pixel column of each row, as step_plot_points cuts the run."""
    first, last = steps["step"].min(), steps["step"].max()
    columns = threshold("report_plot_pixel_columns")
    return np.floor((steps["step"] - first) * columns / (last - first + 1)).to_numpy()


def test_the_envelope_of_every_plotted_series_is_kept(long_run: Diagnosis) -> None:
    steps = long_run.table("step_metrics")
    points = long_run.table("step_plot_points")
    counted = steps[steps["is_counted"]].assign(column=lambda f: pixel_columns(f))
    kept = counted[counted["train_row_id"].isin(points["train_row_id"])]
    for series in SERIES:
        every = counted.groupby("column")[series].agg(["min", "max", "count"])
        drawn = kept.groupby("column")[series].agg(["min", "max", "count"]).reindex(every.index)
        pd.testing.assert_frame_equal(drawn[["min", "max"]], every[["min", "max"]], obj=series)
    ends = counted.groupby("column")["step"].agg(["min", "max"])
    pd.testing.assert_frame_equal(kept.groupby("column")["step"].agg(["min", "max"]), ends)


def test_every_row_drawn_as_a_point_is_kept(long_run: Diagnosis) -> None:
    steps = long_run.table("step_metrics")
    kept = set(long_run.table("step_plot_points")["train_row_id"])
    flagged = {
        "superseded": ~steps["is_counted"],
        "loss spike": steps["is_loss_spike"],
        "clip violation": steps["is_clip_violation"].fillna(False).astype(bool),
        "slow step": steps["is_slow_step"],
    }
    for what, rows in flagged.items():
        assert rows.any(), f"the long run has no {what} row to keep"
        missing = set(steps.loc[rows, "train_row_id"]) - kept
        assert not missing, f"{len(missing)} {what} rows are not in step_plot_points"


def test_the_consistency_check_counts_every_row_in_sql(long_run: Diagnosis) -> None:
    data = report_data(long_run)
    steps = long_run.table("step_metrics")
    assert step_row_counts(data) == (len(steps), int(steps["is_counted"].sum()))
    assert step_row_counts(data) == (data.summary["steps_logged"], data.summary["steps_counted"])
    assert build_double_check(data).consistency == []


def svg_text(plot: Plot) -> str:
    assert plot.image_base64 is not None, plot.not_logged
    return base64.b64decode(plot.image_base64).decode("utf-8")


def tick_labels(svg: str) -> list[str]:
    """The figure's texts (axis ticks, labels, notes): the same when the axes' ranges are."""
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def markers(svg: str) -> int:
    return svg.count("<circle") + svg.count("<use")


def test_plots_of_the_points_look_like_plots_of_every_row(long_run: Diagnosis) -> None:
    data = report_data(long_run)
    every = ReportData(**{**data.__dict__, "step_points": long_run.table("step_metrics")})
    page = build_page_one(data, build_double_check(data).consistency)
    for plot in STEP_PLOTS[:3]:  # the lines: same axes, same labels, the same points
        drawn, whole = svg_text(plot(data, page)), svg_text(plot(every, page))
        assert tick_labels(drawn) == tick_labels(whole), plot.__name__
        assert markers(drawn) == markers(whole), plot.__name__


def test_a_long_runs_step_time_is_drawn_as_stretch_medians(long_run: Diagnosis) -> None:
    data = report_data(long_run)
    page = build_page_one(data, build_double_check(data).consistency)
    plot = report_plots.plot_step_times(data, page)
    steps = data.step_points["step"]
    stretch = max(threshold("report_step_time_window_min_rows"), (steps.max() - steps.min() + 1) / WINDOWS)
    assert f"the median step time of each stretch of {round(stretch):,} steps" in plot.caption
    middles = data.step_points["is_step_time_window_middle"].sum()
    assert WINDOWS <= middles <= WINDOWS + 1


def test_the_report_and_the_mart_agree_on_their_shared_constants() -> None:
    assert threshold("report_plot_pixel_columns") == report_plots.FIG_WIDTH
    assert threshold("report_zoom_min_pad_share") == report_plots.ZOOM_MIN_PAD_SHARE
    assert threshold("report_step_time_outlier_factor") == report_plots.OUTLIER_FACTOR
