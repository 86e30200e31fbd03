"""report.md: the same content as report.html, without the images."""

from __future__ import annotations

from typing import Any

from report_content import (
    DoubleCheck,
    Summary,
    direct_symptoms,
    finding_facts,
    finding_label,
    findings_for_test,
    fmt_cost,
    fmt_num,
    fmt_steps,
    split_evidence,
)
from report_data import ReportData
from report_plots import Plot

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


def summary_lines(summary: Summary) -> list[str]:
    lines = ["## Summary", "", f"{esc(summary.headline)} By severity: {esc(summary.severity_counts)}.", ""]
    lines += ["### What went wrong", ""]
    if summary.nothing_above_low:
        lines.append("**Nothing wrong above low severity.**")
        if summary.n_more:
            lines.append(f"The {summary.n_more} low/info findings are listed below for completeness.")
    else:
        for f in summary.top:
            lines.append(
                f"- #{f['rank']} **{esc(str(f.get('severity')).upper())}**: {esc(f.get('title'))} "
                f"({code(f.get('finding_id'))}, {code(f.get('category'))}, "
                f"{fmt_steps(f.get('first_step'), f.get('last_step'))})"
            )
        if summary.n_more:
            lines += ["", f"… and {summary.n_more} more finding(s) below."]
    lines.append("")
    if summary.fix_first is not None:
        fix = summary.fix_first
        lines += [f"### Fix first: {esc(fix.get('title'))}", ""]
        runner = summary.runner_up
        against = f"the runner-up, {esc(finding_label(runner))}" if runner else "the other findings"
        lines += [f"Why {code(fix.get('finding_id'))} beats {against}:", ""]
        lines += [f"- {esc(sentence)}" for sentence in summary.why]
        if fix.get("recommendation"):
            lines += [f"- **What to do:** {esc(fix.get('recommendation'))}"]
        lines.append("")
    lines += ["### The run's numbers once cleaned", ""]
    lines += table(["What", "Value"], [[esc(label), esc(value)] for label, value in summary.numbers])
    lines += ["", esc(summary.tests_line), ""]
    return lines


def findings_lines(data: ReportData) -> list[str]:
    lines = ["## Findings in fix order", ""]
    if not data.findings:
        return [*lines, "No findings: every check that could run passed.", ""]
    rows = [
        [
            str(f["rank"]),
            esc(f.get("severity")),
            code(f.get("category")),
            esc(f.get("title")),
            esc(fmt_steps(f.get("first_step"), f.get("last_step"))),
            esc(fmt_cost(f)),
            fmt_num(f.get("harm_score")),
            code(f["caused_by"]) if f.get("caused_by") else "root cause",
        ]
        for f in data.findings
    ]
    header = ["Rank", "Severity", "Category", "Finding", "Steps", "Est. cost", "Harm", "Caused by"]
    lines += [*table(header, rows), ""]
    symptoms = direct_symptoms(data.findings)
    for f in data.findings:
        lines += [f"### {f['rank']}. [{esc(str(f.get('severity')).upper())}] {esc(f.get('title'))}", ""]
        lines += [f"- **{label}:** {esc(text)}" for label, text in finding_facts(data, f)]
        cause = data.finding(f.get("caused_by"))
        if cause is not None:
            lines.append(f"- **Caused by:** {esc(finding_label(cause))}")
        elif f.get("caused_by"):
            lines.append(f"- **Caused by:** {code(f['caused_by'])} (not among the findings)")
        else:
            lines.append("- **Caused by:** nothing: a root cause")
        explained = [data.finding(i) for i in symptoms.get(f["finding_id"], [])]
        if explained:
            lines.append("- **Explains:** " + "; ".join(esc(finding_label(s)) for s in explained if s))
        facts = split_evidence(f.get("evidence"))
        lines.append("- **Evidence:**" + ("" if facts else " none given"))
        lines += [f"  - {esc(fact)}" for fact in facts]
        lines += [f"- **Recommendation:** {esc(f.get('recommendation') or 'none given')}", ""]
    return lines


