"""No check reads another check's folder (models/checks/checks.md).

A check folder (models/checks/<check>/) holds its detector and the measurements only it is
built on; a measurement two checks use lives in models/intermediate/, and a cause that
depends on a symptom reads the shared measurement both decide from, not the symptom's
findings. The test reads every SQL and YAML file of the check folders and fails on a
`ref`/`run_ref` (SQL, or a test's or unit test's `ref(...)` in YAML) to a model defined in
another check's folder; the checking function is shown to fail on a planted pair.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from support.paths import REPO

CHECKS = REPO / "models" / "checks"
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
