"""Read what the report needs: the marts of the last dbt build and dbt's own results.

The marts are read from a DuckDB file opened read-only (schema `main`), one run at a time
(every mart carries `run_id`; a build may hold many runs); the failing
dbt tests come from `<target>/run_results.json` joined to `<target>/manifest.json`.
Everything is turned into plain Python values (findings, run summary, tables as
lists of dicts) or pandas frames (per-step series for the plots), so the renderers
never touch DuckDB. The steps are read as the plots draw them (step_plot_points: every row
of a short run; of a long one, each pixel column's envelope and the rows drawn as points),
never every row of a long run's log.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from run_diagnosis.dbt_runner import (
    LOCK_SUFFIX,
    FailedTest,
    failed_tests_of,
    is_failed_test,
    manifest_nodes,
    read_target_json,
)
from run_diagnosis.safe_io import holder
from run_diagnosis.tool_defects import ToolDefect, read_tool_defects

SCHEMA = "main"
# a Spark build's tables: <warehouse>/<dbt schema>.db/<table>/part-*.parquet (profiles.yml, target spark)
SPARK_SCHEMA_FOLDER = "run_diagnosis.db"

SEVERITY_ORDER = ("critical", "high", "medium", "low", "info")
ABOVE_LOW = frozenset({"critical", "high", "medium"})

# The contract with the dbt marts: every column the report reads. Extra columns are fine
# (findings.json carries every column of `findings`, whatever they are).
MART_COLUMNS: dict[str, tuple[str, ...]] = {
    "findings": (
        "run_id", "finding_id", "category", "severity", "title", "evidence", "first_step", "last_step",
        "steps_affected", "caused_by", "recommendation", "test_name", "harm_rank",
    ),
    "run_summary": (
        "run_id", "run_name", "source_format", "steps_logged", "steps_counted", "first_step", "last_step",
        "total_steps_config", "best_eval_step", "best_val_loss", "final_eval_step", "final_val_loss",
        "final_train_loss", "wall_clock_sec", "n_findings", "n_findings_above_low",
        "fix_first_finding_id", "runner_up_finding_id",
    ),
    # the rows of step_metrics the step plots draw (a bounded number per run), with the counts of all
    "step_plot_points": (
        "run_id", "train_row_id", "step", "is_counted", "attempt_number", "shard_id", "source", "loss",
        "loss_baseline", "is_loss_spike", "grad_norm", "grad_clip_norm", "is_clip_violation",
        "learning_rate", "expected_learning_rate", "step_time_sec", "is_slow_step", "epoch_number",
        "step_time_window_median", "step_time_window_steps", "is_step_time_window_middle",
        "is_step_time_outlier", "is_downsampled", "run_rows_logged", "run_rows_counted",
    ),
    "eval_metrics": (
        "run_id", "step", "val_loss", "val_accuracy", "is_counted", "is_best", "train_loss_smoothed",
    ),
    "shard_metrics": (
        "run_id", "grouping_level", "group_key", "source", "n_steps", "mean_loss_residual", "n_spikes",
        "share_of_steps",
    ),
    "audit_summary": ("run_id", "file_kind", "outcome", "reason", "n_rows", "raw_rows"),
    "check_coverage": ("run_id", "category", "could_run", "reason"),
}  # fmt: skip

# how each mart is ordered when read (stable output for the same build)
MART_ORDER: dict[str, str] = {
    "findings": "harm_rank nulls last, finding_id",
    "run_summary": "run_name",
    "step_plot_points": "step, train_row_id",
    "eval_metrics": "step, is_counted desc",
    "shard_metrics": "grouping_level, group_key",
    "audit_summary": "file_kind, outcome, reason",
    "check_coverage": "category",
    "run_context": "run_context_id",
    "run_events": "step, event_row_id",
    "run_story": "run_id",
    "check_margins": "check_name, statistic_name",
    "report_caveats": "caveat_id",
}

# Marts the report uses when the build has them (older builds and imports may not):
# without them the caveats about checkpoints, validation-set size and events are left out,
# and without run_story the story states the validation curve's ends and no trend.
OPTIONAL_MARTS = ("run_context", "run_events", "run_story", "check_margins", "report_caveats")

# The finding categories' words and groups (one row a category, declared in the check folders:
# models/marts/check_catalog.sql). Each finding carries its category's row under CATALOG_KEY
# (not a findings column: findings.json leaves it out). Without the mart (an older build) the
# report names causes by their titles and groups them by their ledger.
CATALOG_MART = "check_catalog"
CATALOG_KEY = "catalog"
CATALOG_COLUMNS = ("category", "report_group", "plain_name", "confirm", "zoom_metric")

# Columns of the findings mart that price each finding (the harm ledgers); when a build
# lacks them the report falls back to one ranked list.
COST_COLUMNS = ("ledger", "val_loss_cost", "val_loss_cost_low", "val_loss_cost_high", "compute_seconds_lost")

# dbt result statuses the report lists
NODE_BROKEN_STATUSES = ("error", "runtime error", "skipped")
MESSAGE_CHARS = 300  # dbt error messages can be pages long: the report keeps the start
SKIPPED_SHOWN = 8  # skipped nodes named when a build failed (the rest are counted)


class ReportError(Exception):
    """A problem the user can fix (no build, a missing mart): shown without a traceback."""


class ReportNotWritten(ReportError):
    """The report could not be written: its folder is full or not writable (nothing was replaced)."""


def run_command(
    prog: str, write: Callable[[], dict[str, Path]], errors: tuple[type[Exception], ...] = (ReportError,)
) -> int:
    """A report command's end: write, print the HTML page's path and exit 0, or on one of
    `errors` print `prog: error: ...` to stderr (no traceback) and exit 1."""
    try:
        paths = write()
    except errors as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    print(paths["html"])
    return 0


@dataclass(frozen=True)
class BrokenNode:
    """One dbt node (model, seed, test) that errored or was skipped: the marts may be stale."""

    unique_id: str
    resource_type: str
    status: str
    message: str | None


@dataclass
class DbtResults:
    """What the report takes from dbt's target folder."""

    failed_tests: list[FailedTest] = field(default_factory=list)
    broken_nodes: list[BrokenNode] = field(default_factory=list)
    n_tests: int = 0
    generated_at: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return self.generated_at is not None

    @property
    def incomplete(self) -> bool:
        """True when a node of the last build failed or was skipped: the diagnosis is incomplete."""
        return bool(self.broken_nodes)

    def incomplete_lines(self) -> list[str]:
        """What the report, the fleet page and the commands say first when the last build failed
        (empty when it did not): which nodes did not build, what was skipped, what that means."""
        if not self.broken_nodes:
            return []
        failed = [n for n in self.broken_nodes if n.status != "skipped"]
        skipped = [n for n in self.broken_nodes if n.status == "skipped"]
        lines = [
            "This diagnosis is INCOMPLETE: the last dbt build failed, so the checks downstream of the "
            "failure did not run and the tables read here may be from an earlier build. Do not read "
            "this run as healthy."
        ]
        for node in failed:
            name = node.unique_id.split(".")[-1]
            why = f": {node.message}" if node.message else ""
            lines.append(f"Did not build: {node.resource_type} {name} ({node.status}){why}")
        if skipped:
            kinds = Counter(n.resource_type for n in skipped)
            counts = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in sorted(kinds.items()))
            shown = ", ".join(n.unique_id.split(".")[-1] for n in skipped[:SKIPPED_SHOWN])
            more = " ..." if len(skipped) > SKIPPED_SHOWN else ""
            lines.append(f"Skipped because of it: {counts} ({shown}{more}).")
        lines.append("Fix the error and rebuild before relying on any finding, or on the absence of one.")
        return lines


