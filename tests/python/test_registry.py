"""The registry test (tests/findings_registry_agrees_with_checks.sql) can fail.

A temporary copy of the project gets planted disagreements: a registered detector no anomaly test
reports;
a detector model missing from finding_detectors(), in a check folder not named after it, that
reads a threshold no model declares and one of another check's folder, declares one another
model declares and one without a reason; an anomaly test whose category metadata is incomplete
and names values outside their vocabularies; and one that declares a category another check's
test already declares.
Building the registry test must fail with exactly the rows those plants explain: nothing else
in the project disagrees (the sample build runs the same test and passes).
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from run_diagnosis import project as run_project
from support.paths import REPO
from support.project_copy import add_registry_line, copy_project, dbt_build

REGISTRY_TEST = "findings_registry_agrees_with_checks"

PLANTED_REGISTRY_LINE = "    'int_findings__silent',\n"  # a registered detector no anomaly test reports
PLANTED_MODEL = (
    "select *, {{ threshold('no_such_threshold') }} as planted,"
    " {{ threshold('overflow_medium_share') }} as nan_share from {{ ref('int_findings__nan_loss') }}\n"
)
PLANTED_YAML = """\
version: 2
models:
  - name: int_findings__orphan
    description: "A planted detector the registry does not list."
    config:
      meta:
        thresholds:
          spike_passes: {value: 3, reason: "declared again: int_loss_baselines_computed owns it"}
          planted_without_reason: {value: 1}
    data_tests:
      - no_findings_above_info:
          name: orphan_fires
          config:
            meta:
              category: not_a_category
              description: "A planted category with incomplete metadata"
              harm_weight: heavy
              impact_kind: harm
              report_group: sideways
              requires: [loss, gpu_count]
              cost_estimators: [val_trend, guesswork]
      - no_findings_above_info:
          name: nan_loss_again
          config:
            meta:
              category: nan_loss
              description: "A planted second test of nan_loss"
              harm_weight: 1.0
              impact_kind: model
              default_severity: critical
"""


def plant(project: Path) -> None:
    add_registry_line(project, PLANTED_REGISTRY_LINE)
    silent = project / "models" / "checks" / "silent"
    silent.mkdir()
    (silent / "int_findings__silent.sql").write_text("select * from {{ ref('int_findings__nan_loss') }}\n")
    check = project / "models" / "checks" / "orphans"  # not int_findings__orphan's folder name
    check.mkdir()
    (check / "int_findings__orphan.sql").write_text(PLANTED_MODEL)
    (check / "_orphans__models.yml").write_text(PLANTED_YAML)


def test_registry_test_fails_on_planted_disagreements(tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    plant(project)

    built = dbt_build(project, REGISTRY_TEST)
    assert not built.ok, built.output[-3000:]
    assert f"Failure in test {REGISTRY_TEST}" in built.output, built.output[-3000:]

    with duckdb.connect(str(built.db_path), read_only=True) as connection:
        stored = f"main_dbt_test__audit.{REGISTRY_TEST}"
        rows = connection.sql(f"select category, problem from {stored}").fetchall()
    assert sorted(rows, key=str) == sorted(
        [
            (
                None,
                "finding_detectors() lists int_findings__silent,"
                " on which no anomaly test declares a category (meta.category)",
            ),
            (None, "model int_findings__orphan is not in finding_detectors()"),
            (
                None,
                "model int_findings__orphan is not in its check folder"
                " (models/checks/<check>/int_findings__<check>.sql)",
            ),
            (
                None,
                "int_findings__orphan reads threshold no_such_threshold, which no model declares"
                " (config.meta.thresholds)",
            ),
            (
                None,
                "threshold spike_passes is declared by 2 models (int_findings__orphan,"
                " int_loss_baselines_computed): declare it once",
            ),
            (
                None,
                "model int_findings__orphan declares threshold planted_without_reason"
                " without a value and a reason",
            ),
            (
                None,
                "check orphans reads threshold overflow_medium_share of check nan_loss"
                " (declare a shared threshold on a shared model)",
            ),
            (
                "nan_loss",
                "anomaly test nan_loss_again is on int_findings__orphan, which is not in finding_detectors()",
            ),
            (
                "nan_loss",
                "category nan_loss is declared by 2 anomaly tests (loss_is_not_finite, nan_loss_again):"
                " one test a category",
            ),
            (
                "not_a_category",
                "anomaly test orphan_fires is on int_findings__orphan, which is not in finding_detectors()",
            ),
            ("not_a_category", "anomaly test orphan_fires lacks meta.default_severity"),
            ("not_a_category", "anomaly test orphan_fires has a meta.harm_weight that is no number"),
            (
                "not_a_category",
                "anomaly test orphan_fires has meta.impact_kind harm (one of: model compute config logging)",
            ),
            (
                "not_a_category",
                "anomaly test orphan_fires has meta.report_group sideways"
                " (one of: glitch compute instability)",
            ),
            (
                "not_a_category",
                "anomaly test orphan_fires has meta.requires gpu_count"
                " (a name of check_requirements() in macros/check_requirements.sql)",
            ),
            (
                "not_a_category",
                "anomaly test orphan_fires has meta.cost_estimators guesswork"
                " (a name of cost_estimator_names() in macros/check_catalog.sql)",
            ),
        ],
        key=str,
    )


def test_the_in_depth_category_table_matches_the_check_folders() -> None:
    """The hand-written table of docs/findings-in-depth.md lists every category the check folders
    declare with its test name, once (docs/findings.md is generated: tests/python/test_findings_doc.py)."""
    declared = {name: category.test_name for name, category in run_project.categories(REPO).items()}
    readme = (REPO / "docs" / "findings-in-depth.md").read_text()
    # a row may hold two categories of one detector: | `a` / `b` | `test_a` / `test_b` |
    listed = []
    row = re.compile(r"^\| (`[a-z_]+`(?: / `[a-z_]+`)*) \| (`[^|]+`) \|", re.MULTILINE)
    for categories, tests in row.findall(readme):
        listed += zip(re.findall(r"`([a-z_]+)`", categories), re.findall(r"`([a-z_]+)`", tests), strict=True)
    assert sorted(listed) == sorted(declared.items())