def tests_lines(data: ReportData) -> list[str]:
    lines = ["## dbt tests that failed", ""]
    if not data.dbt.available:
        return [*lines, *(f"- {esc(note)}" for note in data.dbt.notes), ""]
    if not data.dbt.failed_tests:
        return [*lines, f"None of the {data.dbt.n_tests} tests of the last build failed or warned.", ""]
    rows = []
    for test in data.dbt.failed_tests:
        findings = ", ".join(code(f["finding_id"]) for f in findings_for_test(data, test)) or "none"
        rows.append(
            [
                code(test.name),
                esc(test.status),
                fmt_num(test.failures),
                code(test.category) if test.category else "n/a",
                findings,
            ]
        )
    lines += table(["Test", "Status", "Failures", "Category", "Findings"], rows)
    return [*lines, "", f"From dbt results generated at {esc(data.dbt.generated_at)}.", ""]


def double_check_lines(check: DoubleCheck) -> list[str]:
    lines = ["## Double-check before relying on the numbers", "", "### Rows kept, repaired and set aside", ""]
    if check.audit_rows:
        lines += [f"- {esc(f.text)}" for f in check.files]
        lines.append("")
        rows = [
            [
                esc(r.get("file_kind")),
                esc(r.get("outcome")),
                esc(r.get("reason") or ""),
                fmt_num(r.get("n_rows")),
            ]
            for r in check.audit_rows
        ]
        lines += table(["File", "Outcome", "Reason", "Rows"], rows)
    else:
        lines.append("audit_summary is empty: no row accounting is available.")
    lines += ["", "### Checks that could not run", ""]
    if not check.n_checks:
        lines.append("check_coverage is empty: which checks ran is unknown.")
    elif not check.not_run:
        lines.append(f"All {check.n_checks} checks could run.")
    else:
        lines.append(f"{check.n_checks - len(check.not_run)} of {check.n_checks} checks ran. Not run:")
        lines += [
            f"- {code(c.get('category'))}: {esc(c.get('reason') or 'no reason given')}" for c in check.not_run
        ]
    lines += ["", "### Log-quality and step-sequence findings", ""]
    if check.log_findings:
        lines += [
            f"- {esc(finding_label(f))}, {esc(f.get('severity'))}: {esc(f.get('evidence') or '')}"
            for f in check.log_findings
        ]
    else:
        lines.append("None: the logs' step sequence and quality checks found nothing.")
    lines += ["", "### The dbt build", ""]
    lines += [f"- {esc(p)}" for p in check.dbt_problems] or ["No model, seed or test errored or was skipped."]
    lines += ["", "### Consistency of the marts", ""]
    lines += [f"- {esc(n)}" for n in check.consistency] or ["The marts agree with each other."]
    return [*lines, ""]


def plots_lines(plots: list[Plot]) -> list[str]:
    lines = ["## Plots", "", "The plots are in report.html:", ""]
    for plot in plots:
        lines.append(f"- {esc(plot.title)}" + (f": {esc(plot.not_logged)}" if plot.not_logged else ""))
    return [*lines, ""]


def render_markdown(data: ReportData, summary: Summary, check: DoubleCheck, plots: list[Plot]) -> str:
    run_name = data.summary.get("run_name") or "unnamed run"
    lines = [
        f"# Run diagnosis: {esc(run_name)}",
        "",
        f"From the marts in {code(data.db_path)}"
        + (f" and the dbt results of {esc(data.dbt.generated_at)}." if data.dbt.available else "."),
        "",
    ]
    lines += summary_lines(summary)
    lines += plots_lines(plots)
    lines += findings_lines(data)
    lines += tests_lines(data)
    lines += double_check_lines(check)
    return "\n".join(lines).rstrip() + "\n"
