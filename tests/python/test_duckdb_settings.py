"""DuckDB's memory_limit and threads for a build, from the machine and the run's size
(dbt_runner.duckdb_settings; docs/performance.md): no dbt build, a fake /proc and cgroup."""

from __future__ import annotations

from pathlib import Path

import pytest

from run_diagnosis import dbt_runner
from run_diagnosis.dbt_runner import (
    AVAILABLE_SHARE,
    MEMORY_ENV_VAR,
    MEMORY_PER_LOG_BYTE,
    MIN_MEMORY,
    THREADS_ENV_VAR,
    available_memory,
    duckdb_settings,
    usable_cores,
)

GIB = 1024**3


def machine(root: Path, available_kb: int | None, cgroup_max: str | None = None, used: int = 0) -> Path:
    if available_kb is not None:
        (root / "proc").mkdir(parents=True)
        (root / "proc" / "meminfo").write_text(f"MemTotal: 99999999 kB\nMemAvailable:   {available_kb} kB\n")
    if cgroup_max is not None:
        cgroup = root / "sys" / "fs" / "cgroup"
        cgroup.mkdir(parents=True)
        (cgroup / "memory.max").write_text(f"{cgroup_max}\n")
        (cgroup / "memory.current").write_text(f"{used}\n")
    return root


def test_available_memory_is_the_lower_of_the_machine_and_its_cgroup(tmp_path: Path) -> None:
    assert available_memory(machine(tmp_path / "plain", 8 * 1024**2)) == 8 * GIB
    assert available_memory(machine(tmp_path / "uncapped", 8 * 1024**2, "max")) == 8 * GIB
    capped = machine(tmp_path / "capped", 8 * 1024**2, str(3 * GIB), used=GIB)
    assert available_memory(capped) == 2 * GIB
    assert available_memory(tmp_path / "nothing") is None


def test_usable_cores_follow_a_cgroup_quota(tmp_path: Path) -> None:
    cgroup = tmp_path / "sys" / "fs" / "cgroup"
    cgroup.mkdir(parents=True)
    (cgroup / "cpu.max").write_text("50000 100000\n")  # half a core: still one
    assert usable_cores(tmp_path) == 1
    (cgroup / "cpu.max").write_text("max 100000\n")
    assert usable_cores(tmp_path) == usable_cores(tmp_path / "none") >= 1


def test_memory_grows_with_the_run_and_stops_at_a_share_of_what_is_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(MEMORY_ENV_VAR, raising=False)
    monkeypatch.delenv(THREADS_ENV_VAR, raising=False)
    monkeypatch.setattr(dbt_runner, "available_memory", lambda: 32 * GIB)
    small, large, fleet = tmp_path / "small", tmp_path / "large", tmp_path / "fleet"
    for folder, size in ((small, 1000), (large, 500 * 1024**2), (fleet / "a", 300 * 1024**2)):
        folder.mkdir(parents=True)
        with (folder / "x_train_log.csv").open("wb") as handle:
            handle.truncate(size)  # sparse: the size is what counts
    (fleet / "b").mkdir()
    (fleet / "b" / "train_log.csv").write_bytes(b"step\n" * 10)
    assert duckdb_settings(small, tmp_path)[MEMORY_ENV_VAR] == f"{MIN_MEMORY // 1024**2}MB"
    assert duckdb_settings(large, tmp_path)[MEMORY_ENV_VAR] == f"{MEMORY_PER_LOG_BYTE * 500}MB"
    assert duckdb_settings(fleet, tmp_path)[MEMORY_ENV_VAR] == f"{MEMORY_PER_LOG_BYTE * 300}MB"
    monkeypatch.setattr(dbt_runner, "available_memory", lambda: 2 * GIB)
    assert (
        duckdb_settings(large, tmp_path)[MEMORY_ENV_VAR] == f"{int(2 * GIB * AVAILABLE_SHARE) // 1024**2}MB"
    )
    assert duckdb_settings(large, tmp_path)[THREADS_ENV_VAR] == str(usable_cores())


