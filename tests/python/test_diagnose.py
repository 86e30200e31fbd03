"""run-diagnosis diagnose end to end: the same findings as a `dbt build` of the seeds, and a usable CLI.

The seeds are built once with `dbt build --selector ci` (scripts/test.sh's build, reused
through sample_build.py, or made here when this file runs alone); run-diagnosis diagnose then runs, at
the same time and into two different --out folders, on the shared sample run (read in place)
and on a copy of the repo's own seed files. Both must give the seed build's findings
(finding_id, category, severity, first_step), and each must keep to its own folder.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from run_diagnosis import diagnose, importers, validate_run
from run_diagnosis.dbt_runner import (
    FILE_LOG_LEVEL_ENV_VAR,
    BuildResult,
    DbtBuildError,
    build_run,
    manifest_nodes,
    read_run_results,
)
from support.commands import run_diagnosis
from support.dbt_session import DB_NAME
from support.paths import REPO, SHARED
from support.sample_build import SEED_FILES, SEED_PREFIX, copy_seed_files, sample_build
from support.severity_agreement import ANOMALY_TEST

DIAGNOSE = run_diagnosis("diagnose")
SAMPLE_RUN = SHARED / "sample-run"
FINDING_KEY = ("finding_id", "category", "severity", "first_step")

FindingKeys = set[tuple[Any, ...]]


@dataclass(frozen=True)
class CliRun:
    """One run-diagnosis diagnose process: what it was given and what it said."""

    source: Path
    out: Path
    returncode: int
    stdout: str
    stderr: str


def findings_in_db(db_path: Path) -> FindingKeys:
    with duckdb.connect(str(db_path), read_only=True) as con:
        rows = con.execute(f"select {', '.join(FINDING_KEY)} from main.findings").fetchall()
    return {tuple(row) for row in rows}


def findings_in_json(path: Path) -> FindingKeys:
    return {tuple(f[k] for k in FINDING_KEY) for f in json.loads(path.read_text(encoding="utf-8"))}


def start_diagnosis(source: Path, out: Path) -> subprocess.Popen[str]:
    """The diagnosis writes dbt's debug log (every SQL statement, naming the run folder it reads):
    test_concurrent_diagnoses_do_not_interfere reads it."""
    command = [*DIAGNOSE, str(source), "--out", str(out)]
    env = {**os.environ, FILE_LOG_LEVEL_ENV_VAR: "debug"}
    return subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def finish(process: subprocess.Popen[str], source: Path, out: Path) -> CliRun:
    stdout, stderr = process.communicate(timeout=900)
    return CliRun(source, out, process.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def seeds_build() -> BuildResult:
    """The `dbt build --selector ci` of the seeds, in its own database and target folder:
    scripts/test.sh's, or made once here (sample_build.py)."""
    return sample_build()


@pytest.fixture(scope="module")
def diagnoses(tmp_path_factory: pytest.TempPathFactory, seeds_build: BuildResult) -> dict[str, CliRun]:
    """run-diagnosis diagnose on the seed copy and on the shared sample run, both at once."""
    root = tmp_path_factory.mktemp("diagnoses")
    sources = {"seeds_copy": copy_seed_files(root / "seeds-copy")}
    if SAMPLE_RUN.is_dir():
        sources["sample_run"] = SAMPLE_RUN
    started = {name: start_diagnosis(source, root / f"out-{name}") for name, source in sources.items()}
    return {name: finish(p, sources[name], root / f"out-{name}") for name, p in started.items()}


def cli_run(diagnoses: dict[str, CliRun], name: str) -> CliRun:
    if name not in diagnoses:
        pytest.skip(f"{SAMPLE_RUN} is absent: the shared sample run is not on this machine")
    run = diagnoses[name]
    assert run.returncode == 0, f"run-diagnosis diagnose {run.source} exited {run.returncode}:\n{run.stderr}"
    return run


def test_seeds_build_has_findings(seeds_build: BuildResult) -> None:
    assert seeds_build.ok and seeds_build.n_error == 0
    assert seeds_build.n_warn > 0, "the sample run has problems: some anomaly test must warn"
    assert (seeds_build.target_path / "run_results.json").exists()
    assert findings_in_db(seeds_build.db_path)


@pytest.mark.parametrize("name", ["seeds_copy", "sample_run"])
def test_diagnosis_matches_plain_seed_build(
    diagnoses: dict[str, CliRun], seeds_build: BuildResult, name: str
) -> None:
    run = cli_run(diagnoses, name)
    expected = findings_in_db(seeds_build.db_path)
    assert findings_in_db(run.out / "diagnosis.duckdb") == expected
    assert findings_in_json(run.out / "findings.json") == expected


