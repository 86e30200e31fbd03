"""Staging flags every defect a real log has, the audit accounts for every raw
row, and hostile inputs get a clear error (or are read safely)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from support.dbt_session import DbtSession, Diagnosis, FixtureRuns, MakeRun, fixture_run
from support.run_builder import RunBuilder


def write_and_edit(builder: RunBuilder, folder: Path, edit: Callable[[Path], None]) -> Path:
    builder.write(folder)
    edit(folder)
    return folder


def with_event(builder: RunBuilder, step: int, text: str) -> RunBuilder:
    builder.events = pd.concat([builder.events, pd.DataFrame([(step, text)], columns=["step", "event"])])
    return builder


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def test_clean_fixture_has_no_flags(clean_run: Diagnosis) -> None:
    for model in [
        "stg_training__steps",
        "stg_training__evals",
        "stg_training__shards",
        "stg_training__events",
    ]:
        assert not clean_run.table(model)["has_defect"].any(), model
    audit = clean_run.table("audit_summary")
    assert set(audit["outcome"]) == {"kept"}


def test_audit_counts_add_up_to_raw_rows(clean_run: Diagnosis) -> None:
    audit = clean_run.table("audit_summary")
    totals = audit.groupby("file_kind").agg(n_rows=("n_rows", "sum"), raw_rows=("raw_rows", "max"))
    assert (totals["n_rows"] == totals["raw_rows"]).all()
    assert totals.loc["train", "raw_rows"] == 240
    assert totals.loc["eval", "raw_rows"] == 13


def defective_run() -> RunBuilder:
    """One run with every staging defect planted once, each on its own row."""
    builder = RunBuilder().plant_duplicate_row(30).plant_swap(100).plant_percent_accuracy([60])
    builder.train["loss"] = builder.train["loss"].map(lambda v: f"{v:.6g}")
    builder.train["step_time_sec"] = builder.train["step_time_sec"].map(lambda v: f"{v:.6g}")
    train = builder.train
    train.loc[train["step"] == 40, "loss"] = ""
    train.loc[train["step"] == 41, "loss"] = "n/a"
    train.loc[train["step"] == 42, "loss"] = "nan"
    train.loc[train["step"] == 43, "loss"] = "inf"
    train.loc[train["step"] == 44, "step_time_sec"] = "-0.1"
    train.loc[train["step"] == 45, "step_time_sec"] = "0"
    shards = builder.shards.astype(object)
    shards.loc[shards["shard_id"] == 3, "source"] = "  GitHub_Code "
    extra = pd.DataFrame([{"shard_id": 5, "n_examples": 999, "source": "licenses"}])
    builder.shards = pd.concat([shards, extra], ignore_index=True)
    builder.events = pd.concat(
        [builder.events, pd.DataFrame([(60, "checkpoint saved: step_000050.pt")], columns=["step", "event"])]
        * 1,
        ignore_index=True,
    )
    builder.events = pd.concat([builder.events, builder.events.tail(1)], ignore_index=True)
    return builder


@pytest.fixture(scope="module")
def defective(fixture_runs: FixtureRuns) -> Diagnosis:
    return fixture_runs["defective"]


@pytest.mark.parametrize(
    ("step", "flag"),
    [
        (40, "is_loss_missing"),
        (41, "is_loss_non_numeric"),
        (42, "is_loss_non_finite"),
        (43, "is_loss_non_finite"),
        (44, "is_step_time_non_positive"),
        (45, "is_step_time_non_positive"),
    ],
)
def test_value_defects_are_flagged(defective: Diagnosis, step: int, flag: str) -> None:
    steps = defective.table("stg_training__steps")
    flagged = steps.loc[steps[flag].fillna(False).astype(bool), "step"].tolist()
    assert step in flagged
    assert steps.loc[steps["step"] == step, "has_defect"].all()


def test_non_finite_loss_is_kept_as_text_and_read_as_missing(defective: Diagnosis) -> None:
    steps = defective.table("stg_training__steps").set_index("step")
    assert steps.loc[42, "loss_raw"] == "nan"
    assert pd.isna(steps.loc[42, "loss"])


def test_row_defects_are_flagged(defective: Diagnosis) -> None:
    steps = defective.table("stg_training__steps")
    assert steps.loc[steps["is_exact_duplicate"], "step"].tolist() == [30]
    assert steps.loc[steps["is_out_of_file_order"].fillna(False).astype(bool), "step"].tolist() == [100]
    evals = defective.table("stg_training__evals").set_index("step")
    assert evals.loc[60, "is_accuracy_percent"]
    assert 0 < evals.loc[60, "val_accuracy"] < 1
    assert evals.loc[60, "val_accuracy_logged"] == pytest.approx(100 * evals.loc[60, "val_accuracy"])


def test_shard_defects_are_flagged(defective: Diagnosis) -> None:
    shards = defective.table("stg_training__shards")
    variant = shards[shards["is_source_label_variant"].fillna(False).astype(bool)]
    assert variant["shard_id"].tolist() == ["3"]
    assert variant["source"].tolist() == ["github_code"]
    conflicting = shards[shards["is_conflicting_duplicate"].fillna(False).astype(bool)]
    assert sorted(conflicting["n_examples"].tolist()) == [256, 999]
    assert shards.loc[shards["is_duplicate_shard_row"], "n_examples"].tolist() == [999]


def test_duplicate_events_are_flagged(defective: Diagnosis) -> None:
    events = defective.table("stg_training__events")
    assert events["is_exact_duplicate"].sum() == 1


def test_audit_accounts_for_every_defect(defective: Diagnosis) -> None:
    audit = defective.table("int_raw_rows_audited")
    train = audit[audit["file_kind"] == "train"]
    assert len(train) == 241
    assert train.loc[train["outcome"] == "set_aside", "reason"].tolist() == [
        "exact duplicate of an earlier row"
    ]
    repaired = train[train["outcome"] == "repaired"].set_index("step")["reason"]
    assert "non-finite" in repaired.loc[42]
    assert "zero or negative" in repaired.loc[44]
    assert "out of step order" in repaired.loc[100]
    summary = defective.table("audit_summary")
    assert (
        summary.groupby("file_kind")["n_rows"].sum() == summary.groupby("file_kind")["raw_rows"].max()
    ).all()
    shards = audit[audit["file_kind"] == "shards"]
    assert "different values" in shards.loc[shards["outcome"] == "set_aside", "reason"].item()


@fixture_run(lambda: RunBuilder().plant_restart(crash_after=90, resume_from=50))
def test_event_kinds_and_resumed_step(diagnosis: Diagnosis) -> None:
    events = diagnosis.table("int_events_classified").set_index("event_text")
    kinds = events["event_kind"].to_dict()
    assert kinds["run finished: exit code 0"] == "run_end"
    assert kinds["checkpoint saved: step_000050.pt"] == "checkpoint_saved"
    resume = events.loc["job restarted by scheduler; resuming from checkpoint step_000050.pt"]
    assert (resume["event_kind"], resume["resumed_from_step"]) == ("restart", 50)
    assert events.loc[events["event_kind"] == "crash"].shape[0] == 1


@pytest.mark.parametrize(
    ("text", "kind", "named_step"),
    [
        ("loading checkpoint from /ckpt at iteration 5000", "restart", 5000),
        ("Restoring states from the checkpoint path at /ckpt/epoch=0-step=100.ckpt", "restart", 100),
        (
            "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536",
            "loss_scale_overflow",
            None,
        ),
        ("saved checkpoint at iteration 300", "checkpoint_saved", 300),
        ("CUDA out of memory. Tried to allocate 2.00 GiB", "crash", None),
        # an importer's: an elapsed clock that went back while the counter carried on (a new process)
        ("run resumed: 'time' went backwards (a new process)", "restart", None),
        ("the cat sat on the mat", "other", None),
    ],
)
@fixture_run(lambda text: with_event(RunBuilder(), 120, text))
def test_event_phrasings_from_other_tools(
    diagnosis: Diagnosis, text: str, kind: str, named_step: int | None
) -> None:
    events = diagnosis.table("int_events_classified").set_index("event_text")
    assert events.loc[text, "event_kind"] == kind
    got = events.loc[text, "named_step"]
    assert (pd.isna(got) and named_step is None) or got == named_step


# --- hostile inputs --------------------------------------------------------------------


def quoted_run() -> RunBuilder:
    """Quotes, commas and unicode in events and shard sources, a huge loss and a huge step."""
    builder = RunBuilder()
    builder.events = pd.concat(
        [
            builder.events,
            pd.DataFrame(
                [(77, 'note: "quoted", with, commas; ünïcødé ✓'), (78, "it's fine")],
                columns=["step", "event"],
            ),
        ]
    )
    builder.shards = builder.shards.astype(object)
    builder.shards.loc[0, "source"] = "données_wiki"
    builder.train = builder.train.astype(object)
    builder.train.loc[builder.train["step"] == 50, "loss"] = "1e400"
    builder.train.loc[builder.train["step"] == 51, "step"] = "99999999999999999999"
    return builder


QUOTED = 'it\'s a "run" folder'  # the run's folder name, so its run_id and file paths
# built with the structural tests (keys, ranges, accepted values): they must hold on every defect
# staging repairs or sets aside (conftest.py)
FIXTURE_RUNS: dict[str, MakeRun] = {"defective": defective_run, QUOTED: quoted_run}
FIXTURE_RUNS_STRUCTURAL = True


def test_quotes_commas_unicode_and_huge_numbers(fixture_runs: FixtureRuns) -> None:
    diagnosis = fixture_runs[QUOTED]
    assert diagnosis.success, diagnosis.errors
    assert diagnosis.folder.name == QUOTED
    events = diagnosis.table("stg_training__events")["event_text"].tolist()
    assert 'note: "quoted", with, commas; ünïcødé ✓' in events
    assert "it's fine" in events
    steps = diagnosis.table("stg_training__steps")
    assert steps.loc[steps["step"] == 50, "is_loss_non_finite"].item()
    invalid = steps[steps["is_step_invalid"]]
    assert invalid["step_raw"].tolist() == ["99999999999999999999"]
    audit = diagnosis.table("int_raw_rows_audited")
    assert (
        audit.loc[(audit["file_kind"] == "train") & (audit["outcome"] == "set_aside"), "reason"]
        .str.contains("not an integer")
        .any()
    )
    assert "données_wiki" in diagnosis.table("int_shards_resolved")["source"].tolist()


# a file that cannot be read stops the build in staging, whatever else is selected: the
# error tests build the staging models only (the models downstream would all be skipped)
STAGING = "path:models/staging"


def test_wrong_header_names_the_file_and_columns(dbt_session: DbtSession, tmp_path: Path) -> None:
    folder = write_and_edit(
        RunBuilder(),
        tmp_path / "run",
        lambda f: replace_in(f / "fixture_eval_log.csv", "val_loss", "valid_loss"),
    )
    diagnosis = dbt_session.build(folder, select=STAGING)
    assert not diagnosis.success
    message = " ".join(diagnosis.errors)
    assert "fixture_eval_log.csv row 1 (header): missing column(s) val_loss" in message


def test_missing_file_names_the_file(dbt_session: DbtSession, tmp_path: Path) -> None:
    folder = write_and_edit(RunBuilder(), tmp_path / "run", lambda f: (f / "fixture_shard_info.csv").unlink())
    diagnosis = dbt_session.build(folder, select=STAGING)
    assert not diagnosis.success
    assert "missing run file: no file ending in shard_info.csv" in " ".join(diagnosis.errors)


def test_empty_file_names_the_file(dbt_session: DbtSession, tmp_path: Path) -> None:
    folder = write_and_edit(
        RunBuilder(), tmp_path / "run", lambda f: (f / "fixture_run_events.csv").write_text("")
    )
    diagnosis = dbt_session.build(folder, select=STAGING)
    assert not diagnosis.success
    assert "fixture_run_events.csv is empty" in " ".join(diagnosis.errors)


def test_missing_config_key_is_an_error_naming_it(dbt_session: DbtSession, tmp_path: Path) -> None:
    def drop_clip(folder: Path) -> None:
        path = folder / "fixture_run_config.json"
        config = json.loads(path.read_text())
        del config["grad_clip_norm"]
        path.write_text(json.dumps(config))

    diagnosis = dbt_session.build(write_and_edit(RunBuilder(), tmp_path / "run", drop_clip), select=STAGING)
    assert not diagnosis.success
    assert "missing required key grad_clip_norm" in " ".join(diagnosis.errors)


@fixture_run(lambda: RunBuilder().plant_config(grad_clip_norm=None))
def test_null_config_key_is_a_declared_unknown(diagnosis: Diagnosis) -> None:
    assert diagnosis.success, diagnosis.errors
    coverage = diagnosis.table("check_coverage").set_index("category")
    assert not coverage.loc["grad_clip_violation", "could_run"]
    assert "grad_clip_norm unknown" in coverage.loc["grad_clip_violation", "reason"]
    unknown = diagnosis.findings().set_index("finding_id").loc["config_mismatch:unknown_fields"]
    assert unknown["title"] == "The config lacks grad_clip_norm, so the checks that need it could not run."
