"""No check reads another check's folder (models/checks/checks.md), and every threshold is declared once.

A check folder (models/checks/<check>/) holds its detector and the measurements only it is
built on; a measurement two checks use lives in models/intermediate/, and a cause that
depends on a symptom reads the shared measurement both decide from, not the symptom's
findings. The test reads every SQL and YAML file of the check folders and fails on a
`ref`/`run_ref` (SQL, or a test's or unit test's `ref(...)` in YAML) to a model defined in
another check's folder; the checking function is shown to fail on a planted pair.

Thresholds (macros/threshold.sql): every `threshold('<name>')` the SQL and YAML of models/, macros/
and tests/ read is declared (run_diagnosis.project.thresholds(), the one Python reader), and every
declared one is read; the reader refuses a threshold declared twice or without a reason.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from run_diagnosis.project import thresholds
from support.paths import REPO

CHECKS = REPO / "models" / "checks"
THRESHOLD_READ = re.compile(r"""\bthreshold\(\s*'([A-Za-z0-9_]+)'\s*\)""")
REF = re.compile(r"""\b(?:run_)?ref\(\s*['"]([A-Za-z0-9_]+)['"]\s*\)""")


def check_folder_files() -> dict[str, dict[str, str]]:
    """check -> {file name: text} for the SQL and YAML files of every check folder."""
    return {
        folder.name: {
            path.name: path.read_text(encoding="utf-8")
            for path in sorted(folder.iterdir())
            if path.suffix in (".sql", ".yml")
        }
        for folder in sorted(CHECKS.iterdir())
        if folder.is_dir()
    }


def cross_check_reads(folders: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Every read of a model that another check folder defines, as 'check/file reads model (other/)'."""
    owner = {
        name.removesuffix(".sql"): check
        for check, files in folders.items()
        for name in files
        if name.endswith(".sql")
    }
    return [
        f"{check}/{name} reads {model} ({owner[model]}/)"
        for check, files in folders.items()
        for name, text in files.items()
        for model in sorted(set(REF.findall(text)))
        if owner.get(model, check) != check
    ]


def test_no_check_reads_another_checks_folder() -> None:
    folders = check_folder_files()
    assert len(folders) >= 20 and all(
        f"int_findings__{check}.sql" in files for check, files in folders.items()
    )
    assert cross_check_reads(folders) == []


def test_a_read_across_check_folders_is_caught() -> None:
    folders = {
        "alpha": {
            "int_findings__alpha.sql": "select * from {{ run_ref('int_alpha_measured') }}",
            "int_alpha_measured.sql": "select * from {{ run_ref('int_train_steps_resolved') }}",
        },
        "beta": {
            "int_findings__beta.sql": "select * from {{ run_ref('int_alpha_measured') }}, "
            "{{ ref('int_findings__alpha') }}",
            "_beta__models.yml": "unit_tests:\n  - given:\n      - input: ref('int_alpha_measured')\n",
        },
    }
    assert cross_check_reads(folders) == [
        "beta/int_findings__beta.sql reads int_alpha_measured (alpha/)",
        "beta/int_findings__beta.sql reads int_findings__alpha (alpha/)",
        "beta/_beta__models.yml reads int_alpha_measured (alpha/)",
    ]
    # reads within a folder and of shared models are fine
    del folders["beta"]
    assert cross_check_reads(folders) == []


def test_every_threshold_read_is_declared_and_every_declared_one_is_read() -> None:
    declared = thresholds(REPO)
    sources = [
        p
        for folder in ("models", "macros", "tests")
        for p in (REPO / folder).rglob("*")
        if p.suffix in (".sql", ".yml")
    ]
    read = {name for path in sources for name in THRESHOLD_READ.findall(path.read_text(encoding="utf-8"))}
    assert len(declared) > 100 and all(t.reason.strip() for t in declared.values())
    assert sorted(read - set(declared)) == []
    assert sorted(set(declared) - read) == []


def test_the_reader_refuses_a_threshold_declared_twice_or_without_a_reason(tmp_path: Path) -> None:
    shutil.copytree(REPO / "models", tmp_path / "models")
    extra = tmp_path / "models" / "_planted.yml"
    planted = "version: 2\nmodels:\n  - name: planted\n    config: {meta: {thresholds: {%s}}}\n"
    extra.write_text(planted % "spike_window: {value: 9, reason: again}")
    with pytest.raises(ValueError, match="threshold spike_window is also declared in"):
        thresholds(tmp_path)
    extra.write_text(planted % "lonely: {value: 9}")
    with pytest.raises(
        ValueError, match=re.escape("_planted.yml (model planted): threshold lonely needs a value")
    ):
        thresholds(tmp_path)
