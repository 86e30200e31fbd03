"""Shared pytest fixtures: one dbt session for the whole test run, and the run builder.

Fixture runs are built many at a time: a test names its run with `@fixture_run(make)`
(make(**the test's parameters) returns a RunBuilder) and takes the `diagnosis` fixture; a
module may also list named runs in `FIXTURE_RUNS` (name -> make()), read with
`fixture_runs[name]`, and set FIXTURE_RUNS_STRUCTURAL = True to run the structural tests
too. The module's first test that needs one builds the runs of every
selected test of the module, and the named ones, in ONE dbt build (`DbtSession.build_many`);
each test's `diagnosis` sees only its own run.
"""

from __future__ import annotations

import fcntl
import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from support.dbt_session import DbtSession, Diagnosis, FixtureRuns, MakeRun, run_folder_name
from support.run_builder import RunBuilder
from support.slowest_first import slowest_first

PATH_FIELDS = ("folder", "db_path", "target_path")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fixture_run(make): the test's fixture run, built with its module's others"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slowest_first(items)  # the order scripts/test.sh's workers take the files in


@pytest.fixture(scope="session")
def dbt_session(tmp_path_factory: pytest.TempPathFactory) -> DbtSession:
    return DbtSession(tmp_path_factory.mktemp("dbt"))


@pytest.fixture(scope="session")
def diagnose(
    dbt_session: DbtSession, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[RunBuilder], Diagnosis]:
    """Write a fixture run and build the project on it."""

    def run(builder: RunBuilder, *, structural_tests: bool = False) -> Diagnosis:
        folder = tmp_path_factory.mktemp("run")
        builder.write(folder)
        diagnosis = dbt_session.build(folder, structural_tests=structural_tests)
        assert diagnosis.success, diagnosis.output[-3000:]
        return diagnosis

    return run


@pytest.fixture(scope="session")
def clean_run(diagnose: Callable[..., Diagnosis], tmp_path_factory: pytest.TempPathFactory) -> Diagnosis:
    """The healthy fixture run, built alone with the structural tests: once per test session,
    shared by the xdist workers (the first builds it under a lock, the others read it)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return diagnose(RunBuilder(), structural_tests=True)
    shared = tmp_path_factory.getbasetemp().parent  # this session's folder, above the workers'
    saved = shared / "clean_run.json"
    with (shared / "clean_run.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if saved.exists():
            fields = json.loads(saved.read_text(encoding="utf-8"))
            return Diagnosis(**{k: Path(v) if k in PATH_FIELDS else v for k, v in fields.items()})
        diagnosis = diagnose(RunBuilder(), structural_tests=True)
        fields = {k: str(v) if k in PATH_FIELDS else v for k, v in vars(diagnosis).items() if k[0] != "_"}
        saved.write_text(json.dumps(fields), encoding="utf-8")
        return diagnosis


def _make_arguments(make: MakeRun, item: pytest.Item) -> dict[str, object]:
    params = getattr(getattr(item, "callspec", None), "params", {})
    names = inspect.signature(make).parameters
    return {name: value for name, value in params.items() if name in names}


@pytest.fixture(scope="module")
def fixture_runs(request: pytest.FixtureRequest, dbt_session: DbtSession) -> FixtureRuns:
    """Every fixture run of the module's selected tests, and its FIXTURE_RUNS, in one build."""
    here = Path(request.module.__file__).resolve()
    builders: dict[str, RunBuilder | Path] = {}
    run_of_test: dict[str, str] = {}
    for item in request.session.items:
        marker = item.get_closest_marker("fixture_run")
        if marker is None or Path(item.path).resolve() != here:
            continue
        make = marker.args[0]
        run_id = run_folder_name(f"{len(builders):02d}-{item.name}")
        builders[run_id] = make(**_make_arguments(make, item))
        run_of_test[item.nodeid] = run_id
    named: dict[str, MakeRun] = getattr(request.module, "FIXTURE_RUNS", {})
    for name, make in named.items():
        builders[name] = make()
    if not builders:
        return FixtureRuns({}, {})
    structural = getattr(request.module, "FIXTURE_RUNS_STRUCTURAL", False)
    built = dbt_session.build_many(builders, name=f"runs_{run_folder_name(here.stem)}", structural=structural)
    first = next(iter(built.values()))
    assert first.success, "\n".join(first.errors) or first.output[-3000:]
    by_test = {node: built[run_id] for node, run_id in run_of_test.items()}
    return FixtureRuns(by_test, {name: built[name] for name in named})


@pytest.fixture
def diagnosis(request: pytest.FixtureRequest, fixture_runs: FixtureRuns) -> Diagnosis:
    """The test's own fixture run (its @fixture_run), built with the module's others."""
    found = fixture_runs.by_test.get(request.node.nodeid)
    assert found is not None, f"{request.node.nodeid} has no @fixture_run"
    return found