@dataclass(frozen=True)
class Caveat:
    """A report_caveats row: a caveat the marts decided applies to the run, with the numbers its
    sentence gives (the columns of its kind; the others are None)."""

    caveat: str  # lr_scaled_by_workers, grad_norm_after_clipping, val_set_small, val_set_size_unknown
    caveat_id: str
    finding_id: str | None = None
    lr_ratio: float | None = None
    data_parallel_workers: int | None = None
    final_lr: float | None = None
    is_final_lr_min_lr: bool | None = None
    n_steps: int | None = None
    first_step: int | None = None
    last_step: int | None = None
    limit_value: float | None = None
    first_step_above: int | None = None
    val_examples: int | None = None
    val_accuracy: float | None = None
    accuracy_two_standard_errors: float | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Caveat:
        values: dict[str, Any] = {f.name: row.get(f.name) for f in fields(cls)}
        return cls(**values)


@dataclass
class ReportData:
    """Everything the renderers need, read once. `findings` are ranked (`rank` 1 = fix first)."""

    db_path: Path
    run_id: str
    findings: list[dict[str, Any]]
    findings_columns: list[str]
    summary: dict[str, Any]
    step_points: pd.DataFrame  # step_plot_points: the step rows the plots draw (all of a short run)
    eval_metrics: pd.DataFrame
    shard_metrics: pd.DataFrame
    audit: list[dict[str, Any]]
    coverage: list[dict[str, Any]]
    dbt: DbtResults
    context: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    has_events: bool = False
    history: Any = None  # report_history.RunHistory: what changed since the run's previous build
    tool_defects: list[ToolDefect] = field(default_factory=list)  # failed structural tests about this run
    story: dict[str, Any] = field(default_factory=dict)  # the run_story mart's row: the story's claims
    margins: list[dict[str, Any]] = field(default_factory=list)  # check_margins rows (empty in older builds)
    caveats: list[Caveat] = field(default_factory=list)  # report_caveats rows (empty in older builds)

    @property
    def has_costs(self) -> bool:
        """True when the findings carry the cost columns (model and compute ledgers)."""
        return all(c in self.findings_columns for c in COST_COLUMNS)

    def caveat(self, kind: str) -> Caveat | None:
        """The run's first caveat of this kind (report_caveats), or None."""
        return next((c for c in self.caveats if c.caveat == kind), None)

    def finding(self, finding_id: str | None) -> dict[str, Any] | None:
        """The finding with this id, or None."""
        if finding_id is None:
            return None
        return next((f for f in self.findings if f["finding_id"] == finding_id), None)


