"""report.html: one self-contained page (inline CSS, inline base64 SVG plots, no JS, no network).

Every string that comes from the data goes through `esc` (html.escape); markup is only
ever built from literals here.
"""

from __future__ import annotations

import datetime as dt
import html
from typing import Any

from run_diagnosis.report_content import (
    NEAR_MISS_NOTE,
    DoubleCheck,
    FindingEntry,
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
from run_diagnosis.report_story import Cause, PageOne, glitch_row, run_numbers, symptom_line
from run_diagnosis.tool_defects import banner

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
.callout.defect { border-color: #b00020; background: #fdf2f4; }
.callout.incomplete { border-color: #b00020; background: #fdf1f3; }
article.finding { border: 1px solid #e2e2e2; border-radius: .4rem; padding: .2rem 1rem .6rem;
  margin: 1rem 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .4rem 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
figure { margin: 1.2rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: .9rem; color: #444; }
.not-logged { padding: 1rem; background: #f5f5f5; border: 1px dashed #bbb; color: #555; }
.bad { color: #b00020; font-weight: 600; } .good { color: #2e7d32; }
code { background: #f2f2f2; padding: 0 .2rem; border-radius: .2rem; }
section.page-one { border: 2px solid #1f77b4; border-radius: .5rem; padding: 0 1.2rem 1rem; }
section.page-one h2 { border: none; margin-top: 1.2rem; font-size: 1.15rem; }
.question { font-weight: 600; }
details { border: 1px solid #e2e2e2; border-radius: .4rem; padding: .3rem .8rem; margin: .4rem 0; }
details summary { cursor: pointer; }
footer { margin-top: 2rem; font-size: .85rem; color: #555; border-top: 1px solid #ddd; padding-top: .5rem; }
@media print {
  body { background: #fff; font-size: 10.5pt; } main { max-width: none; padding: 0; }
  nav { display: none; } section.page-one { border: none; padding: 0; }
  #plots, #causes, #appendix { break-before: page; }
  figure, article.finding, tr, details { break-inside: avoid; }
  details > *:not(summary) { display: block; } a { color: inherit; text-decoration: none; }
}
"""


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def sev_badge(severity: Any) -> str:
    name = str(severity or "info").lower()
    color = SEVERITY_COLORS.get(name, "#555")
    return f'<span class="sev" style="background:{color}">{esc(name)}</span>'


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


def paragraphs(items: list[str]) -> str:
    return "".join(f"<li>{esc(i)}</li>" for i in items)


def page_one_section(data: ReportData, page: PageOne) -> str:
    parts = ['<section id="page-one" class="page-one">']
    if page.incomplete:
        parts.append(
            '<div class="callout incomplete" id="incomplete"><h2>This diagnosis is INCOMPLETE</h2>'
            f"<ul>{paragraphs(page.incomplete)}</ul></div>"
        )
    parts.append("<h2>What happened</h2>")
    parts.append(f"<p>{esc(' '.join(page.what_happened))}</p>")
    parts.append("<h2>The team's two questions</h2>")
    parts += [f'<p><span class="question">{esc(q)}</span> {esc(a)}</p>' for q, a in page.questions]
    if page.nothing_above_low:
        parts.append(f'<p class="callout ok"><strong>{esc(page.all_clear)}</strong></p>')
    for ledger in page.ledgers:
        parts.append(f"<h2>{esc(ledger.title)}</h2>")
        if not ledger.rows:
            parts.append(f"<p>{esc(ledger.empty)}</p>")
        else:
            items = "".join(
                f"<li>{sev_badge(f.get('severity'))} <a "
                f'href="#{anchor(f["finding_id"])}">{esc(f.get("title"))}</a> '
                + (f"({esc(amount)})" if amount != f.get("severity") else "")
                + "</li>"
                for f, amount in ledger.rows
            )
            parts.append(f"<ol>{items}</ol>")
    if page.fix_first is not None:
        fix = page.fix_first.finding
        parts.append(
            f'<div class="callout" id="fix-first"><h2>Fix first: {sev_badge(fix.get("severity"))} '
            f'<a href="#{anchor(fix["finding_id"])}">{esc(fix.get("title"))}</a></h2>'
            f"<ul>{paragraphs(page.fix_first.why)}</ul></div>"
        )
    if page.reruns:
        parts.append(f"<h2>Reruns that would confirm it</h2><ul>{paragraphs(page.reruns)}</ul>")
    parts.append(f"<h2>Double-check before relying on the numbers</h2><ul>{paragraphs(page.caveats)}</ul>")
    parts.append("</section>")
    return "".join(parts)


def cause_article(index: int, cause: Cause, zoom: Plot | None = None) -> str:
    f = cause.finding
    evidence = "".join(f"<li>{esc(e)}</li>" for e in cause.evidence) or "<li>none given</li>"
    symptoms = ""
    if cause.symptoms:
        items = "".join(
            f'<li><a href="#{anchor(s["finding_id"])}">{esc(symptom_line(s))}</a></li>'
            for s in cause.symptoms
        )
        symptoms = f"<h4>Symptoms it explains ({len(cause.symptoms)})</h4><ul>{items}</ul>"
    return (
        f'<article class="finding" id="cause-{anchor(f["finding_id"])}">'
        f"<h3>{index}. {sev_badge(f.get('severity'))} {esc(f.get('title'))}</h3>"
        f'<dl class="facts"><dt>Steps</dt><dd>{esc(fmt_steps(f.get("first_step"), f.get("last_step")))}</dd>'
        f"<dt>Estimate</dt><dd>{esc(cause.estimate)}</dd><dt>Fix</dt><dd>{esc(cause.fix)}</dd>"
        f"<dt>Confirm the fix worked</dt><dd>{esc(cause.confirm)}</dd></dl>"
        f"<h4>Evidence</h4><ul>{evidence}</ul>{symptoms}"
        + (figure(zoom, "zoom") if zoom is not None else "")
        + "</article>"
    )


def causes_section(page: PageOne, plots: list[Plot]) -> str:
    zooms = {p.finding_id: p for p in plots if p.finding_id is not None}
    parts = ['<section id="causes"><h2>Causes and their symptoms</h2>']
    if not page.causes:
        parts.append("<p>No cause found: nothing went wrong in training itself.</p>")
    parts += [
        cause_article(i, c, zooms.get(str(c.finding["finding_id"]))) for i, c in enumerate(page.causes, 1)
    ]
    parts.append('<h2 id="glitches">Log and record glitches</h2>')
    if page.glitches:
        rows = [[esc(cell) for cell in glitch_row(g)] for g in page.glitches]
        parts.append(table(["Glitch", "Steps", "Rows", "What to do"], rows, numeric=frozenset({2})))
    else:
        parts.append("<p>None: the logs are consistent.</p>")
    parts.append("</section>")
    return "".join(parts)


def finding_details(entry: FindingEntry) -> str:
    finding, cause = entry.finding, entry.cause
    facts = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in entry.facts)
    if cause is not None:
        link = f'<a href="#{anchor(cause["finding_id"])}">{esc(finding_label(cause))}</a>'
        facts += f"<dt>Caused by</dt><dd>{link}</dd>"
    elif finding.get("caused_by"):
        facts += (
            f"<dt>Caused by</dt><dd><code>{esc(finding['caused_by'])}</code> (not among the findings)</dd>"
        )
    evidence = "".join(f"<li>{esc(e)}</li>" for e in entry.evidence) or "<li>none given</li>"
    return (
        f'<details class="finding" id="{anchor(finding["finding_id"])}"><summary>#{finding["rank"]} '
        f"{sev_badge(finding.get('severity'))} {esc(finding.get('title'))}</summary>"
        f'<dl class="facts">{facts}</dl><h4>Evidence</h4><ul>{evidence}</ul>'
        f"<h4>Recommendation</h4><p>{esc(finding.get('recommendation') or 'none given')}</p></details>"
    )


def near_miss_section(data: ReportData) -> str:
    """The short "Near misses" list (nothing in a build without check_margins)."""
    if not data.margins:
        return ""
    items = "".join(f"<li>{esc(near_miss_text(m))}</li>" for m in near_misses(data)) or "<li>None.</li>"
    return f'<h3 id="near-misses">Near misses</h3><p>{esc(NEAR_MISS_NOTE)}</p><ul>{items}</ul>'


def appendix_section(data: ReportData, view: FindingsView, check: DoubleCheck) -> str:
    parts = ['<section id="appendix"><h2>Appendix for the data team</h2><h3>The run\'s numbers</h3>']
    parts.append(table(["What", "Value"], [[esc(k), esc(v)] for k, v in run_numbers(data)]))
    parts.append("<h3>Every finding</h3>")
    parts += [finding_details(entry) for entry in view.findings] or ["<p>No findings.</p>"]
    parts.append(near_miss_section(data))
    if data.history is not None:
        parts.append(f"<h3>Since the previous build</h3><p>{esc(data.history.headline())}</p>")
        if data.history.changed:
            rows = [[esc(cell) for cell in row] for row in data.history.rows()]
            parts.append(table(["Status", "Severity", "Finding", "Title"], rows))
    parts.append('<h3 id="dbt-tests">dbt tests that failed</h3>')
    if not data.dbt.available:
        parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in data.dbt.notes) + "</ul>")
    elif not view.failed_tests:
        parts.append(f"<p>None of the {data.dbt.n_tests} tests of the last build failed or warned.</p>")
    else:
        rows = [
            [
                f"<code>{esc(entry.test.name)}</code>",
                esc(entry.test.status),
                esc(fmt_num(entry.test.failures)),
                f"<code>{esc(entry.test.category)}</code>" if entry.test.category else "n/a",
                ", ".join(
                    f'<a href="#{anchor(f["finding_id"])}">{esc(f["finding_id"])}</a>' for f in entry.findings
                )
                or "none",
            ]
            for entry in view.failed_tests
        ]
        parts.append(
            table(["Test", "Status", "Failures", "Category", "Findings"], rows, numeric=frozenset({2}))
        )
    parts.append("<h3>Rows kept, repaired and set aside</h3>")
    if check.files:
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
        parts.append("<p>No row accounting is available.</p>")
    parts.append("<h3>Checks that could not run</h3>")
    if check.not_run:
        items = "".join(
            f"<li><code>{esc(c.get('category'))}</code>: {esc(c.get('reason') or 'no reason given')}</li>"
            for c in check.not_run
        )
        parts.append(
            f"<p>{check.n_checks - len(check.not_run)} of {check.n_checks} checks ran.</p><ul>{items}</ul>"
        )
    else:
        parts.append(f"<p>All {check.n_checks} checks could run.</p>")
    if check.dbt_problems or check.consistency:
        parts.append("<h3>The build and the tables</h3><ul>")
        parts += [f"<li>{esc(p)}</li>" for p in check.dbt_problems]
        parts += [f'<li class="bad">{esc(n)}</li>' for n in check.consistency]
        parts.append("</ul>")
    parts.append("</section>")
    return "".join(parts)


def figure(plot: Plot, kind: str = "") -> str:
    if plot.image_base64 is None:
        body = f'<div class="not-logged" id="{esc(plot.plot_id)}" role="note">{esc(plot.not_logged)}</div>'
    else:
        body = f'<img id="{esc(plot.plot_id)}" alt="{esc(plot.alt)}" src="{plot.data_uri}">'
    caption = f"<figcaption><strong>{esc(plot.title)}.</strong> {esc(plot.caption)}</figcaption>"
    return f'<figure class="{kind}">{body}{caption}</figure>' if kind else f"<figure>{body}{caption}</figure>"


def plots_section(plots: list[Plot]) -> str:
    """The plots of the whole run (the zooms on single findings sit with their causes)."""
    whole_run = "".join(figure(p) for p in plots if p.finding_id is None)
    return '<section id="plots"><h2>The run in plots</h2>' + whole_run + "</section>"


def defect_section(data: ReportData) -> str:
    """The failed structural tests about this run, first of all (tool_defects.banner)."""
    if not data.tool_defects:
        return ""
    heading, items = banner(data.tool_defects)
    return (
        f'<div class="callout defect" id="tool-defects" role="alert"><h2>{esc(heading)}</h2>'
        f"<ul>{paragraphs(items[:-1])}</ul><p>{esc(items[-1])}</p></div>"
    )


def render_html(
    data: ReportData,
    page: PageOne,
    view: FindingsView,
    check: DoubleCheck,
    plots: list[Plot],
    now: dt.datetime | None = None,
) -> str:
    run_name = data.summary.get("run_name") or "unnamed run"
    written = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    footer = f"Written {esc(written)} from the marts in <code>{esc(data.db_path)}</code>"
    if data.dbt.available:
        footer += f" and the dbt results of {esc(data.dbt.generated_at)}"
    nav = (
        '<nav><ul><li><a href="#page-one">Page one</a></li><li><a href="#plots">Plots</a></li>'
        '<li><a href="#causes">Causes</a></li><li><a href="#glitches">Glitches</a></li>'
        '<li><a href="#appendix">Appendix</a></li></ul></nav>'
    )
    layout = layout_lines(data)
    body = "".join(
        [
            defect_section(data),
            f'<section id="layout"><h2>{esc(LAYOUT_TITLE)}</h2><ul>{paragraphs(layout)}</ul></section>'
            if layout
            else "",
            page_one_section(data, page),
            plots_section(plots),
            causes_section(page, plots),
            appendix_section(data, view, check),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>Run diagnosis: {esc(run_name)}</title><style>{STYLE}</style></head>\n"
        f"<body><main><h1>Run diagnosis: {esc(run_name)}</h1>{nav}\n"
        f"{body}\n<footer>{footer}.</footer></main></body></html>\n"
    )
