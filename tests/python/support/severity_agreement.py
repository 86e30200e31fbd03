"""One severity, one rank, everywhere (issue 26): a finding's final severity and rank must be the
same in the findings mart, the stored failures of its anomaly test, the on-run-end problem list
dbt prints, findings.json and report.md.

`disagreements(...)` lists every place where they differ (empty: they agree). It is called on
the sample's build (test_sample_run.py) and on the real logs built together
(test_real_logs.py). The report is rendered without its plots (they carry no rank).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb

from run_diagnosis.dbt_runner import read_run_results
from run_diagnosis.project import thresholds
from run_diagnosis.report import findings_json
from run_diagnosis.report_content import build_double_check, build_findings_view
from run_diagnosis.report_data import load_report_data
from run_diagnosis.report_markdown import render_markdown
from run_diagnosis.report_story import build_page_one
from support.paths import REPO

ANOMALY_TEST = "no_findings_above_info"
PROBLEM_LIST_MAX_PER_RUN = thresholds(REPO)["problem_list_max_per_run"].value  # findings mart YAML
# the "Every finding" table of report.md: | rank | severity | `finding_id` | ...
REPORT_ROW = re.compile(r"^\| (\d+) \| (\w+) \| `([^`]+)` \|")
RUN_HEADER = re.compile(r"^ {2}run (.+) \(\d+, worst \w+\):$")
Ranked = dict[str, tuple[str, int]]  # finding_id -> (severity, rank)


def mart_findings(con: duckdb.DuckDBPyConnection, run_id: str) -> Ranked:
    rows = con.execute(
        "select finding_id, severity, harm_rank from main.findings where run_id = ?", [run_id]
    ).fetchall()
    return {str(f): (str(s), int(r)) for f, s, r in rows}


def anomaly_test_results(target_path: Path) -> list[dict[str, Any]]:
    """run_results entries of the anomaly tests that warned or failed."""
    return [
        r
        for r in read_run_results(target_path)
        if str(r.get("unique_id", "")).startswith("test.") and r.get("status") in ("warn", "fail")
    ]


def stored_failures(con: duckdb.DuckDBPyConnection, results: list[dict[str, Any]], run_id: str) -> Ranked:
    stored: Ranked = {}
    for result in results:
        relation = result.get("relation_name")
        if not relation:
            continue
        columns = {c[0] for c in con.execute(f"select * from {relation} limit 0").description}
        if not {"finding_id", "severity", "harm_rank"} <= columns:
            continue  # not an anomaly test (a hygiene test that warned)
        rows = con.execute(
            f"select finding_id, severity, harm_rank from {relation} where run_id = ?", [run_id]
        ).fetchall()
        stored.update({str(f): (str(s), int(r)) for f, s, r in rows})
    return stored


def report_rows(db_path: Path, target_path: Path, run_id: str) -> tuple[Ranked, Ranked]:
    """(findings.json, report.md's "Every finding" table) of one run, rendered without plots."""
    data = load_report_data(db_path, target_path, run_id)
    as_json = {str(f["finding_id"]): (str(f["severity"]), int(f["rank"])) for f in findings_json(data)}
    check = build_double_check(data)
    page = build_page_one(data, check.consistency)
    markdown = render_markdown(data, page, build_findings_view(data), check, [])
    in_report: Ranked = {}
    for line in markdown.splitlines():
        match = REPORT_ROW.match(line)
        if match:
            in_report[match.group(3)] = (match.group(2), int(match.group(1)))
    return as_json, in_report


def problem_list_sections(output: str) -> dict[str | None, str]:
    """The problem list dbt printed, by run (None: a build of one run), whitespace collapsed."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if "problem(s) above info severity" in line), None)
    if start is None:
        return {}
    sections: dict[str | None, list[str]] = {None: []}
    current: str | None = None
    for line in lines[start + 1 :]:
        if line.startswith("The ") and "anomaly test(s) behind this list" in line:  # the list's last line
            break
        header = RUN_HEADER.match(line)
        if header:
            current = header.group(1)
            sections[current] = []
            continue
        sections[current].append(line)
    return {run: " ".join(" ".join(body).split()) for run, body in sections.items()}


def compare(name: str, expected: Ranked, found: Ranked) -> list[str]:
    problems = []
    for finding_id in sorted(set(expected) | set(found)):
        if expected.get(finding_id) != found.get(finding_id):
            problems.append(
                f"{name}: {finding_id} is {found.get(finding_id)}, the findings mart says "
                f"{expected.get(finding_id)} (severity, rank)"
            )
    return problems


def disagreements(
    db_path: Path, target_path: Path, output: str, run_ids: list[str], several_runs: bool
) -> dict[str, list[str]]:
    """run_id -> where the severity or rank of a finding differs from the findings mart."""
    results = anomaly_test_results(target_path)
    sections = problem_list_sections(output)
    found: dict[str, list[str]] = {}
    with duckdb.connect(str(db_path), read_only=True) as con:
        per_run = {run_id: mart_findings(con, run_id) for run_id in run_ids}
        stored = {run_id: stored_failures(con, results, run_id) for run_id in run_ids}
        counted = sum(int(r.get("failures") or 0) for r in results)
        in_mart = con.execute("select count(*) from main.findings where severity <> 'info'").fetchone()
    above_info_everywhere = int(in_mart[0]) if in_mart else 0
    for run_id, mart in per_run.items():
        above_info = {f: v for f, v in mart.items() if v[0] != "info"}
        problems = compare("stored failures", above_info, stored[run_id])
        as_json, in_report = report_rows(db_path, target_path, run_id)
        problems += compare("findings.json", mart, as_json)
        problems += compare("report.md", mart, in_report)
        section = sections.get(run_id if several_runs else None, "")
        ranked = sorted(above_info.items(), key=lambda item: item[1][1])
        for finding_id, (severity, rank) in ranked[:PROBLEM_LIST_MAX_PER_RUN]:
            entry = f"#{rank} {severity.upper()} {finding_id}"
            if not re.search(re.escape(entry) + r"(?=[,: ]|$)", section):
                problems.append(f"problem list: no line '{entry}' in dbt's output for {run_id}")
        positions = [
            section.find(f"#{rank} {severity.upper()} {finding_id}")
            for finding_id, (severity, rank) in ranked[:PROBLEM_LIST_MAX_PER_RUN]
        ]
        if positions != sorted(positions):
            problems.append(f"problem list: {run_id}'s findings are not printed in rank order")
        if problems:
            found[run_id] = problems
    if counted != above_info_everywhere:
        found.setdefault("(all runs)", []).append(
            f"the anomaly tests report {counted} failing rows; the findings mart has "
            f"{above_info_everywhere} findings above info (all runs of the build)"
        )
    return found


def describe(found: Mapping[str, list[str]]) -> str:
    return "\n".join(f"{run}:\n  " + "\n  ".join(problems) for run, problems in found.items())
