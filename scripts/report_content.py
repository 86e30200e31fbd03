"""What the report says, as plain text: the summary, the fix-first argument and the checks.

Both renderers (Markdown and HTML) format the same content built here, so the two
files cannot disagree. Nothing in this module knows about markup: the HTML renderer
escapes every string, the Markdown renderer writes them as they are.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from report_data import (
    FailedTest,
    ReportData,
    is_above_low,
    severity_index,
)

TOP_FINDINGS_IN_SUMMARY = 5
DOUBLE_CHECK_CATEGORIES = ("log_quality", "step_sequence")

# --------------------------------------------------------------------------- formatting


def fmt_num(value: Any, digits: int = 4) -> str:
    """A number for people: integers with separators, other values to `digits` significant digits."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 1e15):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def fmt_steps(first: Any, last: Any) -> str:
    """'steps 30-35', 'step 30', or 'no step range'."""
    if first is None and last is None:
        return "no step range"
    if first is None or last is None or first == last:
        return f"step {fmt_num(first if first is not None else last)}"
    return f"steps {fmt_num(first)}-{fmt_num(last)}"


def fmt_duration(seconds: Any) -> str:
    if seconds is None:
        return "n/a"
    total = round(float(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{fmt_num(float(seconds))} s ({hours}:{minutes:02d}:{secs:02d})"


def fmt_cost(finding: dict[str, Any]) -> str:
    """'0.12 val_loss' or 'not estimated'."""
    cost = finding.get("estimated_cost")
    if cost is None:
        return "not estimated"
    unit = finding.get("cost_unit")
    return f"{fmt_num(cost)} {unit}" if unit else fmt_num(cost)


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{fmt_num(n)} {word if n == 1 else (words or word + 's')}"


def anchor(finding_id: Any) -> str:
    """An HTML id for a finding: lower-case letters, digits and dashes."""
    text = "".join(c if c.isalnum() else "-" for c in str(finding_id).lower())
    return "finding-" + "-".join(part for part in text.split("-") if part)


def finding_label(finding: dict[str, Any]) -> str:
    """'#2 “title” (F-002)' for references in text."""
    return f"#{finding['rank']} “{finding.get('title')}” ({finding.get('finding_id')})"


def split_evidence(evidence: Any) -> list[str]:
    """The evidence text as a list of facts (it is written as `; `-separated facts)."""
    if not evidence:
        return []
    return [part.strip() for part in str(evidence).split("; ") if part.strip()]


# --------------------------------------------------------------------------- causes


def direct_symptoms(findings: list[dict[str, Any]]) -> dict[str, list[str]]:
    """finding_id -> ids of the findings whose caused_by names it, in rank order."""
    symptoms: dict[str, list[str]] = {f["finding_id"]: [] for f in findings}
    for finding in findings:
        cause = finding.get("caused_by")
        if cause in symptoms and cause != finding["finding_id"]:
            symptoms[cause].append(finding["finding_id"])
    return symptoms


def all_symptoms(finding_id: str, symptoms: dict[str, list[str]]) -> list[str]:
    """Every finding explained by this one, directly or through a chain (cycle-safe)."""
    seen: list[str] = []
    stack = list(reversed(symptoms.get(finding_id, [])))
    while stack:
        current = stack.pop()
        if current in seen or current == finding_id:
            continue
        seen.append(current)
        stack.extend(reversed(symptoms.get(current, [])))
    return seen


# --------------------------------------------------------------------------- summary


@dataclass
class Summary:
    headline: str
    severity_counts: str
    top: list[dict[str, Any]]
    n_more: int
    nothing_above_low: bool
    fix_first: dict[str, Any] | None
    runner_up: dict[str, Any] | None
    why: list[str]
    numbers: list[tuple[str, str]]
    tests_line: str


def severity_counts(findings: list[dict[str, Any]]) -> str:
    counts = Counter(str(f.get("severity") or "unknown").lower() for f in findings)
    ordered = sorted(counts, key=severity_index)
    return ", ".join(f"{counts[s]} {s}" for s in ordered) if counts else "none"


def choose_runner_up(data: ReportData, fix_first: dict[str, Any]) -> dict[str, Any] | None:
    """run_summary's runner-up if it names another finding; else the best-ranked finding
    that is not a symptom of the fix-first one; else rank 2."""
    others = [f for f in data.findings if f["finding_id"] != fix_first["finding_id"]]
    if not others:
        return None
    named = data.finding(data.summary.get("runner_up_finding_id"))
    if named is not None and named["finding_id"] != fix_first["finding_id"]:
        return named
    explained = set(all_symptoms(fix_first["finding_id"], direct_symptoms(data.findings)))
    independent = [f for f in others if f["finding_id"] not in explained]
    return (independent or others)[0]


def _harm_sentence(a: dict[str, Any], b: dict[str, Any], total_a: float, total_b: float) -> str:
    ha, hb = a.get("harm_score"), b.get("harm_score")
    head = f"Harm score {fmt_num(ha)} against {fmt_num(hb)} for the runner-up ({b.get('finding_id')})"
    if ha is None or hb is None:
        return head + " (one of them has no harm score)."
    if ha >= hb:
        ratio = f", {ha / hb:.1f}x as much" if hb > 0 else ""
        return head + f"{ratio} on the common ranking scale."
    return (
        head + f": lower on its own, but it ranks first because root causes rank above what they"
        f" explain; with its symptoms it accounts for {fmt_num(total_a)} against {fmt_num(total_b)}."
    )


def _cost_sentence(a: dict[str, Any], b: dict[str, Any]) -> str:
    text = (
        f"Estimated cost {fmt_cost(a)} ({a.get('cost_method') or 'method not given'}); "
        f"runner-up {fmt_cost(b)} ({b.get('cost_method') or 'method not given'})"
    )
    ca, cb = a.get("estimated_cost"), b.get("estimated_cost")
    if ca is not None and cb is not None and a.get("cost_unit") == b.get("cost_unit"):
        if cb > 0:
            text += f": {ca / cb:.1f}x the runner-up's in the same unit"
    elif ca is not None and cb is not None:
        text += ": different units, so the harm score is what compares them"
    return text + "."


def _steps_sentence(a: dict[str, Any], b: dict[str, Any]) -> str:
    return (
        f"It affects {fmt_num(a.get('steps_affected'))} steps "
        f"({fmt_steps(a.get('first_step'), a.get('last_step'))}); "
        f"the runner-up {fmt_num(b.get('steps_affected'))} "
        f"({fmt_steps(b.get('first_step'), b.get('last_step'))})."
    )


def _chain_sentence(data: ReportData, a: dict[str, Any], b: dict[str, Any] | None) -> str:
    symptoms = direct_symptoms(data.findings)
    explained = [data.finding(i) for i in all_symptoms(a["finding_id"], symptoms)]
    if explained:
        labels = "; ".join(finding_label(f) for f in explained if f is not None)
        text = (
            f"It explains {plural(len(explained), 'other finding')} ({labels}): "
            "fixing it should clear them too."
        )
    else:
        text = "It explains no other finding."
    if b is not None:
        n_b = len(all_symptoms(b["finding_id"], symptoms))
        text += f" The runner-up explains {plural(n_b, 'other finding')}."
    return text


def _total_harm(data: ReportData, finding: dict[str, Any]) -> float:
    ids = [finding["finding_id"], *all_symptoms(finding["finding_id"], direct_symptoms(data.findings))]
    return sum((data.finding(i) or {}).get("harm_score") or 0.0 for i in ids)


def why_fix_first(data: ReportData, a: dict[str, Any], b: dict[str, Any] | None) -> list[str]:
    """The argument for fixing `a` before the runner-up `b`, with the numbers of both."""
    if b is None:
        return [
            f"It is the only finding (harm score {fmt_num(a.get('harm_score'))}, estimated cost "
            f"{fmt_cost(a)}, {fmt_num(a.get('steps_affected'))} steps affected).",
        ]
    return [
        _harm_sentence(a, b, _total_harm(data, a), _total_harm(data, b)),
        _cost_sentence(a, b),
        _steps_sentence(a, b),
        _chain_sentence(data, a, b),
    ]


def clean_numbers(data: ReportData) -> list[tuple[str, str]]:
    """The run's numbers once cleaned, as (label, text) pairs."""
    s = data.summary
    logged, counted = s.get("steps_logged"), s.get("steps_counted")
    steps = f"{fmt_num(counted)} counted of {fmt_num(logged)} train rows logged"
    if isinstance(logged, int) and isinstance(counted, int) and logged != counted:
        steps += f" ({fmt_num(logged - counted)} superseded or duplicate rows not counted)"
    steps += f"; {fmt_steps(s.get('first_step'), s.get('last_step'))}, "
    steps += f"{fmt_num(s.get('total_steps_config'))} configured"
    if s.get("best_eval_step") is None and s.get("best_val_loss") is None:
        best = "not logged (no evaluations)"
    else:
        best = f"step {fmt_num(s.get('best_eval_step'))}, val loss {fmt_num(s.get('best_val_loss'))}"
    final_val = "not logged (no evaluations)"
    if s.get("final_val_loss") is not None:
        final_val = f"{fmt_num(s.get('final_val_loss'))} at step {fmt_num(s.get('final_eval_step'))}"
        if s.get("best_val_loss") is not None:
            gap = s["final_val_loss"] - s["best_val_loss"]
            final_val += f" ({gap:+.4g} against the best)" if gap else " (the best)"
    return [
        ("Run", f"{s.get('run_name') or 'unnamed run'} (source format: {s.get('source_format') or 'n/a'})"),
        ("Steps", steps),
        ("Best checkpoint", best),
        ("Final validation loss", final_val),
        ("Final training loss", f"{fmt_num(s.get('final_train_loss'))} (median of the last steps)"),
        ("Wall clock", fmt_duration(s.get("wall_clock_sec"))),
    ]


def tests_line(data: ReportData) -> str:
    if not data.dbt.available:
        return "dbt test results: not available (" + "; ".join(data.dbt.notes) + ")."
    failed = data.dbt.failed_tests
    if not data.dbt.n_tests:
        return "dbt tests that failed: none ran in the last dbt invocation."
    if not failed:
        return f"dbt tests that failed: none of {fmt_num(data.dbt.n_tests)}."
    n_fail = sum(t.status == "fail" for t in failed)
    return (
        f"dbt tests that failed: {fmt_num(len(failed))} of {fmt_num(data.dbt.n_tests)} "
        f"({n_fail} fail, {len(failed) - n_fail} warn)."
    )


def build_summary(data: ReportData) -> Summary:
    above_low = [f for f in data.findings if is_above_low(f)]
    s = data.summary
    fix_first = data.findings[0] if above_low else None
    runner_up = choose_runner_up(data, fix_first) if fix_first is not None else None
    return Summary(
        headline=(
            f"Run {s.get('run_name') or 'unnamed'}: {plural(len(data.findings), 'finding')}, "
            f"{fmt_num(len(above_low))} above low severity."
        ),
        severity_counts=severity_counts(data.findings),
        top=above_low[:TOP_FINDINGS_IN_SUMMARY],
        n_more=len(data.findings) - min(len(above_low), TOP_FINDINGS_IN_SUMMARY),
        nothing_above_low=not above_low,
        fix_first=fix_first,
        runner_up=runner_up,
        why=why_fix_first(data, fix_first, runner_up) if fix_first is not None else [],
        numbers=clean_numbers(data),
        tests_line=tests_line(data),
    )


# --------------------------------------------------------------------------- finding details


def finding_test_status(data: ReportData, finding: dict[str, Any]) -> str | None:
    """How the finding's dbt test did in the last build, or None if it names no test."""
    name = finding.get("test_name")
    if not name:
        return None
    if not data.dbt.available:
        return f"{name} (no dbt results to check)"
    test = next((t for t in data.dbt.failed_tests if t.name == name), None)
    if test is None:
        return f"{name} (not among the failing tests of the last build)"
    return f"{name} ({test.status}, {plural(test.failures or 0, 'failing row')})"


def findings_for_test(data: ReportData, test: FailedTest) -> list[dict[str, Any]]:
    """Findings this failing test is about: same test name, else same category."""
    by_name = [f for f in data.findings if f.get("test_name") == test.name]
    if by_name:
        return by_name
    return [f for f in data.findings if test.category and f.get("category") == test.category]


# --------------------------------------------------------------------------- double-check


@dataclass
class FileAudit:
    file_kind: str
    raw_rows: int | None
    by_outcome: dict[str, int]
    adds_up: bool
    text: str


@dataclass
class DoubleCheck:
    audit_rows: list[dict[str, Any]]
    files: list[FileAudit]
    n_checks: int
    not_run: list[dict[str, Any]]
    log_findings: list[dict[str, Any]]
    dbt_problems: list[str]
    consistency: list[str] = field(default_factory=list)


FILE_ORDER = ("train", "eval", "shards", "events", "config")
OUTCOME_ORDER = ("kept", "repaired", "set_aside")


def audit_sort_key(row: dict[str, Any]) -> tuple[int, str, int, str]:
    kind, outcome = str(row.get("file_kind")), str(row.get("outcome"))
    return (
        FILE_ORDER.index(kind) if kind in FILE_ORDER else len(FILE_ORDER),
        kind,
        OUTCOME_ORDER.index(outcome) if outcome in OUTCOME_ORDER else len(OUTCOME_ORDER),
        str(row.get("reason") or ""),
    )


def audit_files(audit: list[dict[str, Any]]) -> list[FileAudit]:
    """Per file: kept + repaired + set aside, and whether it adds up to the file's raw rows."""
    files: list[FileAudit] = []
    for kind in dict.fromkeys(r["file_kind"] for r in sorted(audit, key=audit_sort_key)):
        rows = [r for r in audit if r["file_kind"] == kind]
        by_outcome: dict[str, int] = {}
        for row in rows:
            by_outcome[row["outcome"]] = by_outcome.get(row["outcome"], 0) + int(row.get("n_rows") or 0)
        raw_values = {r.get("raw_rows") for r in rows}
        raw = next(iter(raw_values)) if len(raw_values) == 1 else None
        total = sum(by_outcome.values())
        parts = " + ".join(f"{fmt_num(n)} {outcome.replace('_', ' ')}" for outcome, n in by_outcome.items())
        if raw is None:
            raws = ", ".join(sorted(map(str, raw_values)))
            text = f"{kind}: {parts} = {fmt_num(total)}; raw_rows differs between rows ({raws})"
            adds_up = False
        elif total == raw:
            text = f"{kind}: {parts} = {fmt_num(total)} of {fmt_num(raw)} raw rows: adds up"
            adds_up = True
        else:
            text = (
                f"{kind}: {parts} = {fmt_num(total)}, but the file has {fmt_num(raw)} raw rows: "
                f"does NOT add up ({fmt_num(raw - total)} rows unaccounted)"
            )
            adds_up = False
        files.append(FileAudit(kind, raw, by_outcome, adds_up, text))
    return files


def consistency_notes(data: ReportData) -> list[str]:
    """Disagreements between the marts, each a reason to distrust a number."""
    notes: list[str] = []
    s, findings = data.summary, data.findings
    ids = {f["finding_id"] for f in findings}
    if s.get("n_findings") is not None and s["n_findings"] != len(findings):
        notes.append(f"run_summary.n_findings is {s['n_findings']} but findings has {len(findings)} rows.")
    n_above = sum(is_above_low(f) for f in findings)
    if s.get("n_findings_above_low") is not None and s["n_findings_above_low"] != n_above:
        notes.append(
            f"run_summary.n_findings_above_low is {s['n_findings_above_low']} but findings has {n_above}."
        )
    if findings and s.get("fix_first_finding_id") not in (None, findings[0]["finding_id"]):
        notes.append(
            f"run_summary.fix_first_finding_id is {s['fix_first_finding_id']} but harm_rank 1 is "
            f"{findings[0]['finding_id']}; this report follows harm_rank."
        )
    for f in findings:
        cause = f.get("caused_by")
        if cause is not None and cause not in ids:
            notes.append(f"{f['finding_id']} is caused_by {cause}, which is not a finding.")
        cause_rank = next((g["rank"] for g in findings if g["finding_id"] == cause), None)
        if cause_rank is not None and cause_rank > f["rank"]:
            notes.append(f"{f['finding_id']} ranks above its own root cause {cause}.")
    ranks = [f.get("harm_rank") for f in findings if f.get("harm_rank") is not None]
    if len(ranks) != len(set(ranks)):
        notes.append("harm_rank has ties; they are broken by harm_score, then finding_id.")
    steps = data.step_metrics
    if s.get("steps_logged") is not None and s["steps_logged"] != len(steps):
        notes.append(
            f"run_summary.steps_logged is {s['steps_logged']} but step_metrics has {len(steps)} rows."
        )
    if len(steps) and s.get("steps_counted") is not None:
        n_counted = int(steps["is_counted"].astype("boolean").fillna(False).sum())
        if n_counted != s["steps_counted"]:
            notes.append(
                f"run_summary.steps_counted is {s['steps_counted']} but step_metrics counts {n_counted} rows."
            )
    return notes


def dbt_problems(data: ReportData) -> list[str]:
    problems = list(data.dbt.notes)
    for node in data.dbt.broken_nodes:
        message = f": {node.message}" if node.message else ""
        problems.append(f"{node.resource_type} {node.unique_id} {node.status} in the last build{message}")
    if data.dbt.broken_nodes:
        problems.append("Marts downstream of a broken node may be from an older build.")
    return problems


def build_double_check(data: ReportData) -> DoubleCheck:
    return DoubleCheck(
        audit_rows=sorted(data.audit, key=audit_sort_key),
        files=audit_files(data.audit),
        n_checks=len(data.coverage),
        not_run=[c for c in data.coverage if not c.get("could_run")],
        log_findings=[f for f in data.findings if f.get("category") in DOUBLE_CHECK_CATEGORIES],
        dbt_problems=dbt_problems(data),
        consistency=consistency_notes(data),
    )


def finding_facts(data: ReportData, finding: dict[str, Any]) -> list[tuple[str, str]]:
    """The plain facts of a finding as (label, text), in display order (links are added by renderers)."""
    facts = [
        ("Rank", f"{finding['rank']} (harm_rank {fmt_num(finding.get('harm_rank'))})"),
        ("Severity", str(finding.get("severity") or "n/a")),
        ("Category", str(finding.get("category") or "n/a")),
        ("Finding id", str(finding.get("finding_id"))),
        (
            "Steps",
            f"{fmt_steps(finding.get('first_step'), finding.get('last_step'))}; "
            f"{fmt_num(finding.get('steps_affected'))} affected",
        ),
        (
            "Observed vs expected",
            f"observed {fmt_num(finding.get('observed_value'))}, "
            f"expected {fmt_num(finding.get('expected_value'))}",
        ),
        (
            "Estimated cost",
            f"{fmt_cost(finding)}, estimated by: {finding.get('cost_method') or 'method not given'}",
        ),
        ("Harm score", fmt_num(finding.get("harm_score"))),
    ]
    test = finding_test_status(data, finding)
    if test is not None:
        facts.append(("dbt test", test))
    return facts
