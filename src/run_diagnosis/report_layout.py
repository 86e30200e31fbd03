"""The report's opening lines for a log whose layout the generic reader inferred.

``run_summary.inferred_layout`` (``provenance.layout`` of config.json, written by
``importers.generic_log``) says which lines became rows, which names were read as which
field, which numeric names were not understood, how many lines were skipped and why (two
examples each) and how confident the inference is. The report opens with it, before page one,
because every number below rests on that reading. One function (``layout_lines``) gives the
text; the Markdown and HTML renderers each place it. Nothing here for the known formats.
"""

from __future__ import annotations

import json
from typing import Any

from run_diagnosis.report_data import ReportData

TITLE = "How the log was read"
NAMES_SHOWN = 10


def inferred_layout(data: ReportData) -> dict[str, Any] | None:
    """The layout the generic reader inferred for this run, or None."""
    raw = data.summary.get("inferred_layout")
    if not raw:
        return None
    try:
        layout = json.loads(raw)
    except (TypeError, ValueError):
        return None
    return layout if isinstance(layout, dict) and isinstance(layout.get("train"), dict) else None


def _names(names: list[Any]) -> str:
    shown = ", ".join(str(n) for n in names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def layout_lines(data: ReportData) -> list[str]:
    """Plain sentences (one a list item) saying what was understood; [] for a known format."""
    layout = inferred_layout(data)
    if layout is None:
        return []
    train, ev = layout["train"], layout.get("eval")
    counter = train.get("counter") or {}
    lines = []
    if layout.get("confidence") == "low":
        reasons = "; ".join(str(r) for r in layout.get("low_confidence") or [])
        lines.append(
            f"Low confidence: this diagnosis rests on a layout inferred from the log ({reasons}). "
            "Check the lines below; correct them with --map if they are wrong."
        )
    else:
        lines.append("This diagnosis rests on a layout inferred from the log (no known format matched).")
    lines.append(
        f"Training rows: {train.get('rows')}, read from the {layout.get('format')} file, e.g. "
        f"“{train.get('example')}” (line {train.get('first_line')}); counter: {counter.get('how')}."
    )
    if ev:
        lines.append(
            f"Evaluation rows: {ev.get('rows')} lines like “{ev.get('example')}” "
            f"(first at line {ev.get('first_line')})."
        )
    else:
        lines.append("Evaluation rows: none found (no validation or test loss in the log).")
    fields = layout.get("fields") or {}
    lines.append("Names read as: " + ", ".join(f"{f} ← {n}" for f, n in fields.items()) + ".")
    if layout.get("not_understood"):
        lines.append(f"Numeric names not understood (not used): {_names(layout['not_understood'])}.")
    if layout.get("not_used"):
        lines.append(f"Understood but not used: {_names(layout['not_used'])}.")
    for other in layout.get("other_layouts") or []:
        lines.append(
            f"Also logged, not used as the training rows: {other.get('rows')} lines "
            f"like “{other.get('example')}”."
        )
    skipped = layout.get("skipped") or {}
    lines.append(f"Lines skipped: {layout.get('skipped_lines', 0)} of {layout.get('lines')}.")
    for reason, entry in skipped.items():
        examples = "; ".join(entry.get("examples") or [])
        lines.append(f"Skipped, {reason}: {entry.get('lines')} (e.g. {examples}).")
    return lines
