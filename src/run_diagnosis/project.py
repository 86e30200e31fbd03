"""Where the dbt project is: the folder holding run_diagnosis's dbt_project.yml and profiles.yml.

The diagnosis itself is the dbt project (models/, macros/, tests/, seeds/); this package runs it.
The package is not shipped with the project inside it (docs/packaging.md), so the folder is:

1. RUN_DIAGNOSIS_PROJECT_DIR, when set (a checkout anywhere, the package installed from
   elsewhere or non-editable);
2. else the checkout this package is installed from, editable (`src/run_diagnosis/` -> two
   folders up), which is how scripts/bootstrap.sh installs it.

A folder that is not the run_diagnosis dbt project (no dbt_project.yml, a dbt project of
another name, no profiles.yml) is `ProjectNotFound`, naming the folder and what to set.

`thresholds()` reads the project's thresholds where they are declared: `config.meta.thresholds`
(`{name: {value, reason}}`) of the models in `models/**/*.yml`, the one place Python reads them
(the SQL reads them with the `threshold()` macro, models/checks/checks.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PROJECT_DIR_ENV_VAR = "RUN_DIAGNOSIS_PROJECT_DIR"
PROJECT_NAME = "run_diagnosis"  # `name:` in dbt_project.yml
PROJECT_FILE = "dbt_project.yml"
PROFILES_FILE = "profiles.yml"  # the project's own profile (dbt runs with --profiles-dir <project>)
CHECKOUT = Path(__file__).resolve().parents[2]  # src/run_diagnosis/ -> the checkout, when it is one


class ProjectNotFound(Exception):
    """The run_diagnosis dbt project is not where this package looked: the message says where it
    looked and what to set."""


def project_problem(folder: Path) -> str | None:
    """Why `folder` is not the run_diagnosis dbt project (None: it is)."""
    project_file = folder / PROJECT_FILE
    if not project_file.is_file():
        return f"{folder} holds no {PROJECT_FILE}"
    try:
        name = (yaml.safe_load(project_file.read_text(encoding="utf-8")) or {}).get("name")
    except (OSError, UnicodeDecodeError, yaml.YAMLError, AttributeError) as error:
        return f"{project_file} cannot be read: {error}"
    if name != PROJECT_NAME:
        return f"{project_file} is the dbt project {name!r}, not {PROJECT_NAME!r}"
    if not (folder / PROFILES_FILE).is_file():
        return f"{folder} holds no {PROFILES_FILE} (the project's own DuckDB and Spark profile)"
    return None


def project_dir() -> Path:
    """The run_diagnosis dbt project's folder (raises ProjectNotFound)."""
    named = os.environ.get(PROJECT_DIR_ENV_VAR)
    if named:
        folder = Path(named).expanduser().resolve()
        problem = project_problem(folder)
        if problem is not None:
            raise ProjectNotFound(f"{PROJECT_DIR_ENV_VAR}={named}: {problem}")
        return folder
    problem = project_problem(CHECKOUT)
    if problem is None:
        return CHECKOUT
    raise ProjectNotFound(
        f"the run_diagnosis dbt project was not found: this package is installed in "
        f"{Path(__file__).resolve().parent}, which is not inside a checkout ({problem}). "
        f"Set {PROJECT_DIR_ENV_VAR} to the folder of a run_diagnosis checkout (the one holding "
        f"{PROJECT_FILE}), or install the package editable from one (pip install -e CHECKOUT)."
    )


@dataclass(frozen=True)
class Threshold:
    """One declared threshold: its value, why, and the model (and YAML file) that owns it."""

    name: str
    value: Any
    reason: str
    model: str
    path: Path


def thresholds(folder: Path | None = None) -> dict[str, Threshold]:
    """Every threshold the project declares, by name (`folder`: the project, else project_dir()).

    A name declared by two models, or declared without a value and a reason, is a ValueError
    naming the YAML files (tests/findings_registry_agrees_with_checks.sql checks the same in dbt)."""
    root = folder if folder is not None else project_dir()
    found: dict[str, Threshold] = {}
    for path in sorted((root / "models").rglob("*.yml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for model in document.get("models") or []:
            declared = ((model.get("config") or {}).get("meta") or {}).get("thresholds") or {}
            for name, spec in declared.items():
                where = f"{path.relative_to(root)} (model {model.get('name')})"
                reason = str(spec.get("reason") or "").strip() if isinstance(spec, dict) else ""
                if not reason or "value" not in spec:
                    raise ValueError(f"{where}: threshold {name} needs a value and a reason")
                if name in found:
                    raise ValueError(f"{where}: threshold {name} is also declared in {found[name].path}")
                found[name] = Threshold(name, spec["value"], str(spec["reason"]), str(model["name"]), path)
    return found


ANOMALY_TEST = "no_findings_above_info"  # the data test whose config.meta declares a category
CATEGORY_REQUIRED = ("description", "harm_weight", "impact_kind", "default_severity")


@dataclass(frozen=True)
class Category:
    """One finding category, as its check folder declares it on its anomaly test (config.meta):
    the Python twin of the check_catalog mart (macros/check_catalog.sql)."""

    name: str
    check_folder: str
    detector: str
    test_name: str
    description: str
    harm_weight: float
    impact_kind: str
    default_severity: str
    report_group: str | None
    plain_name: str | None
    confirm: str | None
    zoom_metric: str | None
    requires: tuple[str, ...]
    path: Path


def categories(folder: Path | None = None) -> dict[str, Category]:
    """Every finding category the check folders declare, by name, in the folders' order
    (`folder`: the project, else project_dir()). A category declared twice, or without its
    description, harm_weight, impact_kind and default_severity, is a ValueError naming the YAML
    file (tests/findings_registry_agrees_with_checks.sql checks the same in dbt)."""
    root = folder if folder is not None else project_dir()
    found: dict[str, Category] = {}
    for path in sorted((root / "models" / "checks").glob("*/_*.yml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for model in document.get("models") or []:
            for test in model.get("data_tests") or []:
                spec = (test.get(ANOMALY_TEST) if isinstance(test, dict) else None) or {}
                meta = (spec.get("config") or {}).get("meta") or {}
                if not meta.get("category"):
                    continue
                name = str(meta["category"])
                where = f"{path.relative_to(root)} (test {spec.get('name')})"
                missing = [key for key in CATEGORY_REQUIRED if meta.get(key) in (None, "")]
                if missing:
                    raise ValueError(f"{where}: category {name} lacks meta {', '.join(missing)}")
                if name in found:
                    raise ValueError(f"{where}: category {name} is also declared in {found[name].path}")
                found[name] = Category(
                    name=name,
                    check_folder=path.parent.name,
                    detector=str(model["name"]),
                    test_name=str(spec.get("name")),
                    description=str(meta["description"]),
                    harm_weight=float(meta["harm_weight"]),
                    impact_kind=str(meta["impact_kind"]),
                    default_severity=str(meta["default_severity"]),
                    report_group=meta.get("report_group"),
                    plain_name=meta.get("plain_name"),
                    confirm=meta.get("confirm"),
                    zoom_metric=meta.get("zoom_metric"),
                    requires=tuple(meta.get("requires") or ()),
                    path=path,
                )
    return found
