"""Every trend the report's story asserts is computed by a rule (the run_story mart, its story_*
vars) and said only when the data supports it (issue 26). Each claim has a fixture run where it
must be said and one where it must not:

- "stopped improving": a best evaluation well before the last one; never when the best is the last;
- "almost no net progress": a small fall after most of the gain; never for a fall of 11% or 26%;
- "crashed": a resume after a logged crash; never for a planned stop/resume (told as a stop,
  reported once, no "redoing 0 steps" or "every 0 steps of risk");
- a log that ends early (a pruned or early-stopped trial) or is cut off mid-row is said first,
  before any judgement, and is not a config problem.
"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from run_diagnosis.report_content import build_double_check
from run_diagnosis.report_data import ReportData, load_report_data
from run_diagnosis.report_story import PageOne, build_page_one
from run_diagnosis.run_files import run_file
from support.dbt_session import Diagnosis, fixture_run
from support.run_builder import RunBuilder


def page_one(diagnosis: Diagnosis) -> tuple[PageOne, ReportData]:
    data = load_report_data(diagnosis.db_path, diagnosis.target_path, diagnosis.run_id)
    return build_page_one(data, build_double_check(data).consistency), data


def story_text(page: PageOne) -> str:
    return " ".join([*page.what_happened, *(answer for _, answer in page.questions)])


def cut_off_run(folder: Path) -> Path:
    """A healthy run whose train log was copied while it was being written: the last row is cut
    in the middle (no line end)."""
    builder = RunBuilder()
    builder.write(folder)
    train_log = run_file(folder, "train", builder.prefix)
    text = train_log.read_text(encoding="utf-8").rstrip("\n")
    train_log.write_text(text[: text.rindex(",")], encoding="utf-8")
    return folder


# ---------------------------------------------------------------- "stopped improving"


@fixture_run(lambda: RunBuilder().plant_overfitting(best_at=100, rise=0.08))
def test_stopped_improving_is_said_when_the_best_lies_well_before_the_end(diagnosis: Diagnosis) -> None:
    page, data = page_one(diagnosis)
    assert data.story["val_trend"] == "stopped_improving" and not data.story["best_is_last"]
    assert "then stopped improving" in page.what_happened[1]
    assert "Training stopped improving validation loss well before the end" in story_text(page)


@fixture_run(lambda: RunBuilder())
def test_a_best_evaluation_at_the_end_is_never_stopped_improving(diagnosis: Diagnosis) -> None:
    page, data = page_one(diagnosis)
    assert data.story["best_is_last"] and data.story["val_trend"] != "stopped_improving"
    assert "stopped improving" not in story_text(page)


# ---------------------------------------------------------------- "almost no net progress"


@fixture_run(lambda: RunBuilder().plant_val_curve(start=12.0, plateau_at=80, late_fall=0.03))
def test_a_small_late_fall_is_almost_no_net_progress(diagnosis: Diagnosis) -> None:
    page, data = page_one(diagnosis)
    assert data.story["val_trend"] == "plateaued"
    assert data.story["late_fall_share"] == pytest.approx(0.03, abs=0.002)
    assert "after step 80 the run made almost no net progress" in story_text(page)
    assert "(-3.0%)" in story_text(page) and "(its best)" in story_text(page)


@pytest.mark.parametrize("late_fall", [0.11, 0.26])
@fixture_run(lambda late_fall: RunBuilder().plant_val_curve(start=60.0, plateau_at=80, late_fall=late_fall))
def test_a_fall_of_11_or_26_percent_is_progress(diagnosis: Diagnosis, late_fall: float) -> None:
    page, data = page_one(diagnosis)
    assert data.story["late_fall_share"] == pytest.approx(late_fall, abs=0.002)
    assert data.story["val_trend"] == "still_improving"
    text = story_text(page)
    assert "almost no net progress" not in text and "stopped improving" not in text
    assert "still improving at the end" in text


# ---------------------------------------------------------------- "crashed"


@fixture_run(lambda: RunBuilder().plant_restart(crash_after=130, resume_from=100))
def test_a_resume_after_a_logged_crash_is_a_crash(diagnosis: Diagnosis) -> None:
    page, data = page_one(diagnosis)
    assert data.story["n_restarts"] == 1 and data.story["n_crash_restarts"] == 1
    assert (
        "It crashed and was resumed once: at step 130 from the checkpoint of step 100." in page.what_happened
    )


@fixture_run(lambda: RunBuilder().plant_stop_resume(at=120))
def test_a_planned_stop_and_resume_is_not_a_crash(diagnosis: Diagnosis) -> None:
    page, data = page_one(diagnosis)
    assert data.story["n_restarts"] == 1 and data.story["n_crash_restarts"] == 0
    text = story_text(page)
    assert "crash" not in text.replace("no crash logged", "")
    assert "It stopped once with no crash logged and was resumed: at step 120" in text
    restarts = [f for f in data.findings if f["category"] == "run_restart"]
    assert len(restarts) == 1, [f["title"] for f in restarts]  # the one resume, reported once
    restart = restarts[0]
    assert "crashed" not in restart["title"] and "no crash was logged" in restart["title"]
    assert "redoing 0 steps" not in restart["title"]
    assert "steps of risk" not in restart["recommendation"]  # one step lost: no checkpointing advice


# ---------------------------------------------------------------- the log's end, said first


@fixture_run(lambda: RunBuilder().plant_early_stop(at=150))
def test_an_early_stop_is_said_first_and_is_no_config_problem(diagnosis: Diagnosis) -> None:
    page, data = page_one(diagnosis)
    ids = {f["finding_id"] for f in data.findings}
    assert "run_ended_early:stopped_early" in ids and "config_mismatch:total_steps" not in ids
    assert page.what_happened[0].startswith(
        "The log ends at step 150 of 240 planned (62.5%) with no crash logged"
    )
    assert "a pruned or early-stopped trial" in page.what_happened[0]
    assert data.story["end_kind"] == "stopped_early"


@fixture_run(lambda: cut_off_run(Path(tempfile.mkdtemp(prefix="cut_off_")) / "run"))
def test_a_cut_off_log_is_said_first(diagnosis: Diagnosis) -> None:
    page, data = page_one(diagnosis)
    assert data.story["end_kind"] == "partial_copy"
    # the cut row is set aside; the evaluation log reaches step 240
    said_first = page.what_happened[0]
    assert said_first.startswith("The log is a partial copy: it ends at step 240 with its last row cut off")
    assert "covers steps 1-240 only" in said_first


@fixture_run(lambda: RunBuilder())
def test_a_complete_log_says_nothing_of_its_end(diagnosis: Diagnosis) -> None:
    page, data = page_one(diagnosis)
    assert data.story["end_kind"] == "complete"
    assert not [f for f in data.findings if f["category"] == "run_ended_early"]
    assert page.what_happened[0].startswith("The run ")


# ---------------------------------------------------------------- rows and steps


@fixture_run(lambda: RunBuilder().plant_epochs(2).plant_interval_mean_logging(10))
def test_rows_and_steps_are_named_apart(diagnosis: Diagnosis) -> None:
    """A log written every 10 steps: the story counts rows as rows, and an epoch's steps are
    the steps trained, not the rows logged."""
    page, data = page_one(diagnosis)
    assert data.story["is_sparse_log"] and data.story["logging_interval"] == 10
    assert "(24 training rows logged, one every 10 steps)" in page.what_happened[0]
    repetition = next(f for f in data.findings if f["category"] == "data_repetition")
    first, last, rows = map(
        int, re.findall(r"epoch 1 = steps (\d+)-(\d+) \((\d+) logged rows\)", repetition["evidence"])[0]
    )
    # the steps trained and the rows logged, each named as such (about one row per 10 steps)
    assert rows <= (last - first) // 10 + 1 < last - first + 1
    assert re.search(
        r"steps \d+-240 re-read examples already seen \(\d+ of 24 logged rows\)", repetition["title"]
    )


def test_the_fixture_cut_off_run_ends_mid_row(tmp_path: Path) -> None:
    """The cut-off fixture really ends without a line end (so the build must set it aside)."""
    folder = cut_off_run(tmp_path / "run")
    raw = run_file(folder, "train", RunBuilder.prefix).read_bytes()
    assert not raw.endswith(b"\n") and len(pd.read_csv(run_file(folder, "train", RunBuilder.prefix))) == 240


# ---------------------------------------------------------------- a curve that falls at chance


@fixture_run(lambda: RunBuilder().plant_uniform_guess_start(10, math.log(10) * 0.965, 0.126))
def test_a_curve_that_falls_at_chance_says_it_stayed_there(diagnosis: Diagnosis) -> None:
    page, _ = page_one(diagnosis)
    assert "still improving" in page.what_happened[1] or "fell" in page.what_happened[1]
    assert "near the loss of a uniform guess (2.303: no_learning:chance_level)" in page.what_happened[1]


@fixture_run(lambda: RunBuilder().plant_uniform_guess_start(10, math.log(10) * 0.3, 0.525))
def test_a_curve_that_leaves_chance_says_nothing_of_it(diagnosis: Diagnosis) -> None:
    page, _ = page_one(diagnosis)
    assert "uniform guess" not in " ".join(page.what_happened)
