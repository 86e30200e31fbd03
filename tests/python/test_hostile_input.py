"""Hostile and broken input (issue 10): paths are data, bad files are exit 2 before the build,
impossible values become findings or set-aside rows, and reruns are byte-identical.

Three layers, cheapest first: the validator and run-diagnosis diagnose's exit-2 path (no dbt at all,
each well under a second), one in-process dbt build of every planted fixture run (conftest.py;
hostile folder names among them), and two end-to-end run-diagnosis diagnose processes into a hostile
--out path for the rerun comparison.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from run_diagnosis import diagnose, validate_run
from run_diagnosis.dbt_runner import (
    DB_ENV_VAR,
    RUN_DIR_ENV_VAR,
    DbtBuildError,
    dbt_command,
    invoke,
    parsed_manifest,
)
from run_diagnosis.importers import canonical_files
from run_diagnosis.importers.canonical import write_run
from support.commands import run_diagnosis
from support.dbt_session import DB_NAME, HOSTILE_NAME, DbtSession, Diagnosis, FixtureRuns, MakeRun
from support.paths import REPO
from support.run_builder import RunBuilder

DIAGNOSE = run_diagnosis("diagnose")
TRAIN, EVAL, CONFIG = "fixture_train_log.csv", "fixture_eval_log.csv", "fixture_run_config.json"
VALIDATOR_BUDGET_SEC = 1.0  # CPU seconds of this process: other processes on the machine do not count
PAYLOAD_FILE = "pwned_by_folder_name.csv"
PAYLOAD_NAME = "{{ run_query(\"copy (select 42 as x) to '" + PAYLOAD_FILE + "'\") }}"


def written(
    folder: Path, edit: Callable[[Path], None] | None = None, builder: RunBuilder | None = None
) -> Path:
    (builder or RunBuilder()).write(folder)
    if edit is not None:
        edit(folder)
    return folder


def header_only(folder: Path, *names: str) -> None:
    """Cut each named file of the run to its header row."""
    for name in names:
        (folder / name).write_text((folder / name).read_text().splitlines()[0] + "\n")


def edit_config(**changes: object) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / CONFIG
        document = json.loads(path.read_text())
        document.update(changes)
        path.write_text(json.dumps(document))

    return edit


def run_cli(source: Path, out: Path) -> tuple[int, str, float]:
    """diagnose.main in this process, stderr captured: exit 2 must come before any dbt."""
    buffer = io.StringIO()
    started = time.process_time()
    with contextlib.redirect_stderr(buffer):
        code = diagnose.main([str(source), "--out", str(out)])
    return code, buffer.getvalue(), time.process_time() - started


# --- exit 2, named, before the build ---------------------------------------------------------

BAD_INPUTS: dict[str, tuple[Callable[[Path], None], str]] = {
    "duplicate header": (
        lambda f: (f / TRAIN).write_text((f / TRAIN).read_text().replace("shard_id", "grad_norm", 1)),
        "row 1 (header), column 4: column 'grad_norm' appears twice (columns 2 and 4)",
    ),
    "header only": (
        lambda f: header_only(f, TRAIN, EVAL),
        "no training rows (and no evaluation rows)",
    ),
    "utf-16 train log": (
        lambda f: (f / TRAIN).write_bytes((f / TRAIN).read_text().encode("utf-16")),
        "encoded as UTF-16 (little-endian, with BOM)",
    ),
    "utf-16 without BOM": (
        lambda f: (f / TRAIN).write_bytes((f / TRAIN).read_text().encode("utf-16-le")),
        "encoded as UTF-16 (little-endian, no BOM)",
    ),
    "utf-32 config": (
        lambda f: (f / CONFIG).write_bytes((f / CONFIG).read_text().encode("utf-32")),
        "encoded as UTF-32",
    ),
    "latin-1 byte": (
        lambda f: (f / TRAIN).write_bytes(
            (f / TRAIN).read_bytes().replace(b"step", "stép".encode("latin-1"), 1)
        ),
        "row 1, column 3: byte 0xe9 is not UTF-8",
    ),
    "deep config": (
        lambda f: (f / CONFIG).write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        "JSON nested deeper than 64 levels",
    ),
    "wrong config type": (edit_config(grad_clip_norm="one"), "key grad_clip_norm: expected a number or null"),
    "fractional step count": (edit_config(total_steps=240.5), "key total_steps: expected an integer"),
    "config not an object": (
        lambda f: (f / CONFIG).write_text("[1, 2]"),
        "expected a JSON object; found list",
    ),
    "broken JSON": (lambda f: (f / CONFIG).write_text('{"a": 1,'), "row 1, column 9: not valid JSON"),
    "too many fields": (
        lambda f: (f / TRAIN).write_text((f / TRAIN).read_text() + "241,1,2.0,0.5,0.0003,0.1,extra\n"),
        "column 7: 7 fields but the header has 6",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_exit_2_named_before_the_build(case: str, tmp_path: Path) -> None:
    edit, expected = BAD_INPUTS[case]
    source = written(tmp_path / "run", edit)
    code, stderr, elapsed = run_cli(source, tmp_path / "out")
    assert code == diagnose.EXIT_BAD_INPUT, stderr
    assert expected in stderr
    assert "fixture_" in stderr  # the file is named
    assert stderr.splitlines()[-1].startswith("diagnose: error: ") and "Traceback" not in stderr
    assert elapsed < VALIDATOR_BUDGET_SEC
    assert not (tmp_path / "out" / "dbt").exists()  # nothing reached dbt


def test_validator_cli_help_and_exit_codes(tmp_path: Path) -> None:
    validate = run_diagnosis("validate")
    usage = subprocess.run([*validate, "--help"], capture_output=True, text=True)
    assert usage.returncode == 0 and "usage: run-diagnosis validate" in usage.stdout
    good = subprocess.run([*validate, str(written(tmp_path / "ok"))], capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    bad = written(tmp_path / "bad", BAD_INPUTS["header only"][0])
    result = subprocess.run([*validate, str(bad)], capture_output=True, text=True)
    assert result.returncode == 2 and "no training rows" in result.stderr
    # a run that logged only its validation loss is not refused: it is diagnosed on that series
    eval_only = written(tmp_path / "eval_only", lambda f: header_only(f, TRAIN))
    result = subprocess.run([*validate, str(eval_only)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_validator_is_fast_on_a_200k_row_log(tmp_path: Path) -> None:
    folder = written(tmp_path / "big")
    rows = "".join(f"{s},{s % 30},3.0,0.5,0.0003,0.12\n" for s in range(1, 200_001))
    (folder / TRAIN).write_text("step,shard_id,loss,grad_norm,learning_rate,step_time_sec\n" + rows)
    started = time.process_time()
    validate_run.validate_run(folder)
    assert time.process_time() - started < VALIDATOR_BUDGET_SEC


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    header=st.text(alphabet="ab,", min_size=1, max_size=6),
    body=st.text(alphabet='ab ,\t\n"\r\x00', max_size=60),
)
def test_plain_rows_agrees_with_the_csv_reader(header: str, body: str) -> None:
    """The validator's line-by-line count of a plain CSV (no quote, CR or NUL) is the csv reader's:
    the same data rows, and None (the reader decides) whenever a row has more fields than the header."""
    text = header + "\n" + body
    records = list(csv.reader(io.StringIO(text, newline="")))
    width = len(records[0])
    plain = validate_run.plain_rows(text, width)
    too_wide = max((len(row) for row in records[1:]), default=0) > width
    if any(char in text for char in '"\r\x00') or too_wide:
        assert plain is None
    else:
        assert plain == sum(1 for row in records[1:] if any(cell.strip() for cell in row))


def test_bom_is_accepted_in_csv_and_config(tmp_path: Path) -> None:
    def add_boms(folder: Path) -> None:
        for name in (TRAIN, CONFIG):
            (folder / name).write_bytes(b"\xef\xbb\xbf" + (folder / name).read_bytes())

    folder = written(tmp_path / "run", add_boms)
    validate_run.validate_run(folder)
    run = canonical_files.load(folder)
    assert run.config["grad_clip_norm"] == 1.0 and "step" in run.train.columns


def test_non_finite_config_survives_the_import_as_text(tmp_path: Path) -> None:
    folder = written(
        tmp_path / "run", lambda f: (f / CONFIG).write_text((f / CONFIG).read_text().replace("0.003", "NaN"))
    )
    paths = write_run(canonical_files.load(folder), tmp_path / "canonical")
    assert json.loads(paths["config"].read_text())["lr_schedule"]["peak_lr"] == "NaN"
    validate_run.validate_run(tmp_path / "canonical")  # an impossible value is not an input error


def test_run_dir_var_is_refused_by_the_runner(tmp_path: Path) -> None:
    with pytest.raises(DbtBuildError, match="run_dir is not a var"):
        dbt_command(tmp_path / "t", tmp_path / "l", extra_vars={"run_dir": str(tmp_path)})


# --- in-process dbt: the planted runs, built with the session's others -------------------------
# The runs below are built with the other modules' fixture runs that need the structural tests,
# as the slowest of them does (conftest.py: one folder of run folders, one dbt build); each test
# reads its own run through a per-run view (dbt_session.Diagnosis with run_id). Runs built
# together give what each gives alone (test_warehouse.py). The folder holding them
# (HOSTILE_NAME) and two of the runs have hostile names, so the names reach the build as the run
# folder, as file paths and as run_ids.


def impossible_config_edit(folder: Path) -> None:
    """peak_lr NaN and grad_clip_norm -1."""
    text = (folder / CONFIG).read_text().replace('"peak_lr": 0.003', '"peak_lr": NaN')
    (folder / CONFIG).write_text(text.replace('"grad_clip_norm": 1.0', '"grad_clip_norm": -1'))


def cut(folder: Path) -> None:
    """The train log's last value cut mid-number, with no line end (a killed writer)."""
    text = (folder / TRAIN).read_text().rstrip("\n")
    (folder / TRAIN).write_text(text[:-3])


