"""docs/findings.md and the README's category table are generated from the checks' metadata
(tools/findings_doc.py): they are current, and a change to the metadata shows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import findings_doc

REPO = Path(__file__).resolve().parents[2]


def test_the_generated_findings_doc_and_readme_table_are_current() -> None:
    assert (REPO / "docs" / "findings.md").read_text(encoding="utf-8") == findings_doc.findings_doc(REPO), (
        "docs/findings.md is stale: run python tools/findings_doc.py"
    )
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert findings_doc.with_readme_table(readme, REPO) == readme, (
        "the README's category table is stale: run python tools/findings_doc.py"
    )


def test_every_category_and_check_folder_is_in_the_doc() -> None:
    doc = findings_doc.findings_doc(REPO)
    categories = findings_doc.read_categories(REPO)
    assert categories
    for category in categories:
        assert f"| `{category.name}` |" in doc and f"`{category.test_name}`" in doc
    folders = [p.name for p in (REPO / "models" / "checks").iterdir() if p.is_dir()]
    assert sorted(f"### {name}" for name in folders) == sorted(
        line for line in doc.splitlines() if line.startswith("### ")
    )


def copy_metadata(tmp_path: Path) -> Path:
    """The files the generator reads and writes, copied."""
    repo = tmp_path / "repo"
    for name in ("models", "docs"):
        shutil.copytree(REPO / name, repo / name)
    for name in ("dbt_project.yml", "README.md"):
        shutil.copy2(REPO / name, repo / name)
    return repo


def test_a_changed_description_or_threshold_makes_them_stale_until_regenerated(tmp_path: Path) -> None:
    repo = copy_metadata(tmp_path)
    assert findings_doc.main(["--repo", str(repo), "--check"]) == 0
    check = repo / "models" / "checks" / "step_sequence" / "_step_sequence__models.yml"
    check.write_text(
        check.read_text(encoding="utf-8").replace(
            "Steps repeat, go backwards or skip", "Steps repeat, go backwards | skip"
        ),
        encoding="utf-8",
    )
    declared = repo / "models" / "intermediate" / "_intermediate__models.yml"  # int_gradients_checked's
    text = declared.read_text(encoding="utf-8")
    old, new = ("clip_tolerance:\n            value: 0.01\n", "clip_tolerance:\n            value: 0.02\n")
    assert old in text
    declared.write_text(text.replace(old, new), encoding="utf-8")
    assert findings_doc.main(["--repo", str(repo), "--check"]) == 1
    assert findings_doc.main(["--repo", str(repo)]) == 0
    assert findings_doc.main(["--repo", str(repo), "--check"]) == 0
    doc = (repo / "docs" / "findings.md").read_text(encoding="utf-8")
    readme = (repo / "README.md").read_text(encoding="utf-8")
    assert "| `step_sequence` | Steps repeat, go backwards \\| skip |" in readme
    assert "go backwards \\| skip |" in doc and "`clip_tolerance` = `0.02`" in doc


def test_a_category_without_its_metadata_is_an_error(tmp_path: Path) -> None:
    repo = copy_metadata(tmp_path)
    check = repo / "models" / "checks" / "step_sequence" / "_step_sequence__models.yml"
    text = check.read_text(encoding="utf-8")
    line = "              impact_kind: logging\n"
    assert line in text
    check.write_text(text.replace(line, "", 1), encoding="utf-8")
    with pytest.raises(ValueError, match="category step_sequence lacks meta impact_kind"):
        findings_doc.findings_doc(repo)
    assert findings_doc.main(["--repo", str(repo), "--check"]) == 2
