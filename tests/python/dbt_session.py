"""Run the dbt project on fixture runs from pytest, fast.

dbt parses the project once (in run-folder mode: RUN_DIAGNOSIS_RUN_DIR set) and every
build reuses that manifest in-process, so a fixture build costs the models and tests, not a parse.
Each build writes its own DuckDB file (same file name, its own folder: the
manifest names the database after the file) and its own target folder.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
from dbt.adapters.duckdb.connections import DuckDBConnectionManager
from dbt.cli.main import dbtRunner

REPO = Path(__file__).resolve().parents[2]
RUN_DIR_ENV_VAR = "RUN_DIAGNOSIS_RUN_DIR"  # the run folder reaches dbt only this way (never --vars)
DB_NAME = "run_diagnosis.duckdb"
# Structural tests (keys, accepted values, invariants) guard the SQL; the sample
# build and a few fixture builds run them. Most fixture builds only need the
# models and the anomaly tests, which is about three times faster.
STRUCTURAL_TESTS = [
    "resource_type:unit_test",
    *(
        f"test_name:{name}"
        for name in [
            "unique",
            "not_null",
            "accepted_values",
            "relationships",
            "expression_is_true",
            "accepted_range",
            "values_increasing",
            "no_gaps",
            "not_null_proportion",
            "unique_combination_of_columns",
        ]
    ),
]


@dataclass
class Diagnosis:
    """What one build produced: the DuckDB file, the target folder and dbt's printed output."""

    folder: Path
    db_path: Path
    target_path: Path
    output: str
    success: bool
    errors: list[str]

    def query(self, sql: str) -> pd.DataFrame:
        with duckdb.connect(str(self.db_path), read_only=True) as connection:
            return connection.sql(sql).df()

    def findings(self) -> pd.DataFrame:
        return self.query("select * from main.findings order by harm_rank")

    def table(self, name: str) -> pd.DataFrame:
        return self.query(f"select * from main.{name}")

    def failing_tests(self) -> dict[str, int]:
        """Anomaly tests (meta.category) that failed or warned, with their failure counts."""
        results = json.loads((self.target_path / "run_results.json").read_text())
        manifest = json.loads((self.target_path / "manifest.json").read_text())
        failing = {}
        for result in results["results"]:
            node = manifest["nodes"].get(result["unique_id"], {})
            if result["status"] in ("warn", "fail") and node.get("config", {}).get("meta", {}).get(
                "category"
            ):
                failing[node["name"]] = result["failures"]
        return failing


def release_database() -> None:
    """Close the DuckDB database dbt-duckdb keeps open in this process, so tests and
    the report can open the file (read-only) the way a separate process would."""
    with DuckDBConnectionManager._LOCK:
        if DuckDBConnectionManager._ENV is not None:
            DuckDBConnectionManager._ENV.close()
            DuckDBConnectionManager._ENV = None


class DbtSession:
    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.count = 0
        # a stable folder per pytest-xdist worker: the next test run in this checkout
        # re-parses only the files that changed (dbt's partial parse needs the same
        # profile, so the same DuckDB path, and the same run folder)
        parse_dir = REPO / ".dbt_state" / "pytest_parse" / os.environ.get("PYTEST_XDIST_WORKER", "main")
        parse_dir.mkdir(parents=True, exist_ok=True)
        os.environ["RUN_DIAGNOSIS_DB"] = str(parse_dir / DB_NAME)
        result = self._invoke(dbtRunner(), ["parse", *self._common(parse_dir, parse_dir)])[0]
        if not result.success:
            raise RuntimeError(f"dbt parse failed: {result.exception}")
        self.runner = dbtRunner(manifest=result.result)

    def _common(self, run_dir: Path, target: Path) -> list[str]:
        os.environ[RUN_DIR_ENV_VAR] = str(run_dir)
        return [
            "--project-dir",
            str(REPO),
            "--profiles-dir",
            str(REPO),
            "--target-path",
            str(target / "target"),
            "--log-path",
            str(target / "logs"),
        ]

    @staticmethod
    def _invoke(runner: dbtRunner, args: list[str]) -> tuple[object, str]:
        buffer = io.StringIO()
        cwd = Path.cwd()
        os.chdir(REPO)
        try:
            with contextlib.redirect_stdout(buffer):
                result = runner.invoke(args)
        finally:
            os.chdir(cwd)
        return result, buffer.getvalue()

    def build(self, run_dir: Path, name: str | None = None, *, structural_tests: bool = False) -> Diagnosis:
        self.count += 1
        out = self.work_dir / (name or f"build_{self.count}")
        out.mkdir(parents=True, exist_ok=True)
        db_path = out / DB_NAME
        os.environ["RUN_DIAGNOSIS_DB"] = str(db_path)
        excluded = ["path:seeds/anthropic_*", *([] if structural_tests else STRUCTURAL_TESTS)]
        args = ["build", *self._common(run_dir, out), "--exclude", *excluded, "--threads", "4"]
        result, output = self._invoke(self.runner, args)
        release_database()
        errors = [
            str(node.message)
            for node in getattr(result.result, "results", None) or []
            if str(node.status) in ("error", "fail")
        ]
        if result.exception is not None:
            errors.append(str(result.exception))
        return Diagnosis(out, db_path, out / "target", output, bool(result.success), errors)