def negative_steps() -> RunBuilder:
    builder = RunBuilder()
    builder.train.loc[builder.train["step"].between(101, 104), "step"] *= -1
    return builder


def all_equal_steps() -> RunBuilder:
    builder = RunBuilder()
    builder.train["step"] = 5
    return builder


def one_row_log() -> RunBuilder:
    builder = RunBuilder()
    builder.train = builder.train.iloc[:1]
    return builder


@dataclasses.dataclass(frozen=True)
class Edited:
    """A fixture run written by its builder, then edited in place."""

    builder: RunBuilder
    edit: Callable[[Path], None]

    def write(self, folder: Path) -> Path:
        return written(folder, self.edit, self.builder)


# run_id (its folder's name) -> the run (conftest.py builds them with the session's others)
FIXTURE_RUNS: dict[str, MakeRun] = {
    HOSTILE_NAME: RunBuilder,
    PAYLOAD_NAME: RunBuilder,
    # a run whose LR is 8x the configured peak, with an impossible config
    "impossible-config": lambda: Edited(
        RunBuilder().plant_lr_scale(8).plant_clip_violation(100, 110, 3.0), impossible_config_edit
    ),
    "negative-steps-cut": lambda: Edited(negative_steps(), cut),
    "all-equal-steps": all_equal_steps,
    "one-row-log": one_row_log,
}
FIXTURE_RUNS_STRUCTURAL = True


