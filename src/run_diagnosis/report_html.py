"""report.html: one self-contained page (inline CSS, inline base64 SVG plots, no JS, no network),
rendered through templates/report.html.j2 with templates/report.css.

Every value printed goes through html.escape (report_templates.html_escaped, autoescape on);
markup is only ever built from the template's literals and macros.
"""

from __future__ import annotations

import datetime as dt

from markupsafe import Markup

from run_diagnosis.report_content import (
    NEAR_MISS_NOTE,
    DoubleCheck,
    FindingsView,
    anchor,
    finding_label,
    fmt_num,
    fmt_steps,
    near_miss_text,
    near_misses,
)
from run_diagnosis.report_data import ReportData
from run_diagnosis.report_layout import TITLE as LAYOUT_TITLE
from run_diagnosis.report_layout import layout_lines
from run_diagnosis.report_plots import SEVERITY_COLORS, Plot
from run_diagnosis.report_story import PageOne, glitch_row, run_numbers, symptom_line
from run_diagnosis.report_templates import environment, read_asset
from run_diagnosis.tool_defects import banner


def render_html(
    data: ReportData,
    page: PageOne,
    view: FindingsView,
    check: DoubleCheck,
    plots: list[Plot],
    now: dt.datetime | None = None,
) -> str:
    """report.html from templates/report.html.j2 (autoescaped: data text never becomes markup)."""
    written = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    return (
        environment("html")
        .get_template("report.html.j2")
        .render(
            data=data,
            page=page,
            view=view,
            check=check,
            plots=plots,
            zooms={p.finding_id: p for p in plots if p.finding_id is not None},
            run_name=data.summary.get("run_name") or "unnamed run",
            style=Markup(read_asset("report.css")),
            defects=banner(data.tool_defects) if data.tool_defects else None,
            layout=layout_lines(data),
            layout_title=LAYOUT_TITLE,
            numbers=run_numbers(data),
            near_miss_texts=[near_miss_text(m) for m in near_misses(data)],
            near_miss_note=NEAR_MISS_NOTE,
            written=written,
            db_path=data.db_path,
            severity_colors=SEVERITY_COLORS,
            anchor=anchor,
            finding_label=finding_label,
            fmt_num=fmt_num,
            fmt_steps=fmt_steps,
            glitch_row=glitch_row,
            symptom_line=symptom_line,
        )
    )
