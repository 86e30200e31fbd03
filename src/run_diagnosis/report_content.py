"""What the report says, as plain text: the summary, the fix-first argument and the checks.

Both renderers (Markdown and HTML) format the same content built here, so the two
files cannot disagree. Nothing in this module knows about markup: the HTML renderer
escapes every string, the Markdown renderer writes them as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from run_diagnosis.report_data import FailedTest, ReportData, is_above_low, severity_index

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


# A detector's cost unit in words (no column or unit names in prose): a template of the value;
# {n} a count, {v} a number, {pct} a share as a percentage. An unknown unit is shown as it is.
COST_UNIT_WORDS: dict[str, str] = {
    "seconds": "{v} s",
    "steps": "{n} steps",
    "rows": "{n} rows",
    "nats": "{v} nats",
    "loss_excess": "{v} nats of training loss above its baseline, summed over the steps",
    "val_loss": "{v} of validation loss",
    "val_loss_share": "{pct} of the final validation loss",
    "share_of_updates": "{pct} of the updates",
    "share_of_anneal": "{pct} of the learning-rate cooldown skipped",
    "relative_loss_drop": "a {pct} fall of the training loss",
    "accuracy_gap": "held-out accuracy {pct} below what the training loss guarantees on the training data",
}


def fmt_cost(finding: dict[str, Any]) -> str:
    """The detector's own estimate in words ('3 rows', '60.0% of the updates on data already
    seen'), or 'not estimated'."""
    cost = finding.get("estimated_cost")
    unit = str(finding.get("cost_unit") or "")
    if cost is None or unit == "none":
        return "not estimated"
    template = COST_UNIT_WORDS.get(unit)
    if template is None:
        return f"{fmt_num(cost)} {unit}" if unit else fmt_num(cost)
    value = float(cost)
    count = int(value) if value.is_integer() else value
    words = template.format(n=fmt_num(count), v=fmt_num(value), pct=fmt_pct(value))
    return words.replace("1 steps", "1 step").replace("1 rows", "1 row") if words.startswith("1 ") else words


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
    """The evidence text as a list of facts (written as `; `-separated facts).

    A `; ` inside double quotes or parentheses belongs to quoted text (an event's own
    words) and does not split it.
    """
    if not evidence:
        return []
    text, depth, quoted = str(evidence), 0, False
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == '"':
            quoted = not quoted
        elif char == "(" and not quoted:
            depth += 1
        elif char == ")" and not quoted:
            depth = max(0, depth - 1)
        if text.startswith("; ", i) and not quoted and depth == 0:
            parts.append("".join(current))
            current = []
            i += 2
            continue
        current.append(char)
        i += 1
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def limit_text(finding: dict[str, Any]) -> str | None:
    """'observed 0.024 against the limit 0.00315 (lr_relative_tolerance)': the threshold the finding
    crossed (findings.threshold_value / threshold_name), or None when it is not a threshold comparison."""
    if finding.get("threshold_value") is None:
        return None
    name = f" ({finding['threshold_name']})" if finding.get("threshold_name") else ""
    return (
        f"observed {fmt_num(finding.get('observed_value'))} against the limit "
        f"{fmt_num(finding['threshold_value'])}{name}"
    )


def finding_evidence(finding: dict[str, Any]) -> list[str]:
    """The finding's evidence facts, the limit it crossed first (when it crossed one)."""
    limit = limit_text(finding)
    return ([limit] if limit else []) + split_evidence(finding.get("evidence"))


def fmt_pct(share: Any) -> str:
    """A share as a percentage with one decimal: 16/19 -> '84.2%'."""
    if share is None or (isinstance(share, float) and not math.isfinite(share)):
        return "n/a"
    return f"{100 * float(share):.1f}%"


def fmt_loss(value: Any) -> str:
    """A loss or accuracy to three decimals, the same everywhere in the report."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{float(value):.3f}"


def near_misses(data: ReportData) -> list[dict[str, Any]]:
    """The check statistics that did not fire but came within near_miss_min_margin of their
    limit (check_margins.is_near_miss), closest first."""
    rows = [m for m in data.margins if m.get("is_near_miss")]
    return sorted(rows, key=lambda m: (-(m.get("margin") or 0.0), str(m.get("margin_id"))))


def near_miss_text(margin: dict[str, Any]) -> str:
    """'lr_above_peak: max_lr_ratio_to_peak 1.04 against the limit 1.05 (lr_relative_tolerance),
    margin 0.8': a check_margins row for people (margin: the share of the allowed excess used)."""
    name = f" ({margin['threshold_name']})" if margin.get("threshold_name") else ""
    silenced = (margin.get("margin") or 0) >= 1
    past = " (past it: the check's other conditions kept it silent)" if silenced else ""
    return (
        f"{margin.get('check_name')}: {margin.get('statistic_name')} {fmt_num(margin.get('observed_value'))} "
        f"against the limit {fmt_num(margin.get('threshold_value'))}{name}, "
        f"margin {fmt_num(margin.get('margin'), 2)}{past}"
    )


NEAR_MISS_NOTE = (
    "Checks that did not fire but used at least near_miss_min_margin (a threshold of check_margins) of the "
    "excess their limit allows (margin 1 fires); every check's margin is in margins.json (docs/margins.md)."
)


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
    # with the cost ledgers the mart's fix-first is followed; without them, the rank
    if (
        not data.has_costs
        and findings
        and s.get("fix_first_finding_id") not in (None, findings[0]["finding_id"])
    ):
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
    # step_metrics' rows, counted in SQL (step_plot_points carries the counts of every row on each of its own)
    n_rows, n_counted = step_row_counts(data)
    if s.get("steps_logged") is not None and s["steps_logged"] != n_rows:
        notes.append(f"run_summary.steps_logged is {s['steps_logged']} but step_metrics has {n_rows} rows.")
    if n_rows and s.get("steps_counted") is not None and n_counted != s["steps_counted"]:
        notes.append(
            f"run_summary.steps_counted is {s['steps_counted']} but step_metrics counts {n_counted} rows."
        )
    return notes