# --------------------------------------------------------------------------- values


def plain_value(value: Any) -> Any:
    """A JSON-safe Python value: NaN/inf become None, decimals floats, dates ISO text."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return plain_value(float(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if hasattr(value, "item"):  # numpy scalars
        return plain_value(value.item())
    return str(value)


def severity_index(severity: Any) -> int:
    """Sort key: 0 for critical ... 4 for info, 5 for anything unknown."""
    text = str(severity).lower() if severity is not None else ""
    return SEVERITY_ORDER.index(text) if text in SEVERITY_ORDER else len(SEVERITY_ORDER)


def is_above_low(finding: dict[str, Any]) -> bool:
    return str(finding.get("severity") or "").lower() in ABOVE_LOW


# --------------------------------------------------------------------------- DuckDB


def connect(db_path: Path) -> duckdb.DuckDBPyConnection:
    """Open the build's database read-only, with a clear error when there is none; a folder is
    a Spark build's warehouse (scripts/spark_build.sh), read through DuckDB views."""
    if db_path.is_dir():
        return connect_spark_warehouse(db_path)
    if not db_path.is_file():
        raise ReportError(f"no build found at {db_path}: run dbt build first")
    try:
        return duckdb.connect(str(db_path), read_only=True)
    except duckdb.Error as exc:  # locked by a running build, or not a DuckDB file
        building = holder(db_path.with_name(db_path.name + LOCK_SUFFIX))
        if building is not None:
            raise ReportError(f"{db_path} is being built ({building}): wait for the build to finish") from exc
        raise ReportError(
            f"cannot open {db_path} read-only ({exc}); if dbt build is still running, wait for it"
        ) from exc


