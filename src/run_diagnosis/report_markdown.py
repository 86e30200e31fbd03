"""report.md: page one for the lead, page two (causes, glitches), an appendix for the data team.

Deterministic: the same build gives the same bytes (no timestamps, no file paths).
"""

from __future__ import annotations

from typing import Any

from run_diagnosis.report_content import (
    NEAR_MISS_NOTE,
    DoubleCheck,
    FindingEntry,
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
from run_diagnosis.tool_defects import banner

# `<` (raw HTML), emphasis, links, code and table pipes; `>` only matters at a line start, never ours
_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*[]<|"})


def esc(text: Any) -> str:
    """Data text made inert in Markdown (no HTML, no emphasis, no table breaks), on one line."""
    return " ".join(str(text).split()).translate(_MD_SPECIAL)


def code(text: Any) -> str:
    return f"`{str(text).replace('`', '')}`"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table; cells must already be escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def page_one_lines(page: PageOne) -> list[str]:
    lines = []
    if page.incomplete:
        lines += ["## This diagnosis is INCOMPLETE", ""]
        lines += [f"- {esc(line)}" for line in page.incomplete]
        lines.append("")
    lines += ["## What happened", "", esc(" ".join(page.what_happened)), ""]
    lines += ["## The team's two questions", ""]
    lines += [f"- **{esc(question)}** {esc(answer)}" for question, answer in page.questions]
    lines.append("")
    if page.nothing_above_low:
        lines += [f"**{esc(page.all_clear)}**", ""]
    for ledger in page.ledgers:
        lines += [f"## {esc(ledger.title)}", ""]
        if not ledger.rows:
            lines.append(esc(ledger.empty))
        lines += [
            f"{i}. {esc(f.get('title'))} ({esc(amount)})" for i, (f, amount) in enumerate(ledger.rows, 1)
        ]
        lines.append("")
    if page.fix_first is not None:
        lines += [f"## Fix first: {esc(page.fix_first.finding.get('title'))}", ""]
        lines += [f"- {esc(s)}" for s in page.fix_first.why]
        lines.append("")
    if page.reruns:
        lines += ["## Reruns that would confirm it", ""]
        lines += [f"- {esc(r)}" for r in page.reruns]
        lines.append("")
    lines += ["## Double-check before relying on the numbers", ""]
    lines += [f"- {esc(c)}" for c in page.caveats]
    return [*lines, ""]


def page_two_lines(page: PageOne) -> list[str]:
    lines = ["## Causes and their symptoms", ""]
    if not page.causes:
        lines += ["No cause found: nothing went wrong in training itself.", ""]
    for i, cause in enumerate(page.causes, 1):
        f = cause.finding
        steps = fmt_steps(f.get("first_step"), f.get("last_step"))
        lines += [f"### {i}. {esc(f.get('title'))} ({esc(f.get('severity'))}; {esc(steps)})", ""]
        lines.append("- **Evidence:** " + (" · ".join(esc(e) for e in cause.evidence) or "none given"))
        lines.append(f"- **Estimate:** {esc(cause.estimate)}")
        lines.append(f"- **Fix:** {esc(cause.fix)}")
        lines.append(f"- **Confirm the fix worked:** {esc(cause.confirm)}")
        if cause.symptoms:
            lines.append(f"- **Symptoms it explains ({len(cause.symptoms)}):**")
            lines += [f"  - {esc(symptom_line(s))}" for s in cause.symptoms]
        lines.append("")
    lines += ["## Log and record glitches", ""]
    if page.glitches:
        rows = [[esc(cell) for cell in glitch_row(g)] for g in page.glitches]
        lines += table(["Glitch", "Steps", "Rows", "What to do"], rows)
    else:
        lines.append("None: the logs are consistent.")
    return [*lines, ""]


def finding_row(entry: FindingEntry) -> list[str]:
    """One finding's row of the appendix table: the estimate without its method."""
    f = entry.finding
    return [
        str(f["rank"]),
        esc(f.get("severity")),
        code(f.get("finding_id")),
        esc(entry.steps),
        esc(entry.estimate.split(" (")[0]),
        code(f["caused_by"]) if f.get("caused_by") else "root cause",
        code(f["test_name"]) if f.get("test_name") else "",
    ]


def near_miss_lines(data: ReportData) -> list[str]:
    """The short "Near misses" list (none in a build without check_margins)."""
    if not data.margins:
        return []
    items = [f"- {esc(near_miss_text(m))}" for m in near_misses(data)] or ["- None."]
    return ["", "### Near misses", "", esc(NEAR_MISS_NOTE), "", *items]


def appendix_lines(data: ReportData, view: FindingsView, check: DoubleCheck, plots: list[Plot]) -> list[str]:
    lines = [
        "## Appendix for the data team",
        "",
        "<details><summary>The run's numbers, every finding, the checks</summary>",
    ]
    lines += ["", "### The run's numbers", ""]
    lines += table(["What", "Value"], [[esc(k), esc(v)] for k, v in run_numbers(data)])
    lines += ["", "### Every finding", ""]
    lines += [
        "In rank order (the rank of findings.json and of the problem list dbt prints), most severe first; "
        "full evidence per finding in report.html, every column in findings.json.",
        "",
    ]
    rows = [finding_row(entry) for entry in view.findings]
    lines += table(["#", "Severity", "Finding", "Steps", "Estimate", "Caused by", "dbt test"], rows)
    lines += near_miss_lines(data)
    if data.history is not None:
        lines += ["", "### Since the previous build", "", esc(data.history.headline())]
        if data.history.changed:
            lines += ["", *table(["Status", "Severity", "Finding", "Title"], [
                [esc(status), esc(severity), code(finding), esc(title)]
                for status, severity, finding, title in data.history.rows()
            ])]  # fmt: skip
    lines += ["", "### Checks", ""]
    if data.dbt.available:
        names = ", ".join(code(entry.test.name) for entry in view.failed_tests)
        lines.append(
            f"- dbt tests that failed or warned: {len(view.failed_tests)}" + (f": {names}" if names else "")
        )
    lines += [f"- {esc(p)}" for p in check.dbt_problems]
    if check.files:
        lines.append("- Rows per file: " + " · ".join(esc(f.text) for f in check.files))
    if check.not_run:
        lines += [
            f"- Check not run: {code(c.get('category'))}: {esc(c.get('reason') or 'no reason given')}"
            for c in check.not_run
        ]
    else:
        lines.append(f"- {plural(check.n_checks, 'check')} could run.")
    lines += [f"- Disagreement: {esc(n)}" for n in check.consistency]
    whole_run = [p for p in plots if p.finding_id is None]
    zooms = len(plots) - len(whole_run)
    lines.append(
        "- Plots in report.html: "
        + "; ".join(esc(p.title) for p in whole_run)
        + (f"; and a zoom on the steps of each of {plural(zooms, 'cause')} (page two)" if zooms else "")
    )
    return [*lines, "", "</details>", ""]


def defect_lines(data: ReportData) -> list[str]:
    """The failed structural tests about this run, first of all (tool_defects.banner)."""
    if not data.tool_defects:
        return []
    heading, items = banner(data.tool_defects)
    return [f"## {esc(heading)}", "", *[f"- {esc(item)}" for item in items[:-1]], "", esc(items[-1]), ""]


def render_markdown(
    data: ReportData, page: PageOne, view: FindingsView, check: DoubleCheck, plots: list[Plot]
) -> str:
    run_name = data.summary.get("run_name") or "unnamed run"
    lines = [f"# Run diagnosis: {esc(run_name)}", ""]
    lines += defect_lines(data)
    if layout := layout_lines(data):
        lines += [f"## {LAYOUT_TITLE}", "", *(f"- {esc(line)}" for line in layout), ""]
    lines += page_one_lines(page)
    lines += ["---", ""]
    lines += page_two_lines(page)
    lines += appendix_lines(data, view, check, plots)
    return "\n".join(lines).rstrip() + "\n"
