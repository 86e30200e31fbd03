"""Structural tests that failed: defects of this tool, not problems of the run.

The invariant tests (the findings' keys, ranks and cause links, every raw row accounted for,
the registry agreeing with the seed) guard promises the SQL makes whatever the input. One
that fails means the tool produced something it should never produce, on this input. The
user still gets the diagnosis (`dbt_runner.build_run(complete=True)` builds the models the
failure skipped), and every report names the failed test at its top, so nobody relies on the
numbers it guards without knowing (docs/reliability.md).

In a build of many runs the failure is pinned to the runs whose rows broke it: the test's
stored failing rows (`store_failures`) carry `run_id`. Those runs are quarantined: their
reports and findings.json say so, the fleet page lists the defect and marks them, and the
other runs' reports are untouched. A failed test whose rows name no run (the registry, a
seed) concerns every run.

A defect is a data test that could not run (status error), or that failed and is not an
anomaly test: the anomaly tests (`meta.category`) fire on the run's problems, which is their
purpose (with `anomaly_test_severity: error` they fail instead of warning).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from run_diagnosis.dbt_runner import manifest_nodes, node_meta, read_target_json

DEFECT_STATUSES = ("fail", "error")
MESSAGE_CHARS = 200


@dataclass(frozen=True)
class ToolDefect:
    """One structural test that failed, and the runs whose rows broke it (None: every run)."""

    test_name: str
    status: str
    failures: int | None
    message: str | None
    run_ids: tuple[str, ...] | None

    def concerns(self, run_id: str) -> bool:
        return self.run_ids is None or run_id in self.run_ids

    def sentence(self) -> str:
        """'findings_finding_id_unique_within_run failed (1 failing row)' and what dbt said."""
        if self.status == "error":
            said = f": {self.message}" if self.message else ""
            return f"{self.test_name} could not run{said}"
        rows = f" ({self.failures} failing row{'s' if self.failures != 1 else ''})" if self.failures else ""
        return f"{self.test_name} failed{rows}"


def _failing_runs(con: duckdb.DuckDBPyConnection | None, node: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The run_ids in a test's stored failing rows; None when they are not stored or name no run."""
    schema, alias = node.get("schema"), node.get("alias")
    if con is None or not schema or not alias:
        return None
    try:
        columns = con.execute(
            "select column_name from information_schema.columns where table_schema = ? and table_name = ?",
            [schema, alias],
        ).fetchall()
        if ("run_id",) not in columns:
            return None
        rows = con.execute(f'select distinct cast(run_id as varchar) from "{schema}"."{alias}" order by 1')
        return tuple(str(row[0]) for row in rows.fetchall())
    except duckdb.Error:
        return None


def tool_defects(
    results: Sequence[Mapping[str, Any]], nodes: Mapping[str, Any], con: duckdb.DuckDBPyConnection | None
) -> list[ToolDefect]:
    """The defects among a build's results (run_results.json's `results`), by test name."""
    defects = []
    for result in results:
        unique_id = str(result.get("unique_id") or "")
        status = str(result.get("status") or "").lower()
        node = nodes.get(unique_id) or {}
        fired = status == "fail" and bool(node_meta(node).get("category"))  # an anomaly test did its job
        if not unique_id.startswith("test.") or status not in DEFECT_STATUSES or fired:
            continue
        failures = result.get("failures")
        message = " ".join(str(result.get("message") or "").split())[:MESSAGE_CHARS] or None
        defects.append(
            ToolDefect(
                test_name=str(node.get("name") or unique_id.split(".")[2]),
                status=status,
                failures=int(failures) if isinstance(failures, int | float) else None,
                message=message,
                run_ids=_failing_runs(con, node),
            )
        )
    return sorted(defects, key=lambda d: d.test_name)


def read_tool_defects(target_path: Path, db_path: Path | None) -> list[ToolDefect]:
    """The defects of the last build in target_path, pinned to runs through db_path's stored failures."""
    notes: list[str] = []
    run_results = read_target_json(target_path / "run_results.json", notes) or {}
    results = run_results.get("results") or []
    nodes = manifest_nodes(target_path, notes) if results else {}
    con = None
    if db_path is not None and db_path.is_file():
        try:
            con = duckdb.connect(str(db_path), read_only=True)
        except duckdb.Error:
            con = None
    try:
        return tool_defects(results, nodes, con)
    finally:
        if con is not None:
            con.close()


def banner(defects: Sequence[ToolDefect]) -> tuple[str, list[str]]:
    """The heading and lines that open a report holding defects (both renderers use them)."""
    n = len(defects)
    heading = f"Defect of this tool: {n} of its own checks failed on this run"
    lines = [f"{d.sentence()}." for d in defects]
    lines.append(
        "These are defects of run_diagnosis, not problems of the run: the diagnosis below was "
        "completed anyway, but the findings those checks guard (their keys, ranks and causes) may be "
        "duplicated, mis-ranked or missing. Please report it with the run's canonical files."
    )
    return heading, lines


def quarantined_runs(defects: Sequence[ToolDefect], run_ids: Sequence[str]) -> dict[str, list[str]]:
    """run_id -> the failed tests that concern it, for the runs some defect concerns."""
    found: dict[str, list[str]] = {}
    for run_id in run_ids:
        names = [d.test_name for d in defects if d.concerns(run_id)]
        if names:
            found[run_id] = names
    return found
