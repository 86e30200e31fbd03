"""A temporary copy of the dbt project to plant things in (a check, a disagreement), and a
build of it through the project's one dbt harness."""

from __future__ import annotations

import shutil
from pathlib import Path

from run_diagnosis.dbt_runner import BuildResult, build_run
from support.paths import REPO

PROJECT_PARTS = ("dbt_project.yml", "profiles.yml", "selectors.yml")
PROJECT_FOLDERS = ("macros", "models", "seeds", "tests", "analyses")
REGISTRY = Path("macros") / "findings_registry.sql"
REGISTRY_OPENING = "  {{ return([\n"  # the start of finding_detectors()'s list


def copy_project(tmp_path: Path) -> Path:
    """The dbt project's parts in tmp_path/project, to plant things in."""
    project = tmp_path / "project"
    for folder in PROJECT_FOLDERS:
        skipped = shutil.ignore_patterns("python", "__pycache__")
        shutil.copytree(REPO / folder, project / folder, ignore=skipped)
    for part in PROJECT_PARTS:
        shutil.copy(REPO / part, project / part)
    return project


def add_registry_line(project: Path, line: str) -> None:
    """One detector added to finding_detectors() (macros/findings_registry.sql)."""
    registry = project / REGISTRY
    text = registry.read_text()
    assert REGISTRY_OPENING in text, f"{REGISTRY}: finding_detectors() opens otherwise"
    registry.write_text(text.replace(REGISTRY_OPENING, REGISTRY_OPENING + line, 1))


def dbt_build(
    project: Path, *selection: str, run_dir: Path | None = None, indirect_selection: str | None = None
) -> BuildResult:
    """`dbt build --select selection` of run_dir (None: the sample) in the copied project."""
    return build_run(
        run_dir,
        project.parent / "registry.duckdb",
        project.parent / "dbt",
        select=" ".join(selection),
        project_dir=project,
        check=False,
        indirect_selection=indirect_selection,
    )
