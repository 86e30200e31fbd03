"""Alerts: the findings a build opened, sent once each, as a JSON file or to a webhook.

    run-diagnosis alerts --db DIR/diagnosis.duckdb --alert-json alerts.json
    run-diagnosis alerts --db ... --alert-webhook URL [--alert-format slack] [--alert-min-severity high]
    run-diagnosis diagnose SOURCE --out DIR --alert-json DIR/alerts.json   # the same, after the build

What is sent: every finding that is open in the history (``findings_history``: its latest row
is ``new``, ``still_open`` or ``regressed``) at or above the chosen severity, whose current
episode (run_id, finding_id, opened_at) has not been sent on this channel before. After a build
these are the findings new or regressed at that build; a finding whose severity rose to the
threshold while open is sent when it crosses it; a delivery that failed is retried at the next
build. Each alert carries the finding's evidence, cost, fix and confirm-rerun.

Nothing is sent twice: each episode sent is recorded in the table ``alerts_sent`` of the same
DuckDB file, per channel (the JSON file's path, or a hash of the webhook URL: a Slack webhook
URL is a secret and is never stored). A finding that resolves and comes back is a new episode
(status ``regressed``) and is sent once more.

Formats: ``generic`` (the payload documented in docs/findings-schema.json, ``$defs/alert_payload``)
and ``slack`` (Block Kit: a header, then one section per finding, at most ``SLACK_ALERTS_PER_MESSAGE``
findings per message). docs/history-and-alerts.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from run_diagnosis.cli import prog
from run_diagnosis.report_data import SEVERITY_ORDER, has_table, query_rows, severity_index

SCHEMA_NAME = "run_diagnosis/alert_payload"
SCHEMA_VERSION = "1.1.0"  # docs/findings-schema.json $defs/alert_payload; bump on any change of shape
LEDGER = "alerts_sent"
HISTORY = "findings_history"
OPEN_STATUSES = ("new", "still_open", "regressed")
FORMATS = ("generic", "slack")
DEFAULT_MIN_SEVERITY = "medium"
WEBHOOK_TIMEOUT_SEC = 15
SLACK_ALERTS_PER_MESSAGE = 12  # 1 header + 4 blocks a finding stays under Slack's 50 blocks
SLACK_TEXT_CHARS = 2900  # a section's text may hold 3000 characters
SLACK_HEADER_CHARS = 150


class AlertError(Exception):
    """The history cannot be read or an alert cannot be delivered; the message says which."""


@dataclass(frozen=True)
class Channel:
    """Where alerts go: ``kind`` json or webhook, ``target`` the file or URL, ``fmt`` the body."""

    kind: str
    target: str
    fmt: str = "generic"

    @property
    def key(self) -> str:
        """The ledger's name for the channel (a webhook URL is a secret: only its hash is kept)."""
        if self.kind == "json":
            return f"json:{Path(self.target).resolve()}"
        return f"webhook:{hashlib.sha256(self.target.encode()).hexdigest()[:16]}"


def webhook_format(url: str, fmt: str | None) -> str:
    """The format asked for, else slack for a Slack webhook URL, else generic."""
    if fmt:
        return fmt
    return "slack" if "hooks.slack.com" in url else "generic"


# ------------------------------------------------------------------ what to send


