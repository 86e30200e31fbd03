"""The report's plots: matplotlib (Agg) figures rendered to base64 PNG for inline <img>.

Each plot function takes the ReportData and returns a Plot. When the run did not log
what a plot needs (no evals, no grad_norm, ...) the Plot carries a "not logged" message
instead of an image, so an imported run with fewer columns still gets a report.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from report_data import SEVERITY_ORDER, ReportData
from report_story import PageOne

SEVERITY_COLORS = {
    "critical": "#7b1fa2",
    "high": "#d62728",
    "medium": "#ff7f0e",
    "low": "#bcbd22",
    "info": "#7f7f7f",
}
MAIN_COLOR = "#1f77b4"
SUPERSEDED_COLOR = "#b0b0b0"
FIG_SIZE = (9.0, 3.6)
MAX_LANES = 30  # findings drawn under the loss plot
MIN_SPAN_SHARE = 0.006  # narrowest drawn span, as a share of the steps shown
DPI = 100


@dataclass(frozen=True)
class Plot:
    """One figure of the report: an inline PNG, or the reason there is none."""

    plot_id: str
    title: str
    caption: str
    png_base64: str | None = None
    not_logged: str | None = None

    @property
    def alt(self) -> str:
        return f"{self.title}. {self.caption}"


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


def to_base64_png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def new_axes(title: str, xlabel: str, ylabel: str) -> tuple[Figure, Axes]:
    fig, ax = plt.subplots(figsize=FIG_SIZE)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    return fig, ax


def outside_legend(
    ax: Axes, handles: list | None = None, labels: list[str] | None = None, offset: float = 1.01
) -> None:
    """A legend right of the axes, so it never hides data."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if labels is None:
        labels = [h.get_label() for h in handles]
    ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(offset, 1.0), borderaxespad=0)


