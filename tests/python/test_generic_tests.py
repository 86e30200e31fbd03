"""The generic tests in tests/generic fire on planted violations and pass on clean counterparts.

One temporary dbt project (fixture seeds with planted violations and clean rows, two models
listing violations, one properties file naming every test) is built once with `dbt build`
against a temporary DuckDB file. The checks read run_results.json (status and failures of each
test node) and the failing rows the tests stored in that DuckDB file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from run_diagnosis.dbt_runner import build_run, read_run_results
from support.paths import REPO

MACRO_FILES = ("portability.sql", "rolling_stats.sql")

DBT_PROJECT_YML = """\
name: run_diagnosis
version: "1.0"
config-version: 2
profile: generic_tests_fixture
seed-paths: [seeds]
model-paths: [models]
macro-paths: [macros]
test-paths: [tests]
flags:
  send_anonymous_usage_stats: false
seeds:
  run_diagnosis:
    step_sequences:
      +column_types: {run_id: varchar, step: integer, tokens_seen: integer, tokens_clean: integer}
    checkpoint_steps:
      +column_types: {run_id: varchar, checkpoint_step: integer}
    metric_values:
      +column_types: {row_id: integer, learning_rate: double, loss: double}
    finding_rows:
      +column_types: {harm_rank: integer}
models:
  run_diagnosis:
    +materialized: table
data_tests:
  run_diagnosis:
    +severity: warn
    +store_failures: true
"""

PROFILES_YML = """\
generic_tests_fixture:
  target: duckdb
  outputs:
    duckdb:
      type: duckdb
      path: "{path}"
      threads: 4
"""

MODELS = {
    # a detector's rows (a check's int_findings__<check>): finding a:1 is high in the findings
    # mart, a:2 was lowered to info there: no_findings_above_info must report a:1 only
    "int_findings__planted": "select run_id, finding_id, detector_severity as severity "
    "from {{ ref('finding_rows') }} where finding_id like 'a:%'",
    # a detector whose only finding the findings mart lowered to info: it must pass
    "int_findings__clean": "select run_id, finding_id, detector_severity as severity "
    "from {{ ref('finding_rows') }} where finding_id = 'a:2'",
    # the findings mart the test reads the final severity and rank from
    "findings": "select * from {{ ref('finding_rows') }}",
}

PROPERTIES_YML = """\
models:
  - name: int_findings__planted
    data_tests:
      - no_findings_above_info: {name: no_findings__planted}
  - name: int_findings__clean
    data_tests:
      - no_findings_above_info: {name: no_findings__clean}

seeds:
  - name: step_sequences
    data_tests:
      - unique_combination_of_columns:
          name: unique_combination__planted
          arguments: {combination_of_columns: [run_id, step]}
      - unique_combination_of_columns:
          name: unique_combination__clean
          arguments: {combination_of_columns: [run_id, step, tokens_clean]}
    columns:
      - name: tokens_seen
        data_tests:
          - values_increasing:
              name: values_increasing__planted
              arguments: {sort_column: step, group_by: run_id, strictly: false}
          - values_increasing:
              name: values_increasing__strict
              arguments: {sort_column: step, group_by: [run_id]}
      - name: tokens_clean
        data_tests:
          - values_increasing:
              name: values_increasing__clean
              arguments: {sort_column: step, group_by: run_id}
          - values_increasing:
              name: values_increasing__ungrouped
              arguments: {sort_column: step}
      - name: step
        data_tests:
          - no_gaps:
              name: no_gaps__planted
              arguments: {group_by: run_id}
          - no_gaps:
              name: no_gaps__clean
              arguments: {group_by: run_id}
              config: {where: "run_id = 'b'"}

  - name: checkpoint_steps
    columns:
      - name: checkpoint_step
        data_tests:
          - no_gaps:
              name: no_gaps__interval_planted
              arguments: {interval: 10, group_by: run_id}
          - no_gaps:
              name: no_gaps__interval_clean
              arguments: {interval: 10, group_by: run_id}
              config: {where: "run_id = 'b'"}

  - name: metric_values
    data_tests:
      - expression_is_true:
          name: expression_is_true__planted
          arguments: {expression: "loss > 0"}
      - expression_is_true:
          name: expression_is_true__clean
          arguments: {expression: "loss > 0", where: "row_id in (1, 2, 5, 6)"}
    columns:
      - name: loss
        data_tests:
          - expression_is_true:
              name: expression_is_true__column
              arguments: {expression: ">= 0"}
      - name: learning_rate
        data_tests:
          - accepted_range:
              name: accepted_range__planted
              arguments: {min_value: 0, max_value: 0.1}
          - accepted_range:
              name: accepted_range__exclusive
              arguments: {min_value: 0, max_value: 0.1, inclusive: false}
          - accepted_range:
              name: accepted_range__min_only
              arguments: {min_value: 0}
          - accepted_range:
              name: accepted_range__clean
              arguments: {min_value: 0, max_value: 0.1, where: "row_id <= 3"}