def connect_spark_warehouse(warehouse: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one view per table of a Spark build in schema `main`, as in the
    DuckDB file: Spark leaves each table as parquet parts in <warehouse>/run_diagnosis.db/<table>/."""
    tables = warehouse / SPARK_SCHEMA_FOLDER
    if not tables.is_dir():
        raise ReportError(f"no Spark build in {warehouse}: {tables} is missing; run scripts/spark_build.sh")
    con = duckdb.connect()
    for table in sorted(p for p in tables.iterdir() if p.is_dir() and any(p.glob("*.parquet"))):
        pattern = str(table / "*.parquet").replace("'", "''")
        con.execute(f"create view {SCHEMA}.\"{table.name}\" as select * from read_parquet('{pattern}')")
    return con


def existing_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Tables and views of schema `main` with their columns in table order."""
    rows = con.execute(
        "select table_name, column_name from information_schema.columns "
        "where table_schema = ? order by table_name, ordinal_position",
        [SCHEMA],
    ).fetchall()
    columns: dict[str, list[str]] = {}
    for table, column in rows:
        columns.setdefault(table, []).append(column)
    return columns


def failed_build_hint(target_path: Path | None) -> str:
    """' (the last build failed: ...)' naming the nodes that did not build, or a question."""
    if target_path is None:
        return " (did a model fail?)"
    failed = [n for n in read_dbt_results(target_path).broken_nodes if n.status != "skipped"]
    if not failed:
        return " (did a model fail?)"
    named = "; ".join(f"{n.unique_id.split('.')[-1]}: {n.message or n.status}" for n in failed[:3])
    return f" (the last build failed, so there is no diagnosis: {named})"


def check_contract(db_path: Path, columns: dict[str, list[str]], target_path: Path | None = None) -> None:
    """Raise naming every missing mart (and the nodes of a failed build), then every missing column."""
    missing_marts = [mart for mart in MART_COLUMNS if mart not in columns]
    if missing_marts:
        names = ", ".join(missing_marts)
        raise ReportError(
            f"mart{'s' if len(missing_marts) > 1 else ''} missing from {db_path} (schema {SCHEMA}): "
            f"{names}; run dbt build{failed_build_hint(target_path)}"
        )
    problems = []
    for mart, wanted in MART_COLUMNS.items():
        lacking = [c for c in wanted if c not in columns[mart]]
        if lacking:
            problems.append(f"{mart} lacks {', '.join(lacking)}")
    if problems:
        raise ReportError(f"marts in {db_path} do not match what the report reads: {'; '.join(problems)}")


def list_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The run_ids of a build, in order (a build of one run has one)."""
    rows = con.execute(f"select run_id from {SCHEMA}.run_summary order by run_id").fetchall()
    return [str(row[0]) for row in rows]


def choose_run(con: duckdb.DuckDBPyConnection, db_path: Path, run_id: str | None) -> str:
    """The run to report on: the one asked for, or the only one in the build."""
    runs = list_runs(con)
    if run_id is not None:
        if run_id not in runs:
            raise ReportError(f"no run '{run_id}' in {db_path}; it holds: {', '.join(runs) or 'no run'}")
        return run_id
    if len(runs) != 1:
        raise ReportError(
            f"{db_path} holds {len(runs)} runs ({', '.join(runs[:10])}{' ...' if len(runs) > 10 else ''}): "
            "name one (--run-id)"
        )
    return runs[0]


def _select(mart: str) -> str:
    """One run's rows of a mart, in the mart's report order (the run is the query's parameter)."""
    return f"select * from {SCHEMA}.{mart} where run_id = ? order by {MART_ORDER[mart]}"


def read_rows(
    con: duckdb.DuckDBPyConnection, mart: str, run_id: str
) -> tuple[list[str], list[dict[str, Any]]]:
    """One run's rows of a mart as plain dicts, in the mart's report order."""
    return query_rows(con, _select(mart), [run_id])


def query_rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()
) -> tuple[list[str], list[dict[str, Any]]]:
    """A query's column names and its rows as plain dicts (JSON-safe values)."""
    cursor = con.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, (plain_value(v) for v in row), strict=True)) for row in cursor.fetchall()]
    return names, rows


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """True when schema `main` holds a table or view of this name."""
    found = con.execute(
        "select count(*) from information_schema.tables where table_schema = ? and table_name = ?",
        [SCHEMA, name],
    ).fetchone()
    return bool(found and found[0])