def counted_split(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Masks of counted rows and superseded rows (replays/duplicates)."""
    counted = flag(frame, "is_counted", default=True)
    return counted, ~counted


FIX_FIRST_COLOR = "#9467bd"


def finding_spans(findings: list[dict]) -> list[tuple[dict, float, float]]:
    """(finding, start, end) for the findings with a step range, in order (a single step is 1 wide)."""
    spans = []
    for finding in findings:
        first, last = finding.get("first_step"), finding.get("last_step")
        if first is None and last is None:
            continue
        first = first if first is not None else last
        last = last if last is not None else first
        spans.append((finding, float(first) - 0.5, float(last) + 0.5))
    return spans


def draw_finding_lanes(ax: Axes, spans: list[tuple[dict, float, float]]) -> None:
    """One lane per finding (rank 1 on top): its step span shaded in its severity's color."""
    used: list[str] = []
    x_range = max(end for _, _, end in spans) - min(start for _, start, _ in spans)
    min_width = max(1.0, MIN_SPAN_SHARE * x_range)  # a one-step finding stays visible on a long run
    for lane, (finding, start, end) in enumerate(spans):
        if end - start < min_width:
            middle = (start + end) / 2
            start, end = middle - min_width / 2, middle + min_width / 2
        severity = str(finding.get("severity") or "info").lower()
        color = SEVERITY_COLORS.get(severity, SEVERITY_COLORS["info"])
        ax.broken_barh([(start, end - start)], (lane - 0.4, 0.8), facecolors=color, alpha=0.75)
        if severity not in used:
            used.append(severity)
    ax.set_ylim(len(spans) - 0.5, -0.5)
    ax.set_yticks(range(len(spans)))
    ax.set_yticklabels([f"{i}. {f.get('category')}" for i, (f, _, _) in enumerate(spans, 1)], fontsize=7)
    ax.set_xlabel("step")
    ax.set_ylabel("findings")
    ax.grid(True, axis="x", alpha=0.3)
    handles = [
        Patch(color=SEVERITY_COLORS.get(s, SEVERITY_COLORS["info"]), alpha=0.75, label=s)
        for s in sorted(used, key=lambda s: SEVERITY_ORDER.index(s) if s in SEVERITY_ORDER else 9)
    ]
    outside_legend(ax, handles)


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
    ax.axvspan(start, end, color=FIX_FIRST_COLOR, alpha=0.10, label="fix first: its steps")
    return " The purple band marks the steps of the problem to fix first."


def mark_restarts(ax: Axes, data: ReportData) -> str:
    restarts = [
        e for e in data.events if e.get("resumed_from_step") is not None and e.get("step") is not None
    ]
    for i, event in enumerate(restarts):
        ax.axvline(
            float(event["step"]),
            color="black",
            linestyle=":",
            linewidth=1.0,
            label="crash and resume" if i == 0 else None,
        )
    return " Dotted lines: the run crashed and resumed from a checkpoint." if restarts else ""


def plot_loss(data: ReportData, page: PageOne) -> Plot:
    title = "Training loss with the causes marked"
    caption = (
        "Top: training loss per logged row; red markers are loss spikes, grey points replayed or duplicate "
        "rows. Bottom: the steps of each cause (page two order), colored by severity."
    )
    frame = data.step_metrics
    step, loss = num(frame, "step"), num(frame, "loss")
    if not len(frame) or not has_values(loss):
        return message_plot("plot-loss", title, caption, "Training loss: not logged (step_metrics is empty).")
    spans = finding_spans([c.finding for c in page.causes])
    if len(spans) > MAX_LANES:
        caption += f" Only the first {MAX_LANES} of {len(spans)} causes with a step range are drawn."
        spans = spans[:MAX_LANES]
    counted, superseded = counted_split(frame)
    lanes_height = 0.25 * len(spans) + 0.6 if spans else 0.0
    fig = plt.figure(figsize=(FIG_SIZE[0], FIG_SIZE[1] + lanes_height))
    if spans:
        grid = fig.add_gridspec(2, 1, height_ratios=[FIG_SIZE[1], lanes_height], hspace=0.08)
        ax = fig.add_subplot(grid[0])
        lanes = fig.add_subplot(grid[1], sharex=ax)
        draw_finding_lanes(lanes, spans)
        ax.tick_params(labelbottom=False)
    else:
        ax = fig.add_subplot()
        ax.set_xlabel("step")
    ax.set_title(title)
    ax.set_ylabel("training loss")
    ax.grid(True, alpha=0.3)
    ax.plot(step[counted], loss[counted], color=MAIN_COLOR, linewidth=1.2, label="loss (counted rows)")
    baseline = num(frame, "loss_baseline")
    if has_values(baseline[counted]):
        ax.plot(step[counted], baseline[counted], "--", color="black", linewidth=0.9, label="loss baseline")
    if superseded.any():
        ax.scatter(step[superseded], loss[superseded], s=12, color=SUPERSEDED_COLOR, label="superseded rows")
    spikes = flag(frame, "is_loss_spike") & np.isfinite(loss)
    if spikes.any():
        ax.scatter(
            step[spikes], loss[spikes], s=30, marker="v", color="#d62728", zorder=5, label="loss spike"
        )
    caption += mark_fix_first(ax, page) + mark_restarts(ax, data)
    outside_legend(ax)
    return Plot("plot-loss", title, caption, to_base64_png(fig))


def plot_learning_rate(data: ReportData, page: PageOne) -> Plot:
    title = "Learning rate: logged vs expected from the config"
    caption = "Logged learning rate per counted step against the schedule rebuilt from the run's config."
    frame = data.step_metrics
    step, logged, expected = (
        num(frame, "step"),
        num(frame, "learning_rate"),
        num(frame, "expected_learning_rate"),
    )
    if not len(frame) or not has_values(logged):
        return message_plot("plot-lr", title, caption, "Learning rate: not logged.")
    counted, superseded = counted_split(frame)
    fig, ax = new_axes(title, "step", "learning rate")
    ax.plot(step[counted], logged[counted], color=MAIN_COLOR, linewidth=1.3, label="logged")
    if has_values(expected):
        ax.plot(
            step[counted], expected[counted], "--", color="black", linewidth=1.0, label="expected (config)"
        )
        ratio = np.where(counted & (expected > 0), logged / np.where(expected > 0, expected, 1.0), np.nan)
        if has_values(ratio) and np.nanmax(ratio) > 1.1:
            # label the logged peak (where the gap shows), with the ratio there
            i = int(np.nanargmax(np.where(np.isfinite(ratio), logged, np.nan)))
            ax.annotate(
                f"logged peak {logged[i]:.3g} = {ratio[i]:.1f}x the configured LR (step {int(step[i])})",
                (step[i], logged[i]),
                xytext=(20, -28),
                textcoords="offset points",
                fontsize=8,
                arrowprops={"arrowstyle": "->", "linewidth": 0.8},
            )
            caption += f" At the logged peak: {ratio[i]:.1f}x the configured value (step {int(step[i])})."
    else:
        caption += " The expected schedule is not available (no schedule in the config)."
    if superseded.any():
        ax.scatter(
            step[superseded], logged[superseded], s=12, color=SUPERSEDED_COLOR, label="superseded rows"
        )
    caption += mark_fix_first(ax, page)
    outside_legend(ax)
    return Plot("plot-lr", title, caption, to_base64_png(fig))


def plot_grad_norm(data: ReportData, page: PageOne) -> Plot:
    title = "Gradient norm vs clipping limit"
    caption = "Gradient norm per counted step; the dashed line is grad_clip_norm, red points exceed it."
    frame = data.step_metrics
    step, grad, clip = num(frame, "step"), num(frame, "grad_norm"), num(frame, "grad_clip_norm")
    if not len(frame) or not has_values(grad):
        return message_plot(
            "plot-grad", title, caption, "Gradient norm: not logged (no grad_norm in the log)."
        )
    counted, _ = counted_split(frame)
    fig, ax = new_axes(title, "step", "gradient norm")
    ax.plot(step[counted], grad[counted], color=MAIN_COLOR, linewidth=1.1, label="grad norm")
    limits = np.unique(clip[np.isfinite(clip)])
    if len(limits) == 1:
        ax.axhline(limits[0], linestyle="--", color="black", linewidth=1.0, label=f"clip limit {limits[0]:g}")
    elif len(limits) > 1:
        ax.plot(step[counted], clip[counted], "--", color="black", linewidth=1.0, label="clip limit")
    else:
        caption += " No clipping limit is configured."
    violations = flag(frame, "is_clip_violation") & counted & np.isfinite(grad)
    if violations.any():
        ax.scatter(
            step[violations], grad[violations], s=16, color="#d62728", zorder=5, label="above the limit"
        )
    caption += mark_restarts(ax, data)
    outside_legend(ax)
    return Plot("plot-grad", title, caption, to_base64_png(fig))


def natural_key(text: str) -> tuple[int, float, str]:
    """Numbers in numeric order before text ('2' < '10' < 'web')."""
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


MAX_BARS = 40  # a large run has thousands of shards: plot the ones furthest from the trend


def _residual_bars(ax: Axes, frame: pd.DataFrame, label: str) -> None:
    if len(frame) > MAX_BARS:
        distance = np.abs(np.nan_to_num(num(frame, "mean_loss_residual")))
        frame = frame.iloc[np.argsort(-distance, kind="stable")[:MAX_BARS]]
        label = f"{label} ({MAX_BARS} furthest from the trend)"
    keys_raw = [str(k) for k in frame["group_key"]]
    order = sorted(range(len(keys_raw)), key=lambda i: natural_key(keys_raw[i]))
    frame = frame.iloc[order]
    values = num(frame, "mean_loss_residual")
    keys = [keys_raw[i] for i in order]
    colors = ["#d62728" if v > 0 else "#2ca02c" for v in np.nan_to_num(values)]
    ax.bar(keys, np.nan_to_num(values), color=colors)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_title(f"by {label}")
    ax.set_xlabel(label)
    ax.set_ylabel("mean loss residual")
    ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    ax.grid(True, axis="y", alpha=0.3)


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
    fig, axes = plt.subplots(1, len(levels), figsize=FIG_SIZE, squeeze=False)
    for ax, level in zip(axes[0], levels, strict=True):
        _residual_bars(ax, frame[frame["grouping_level"] == level], level)
    fig.suptitle(title)
    fig.legend(
        handles=[Patch(color="#d62728", label="above trend"), Patch(color="#2ca02c", label="below trend")],
        fontsize=8,
        loc="upper right",
    )
    fig.tight_layout()
    return Plot("plot-shards", title, caption, to_base64_png(fig))


def plot_eval(data: ReportData, page: PageOne) -> Plot:
    title = "Validation loss: best evaluation and saved checkpoints"
    caption = "Validation loss per evaluation; the star marks the best evaluation (lowest validation loss)."
    frame = data.eval_metrics
    step, val = num(frame, "step"), num(frame, "val_loss")
    if not len(frame) or not has_values(val):
        return message_plot("plot-eval", title, caption, "Validation loss: not logged (no evaluations).")
    counted, superseded = counted_split(frame)
    fig, ax = new_axes(title, "step", "validation loss")
    ax.plot(step[counted], val[counted], "o-", color=MAIN_COLOR, markersize=4, label="validation loss")
    smoothed = num(frame, "train_loss_smoothed")
    if has_values(smoothed[counted]):
        ax.plot(step[counted], smoothed[counted], ":", color="black", label="training loss (smoothed)")
    if superseded.any():
        ax.scatter(step[superseded], val[superseded], s=14, color=SUPERSEDED_COLOR, label="superseded evals")
    best = flag(frame, "is_best") & np.isfinite(val)
    if best.any():
        ax.scatter(
            step[best], val[best], s=160, marker="*", color="#d62728", zorder=5, label="best evaluation"
        )
    saved = sorted({int(e["checkpoint_step"]) for e in data.events if e.get("checkpoint_step") is not None})
    for i, checkpoint in enumerate(saved):
        last = checkpoint == saved[-1]
        ax.axvline(
            checkpoint,
            color="#8c564b" if last else "#bbbbbb",
            linestyle="--",
            linewidth=1.2 if last else 0.8,
            label="last saved checkpoint" if last else ("saved checkpoints" if i == 0 else None),
        )
    if saved:
        ax.annotate(
            f"last saved: step {saved[-1]}", (saved[-1], 1.0), xycoords=("data", "axes fraction"),
            xytext=(-4, -12), textcoords="offset points", ha="right", fontsize=8, color="#8c564b",
        )  # fmt: skip
        caption += f" Dashed lines: checkpoints saved (from the events); the last one is step {saved[-1]}."
    if best.any():
        i = int(np.flatnonzero(best)[0])
        ax.annotate(
            f"best evaluation {val[i]:.3f} (step {int(step[i])})", (step[i], val[i]),
            xytext=(-10, 18), textcoords="offset points", ha="right", fontsize=8, color="#d62728",
        )  # fmt: skip
    caption += mark_fix_first(ax, page)
    handles, labels = ax.get_legend_handles_labels()
    accuracy = num(frame, "val_accuracy")
    if has_values(accuracy[counted]):
        twin = ax.twinx()
        twin.plot(
            step[counted], accuracy[counted], "s--", color="#2ca02c", markersize=3, label="val accuracy"
        )
        twin.set_ylabel("validation accuracy (share)")
        twin_handles, twin_labels = twin.get_legend_handles_labels()
        handles, labels = handles + twin_handles, labels + twin_labels
        caption += " Green squares: validation accuracy (right axis)."
    outside_legend(ax, handles, labels, offset=1.12)
    return Plot("plot-eval", title, caption, to_base64_png(fig))


def plot_step_times(data: ReportData, page: PageOne) -> Plot:
    title = "Step time with slow steps highlighted"
    caption = "Seconds per counted step; red points are the steps flagged slow."
    frame = data.step_metrics
    step, seconds = num(frame, "step"), num(frame, "step_time_sec")
    if not len(frame) or not has_values(seconds):
        return message_plot("plot-step-time", title, caption, "Step time: not logged.")
    counted, _ = counted_split(frame)
    fig, ax = new_axes(title, "step", "step time (s)")
    ax.plot(step[counted], seconds[counted], color=MAIN_COLOR, linewidth=1.0, label="step time")
    slow = flag(frame, "is_slow_step") & counted & np.isfinite(seconds)
    if slow.any():
        ax.scatter(step[slow], seconds[slow], s=22, color="#d62728", zorder=5, label="slow step")
    caption += mark_restarts(ax, data)
    outside_legend(ax)
    return Plot("plot-step-time", title, caption, to_base64_png(fig))


PLOTTERS: tuple[Callable[[ReportData, PageOne], Plot], ...] = (
    plot_loss,
    plot_eval,
    plot_learning_rate,
    plot_grad_norm,
    plot_shards,
    plot_step_times,
)


def make_plots(data: ReportData, page: PageOne) -> list[Plot]:
    """All plots, in report order: the story first (loss, validation, learning rate)."""
    with plt.rc_context({"figure.max_open_warning": 0, "svg.hashsalt": "report"}):
        return [plotter(data, page) for plotter in PLOTTERS]