@pytest.mark.parametrize("name", ["seeds_copy", "sample_run"])
def test_diagnosis_writes_its_own_folder(diagnoses: dict[str, CliRun], name: str) -> None:
    run = cli_run(diagnoses, name)
    for produced in ("report.md", "report.html", "findings.json", "diagnosis.duckdb"):
        assert (run.out / produced).is_file(), produced
    assert sorted(p.name for p in (run.out / "run").iterdir()) == sorted(SEED_FILES)
    results = json.loads((run.out / "dbt" / "target" / "run_results.json").read_text(encoding="utf-8"))
    assert not results["args"].get("vars")  # the run folder goes by RUN_DIAGNOSIS_RUN_DIR, never --vars
    with duckdb.connect(str(run.out / "diagnosis.duckdb"), read_only=True) as con:
        (config_path,) = con.execute("select config_path from main.stg_training__config").fetchone()
    assert Path(config_path).parent == (run.out / "run").resolve()
    config = json.loads((run.out / "run" / "run_config.json").read_text(encoding="utf-8"))
    assert Path(config["provenance"]["source_path"]).resolve() == run.source.resolve()


def test_default_selector_runs_the_anomaly_tests_and_the_invariants_only(
    diagnoses: dict[str, CliRun], seeds_build: BuildResult
) -> None:
    """A diagnosis (plain `dbt build`: selectors.yml's default) runs every anomaly test and every
    test tagged `invariant`, and none of the hygiene or unit tests that `ci` adds."""
    run = cli_run(diagnoses, "seeds_copy")
    kinds = ("test", "unit_test")
    results = read_run_results(run.out / "dbt" / "target")
    ran = {r["unique_id"] for r in results if r["unique_id"].split(".")[0] in kinds}
    nodes = manifest_nodes(seeds_build.target_path, notes := [])
    assert nodes, notes
    tests = {uid: node for uid, node in nodes.items() if node["resource_type"] == "test"}
    wanted = {
        uid
        for uid, node in tests.items()
        if (node.get("test_metadata") or {}).get("name") == ANOMALY_TEST or "invariant" in node["tags"]
    }
    assert len(wanted) >= 30 and any("invariant" in tests[uid]["tags"] for uid in wanted)
    assert ran == wanted, (sorted(ran - wanted), sorted(wanted - ran))
    assert len(tests) > 2 * len(wanted)  # the hygiene tests exist, in `ci`


def is_hook(result: dict[str, Any]) -> bool:
    """A result that is no node of the build's count: a project hook or the report's exposure."""
    return str(result["unique_id"]).split(".")[0] in ("operation", "exposure")


def test_the_docs_state_the_node_counts_the_builds_run(
    diagnoses: dict[str, CliRun], seeds_build: BuildResult
) -> None:
    """The node counts docs/testing.md states are what a diagnosis (the default selector) and the
    `ci` build run: a number it states is checked here, never left to a hand edit."""
    run = cli_run(diagnoses, "seeds_copy")
    default = [r for r in read_run_results(run.out / "dbt" / "target") if not is_hook(r)]
    default_tests = [r for r in default if r["unique_id"].startswith("test.")]
    ci = [r for r in read_run_results(seeds_build.target_path) if not is_hook(r)]
    readme = " ".join((REPO / "docs" / "testing.md").read_text(encoding="utf-8").split())
    assert f"{len(default)} nodes, of them {len(default_tests)} tests" in readme
    assert f"through `--selector ci` ({len(ci)} nodes)" in readme


def test_concurrent_diagnoses_do_not_interfere(diagnoses: dict[str, CliRun]) -> None:
    if len(diagnoses) < 2:
        pytest.skip(f"{SAMPLE_RUN} is absent: only one diagnosis ran")
    outs = [cli_run(diagnoses, name).out for name in diagnoses]
    assert len({out.resolve() for out in outs}) == len(outs)
    for out in outs:
        logged = (out / "dbt" / "logs" / "dbt.log").read_text(encoding="utf-8")
        others = [o for o in outs if o != out]
        assert str(out / "run") in logged, "the debug log names the run folder its build read"
        assert not any(str(o / "run") in logged for o in others), f"{out} build read another run"
        assert findings_in_json(out / "findings.json") == findings_in_db(out / "diagnosis.duckdb")


def test_progress_and_closing_lines(diagnoses: dict[str, CliRun]) -> None:
    run = cli_run(diagnoses, "seeds_copy")
    assert f"[1/4] reading {run.source} as canonical" in run.stderr
    for number in range(2, 5):
        assert f"[{number}/4]" in run.stderr
    ranked = json.loads((run.out / "findings.json").read_text(encoding="utf-8"))
    first = next(f for f in ranked if f["rank"] == 1)
    assert f"report: {run.out / 'report.html'}" in run.stdout
    assert "fix first:" in run.stdout and first["finding_id"] in run.stdout