def read_catalog(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    """The check_catalog mart's words and groups, by category."""
    columns = ", ".join(CATALOG_COLUMNS)
    _, rows = query_rows(con, f"select {columns} from {SCHEMA}.{CATALOG_MART} order by category")
    return {str(row["category"]): row for row in rows}


def catalog_text(finding: dict[str, Any], column: str) -> str | None:
    """A column of the finding's category in check_catalog (None: not declared, or no catalog)."""
    value = (finding.get(CATALOG_KEY) or {}).get(column)
    return None if value is None else str(value)


def read_frame(con: duckdb.DuckDBPyConnection, mart: str, run_id: str) -> pd.DataFrame:
    """One run's rows of a mart as a DataFrame (for the plots), in the mart's report order."""
    return con.execute(_select(mart), [run_id]).df()


# --------------------------------------------------------------------------- dbt target


def read_dbt_results(target_path: Path) -> DbtResults:
    """Failing/warning tests (with their category) and broken nodes of the last dbt invocation.

    Missing or unreadable files become notes: the report is still written without them.
    """
    results = DbtResults()
    run_results = read_target_json(target_path / "run_results.json", results.notes)
    if run_results is None:
        return results
    nodes = manifest_nodes(target_path, results.notes)
    results.generated_at = str((run_results.get("metadata") or {}).get("generated_at") or "unknown time")
    results.failed_tests = failed_tests_of(run_results, nodes)
    for result in run_results.get("results") or []:
        unique_id = str(result.get("unique_id") or "")
        status = str(result.get("status") or "").lower()
        resource_type = unique_id.split(".", 1)[0]
        if resource_type == "test":
            results.n_tests += 1
        if is_failed_test(result):
            continue
        # a failing unit test means the project is broken, not the run
        if status in NODE_BROKEN_STATUSES or (resource_type == "unit_test" and status == "fail"):
            message = result.get("message")
            short = " ".join(str(message).split())[:MESSAGE_CHARS] if message else None
            results.broken_nodes.append(BrokenNode(unique_id, resource_type, status, short))
    if nodes == {} and results.failed_tests:
        results.notes.append("manifest.json missing or empty: test categories are unknown")
    results.failed_tests.sort(key=lambda t: (t.status != "fail", -(t.failures or 0), t.name))
    return results


# --------------------------------------------------------------------------- all together


def load_report_data(
    db_path: Path, target_path: Path, run_id: str | None = None, with_history: bool = True
) -> ReportData:
    """Read one run's rows of every mart (raising ReportError on a missing build, mart or run)
    and the dbt results. `run_id` may be left out when the build holds one run. with_history:
    also what changed since the run's previous build (report_history)."""
    from run_diagnosis.report_history import read_history

    con = connect(db_path)
    try:
        present = existing_columns(con)
        check_contract(db_path, present, target_path)
        run_id = choose_run(con, db_path, run_id)
        findings_columns, rows = read_rows(con, "findings", run_id)
        _, summary_rows = read_rows(con, "run_summary", run_id)
        _, audit = read_rows(con, "audit_summary", run_id)
        _, coverage = read_rows(con, "check_coverage", run_id)
        step_points = read_frame(con, "step_plot_points", run_id)
        eval_metrics = read_frame(con, "eval_metrics", run_id)
        shard_metrics = read_frame(con, "shard_metrics", run_id)
        context_rows = read_rows(con, "run_context", run_id)[1] if "run_context" in present else []
        events = read_rows(con, "run_events", run_id)[1] if "run_events" in present else []
        history = read_history(con, run_id) if with_history else None
        story_rows = read_rows(con, "run_story", run_id)[1] if "run_story" in present else []
        margins = read_rows(con, "check_margins", run_id)[1] if "check_margins" in present else []
        caveats = read_rows(con, "report_caveats", run_id)[1] if "report_caveats" in present else []
        catalog = read_catalog(con) if CATALOG_MART in present else {}
    finally:
        con.close()
    summary = summary_rows[0] if summary_rows else dict.fromkeys(MART_COLUMNS["run_summary"])
    dbt = read_dbt_results(target_path)
    defects = read_tool_defects(target_path, db_path)
    elsewhere = {d.test_name for d in defects if not d.concerns(run_id)}  # other runs' quarantine
    dbt.failed_tests = [test for test in dbt.failed_tests if test.name not in elsewhere]
    return ReportData(
        db_path=db_path,
        run_id=run_id,
        findings=ranked_findings({**f, CATALOG_KEY: catalog.get(str(f.get("category")), {})} for f in rows),
        findings_columns=findings_columns,
        summary=summary,
        step_points=step_points,
        eval_metrics=eval_metrics,
        shard_metrics=shard_metrics,
        audit=audit,
        coverage=coverage,
        dbt=dbt,
        context=context_rows[0] if context_rows else {},
        events=events,
        has_events="run_events" in present,
        history=history,
        tool_defects=[d for d in defects if d.concerns(run_id)],
        story=story_rows[0] if story_rows else {},
        margins=margins,
        caveats=[Caveat.from_row(row) for row in caveats],
    )


def ranked_findings(findings: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Findings in fix order with `rank` 1..n first (harm_rank, then harm_score, then id)."""
    ordered = sorted(
        findings,
        key=lambda f: (
            f.get("harm_rank") is None,
            f.get("harm_rank") or 0,
            -(f.get("harm_score") or 0.0),
            str(f.get("finding_id")),
        ),
    )
    return [{"rank": i, **f} for i, f in enumerate(ordered, start=1)]