def test_a_budget_set_in_the_environment_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_ENV_VAR, "5GB")
    monkeypatch.setenv(THREADS_ENV_VAR, "1")
    assert duckdb_settings(tmp_path, tmp_path) == {}


def test_a_run_of_millions_of_steps_is_built_one_model_at_a_time(tmp_path: Path) -> None:
    """Above SERIAL_BUILD_LOG_BYTES of one run's train logs dbt gets one thread (the per-step models
    each need most of DuckDB's budget); below, the profile's threads; a warehouse of runs that are
    each below keeps them (every window is partitioned by run)."""
    from run_diagnosis.dbt_runner import SERIAL_BUILD_LOG_BYTES, build_threads

    small, large, fleet = tmp_path / "small", tmp_path / "large", tmp_path / "fleet"
    for folder in (small, large, fleet / "a", fleet / "b"):
        folder.mkdir(parents=True)
    (small / "train_log.csv").write_bytes(b"step,loss\n1,2.0\n")
    with (large / "train_log.csv").open("wb") as log:
        log.truncate(SERIAL_BUILD_LOG_BYTES + 1)  # sparse: the size is what counts
    for run in ("a", "b"):
        with (fleet / run / "train_log.csv").open("wb") as log:
            log.truncate(SERIAL_BUILD_LOG_BYTES // 2 + 1)
    assert build_threads(small, tmp_path) is None
    assert build_threads(large, tmp_path) == 1
    assert build_threads(fleet, tmp_path) is None
    assert build_threads(None, tmp_path) is None  # the sample seeds


def test_dbt_log_file_is_info_unless_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """dbt's log file keeps node results and errors (info); every SQL statement (debug) only when asked."""
    monkeypatch.delenv(dbt_runner.FILE_LOG_LEVEL_ENV_VAR, raising=False)
    args = dbt_runner.dbt_arguments(tmp_path / "target", tmp_path / "logs")
    assert args[args.index("--log-level-file") + 1] == "info"
    monkeypatch.setenv(dbt_runner.FILE_LOG_LEVEL_ENV_VAR, "DEBUG")
    args = dbt_runner.dbt_arguments(tmp_path / "target", tmp_path / "logs")
    assert args[args.index("--log-level-file") + 1] == "debug"
    monkeypatch.setenv(dbt_runner.FILE_LOG_LEVEL_ENV_VAR, "verbose")
    with pytest.raises(dbt_runner.DbtBuildError, match="RUN_DIAGNOSIS_DBT_FILE_LOG_LEVEL"):
        dbt_runner.dbt_arguments(tmp_path / "target", tmp_path / "logs")


def test_each_build_opens_the_database_with_its_own_memory_and_threads(tmp_path: Path) -> None:
    """The profile's config_options reach DuckDB when a build opens its database, and a second
    build in the same process opens it with its own values (not the first build's)."""
    project = dbt_runner.find_project_dir()
    manifest = dbt_runner.parsed_manifest(project, "settings", False, {})
    sql = "select current_setting('memory_limit') as memory, current_setting('threads') as threads"
    for memory, threads, expected in (("1536MiB", "1", "1.5 GiB"), ("2560MiB", "2", "2.5 GiB")):
        args = dbt_runner.dbt_arguments(tmp_path / "target", tmp_path / "logs", command="show")
        env = {
            dbt_runner.DB_ENV_VAR: str(tmp_path / "settings.duckdb"),
            MEMORY_ENV_VAR: memory,
            THREADS_ENV_VAR: threads,
        }
        result = dbt_runner.invoke(["--log-level", "none", *args, "--inline", sql], env, manifest)
        assert result.success, result.exception
        row = result.result.results[0].agate_table.rows[0]
        assert (row["memory"], int(row["threads"])) == (expected, int(threads))
