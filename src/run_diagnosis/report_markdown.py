"""report.md: page one for the lead, page two (causes, glitches), an appendix for the data team,
rendered through templates/report.md.j2 (report_templates.environment).

Deterministic: the same build gives the same bytes (no timestamps, no file paths).
"""

from __future__ import annotations

from typing import Any

from run_diagnosis.report_content import (
    NEAR_MISS_NOTE,
    DoubleCheck,
    FindingsView,
    fmt_steps,
    near_miss_text,
    near_misses,
    plural,
)
from run_diagnosis.report_data import ReportData
from run_diagnosis.report_layout import TITLE as LAYOUT_TITLE
from run_diagnosis.report_layout import layout_lines
from run_diagnosis.report_plots import Plot
from run_diagnosis.report_story import PageOne, glitch_row, run_numbers, symptom_line
from run_diagnosis.report_templates import environment
from run_diagnosis.tool_defects import banner

# `<` (raw HTML), emphasis, links, code and table pipes; `>` only matters at a line start, never ours
_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*[]<|"})


def esc(text: Any) -> str:
    """Data text made inert in Markdown (no HTML, no emphasis, no table breaks), on one line."""
    return " ".join(str(text).split()).translate(_MD_SPECIAL)


def code(text: Any) -> str:
    return f"`{str(text).replace('`', '')}`"


def render_markdown(
    data: ReportData, page: PageOne, view: FindingsView, check: DoubleCheck, plots: list[Plot]
) -> str:
    """report.md from templates/report.md.j2."""
    templates = environment("markdown")
    templates.filters.update(md=esc, code=code)
    whole_run = [p for p in plots if p.finding_id is None]
    text = templates.get_template("report.md.j2").render(
        data=data,
        page=page,
        view=view,
        check=check,
        run_name=data.summary.get("run_name") or "unnamed run",
        defects=banner(data.tool_defects) if data.tool_defects else None,
        layout=layout_lines(data),
        layout_title=LAYOUT_TITLE,
        numbers=run_numbers(data),
        near_misses=near_misses(data),
        near_miss_note=NEAR_MISS_NOTE,
        whole_run=whole_run,
        zooms=len(plots) - len(whole_run),
        fmt_steps=fmt_steps,
        glitch_row=glitch_row,
        symptom_line=symptom_line,
        near_miss_text=near_miss_text,
        plural=plural,
    )
    return text.rstrip() + "\n"
