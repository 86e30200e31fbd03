"""The canonical-files contract (run_diagnosis.run_files) agrees with the dbt macros that read the files.

The macros are read as text (no dbt build): `run_file_spec` names each file's suffix and
columns, `config_fields` the config keys staging reads (JSON path, type, required or not).
They are looked up by macro name in any file under macros/, so moving a macro keeps the check.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from run_diagnosis.run_files import (
    CONFIG_TYPES,
    CSV_COLUMNS,
    FILE_SUFFIXES,
    OPTIONAL_CSV_COLUMNS,
    REQUIRED_CONFIG_KEYS,
    run_file,
)
from support.paths import REPO

MACROS = REPO / "macros"
# macro config_fields type -> the JSON type validate_run expects
JSON_TYPES = {"double": "number", "integer": "integer", "text": "text"}
# config keys staging reads that no writer is asked for: the provenance the importers write
# themselves, and the fleet's baseline run (a run name, checked by the fleet models)
NOT_IN_CONTRACT = {"provenance.source_format", "baseline_run_id"}


def macro_body(name: str) -> str:
    """The text of one macro, from whichever file under macros/ defines it."""
    pattern = re.compile(r"{%-?\s*macro\s+" + name + r"\s*\(.*?{%-?\s*endmacro\s*-?%}", re.S)
    found = [m.group(0) for path in sorted(MACROS.rglob("*.sql")) for m in pattern.finditer(path.read_text())]
    assert len(found) == 1, f"macro {name}: expected one definition under {MACROS}, found {len(found)}"
    return found[0]


def file_specs() -> dict[str, tuple[str, list[str], list[str]]]:
    """run_file_spec's kinds: kind -> (suffix, columns, optional columns)."""
    spec = re.compile(
        r"'(\w+)':\s*{\s*'suffix':\s*'([^']+)',\s*'columns':\s*\[([^\]]*)\]"
        r"(?:,\s*'optional':\s*\[([^\]]*)\])?\s*}"
    )
    return {
        kind: (suffix, re.findall(r"'([^']+)'", columns), re.findall(r"'([^']+)'", optional))
        for kind, suffix, columns, optional in spec.findall(macro_body("run_file_spec"))
    }


def config_fields() -> dict[str, tuple[str, bool]]:
    """config_fields' keys: JSON path without `$.` -> (type, required)."""
    field = re.compile(r"\(\s*'\w+',\s*'\$\.([^']+)',\s*'(\w+)',\s*(true|false)\s*\)")
    found = field.findall(macro_body("config_fields"))
    return {path: (kind, required == "true") for path, kind, required in found}


def test_file_names_and_columns_match_run_file_spec() -> None:
    specs = file_specs()
    assert {kind: suffix for kind, (suffix, _, _) in specs.items()} == FILE_SUFFIXES
    assert {kind: columns for kind, (_, columns, _) in specs.items() if kind != "config"} == CSV_COLUMNS
    assert {kind: optional for kind, (_, _, optional) in specs.items() if optional} == OPTIONAL_CSV_COLUMNS
    assert specs["config"][1] == []


def test_config_keys_match_config_fields() -> None:
    fields = {path: field for path, field in config_fields().items() if path not in NOT_IN_CONTRACT}
    assert fields, "config_fields: no (name, '$.path', type, required) entries found"
    assert {path: JSON_TYPES[kind] for path, (kind, _) in fields.items()} == CONFIG_TYPES
    assert tuple(path for path, (_, required) in fields.items() if required) == REQUIRED_CONFIG_KEYS


def test_macro_lookup_fails_on_an_unknown_macro() -> None:
    with pytest.raises(AssertionError, match="expected one definition"):
        macro_body("no_such_macro")


def test_run_file_names_the_kind_with_its_prefix(tmp_path: Path) -> None:
    assert run_file(tmp_path, "train", "x_") == tmp_path / "x_train_log.csv"
    assert run_file(tmp_path, "config") == tmp_path / "run_config.json"
