"""A build that failed never reads as healthy (issue 26).

A fixture run is built once (the marts exist), then a column is dropped from its train log and
the run is built again: staging fails and everything after it is skipped. dbt's exit code, the
on-run-end problem list, the report (run-diagnosis report's exit code too) and the fleet page must all say
the diagnosis is INCOMPLETE and name the model that did not build; none may say "nothing above
info" or read as a clean run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from run_diagnosis import report, report_fleet
from run_diagnosis.dbt_runner import BuildResult, build_run
from run_diagnosis.run_files import run_file
from support.dbt_session import DB_NAME
from support.run_builder import RunBuilder

BROKEN_MODEL = "stg_training__steps"


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[BuildResult, BuildResult]:
    """(the complete first build, the failed second build) of the same run and database."""
    work = tmp_path_factory.mktemp("incomplete")
    run_dir = RunBuilder().plant_slow_stretch(150, 160, 6.0).write(work / "run")
    first = build_run(run_dir, work / DB_NAME, work / "dbt", check=False)
    assert first.ok, "\n".join(first.errors) or first.output[-3000:]
    shutil.copytree(first.target_path, work / "first_target")  # the second build rewrites target/
    train_log = run_file(run_dir, "train", RunBuilder.prefix)
    pd.read_csv(train_log, dtype=str).drop(columns=["grad_norm"]).to_csv(train_log, index=False)
    second = build_run(run_dir, work / DB_NAME, work / "dbt", check=False)
    return first, second


def test_the_exit_code_says_the_build_failed(broken: tuple[BuildResult, BuildResult]) -> None:
    _, second = broken
    assert second.exit_code != 0 and second.n_error >= 1 and second.n_skip > 0


def test_the_problem_list_says_incomplete(broken: tuple[BuildResult, BuildResult]) -> None:
    first, second = broken
    printed = " ".join(second.output.split())
    assert "the build FAILED: the diagnosis is INCOMPLETE" in printed
    assert f"model {BROKEN_MODEL} did not build" in printed
    assert "anomaly test(s) did not run, so their problems are unknown" in printed
    assert "no anomaly test failed" not in printed and "nothing above info" not in printed
    assert "INCOMPLETE" not in " ".join(first.output.split())  # the complete build says nothing of it


def test_the_report_says_incomplete_and_exits_1(
    broken: tuple[BuildResult, BuildResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, second = broken
    args = ["--db", str(second.db_path), "--target-path", str(second.target_path), "--out", str(tmp_path)]
    assert report.main(args) == 1
    assert "INCOMPLETE" in capsys.readouterr().err
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    # said first, before the story: the marts are the first build's
    head = markdown.split("## What happened")[0]
    assert "## This diagnosis is INCOMPLETE" in head and BROKEN_MODEL in head
    assert "Do not read this run as healthy" in head
    assert "This diagnosis is INCOMPLETE" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_a_complete_build_reports_exit_0(broken: tuple[BuildResult, BuildResult], tmp_path: Path) -> None:
    first, _ = broken
    complete = tmp_path / "complete"
    first_target = first.target_path.parents[1] / "first_target"  # the first build's results
    args = ["--db", str(first.db_path), "--target-path", str(first_target), "--out", str(complete)]
    assert report.main(args) == 0
    assert "INCOMPLETE" not in (complete / "report.md").read_text(encoding="utf-8")


def test_the_fleet_page_says_incomplete(broken: tuple[BuildResult, BuildResult], tmp_path: Path) -> None:
    _, second = broken
    paths = report_fleet.write_fleet(second.db_path, tmp_path, target_path=second.target_path)
    page = paths["markdown"].read_text(encoding="utf-8")
    assert page.index("This diagnosis is INCOMPLETE") < page.index("| # | run |")
    assert BROKEN_MODEL in page
    args = ["--db", str(second.db_path), "--out", str(tmp_path), "--target-path", str(second.target_path)]
    assert report_fleet.main(args) == 1
