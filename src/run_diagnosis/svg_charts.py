"""Small hand-written SVG charts: what the report's plots need, at a fraction of matplotlib's cost.

A Figure holds rows of Axes (side by side in a row; stacked rows may share the x axis).
Axes collect items in data coordinates: line series (solid, dashed, dotted, with or without
markers), scatter markers (circle, triangle-down, star, square), horizontal and vertical
rules, shaded x-spans, text notes (with an optional arrow), a categorical bar chart, a lanes
panel (one row per item, spans as colored bars) and a right-hand twin axis. Figure.render()
lays everything out in pixels (nice 1-2-5 ticks, grid, titles, axis labels, a legend right of
the plot area) and returns one SVG document.

Large series are decimated to at most two points (the minimum and the maximum, in drawing
order) per horizontal pixel, so a spike stays visible and a million-row log still gives a
small file; coordinates are written with one decimal of a pixel. The same input gives the
same bytes. Sizes are pixels; `PT` converts matplotlib-style points (the report's 100 dpi).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from html import escape
from typing import Literal

import numpy as np

Dash = Literal["solid", "dashed", "dotted"]
Marker = Literal["o", "v", "*", "s"]
Anchor = Literal["start", "end"]

PT = 100 / 72  # pixels per point at 100 dpi
FONT = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"
FONT_SIZE = 10 * PT  # tick and axis labels
TITLE_SIZE = 12 * PT
LEGEND_SIZE = 8 * PT
GRID_COLOR = "#e6e6e6"
TICK_LENGTH = 3.5 * PT
PAD = 4.0
Y_TICK_SPACING = 32  # at least this many pixels between y ticks
X_TICK_SPACING = 80
MARGIN = 0.05  # share of the data range added on each side (matplotlib's default)
DASH_PATTERNS = {"dashed": (3.7, 1.6), "dotted": (1.0, 1.65)}  # in line widths


def fmt(value: float) -> str:
    """A pixel coordinate with one decimal, without a trailing '.0' or a '-0'."""
    text = f"{value:.1f}"
    if text.endswith(".0"):
        text = text[:-2]
    return "0" if text == "-0" else text


def text_width(text: str, size: float) -> float:
    """Estimated width of `text` in a DejaVu-like sans-serif font (slightly generous)."""
    units = 0.0
    for char in text:
        if char in "ijl.,:;'|!()[] ft":
            units += 0.34
        elif char in "mwMW%":
            units += 0.95
        elif char.isupper() or char in "_-=+<>*~":
            units += 0.7
        else:
            units += 0.62
    return units * size


def text(
    x: float,
    y: float,
    content: str,
    size: float = FONT_SIZE,
    anchor: str = "middle",
    color: str = "#000",
    rotate: float = 0.0,
    baseline: str = "",
    halo: bool = False,
) -> str:
    """One <text> element (content XML-escaped); `rotate` turns it around its anchor point."""
    attrs = f'x="{fmt(x)}" y="{fmt(y)}" font-size="{fmt(size)}"'
    if anchor != "start":
        attrs += f' text-anchor="{anchor}"'
    if color != "#000":
        attrs += f' fill="{color}"'
    if baseline:
        attrs += f' dominant-baseline="{baseline}"'
    if halo:  # a white outline under the glyphs keeps the text readable over lines
        attrs += ' stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke"'
    if rotate:
        attrs += f' transform="rotate({fmt(rotate)} {fmt(x)} {fmt(y)})"'
    return f"<text {attrs}>{escape(content)}</text>"


# --------------------------------------------------------------------------- ticks


# a range narrower than this share of its values is flat (float rounding, not data)
FLAT_RANGE = 1e-9


def nice_ticks(low: float, high: float, max_ticks: int) -> list[float]:
    """Multiples of the smallest 1-2-5 step that puts at most `max_ticks` ticks inside [low, high]."""
    power = 10.0 ** math.floor(math.log10((high - low) / max(max_ticks, 1)))
    for step in (m * power * scale for scale in (1.0, 10.0, 100.0) for m in (1.0, 2.0, 5.0)):
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
        if last - first + 1 <= max_ticks:
            return [round(i * step, 12) for i in range(first, last + 1)]
    return [low, high]


def tick_labels(ticks: list[float]) -> list[str]:
    """Labels with the decimals the step needs; M and G suffixes from a million on."""
    if not ticks:
        return []
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 0.0
    step = step if step > 0 else abs(ticks[0]) or 1.0
    top = max(abs(t) for t in ticks)
    for divisor, suffix in ((1e9, "G"), (1e6, "M")):
        if top >= divisor:
            scaled = tick_labels([t / divisor for t in ticks])
            return [label + suffix if label != "0" else label for label in scaled]
    decimals = min(max(0, -math.floor(math.log10(step) + 1e-9)), 8)
    labels = [f"{t:.{decimals}f}" for t in ticks]
    return ["0" if label.strip("-0.") == "" else label for label in labels]


def data_range(values: list[float], margin: float = MARGIN) -> tuple[float, float]:
    """(low, high) around the finite values with a margin; a flat or empty range is widened."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return (0.0, 1.0)
    low, high = min(finite), max(finite)
    if high - low <= FLAT_RANGE * max(abs(low), abs(high)):
        # flat to float precision (a frozen loss logged as 16.74222755432129 and its last-bit
        # neighbour): a range of a few ulps has no ticks to draw
        pad = abs(low) * 0.05 or 0.5
        return (low - pad, high + pad)
    pad = (high - low) * margin
    return (low - pad, high + pad)


