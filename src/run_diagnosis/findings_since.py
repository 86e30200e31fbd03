"""What the findings history says since a time: for agents polling a warehouse.

    run-diagnosis findings-since --db DIR/diagnosis.duckdb --since 2h
    run-diagnosis findings-since --db ... --since 2026-01-05T10:00 --status new,regressed
    run-diagnosis findings-since --db ... --since last        # the rows of the latest build only

Prints a JSON object: the query (since, as UTC), the latest build time, and the rows of
``findings_history`` written by builds that started at or after TIME, oldest build first, each
with its status (new, still_open, resolved, regressed), evidence, cost, fix and confirm-rerun.
TIME is an ISO date or time (UTC when no offset is given), a duration back from now (``90s``,
``30m``, ``2h``, ``7d``), or ``last`` (the latest build). An agent keeps the ``latest_built_at``
of one answer and passes it as ``--since`` next time (rows at exactly that time come again:
de-duplicate on invocation_id, run_id, finding_id). docs/history-and-alerts.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from run_diagnosis.alerts import HISTORY, rows_of
from run_diagnosis.cli import prog
from run_diagnosis.report_data import SEVERITY_ORDER, ReportError, connect, has_table

STATUSES = ("new", "still_open", "resolved", "regressed")
DURATION = re.compile(r"^(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>s|m|h|d|w)$")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class QueryError(Exception):
    """The arguments or the database cannot be used; the message says why."""


def parse_since(text: str, now: dt.datetime | None = None) -> dt.datetime | None:
    """TIME as a naive UTC datetime; None for ``last`` (the latest build)."""
    value = text.strip()
    if value == "last":
        return None
    now = now or dt.datetime.now(dt.UTC)
    match = DURATION.match(value)
    if match:
        seconds = float(match["amount"]) * UNIT_SECONDS[match["unit"]]
        return (now - dt.timedelta(seconds=seconds)).astimezone(dt.UTC).replace(tzinfo=None)
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError as error:
        raise QueryError(
            f"--since {text!r}: expected an ISO time (2026-01-05T10:00), a duration (30m, 2h, 7d) or 'last'"
        ) from error
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return moment


def query(
    db_path: Path,
    since: dt.datetime | None,
    statuses: Sequence[str] = STATUSES,
    min_severity: str = "info",
    run_id: str | None = None,
) -> dict[str, Any]:
    unknown = [s for s in statuses if s not in STATUSES]
    if unknown:
        raise QueryError(f"unknown status {', '.join(unknown)}: expected some of {', '.join(STATUSES)}")
    if min_severity not in SEVERITY_ORDER:
        raise QueryError(f"unknown severity {min_severity!r}: expected one of {', '.join(SEVERITY_ORDER)}")
    try:
        con = connect(db_path)
    except ReportError as error:
        raise QueryError(str(error)) from error
    try:
        if not has_table(con, HISTORY):
            raise QueryError(f"{db_path} has no {HISTORY} table: build it with this version of the project")
        latest = con.execute(f"select max(built_at) from main.{HISTORY}").fetchone()
        latest_at = latest[0] if latest else None
        start = since if since is not None else latest_at
        serious = list(SEVERITY_ORDER[: SEVERITY_ORDER.index(min_severity) + 1])
        conditions = [
            "built_at >= ?",
            f"status in ({', '.join('?' for _ in statuses)})",
            f"severity in ({', '.join('?' for _ in serious)})",
        ]
        params: list[Any] = [start, *statuses, *serious]
        if run_id is not None:
            conditions.append("run_id = ?")
            params.append(run_id)
        rows = (
            rows_of(
                con,
                f"select * from main.{HISTORY} where {' and '.join(conditions)} "
                "order by built_at, run_id, harm_rank, finding_id",
                params,
            )
            if start is not None
            else []
        )
    finally:
        con.close()
    return {
        "since": start.isoformat() if start is not None else None,
        "latest_built_at": latest_at.isoformat() if latest_at is not None else None,
        "n_rows": len(rows),
        "rows": rows,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("findings-since"), description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="DuckDB file of a build")
    parser.add_argument(
        "--since", required=True, metavar="TIME", help="ISO time (UTC), 30m / 2h / 7d, or last"
    )
    parser.add_argument(
        "--status", default=",".join(STATUSES), help=f"comma-separated, some of {', '.join(STATUSES)}"
    )
    parser.add_argument("--min-severity", choices=SEVERITY_ORDER, default="info")
    parser.add_argument("--run", dest="run_id", help="only this run")
    args = parser.parse_args(argv)
    try:
        answer = query(
            args.db,
            parse_since(args.since),
            [s.strip() for s in args.status.split(",") if s.strip()],
            args.min_severity,
            args.run_id,
        )
    except QueryError as error:
        print(f"findings_since: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(answer, indent=2, allow_nan=False))
    return 0
