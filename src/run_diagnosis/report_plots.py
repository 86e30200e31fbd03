"""The report's plots: hand-written SVG figures (svg_charts), base64-encoded for an inline <img>.

Each plot function takes the ReportData and returns a Plot. When the run did not log
what a plot needs (no evals, no grad_norm, ...) the Plot carries a "not logged" message
instead of an image, so an imported run with fewer columns still gets a report.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from run_diagnosis.report_content import anchor
from run_diagnosis.report_data import SEVERITY_ORDER, ReportData, catalog_text
from run_diagnosis.report_story import PageOne, short
from run_diagnosis.svg_charts import PT, Axes, Figure, LegendEntry, Marker, Note, Stroke

SEVERITY_COLORS = {
    "critical": "#7b1fa2",
    "high": "#d62728",
    "medium": "#ff7f0e",
    "low": "#bcbd22",
    "info": "#7f7f7f",
}
MAIN_COLOR = "#1f77b4"
SUPERSEDED_COLOR = "#b0b0b0"
FIG_WIDTH = 900  # pixels (9 inches at 100 dpi)
PLOT_HEIGHT = 260  # pixels of one plot area
LANE_HEIGHT = 24  # pixels per finding under the loss plot
MAX_LANES = 30  # findings drawn under the loss plot
MIN_SPAN_SHARE = 0.006  # narrowest drawn span, as a share of the steps shown
MEDIA_TYPE = "image/svg+xml"
ACCURACY_HEIGHT = 110  # pixels of the accuracy panel under the validation loss
ACCURACY_COLOR = "#2ca02c"
CHECKPOINT_COLOR = "#8c564b"
EVAL_COLOR = "#9467bd"
# a long run's step time is drawn as the median of stretches of steps (step_plot_points decides
# when, over how many steps, and which rows are outliers: report_step_time_* in the marts' YAML)
OUTLIER_FACTOR = 3.0  # the outliers: above this multiple of it (report_step_time_outlier_factor)
ZOOM_HEIGHT = 170  # pixels of a finding's zoom (page two)
ZOOM_MAX = 8  # causes that get a zoom
ZOOM_MIN_PAD_SHARE = 0.02  # the zoom shows at least this share of the run either side of the steps
# (step_plot_points keeps that window at pixel resolution: report_zoom_min_pad_share, the same)
ZOOM_MIN_SPAN_SHARE = 0.01  # ... and shades the finding's steps at least this share of the window wide


@dataclass(frozen=True)
class Plot:
    """One figure of the report: an inline image (base64 of `media_type`), or the reason there is none."""

    plot_id: str
    title: str
    caption: str
    image_base64: str | None = None
    not_logged: str | None = None
    media_type: str = MEDIA_TYPE
    finding_id: str | None = None  # a zoom on one finding's steps (page two), else a plot of the run

    @property
    def alt(self) -> str:
        return f"{self.title}. {self.caption}"

    @property
    def data_uri(self) -> str:
        return f"data:{self.media_type};base64,{self.image_base64}"


# --------------------------------------------------------------------------- helpers


def num(frame: pd.DataFrame, column: str) -> np.ndarray:
    """A column as float64 with NaN for nulls (also for a missing column)."""
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[column], errors="coerce").astype("float64").to_numpy()


def flag(frame: pd.DataFrame, column: str, default: bool = False) -> np.ndarray:
    """A boolean column with nulls as `default` (also for a missing column)."""
    if column not in frame.columns:
        return np.full(len(frame), default)
    return frame[column].astype("boolean").fillna(default).to_numpy(dtype=bool)


def has_values(values: np.ndarray) -> bool:
    return bool(np.isfinite(values).any())


def svg_plot(plot_id: str, title: str, caption: str, figure: Figure) -> Plot:
    """The figure as a base64 SVG document (its <title> the plot's title, its <desc> the caption)."""
    svg = figure.render(title, caption)
    return Plot(plot_id, title, caption, base64.b64encode(svg.encode("utf-8")).decode("ascii"))


def new_axes(title: str, xlabel: str, ylabel: str) -> tuple[Figure, Axes]:
    ax = Axes(title=title, xlabel=xlabel, ylabel=ylabel)
    fig = Figure(width=FIG_WIDTH)
    fig.add_row(PLOT_HEIGHT, ax)
    return fig, ax


def marker_size(area: float) -> float:
    """A matplotlib scatter size (area in points squared) as a marker diameter in pixels."""
    return math.sqrt(area) * PT


def counted_split(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Masks of counted rows and superseded rows (replays/duplicates)."""
    counted = flag(frame, "is_counted", default=True)
    return counted, ~counted


@dataclass(frozen=True)
class StepSeries:
    """One column of a per-step mart against its steps, with the masks of counted and superseded rows."""

    frame: pd.DataFrame
    step: np.ndarray
    values: np.ndarray
    counted: np.ndarray
    superseded: np.ndarray

    def line(self, ax: Axes, values: np.ndarray, color: str, label: str, **style: Any) -> None:
        """A line through the counted rows of `values` (this series' or another column of its frame)."""
        ax.line(self.step[self.counted], values[self.counted], color, label=label, **style)

    def points(
        self, ax: Axes, rows: np.ndarray, color: str, area: float, label: str, marker: Marker = "o"
    ) -> None:
        """Scatter the values of `rows` (a mask), if any: `area` in points squared, as matplotlib's."""
        if rows.any():
            ax.scatter(
                self.step[rows], self.values[rows], color, marker_size(area), marker=marker, label=label
            )


def step_plot(
    plot_id: str,
    title: str,
    caption: str,
    frame: pd.DataFrame,
    column: str,
    not_logged: str,
    draw: Callable[[StepSeries], tuple[Figure, str]],
) -> Plot:
    """A plot of `column` over the steps of `frame`: the `not_logged` message when the frame is empty or
    the column has no value, else the figure `draw` makes (with the sentences it adds to the caption)."""
    step, values = num(frame, "step"), num(frame, column)
    if not len(frame) or not has_values(values):
        return message_plot(plot_id, title, caption, not_logged)
    figure, more_caption = draw(StepSeries(frame, step, values, *counted_split(frame)))
    return svg_plot(plot_id, title, caption + more_caption, figure)


FIX_FIRST_COLOR = "#9467bd"
LANE_OPACITY = 0.75


def finding_spans(findings: list[dict]) -> list[tuple[dict, float, float]]:
    """(finding, start, end) for the findings with a step range, in order (a single step is 1 wide)."""
    spans = []
    for finding in findings:
        ends = [step for step in (finding.get("first_step"), finding.get("last_step")) if step is not None]
        if not ends:
            continue
        spans.append((finding, float(ends[0]) - 0.5, float(ends[-1]) + 0.5))  # one end: both
    return spans


def draw_finding_lanes(ax: Axes, spans: list[tuple[dict, float, float]]) -> None:
    """One lane per finding (rank 1 on top): its step span shaded in its severity's color."""
    used: list[str] = []
    rows: list[tuple[str, float, float, str]] = []
    x_range = max(end for _, _, end in spans) - min(start for _, start, _ in spans)
    min_width = max(1.0, MIN_SPAN_SHARE * x_range)  # a one-step finding stays visible on a long run
    for lane, (finding, start, end) in enumerate(spans, 1):
        if end - start < min_width:
            middle = (start + end) / 2
            start, end = middle - min_width / 2, middle + min_width / 2
        severity = str(finding.get("severity") or "info").lower()
        color = SEVERITY_COLORS.get(severity, SEVERITY_COLORS["info"])
        rows.append((f"{lane}. {finding.get('category')}", start, end, color))
        if severity not in used:
            used.append(severity)
    ax.lanes(rows, opacity=LANE_OPACITY)
    ax.xlabel, ax.ylabel, ax.grid = "step", "findings", "x"
    ax.legend = [
        LegendEntry(s, "patch", SEVERITY_COLORS.get(s, SEVERITY_COLORS["info"]), opacity=LANE_OPACITY)
        for s in sorted(used, key=lambda s: SEVERITY_ORDER.index(s) if s in SEVERITY_ORDER else 9)
    ]


def message_plot(plot_id: str, title: str, caption: str, message: str) -> Plot:
    return Plot(plot_id, title, caption, not_logged=message)


# --------------------------------------------------------------------------- the plots


def mark_fix_first(ax: Axes, page: PageOne) -> str:
    """Shade the fix-first finding's steps on `ax`; returns a caption sentence (or '')."""
    if page.fix_first is None:
        return ""
    spans = finding_spans([page.fix_first.finding])
    if not spans:
        return ""
    _, start, end = spans[0]
    ax.vspan(start, end, FIX_FIRST_COLOR, opacity=0.10, label="fix first: its steps")
    return " The purple band marks the steps of the problem to fix first."


def mark_restarts(ax: Axes, data: ReportData) -> str:
    restarts = [
        e for e in data.events if e.get("resumed_from_step") is not None and e.get("step") is not None
    ]
    # a crash only when run_story counts the resumes after a logged crash (a planned stop is not one)
    crashes, n = data.story.get("n_crash_restarts"), data.story.get("n_restarts")
    crashed = crashes is not None and n and int(crashes) >= int(n)
    what = "crash and resume" if crashed else "stop and resume"
    for i, event in enumerate(restarts):
        ax.vline(float(event["step"]), Stroke("black", 1.0 * PT, "dotted"), label=what if i == 0 else None)
    if not restarts:
        return ""
    if crashed:
        return " Dotted lines: the run crashed and resumed from a checkpoint."
    return " Dotted lines: the run stopped and resumed from a checkpoint (not every stop was a crash)."


def plot_loss(data: ReportData, page: PageOne) -> Plot:
    title = "Training loss with the causes marked"

    def draw(s: StepSeries) -> tuple[Figure, str]:
        caption = ""
        spans = finding_spans([c.finding for c in page.causes])
        if len(spans) > MAX_LANES:
            caption += f" Only the first {MAX_LANES} of {len(spans)} causes with a step range are drawn."
            spans = spans[:MAX_LANES]
        ax = Axes(title=title, ylabel="training loss")
        fig = Figure(width=FIG_WIDTH, share_x=True)
        fig.add_row(PLOT_HEIGHT, ax)
        if spans:
            lanes = Axes()
            draw_finding_lanes(lanes, spans)
            fig.add_row(LANE_HEIGHT * len(spans) + 6, lanes)
            ax.show_xticklabels = False
        else:
            ax.xlabel = "step"
        loss = s.values
        s.line(ax, loss, MAIN_COLOR, "loss (counted rows)", width=1.2 * PT)
        baseline = num(s.frame, "loss_baseline")
        if has_values(baseline[s.counted]):
            s.line(ax, baseline, "black", "loss baseline", width=0.9 * PT, dash="dashed")
        s.points(ax, s.superseded, SUPERSEDED_COLOR, 12, "superseded rows")
        s.points(ax, flag(s.frame, "is_loss_spike") & np.isfinite(loss), "#d62728", 30, "loss spike", "v")
        return fig, caption + mark_fix_first(ax, page) + mark_restarts(ax, data)

    caption = (
        "Top: training loss per logged row; red markers are loss spikes, grey points replayed or duplicate "
        "rows. Bottom: the steps of each cause (page two order), colored by severity."
    )
    not_logged = "Training loss: not logged (step_metrics is empty)."
    return step_plot("plot-loss", title, caption, data.step_points, "loss", not_logged, draw)


def plot_learning_rate(data: ReportData, page: PageOne) -> Plot:
    title = "Learning rate: logged vs expected from the config"

    def draw(s: StepSeries) -> tuple[Figure, str]:
        caption = ""
        step, logged, counted = s.step, s.values, s.counted
        expected = num(s.frame, "expected_learning_rate")
        fig, ax = new_axes(title, "step", "learning rate")
        s.line(ax, logged, MAIN_COLOR, "logged", width=1.3 * PT)
        if has_values(expected):
            s.line(ax, expected, "black", "expected (config)", width=1.0 * PT, dash="dashed")
            ratio = np.where(counted & (expected > 0), logged / np.where(expected > 0, expected, 1.0), np.nan)
            if has_values(ratio) and np.nanmax(ratio) > 1.1:
                # label the logged peak (where the gap shows), with the ratio there
                i = int(np.nanargmax(np.where(np.isfinite(ratio), logged, np.nan)))
                peak = (
                    f"logged peak {logged[i]:.3g} = {ratio[i]:.1f}x the configured LR (step {int(step[i])})"
                )
                ax.note(Note(peak, float(step[i]), float(logged[i]), dx=20 * PT, dy=28 * PT, arrow=True))
                caption += f" At the logged peak: {ratio[i]:.1f}x the configured value (step {int(step[i])})."
        else:
            caption += " The expected schedule is not available (no schedule in the config)."
        s.points(ax, s.superseded, SUPERSEDED_COLOR, 12, "superseded rows")
        return fig, caption + mark_fix_first(ax, page)

    caption = "Logged learning rate per counted step against the schedule rebuilt from the run's config."
    not_logged = "Learning rate: not logged."
    return step_plot("plot-lr", title, caption, data.step_points, "learning_rate", not_logged, draw)


def plot_grad_norm(data: ReportData, page: PageOne) -> Plot:
    title = "Gradient norm vs clipping limit"

    def draw(s: StepSeries) -> tuple[Figure, str]:
        caption = ""
        grad = s.values
        clip = num(s.frame, "grad_clip_norm")
        fig, ax = new_axes(title, "step", "gradient norm")
        s.line(ax, grad, MAIN_COLOR, "grad norm", width=1.1 * PT)
        limits = np.unique(clip[np.isfinite(clip)])
        if len(limits) == 1:
            ax.hline(limits[0], Stroke("black", 1.0 * PT, "dashed"), label=f"clip limit {limits[0]:g}")
        elif len(limits) > 1:
            s.line(ax, clip, "black", "clip limit", width=1.0 * PT, dash="dashed")
        else:
            caption += " No clipping limit is configured."
        violations = flag(s.frame, "is_clip_violation") & s.counted & np.isfinite(grad)
        s.points(ax, violations, "#d62728", 16, "above the limit")
        return fig, caption + mark_restarts(ax, data)

    caption = "Gradient norm per counted step; the dashed line is grad_clip_norm, red points exceed it."
    not_logged = "Gradient norm: not logged (no grad_norm in the log)."
    return step_plot("plot-grad", title, caption, data.step_points, "grad_norm", not_logged, draw)


def natural_key(text: str) -> tuple[int, float, str]:
    """Numbers in numeric order before text ('2' < '10' < 'web')."""
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


MAX_BARS = 40  # a large run has thousands of shards: plot the ones furthest from the trend
ABOVE_COLOR, BELOW_COLOR = "#d62728", "#2ca02c"


def _residual_bars(ax: Axes, frame: pd.DataFrame, label: str) -> None:
    if len(frame) > MAX_BARS:
        distance = np.abs(np.nan_to_num(num(frame, "mean_loss_residual")))
        frame = frame.iloc[np.argsort(-distance, kind="stable")[:MAX_BARS]]
        label = f"{label} ({MAX_BARS} furthest from the trend)"
    keys_raw = [str(k) for k in frame["group_key"]]
    order = sorted(range(len(keys_raw)), key=lambda i: natural_key(keys_raw[i]))
    frame = frame.iloc[order]
    values = np.nan_to_num(num(frame, "mean_loss_residual"))
    keys = [keys_raw[i] for i in order]
    ax.bars(keys, values, [ABOVE_COLOR if v > 0 else BELOW_COLOR for v in values], label_size=8 * PT)
    ax.hline(0, Stroke("black", 0.8 * PT))
    ax.title, ax.xlabel, ax.ylabel, ax.grid = f"by {label}", label, "mean loss residual", "y"


def plot_shards(data: ReportData, page: PageOne) -> Plot:
    title = "Mean loss residual per shard and per source"
    caption = (
        "Mean of (loss - baseline) over the counted steps of each shard and source: red bars are "
        "worse than the run's trend, green better."
    )
    frame = data.shard_metrics
    if not len(frame):
        return message_plot(
            "plot-shards", title, caption, "Shards and sources: not logged (shard_metrics is empty)."
        )
    levels = [lvl for lvl in ("shard", "source") if (frame["grouping_level"] == lvl).any()]
    fig = Figure(
        width=FIG_WIDTH,
        title=title,
        legend=[
            LegendEntry("above trend", "patch", ABOVE_COLOR),
            LegendEntry("below trend", "patch", BELOW_COLOR),
        ],
    )
    panels = [Axes() for _ in levels]
    for ax, level in zip(panels, levels, strict=True):
        _residual_bars(ax, frame[frame["grouping_level"] == level], level)
    fig.add_row(PLOT_HEIGHT * 0.7, *panels)
    return svg_plot("plot-shards", title, caption, fig)


def plot_eval(data: ReportData, page: PageOne) -> Plot:
    title = "Validation loss: best evaluation and saved checkpoints"

    def draw(s: StepSeries) -> tuple[Figure, str]:
        caption = ""
        step, val, counted = s.step, s.values, s.counted
        accuracy = num(s.frame, "val_accuracy")
        with_accuracy = has_values(accuracy[counted])
        # validation loss on its own axis; accuracy (another scale) in a panel of its own below
        ax = Axes(title=title, ylabel="validation loss", xlabel="" if with_accuracy else "step")
        fig = Figure(width=FIG_WIDTH, share_x=True)
        fig.add_row(PLOT_HEIGHT, ax)
        s.line(ax, val, MAIN_COLOR, "validation loss", marker="o", marker_size=4 * PT)
        smoothed = num(s.frame, "train_loss_smoothed")
        if has_values(smoothed[counted]):
            s.line(ax, smoothed, "black", "training loss (smoothed)", dash="dotted")
        s.points(ax, s.superseded, SUPERSEDED_COLOR, 14, "superseded evals")
        best = flag(s.frame, "is_best") & np.isfinite(val)
        s.points(ax, best, "#d62728", 160, "best evaluation", "*")
        saved = sorted(
            {int(e["checkpoint_step"]) for e in data.events if e.get("checkpoint_step") is not None}
        )
        for i, checkpoint in enumerate(saved):
            last = checkpoint == saved[-1]
            ax.vline(
                checkpoint,
                Stroke("#8c564b" if last else "#bbbbbb", (1.2 if last else 0.8) * PT, "dashed"),
                label="last saved checkpoint" if last else ("saved checkpoints" if i == 0 else None),
            )
        if saved:
            ax.note(
                Note(
                    f"last saved: step {saved[-1]}",
                    saved[-1],
                    None,
                    dx=-4 * PT,
                    dy=12 * PT,
                    anchor="end",
                    color="#8c564b",
                )
            )
            caption += (
                f" Dashed lines: checkpoints saved (from the events); the last one is step {saved[-1]}."
            )
        if best.any():
            i = int(np.flatnonzero(best)[0])
            ax.note(
                Note(
                    f"best evaluation {val[i]:.3f} (step {int(step[i])})", float(step[i]), float(val[i]),
                    dx=-10 * PT, dy=-18 * PT, anchor="end", color="#d62728",
                )
            )  # fmt: skip
        caption += mark_fix_first(ax, page)
        if with_accuracy:
            ax.show_xticklabels = False
            below = Axes(ylabel="validation accuracy", xlabel="step")
            fig.add_row(ACCURACY_HEIGHT, below)
            s.line(below, accuracy, ACCURACY_COLOR, "val accuracy", marker="s", marker_size=3 * PT)
            caption += " Below, on its own scale: validation accuracy (a share, 0 to 1)."
        return fig, caption

    caption = "Validation loss per evaluation; the star marks the best evaluation (lowest validation loss)."
    not_logged = "Validation loss: not logged (no evaluations)."
    return step_plot("plot-eval", title, caption, data.eval_metrics, "val_loss", not_logged, draw)


def mark_evaluations_and_checkpoints(ax: Axes, data: ReportData, top: float) -> str:
    """Checkpoint saves (events) as dashed lines and evaluations as ticks along the top: the
    steps expected to run slow. Returns the caption's sentence."""
    said = []
    saved = sorted({int(e["checkpoint_step"]) for e in data.events if e.get("checkpoint_step") is not None})
    for i, checkpoint in enumerate(saved):
        ax.vline(
            checkpoint,
            Stroke(CHECKPOINT_COLOR, 0.8 * PT, "dashed"),
            label="checkpoint saved" if i == 0 else None,
        )
    if saved:
        said.append("dashed lines are checkpoint saves (from the events)")
    frame = data.eval_metrics
    evals = num(frame, "step")[flag(frame, "is_counted", True)] if len(frame) else np.array([])
    evals = np.unique(evals[np.isfinite(evals)])
    if len(evals) and math.isfinite(top):
        ax.scatter(
            evals, np.full(len(evals), top), EVAL_COLOR, marker_size(18), marker="v", label="evaluation"
        )
        said.append("triangles along the top are evaluations")
    return (" " + "; ".join(said).capitalize() + ": steps that are expected to run slow.") if said else ""


def plot_step_times(data: ReportData, page: PageOne) -> Plot:
    title = "Step time with slow steps highlighted"

    def draw(s: StepSeries) -> tuple[Figure, str]:
        fig, ax = new_axes(title, "step", "step time (s)")
        caption = ""
        seconds = np.where(s.counted, s.values, np.nan)
        known = s.counted & np.isfinite(s.values)
        slow = flag(s.frame, "is_slow_step") & known
        median = num(s.frame, "step_time_window_median")
        if has_values(median):
            # a long run is a barcode as a line: the median of each stretch of steps (at its middle
            # row), and the outliers as points (step_plot_points)
            middle = flag(s.frame, "is_step_time_window_middle") & known
            ax.line(s.step[middle], median[middle], MAIN_COLOR, width=1.2 * PT, label="median of a stretch")
            outliers = flag(s.frame, "is_step_time_outlier") & known & ~slow
            s.points(ax, outliers, "#7f7f7f", 8, f"over {OUTLIER_FACTOR:g}x that median")
            stretch = fmt_step(float(np.nanmax(num(s.frame, "step_time_window_steps"))))
            caption += (
                f" A long run: the line is the median step time of each stretch of {stretch} steps; grey "
                f"points are the steps over {OUTLIER_FACTOR:g}x it."
            )
            top = float(np.nanmax(np.where(outliers | slow, s.values, median)))
        else:
            s.line(ax, s.values, MAIN_COLOR, "step time", width=1.0 * PT)
            top = float(np.nanmax(seconds)) if known.any() else math.nan
        s.points(ax, slow, "#d62728", 22, "slow step")
        caption += mark_evaluations_and_checkpoints(ax, data, top)
        return fig, caption + mark_restarts(ax, data)

    caption = "Seconds per counted step; red points are the steps flagged slow."
    not_logged = "Step time: not logged."
    return step_plot("plot-step-time", title, caption, data.step_points, "step_time_sec", not_logged, draw)


# the y label of each series a category can be zoomed on (check_catalog.zoom_metric); the loss otherwise
ZOOM_LABELS: dict[str, str] = {
    "learning_rate": "learning rate",
    "grad_norm": "gradient norm",
    "step_time_sec": "step time (s)",
    "val_loss": "validation loss",
}


def zoom_window(first: float, last: float, steps: np.ndarray) -> tuple[float, float]:
    """The finding's steps with as much again either side (at least ZOOM_MIN_PAD_SHARE of the run
    and a few logged rows), within the run."""
    low, high = float(np.nanmin(steps)), float(np.nanmax(steps))
    gaps = np.diff(np.unique(steps[np.isfinite(steps)]))
    interval = float(np.median(gaps)) if len(gaps) else 1.0
    pad = max(last - first, ZOOM_MIN_PAD_SHARE * (high - low), 3 * interval, 1.0)
    return max(low, first - pad), min(high, last + pad)


def plot_zoom(data: ReportData, finding: dict[str, Any]) -> Plot | None:
    """One finding's series zoomed on its steps (its span shaded), the y axis fit to the window:
    a resume bump or a slow drift that is flat on the whole run shows here. None without a step
    range or data in the window."""
    spans = finding_spans([finding])
    if not spans:
        return None
    _, start, end = spans[0]
    zoomed = catalog_text(finding, "zoom_metric")
    column, ylabel = (zoomed, ZOOM_LABELS[zoomed]) if zoomed in ZOOM_LABELS else ("loss", "training loss")
    frame = data.eval_metrics if column == "val_loss" else data.step_points
    step, values = num(frame, "step"), num(frame, column)
    counted = flag(frame, "is_counted", default=True)
    shown = counted & np.isfinite(values) & np.isfinite(step)
    if not shown.any():
        return None
    low, high = zoom_window(start + 0.5, end - 0.5, step[shown])
    inside = shown & (step >= low) & (step <= high)
    if inside.sum() < 2:
        return None
    name = str(finding.get("finding_id"))
    title = f"Zoom on {short(finding)}: {ylabel}, steps {fmt_step(low)}-{fmt_step(high)}"
    ax = Axes(title=title, xlabel="step", ylabel=ylabel, xlim=(low, high))
    fig = Figure(width=FIG_WIDTH)
    fig.add_row(ZOOM_HEIGHT, ax)
    severity = str(finding.get("severity") or "info").lower()
    # a few steps in a long window stay visible: the band is at least ZOOM_MIN_SPAN_SHARE of it wide
    middle, half = (start + end) / 2, max(end - start, ZOOM_MIN_SPAN_SHARE * (high - low)) / 2
    start, end = middle - half, middle + half
    ax.vspan(
        start, end, SEVERITY_COLORS.get(severity, SEVERITY_COLORS["info"]), opacity=0.15, label="its steps"
    )
    ax.line(step[inside], values[inside], MAIN_COLOR, width=1.2 * PT, label=ylabel,
            marker="o" if inside.sum() <= 60 else None, marker_size=3 * PT)  # fmt: skip
    caption = (
        f"{ylabel.capitalize()} around the steps of {short(finding)} (shaded), the y axis fit to this "
        "window; the whole run is in the plots above."
    )
    plot = svg_plot(f"zoom-{anchor(name).removeprefix('finding-')}", title, caption, fig)
    return Plot(plot.plot_id, plot.title, plot.caption, plot.image_base64, finding_id=name)


def fmt_step(value: float) -> str:
    return f"{round(value):,}"


def zoom_plots(data: ReportData, page: PageOne) -> list[Plot]:
    """A zoom for each cause with a step range (page two order), at most ZOOM_MAX."""
    zooms = [plot_zoom(data, cause.finding) for cause in page.causes]
    return [z for z in zooms if z is not None][:ZOOM_MAX]


PLOTTERS: tuple[Callable[[ReportData, PageOne], Plot], ...] = (
    plot_loss,
    plot_eval,
    plot_learning_rate,
    plot_grad_norm,
    plot_shards,
    plot_step_times,
)


def make_plots(data: ReportData, page: PageOne) -> list[Plot]:
    """All plots, in report order: the story first (loss, validation, learning rate), then one zoom
    per cause (its `finding_id` set: page two shows it beside the cause)."""
    return [plotter(data, page) for plotter in PLOTTERS] + zoom_plots(data, page)