def finite_bounds(values: np.ndarray) -> list[float]:
    finite = values[np.isfinite(values)]
    return [float(finite.min()), float(finite.max())] if finite.size else []


# --------------------------------------------------------------------------- items


@dataclass(frozen=True)
class Stroke:
    color: str
    width: float = 1.5 * PT
    dash: Dash = "solid"
    opacity: float = 1.0

    def attrs(self) -> str:
        attrs = f'stroke="{self.color}" stroke-width="{self.width:.2f}"'
        pattern = DASH_PATTERNS.get(self.dash)
        if pattern:
            attrs += f' stroke-dasharray="{" ".join(fmt(p * self.width) for p in pattern)}"'
        if self.opacity < 1:
            attrs += f' stroke-opacity="{self.opacity:g}"'
        return attrs


@dataclass(frozen=True)
class Series:
    """A line through the points (stroke), markers on them (marker), or both."""

    x: np.ndarray
    y: np.ndarray
    stroke: Stroke | None = None
    marker: Marker | None = None
    marker_size: float = 6.0  # diameter in px
    marker_color: str = "#000"
    label: str | None = None


@dataclass(frozen=True)
class Rule:
    """A horizontal (`y` set) or vertical (`x` set) line across the plot area."""

    stroke: Stroke
    x: float | None = None
    y: float | None = None
    label: str | None = None


@dataclass(frozen=True)
class Span:
    """A shaded band over the x range [start, end], full height."""

    start: float
    end: float
    color: str
    opacity: float = 0.1
    label: str | None = None


@dataclass(frozen=True)
class Note:
    """Text at a data point (y None = the top of the plot area), moved by (dx, dy) pixels."""

    content: str
    x: float
    y: float | None
    dx: float = 0.0
    dy: float = 0.0
    anchor: Anchor = "start"
    color: str = "#000"
    size: float = LEGEND_SIZE
    arrow: bool = False


@dataclass(frozen=True)
class LegendEntry:
    label: str
    kind: Literal["line", "marker", "patch"]
    color: str
    stroke: Stroke | None = None
    marker: Marker | None = None
    marker_size: float = 6.0
    opacity: float = 1.0


Item = Series | Rule | Span | Note


