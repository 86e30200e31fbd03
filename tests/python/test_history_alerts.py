"""The findings history, the alerts and the findings schema (issue 25).

One run still training is diagnosed three times into the same database:

1. at step 120 of 240 (no "run finished" event yet): the log ends before the configured length
   (run_ended_early:stopped_early, low);
2. after its log grew to step 240, steps 150-190 having run 6x slower than usual: the early end
   is `resolved`, the slow stretch `new`;
3. unchanged: nothing is rebuilt, nothing appended, nothing alerted.

After each build the alerts go to a local HTTP server (generic JSON and Slack blocks) and to a
JSON file: each finding is sent once. run-diagnosis findings-since and the fleet page read the history;
findings.json and the alert payload are validated against docs/findings-schema.json.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from run_diagnosis import alerts, findings_since
from run_diagnosis.dbt_runner import build_run
from run_diagnosis.report import write_report
from run_diagnosis.report_fleet import write_fleet
from support.dbt_session import DB_NAME
from support.paths import REPO
from support.run_builder import RunBuilder

SCHEMA = json.loads((REPO / "docs" / "findings-schema.json").read_text(encoding="utf-8"))
RUN = "growing"
HALF = 120
MISMATCH, SLOW = "run_ended_early:stopped_early", "slow_steps:150"
ALERT_MIN = "low"  # the alerts asked for: every finding at or above low (the early end is low)
ALERTED = ("low", "medium", "high", "critical")


class Inbox(BaseHTTPRequestHandler):
    """Keeps every JSON body POSTed to it (the server's `bodies` list)."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.bodies.append((self.path, json.loads(self.rfile.read(length))))  # type: ignore[attr-defined]
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture(scope="module")
def inbox() -> Iterator[HTTPServer]:
    server = HTTPServer(("127.0.0.1", 0), Inbox)
    server.bodies = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def growing_run(last_step: int) -> RunBuilder:
    """The run as its files stand at last_step: steps 150-190 ran 6x slower than usual."""
    run = RunBuilder(seed=7).plant_slow_stretch(150, 190, 6.0)
    if last_step < run.total_steps:
        run.train = run.train[run.train["step"] <= last_step]
        run.evals = run.evals[run.evals["step"] <= last_step]
        kept = (run.events["step"] <= last_step) & ~run.events["event"].str.startswith("run finished")
        run.events = run.events[kept]
    return run


def history(db: Path) -> pd.DataFrame:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("select * from main.findings_history order by built_at, finding_id").df()


def status_of(frame: pd.DataFrame) -> dict[str, str]:
    return dict(zip(frame["finding_id"], frame["status"], strict=True))


class Builds:
    """The run's folder and database, built one more time on each call."""

    def __init__(self, root: Path, url: str) -> None:
        # the file name the fixture builds use (support/dbt_session.py): one parsed manifest serves both
        self.root, self.runs, self.db = root, root / "runs", root / DB_NAME
        self.channels = [
            alerts.Channel("webhook", f"{url}/generic", "generic"),
            alerts.Channel("webhook", f"{url}/slack", "slack"),
            alerts.Channel("json", str(root / "alerts.json")),
        ]
        self.output = ""

    def build(self) -> None:
        # the default selector, as run-diagnosis diagnose builds: the models, the anomaly tests and
        # the invariants; the hygiene and unit tests guard the SQL (the sample's `ci` build runs them)
        result = build_run(self.runs, self.db, self.root / "dbt", check=False)
        assert result.ok, "\n".join(result.errors)
        self.output = result.output

    def alert(self) -> dict[str, int]:
        return alerts.send(self.db, self.channels, ALERT_MIN, {RUN: "runs/growing/report.html"})

    def alert_file(self) -> dict[str, Any]:
        return json.loads((self.root / "alerts.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory, inbox: HTTPServer) -> Builds:
    host, port = inbox.server_address[:2]
    return Builds(tmp_path_factory.mktemp("history"), f"http://{host}:{port}")


def validate(instance: Any, schema: dict[str, Any]) -> None:
    """jsonschema when installed (it comes with dbt), else the small checker below."""
    try:
        import jsonschema
    except ModuleNotFoundError:
        check_schema(instance, schema or SCHEMA, SCHEMA, "$")
        return
    document = {"$schema": SCHEMA["$schema"], "$defs": SCHEMA["$defs"], **schema} if schema else SCHEMA
    jsonschema.validate(instance, document)


JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list,
              "object": dict, "null": type(None)}  # fmt: skip


def check_schema(value: Any, schema: dict[str, Any], root: dict[str, Any], where: str) -> None:
    """The subset of JSON Schema docs/findings-schema.json uses: $ref, type, enum, const,
    required, properties, items, minimum."""
    if "$ref" in schema:
        schema = root["$defs"][schema["$ref"].split("/")[-1]]
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        ok = any(
            isinstance(value, JSON_TYPES[k]) and not (k in ("integer", "number") and isinstance(value, bool))
            for k in kinds
        )
        assert ok, f"{where}: {value!r} is not {kinds}"
    assert "enum" not in schema or value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    assert "const" not in schema or value == schema["const"], f"{where}: {value!r} is not {schema['const']}"
    assert "minimum" not in schema or value >= schema["minimum"], f"{where}: {value!r} below minimum"
    if isinstance(value, dict):
        missing = [k for k in schema.get("required", []) if k not in value]
        assert not missing, f"{where}: missing {missing}"
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                check_schema(value[key], sub, root, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            check_schema(item, schema["items"], root, f"{where}[{index}]")


# ------------------------------------------------------------------ build 1: the run at step 120


@pytest.fixture(scope="module")
def first(builds: Builds, inbox: HTTPServer) -> dict[str, Any]:
    growing_run(HALF).write(builds.runs / RUN)
    builds.build()
    sent = builds.alert()
    return {
        "history": history(builds.db),
        "sent": sent,
        "bodies": list(inbox.bodies),
        "file": builds.alert_file(),
    }


def test_first_build_sees_every_finding_as_new(first: dict[str, Any]) -> None:
    rows = first["history"]
    assert set(rows["status"]) == {"new"}
    assert MISMATCH in set(rows["finding_id"]) and SLOW not in set(rows["finding_id"])


def test_alerts_carry_evidence_cost_fix_and_confirm_rerun(first: dict[str, Any]) -> None:
    bodies = dict(first["bodies"])
    generic = bodies["/generic"]
    validate(generic, {"$ref": "#/$defs/alert_payload"})
    sent = {a["finding_id"]: a for a in generic["alerts"]}
    assert MISMATCH in sent
    item = sent[MISMATCH]
    assert item["status"] == "new" and item["severity"] in ALERTED
    assert item["evidence"] and item["fix"] and item["run_id"] == RUN
    assert set(item["cost"]) >= {"val_loss_cost", "compute_seconds_lost", "estimated_cost", "cost_unit"}
    assert "confirm_rerun" in item and item["report"] == "runs/growing/report.html"
    assert all(a["severity"] in ALERTED for a in generic["alerts"])
    assert first["file"]["alerts"] == generic["alerts"]  # the JSON file says the same
    slack = bodies["/slack"]
    assert slack["blocks"][0]["type"] == "header" and len(slack["blocks"]) <= 50
    text = json.dumps(slack["blocks"])
    assert MISMATCH in text and "*Fix:*" in text


# ------------------------------------------------------------------ build 2: the log grew to 240


@pytest.fixture(scope="module")
def second(first: dict[str, Any], builds: Builds, inbox: HTTPServer) -> dict[str, Any]:
    growing_run(240).write(builds.runs / RUN)
    before = len(inbox.bodies)
    builds.build()
    sent = builds.alert()
    return {
        "history": history(builds.db),
        "sent": sent,
        "bodies": inbox.bodies[before:],
        "file": builds.alert_file(),
    }


def test_grown_log_resolves_one_finding_and_opens_another(second: dict[str, Any]) -> None:
    rows = second["history"]
    latest = rows[rows["built_at"] == rows["built_at"].max()]
    statuses = status_of(latest)
    assert statuses[MISMATCH] == "resolved"
    assert statuses[SLOW] == "new"
    assert set(statuses.values()) <= {"new", "still_open", "resolved"}
    resolved = latest[latest["finding_id"] == MISMATCH].iloc[0]
    assert resolved["previous_status"] == "new" and resolved["title"]  # what was last seen of it


def test_already_alerted_findings_are_not_sent_again(second: dict[str, Any]) -> None:
    generic = dict(second["bodies"])["/generic"]
    ids = {a["finding_id"] for a in generic["alerts"]}
    assert SLOW in ids and MISMATCH not in ids
    assert {a["finding_id"] for a in second["file"]["alerts"]} == ids


def test_fleet_page_and_report_show_what_changed(second: dict[str, Any], builds: Builds) -> None:
    with duckdb.connect(str(builds.db), read_only=True) as con:
        run = con.execute("select * from main.runs").df().iloc[0]
    assert run["build_number"] == 2
    assert run["n_resolved_since_previous_build"] == 1 and run["n_new_since_previous_build"] >= 1
    paths = write_fleet(builds.db, builds.root / "fleet")
    page = paths["markdown"].read_text(encoding="utf-8")
    assert "since previous build" in page and "1 resolved" in page and "build 2:" in page
    report = write_report(builds.db, builds.root / "dbt" / "target", builds.root / "report", progress=None)
    text = report["markdown"].read_text(encoding="utf-8")
    assert "### Since the previous build" in text and "Build 2 of this run" in text
    assert MISMATCH in text.split("### Since the previous build")[1]
    fresh = write_report(
        builds.db, builds.root / "dbt" / "target", builds.root / "fresh", progress=None, with_history=False
    )
    assert "Since the previous build" not in fresh["markdown"].read_text(encoding="utf-8")


def test_findings_json_follows_the_schema(second: dict[str, Any], builds: Builds) -> None:
    report = write_report(builds.db, builds.root / "dbt" / "target", builds.root / "schema", progress=None)
    findings = json.loads(report["findings"].read_text(encoding="utf-8"))
    assert findings
    validate(findings, {})
    assert SCHEMA["x-version"] == alerts.SCHEMA_VERSION
    with pytest.raises(AssertionError if _no_jsonschema() else Exception):
        validate([{**findings[0], "severity": "dire"}], {})


def _no_jsonschema() -> bool:
    try:
        import jsonschema  # noqa: F401
    except ModuleNotFoundError:
        return True
    return False


def test_findings_since_answers_for_agents(second: dict[str, Any], builds: Builds) -> None:
    last = findings_since.query(builds.db, findings_since.parse_since("last"))
    validate(last, {"$ref": "#/$defs/since_answer"})
    assert status_of(pd.DataFrame(last["rows"]))[MISMATCH] == "resolved"
    everything = findings_since.query(builds.db, findings_since.parse_since("1d"))
    assert everything["n_rows"] == len(second["history"])
    opened = findings_since.query(builds.db, findings_since.parse_since("1d"), ["new"], ALERT_MIN)
    assert {r["finding_id"] for r in opened["rows"]} >= {MISMATCH, SLOW}
    assert all(r["status"] == "new" for r in opened["rows"])
    with pytest.raises(findings_since.QueryError):
        findings_since.parse_since("yesterday-ish")


# ------------------------------------------------------------------ build 3: nothing changed


def test_unchanged_run_appends_nothing_and_alerts_nothing(
    second: dict[str, Any], builds: Builds, inbox: HTTPServer
) -> None:
    before = len(inbox.bodies)
    builds.build()
    assert "incremental build: 0 of 1 run(s) new or changed" in builds.output
    assert len(history(builds.db)) == len(second["history"])
    sent = builds.alert()
    assert set(sent.values()) == {0}
    assert len(inbox.bodies) == before  # a webhook gets nothing when there is nothing new
    assert builds.alert_file()["alerts"] == []


def test_an_unreachable_webhook_is_an_error_and_is_retried(builds: Builds, second: dict[str, Any]) -> None:
    dead = alerts.Channel("webhook", "http://127.0.0.1:9/never", "generic")  # port 9: discard, closed
    with pytest.raises(alerts.AlertError, match="webhook"):
        alerts.send(builds.db, [dead], "medium")
    with duckdb.connect(str(builds.db)) as con:
        assert alerts.pending(con, dead, "medium")  # nothing recorded: the next build retries


# ------------------------------------------------------------------ build 4: the log rewritten back


def test_a_finding_back_after_resolving_is_regressed_and_alerted_again(
    second: dict[str, Any], builds: Builds, inbox: HTTPServer
) -> None:
    """The run's files are rewritten as they stood at step 120 (a run restarted from scratch into
    the same folder): the mismatch is back (regressed, a new episode: sent again), the slow
    stretch is gone (resolved)."""
    growing_run(HALF).write(builds.runs / RUN)
    before = len(inbox.bodies)
    builds.build()
    rows = history(builds.db)
    statuses = status_of(rows[rows["built_at"] == rows["built_at"].max()])
    assert statuses[MISMATCH] == "regressed" and statuses[SLOW] == "resolved"
    builds.alert()
    generic = dict(inbox.bodies[before:])["/generic"]
    assert [(a["finding_id"], a["status"]) for a in generic["alerts"] if a["finding_id"] == MISMATCH] == [
        (MISMATCH, "regressed")
    ]