@pytest.fixture(scope="module")
def planted(fixture_runs: FixtureRuns) -> dict[str, Diagnosis]:
    """Every planted run, one Diagnosis each (its `folder` the run's folder)."""
    planted = {run_id: fixture_runs[run_id] for run_id in FIXTURE_RUNS}
    assert all(diagnosis.folder.parent.name == HOSTILE_NAME for diagnosis in planted.values())
    return planted


# --- paths are data ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", [HOSTILE_NAME, PAYLOAD_NAME], ids=["jinja-glob-emoji", "run_query-payload"])
def test_folder_names_are_data_never_code(planted: dict[str, Diagnosis], name: str) -> None:
    diagnosis = planted[name]
    assert diagnosis.success, diagnosis.errors
    folder = diagnosis.folder
    config_path = diagnosis.table("stg_training__config")["config_path"].iloc[0]
    assert config_path == str(folder / CONFIG)  # not "run 49 ...": the name was not rendered
    audit = diagnosis.table("audit_summary")
    assert int(audit.loc[audit["file_kind"] == "train", "n_rows"].sum()) == 240
    assert not list(REPO.rglob(PAYLOAD_FILE)) and not list(folder.parents[1].rglob(PAYLOAD_FILE))


def test_run_dir_var_is_refused_by_dbt(dbt_session: DbtSession, tmp_path: Path) -> None:
    folder = written(tmp_path / "run")
    runner_args = [
        "build",
        "--project-dir",
        str(REPO),
        "--profiles-dir",
        str(REPO),
        "--select",
        "stg_training__config",
    ]
    runner_args += ["--vars", json.dumps({"run_dir": str(folder)}), "--target-path", str(tmp_path / "t")]
    runner_args += ["--log-path", str(tmp_path / "logs")]
    manifest = parsed_manifest(REPO, Path(DB_NAME).stem, True, {})
    env = {RUN_DIR_ENV_VAR: str(folder), DB_ENV_VAR: str(tmp_path / DB_NAME)}
    result = invoke(runner_args, env, manifest)
    assert not result.success
    assert "RUN_DIAGNOSIS_RUN_DIR" in str(result.exception or result.result)


# --- impossible and degenerate values ---------------------------------------------------------


@pytest.fixture(scope="module")
def impossible_config(planted: dict[str, Diagnosis]) -> Diagnosis:
    """peak_lr NaN and grad_clip_norm -1, on a run whose LR is 8x the configured peak."""
    return planted["impossible-config"]