def test_help_lists_every_format() -> None:
    shown = subprocess.run([*DIAGNOSE, "--help"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    for module in importers.importers():
        assert module.FORMAT in shown
        assert " ".join(module.DESCRIPTION.split()[:4]) in " ".join(shown.split())
    assert "--keep-going" in shown and "exit status" in shown


def test_unknown_input_exits_2_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "shopping_list.txt"
    source.write_text("eggs\nmilk\nbread\n", encoding="utf-8")
    assert diagnose.main([str(source), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    # the generic reader says what it found and how to map a log it cannot read
    assert str(source) in error and "none with a counter" in error and "--map" in error
    assert not (tmp_path / "out" / "diagnosis.duckdb").exists()


def test_missing_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"
    assert diagnose.main([str(missing), "--out", str(tmp_path / "out")]) == 2
    assert f"{missing}: no such file or folder" in capsys.readouterr().err


def test_unknown_format_flag_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        diagnose.main([str(tmp_path), "--out", str(tmp_path / "out"), "--format", "excel"])
    assert exited.value.code == 2


def test_wrong_forced_format_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = copy_seed_files(tmp_path / "run")
    assert diagnose.main([str(folder), "--out", str(tmp_path / "out"), "--format", "hf_trainer_state"]) == 2
    assert str(folder) in capsys.readouterr().err


@pytest.fixture
def failing_build(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """build_run replaced by one that fails as dbt does on a bad file (a model error: the build
    cannot be completed); records whether diagnose asked it to complete past failed tests."""
    checks: list[bool] = []

    def fake_build_run(run_dir: Path | None, db_path: Path, work_dir: Path, **options: Any) -> BuildResult:
        checks.append(options.get("complete", False))
        result = BuildResult(1, db_path, work_dir / "target", work_dir / "logs", 0.1, {"error": 1}, ("boom",))
        if options.get("check", True):
            raise DbtBuildError("dbt build failed (exit code 1):\n  boom", result)
        return result

    monkeypatch.setattr(diagnose, "build_run", fake_build_run)
    yield checks


def test_failed_build_exits_1_with_dbt_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], failing_build: list[bool]
) -> None:
    folder = copy_seed_files(tmp_path / "run")
    assert diagnose.main([str(folder), "--out", str(tmp_path / "out")]) == 1
    assert "boom" in capsys.readouterr().err
    assert failing_build == [True]
    assert not (tmp_path / "out" / "report.md").exists()


def test_keep_going_still_tries_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], failing_build: list[bool]
) -> None:
    folder = copy_seed_files(tmp_path / "run")
    assert diagnose.main([str(folder), "--out", str(tmp_path / "out"), "--keep-going"]) == 1
    error = capsys.readouterr().err
    assert failing_build == [True]
    assert "--keep-going" in error and "[4/4]" in error and "report failed" in error


def test_build_error_names_the_file_and_problem(tmp_path: Path) -> None:
    folder = copy_seed_files(tmp_path / "run")
    eval_log = folder / f"{SEED_PREFIX}eval_log.csv"
    lines = eval_log.read_text(encoding="utf-8").splitlines(keepends=True)
    eval_log.write_text(lines[0].replace("val_loss", "validation") + "".join(lines[1:]), encoding="utf-8")
    with pytest.raises(DbtBuildError) as raised:
        build_run(folder, tmp_path / "bad" / DB_NAME, tmp_path / "dbt", select="stg_training__evals")
    message = str(raised.value)
    assert f"run_diagnosis: {eval_log} row 1 (header): missing column(s) val_loss" in message
    assert raised.value.result is not None and raised.value.result.n_error == 1


def test_a_dropped_column_is_refused_as_validate_run_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A five-file folder whose train log lost a column: run-diagnosis diagnose stops with exit 2 before the
    build, naming the file and the column, as run-diagnosis validate does (and the dbt build would)."""
    folder = copy_seed_files(tmp_path / "run")
    train_log = folder / f"{SEED_PREFIX}train_log.csv"
    frame = pd.read_csv(train_log, dtype=str, keep_default_na=False)
    frame.drop(columns=["grad_norm"]).to_csv(train_log, index=False)
    assert validate_run.main([str(folder)]) == 2
    refused = capsys.readouterr().err
    assert diagnose.main([str(folder), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    for message in (refused, error):
        assert f"{train_log}: row 1 (header): missing column(s) grad_norm" in message
    assert not (tmp_path / "out" / "diagnosis.duckdb").exists()


def test_another_tools_log_named_like_ours_is_read_by_its_importer(tmp_path: Path) -> None:
    """A Keras CSVLogger (or any script) writing train_log.csv: its header names neither `step` nor
    half the canonical columns, so it is not refused as a canonical file missing five columns but
    read as what it is; a canonical header that lost one column (above) is still refused."""
    lines = ["epoch,accuracy,loss,lr,val_accuracy,val_loss"]
    lines += [f"{e},{0.5 + e / 40},{2.0 / (1 + e)},0.001,{0.45 + e / 40},{2.1 / (1 + e)}" for e in range(12)]
    log = tmp_path / "run" / "train_log.csv"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert not validate_run.names_canonical_header(log)
    run = diagnose.read_source(log, None)
    assert [round(float(v), 6) for v in run.train["loss"]][:3] == [2.0, 1.0, round(2.0 / 3, 6)]
    assert len(run.evals) == 12
    for header in (
        "step,shard_id,loss,learning_rate,step_time_sec",
        "stpe,shard_id,loss,grad_norm,learning_rate",
    ):
        log.write_text(header + "\n", encoding="utf-8")
        assert validate_run.names_canonical_header(log), header