def rows_of(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    return query_rows(con, sql, params)[1]


def _ensure_ledger(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        f"create table if not exists main.{LEDGER} (channel varchar, run_id varchar, finding_id varchar, "
        "opened_at timestamp, severity varchar, status varchar, sent_at timestamp)"
    )


def pending(
    con: duckdb.DuckDBPyConnection, channel: Channel, min_severity: str = DEFAULT_MIN_SEVERITY
) -> list[dict[str, Any]]:
    """The open findings at or above min_severity not yet sent on channel, worst first."""
    if min_severity not in SEVERITY_ORDER:
        raise AlertError(f"unknown severity {min_severity!r}: expected one of {', '.join(SEVERITY_ORDER)}")
    if not has_table(con, HISTORY):
        raise AlertError(f"the build has no {HISTORY} table: build it with this version of the project")
    _ensure_ledger(con)
    serious = list(SEVERITY_ORDER[: SEVERITY_ORDER.index(min_severity) + 1])
    latest = f"""
        select *, row_number() over (
            partition by run_id, finding_id order by built_at desc
            rows between unbounded preceding and current row) as recency
        from main.{HISTORY}"""
    rows = rows_of(
        con,
        f"""
        select latest.* exclude (recency)
        from ({latest}) as latest
        where latest.recency = 1
          and latest.status in ({", ".join("?" for _ in OPEN_STATUSES)})
          and latest.severity in ({", ".join("?" for _ in serious)})
          and not exists (
            select 1 from main.{LEDGER} as sent
            where sent.channel = ? and sent.run_id = latest.run_id
              and sent.finding_id = latest.finding_id and sent.opened_at = latest.opened_at)
        order by latest.run_id, latest.harm_rank, latest.finding_id""",
        [*OPEN_STATUSES, *serious, channel.key],
    )
    rows.sort(key=lambda r: (severity_index(r.get("severity")), str(r["run_id"]), r.get("harm_rank") or 0))
    return rows


def record_sent(con: duckdb.DuckDBPyConnection, channel: Channel, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        return
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    con.executemany(
        f"insert into main.{LEDGER} values (?, ?, ?, cast(? as timestamp), ?, ?, ?)",
        [
            [channel.key, r["run_id"], r["finding_id"], r["opened_at"], r["severity"], r["status"], now]
            for r in rows
        ],
    )


# ------------------------------------------------------------------ payloads


def alert(row: dict[str, Any], reports: dict[str, str] | None = None) -> dict[str, Any]:
    """One finding as an alert: what it is, its evidence, cost, fix and how to confirm it."""
    return {
        "run_id": row["run_id"],
        "finding_id": row["finding_id"],
        "category": row.get("category"),
        "severity": row.get("severity"),
        "status": row.get("status"),
        "previous_severity": row.get("previous_severity"),
        "title": row.get("title"),
        "evidence": row.get("evidence"),
        "first_step": row.get("first_step"),
        "last_step": row.get("last_step"),
        "cost": {
            "val_loss_cost": row.get("val_loss_cost"),
            "val_loss_cost_low": row.get("val_loss_cost_low"),
            "val_loss_cost_high": row.get("val_loss_cost_high"),
            "compute_seconds_lost": row.get("compute_seconds_lost"),
            "estimated_cost": row.get("estimated_cost"),
            "cost_unit": row.get("cost_unit"),
            "cost_evidence": row.get("cost_evidence"),
        },
        "fix": row.get("recommendation"),
        "confirm_rerun": row.get("confirm_rerun"),
        "first_seen_at": row.get("first_seen_at"),
        "opened_at": row.get("opened_at"),
        "built_at": row.get("built_at"),
        "invocation_id": row.get("invocation_id"),
        "report": (reports or {}).get(str(row["run_id"])),
    }


def generic_payload(alerts: Sequence[dict[str, Any]], min_severity: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "min_severity": min_severity,
        "n_alerts": len(alerts),
        "alerts": list(alerts),
    }


def cost_text(item: dict[str, Any]) -> str:
    cost = item["cost"]
    if cost.get("val_loss_cost") is not None:
        text = f"{cost['val_loss_cost']:.3g} nats of final validation loss"
        if cost.get("val_loss_cost_low") is not None and cost.get("val_loss_cost_high") is not None:
            text += f" ({cost['val_loss_cost_low']:.3g} to {cost['val_loss_cost_high']:.3g})"
        return text
    if cost.get("compute_seconds_lost") is not None:
        return f"{cost['compute_seconds_lost']:.3g} s of compute"
    if cost.get("estimated_cost") is not None:
        return f"{cost['estimated_cost']:.3g} {cost.get('cost_unit') or ''}".strip()
    return "not estimated"


def _cut(text: Any, limit: int) -> str:
    value = str(text or "")
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


def slack_messages(alerts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Slack Block Kit messages, at most SLACK_ALERTS_PER_MESSAGE findings each."""
    messages = []
    for start in range(0, len(alerts), SLACK_ALERTS_PER_MESSAGE):
        chunk = alerts[start : start + SLACK_ALERTS_PER_MESSAGE]
        runs = sorted({str(a["run_id"]) for a in chunk})
        summary = f"run_diagnosis: {len(chunk)} finding(s) to look at in {', '.join(runs)}"
        blocks: list[dict[str, Any]] = [
            {"type": "header", "text": {"type": "plain_text", "text": _cut(summary, SLACK_HEADER_CHARS)}}
        ]
        for item in chunk:
            fix, confirm = item.get("fix") or "n/a", item.get("confirm_rerun") or "n/a"
            steps = (
                f" (steps {item['first_step']}-{item['last_step']})"
                if item.get("first_step") is not None
                else ""
            )
            head = f"*[{str(item['severity']).upper()}] {item['title']}*{steps}\n{item.get('evidence') or ''}"
            blocks += [
                {"type": "section", "text": {"type": "mrkdwn", "text": _cut(head, SLACK_TEXT_CHARS)}},
                {
                    "type": "section",
                    "fields": [
                        {"type": "mrkdwn", "text": f"*Run*\n{item['run_id']}"},
                        {"type": "mrkdwn", "text": f"*Status*\n{item['status']} ({item['finding_id']})"},
                        {"type": "mrkdwn", "text": f"*Cost*\n{_cut(cost_text(item), 1900)}"},
                        {"type": "mrkdwn", "text": f"*Report*\n{item.get('report') or 'n/a'}"},
                    ],
                },
                {
                    "type": "section",
                    "text": {
                        "type": "mrkdwn",
                        "text": _cut(f"*Fix:* {fix}\n*Confirm:* {confirm}", SLACK_TEXT_CHARS),
                    },
                },
                {"type": "divider"},
            ]
        messages.append({"text": summary, "blocks": blocks})
    return messages


# ------------------------------------------------------------------ delivery


def post_json(url: str, body: dict[str, Any]) -> None:
    data = json.dumps(body, allow_nan=False).encode("utf-8")
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_SEC) as response:
            if not 200 <= response.status < 300:
                raise AlertError(f"webhook answered HTTP {response.status}")
    except urllib.error.HTTPError as error:
        raise AlertError(f"webhook answered HTTP {error.code} {error.reason}") from error
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise AlertError(f"webhook not reachable: {getattr(error, 'reason', error)}") from error


def deliver(channel: Channel, alerts: Sequence[dict[str, Any]], min_severity: str) -> None:
    """Write the JSON file (always, an empty list too) or post to the webhook (only when there is
    something to say)."""
    if channel.kind == "json":
        body = generic_payload(alerts, min_severity)
        try:
            Path(channel.target).write_text(
                json.dumps(body, indent=2, allow_nan=False) + "\n", encoding="utf-8"
            )
        except OSError as error:
            raise AlertError(f"cannot write {channel.target}: {error.strerror or error}") from error
        return
    if not alerts:
        return
    bodies = slack_messages(alerts) if channel.fmt == "slack" else [generic_payload(alerts, min_severity)]
    for body in bodies:
        post_json(channel.target, body)


def send(
    db_path: Path,
    channels: Sequence[Channel],
    min_severity: str = DEFAULT_MIN_SEVERITY,
    reports: dict[str, str] | None = None,
) -> dict[str, int]:
    """Send each channel its pending alerts and record them; returns channel key -> alerts sent.
    Raises AlertError (after trying every channel) when one could not be delivered."""
    if not db_path.is_file():
        raise AlertError(f"no build found at {db_path}: run dbt build first")
    sent: dict[str, int] = {}
    failures = []
    try:
        con = duckdb.connect(str(db_path))
    except duckdb.Error as error:
        raise AlertError(f"cannot open {db_path} ({error}); if a build is running, wait for it") from error
    try:
        for channel in channels:
            rows = pending(con, channel, min_severity)
            try:
                deliver(channel, [alert(r, reports) for r in rows], min_severity)
            except AlertError as error:
                failures.append(f"{channel.kind} {channel.key}: {error}")
                continue
            record_sent(con, channel, rows)
            sent[channel.key] = len(rows)
    finally:
        con.close()
    if failures:
        raise AlertError("; ".join(failures))
    return sent


def channels_from(alert_json: Path | None, webhooks: Sequence[str], fmt: str | None) -> list[Channel]:
    found = [Channel("json", str(alert_json))] if alert_json else []
    found += [Channel("webhook", url, webhook_format(url, fmt)) for url in webhooks]
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The alert options, shared by run-diagnosis alerts and run-diagnosis diagnose."""
    group = parser.add_argument_group("alerts (docs/history-and-alerts.md)")
    group.add_argument("--alert-json", type=Path, metavar="FILE", help="write the new alerts to FILE (JSON)")
    group.add_argument(
        "--alert-webhook",
        action="append",
        default=[],
        metavar="URL",
        help="POST the new alerts to URL (repeatable); nothing is posted when there is none",
    )
    group.add_argument(
        "--alert-format",
        choices=FORMATS,
        help="webhook body: generic JSON or Slack blocks (default: slack for hooks.slack.com URLs)",
    )
    group.add_argument(
        "--alert-min-severity",
        choices=SEVERITY_ORDER,
        default=DEFAULT_MIN_SEVERITY,
        help=f"alert on findings at or above this severity (default {DEFAULT_MIN_SEVERITY})",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("alerts"), description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="DuckDB file of a build")
    add_arguments(parser)
    args = parser.parse_args(argv)
    channels = channels_from(args.alert_json, args.alert_webhook, args.alert_format)
    if not channels:
        parser.error("give --alert-json FILE and/or --alert-webhook URL")
    try:
        sent = send(args.db, channels, args.alert_min_severity)
    except AlertError as error:
        print(f"alerts: error: {error}", file=sys.stderr)
        return 1
    for key, count in sent.items():
        print(f"{count} alert(s) sent: {key}")
    return 0
