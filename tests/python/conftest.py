"""Shared pytest fixtures: one dbt session for the whole test run, and the run builder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dbt_session import DbtSession, Diagnosis
from run_builder import RunBuilder


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
def clean_run(diagnose: Callable[..., Diagnosis]) -> Diagnosis:
    return diagnose(RunBuilder(), structural_tests=True)


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]