@dataclass
class Axes:
    """One plot area. Categorical axes: set with bars() (x) or lanes() (y)."""

    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    grid: Literal["both", "x", "y", "none"] = "both"
    show_xticklabels: bool = True
    items: list[Item] = field(default_factory=list)
    x_categories: list[str] = field(default_factory=list)
    x_category_size: float = FONT_SIZE
    bar_values: np.ndarray | None = None
    bar_colors: list[str] = field(default_factory=list)
    lanes_rows: list[tuple[str, float, float, str]] = field(default_factory=list)
    lanes_opacity: float = 1.0
    lane_label_size: float = 7 * PT
    twin: Axes | None = None
    legend: list[LegendEntry] | None = None  # None: one entry per labelled item
    xlim: tuple[float, float] | None = None  # a zoom: the x range shown (y fits the data inside it)

    def line(
        self,
        x: np.ndarray,
        y: np.ndarray,
        color: str,
        width: float = 1.5 * PT,
        dash: Dash = "solid",
        label: str | None = None,
        marker: Marker | None = None,
        marker_size: float = 4 * PT,
    ) -> None:
        self.items.append(
            Series(
                np.asarray(x, float),
                np.asarray(y, float),
                Stroke(color, width, dash),
                marker,
                marker_size,
                color,
                label,
            )
        )

    def scatter(
        self,
        x: np.ndarray,
        y: np.ndarray,
        color: str,
        size: float,
        marker: Marker = "o",
        label: str | None = None,
    ) -> None:
        """Markers of diameter `size` px at the points."""
        self.items.append(
            Series(np.asarray(x, float), np.asarray(y, float), None, marker, size, color, label)
        )

    def hline(self, y: float, stroke: Stroke, label: str | None = None) -> None:
        self.items.append(Rule(stroke, y=float(y), label=label))

    def vline(self, x: float, stroke: Stroke, label: str | None = None) -> None:
        self.items.append(Rule(stroke, x=float(x), label=label))

    def vspan(
        self, start: float, end: float, color: str, opacity: float = 0.1, label: str | None = None
    ) -> None:
        self.items.append(Span(float(start), float(end), color, opacity, label))

    def note(self, note: Note) -> None:
        self.items.append(note)

    def bars(
        self, categories: list[str], values: np.ndarray, colors: list[str], label_size: float = FONT_SIZE
    ) -> None:
        """One bar per category (0.8 wide, from 0), the categories as x tick labels turned 45 degrees."""
        self.x_categories, self.x_category_size = list(categories), label_size
        self.bar_values, self.bar_colors = np.asarray(values, float), list(colors)

    def lanes(self, rows: list[tuple[str, float, float, str]], opacity: float = 1.0) -> None:
        """One lane per row (label, start, end, color), the first on top, labels as y ticks."""
        self.lanes_rows, self.lanes_opacity = list(rows), opacity

    def twinx(self, ylabel: str) -> Axes:
        """A second y axis on the right, sharing this one's x axis."""
        self.twin = Axes(ylabel=ylabel, grid="none")
        return self.twin

    def legend_entries(self) -> list[LegendEntry]:
        if self.legend is not None:
            return self.legend
        entries = [entry for item in self.items if (entry := legend_entry(item)) is not None]
        return entries + (self.twin.legend_entries() if self.twin else [])

    # ----------------------------------------------------------- data limits

    def x_values(self) -> list[float]:
        values = [v for item in self.items for v in item_extent(item, "x")]
        for _, start, end, _ in self.lanes_rows:
            values += [start, end]
        return values + (self.twin.x_values() if self.twin else [])

    def y_limits(self) -> tuple[float, float]:
        if self.lanes_rows:
            return (len(self.lanes_rows) - 0.5, -0.5)  # inverted: the first lane on top
        values = [v for item in self.items for v in item_extent(item, "y", self.xlim)]
        if self.bar_values is not None:
            values += finite_bounds(self.bar_values)
            low, high = data_range([*values, 0.0])
            return (0.0 if min([*values, 0.0]) >= 0 else low, high)
        return data_range(values)

    def x_limits(self) -> tuple[float, float]:
        if self.xlim is not None:
            return self.xlim
        if self.x_categories:
            return (
                -0.5 - 0.05 * len(self.x_categories),
                len(self.x_categories) - 0.5 + 0.05 * len(self.x_categories),
            )
        return data_range(self.x_values())


def item_extent(
    item: Item, axis: Literal["x", "y"], window: tuple[float, float] | None = None
) -> list[float]:
    """The data values an item spans on one axis (for the axis limits; notes take no room); with
    an x window (a zoom), a series' y values inside it only."""
    if isinstance(item, Series):
        if axis == "x":
            return finite_bounds(item.x)
        if window is not None:
            return finite_bounds(item.y[(item.x >= window[0]) & (item.x <= window[1])])
        return finite_bounds(item.y)
    if isinstance(item, Rule):
        value = item.x if axis == "x" else item.y
        return [] if value is None else [value]
    if isinstance(item, Span) and axis == "x":
        return [item.start, item.end]
    return []


def legend_entry(item: Item) -> LegendEntry | None:
    if isinstance(item, Note) or item.label is None:
        return None
    if isinstance(item, Span):
        return LegendEntry(item.label, "patch", item.color, opacity=item.opacity)
    if isinstance(item, Rule):
        return LegendEntry(item.label, "line", item.stroke.color, stroke=item.stroke)
    if item.stroke is None:
        return LegendEntry(
            item.label, "marker", item.marker_color, marker=item.marker, marker_size=item.marker_size
        )
    return LegendEntry(item.label, "line", item.stroke.color, item.stroke, item.marker, item.marker_size)


# --------------------------------------------------------------------------- drawing helpers


