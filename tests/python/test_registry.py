"""The registry test (tests/findings_registry_agrees_with_seed.sql) can fail.

A temporary copy of the project gets planted disagreements: a category in the seed with
no detector and no anomaly test; a detector model missing from finding_detectors(), in a
check folder not named after it, that reads a threshold no model declares and one of another
check's folder, declares one another model declares and one without a reason; an anomaly test
whose meta.category the seed does not list; and one on a known category under another name than
the seed's test_name.
Building the seed and the registry test must fail with exactly the rows those plants
explain: nothing else in the project disagrees (the sample build runs the same test and
passes).
"""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import duckdb

from run_diagnosis.dbt_runner import BuildResult, build_run
from support.paths import REPO

PROJECT_PARTS = ("dbt_project.yml", "profiles.yml", "selectors.yml")
PROJECT_FOLDERS = ("macros", "models", "seeds", "tests", "analyses")
REGISTRY_TEST = "findings_registry_agrees_with_seed"

PLANTED_SEED_ROW = "mystery_check,1.0,model,medium,mystery_check_fires,A planted check without a detector\n"
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
      - no_findings_above_info:
          name: nan_loss_again
          config:
            meta:
              category: nan_loss
"""


def plant(project: Path) -> None:
    with (project / "seeds" / "reference" / "finding_categories.csv").open("a") as seed:
        seed.write(PLANTED_SEED_ROW)
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

    built = dbt_build(project, "finding_categories", REGISTRY_TEST)
    assert not built.ok, built.output[-3000:]
    assert f"Failure in test {REGISTRY_TEST}" in built.output, built.output[-3000:]

    with duckdb.connect(str(built.db_path), read_only=True) as connection:
        stored = f"main_dbt_test__audit.{REGISTRY_TEST}"
        rows = connection.sql(f"select category, problem from {stored}").fetchall()
    assert sorted(rows, key=str) == sorted(
        [
            ("mystery_check", "category has no detector in finding_detectors()"),
            ("mystery_check", "seed test_name mystery_check_fires is no anomaly test of this category"),
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
                "anomaly test nan_loss_again is on int_findings__orphan,"
                " which the registry does not credit with this category",
            ),
            (
                "nan_loss",
                "anomaly test nan_loss_again is not the seed test_name of its category (loss_is_not_finite)",
            ),
            ("not_a_category", "anomaly test orphan_fires names a category the seed does not list"),
            (
                "not_a_category",
                "anomaly test orphan_fires is on int_findings__orphan,"
                " which the registry does not credit with this category",
            ),
        ],
        key=str,
    )


def test_the_in_depth_category_table_matches_the_seed() -> None:
    """The hand-written table of docs/findings-in-depth.md lists every seed category with its test
    name, once (docs/findings.md is generated: tests/python/test_findings_doc.py)."""
    with (REPO / "seeds" / "reference" / "finding_categories.csv").open() as handle:
        seed = {row["category"]: row["test_name"] for row in csv.DictReader(handle)}
    readme = (REPO / "docs" / "findings-in-depth.md").read_text()
    # a row may hold two categories of one detector: | `a` / `b` | `test_a` / `test_b` |
    listed = []
    row = re.compile(r"^\| (`[a-z_]+`(?: / `[a-z_]+`)*) \| (`[^|]+`) \|", re.MULTILINE)
    for categories, tests in row.findall(readme):
        listed += zip(re.findall(r"`([a-z_]+)`", categories), re.findall(r"`([a-z_]+)`", tests), strict=True)
    assert sorted(listed) == sorted(seed.items())


NEW_CHECK_SEED_ROW = "loss_above_ceiling,1.0,model,medium,loss_above_planted_ceiling,Loss above a ceiling\n"
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
"""
NEW_CHECK_REGISTRY_LINE = "    'int_findings__loss_above_ceiling': ['loss_above_ceiling'],\n"


def test_a_new_check_is_one_folder_one_seed_row_its_var_and_a_registry_line(tmp_path: Path) -> None:
    """What docs/adding-a-check.md says, done on a copy: the registry test passes and
    the new check's anomaly test fires on the sample, with the folder's test config."""
    project = copy_project(tmp_path)
    with (project / "seeds" / "reference" / "finding_categories.csv").open("a") as seed:
        seed.write(NEW_CHECK_SEED_ROW)
    check = project / "models" / "checks" / "loss_above_ceiling"
    check.mkdir()
    (check / "int_findings__loss_above_ceiling.sql").write_text(NEW_CHECK_DETECTOR)
    (check / "_loss_above_ceiling__models.yml").write_text(NEW_CHECK_YAML)
    registry = project / "macros" / "findings_registry.sql"
    opening = "  {{ return({\n"
    registry.write_text(registry.read_text().replace(opening, opening + NEW_CHECK_REGISTRY_LINE, 1))

    # the findings mart and what it reads (the new detector among them: its anomaly test reads the
    # final severity there), the new check's anomaly test and the registry test, no other test
    selection = ("finding_categories", REGISTRY_TEST, "+findings", "loss_above_planted_ceiling")
    built = dbt_build(project, *selection, indirect_selection="empty")
    assert built.ok, built.output[-3000:]
    assert "Warning in test loss_above_planted_ceiling" in built.output, built.output[-3000:]
    with duckdb.connect(str(built.db_path), read_only=True) as connection:
        registry_rows = connection.sql(f"select * from main_dbt_test__audit.{REGISTRY_TEST}").fetchall()
        stored = "main_dbt_test__audit.loss_above_planted_ceiling"
        fired = connection.sql(f"select finding_id from {stored}").fetchall()
    assert registry_rows == []
    assert fired == [("loss_above_ceiling:run",)]
