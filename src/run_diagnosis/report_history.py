"""What changed since the run's previous build, for the run report (findings_history, run_builds).

A run diagnosed more than once in the same database (a run still training, re-diagnosed as its
log grows, or diagnosed again after a fix) gets a section "Since the previous build" in the
appendix of report.md and report.html: the build's number, how many findings are new, still
open, resolved and regressed, and each one that changed. The first build of a run has no such
section, so a fresh build's report does not depend on what a database saw before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from run_diagnosis.report_data import has_table, query_rows, severity_index

STATUS_WORDS = {"new": "new", "still_open": "still open", "resolved": "resolved", "regressed": "regressed"}


@dataclass(frozen=True)
class RunHistory:
    """The run's latest build in the history and its changed findings (not the still-open ones)."""

    build_number: int
    counts: dict[str, int]
    changed: list[dict[str, Any]] = field(default_factory=list)

    def headline(self) -> str:
        counts = ", ".join(f"{self.counts.get(s, 0)} {word}" for s, word in STATUS_WORDS.items())
        number = self.build_number
        return f"Build {number} of this run in this database: {counts} since build {number - 1}."

    def rows(self) -> list[list[str]]:
        """status, severity, finding id, title per changed finding."""
        return [
            [
                STATUS_WORDS[r["status"]],
                str(r.get("severity")),
                str(r["finding_id"]),
                str(r.get("title") or ""),
            ]
            for r in self.changed
        ]


def read_history(con: duckdb.DuckDBPyConnection, run_id: str) -> RunHistory | None:
    """The run's latest build, when the build has the history and the run was built before."""
    if not (has_table(con, "run_builds") and has_table(con, "findings_history")):
        return None
    _, builds = query_rows(
        con, "select * from main.run_builds where run_id = ? order by built_at desc limit 1", [run_id]
    )
    if not builds or int(builds[0]["build_number"]) < 2:
        return None
    latest = builds[0]
    _, changed = query_rows(
        con,
        "select status, severity, finding_id, title from main.findings_history "
        "where run_id = ? and invocation_id = ? and status <> 'still_open' order by finding_id",
        [run_id, latest["invocation_id"]],
    )
    order = list(STATUS_WORDS)
    changed.sort(key=lambda r: (order.index(r["status"]), severity_index(r.get("severity")), r["finding_id"]))
    counts = {status: int(latest.get(f"n_{status}") or 0) for status in STATUS_WORDS}
    return RunHistory(int(latest["build_number"]), counts, changed)
