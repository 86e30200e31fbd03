"""run_diagnosis.svg_charts: ticks, decimation of long series, and a valid, small, deterministic SVG."""

from __future__ import annotations

import math
import re
import time
import xml.etree.ElementTree as ET

import numpy as np

from run_diagnosis.svg_charts import (
    Axes,
    Figure,
    LegendEntry,
    Note,
    Stroke,
    data_range,
    decimate,
    nice_ticks,
    numeric_ticks,
    tick_labels,
)

SVG = "{http://www.w3.org/2000/svg}"


def test_ticks_are_multiples_of_1_2_5_steps_inside_the_range() -> None:
    assert nice_ticks(0.0, 250.0, 6) == [0.0, 50.0, 100.0, 150.0, 200.0, 250.0]
    assert nice_ticks(2.7, 9.4, 8) == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    assert nice_ticks(-0.12, 0.71, 6) == [0.0, 0.2, 0.4, 0.6]
    assert tick_labels([0.0, 0.005, 0.01]) == ["0", "0.005", "0.010"]
    assert tick_labels([0.0, 500_000.0, 1_000_000.0]) == ["0", "0.5M", "1.0M"]


def test_a_range_of_a_few_ulps_is_flat_and_gets_ticks() -> None:
    # a frozen loss logged as 16.74222755432129 and its last-bit neighbour (a held-out Lightning
    # log): the range was 4e-15 wide, its ticks rounded to one value and labelling them failed
    value = 16.74222755432129
    low, high = data_range([value, math.nextafter(value, 20.0)])
    assert high - low > 1.0
    ticks, labels = numeric_ticks(low, high, 200.0, 40.0)
    assert len(ticks) >= 2 and labels == [f"{t:.1f}" for t in ticks]
    assert tick_labels([3.0, 3.0]) == ["3", "3"]


def test_decimation_keeps_at_most_two_points_per_pixel_column_and_the_spikes() -> None:
    n = 1_000_000
    rng = np.random.default_rng(1)
    px = np.linspace(0.0, 600.0, n, endpoint=False)
    py = 100 + rng.normal(0, 5, n)
    py[123_457] = 2.0  # a spike up (pixels grow downwards)
    py[800_001] = np.nan  # a gap
    keep = decimate(px, py)
    assert len(keep) <= 2 * 600 + 4
    assert np.all(np.diff(keep) > 0)  # drawing order kept
    assert 123_457 in keep and 800_001 in keep
    column = np.floor(px[keep])
    assert np.min(py[keep][column == np.floor(px[123_457])]) == 2.0
    assert np.array_equal(decimate(px[:3], py[:3]), [1, 2])  # one column: its min and its max
    assert np.array_equal(decimate(np.array([0.0, 5.0, 10.0]), py[:3]), [0, 1, 2])  # sparse: all kept


def chart(n: int) -> str:
    step = np.arange(n, dtype=float)
    loss = 3 + np.exp(-step / (n / 5)) + np.sin(step) * 0.1
    loss[n // 2] = 9.0
    ax = Axes(title='Loss <"quoted"> & co', xlabel="step", ylabel="loss")
    fig = Figure(share_x=True)
    fig.add_row(260, ax)
    ax.line(step, loss, "#1f77b4", label="loss")
    ax.line(step, loss - 0.1, "black", dash="dashed", label="baseline")
    ax.scatter(step[::7], loss[::7], "#b0b0b0", 5, label="superseded")
    ax.scatter(step[n // 2 : n // 2 + 1], loss[n // 2 : n // 2 + 1], "#d62728", 8, marker="v", label="spike")
    ax.vspan(n * 0.1, n * 0.3, "#9467bd", label="fix first")
    ax.vline(n * 0.6, Stroke("black", 1, "dotted"), label="restart")
    ax.hline(4.0, Stroke("black", 1, "dashed"))
    ax.note(Note("peak & <here>", n / 2, 9.0, dx=20, dy=30, arrow=True))
    twin = ax.twinx("accuracy")
    twin.line(
        step[:: max(1, n // 20)], np.linspace(0, 1, len(step[:: max(1, n // 20)])), "#2ca02c", marker="s"
    )
    lanes = Axes(xlabel="step", ylabel="findings", grid="x")
    lanes.lanes([("1. lr_above_peak", 0, n / 2, "#d62728"), ("2. <odd> & name", n / 3, n, "#bcbd22")])
    lanes.legend = [LegendEntry("high", "patch", "#d62728", opacity=0.75)]
    fig.add_row(60, lanes)
    bars = Axes(title="by shard")
    bars.bars(["0", "1", "web_crawl_2024q3"], np.array([0.1, -0.05, 0.7]), ["#d62728", "#2ca02c", "#d62728"])
    fig.add_row(120, bars)
    return fig.render("A chart", "Its caption & details")


def test_a_chart_is_valid_escaped_deterministic_svg() -> None:
    svg = chart(500)
    root = ET.fromstring(svg)  # well-formed XML, text escaped
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    assert (
        root.findtext(f"{SVG}title") == "A chart" and root.findtext(f"{SVG}desc") == "Its caption & details"
    )
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert 'Loss <"quoted"> & co' in texts and "peak & <here>" in texts and "2. <odd> & name" in texts
    for label in ("loss", "baseline", "superseded", "spike", "fix first", "restart", "accuracy", "high"):
        assert label in texts, label
    assert float(root.get("width")) == 900 and float(root.get("height")) > 400
    assert chart(500) == svg  # same input, same bytes
    numbers = re.findall(r"\d+\.\d+", " ".join(p.get("d", "") for p in root.iter(f"{SVG}path")))
    assert numbers and all(len(n.split(".")[1]) == 1 for n in numbers)  # one decimal of a pixel


def test_a_million_points_give_a_small_svg_quickly() -> None:
    started = time.process_time()
    svg = chart(1_000_000)
    assert time.process_time() - started < 5  # generous for a loaded machine; ~0.3 s alone
    assert len(svg.encode()) < 300_000
    ET.fromstring(svg)
    # the worst case for markers: a million points of noise filling the plot area
    cloud = Axes()
    fig = Figure()
    fig.add_row(260, cloud)
    cloud.scatter(np.arange(1_000_000), np.random.default_rng(2).normal(0, 1, 1_000_000), "#b0b0b0", 4.8)
    assert len(fig.render().encode()) < 300_000
