"""Build the project on DuckDB and on Spark from the same run folder(s) and compare the marts.

    python tools/compare_engines.py                       # the sample run (the seeds)
    python tools/compare_engines.py /work/notes/tworuns   # a folder of run folders
    python tools/compare_engines.py --skip-build --workdir /tmp/cmp ...   # compare earlier builds

For every source (none: the seeds) it runs `dbt build` on DuckDB (a fresh database file)
and `scripts/spark_build.sh` (a fresh Spark warehouse), both under --workdir, then compares
each mart (default: findings) row by row per run_id: the rows in the mart's order, every
column, doubles within a relative 1e-9. Differences are printed; the exit code is 1 when
there is one, 2 when a build fails.

Spark leaves its tables as parquet in <warehouse>/run_diagnosis.db/<mart>/; both builds are
opened with the report's reader (`report_data.connect`: a DuckDB file, or a Spark warehouse
folder as one DuckDB view per mart in schema `main`), so what is compared is what the report reads.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from run_diagnosis.dbt_runner import dbt_executable, read_target_json
from run_diagnosis.report_data import ReportError, connect

REPO = Path(__file__).resolve().parents[1]  # tools/ -> the checkout
# the order rows are compared in (a mart's key within a run)
MART_ORDER: dict[str, str] = {
    "findings": "harm_rank nulls last, finding_id",
    "run_summary": "run_id",
    "step_metrics": "step nulls last, train_row_id",
    "step_plot_points": "step nulls last, train_row_id",
    "eval_metrics": "step nulls last, eval_row_id",
    "shard_metrics": "grouping_level, group_key",
    "audit_summary": "file_kind, outcome, reason",
    "check_coverage": "category",
    "run_context": "run_context_id",
    "run_events": "step nulls last, event_row_id",
}
REL_TOLERANCE = 1e-9


class CompareError(Exception):
    """A build failed or a mart is missing."""


def broken_nodes(target_path: Path) -> list[str]:
    """Seeds and models of the last invocation that failed or were skipped (tests may fail: the
    marts are still built and compared)."""
    results = (read_target_json(target_path / "run_results.json", []) or {}).get("results")
    if not isinstance(results, list):
        return ["(no run_results.json)"]
    return [
        str(r["unique_id"])
        for r in results
        if str(r.get("unique_id", "")).startswith(("model.", "seed."))
        and r.get("status") in ("error", "skipped")
    ]


def run_build(
    label: str, command: Sequence[str], env: dict[str, str], log_path: Path, target_path: Path
) -> float:
    """Run one build, its output in log_path; the seconds it took. A failed test is reported, a
    failed model or seed stops the comparison."""
    started = time.monotonic()
    with log_path.open("w") as log:
        result = subprocess.run(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    seconds = time.monotonic() - started
    broken = broken_nodes(target_path)
    if result.returncode != 0 and not broken:
        print(f"{label}: some tests failed (see {log_path}); every model built", flush=True)
    elif result.returncode != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-15:]
        raise CompareError(f"{label} failed (exit {result.returncode}, log {log_path}):\n" + "\n".join(tail))
    print(f"{label}: built in {seconds:.0f} s (log {log_path})", flush=True)
    return seconds


def build_both(source: Path | None, workdir: Path, with_tests: bool) -> tuple[Path, Path]:
    """DuckDB and Spark builds of one source under workdir; (DuckDB file, Spark warehouse)."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "RUN_DIAGNOSIS_RUN_DIR"}
    if source is not None:
        env["RUN_DIAGNOSIS_RUN_DIR"] = str(source.resolve())
    db_path = workdir / "duckdb.duckdb"
    warehouse = workdir / "spark-warehouse"
    db_path.unlink(missing_ok=True)
    env_duckdb = {**env, "RUN_DIAGNOSIS_DB": str(db_path), "RUN_DIAGNOSIS_INCREMENTAL": "0"}
    no_tests = [] if with_tests else ["--exclude", "resource_type:test", "resource_type:unit_test"]
    run_build(
        "duckdb",
        [
            dbt_executable(),
            "build",
            "--profiles-dir",
            str(REPO),
            "--target",
            "duckdb",
            "--target-path",
            str(workdir / "target-duckdb"),
            "--log-path",
            str(workdir / "logs-duckdb"),
            *no_tests,
        ],
        env_duckdb,
        workdir / "duckdb.log",
        workdir / "target-duckdb",
    )
    subprocess.run(["rm", "-rf", str(warehouse)], check=True)
    env_spark = {
        **env,
        "RUN_DIAGNOSIS_SPARK_WAREHOUSE": str(warehouse),
        "RUN_DIAGNOSIS_SPARK_TARGET_PATH": str(workdir / "target-spark"),
        "RUN_DIAGNOSIS_SPARK_LOG_PATH": str(workdir / "logs-spark"),
    }
    spark_build = [str(REPO / "scripts" / "spark_build.sh"), *no_tests]
    run_build("spark", spark_build, env_spark, workdir / "spark.log", workdir / "target-spark")
    return db_path, warehouse


