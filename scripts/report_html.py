"""report.html: one self-contained page (inline CSS, inline base64 PNG plots, no JS, no network).

Every string that comes from the data goes through `esc` (html.escape); markup is only
ever built from literals here.
"""

from __future__ import annotations

import html
from typing import Any

from report_content import (
    DoubleCheck,
    Summary,
    anchor,
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
from report_plots import SEVERITY_COLORS, Plot

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1b1b1b;
  background: #fafafa; line-height: 1.45; }
main { max-width: 980px; margin: 0 auto; padding: 1.5rem; background: #fff; }
h1 { margin-top: 0; } h2 { border-bottom: 2px solid #ddd; padding-bottom: .2rem; margin-top: 2.2rem; }
nav ul { display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; list-style: none; padding: 0; }
table { border-collapse: collapse; width: 100%; margin: .6rem 0; font-size: .92rem; }
th, td { border: 1px solid #ddd; padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.sev { display: inline-block; padding: 0 .45rem; border-radius: .6rem; color: #fff; font-size: .8rem;
  font-weight: 600; text-transform: uppercase; }
.callout { border-left: 4px solid #1f77b4; background: #f3f8fc; padding: .6rem 1rem; margin: 1rem 0; }
.callout.ok { border-color: #2ca02c; background: #f2faf2; }
article.finding { border: 1px solid #e2e2e2; border-radius: .4rem; padding: .2rem 1rem .6rem;
  margin: 1rem 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .4rem 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
figure { margin: 1.2rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: .9rem; color: #444; }
.not-logged { padding: 1rem; background: #f5f5f5; border: 1px dashed #bbb; color: #555; }
.bad { color: #b00020; font-weight: 600; } .good { color: #2e7d32; }
code { background: #f2f2f2; padding: 0 .2rem; border-radius: .2rem; }
"""


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def sev_badge(severity: Any) -> str:
    name = str(severity or "info").lower()
    color = SEVERITY_COLORS.get(name, "#555")
    return f'<span class="sev" style="background:{color}">{esc(name)}</span>'


def finding_link(data: ReportData, finding_id: Any) -> str:
    """A link to the finding's article (or the bare id when it is not a finding)."""
    finding = data.finding(finding_id)
    if finding is None:
        return f"<code>{esc(finding_id)}</code> (not among the findings)"
    return f'<a href="#{anchor(finding_id)}">{esc(finding_label(finding))}</a>'


def table(header: list[str], rows: list[list[str]], numeric: frozenset[int] = frozenset()) -> str:
    """An HTML table; header and cells must already be escaped markup."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# --------------------------------------------------------------------------- sections


def summary_section(data: ReportData, summary: Summary) -> str:
    parts = [
        '<section id="summary"><h2>Summary</h2>',
        f"<p>{esc(summary.headline)} By severity: {esc(summary.severity_counts)}.</p>",
        "<h3>What went wrong</h3>",
    ]
    if summary.nothing_above_low:
        parts.append('<p class="callout ok"><strong>Nothing wrong above low severity.</strong>')
        if summary.n_more:
            parts.append(f" The {summary.n_more} low/info findings are listed below for completeness.")
        parts.append("</p>")
    else:
        items = "".join(
            f'<li>#{f["rank"]} {sev_badge(f.get("severity"))} <a href="#{anchor(f["finding_id"])}">'
            f"{esc(f.get('title'))}</a> <small>({esc(f.get('category'))}, "
            f"{esc(fmt_steps(f.get('first_step'), f.get('last_step')))})</small></li>"
            for f in summary.top
        )
        parts.append(f"<ul>{items}</ul>")
        if summary.n_more:
            parts.append(f'<p>… and {summary.n_more} more finding(s) <a href="#findings">below</a>.</p>')
    if summary.fix_first is not None:
        fix, runner = summary.fix_first, summary.runner_up
        against = (
            f"the runner-up, {finding_link(data, runner['finding_id'])}" if runner else "the other findings"
        )
        why = "".join(f"<li>{esc(sentence)}</li>" for sentence in summary.why)
        todo = (
            f"<p><strong>What to do:</strong> {esc(fix['recommendation'])}</p>"
            if fix.get("recommendation")
            else ""
        )
        parts.append(
            f'<div class="callout" id="fix-first"><h3>Fix first: {sev_badge(fix.get("severity"))} '
            f'<a href="#{anchor(fix["finding_id"])}">{esc(fix.get("title"))}</a></h3>'
            f"<p>Why <code>{esc(fix['finding_id'])}</code> beats {against}:</p><ul>{why}</ul>{todo}</div>"
        )
    rows = [[esc(label), esc(value)] for label, value in summary.numbers]
    parts += ["<h3>The run's numbers once cleaned</h3>", table(["What", "Value"], rows)]
    parts += [f'<p><a href="#dbt-tests">{esc(summary.tests_line)}</a></p>', "</section>"]
    return "".join(parts)


def finding_article(data: ReportData, finding: dict[str, Any], symptoms: list[str]) -> str:
    facts = "".join(
        f"<dt>{esc(label)}</dt><dd>{esc(text)}</dd>" for label, text in finding_facts(data, finding)
    )
    if finding.get("caused_by"):
        facts += f"<dt>Caused by</dt><dd>{finding_link(data, finding['caused_by'])}</dd>"
    else:
        facts += "<dt>Caused by</dt><dd>nothing: a root cause</dd>"
    if symptoms:
        facts += "<dt>Explains</dt><dd>" + "; ".join(finding_link(data, s) for s in symptoms) + "</dd>"
    evidence = split_evidence(finding.get("evidence"))
    evidence_html = (
        "<ul>" + "".join(f"<li>{esc(e)}</li>" for e in evidence) + "</ul>"
        if evidence
        else "<p>none given</p>"
    )
    return (
        f'<article class="finding" id="{anchor(finding["finding_id"])}">'
        f"<h3>{finding['rank']}. {sev_badge(finding.get('severity'))} {esc(finding.get('title'))}</h3>"
        f'<dl class="facts">{facts}</dl>'
        f"<h4>Evidence</h4>{evidence_html}"
        f"<h4>Recommendation</h4><p>{esc(finding.get('recommendation') or 'none given')}</p></article>"
    )


def findings_section(data: ReportData) -> str:
    parts = ['<section id="findings"><h2>Findings in fix order</h2>']
    if not data.findings:
        parts.append("<p>No findings: every check that could run passed.</p></section>")
        return "".join(parts)
    rows = [
        [
            str(f["rank"]),
            sev_badge(f.get("severity")),
            f"<code>{esc(f.get('category'))}</code>",
            f'<a href="#{anchor(f["finding_id"])}">{esc(f.get("title"))}</a>',
            esc(fmt_steps(f.get("first_step"), f.get("last_step"))),
            esc(fmt_cost(f)),
            esc(fmt_num(f.get("harm_score"))),
            f'<a href="#{anchor(f["caused_by"])}">{esc(f["caused_by"])}</a>'
            if f.get("caused_by")
            else "root cause",
        ]
        for f in data.findings
    ]
    header = ["Rank", "Severity", "Category", "Finding", "Steps", "Est. cost", "Harm", "Caused by"]
    parts.append(table(header, rows, numeric=frozenset({0, 6})))
    symptoms = direct_symptoms(data.findings)
    parts += [finding_article(data, f, symptoms.get(f["finding_id"], [])) for f in data.findings]
    parts.append("</section>")
    return "".join(parts)


def tests_section(data: ReportData) -> str:
    parts = ['<section id="dbt-tests"><h2>dbt tests that failed</h2>']
    if not data.dbt.available:
        parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in data.dbt.notes) + "</ul>")
    elif not data.dbt.failed_tests:
        parts.append(f"<p>None of the {data.dbt.n_tests} tests of the last build failed or warned.</p>")
    else:
        rows = [
            [
                f"<code>{esc(t.name)}</code>",
                esc(t.status),
                esc(fmt_num(t.failures)),
                f"<code>{esc(t.category)}</code>" if t.category else "n/a",
                ", ".join(finding_link(data, f["finding_id"]) for f in findings_for_test(data, t)) or "none",
            ]
            for t in data.dbt.failed_tests
        ]
        parts.append(
            table(["Test", "Status", "Failures", "Category", "Findings"], rows, numeric=frozenset({2}))
        )
        parts.append(f"<p>From dbt results generated at {esc(data.dbt.generated_at)}.</p>")
    parts.append("</section>")
    return "".join(parts)


def double_check_section(data: ReportData, check: DoubleCheck) -> str:
    parts = ['<section id="double-check"><h2>Double-check before relying on the numbers</h2>']
    parts.append("<h3>Rows kept, repaired and set aside</h3>")
    if check.audit_rows:
        parts.append(
            "<ul>"
            + "".join(f'<li class="{"good" if f.adds_up else "bad"}">{esc(f.text)}</li>' for f in check.files)
            + "</ul>"
        )
        rows = [
            [
                esc(r.get("file_kind")),
                esc(r.get("outcome")),
                esc(r.get("reason") or ""),
                esc(fmt_num(r.get("n_rows"))),
            ]
            for r in check.audit_rows
        ]
        parts.append(table(["File", "Outcome", "Reason", "Rows"], rows, numeric=frozenset({3})))
    else:
        parts.append("<p>audit_summary is empty: no row accounting is available.</p>")
    parts.append("<h3>Checks that could not run</h3>")
    if not check.n_checks:
        parts.append("<p>check_coverage is empty: which checks ran is unknown.</p>")
    elif not check.not_run:
        parts.append(f"<p>All {check.n_checks} checks could run.</p>")
    else:
        items = "".join(
            f"<li><code>{esc(c.get('category'))}</code>: {esc(c.get('reason') or 'no reason given')}</li>"
            for c in check.not_run
        )
        parts.append(
            f"<p>{check.n_checks - len(check.not_run)} of {check.n_checks} checks ran. Not run:</p>"
            f"<ul>{items}</ul>"
        )
    parts.append("<h3>Log-quality and step-sequence findings</h3>")
    if check.log_findings:
        items = "".join(
            f"<li>{finding_link(data, f['finding_id'])} {sev_badge(f.get('severity'))}: "
            f"{esc(f.get('evidence') or '')}</li>"
            for f in check.log_findings
        )
        parts.append(f"<ul>{items}</ul>")
    else:
        parts.append("<p>None: the logs' step sequence and quality checks found nothing.</p>")
    parts.append("<h3>The dbt build</h3>")
    if check.dbt_problems:
        parts.append("<ul>" + "".join(f"<li>{esc(p)}</li>" for p in check.dbt_problems) + "</ul>")
    else:
        parts.append("<p>No model, seed or test errored or was skipped.</p>")
    parts.append("<h3>Consistency of the marts</h3>")
    if check.consistency:
        parts.append("<ul>" + "".join(f'<li class="bad">{esc(n)}</li>' for n in check.consistency) + "</ul>")
    else:
        parts.append("<p>The marts agree with each other.</p>")
    parts.append("</section>")
    return "".join(parts)


def figure(plot: Plot) -> str:
    if plot.png_base64 is None:
        body = f'<div class="not-logged" id="{esc(plot.plot_id)}" role="note">{esc(plot.not_logged)}</div>'
    else:
        body = (
            f'<img id="{esc(plot.plot_id)}" alt="{esc(plot.alt)}" '
            f'src="data:image/png;base64,{plot.png_base64}">'
        )
    caption = f"<figcaption><strong>{esc(plot.title)}.</strong> {esc(plot.caption)}</figcaption>"
    return f"<figure>{body}{caption}</figure>"


def plots_section(plots: list[Plot]) -> str:
    return '<section id="plots"><h2>Plots</h2>' + "".join(figure(p) for p in plots) + "</section>"


def render_html(data: ReportData, summary: Summary, check: DoubleCheck, plots: list[Plot]) -> str:
    run_name = data.summary.get("run_name") or "unnamed run"
    source = f"From the marts in <code>{esc(data.db_path)}</code>"
    if data.dbt.available:
        source += f" and the dbt results of {esc(data.dbt.generated_at)}"
    nav = (
        '<nav><ul><li><a href="#summary">Summary</a></li><li><a href="#plots">Plots</a></li>'
        '<li><a href="#findings">Findings</a></li><li><a href="#dbt-tests">dbt tests that failed</a></li>'
        '<li><a href="#double-check">Double-check</a></li></ul></nav>'
    )
    body = "".join(
        [
            summary_section(data, summary),
            plots_section(plots),
            findings_section(data),
            tests_section(data),
            double_check_section(data, check),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>Run diagnosis: {esc(run_name)}</title><style>{STYLE}</style></head>\n"
        f"<body><main><h1>Run diagnosis: {esc(run_name)}</h1><p>{source}.</p>{nav}\n"
        f"{body}\n</main></body></html>\n"
    )
