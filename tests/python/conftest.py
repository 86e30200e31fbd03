"""Shared pytest fixtures: one dbt session for the whole test run, and the run builder.

Fixture runs are built many at a time: a test names its run with `@fixture_run(make)`
(make(**the test's parameters) returns a RunBuilder) and takes the `diagnosis` fixture; a
module may also list named runs in `FIXTURE_RUNS` (name -> make(); the name is the run_id,
unique across the modules), read with `fixture_runs[name]`. The first test of the session that
needs one builds the runs of every selected test of every module, and the named ones, in ONE dbt
build (`DbtSession.build_many`), in a folder with a hostile name (HOSTILE_NAME); the modules that
set FIXTURE_RUNS_STRUCTURAL = True have theirs in a second one, with the structural tests. Under
pytest-xdist the first worker to need a build makes it and the others read it
(`once_per_session`). Each test's `diagnosis` sees only its own run.
"""

from __future__ import annotations

import fcntl
import functools
import inspect
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from run_diagnosis.dbt_runner import FILE_LOG_LEVEL_ENV_VAR
from support.dbt_session import (
    HOSTILE_NAME,
    DbtSession,
    Diagnosis,
    FixtureRun,
    FixtureRuns,
    MakeRun,
    run_folder_name,
)
from support.run_builder import RunBuilder
from support.slowest_first import slowest_first

# dbt's log file costs about a tenth of a build's time even at info (dbt formats every statement's
# debug line before the level drops it): the suite's builds write none, unless a test asks for one
# (test_diagnose's concurrent diagnoses read their debug logs); the default is tested on its own
os.environ.setdefault(FILE_LOG_LEVEL_ENV_VAR, "none")

PATH_FIELDS = ("folder", "db_path", "target_path")
SHARED_BUILD = "fixture_runs"  # the session's build of every module's fixture runs


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fixture_run(make): the test's fixture run, built with the session's others"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slowest_first(items)  # the order scripts/test.sh's workers take the files in


@pytest.fixture(scope="session")
def dbt_session(tmp_path_factory: pytest.TempPathFactory) -> DbtSession:
    return DbtSession(tmp_path_factory.mktemp("dbt"))