def same_value(left: Any, right: Any) -> bool:
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, float) or isinstance(right, float):
        try:
            a, b = float(left), float(right)
        except (TypeError, ValueError):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= REL_TOLERANCE * max(abs(a), abs(b))
    return bool(left == right)


def mart_rows(con: duckdb.DuckDBPyConnection, mart: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """A mart's rows by run and in its order (a mart without run_id, or not in MART_ORDER: every column)."""
    names = [d[0] for d in con.execute(f"select * from main.{mart} limit 0").description]
    order = MART_ORDER.get(mart, ", ".join(f'"{name}"' for name in names))
    cursor = con.execute(
        f"select * from main.{mart} order by {'run_id, ' if 'run_id' in names else ''}{order}"
    )
    return names, cursor.fetchall()


def run_of(names: list[str], row: tuple[Any, ...]) -> str:
    return str(row[names.index("run_id")]) if "run_id" in names else "(all runs)"


def compare_mart(
    duck: duckdb.DuckDBPyConnection, spark: duckdb.DuckDBPyConnection, mart: str, label: str, max_shown: int
) -> int:
    """Print the differences of one mart per run_id; their count."""
    duck_names, duck_rows = mart_rows(duck, mart)
    spark_names, spark_rows = mart_rows(spark, mart)
    differences = 0
    missing = [c for c in duck_names if c not in spark_names]
    extra = [c for c in spark_names if c not in duck_names]
    if missing or extra:
        print(f"[{label}] {mart}: columns differ: only DuckDB {missing}, only Spark {extra}")
        differences += 1
    columns = [c for c in duck_names if c in spark_names]
    spark_index = [spark_names.index(c) for c in columns]
    duck_index = [duck_names.index(c) for c in columns]
    runs = sorted({run_of(duck_names, r) for r in duck_rows} | {run_of(spark_names, r) for r in spark_rows})
    if not runs:
        print(f"[{label}] {mart}: no row on either engine")
    for run_id in runs:
        d_rows = [r for r in duck_rows if run_of(duck_names, r) == run_id]
        s_rows = [r for r in spark_rows if run_of(spark_names, r) == run_id]
        run_differences = 0
        if len(d_rows) != len(s_rows):
            print(f"[{label}] {mart} run {run_id}: {len(d_rows)} rows on DuckDB, {len(s_rows)} on Spark")
            run_differences += 1
        for row_number, (d_row, s_row) in enumerate(zip(d_rows, s_rows, strict=False), start=1):
            for column, di, si in zip(columns, duck_index, spark_index, strict=True):
                if not same_value(d_row[di], s_row[si]):
                    run_differences += 1
                    if run_differences <= max_shown:
                        print(
                            f"[{label}] {mart} run {run_id} row {row_number} {column}:\n"
                            f"    duckdb: {d_row[di]!r}\n    spark:  {s_row[si]!r}"
                        )
        status = "same" if run_differences == 0 else f"{run_differences} difference(s)"
        print(
            f"[{label}] {mart} run {run_id}: {len(d_rows)} rows on DuckDB, {len(s_rows)} on Spark: {status}"
        )
        differences += run_differences
    return differences


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "sources", nargs="*", type=Path, help="run folders or folders of run folders (none: the sample seeds)"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path("/tmp/run_diagnosis_compare"),
        help="where the builds go, one sub-folder per source (default %(default)s)",
    )
    parser.add_argument(
        "--marts", default="findings", help="comma-separated marts to compare (default findings)"
    )
    parser.add_argument("--skip-build", action="store_true", help="compare the builds already in --workdir")
    parser.add_argument("--no-tests", action="store_true", help="build seeds and models only (faster)")
    parser.add_argument("--max-shown", type=int, default=20, help="differences printed per run and mart")
    args = parser.parse_args(argv)
    sources: list[Path | None] = list(args.sources) or [None]
    total = 0
    try:
        for index, source in enumerate(sources):
            label = source.name if source is not None else "sample"
            workdir = args.workdir / f"{index}-{label}"
            if args.skip_build:
                db_path, warehouse = workdir / "duckdb.duckdb", workdir / "spark-warehouse"
            else:
                db_path, warehouse = build_both(source, workdir, not args.no_tests)
            # the report's own reader: a DuckDB file, or a Spark warehouse folder read as parquet
            duck, spark = connect(db_path), connect(warehouse)
            for mart in [m.strip() for m in args.marts.split(",") if m.strip()]:
                total += compare_mart(duck, spark, mart, label, args.max_shown)
    except (CompareError, ReportError, duckdb.Error) as exc:
        print(f"compare_engines: {exc}", file=sys.stderr)
        return 2
    print("compare_engines: " + ("DuckDB and Spark agree" if total == 0 else f"{total} difference(s)"))
    return 0 if total == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
