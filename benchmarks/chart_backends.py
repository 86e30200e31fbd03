"""Measure the report's hand-written SVG charts (run_diagnosis.svg_charts) against maintained
plotting libraries on the same plots (issue 23; the numbers and the decision: docs/report.md).

The six whole-run plots of a build's report (loss with the causes' lanes, validation loss with
accuracy, learning rate, grad norm, shard residuals, step time) are reduced to their layers
(lines, points, rules, shaded spans, lanes, bars) from the same marts, then drawn by each
library at the report's size (900 px wide): matplotlib's SVG backend, pygal, and a Vega-Lite
spec rendered to SVG by vl-convert. svg_charts draws the full plots (every note and legend), so
its numbers are an upper bound against the libraries' lower bounds. Reported per backend: the
SVG bytes of the six plots, the median render time of `--repeat` rounds, whether the SVG refers
to anything outside itself (a URL, a script), and the plots it could not draw.

The libraries are not dependencies of the project: install them into their own venvs and name
their site-packages (they are appended to sys.path, so the project's numpy and pandas are used):

  python -m venv /tmp/mpl && /tmp/mpl/bin/pip install matplotlib
  python benchmarks/chart_backends.py --db .dbt_state/run_diagnosis.duckdb --target target \\
      --site /tmp/mpl/lib/python3.11/site-packages --site /tmp/pygal/... --site /tmp/vl/...
"""

from __future__ import annotations

import argparse
import io
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from run_diagnosis.report_content import build_double_check
from run_diagnosis.report_data import ReportData, load_report_data
from run_diagnosis.report_plots import PLOTTERS, SEVERITY_COLORS, finding_spans, flag, num
from run_diagnosis.report_story import PageOne, build_page_one

WIDTH, HEIGHT, DPI = 900, 260, 100  # the report's plot size (report_plots.FIG_WIDTH, PLOT_HEIGHT)
EXTERNAL = re.compile(r"https?://(?!www\.w3\.org/)|<script", re.IGNORECASE)


@dataclass
class Layer:
    kind: str  # line, points, hline, vline, vspan, bars, lanes
    x: list[Any] = field(default_factory=list)
    y: list[Any] = field(default_factory=list)
    color: str = "#1f77b4"
    label: str = ""
    dashed: bool = False


@dataclass
class Chart:
    name: str
    ylabel: str
    layers: list[Layer]
    below: list[Layer] = field(default_factory=list)  # a second panel sharing the x axis


def finite(x: np.ndarray, y: np.ndarray) -> tuple[list[float], list[float]]:
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep].tolist(), y[keep].tolist()