def marker_path(marker: Marker, size: float, xs: list[str], ys: list[str]) -> str:
    """Path data for one marker per point: each starts with M at its centre, then relative moves."""
    r = size / 2
    if marker == "o":
        shape = "h0"  # drawn as a round-capped dot of width `size`
    elif marker == "s":
        shape = f"m{fmt(-r)} {fmt(-r)}h{fmt(size)}v{fmt(size)}h{fmt(-size)}z"
    elif marker == "v":
        shape = f"m0 {fmt(r)}l{fmt(-r)} {fmt(-1.6 * r)}h{fmt(2 * r)}z"
    else:  # five-pointed star
        points = []
        for k in range(10):
            radius = r if k % 2 == 0 else r * 0.4
            angle = math.pi / 2 + k * math.pi / 5
            points.append((radius * math.cos(angle), -radius * math.sin(angle)))
        steps = [points[0]] + [(b[0] - a[0], b[1] - a[1]) for a, b in itertools.pairwise(points)]
        shape = (
            f"m{fmt(steps[0][0])} {fmt(steps[0][1])}"
            + "".join(f"l{fmt(dx)} {fmt(dy)}" for dx, dy in steps[1:])
            + "z"
        )
    return "".join(f"M{x} {y}{shape}" for x, y in zip(xs, ys, strict=True))


def marker_element(marker: Marker, size: float, color: str, xs: list[str], ys: list[str]) -> str:
    """One <path> drawing a marker at each point (circles: round-capped dots)."""
    if not xs:
        return ""
    d = marker_path(marker, size, xs, ys)
    if marker == "o":
        return (
            f'<path d="{d}" stroke="{color}" stroke-width="{fmt(size)}" stroke-linecap="round" fill="none"/>'
        )
    return f'<path d="{d}" fill="{color}" stroke="{color}" stroke-width="0.5" stroke-linejoin="round"/>'


def decimate(px: np.ndarray, py: np.ndarray) -> np.ndarray:
    """Indices to draw of a polyline in pixels: per run of points in the same pixel column (and
    the same stretch between gaps), the first minimum and the first maximum, in drawing order."""
    n = len(px)
    if n <= 2:
        return np.arange(n)
    finite = np.isfinite(px) & np.isfinite(py)
    column = np.where(finite, np.floor(np.nan_to_num(px)), -1.0)
    new_group = np.empty(n, dtype=bool)
    new_group[0] = True
    new_group[1:] = (column[1:] != column[:-1]) | (finite[1:] != finite[:-1])
    starts = np.flatnonzero(new_group)
    if len(starts) * 2 >= n:
        return np.arange(n)
    group = np.cumsum(new_group) - 1
    values = np.where(finite, py, 0.0)
    lows = np.minimum.reduceat(values, starts)[group]
    highs = np.maximum.reduceat(values, starts)[group]

    def first_where(mask: np.ndarray) -> np.ndarray:
        hits = np.flatnonzero(mask)
        keep = np.empty(len(hits), dtype=bool)
        keep[:1] = True
        keep[1:] = group[hits[1:]] != group[hits[:-1]]
        return hits[keep]

    # a gap stays a gap: its first point is kept (it breaks the line)
    return np.union1d(
        np.union1d(first_where(values == lows), first_where(values == highs)), starts[~finite[starts]]
    )


def polyline_path(px: np.ndarray, py: np.ndarray) -> str:
    """Path data through the points, a new subpath after each gap (non-finite value)."""
    keep = decimate(px, py)
    parts: list[str] = []
    pen_down = False
    for x, y in zip(np.round(px[keep], 1).tolist(), np.round(py[keep], 1).tolist(), strict=True):
        if not (math.isfinite(x) and math.isfinite(y)):
            pen_down = False
            continue
        parts.append(("L" if pen_down else "M") + f"{fmt(x)} {fmt(y)}")
        pen_down = True
    return "".join(parts)


def unique_points(px: np.ndarray, py: np.ndarray, cell: float) -> tuple[list[str], list[str]]:
    """Marker positions, one per `cell`-pixel square (half a marker: closer markers hide each other)."""
    finite = np.isfinite(px) & np.isfinite(py)
    px, py = px[finite], py[finite]
    if len(px) > 1:
        qx = np.round(px / cell).astype(np.int64)
        qy = np.round(py / cell).astype(np.int64)
        _, first = np.unique(qx * 1_000_003 + qy, return_index=True)
        first.sort()
        px, py = px[first], py[first]
    return [fmt(v) for v in np.round(px, 1).tolist()], [fmt(v) for v in np.round(py, 1).tolist()]


@dataclass(frozen=True)
class Scale:
    """Data to pixels on one axis."""

    low: float
    high: float
    start: float  # pixel of `low`
    end: float  # pixel of `high`

    def __call__(self, value: np.ndarray | float) -> np.ndarray:
        return self.start + (np.asarray(value, float) - self.low) * (self.end - self.start) / (
            self.high - self.low
        )

    def at(self, value: float) -> float:
        return float(self(value))