def once_per_session(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[], dict[str, Diagnosis]]
) -> dict[str, Diagnosis]:
    """make() once per test session, shared by the xdist workers: the first to ask makes it under
    a lock and saves the Diagnoses (their fields) where the others read them."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return make()
    shared = tmp_path_factory.getbasetemp().parent  # this session's folder, above the workers'
    saved = shared / f"{name}.json"
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if saved.exists():
            return {key: Diagnosis(**{k: Path(v) if k in PATH_FIELDS else v for k, v in fields.items()})
                    for key, fields in json.loads(saved.read_text(encoding="utf-8")).items()}  # fmt: skip
        made = make()
        kept = {
            key: {k: str(v) if k in PATH_FIELDS else v for k, v in vars(diagnosis).items() if k[0] != "_"}
            for key, diagnosis in made.items()
        }
        saved.write_text(json.dumps(kept), encoding="utf-8")
        return made


@pytest.fixture(scope="session")
def clean_run(dbt_session: DbtSession, tmp_path_factory: pytest.TempPathFactory) -> Diagnosis:
    """The healthy fixture run, built alone (the structural tests run on the same data in the
    shared build: test_hostile_input's runs with hostile names are healthy RunBuilder() runs),
    once per test session."""

    def build() -> dict[str, Diagnosis]:
        folder = RunBuilder().write(tmp_path_factory.mktemp("run"))
        diagnosis = dbt_session.build(folder)
        assert diagnosis.success, diagnosis.output[-3000:]
        return {"clean": diagnosis}

    return once_per_session(tmp_path_factory, "clean_run", build)["clean"]


def _make_arguments(make: MakeRun, item: pytest.Item) -> dict[str, object]:
    params = getattr(getattr(item, "callspec", None), "params", {})
    names = inspect.signature(make).parameters
    return {name: value for name, value in params.items() if name in names}


@dataclass(frozen=True)
class FixturePlan:
    """The session's fixture runs: how to make each (by run_id), and whose they are."""

    makes: dict[str, Callable[[], FixtureRun]]
    run_of_test: dict[str, str]  # test node id -> run_id
    named: dict[Path, list[str]]  # module file -> its FIXTURE_RUNS names (each its run_id)
    structural: set[str]  # the runs built with the structural tests

    def group(self, structural: bool) -> dict[str, Callable[[], FixtureRun]]:
        """The runs built with (or without) the structural tests."""
        return {
            run_id: make for run_id, make in self.makes.items() if (run_id in self.structural) is structural
        }


def fixture_plan(items: list[pytest.Item]) -> FixturePlan:
    """Every selected test's @fixture_run and every FIXTURE_RUNS of their modules, in the
    collection order (the same in every xdist worker, so every worker names the runs alike).
    A module's FIXTURE_RUNS_STRUCTURAL: True (all its runs with the structural tests) or the
    names of those of its FIXTURE_RUNS that are."""
    makes: dict[str, Callable[[], FixtureRun]] = {}
    run_of_test: dict[str, str] = {}
    named: dict[Path, list[str]] = {}
    structural: set[str] = set()
    for item in items:
        here = Path(item.path).resolve()
        module = getattr(item, "module", None)
        wanted = getattr(module, "FIXTURE_RUNS_STRUCTURAL", False)
        if here not in named:
            named[here] = []
            for name, make in getattr(module, "FIXTURE_RUNS", {}).items():
                assert name not in makes, f"fixture run {name!r} of {here.name} is named twice"
                makes[name] = make
                named[here].append(name)
                if wanted is True or (wanted and name in wanted):
                    structural.add(name)
        marker = item.get_closest_marker("fixture_run")
        if marker is None:
            continue
        make = marker.args[0]
        run_id = run_folder_name(f"{here.stem.removeprefix('test_')}-{len(makes):03d}-{item.name}")
        assert run_id not in makes, f"fixture run id {run_id!r} twice"
        makes[run_id] = functools.partial(make, **_make_arguments(make, item))
        run_of_test[item.nodeid] = run_id
        if wanted is True:
            structural.add(run_id)
    return FixturePlan(makes, run_of_test, {h: names for h, names in named.items() if names}, structural)


class SharedBuilds:
    """The session's fixture runs in two builds (with and without the structural tests), each
    made when a module first needs it, once per session (once_per_session)."""

    def __init__(self, plan: FixturePlan, dbt_session: DbtSession, factory: pytest.TempPathFactory) -> None:
        self.plan, self.dbt_session, self.factory = plan, dbt_session, factory
        self.built: dict[bool, dict[str, Diagnosis]] = {}

    def runs(self, structural: bool) -> dict[str, Diagnosis]:
        if structural not in self.built:
            name = f"{SHARED_BUILD}_structural" if structural else SHARED_BUILD
            makes = self.plan.group(structural)

            def build() -> dict[str, Diagnosis]:
                runs = {run_id: make() for run_id, make in makes.items()}
                return self.dbt_session.build_many(
                    runs, name=name, structural=structural, folder_name=HOSTILE_NAME
                )

            built = once_per_session(self.factory, name, build) if makes else {}
            first = next(iter(built.values()), None)
            assert first is None or first.success, "\n".join(first.errors) or first.output[-3000:]
            self.built[structural] = built
        return self.built[structural]


@pytest.fixture(scope="session")
def shared_builds(
    request: pytest.FixtureRequest, dbt_session: DbtSession, tmp_path_factory: pytest.TempPathFactory
) -> SharedBuilds:
    return SharedBuilds(fixture_plan(request.session.items), dbt_session, tmp_path_factory)


@pytest.fixture(scope="module")
def fixture_runs(request: pytest.FixtureRequest, shared_builds: SharedBuilds) -> FixtureRuns:
    """The module's share of the session's fixture runs: by test and by FIXTURE_RUNS name."""
    here = Path(request.module.__file__).resolve()
    plan = shared_builds.plan
    mine = {item.nodeid for item in request.session.items if Path(item.path).resolve() == here}
    by_test = {node: run_id for node, run_id in plan.run_of_test.items() if node in mine}
    named = plan.named.get(here, [])

    def built(run_id: str) -> Diagnosis:
        return shared_builds.runs(run_id in plan.structural)[run_id]

    return FixtureRuns(
        {node: built(run_id) for node, run_id in by_test.items()}, {n: built(n) for n in named}
    )


@pytest.fixture
def diagnosis(request: pytest.FixtureRequest, fixture_runs: FixtureRuns) -> Diagnosis:
    """The test's own fixture run (its @fixture_run), built with the session's others."""
    found = fixture_runs.by_test.get(request.node.nodeid)
    assert found is not None, f"{request.node.nodeid} has no @fixture_run"
    return found