def step_layers(data: ReportData, page: PageOne) -> list[Chart]:
    """The six whole-run plots of the report, as layers (the same columns report_plots draws)."""
    steps, evals = data.step_metrics, data.eval_metrics
    step, counted = num(steps, "step"), flag(steps, "is_counted", True)

    def series(column: str, mask: np.ndarray | None = None) -> tuple[list[float], list[float]]:
        rows = counted if mask is None else mask
        return finite(step[rows], num(steps, column)[rows])

    fix = finding_spans([page.fix_first.finding]) if page.fix_first is not None else []
    restarts = [float(e["step"]) for e in data.events if e.get("resumed_from_step") is not None]
    saved = sorted({float(e["checkpoint_step"]) for e in data.events if e.get("checkpoint_step") is not None})
    spans = finding_spans([c.finding for c in page.causes])[:30]
    lanes = Layer(
        "lanes",
        [(s, e) for _, s, e in spans],
        [f"{i}. {f.get('category')}" for i, (f, _, _) in enumerate(spans, 1)],
        label="causes",
    )
    lanes.color = ",".join(SEVERITY_COLORS.get(str(f.get("severity")), "#7f7f7f") for f, _, _ in spans)
    marks = [Layer("vspan", [s, e], color="#9467bd", label="fix first") for _, s, e in fix]
    marks += [Layer("vline", [r], color="black", label="restart", dashed=True) for r in restarts]
    e_step, e_counted = num(evals, "step"), flag(evals, "is_counted", True)
    clip = np.unique(num(steps, "grad_clip_norm")[np.isfinite(num(steps, "grad_clip_norm"))])
    shard = data.shard_metrics[data.shard_metrics["grouping_level"] == "shard"]
    return [
        Chart(
            "loss",
            "training loss",
            [
                Layer("line", *series("loss"), label="loss"),
                Layer("line", *series("loss_baseline"), color="black", label="baseline", dashed=True),
                Layer("points", *series("loss", ~counted), color="#b0b0b0", label="superseded"),
                Layer(
                    "points",
                    *series("loss", flag(steps, "is_loss_spike") & counted),
                    color="#d62728",
                    label="spike",
                ),
                *marks,
            ],
            [lanes] if spans else [],
        ),
        Chart(
            "eval",
            "validation loss",
            [
                Layer(
                    "line", *finite(e_step[e_counted], num(evals, "val_loss")[e_counted]), label="val loss"
                ),
                Layer(
                    "line",
                    *finite(e_step[e_counted], num(evals, "train_loss_smoothed")[e_counted]),
                    color="black",
                    label="train (smoothed)",
                    dashed=True,
                ),
                Layer(
                    "points",
                    *finite(e_step, np.where(flag(evals, "is_best"), num(evals, "val_loss"), np.nan)),
                    color="#d62728",
                    label="best",
                ),
                *[Layer("vline", [c], color="#8c564b", label="checkpoint", dashed=True) for c in saved],
            ],
            [
                Layer(
                    "line",
                    *finite(e_step[e_counted], num(evals, "val_accuracy")[e_counted]),
                    color="#2ca02c",
                    label="val accuracy",
                )
            ],
        ),
        Chart(
            "lr",
            "learning rate",
            [
                Layer("line", *series("learning_rate"), label="logged"),
                Layer(
                    "line", *series("expected_learning_rate"), color="black", label="expected", dashed=True
                ),
                *marks[:1],
            ],
        ),
        Chart(
            "grad",
            "gradient norm",
            [
                Layer("line", *series("grad_norm"), label="grad norm"),
                *[
                    Layer("hline", [float(c)], color="black", label="clip limit", dashed=True)
                    for c in clip[:1]
                ],
                Layer(
                    "points",
                    *series("grad_norm", flag(steps, "is_clip_violation") & counted),
                    color="#d62728",
                    label="above the limit",
                ),
            ],
        ),
        Chart(
            "shards",
            "mean loss residual",
            [
                Layer(
                    "bars",
                    shard["group_key"].astype(str).tolist(),
                    num(shard, "mean_loss_residual").tolist(),
                    label="shard",
                ),
            ],
        ),
        Chart(
            "step_time",
            "step time (s)",
            [
                Layer("line", *series("step_time_sec"), label="step time"),
                Layer(
                    "points",
                    *series("step_time_sec", flag(steps, "is_slow_step") & counted),
                    color="#d62728",
                    label="slow",
                ),
                *[Layer("vline", [c], color="#8c564b", label="checkpoint", dashed=True) for c in saved],
            ],
        ),
    ]


# --------------------------------------------------------------------------- the backends


def draw_matplotlib(chart: Chart) -> str:
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "run-diagnosis"  # deterministic ids
    rows = 2 if chart.below else 1
    fig, axes = plt.subplots(
        rows, 1, figsize=(WIDTH / DPI, HEIGHT * rows / DPI), dpi=DPI, sharex=True, squeeze=False
    )
    for ax, layers in zip(axes[:, 0], [chart.layers, chart.below][:rows], strict=True):
        for layer in layers:
            style = "--" if layer.dashed else "-"
            if layer.kind == "line":
                ax.plot(layer.x, layer.y, style, color=layer.color, lw=1.2, label=layer.label)
            elif layer.kind == "points":
                ax.scatter(layer.x, layer.y, s=14, color=layer.color, label=layer.label, zorder=3)
            elif layer.kind == "hline":
                ax.axhline(layer.x[0], ls=style, color=layer.color, lw=1, label=layer.label)
            elif layer.kind == "vline":
                ax.axvline(layer.x[0], ls=style, color=layer.color, lw=1)
            elif layer.kind == "vspan":
                ax.axvspan(layer.x[0], layer.x[1], color=layer.color, alpha=0.1)
            elif layer.kind == "bars":
                ax.bar(layer.x, layer.y, color=layer.color)
            elif layer.kind == "lanes":
                for i, ((start, end), color) in enumerate(zip(layer.x, layer.color.split(","), strict=True)):
                    ax.broken_barh([(start, end - start)], (i - 0.4, 0.8), color=color, alpha=0.75)
                ax.set_yticks(range(len(layer.y)), layer.y, fontsize=7)
                ax.invert_yaxis()
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(chart.ylabel)
    axes[0, 0].legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("step")
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)
    return out.getvalue()


def draw_pygal(chart: Chart) -> str | None:
    """pygal draws series and bars; it has no shaded span, rule or lane: None for a chart that needs one."""
    import pygal

    if any(layer.kind in ("vspan", "vline", "hline", "lanes") for layer in chart.layers + chart.below):
        return None
    config = {"width": WIDTH, "height": HEIGHT, "js": [], "show_dots": False, "disable_xml_declaration": True}
    if chart.layers[0].kind == "bars":
        bars = pygal.Bar(**config)
        bars.x_labels = chart.layers[0].x
        bars.add(chart.layers[0].label, chart.layers[0].y)
        return str(bars.render(is_unicode=True))
    plot = pygal.XY(**config)
    for layer in chart.layers:
        plot.add(
            layer.label,
            list(zip(layer.x, layer.y, strict=True)),
            stroke=layer.kind == "line",
            show_dots=layer.kind == "points",
        )
    return str(plot.render(is_unicode=True))