# --------------------------------------------------------------------------- layout and rendering


@dataclass
class Box:
    left: float
    top: float
    width: float
    height: float

    @property
    def right(self) -> float:
        return self.left + self.width

    @property
    def bottom(self) -> float:
        return self.top + self.height


@dataclass
class Figure:
    """Rows of axes: add_row(height, *axes). With share_x, numeric x axes share one x range."""

    width: float = 900.0
    title: str = ""
    share_x: bool = False
    legend: list[LegendEntry] = field(default_factory=list)  # figure legend, top right
    rows: list[tuple[float, list[Axes]]] = field(default_factory=list)

    def add_row(self, height: float, *axes: Axes) -> None:
        self.rows.append((height, list(axes)))

    def render(self, title: str = "", description: str = "") -> str:
        """The SVG document; `title` (default: the figure title) and `description` name it for readers."""
        return render_figure(self, title or self.title, description)


def y_tick_layout(axes: Axes, height: float) -> tuple[list[float], list[str], float]:
    """(tick values, labels, label font size) of the y axis of a plot area `height` pixels high."""
    if axes.lanes_rows:
        return (
            [float(i) for i in range(len(axes.lanes_rows))],
            [r[0] for r in axes.lanes_rows],
            axes.lane_label_size,
        )
    ticks, labels = numeric_ticks(*axes.y_limits(), height, Y_TICK_SPACING)
    return ticks, labels, FONT_SIZE


def label_width(labels: list[str], size: float) -> float:
    return max((text_width(label, size) for label in labels), default=0.0)


def legend_size(entries: list[LegendEntry]) -> tuple[float, float]:
    if not entries:
        return (0.0, 0.0)
    width = 2 * PAD + 22 + 6 + label_width([e.label for e in entries], LEGEND_SIZE)
    return (width, 2 * PAD + len(entries) * LEGEND_SIZE * 1.5)