def test_impossible_config_values_are_listed(impossible_config: Diagnosis) -> None:
    config = impossible_config.table("stg_training__config").iloc[0]
    assert config["impossible_fields"] == "peak_lr,grad_clip_norm"
    assert config["impossible_values"] == "peak_lr NaN; grad_clip_norm -1"
    assert config["unknown_fields"] == ""
    assert pd.isna(config["peak_lr"]) and pd.isna(config["grad_clip_norm"])


def test_impossible_config_is_a_medium_finding_and_stops_its_checks(impossible_config: Diagnosis) -> None:
    findings = impossible_config.findings().set_index("finding_id")
    finding = findings.loc["config_mismatch:impossible_values"]
    assert finding["severity"] == "medium"
    assert "peak_lr NaN" in finding["title"] and "grad_clip_norm -1" in finding["title"]
    assert not any(i.startswith(("grad_clip_violation", "lr_above_peak")) for i in findings.index)
    coverage = impossible_config.table("check_coverage").set_index("category")
    for category, field in [("lr_above_peak", "peak_lr"), ("grad_clip_violation", "grad_clip_norm")]:
        assert not coverage.loc[category, "could_run"]
        assert f"{field} impossible in the config" in coverage.loc[category, "reason"]


def test_cut_off_row_survives_the_import(tmp_path: Path) -> None:
    for name, edit, expected in [("cut", cut, True), ("whole", None, False)]:
        folder = written(tmp_path / name, edit)
        paths = write_run(canonical_files.load(folder), tmp_path / f"{name}-canonical")
        assert validate_run.carry_cut_off_row(folder, tmp_path / f"{name}-canonical") is expected
        assert paths["train"].read_bytes().endswith(b"\n") is not expected


def set_aside(diagnosis: Diagnosis) -> pd.DataFrame:
    audit = diagnosis.table("int_raw_rows_audited")
    return audit[(audit["file_kind"] == "train") & (audit["outcome"] == "set_aside")]


def test_negative_steps_and_a_cut_off_row_are_set_aside(planted: dict[str, Diagnosis]) -> None:
    diagnosis = planted["negative-steps-cut"]  # built with the structural tests
    assert diagnosis.success, diagnosis.errors
    rows = set_aside(diagnosis)
    assert rows["reason"].str.contains("is negative").sum() == 4
    assert rows["reason"].str.contains("cut off mid-row").sum() == 1
    summary = diagnosis.table("audit_summary")
    train = summary[summary["file_kind"] == "train"]
    assert train["n_rows"].sum() == train["raw_rows"].iloc[0] == 240
    findings = diagnosis.findings()
    assert not any(re.search(r"(?<![\w])-10[1-4]\b", title) for title in findings["title"])  # no step -104
    assert "log_quality:train_rows_set_aside" in set(findings["finding_id"])


def test_all_equal_steps_are_set_aside_not_a_replay(planted: dict[str, Diagnosis]) -> None:
    diagnosis = planted["all-equal-steps"]
    assert diagnosis.success, diagnosis.errors
    assert len(set_aside(diagnosis)) == 240
    assert set_aside(diagnosis)["reason"].str.contains("every row logs step 5").all()
    ids = set(diagnosis.findings()["finding_id"])
    assert "step_sequence:replayed" not in ids and "log_quality:train_rows_set_aside" in ids


def test_one_row_log_has_no_contamination_finding(planted: dict[str, Diagnosis]) -> None:
    diagnosis = planted["one-row-log"]
    assert diagnosis.success, diagnosis.errors
    assert not diagnosis.findings()["category"].eq("eval_contamination").any()
    coverage = diagnosis.table("check_coverage").set_index("category")
    assert "fewer than 10 training losses" in coverage.loc["eval_contamination", "reason"]


# --- end to end: hostile --out path, nothing outside it, byte-identical rerun ---------------------


def test_hostile_out_path_and_byte_identical_rerun(tmp_path: Path) -> None:
    source = written(tmp_path / "in {{ 7*7 }} [x]")
    out = tmp_path / "out ? # [x] {{ 7*7 }} 🙂"
    outputs = []
    for _ in range(2):
        result = subprocess.run(
            [*DIAGNOSE, str(source), "--out", str(out)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        # report.md names dbt's generated_at until the report drops it (issue 13): masked here
        report = re.sub(rb"\d{4}-\d\d-\d\dT[\d:.]+Z?", b"<time>", (out / "report.md").read_bytes())
        outputs.append({"findings.json": (out / "findings.json").read_bytes(), "report.md": report})
    assert outputs[0]["findings.json"] == outputs[1]["findings.json"]
    assert outputs[0]["report.md"] == outputs[1]["report.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([source.name, out.name])
    assert (out / "diagnosis.duckdb").is_file()
