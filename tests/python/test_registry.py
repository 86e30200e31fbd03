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
import shutil
from pathlib import Path

import duckdb

from run_diagnosis import project as run_project
from run_diagnosis.dbt_runner import BuildResult, build_run
from support.paths import REPO

PROJECT_PARTS = ("dbt_project.yml", "profiles.yml", "selectors.yml")
PROJECT_FOLDERS = ("macros", "models", "seeds", "tests", "analyses")
REGISTRY_TEST = "findings_registry_agrees_with_checks"

PLANTED_REGISTRY_LINE = "    'int_findings__silent',\n"  # a registered detector no anomaly test reports
REGISTRY_OPENING = "  {{ return([\n"
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


def add_registry_line(project: Path, line: str) -> None:
    """One detector added to finding_detectors() (macros/findings_registry.sql)."""
    registry = project / "macros" / "findings_registry.sql"
    text = registry.read_text()
    assert REGISTRY_OPENING in text
    registry.write_text(text.replace(REGISTRY_OPENING, REGISTRY_OPENING + line, 1))


def plant(project: Path) -> None:
    add_registry_line(project, PLANTED_REGISTRY_LINE)
    silent = project / "models" / "checks" / "silent"
    silent.mkdir()
    (silent / "int_findings__silent.sql").write_text("select * from {{ ref('int_findings__nan_loss') }}\n")
    check = project / "models" / "checks" / "orphans"  # not int_findings__orphan's folder name
    check.mkdir()
    (check / "int_findings__orphan.sql").write_text(PLANTED_MODEL)
    (check / "_orphans__models.yml").write_text(PLANTED_YAML)


def copy_project(tmp_path: Path) -> Path:
    """The dbt project's parts in tmp_path/project, to plant things in."""
    project = tmp_path / "project"
    for folder in PROJECT_FOLDERS:
        skipped = shutil.ignore_patterns("python", "__pycache__")
        shutil.copytree(REPO / folder, project / folder, ignore=skipped)
    for part in PROJECT_PARTS:
        shutil.copy(REPO / part, project / part)
    return project


def dbt_build(project: Path, *selection: str, indirect_selection: str | None = None) -> BuildResult:
    """`dbt build --select selection` of the sample in the copied project, through the one harness."""
    work = project.parent / "dbt"
    return build_run(
        None,
        project.parent / "registry.duckdb",
        work,
        select=" ".join(selection),
        project_dir=project,
        check=False,
        indirect_selection=indirect_selection,
    )


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


NEW_CHECK_DETECTOR = """\
-- a planted detector: the finding shape of finding_columns()
select
    run_id,
    'loss_above_ceiling:run' as finding_id,
    'loss_above_ceiling' as category,
    'medium' as severity,
    'Training loss above the planted ceiling' as title,
    'the highest loss logged' as evidence,
    min(step) as first_step,
    max(step) as last_step,
    count(*) as steps_affected,
    max(loss) as observed_value,
    cast({{ threshold('planted_loss_ceiling') }} as {{ type_double() }}) as expected_value,
    cast({{ threshold('planted_loss_ceiling') }} as {{ type_double() }}) as threshold_value,
    'planted_loss_ceiling' as threshold_name,
    cast(null as {{ type_double() }}) as estimated_cost,
    cast(null as {{ dbt.type_string() }}) as cost_unit,
    cast(null as {{ dbt.type_string() }}) as cost_method,
    cast(0.5 as {{ type_double() }}) as impact_score,
    cast(null as {{ dbt.type_string() }}) as caused_by,
    'Lower the loss.' as recommendation
from {{ run_ref('int_train_steps_resolved') }}
where loss > {{ threshold('planted_loss_ceiling') }}
group by run_id
"""
NEW_CHECK_YAML = """\
version: 2
models:
  - name: int_findings__loss_above_ceiling
    description: "A planted check: training loss above planted_loss_ceiling."
    config:
      meta:
        thresholds:
          planted_loss_ceiling:
            value: 0
            reason: "A planted check's threshold: a logged loss above this is a finding."
    data_tests:
      - no_findings_above_info:
          name: loss_above_planted_ceiling
          config:
            meta:
              category: loss_above_ceiling
              description: "Loss above a ceiling"
              harm_weight: 1.0
              impact_kind: model
              default_severity: medium
              requires: [loss]
"""
NEW_CHECK_REGISTRY_LINE = "    'int_findings__loss_above_ceiling',\n"


def test_a_new_check_is_one_folder_and_a_registry_line(tmp_path: Path) -> None:
    """What docs/adding-a-check.md says, done on a copy: the registry test passes and
    the new check's anomaly test fires on the sample, with the folder's test config."""
    project = copy_project(tmp_path)
    check = project / "models" / "checks" / "loss_above_ceiling"
    check.mkdir()
    (check / "int_findings__loss_above_ceiling.sql").write_text(NEW_CHECK_DETECTOR)
    (check / "_loss_above_ceiling__models.yml").write_text(NEW_CHECK_YAML)
    add_registry_line(project, NEW_CHECK_REGISTRY_LINE)

    # the findings mart and what it reads (the new detector among them: its anomaly test reads the
    # final severity there), the new check's anomaly test and the registry test, no other test
    selection = (REGISTRY_TEST, "+findings", "loss_above_planted_ceiling")
    built = dbt_build(project, *selection, indirect_selection="empty")
    assert built.ok, built.output[-3000:]
    assert "Warning in test loss_above_planted_ceiling" in built.output, built.output[-3000:]
    with duckdb.connect(str(built.db_path), read_only=True) as connection:
        registry_rows = connection.sql(f"select * from main_dbt_test__audit.{REGISTRY_TEST}").fetchall()
        stored = "main_dbt_test__audit.loss_above_planted_ceiling"
        fired = connection.sql(f"select finding_id from {stored}").fetchall()
    assert registry_rows == []
    assert fired == [("loss_above_ceiling:run",)]