def numeric_ticks(low: float, high: float, pixels: float, spacing: float) -> tuple[list[float], list[str]]:
    lo, hi = min(low, high), max(low, high)
    ticks = nice_ticks(lo, hi, max(3, min(10, int(pixels // spacing) + 1)))
    return ticks, tick_labels(ticks)


@dataclass
class Panel:
    """An axes with its scales and ticks, placed."""

    axes: Axes
    box: Box
    x: Scale
    y: Scale
    x_ticks: list[float]
    x_labels: list[str]
    y_ticks: list[float]
    y_labels: list[str]
    y_label_size: float
    twin_y: Scale | None = None
    twin_ticks: list[float] = field(default_factory=list)
    twin_labels: list[str] = field(default_factory=list)


def x_label_depth(axes: Axes) -> float:
    """Height below the plot area taken by the x tick labels and the x label."""
    depth = 0.0
    if axes.show_xticklabels:
        if axes.x_categories:
            depth += (
                TICK_LENGTH
                + PAD
                + label_width(axes.x_categories, axes.x_category_size) * math.sqrt(0.5)
                + axes.x_category_size
            )
        else:
            depth += TICK_LENGTH + PAD + FONT_SIZE
    if axes.xlabel:
        depth += PAD + FONT_SIZE * 1.2
    return depth


def render_figure(figure: Figure, name: str, description: str) -> str:
    title_height = TITLE_SIZE * 1.8 if figure.title else 0.0
    _, fig_legend_h = legend_size(figure.legend)
    shared_x = None
    if figure.share_x:
        zooms = [a.xlim for _, row in figure.rows for a in row if a.xlim is not None]
        shared_x = (
            zooms[0]
            if zooms
            else data_range(
                [v for _, row in figure.rows for a in row if not a.x_categories for v in a.x_values()]
            )
        )

    # horizontal layout: margins from the widest tick labels, per column (aligned across rows)
    columns = max(len(row) for _, row in figure.rows)
    lefts, rights = [0.0] * columns, [0.0] * columns
    y_ticks_by_axes: dict[int, tuple[list[float], list[str], float]] = {}
    for height, row in figure.rows:
        for col, axes in enumerate(row):
            ticks, labels, size = y_tick_layout(axes, height)
            y_ticks_by_axes[id(axes)] = (ticks, labels, size)
            left = (
                TICK_LENGTH
                + PAD
                + label_width(labels, size)
                + (PAD + FONT_SIZE * 1.3 if axes.ylabel else 0)
                + PAD
            )
            right = PAD * 2
            if axes.twin is not None:
                _, twin_labels = numeric_ticks(*axes.twin.y_limits(), height, Y_TICK_SPACING)
                right += TICK_LENGTH + PAD + label_width(twin_labels, FONT_SIZE) + PAD + FONT_SIZE * 1.3
            legend_w, _ = legend_size(axes.legend_entries())
            if legend_w:
                right += PAD * 2 + legend_w
            lefts[col], rights[col] = max(lefts[col], left), max(rights[col], right)
    column_width = figure.width / columns

    # vertical layout
    panels: list[Panel] = []
    top = title_height + (fig_legend_h + PAD if figure.legend and not figure.title else 0)
    for height, row in figure.rows:
        head = max((TITLE_SIZE * 1.8 if a.title else PAD * 2) for a in row)
        foot = 0.0
        for col, axes in enumerate(row):
            box = Box(
                col * column_width + lefts[col], top + head, column_width - lefts[col] - rights[col], height
            )
            x_low, x_high = shared_x if shared_x and not axes.x_categories else axes.x_limits()
            x_scale = Scale(x_low, x_high, box.left, box.right)
            if axes.x_categories:
                x_ticks = [float(i) for i in range(len(axes.x_categories))]
                x_labels = list(axes.x_categories)
            else:
                x_ticks, x_labels = numeric_ticks(x_low, x_high, box.width, X_TICK_SPACING)
            y_low, y_high = axes.y_limits()
            y_ticks, y_labels, y_size = y_ticks_by_axes[id(axes)]
            panel = Panel(
                axes,
                box,
                x_scale,
                Scale(y_low, y_high, box.bottom, box.top),
                x_ticks,
                x_labels,
                y_ticks,
                y_labels,
                y_size,
            )
            if axes.twin is not None:
                t_low, t_high = axes.twin.y_limits()
                panel.twin_y = Scale(t_low, t_high, box.bottom, box.top)
                panel.twin_ticks, panel.twin_labels = numeric_ticks(t_low, t_high, height, Y_TICK_SPACING)
            panels.append(panel)
            foot = max(foot, x_label_depth(axes))
            _, legend_h = legend_size(axes.legend_entries())
            foot = max(foot, legend_h - height)
        top += head + height + foot + PAD * 2
    total_height = math.ceil(top + PAD)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{fmt(figure.width)}" height="{total_height}" '
        f'viewBox="0 0 {fmt(figure.width)} {total_height}" role="img" font-family="{FONT}">',
    ]
    if name:
        out.append(f"<title>{escape(name)}</title>")
    if description:
        out.append(f"<desc>{escape(description)}</desc>")
    out.append(f'<rect width="{fmt(figure.width)}" height="{total_height}" fill="#fff"/>')
    if figure.title:
        out.append(text(figure.width / 2, TITLE_SIZE * 1.3, figure.title, TITLE_SIZE))
    if figure.legend:
        width, _ = legend_size(figure.legend)
        out.append(draw_legend(figure.legend, figure.width - width - PAD, PAD))
    for number, panel in enumerate(panels):
        out.append(draw_panel(panel, f"c{number}"))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def draw_legend(entries: list[LegendEntry], left: float, top: float) -> str:
    width, height = legend_size(entries)
    out = [
        f'<g font-size="{fmt(LEGEND_SIZE)}"><rect x="{fmt(left)}" y="{fmt(top)}" width="{fmt(width)}" '
        f'height="{fmt(height)}" fill="#fff" fill-opacity="0.8" stroke="#ccc" rx="3"/>'
    ]
    for i, entry in enumerate(entries):
        middle = top + PAD + (i + 0.5) * LEGEND_SIZE * 1.5
        x0, x1 = left + PAD, left + PAD + 22
        if entry.kind == "patch":
            out.append(
                f'<rect x="{fmt(x0)}" y="{fmt(middle - 4)}" width="22" height="8" fill="{entry.color}"'
                + (f' fill-opacity="{entry.opacity:g}"' if entry.opacity < 1 else "")
                + f' stroke="{entry.color}" stroke-opacity="{min(1.0, entry.opacity * 2):g}"/>'
            )
        if entry.stroke is not None:
            out.append(f'<path d="M{fmt(x0)} {fmt(middle)}H{fmt(x1)}" {entry.stroke.attrs()} fill="none"/>')
        if entry.marker is not None:
            size = min(entry.marker_size, 12.0)
            out.append(marker_element(entry.marker, size, entry.color, [fmt((x0 + x1) / 2)], [fmt(middle)]))
        out.append(text(x1 + 6, middle, entry.label, LEGEND_SIZE, anchor="start", baseline="central"))
    out.append("</g>")
    return "".join(out)


def draw_panel(panel: Panel, clip_id: str) -> str:
    axes, box = panel.axes, panel.box
    out = [
        f'<clipPath id="{clip_id}"><rect x="{fmt(box.left)}" y="{fmt(box.top)}" '
        f'width="{fmt(box.width)}" height="{fmt(box.height)}"/></clipPath>'
    ]
    # grid
    grid: list[str] = []
    if axes.grid in ("both", "x"):
        grid += [f"M{fmt(panel.x.at(t))} {fmt(box.top)}V{fmt(box.bottom)}" for t in panel.x_ticks]
    if axes.grid in ("both", "y"):
        grid += [f"M{fmt(box.left)} {fmt(panel.y.at(t))}H{fmt(box.right)}" for t in panel.y_ticks]
    if grid:
        out.append(f'<path d="{"".join(grid)}" stroke="{GRID_COLOR}" stroke-width="1" fill="none"/>')
    # data, clipped to the plot area: spans under lanes and bars under lines under markers
    body: list[str] = []
    for item in axes.items:
        if isinstance(item, Span):
            x0, x1 = sorted((panel.x.at(item.start), panel.x.at(item.end)))
            body.append(
                f'<rect x="{fmt(x0)}" y="{fmt(box.top)}" width="{fmt(x1 - x0)}" height="{fmt(box.height)}" '
                f'fill="{item.color}" fill-opacity="{item.opacity:g}"/>'
            )
    body += draw_lanes(panel) + draw_bars(panel)
    for item in axes.items:
        if isinstance(item, Rule):
            if item.x is not None:
                x = fmt(panel.x.at(item.x))
                body.append(f'<path d="M{x} {fmt(box.top)}V{fmt(box.bottom)}" {item.stroke.attrs()}/>')
            elif item.y is not None:
                y = fmt(panel.y.at(item.y))
                body.append(f'<path d="M{fmt(box.left)} {y}H{fmt(box.right)}" {item.stroke.attrs()}/>')
    series = [(item, panel.y) for item in axes.items if isinstance(item, Series)]
    if axes.twin is not None and panel.twin_y is not None:
        series += [(item, panel.twin_y) for item in axes.twin.items if isinstance(item, Series)]
    for item, y_scale in sorted(series, key=lambda pair: pair[0].stroke is None):  # lines, then markers
        px, py = panel.x(item.x), y_scale(item.y)
        if item.stroke is not None:
            d = polyline_path(px, py)
            body.append(f'<path d="{d}" {item.stroke.attrs()} fill="none" stroke-linejoin="round"/>')
        if item.marker is not None:
            xs, ys = unique_points(px, py, max(1.0, item.marker_size / 2))
            body.append(marker_element(item.marker, item.marker_size, item.marker_color, xs, ys))
    out.append(f'<g clip-path="url(#{clip_id})">' + "".join(body) + "</g>")
    out += draw_frame(panel)
    for item in axes.items:
        if isinstance(item, Note):
            out.append(draw_note(panel, item))
    entries = axes.legend_entries()
    if entries:
        left = box.right + PAD * 2
        if axes.twin is not None:
            left += (
                TICK_LENGTH + PAD + label_width(panel.twin_labels, FONT_SIZE) + PAD + FONT_SIZE * 1.3 + PAD
            )
        out.append(draw_legend(entries, left, box.top))
    return "\n".join(part for part in out if part)


def draw_lanes(panel: Panel) -> list[str]:
    out = []
    for lane, (_, start, end, color) in enumerate(panel.axes.lanes_rows):
        x0, x1 = panel.x.at(start), panel.x.at(end)
        y0, y1 = panel.y.at(lane - 0.4), panel.y.at(lane + 0.4)
        out.append(
            f'<rect x="{fmt(x0)}" y="{fmt(min(y0, y1))}" width="{fmt(max(x1 - x0, 1.0))}" '
            f'height="{fmt(abs(y1 - y0))}" fill="{color}" fill-opacity="{panel.axes.lanes_opacity:g}"/>'
        )
    return out


def draw_bars(panel: Panel) -> list[str]:
    values = panel.axes.bar_values
    if values is None:
        return []
    out = []
    zero = panel.y.at(0.0)
    for i, (value, color) in enumerate(
        zip(np.nan_to_num(values).tolist(), panel.axes.bar_colors, strict=True)
    ):
        x0, x1 = panel.x.at(i - 0.4), panel.x.at(i + 0.4)
        y = panel.y.at(value)
        out.append(
            f'<rect x="{fmt(x0)}" y="{fmt(min(y, zero))}" width="{fmt(x1 - x0)}" '
            f'height="{fmt(abs(y - zero))}" fill="{color}"/>'
        )
    return out


def draw_frame(panel: Panel) -> list[str]:
    """Spines, ticks, tick labels, axis labels and the title."""
    axes, box = panel.axes, panel.box
    out = [
        f'<rect x="{fmt(box.left)}" y="{fmt(box.top)}" width="{fmt(box.width)}" height="{fmt(box.height)}" '
        f'fill="none" stroke="#000" stroke-width="{fmt(0.8 * PT)}"/>'
    ]
    ticks = [f"M{fmt(panel.x.at(t))} {fmt(box.bottom)}v{fmt(TICK_LENGTH)}" for t in panel.x_ticks]
    ticks += [f"M{fmt(box.left)} {fmt(panel.y.at(t))}h{fmt(-TICK_LENGTH)}" for t in panel.y_ticks]
    if panel.twin_y is not None:
        ticks += [f"M{fmt(box.right)} {fmt(panel.twin_y.at(t))}h{fmt(TICK_LENGTH)}" for t in panel.twin_ticks]
    out.append(f'<path d="{"".join(ticks)}" stroke="#000" stroke-width="{fmt(0.8 * PT)}"/>')
    labels: list[str] = []
    below = box.bottom + TICK_LENGTH + PAD
    if axes.show_xticklabels:
        for tick, label in zip(panel.x_ticks, panel.x_labels, strict=True):
            x = panel.x.at(tick)
            if axes.x_categories:
                labels.append(
                    text(
                        x + 3,
                        below,
                        label,
                        axes.x_category_size,
                        anchor="end",
                        rotate=-45,
                        baseline="hanging",
                    )
                )
            else:
                labels.append(text(x, below, label, baseline="hanging"))
    for tick, label in zip(panel.y_ticks, panel.y_labels, strict=True):
        labels.append(
            text(
                box.left - TICK_LENGTH - PAD,
                panel.y.at(tick),
                label,
                panel.y_label_size,
                anchor="end",
                baseline="central",
            )
        )
    if panel.twin_y is not None:
        for tick, label in zip(panel.twin_ticks, panel.twin_labels, strict=True):
            labels.append(
                text(
                    box.right + TICK_LENGTH + PAD,
                    panel.twin_y.at(tick),
                    label,
                    anchor="start",
                    baseline="central",
                )
            )
    out.append("<g>" + "".join(labels) + "</g>")
    middle_y = (box.top + box.bottom) / 2
    if axes.xlabel:
        depth = x_label_depth(axes) - FONT_SIZE * 0.2
        out.append(text((box.left + box.right) / 2, box.bottom + depth, axes.xlabel))
    if axes.ylabel:
        x = (
            box.left
            - TICK_LENGTH
            - 2 * PAD
            - label_width(panel.y_labels, panel.y_label_size)
            - FONT_SIZE * 0.3
        )
        out.append(text(x, middle_y, axes.ylabel, rotate=-90))
    if axes.twin is not None and axes.twin.ylabel:
        x = box.right + TICK_LENGTH + 2 * PAD + label_width(panel.twin_labels, FONT_SIZE) + FONT_SIZE * 0.9
        out.append(text(x, middle_y, axes.twin.ylabel, rotate=-90))
    if axes.title:
        out.append(text((box.left + box.right) / 2, box.top - TITLE_SIZE * 0.5, axes.title, TITLE_SIZE))
    return out


def draw_note(panel: Panel, note: Note) -> str:
    box = panel.box
    x = panel.x.at(note.x)
    y = box.top if note.y is None else panel.y.at(note.y)
    tx, ty = x + note.dx, y + note.dy
    width = text_width(note.content, note.size)
    anchor: Anchor = note.anchor
    # keep the text inside the plot area: flip it to the other side of its point if it would leave
    if anchor == "start" and tx + width > box.right:
        tx, anchor = x - note.dx, "end"
    elif anchor == "end" and tx - width < box.left:
        tx, anchor = x - note.dx, "start"
    out = text(
        tx, ty, note.content, note.size, anchor=anchor, color=note.color, baseline="central", halo=True
    )
    if note.arrow:
        # from the text's near end to the point, an open arrowhead at the point
        sx = tx - 2 if anchor == "start" else tx + 2
        angle = math.atan2(y - ty, x - sx)
        head = [(x - 7 * math.cos(angle + d), y - 7 * math.sin(angle + d)) for d in (0.4, -0.4)]
        out += (
            f'<path d="M{fmt(sx)} {fmt(ty)}L{fmt(x)} {fmt(y)}M{fmt(head[0][0])} {fmt(head[0][1])}'
            f'L{fmt(x)} {fmt(y)}L{fmt(head[1][0])} {fmt(head[1][1])}" stroke="{note.color}" '
            f'stroke-width="{fmt(0.8 * PT)}" fill="none"/>'
        )
    return out
