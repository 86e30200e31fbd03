"""Adding a check is one folder plus one line (docs/adding-a-check.md), shown on a copy of the
project: the worked example docs/check_template/loss_above_ceiling/ is dropped into
models/checks/ and its detector added to finding_detectors(); nothing else changes. A small
fixture run with the condition planted (a loss summed over tokens for a few steps) is built,
and the new category shows in the findings, check_coverage, check_catalog and the report; the
registry test passes (its metadata is complete, its threshold declared)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from run_diagnosis.report import write_report
from support.paths import REPO
from support.project_copy import add_registry_line, copy_project, dbt_build
from support.run_builder import RunBuilder

TEMPLATE = REPO / "docs" / "check_template" / "loss_above_ceiling"
CATEGORY = "loss_above_ceiling"
ANOMALY_TEST = "loss_above_mean_cross_entropy_ceiling"
REGISTRY_LINE = "    'int_findings__loss_above_ceiling',\n"  # the one line outside the folder
REGISTRY_TEST = "findings_registry_agrees_with_checks"
PLANTED_STEPS = (30, 31, 32)  # a loss summed over 1024 tokens on these steps
# what the report reads (report_data.MART_COLUMNS, check_catalog) and the two tests asked about
SELECTION = (
    "+findings", "+run_summary", "+step_plot_points", "+eval_metrics", "+shard_metrics", "+audit_summary",
    "+check_coverage", "check_catalog", ANOMALY_TEST, REGISTRY_TEST,
)  # fmt: skip


def test_a_new_check_is_its_folder_and_one_registry_line(tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    shutil.copytree(TEMPLATE, project / "models" / "checks" / CATEGORY)
    add_registry_line(project, REGISTRY_LINE)
    run = RunBuilder(total_steps=60, eval_interval=20)
    planted = run.train["step"].isin(PLANTED_STEPS)
    run.train.loc[planted, "loss"] = run.train.loc[planted, "loss"] * 1024
    run_dir = run.write(tmp_path / "runs" / "summed_loss")

    built = dbt_build(project, *SELECTION, run_dir=run_dir, indirect_selection="empty")
    assert built.ok, built.output[-3000:]
    assert f"Warning in test {ANOMALY_TEST}" in built.output, built.output[-3000:]
    with duckdb.connect(str(built.db_path), read_only=True) as con:

        def rows(columns: str, mart: str) -> list[tuple[object, ...]]:
            query = f"select {columns} from main.{mart} where category = ?"
            return con.execute(query, [CATEGORY]).fetchall()

        findings = rows("finding_id, first_step, last_step", "findings")
        coverage = rows("could_run", "check_coverage")
        catalog = rows("check_folder, test_name, impact_kind, requires", "check_catalog")
        registry = con.sql(f"select * from main_dbt_test__audit.{REGISTRY_TEST}").fetchall()
    assert findings == [(f"{CATEGORY}:run", min(PLANTED_STEPS), max(PLANTED_STEPS))]
    assert coverage == [(True,)]
    assert catalog == [(CATEGORY, ANOMALY_TEST, "model", "loss")]
    assert registry == []

    paths = write_report(built.db_path, project.parent / "dbt" / "target", tmp_path / "report", progress=None)
    report = paths["markdown"].read_text(encoding="utf-8")
    assert "Training loss above 100" in report  # the new finding's title
    assert "a loss above any mean cross-entropy" in report  # its plain name, from its folder's YAML