def step_row_counts(data: ReportData) -> tuple[int, int]:
    """The run's rows in step_metrics and the counted ones (step_plot_points.run_rows_logged and
    run_rows_counted, the same on each of its rows); (0, 0) when it has none."""
    points = data.step_points
    if not len(points):
        return 0, 0
    first = points.iloc[0]
    return int(first["run_rows_logged"]), int(first["run_rows_counted"])


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
        dbt_problems=dbt_problems(data),
        consistency=consistency_notes(data),
    )


def fmt_model_cost(finding: dict[str, Any]) -> str | None:
    """'0.120 (0.050 to 0.200) of final validation loss, 3.9%', or None without a model cost; a cost
    below the run's noise floor is 'within noise (-0.030 to 0.070 of final validation loss; noise
    floor 0.050)': its figure is not shown as if it were a measurement."""
    cost = finding.get("val_loss_cost")
    if cost is None:
        return None
    low, high = finding.get("val_loss_cost_low"), finding.get("val_loss_cost_high")
    if finding.get("cost_within_noise"):
        text = "within noise"
        if low is not None and high is not None:
            text += f" ({fmt_loss(low)} to {fmt_loss(high)} of final validation loss"
            floor = finding.get("noise_floor")
            text += f"; noise floor {fmt_loss(floor)})" if floor is not None else ")"
        return text
    text = fmt_loss(cost)
    if low is not None and high is not None:
        text += f" ({fmt_loss(low)} to {fmt_loss(high)})"
    text += " of final validation loss"
    if finding.get("val_loss_cost_share") is not None:
        text += f", {fmt_pct(finding['val_loss_cost_share'])}"
    return text


def fmt_compute_cost(finding: dict[str, Any]) -> str | None:
    """'17.7 s, 31.6% of the 56.2 s of step time logged over all attempts': one percentage, with its
    denominator (compute_seconds_lost / compute_share_lost); None without a compute cost."""
    seconds = finding.get("compute_seconds_lost")
    if seconds is None:
        return None
    text = f"{float(seconds):.1f} s"
    share = finding.get("compute_share_lost")
    if share is not None and float(share) > 0:
        total = float(seconds) / float(share)
        text += f", {fmt_pct(share)} of the {total:.1f} s of step time logged over all attempts"
    return text


def estimate_text(finding: dict[str, Any]) -> str:
    """The finding's estimate in words: the ledger costs when the build has them, else the detector's."""
    parts = [p for p in (fmt_model_cost(finding), fmt_compute_cost(finding)) if p]
    if parts:
        text = "; ".join(parts)
        if finding.get("cost_evidence"):
            text += f" (how: {finding['cost_evidence']})"
        return text
    text = fmt_cost(finding)
    if finding.get("cost_method"):
        text += f" ({finding['cost_method']})"
    return text


def finding_facts(data: ReportData, finding: dict[str, Any]) -> list[tuple[str, str]]:
    """The plain facts of a finding as (label, text), in display order (links are added by renderers)."""
    facts = [
        ("Rank", str(finding["rank"])),
        ("Severity", str(finding.get("severity") or "n/a")),
        ("Category", str(finding.get("category") or "n/a")),
        ("Finding id", str(finding.get("finding_id"))),
        (
            "Steps",
            f"{fmt_steps(finding.get('first_step'), finding.get('last_step'))}; "
            f"{fmt_num(finding.get('steps_affected'))} affected",
        ),
        ("Estimate", estimate_text(finding)),
    ]
    if finding.get("detector_severity"):
        facts.append(("Detector's own severity", str(finding["detector_severity"])))
    test = finding_test_status(data, finding)
    if test is not None:
        facts.append(("dbt test", test))
    return facts


# --------------------------------------------------------------------------- the findings view


def display_order(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Severity first, then rank: a list never shows a lower severity above a higher one."""
    return sorted(findings, key=lambda f: (severity_index(f.get("severity")), f["rank"]))


@dataclass(frozen=True)
class FindingEntry:
    """One finding as the appendix lists it ("Every finding"), the same in both renderers."""

    number: int  # its place in display order, from 1
    finding: dict[str, Any]
    steps: str
    estimate: str
    facts: list[tuple[str, str]]
    cause: dict[str, Any] | None  # the finding its caused_by names, when that is a finding
    evidence: list[str]


@dataclass(frozen=True)
class FailedTestEntry:
    """A dbt test that failed or warned, with the findings it is about."""

    test: FailedTest
    findings: list[dict[str, Any]]


@dataclass(frozen=True)
class FindingsView:
    """Every finding in display order and every failing dbt test: built once, read by both renderers."""

    findings: list[FindingEntry]
    failed_tests: list[FailedTestEntry]


def build_findings_view(data: ReportData) -> FindingsView:
    return FindingsView(
        findings=[
            FindingEntry(
                number=i,
                finding=f,
                steps=fmt_steps(f.get("first_step"), f.get("last_step")),
                estimate=estimate_text(f),
                facts=finding_facts(data, f),
                cause=data.finding(f.get("caused_by")),
                evidence=finding_evidence(f),
            )
            for i, f in enumerate(display_order(data.findings), 1)
        ],
        failed_tests=[FailedTestEntry(t, findings_for_test(data, t)) for t in data.dbt.failed_tests],
    )