"""

# test name -> (status, failures)
EXPECTED_RESULTS = {
    "no_findings__planted": ("warn", 1),  # a:1 (high); a:2 is info in the mart
    "no_findings__clean": ("pass", 0),
    "unique_combination__planted": ("warn", 1),  # (b, 3) twice
    "unique_combination__clean": ("pass", 0),
    "values_increasing__planted": ("warn", 2),  # a: 250 after 300, 450 after 500
    "values_increasing__strict": ("warn", 3),  # ... and b: 30 repeated at step 3
    "values_increasing__clean": ("pass", 0),
    "values_increasing__ungrouped": ("warn", 4),  # runs interleaved: b falls below a at steps 2-5
    "no_gaps__planted": ("warn", 1),  # a: 5..7
    "no_gaps__clean": ("pass", 0),
    "no_gaps__interval_planted": ("warn", 1),  # a: 30..40
    "no_gaps__interval_clean": ("pass", 0),
    "expression_is_true__planted": ("warn", 2),  # loss 0.0 and -1.0; NULL passes
    "expression_is_true__clean": ("pass", 0),
    "expression_is_true__column": ("warn", 1),  # loss -1.0
    "accepted_range__planted": ("warn", 2),  # -0.0001 and 0.5
    "accepted_range__exclusive": ("warn", 3),  # ... and 0.0 on the bound
    "accepted_range__min_only": ("warn", 1),  # -0.0001
    "accepted_range__clean": ("pass", 0),
}


# the fixture seeds, as the CSV files dbt reads (an empty field is null)
SEEDS: dict[str, str] = {
    "step_sequences": """\
run_id,step,tokens_seen,tokens_clean
a,1,100,100
a,2,200,200
a,3,300,300
a,4,250,400
a,8,400,500
a,9,500,600
a,10,450,700
a,11,,800
a,12,600,900
b,1,10,10
b,2,20,20
b,3,30,30
b,3,30,35
b,4,40,40
b,5,50,50
b,6,60,60
b,,70,70
""",
    "checkpoint_steps": """\
run_id,checkpoint_step
a,0
a,10
a,20
a,50
a,60
b,0
b,10
b,20
b,30
""",
    "finding_rows": """\
run_id,finding_id,severity,detector_severity,harm_rank
r,a:1,high,critical,1
r,a:2,info,medium,3
r,b:1,low,low,2
""",
    "metric_values": """\
row_id,learning_rate,loss
1,0.0,2.5
2,0.0003,2.4
3,0.001,0.0
4,-0.0001,-1.0
5,0.5,2.3
6,,
""",
}


def _write_project(root: Path, database: Path) -> None:
    (root / "macros").mkdir(parents=True)
    for name in MACRO_FILES:
        shutil.copy(REPO / "macros" / name, root / "macros" / name)
    shutil.copytree(REPO / "tests" / "generic", root / "tests" / "generic")
    (root / "dbt_project.yml").write_text(DBT_PROJECT_YML)
    (root / "profiles.yml").write_text(PROFILES_YML.format(path=database.as_posix()))
    (root / "seeds").mkdir()
    for seed, text in SEEDS.items():
        (root / "seeds" / f"{seed}.csv").write_text(text)
    (root / "models").mkdir()
    for model, sql in MODELS.items():
        (root / "models" / f"{model}.sql").write_text(sql + "\n")
    (root / "models" / "_fixtures.yml").write_text(PROPERTIES_YML)


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Build the fixture project once; return test results by name and the DuckDB path."""
    root = tmp_path_factory.mktemp("generic_tests_project")
    database = root / "fixture.duckdb"
    _write_project(root, database)
    built = build_run(None, database, root, project_dir=root, check=False)
    assert built.ok, built.output[-6000:] + "\n".join(built.errors)
    tests = {
        result["unique_id"].split(".")[2]: result
        for result in read_run_results(built.target_path)
        if result["unique_id"].startswith("test.")
    }
    return {"tests": tests, "database": database}


def _stored_failures(build: dict, test_name: str, columns: str) -> list[tuple]:
    relation = build["tests"][test_name]["relation_name"]
    with duckdb.connect(str(build["database"]), read_only=True) as connection:
        return connection.sql(f"select {columns} from {relation} order by all").fetchall()


def test_every_fixture_test_ran(build: dict) -> None:
    assert set(build["tests"]) == set(EXPECTED_RESULTS)


@pytest.mark.parametrize(("test_name", "expected"), sorted(EXPECTED_RESULTS.items()))
def test_status_and_failures(build: dict, test_name: str, expected: tuple[str, int]) -> None:
    result = build["tests"][test_name]
    assert (result["status"], result["failures"]) == expected, result.get("message")


def test_values_increasing_reports_the_backwards_rows(build: dict) -> None:
    rows = _stored_failures(build, "values_increasing__planted", "run_id, step, tokens_seen, previous_value")
    assert rows == [("a", 4, 250, 300), ("a", 10, 450, 500)]


def test_no_gaps_reports_each_gap(build: dict) -> None:
    assert _stored_failures(build, "no_gaps__planted", "run_id, gap_start, gap_end, missing_count") == [
        ("a", 5, 7, 3)
    ]
    assert _stored_failures(
        build, "no_gaps__interval_planted", "run_id, gap_start, gap_end, missing_count"
    ) == [("a", 30, 40, 2)]


def test_no_findings_above_info_stores_the_final_severity_and_rank(build: dict) -> None:
    """The stored failure is the findings mart's row: final severity and harm_rank, the
    detector's own severity beside it."""
    columns = "finding_id, severity, detector_severity, harm_rank"
    rows = _stored_failures(build, "no_findings__planted", columns)
    assert rows == [("a:1", "high", "critical", 1)]


def test_unique_combination_reports_the_count(build: dict) -> None:
    rows = _stored_failures(build, "unique_combination__planted", "run_id, step, occurrences")
    assert rows == [("b", 3, 2)]
