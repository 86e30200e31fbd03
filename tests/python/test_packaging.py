"""The package as Python users get it (issue 23, docs/packaging.md).

- pyproject.toml declares the dependencies as ranges; requirements.txt (and requirements-spark.txt
  for the `spark` extra) is the lock: every declared dependency is pinned there, inside its range;
- every third-party module the package imports belongs to a declared dependency;
- the `run-diagnosis` console script is declared, installed and runs every subcommand's module;
- the shipped package holds no developer tool or test helper (those live in tools/ and
  tests/python/support/) and imports nothing only the tests or tools need;
- run_diagnosis.project's errors name the folder it looked at and RUN_DIAGNOSIS_PROJECT_DIR.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from run_diagnosis import cli, project
from support.commands import RUN_DIAGNOSIS
from support.paths import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGE = REPO / "src" / "run_diagnosis"
# the lock of each group of declared dependencies
LOCKS = {
    "dependencies": REPO / "requirements.txt",
    "dev": REPO / "requirements.txt",
    "spark": REPO / "requirements-spark.txt",
}
# what must stay out of the shipped package: the developer tools and the test helpers
DEV_MODULES = {path.stem for path in (REPO / "tools").glob("*.py")} | {
    path.stem for path in (REPO / "tests" / "python" / "support").glob("*.py") if path.stem != "__init__"
}
# distributions only the tests, the linters and the type checker need
DEV_REQUIREMENTS = PYPROJECT["project"]["optional-dependencies"]["dev"]
DEV_ONLY = {canonicalize_name(Requirement(text).name) for text in DEV_REQUIREMENTS}


def declared(group: str) -> list[Requirement]:
    table = PYPROJECT["project"]
    found = table["dependencies"] if group == "dependencies" else table["optional-dependencies"][group]
    return [Requirement(text) for text in found]


def pins(lock: Path) -> dict[str, str]:
    """name -> pinned version of a requirements file (`name[extras]==version` lines)."""
    pinned = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if text:
            requirement = Requirement(text)
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", f"{lock.name}: {text!r} is not pinned with =="
            pinned[canonicalize_name(requirement.name)] = specifier.version
    return pinned


def outside_their_ranges(requirements: list[Requirement], pinned: dict[str, str]) -> list[str]:
    """The declared requirements the lock leaves unpinned or pins outside their range."""
    problems = []
    for requirement in requirements:
        version = pinned.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement.name} is not pinned")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}=={version} is outside {requirement.specifier}")
    return problems


@pytest.mark.parametrize("group", sorted(LOCKS))
def test_each_declared_dependency_is_pinned_inside_its_range(group: str) -> None:
    requirements = declared(group)
    assert requirements, f"pyproject.toml declares no {group}"
    assert outside_their_ranges(requirements, pins(LOCKS[group])) == []


def test_a_pin_outside_its_range_or_missing_is_reported() -> None:
    requirements = [Requirement("pandas~=3.1"), Requirement("duckdb~=2.0")]
    assert outside_their_ranges(requirements, {"pandas": "2.2.3"}) == [
        "pandas==2.2.3 is outside ~=3.1",
        "duckdb is not pinned",
    ]


def imported_top_levels(folder: Path) -> dict[str, set[str]]:
    """Top-level module name -> the package files that import it (absolute imports only)."""
    found: dict[str, set[str]] = {}
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(REPO)))
    return found


def test_every_third_party_import_of_the_package_is_a_declared_dependency() -> None:
    runtime = {canonicalize_name(r.name) for r in declared("dependencies")}
    providers = metadata.packages_distributions()
    third_party = {
        name: files
        for name, files in imported_top_levels(PACKAGE).items()
        if name not in sys.stdlib_module_names and name != "run_diagnosis"
    }
    assert {"pandas", "duckdb", "dbt", "yaml"} <= set(third_party)  # the scan sees the imports
    undeclared = {
        name: sorted(files)
        for name, files in third_party.items()
        if not {canonicalize_name(d) for d in providers.get(name, [name])} & runtime
    }
    assert undeclared == {}, "imported by the package but not in pyproject.toml's dependencies"
    dev_imports = {
        name: sorted(files)
        for name, files in third_party.items()
        if {canonicalize_name(d) for d in providers.get(name, [name])} & DEV_ONLY
    }
    assert dev_imports == {}, "the package imports what only the tests and tools install"


def test_the_package_holds_no_developer_tool_or_test_helper() -> None:
    assert {"benchmark", "report_readme", "run_builder", "dbt_session"} <= DEV_MODULES
    shipped = {path.stem for path in PACKAGE.rglob("*.py")}
    assert shipped & DEV_MODULES == set()
    imported = set(imported_top_levels(PACKAGE))
    assert imported & (DEV_MODULES | {"support", "tools", "tests", "conftest"}) == set()


def test_the_console_script_is_declared_installed_and_runs_every_subcommand(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert PYPROJECT["project"]["scripts"] == {"run-diagnosis": "run_diagnosis.cli:main"}
    (entry,) = metadata.entry_points(group="console_scripts", name="run-diagnosis")
    assert entry.load() is cli.main
    assert Path(RUN_DIAGNOSIS).is_file(), f"{RUN_DIAGNOSIS}: scripts/bootstrap.sh installs it"
    assert cli.main(["--help"]) == 0
    overview = capsys.readouterr().out
    for name, subcommand in cli.SUBCOMMANDS.items():
        assert f"  {name} " in overview
        assert callable(importlib.import_module(f"run_diagnosis.{subcommand.module}").main)
    assert cli.main(["no-such-command"]) == 2
    assert "unknown subcommand 'no-such-command'" in capsys.readouterr().err


@pytest.mark.parametrize("command", [[RUN_DIAGNOSIS], [sys.executable, "-m", "run_diagnosis"]])
def test_the_installed_command_and_the_module_answer_help(command: list[str]) -> None:
    result = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: run-diagnosis SUBCOMMAND")
    for name in cli.SUBCOMMANDS:
        assert f"  {name} " in result.stdout


def dbt_project(folder: Path, name: str = "run_diagnosis", profiles: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dbt_project.yml").write_text(f"name: {name}\nversion: '1.0'\n", encoding="utf-8")
    if profiles:
        (folder / "profiles.yml").write_text("run_diagnosis: {}\n", encoding="utf-8")
    return folder


def test_the_project_is_the_checkout_or_the_folder_the_variable_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(project.PROJECT_DIR_ENV_VAR, raising=False)
    assert project.project_dir() == REPO
    elsewhere = dbt_project(tmp_path / "checkout")
    monkeypatch.setenv(project.PROJECT_DIR_ENV_VAR, str(elsewhere))
    assert project.project_dir() == elsewhere.resolve()


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("missing", "holds no dbt_project.yml"),
        ("another project", "is the dbt project 'jaffle_shop', not 'run_diagnosis'"),
        ("no profiles", "holds no profiles.yml"),
    ],
)
def test_a_wrong_project_folder_is_named_with_the_variable(
    case: str, says: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "project"
    if case == "another project":
        dbt_project(folder, name="jaffle_shop")
    elif case == "no profiles":
        dbt_project(folder, profiles=False)
    monkeypatch.setenv(project.PROJECT_DIR_ENV_VAR, str(folder))
    with pytest.raises(project.ProjectNotFound) as raised:
        project.project_dir()
    message = str(raised.value)
    assert project.PROJECT_DIR_ENV_VAR in message and str(folder) in message and says in message


def test_a_package_outside_a_checkout_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(project.PROJECT_DIR_ENV_VAR, raising=False)
    monkeypatch.setattr(project, "CHECKOUT", tmp_path / "site-packages")
    with pytest.raises(project.ProjectNotFound) as raised:
        project.project_dir()
    message = str(raised.value)
    assert project.PROJECT_DIR_ENV_VAR in message and str(tmp_path / "site-packages") in message


def test_the_command_exits_2_naming_the_folder_before_reading_any_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-checkout-here"
    monkeypatch.setenv(project.PROJECT_DIR_ENV_VAR, str(missing))
    out = tmp_path / "out"
    assert cli.main(["diagnose", str(tmp_path / "no-such-run"), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("run-diagnosis diagnose: error: ")
    assert project.PROJECT_DIR_ENV_VAR in error and str(missing) in error
    assert not out.exists()


def test_scripts_diagnose_py_is_the_diagnose_subcommand(tmp_path: Path) -> None:
    """Corpus scorers call `scripts/diagnose.py TARGET --out OUT`: it must stay the diagnose
    subcommand (same help, same refusal of what is not a log)."""
    shim = [sys.executable, str(REPO / "scripts" / "diagnose.py")]
    entry = [sys.executable, "-m", "run_diagnosis", "diagnose"]
    helps = [
        subprocess.run([*cmd, "--help"], capture_output=True, text=True, cwd=tmp_path)
        for cmd in (shim, entry)
    ]
    assert helps[0].returncode == helps[1].returncode == 0
    assert helps[0].stdout == helps[1].stdout
    not_a_log = tmp_path / "README.md"
    not_a_log.write_text("# a project\nnothing to read here\n", encoding="utf-8")
    refused = subprocess.run(
        [*shim, str(not_a_log), "--out", str(tmp_path / "out")], capture_output=True, text=True, cwd=tmp_path
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr


def test_the_report_templates_ship_as_package_data() -> None:
    """report.md/html are rendered from templates/ (report_templates.py): every file there must be
    matched by pyproject.toml's package-data, or a non-editable install renders nothing."""
    globs = PYPROJECT["tool"]["setuptools"]["package-data"]["run_diagnosis"]
    files = sorted(path.relative_to(PACKAGE).as_posix() for path in (PACKAGE / "templates").iterdir())
    assert {"templates/report.md.j2", "templates/report.html.j2", "templates/report.css"} <= set(files)
    assert [name for name in files if not any(fnmatch.fnmatch(name, glob) for glob in globs)] == []