def vega_layer(layer: Layer) -> dict[str, Any]:
    color = {"value": layer.color}
    dash = {"strokeDash": [4, 3]} if layer.dashed else {}
    if layer.kind in ("line", "points"):
        values = [{"step": x, "value": y} for x, y in zip(layer.x, layer.y, strict=True)]
        mark = (
            {"type": "line", "strokeWidth": 1.2, **dash}
            if layer.kind == "line"
            else {"type": "point", "filled": True}
        )
        return {
            "data": {"values": values},
            "mark": mark,
            "encoding": {
                "x": {"field": "step", "type": "quantitative"},
                "y": {"field": "value", "type": "quantitative"},
                "color": color,
            },
        }
    if layer.kind in ("vline", "hline"):
        axis = "x" if layer.kind == "vline" else "y"
        return {
            "data": {"values": [{"at": layer.x[0]}]},
            "mark": {"type": "rule", **dash},
            "encoding": {axis: {"field": "at", "type": "quantitative"}, "color": color},
        }
    if layer.kind == "vspan":
        return {
            "data": {"values": [{"a": layer.x[0], "b": layer.x[1]}]},
            "mark": {"type": "rect", "opacity": 0.1},
            "encoding": {"x": {"field": "a", "type": "quantitative"}, "x2": {"field": "b"}, "color": color},
        }
    if layer.kind == "bars":
        values = [{"shard": x, "value": y} for x, y in zip(layer.x, layer.y, strict=True)]
        return {
            "data": {"values": values},
            "mark": "bar",
            "encoding": {
                "x": {"field": "shard", "type": "nominal"},
                "y": {"field": "value", "type": "quantitative"},
            },
        }
    values = [
        {"lane": name, "a": s, "b": e, "c": c}
        for name, (s, e), c in zip(layer.y, layer.x, layer.color.split(","), strict=True)
    ]
    return {
        "data": {"values": values},
        "mark": {"type": "bar", "opacity": 0.75},
        "encoding": {
            "y": {"field": "lane", "type": "nominal", "sort": None},
            "x": {"field": "a", "type": "quantitative"},
            "x2": {"field": "b"},
            "color": {"field": "c", "type": "nominal", "scale": None},
        },
    }


def draw_vega(chart: Chart) -> str:
    import vl_convert

    panels = [{"width": WIDTH - 120, "height": HEIGHT - 60, "layer": [vega_layer(x) for x in chart.layers]}]
    if chart.below:
        panels.append(
            {"width": WIDTH - 120, "height": HEIGHT - 60, "layer": [vega_layer(x) for x in chart.below]}
        )
    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "vconcat": panels}
    return str(vl_convert.vegalite_to_svg(json.dumps(spec)))


def draw_svg_charts(data: ReportData, page: PageOne) -> list[str]:
    """The report's own plots, in full (report_plots: every note, legend and caption)."""
    import base64

    plots = [plotter(data, page) for plotter in PLOTTERS]
    return [base64.b64decode(p.image_base64).decode() for p in plots if p.image_base64 is not None]


def measure(name: str, draw: Callable[[], list[str | None]], repeat: int) -> dict[str, Any]:
    times, svgs = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        svgs = draw()
        times.append(time.perf_counter() - start)
    drawn = [s for s in svgs if s is not None]
    return {
        "backend": name,
        "plots_drawn": f"{len(drawn)} of {len(svgs)}",
        "svg_bytes": sum(len(s.encode()) for s in drawn),
        "render_sec_median": round(statistics.median(times), 3),
        "refers_outside": sorted({m.group(0) for s in drawn for m in EXTERNAL.finditer(s)}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--target", type=Path, required=True)
    parser.add_argument("--run-id")
    parser.add_argument("--site", action="append", default=[], help="a library venv's site-packages")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sys.path += args.site
    data = load_report_data(args.db, args.target, args.run_id, with_history=False)
    page = build_page_one(data, build_double_check(data).consistency)
    charts = step_layers(data, page)
    results = [measure("svg_charts (full plots)", lambda: list(draw_svg_charts(data, page)), args.repeat)]
    backends: dict[str, Callable[[Chart], str | None]] = {
        "matplotlib (svg backend)": draw_matplotlib,
        "pygal": draw_pygal,
        "vega-lite + vl-convert": draw_vega,
    }
    for name, draw in backends.items():
        try:
            draw(charts[-1])  # import and warm up once (a report is one process: the import counts apart)
        except ImportError as error:
            results.append({"backend": name, "error": f"not installed: {error}"})
            continue
        results.append(measure(name, lambda draw=draw: [draw(c) for c in charts], args.repeat))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
