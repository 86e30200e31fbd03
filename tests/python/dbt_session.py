"""Run the dbt project on fixture runs from pytest, fast, through the project's dbt harness.

`scripts/dbt_runner.py` parses the project once per process (a partial parse from a stable
folder) and every build reuses that manifest in-process, so a fixture build costs the models
and tests, not a parse. Each build writes its own DuckDB file (same file name, its own folder:
the manifest names the database after the file) and its own target folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from dbt_runner import build_run, failed_tests

REPO = Path(__file__).resolve().parents[2]
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
        return {t.name: t.failures or 0 for t in failed_tests(self.target_path) if t.category}


class DbtSession:
    """Numbered builds of fixture runs under one work folder."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.count = 0

    def build(self, run_dir: Path, name: str | None = None, *, structural_tests: bool = False) -> Diagnosis:
        self.count += 1
        out = self.work_dir / (name or f"build_{self.count}")
        excluded = ["path:seeds/anthropic_*", *([] if structural_tests else STRUCTURAL_TESTS)]
        result = build_run(run_dir, out / DB_NAME, out, exclude=" ".join(excluded), threads=4, check=False)
        return Diagnosis(
            out, result.db_path, result.target_path, result.output, result.ok, list(result.errors)
        )
