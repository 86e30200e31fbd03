"""Judgement against chance and resume integrity (docs/judgement.md), on fixture runs.

Chance: a run is judged against the loss of a uniform guess, ln(vocabulary) or ln(classes).
Each defect has a healthy control that must not fire: a from-scratch run stuck near ln V
(and one that learns), a fine-tune at an LR far above the usual range whose validation loss
never beats its first value (and one at a usual LR), a classifier near ln(classes) (and one
that learns, and one whose training loss falls while validation stays at chance).
Resume: every resume boundary is checked for an LR discontinuity, a restarted warmup, data
replayed or skipped and a loss jump; a clean resume fires none of them.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from support.dbt_session import Diagnosis, fixture_run
from support.run_builder import RunBuilder

ABOVE_LOW = {"critical", "high", "medium"}
LN_GPT2 = math.log(50257)
LN_LLAMA = math.log(32000)
RESUME_PREFIXES = (
    "lr_schedule_mismatch:resume_",
    "loss_spikes:resume_",
    "data_repetition:resume_",
    "data_skipped:",
)


def finding(diagnosis: Diagnosis, finding_id: str) -> pd.Series:
    found = diagnosis.findings().set_index("finding_id")
    assert finding_id in found.index, diagnosis.findings()[["finding_id", "severity", "title"]].to_string()
    return found.loc[finding_id]


def ids_of(diagnosis: Diagnosis, *categories: str) -> list[str]:
    findings = diagnosis.findings()
    return sorted(findings.loc[findings["category"].isin(categories), "finding_id"])


def reference(diagnosis: Diagnosis) -> pd.Series:
    return diagnosis.query("select * from main.int_runs_referenced").iloc[0]


# --- from scratch -------------------------------------------------------------------------


def from_scratch(end_share: float, warmup_steps: int = 20, **config: object) -> RunBuilder:
    """A GPT-2-vocabulary model from scratch: it starts at ln V and ends at end_share x ln V."""
    builder = RunBuilder(warmup_steps=warmup_steps).plant_config(vocab_size=50257, **config)
    return builder.plant_loss_curve(
        LN_GPT2 * 1.01, LN_GPT2 * end_share, LN_GPT2 * 1.01, LN_GPT2 * (end_share + 0.01)
    )


@fixture_run(lambda: from_scratch(0.97))
def test_from_scratch_stuck_at_ln_vocab_is_no_learning(diagnosis: Diagnosis) -> None:
    # the loss fell 4% (beyond its noise, so not "flat"), but it is still at a uniform guess
    row = finding(diagnosis, "no_learning:chance_level")
    assert row["severity"] == "high"
    assert row["expected_value"] == pytest.approx(LN_GPT2, rel=1e-6)
    assert "vocab_size from the config" in row["evidence"]
    assert not ids_of(diagnosis, "underfitting", "overfitting")
    ref = reference(diagnosis)
    assert (ref["chance_basis"], ref["chance_confidence"], ref["regime"]) == (
        "vocab_size",
        "high",
        "from_scratch",
    )


@fixture_run(lambda: from_scratch(0.45))
def test_from_scratch_that_learns_is_not_judged_at_chance(diagnosis: Diagnosis) -> None:
    assert not ids_of(diagnosis, "no_learning", "underfitting", "overfitting", "schedule_sanity")
    assert reference(diagnosis)["regime"] == "from_scratch"


@fixture_run(lambda: from_scratch(0.93, warmup_steps=300))
def test_warmup_longer_than_the_run_is_the_cause_of_ending_near_chance(diagnosis: Diagnosis) -> None:
    symptom = finding(diagnosis, "underfitting:near_chance")
    assert symptom["severity"] in ABOVE_LOW
    assert symptom["caused_by"] == "schedule_sanity:warmup_covers_run"
    cause = finding(diagnosis, "schedule_sanity:warmup_covers_run")
    assert cause["severity"] in {"critical", "high"}
    assert cause["harm_rank"] < symptom["harm_rank"]


@fixture_run(lambda: from_scratch(0.93, warmup_steps=300, total_steps=1000, decay_steps=1000))
def test_log_stopped_inside_the_warmup_of_a_longer_run_is_too_early_to_judge(diagnosis: Diagnosis) -> None:
    # the configured schedule is fine for 1000 steps; the log stops at 240, inside the warmup (the LR
    # still rising): not learning yet is what a run in warmup does, so low, and no cause named
    symptom = finding(diagnosis, "underfitting:near_chance")
    assert symptom["severity"] == "low"
    assert "too early to judge" in symptom["evidence"]
    assert pd.isna(symptom["caused_by"])
    assert not ids_of(diagnosis, "schedule_sanity")


@fixture_run(lambda: from_scratch(0.93, warmup_steps=300, total_steps=None))
def test_warmup_longer_than_a_run_of_unknown_length_is_the_cause(diagnosis: Diagnosis) -> None:
    # without total_steps the log is the run: its warmup never ended
    symptom = finding(diagnosis, "underfitting:near_chance")
    assert symptom["severity"] == "medium"
    assert symptom["caused_by"] == "schedule_sanity:warmup_covers_run"


def no_lr_logged(warmup_steps: int) -> RunBuilder:
    """A run that learns, with a configured warmup but no configured length and no logged LR."""
    builder = RunBuilder().plant_config(total_steps=None, decay_steps=None, warmup_steps=warmup_steps)
    builder.train["learning_rate"] = np.nan
    return builder


@fixture_run(lambda: no_lr_logged(300))
def test_warmup_longer_than_the_logged_run_without_a_length_or_an_lr_is_medium(diagnosis: Diagnosis) -> None:
    # the training log's end is the only length to hold the warmup against: it may have stopped
    # early, so medium rather than high
    row = finding(diagnosis, "schedule_sanity:warmup_covers_run")
    assert row["severity"] == "medium"
    assert "the last logged training step (no length configured, no LR logged) 240" in row["evidence"]


@fixture_run(lambda: no_lr_logged(100))
def test_warmup_shorter_than_a_logged_run_without_length_or_lr_is_no_finding(diagnosis: Diagnosis) -> None:
    assert not ids_of(diagnosis, "schedule_sanity")


@fixture_run(lambda: from_scratch(0.45, warmup_steps=300, total_steps=1000, decay_steps=1000))
def test_run_stopped_inside_its_warmup_that_learns_is_no_finding(diagnosis: Diagnosis) -> None:
    assert not ids_of(diagnosis, "schedule_sanity", "no_learning", "underfitting")


# --- fine-tune ----------------------------------------------------------------------------


def fine_tune(peak_lr: float, val_end: float, rise: float) -> RunBuilder:
    """A Llama-vocabulary model fine-tuned from 2.0 (a pretrained start, far below ln V)."""
    builder = RunBuilder(peak_lr=peak_lr, min_lr=peak_lr / 10)
    builder.plant_config(vocab_size=32000, optimizer={"name": "adamw_torch"})
    return builder.plant_loss_curve(2.0, 1.6, 2.05, val_end, rise=rise)


@fixture_run(lambda: fine_tune(5e-2, 2.4, rise=0.4))
def test_fine_tune_at_lr_far_above_usual_is_not_learning(diagnosis: Diagnosis) -> None:
    # the loss rises through warmup; validation never beats its first value: not "overfitting,
    # keep the early checkpoint" but a run that did not learn, because of the LR
    assert not ids_of(diagnosis, "overfitting")
    symptom = finding(diagnosis, "no_learning:no_val_gain")
    assert symptom["severity"] == "high"
    assert symptom["caused_by"] == "schedule_sanity:lr_far_above_usual"
    cause = finding(diagnosis, "schedule_sanity:lr_far_above_usual")
    assert cause["severity"] == "high"
    assert "fine tune" in cause["title"] and "adam" in cause["title"]
    assert reference(diagnosis)["regime"] == "fine_tune"


@fixture_run(lambda: fine_tune(2e-5, 1.7, rise=0.0))
def test_fine_tune_at_a_usual_lr_that_learns(diagnosis: Diagnosis) -> None:
    assert not ids_of(diagnosis, "no_learning", "underfitting", "overfitting", "schedule_sanity")


@fixture_run(lambda: fine_tune(2e-5, 2.4, rise=0.0))
def test_validation_that_never_improved_is_at_most_medium_overfitting(diagnosis: Diagnosis) -> None:
    # a usual LR, a training loss that falls 20%, validation rising from its first value: it may be
    # overfitting that began before the first evaluation, but that validation ever improved is not shown
    row = finding(diagnosis, "overfitting:0")
    assert row["detector_severity"] == "medium"
    assert "never improved meaningfully on its first evaluation" in row["evidence"]


# --- classifier ---------------------------------------------------------------------------


def classifier(train_end: float, val_end: float) -> RunBuilder:
    """A 4-class classifier: a fresh head starts at ln 4; accuracy logged off the 1/k rates."""
    builder = RunBuilder().plant_config(num_classes=4)
    builder.plant_loss_curve(math.log(4) * 1.01, train_end, math.log(4) * 1.01, val_end)
    builder.evals["val_accuracy"] = np.linspace(0.27, 0.6 if val_end < 1 else 0.28, len(builder.evals))
    return builder


@fixture_run(lambda: classifier(math.log(4) * 0.98, math.log(4) * 0.985))
def test_classifier_near_ln_classes_is_no_learning(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "no_learning:chance_level")
    assert row["severity"] == "high"
    assert row["expected_value"] == pytest.approx(math.log(4), rel=1e-6)
    assert reference(diagnosis)["chance_basis"] == "num_classes"


@fixture_run(lambda: classifier(0.3, math.log(4) * 0.99))
def test_classifier_memorising_while_validation_stays_at_chance_is_not_overfitting(
    diagnosis: Diagnosis,
) -> None:
    # training loss falls to 0.3 but validation never leaves the uniform-guess level
    assert not ids_of(diagnosis, "overfitting")
    row = finding(diagnosis, "no_learning:chance_level")
    assert row["severity"] == "high"
    # the title says what was learned: the training data, nothing that holds on held-out data
    assert "the training loss fell to 0.3" in row["title"] and "fit its training data only" in row["title"]
    assert "nothing was learned" not in row["title"]


@fixture_run(lambda: classifier(0.3, 0.5))
def test_classifier_that_learns(diagnosis: Diagnosis) -> None:
    # (the control of the one below too: its validation loss goes under ln 2)
    assert not ids_of(diagnosis, "no_learning", "underfitting", "overfitting")


@fixture_run(lambda: RunBuilder().plant_loss_curve(1.5, 0.3, 0.712, 0.697))
def test_validation_that_never_beats_a_coin_flip_is_no_learning(diagnosis: Diagnosis) -> None:
    """No class count is known, the first evaluation (0.712) is not at a uniform guess, and the training
    loss falls to 0.3, but the validation loss never goes under ln 2 (0.6931): a two-class model at
    chance on held-out data (medium: another task can sit near 0.693 by coincidence), not overfitting."""
    row = finding(diagnosis, "no_learning:chance_val_loss")
    assert row["severity"] == "medium"
    assert row["observed_value"] == pytest.approx(0.696, abs=0.002)
    assert not ids_of(diagnosis, "overfitting")


@fixture_run(
    lambda: (
        RunBuilder()
        .plant_loss_curve(1.5, 0.3, 0.712, 0.697)
        .plant_config(vocab_size=40030, model_name="vinai/bartpho-syllable")
    )
)
def test_validation_near_ln_2_is_a_coincidence_where_the_uniform_guess_lies_elsewhere(
    diagnosis: Diagnosis,
) -> None:
    """The same curves as above, from a run whose config gives a vocabulary of 40,030 tokens: a uniform
    guess is ln 40030 = 10.6, so a validation loss near 0.693 is a coincidence of scale, not a coin flip."""
    assert reference(diagnosis)["chance_basis"] == "vocab_size"
    assert "no_learning:chance_val_loss" not in set(diagnosis.findings()["finding_id"])


@fixture_run(lambda: RunBuilder().plant_loss_curve(1.5, 0.3, 2.0, 0.693))
def test_validation_that_came_down_to_ln_2_learned(diagnosis: Diagnosis) -> None:
    """Its control: a validation loss that fell from 2.0 to 0.693 learned (an LM fine-tune can end
    there); only one that sat near ln 2 from its first evaluation never beat a coin flip."""
    assert "no_learning:chance_val_loss" not in set(diagnosis.findings()["finding_id"])
    assert not ids_of(diagnosis, "no_learning")


@fixture_run(
    lambda: classifier(math.log(4) * 0.98, math.log(4) * 0.985).plant_config(num_classes=4, vocab_size=30522)
)
def test_class_count_wins_over_vocabulary_when_the_start_fits_it(diagnosis: Diagnosis) -> None:
    assert reference(diagnosis)["chance_basis"] == "num_classes"


def binary_head_without_a_count(train_end: float, val_end: float) -> RunBuilder:
    """A binary classifier whose config names no class count: its fresh head starts at ln 2."""
    builder = RunBuilder()
    return builder.plant_loss_curve(math.log(2) * 1.004, train_end, math.log(2) * 1.004, val_end)


@fixture_run(lambda: binary_head_without_a_count(0.62, 0.64))
def test_start_at_ln_2_gives_the_chance_level_when_no_count_is_known(diagnosis: Diagnosis) -> None:
    """Validation ends 7.7% under ln 2 (a model near the majority-class prior): underfitting."""
    ref = reference(diagnosis)
    assert (ref["chance_basis"], ref["chance_confidence"]) == ("start_at_ln_classes", "medium")
    assert ref["chance_loss"] == pytest.approx(math.log(2))
    assert finding(diagnosis, "underfitting:near_chance")["severity"] == "medium"


@fixture_run(lambda: binary_head_without_a_count(0.25, 0.3))
def test_binary_head_that_learns_is_no_finding(diagnosis: Diagnosis) -> None:
    assert reference(diagnosis)["chance_basis"] == "start_at_ln_classes"
    assert not ids_of(diagnosis, "no_learning", "underfitting", "overfitting")


@fixture_run(lambda: RunBuilder().plant_uniform_guess_start(10, math.log(10) * 0.965, 0.14))
def test_first_evaluation_at_a_uniform_guess_gives_the_chance_level(diagnosis: Diagnosis) -> None:
    """Loss ln 10 and accuracy 1/10 at the first evaluation: a uniform guess over 10 classes; ending
    3.5% under ln 10 (accuracy 0.14) is no learning, medium (the class count is inferred)."""
    ref = reference(diagnosis)
    assert (ref["chance_basis"], ref["chance_confidence"]) == ("first_eval_uniform", "medium")
    assert ref["chance_loss"] == pytest.approx(math.log(10))
    assert finding(diagnosis, "no_learning:chance_level")["severity"] == "medium"


@fixture_run(lambda: RunBuilder().plant_uniform_guess_start(10, 0.6, 0.8))
def test_ten_class_head_that_learns_is_no_finding(diagnosis: Diagnosis) -> None:
    assert reference(diagnosis)["chance_basis"] == "first_eval_uniform"
    assert not ids_of(diagnosis, "no_learning", "underfitting", "overfitting")


@fixture_run(
    lambda: RunBuilder().plant_uniform_guess_start(10, math.log(10) * 0.965, 0.5, accuracy_start=0.45)
)
def test_an_accuracy_far_above_one_over_k_names_no_class_count(diagnosis: Diagnosis) -> None:
    """The same losses with an accuracy of 0.45 from the start: predictions that carry information
    (accuracy far above e^-loss), so the start is no uniform guess and no chance level is set."""
    assert pd.isna(reference(diagnosis)["chance_basis"])
    assert "no_learning:chance_level" not in set(diagnosis.findings()["finding_id"])


def language_model_with_a_label_count() -> RunBuilder:
    # an LM whose config carries a bare label map (every HF config does: two labels by default),
    # as the importers write it: its start is far above ln 2
    return from_scratch(0.45).plant_config(num_classes=2, num_classes_basis="label_map")


@fixture_run(language_model_with_a_label_count)
def test_class_count_that_does_not_fit_the_start_is_ignored(diagnosis: Diagnosis) -> None:
    assert reference(diagnosis)["chance_basis"] == "vocab_size"
    assert not ids_of(diagnosis, "no_learning", "underfitting")


def classifier_with_a_hot_start(**config: object) -> RunBuilder:
    """A 15-class classifier whose head starts mis-scaled, at 3x ln 15, and then learns."""
    builder = RunBuilder().plant_config(num_classes=15, **config)
    return builder.plant_loss_curve(3 * math.log(15), 0.2, 3 * math.log(15), 0.45)


@fixture_run(classifier_with_a_hot_start)
def test_stated_class_count_is_the_chance_level_whatever_the_start(diagnosis: Diagnosis) -> None:
    """A count the config states (num_classes) is the task's: a start at 3x ln 15 is the head's
    fault, not a sign that the count describes something else."""
    assert reference(diagnosis)["chance_basis"] == "num_classes"
    row = finding(diagnosis, "initial_loss_too_high:start")
    assert row["detector_severity"] == "medium"
    assert not ids_of(diagnosis, "no_learning", "underfitting")


@fixture_run(lambda: classifier_with_a_hot_start(num_classes_basis="label_map"))
def test_the_same_start_beside_a_bare_label_map_is_not_judged_against_it(diagnosis: Diagnosis) -> None:
    """The control: the same run whose count is only a label map is not judged against ln 15."""
    assert reference(diagnosis)["chance_basis"] == "first_loss"
    assert not ids_of(diagnosis, "initial_loss_too_high")


@fixture_run(lambda: from_scratch(0.97, tokenizer_name="GPT2BPETokenizer").plant_config(vocab_size=None))
def test_vocabulary_from_the_tokenizer_name_is_medium(diagnosis: Diagnosis) -> None:
    ref = reference(diagnosis)
    assert (ref["chance_basis"], ref["chance_confidence"]) == ("tokenizer_name", "medium")
    assert ref["chance_loss"] == pytest.approx(LN_GPT2, rel=1e-6)
    # a vocabulary matched by name: one step less severe than one read from the config
    assert finding(diagnosis, "no_learning:chance_level")["severity"] == "medium"


def policy_with_still_steps(every: int | None) -> RunBuilder:
    """A GRPO-like loss near 0 (0.002-0.012, as the policy term is at the sampling policy) with gradient
    norms of ~0.1, no evaluations; `every`: every that-many-th step logs loss 0 and grad_norm 0 (a group
    whose answers all got one reward); None: every step from 101 on (a policy collapsed to one answer)."""
    builder = RunBuilder()
    builder.evals = builder.evals.iloc[0:0]
    n = len(builder.train)
    builder.train["loss"] = 0.002 + 0.01 * builder.rng.random(n)
    steps = builder.train["step"]
    still = steps > 100 if every is None else steps % every == 0
    builder.train.loc[still, ["loss", "grad_norm"]] = 0.0
    return builder


@pytest.mark.parametrize("every", [None, 6])
@fixture_run(policy_with_still_steps)
def test_a_run_most_of_whose_updates_moved_nothing_learned_nothing(
    diagnosis: Diagnosis, every: int | None
) -> None:
    """Loss and gradient norm both exactly 0: the update moved nothing. On 140 of 240 steps (from 101):
    medium, costed as that share of the updates; on a sixth of them (a healthy GRPO run's all-equal
    groups): nothing. Not the zero-loss collapse (critical): the loss was near 0 before, no jump."""
    assert "no_learning:zero_loss" not in ids_of(diagnosis, "no_learning")
    if every is None:
        row = finding(diagnosis, "no_learning:zero_updates")
        assert row["severity"] == "medium" and row["first_step"] == 101
        assert row["estimated_cost"] == pytest.approx(140 / 240)
    else:
        assert "no_learning:zero_updates" not in ids_of(diagnosis, "no_learning")


# --- a detector: its validation mAP at IoU 0.5 ------------------------------------------------


def detector(map50: list[float], still_falling: bool = False) -> RunBuilder:
    """A healthy loss curve (the fixture's, flattened by its end) with a detector's validation mAP50
    at its evaluations, the first len(map50) of them (the later ones log none); still_falling: the
    training loss falls linearly to the last step instead (a run cut short of its plateau)."""
    builder = RunBuilder()
    scores = [*map50, *[math.nan] * (len(builder.evals) - len(map50))]
    builder.evals["val_map50"] = scores[: len(builder.evals)]
    if still_falling:
        n = len(builder.train)
        builder.train["loss"] = np.linspace(6.0, 3.0, n) * np.exp(builder.rng.normal(0, 0.01, n))
    return builder


@fixture_run(
    lambda: detector([0.0, 0.001, 0.0, 0.004, 0.002, 0.01, 0.0, 0.003, 0.006, 0.002, 0.0, 0.004, 0.001])
)
def test_a_detector_that_finds_nothing_on_validation_learned_nothing(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "no_learning:detection_score")
    assert row["severity"] == "medium"
    assert row["observed_value"] == pytest.approx(0.01)
    assert row["steps_affected"] == 13


@fixture_run(
    lambda: detector(
        [0.0, 0.001, 0.002, 0.004, 0.003, 0.006, 0.005, 0.008, 0.007, 0.01, 0.009, 0.012, 0.01], True
    )
)
def test_a_detector_at_zero_whose_loss_still_falls_was_cut_short(diagnosis: Diagnosis) -> None:
    # still learning when the run ended: underfitting (train longer), not a detector that cannot learn
    assert finding(diagnosis, "underfitting:detection_score")["severity"] == "medium"
    assert "no_learning:detection_score" not in ids_of(diagnosis, "no_learning")


@pytest.mark.parametrize("split", ["val", "train"])
@fixture_run(
    lambda split: detector([0.0] * 13).plant_config(
        **{f"{split}_zero_loss_terms": f"{split}/box_loss, {split}/dfl_loss"}
    )
)
def test_a_detector_no_labelled_box_reached_is_not_judged_on_its_map(
    diagnosis: Diagnosis, split: str
) -> None:
    """An mAP of 0 at every evaluation, as in the test above, but the importer saw the box terms of one
    split exactly 0 on every row: no labelled box reached that loss. Validation: its mAP measured
    nothing (log_quality says so), no detection verdict. Training: nothing to learn to find, medium."""
    assert not ids_of(diagnosis, "underfitting")
    assert "no_learning:detection_score" not in ids_of(diagnosis, "no_learning")
    if split == "val":
        row = finding(diagnosis, "log_quality:validation_without_targets")
        assert row["detector_severity"] == "medium" and "val/box_loss, val/dfl_loss" in row["evidence"]
        assert "no_learning:no_training_targets" not in ids_of(diagnosis, "no_learning")
    else:
        row = finding(diagnosis, "no_learning:no_training_targets")
        assert row["severity"] == "medium" and "train/box_loss" in row["evidence"]
        assert "log_quality:validation_without_targets" not in ids_of(diagnosis, "log_quality")


@fixture_run(lambda: detector([0.0, 0.002, 0.001, 0.0, 0.003]))
def test_a_detector_at_zero_over_a_few_evaluations_is_a_low_note(diagnosis: Diagnosis) -> None:
    assert finding(diagnosis, "no_learning:detection_score")["severity"] == "low"


@fixture_run(lambda: detector(list(np.linspace(0.0, 0.55, 13))))
def test_a_detector_whose_score_rises_from_zero_learned(diagnosis: Diagnosis) -> None:
    # the healthy control: it starts at 0 as every detector does
    assert not ids_of(diagnosis, "no_learning", "underfitting")


# --- resume integrity ---------------------------------------------------------------------


def resume_ids(diagnosis: Diagnosis) -> list[str]:
    return sorted(i for i in diagnosis.findings()["finding_id"] if i.startswith(RESUME_PREFIXES))


def checked(diagnosis: Diagnosis) -> pd.Series:
    rows = diagnosis.query("select * from main.int_resumes_checked")
    assert len(rows) == 1, rows.to_string()
    return rows.iloc[0]


@pytest.mark.parametrize(("crash_after", "resume_from"), [(130, 100), (200, 190)])
@fixture_run(lambda crash_after, resume_from: RunBuilder().plant_restart(crash_after, resume_from))
def test_clean_resume_fires_no_resume_check(diagnosis: Diagnosis, crash_after: int, resume_from: int) -> None:
    assert resume_ids(diagnosis) == []
    row = checked(diagnosis)
    assert (row["lr_change"], row["is_loss_jump"], row["data_order"], row["defects"]) == (
        "continuous",
        False,
        "restored",
        "",
    )


@fixture_run(lambda: RunBuilder().plant_resume_defect(200, 190, "lr_reset"))
def test_lr_reset_at_a_resume_is_a_schedule_mismatch(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "lr_schedule_mismatch:resume_191")
    # the detector's evidence is medium; the final severity follows the priced cost (docs/costing.md)
    assert row["detector_severity"] == "medium" and row["severity"] in ("low", "medium")
    assert row["observed_value"] == pytest.approx(3e-3, rel=1e-3)
    assert "jumped" in row["title"]
    assert checked(diagnosis)["lr_change"] == "jumped_up"
    # the config-based reset is the same resume: its symptom
    config_based = diagnosis.findings().query("finding_id == 'lr_schedule_mismatch:reset_after_resume'")
    assert list(config_based["caused_by"]) in ([], ["lr_schedule_mismatch:resume_191"])


@fixture_run(lambda: RunBuilder().plant_resume_defect(200, 190, "warmup_restarted"))
def test_warmup_restarted_at_a_resume(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "lr_schedule_mismatch:resume_191")
    assert "warmup restarted" in row["title"]
    assert checked(diagnosis)["lr_change"] == "warmup_restarted"


@fixture_run(lambda: RunBuilder().plant_resume_defect(130, 100, "data_replayed"))
def test_data_replayed_at_a_resume(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "data_repetition:resume_101")
    assert row["category"] == "data_repetition"
    assert "replayed data" in row["title"]
    assert checked(diagnosis)["data_order"] == "replayed"


@fixture_run(lambda: RunBuilder().plant_resume_defect(130, 100, "data_skipped"))
def test_data_skipped_at_a_resume(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "data_skipped:resume_101")
    assert row["category"] == "data_skipped"
    assert checked(diagnosis)["data_step_offset"] == 16
    assert "data_skipped_at_resume" in diagnosis.failing_tests() or row["severity"] in {"low", "info"}


@fixture_run(lambda: RunBuilder().plant_resume_defect(130, 100, "loss_jump"))
def test_loss_jump_at_a_resume(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "loss_spikes:resume_101")
    assert row["detector_severity"] == "medium"
    assert pd.isna(row["caused_by"])  # no LR change at this resume: the state itself was not restored
    assert checked(diagnosis)["is_loss_jump"]


def interleaved_runs() -> RunBuilder:
    """Twelve short runs of 40 steps whose writers share one log file, four rows at a time in turn
    (a calibration sweep's workers appending to one log_train.txt): each run at its own loss level,
    so the counter goes back at every turn and the loss moves to another run's level there."""
    builder = RunBuilder(seed=4)
    base = builder.train[builder.train["step"] < 40].reset_index(drop=True)
    turns = []
    for block in range(10):
        for run in range(12):
            rows = base.iloc[block * 4 : block * 4 + 4].copy()
            rows["loss"] = (0.004 + 0.003 * (run % 5)) * (1 + rows["step"] / 40)
            turns.append(rows)
    builder.train = pd.concat(turns, ignore_index=True)
    builder.evals = builder.evals.iloc[0:0]
    return builder


@fixture_run(interleaved_runs)
def test_loss_jumps_between_runs_interleaved_in_one_log_are_low(diagnosis: Diagnosis) -> None:
    """One run's resumes replay a few steps; runs interleaved in one file log every step many times
    (12 here), so each "resume" is a boundary between runs and its loss jump says nothing of a
    restore: low, saying so (test_loss_jump_at_a_resume is the medium control)."""
    jumps = diagnosis.findings().query("finding_id.str.startswith('loss_spikes:resume_')")
    assert len(jumps) and set(jumps["detector_severity"]) == {"low"}
    assert all("several runs interleaved or appended in one file" in e for e in jumps["evidence"])


@fixture_run(lambda: RunBuilder().plant_resume_defect(200, 190, "lr_reset", "loss_jump"))
def test_loss_jump_after_an_lr_reset_is_its_symptom(diagnosis: Diagnosis) -> None:
    jump = finding(diagnosis, "loss_spikes:resume_191")
    assert jump["caused_by"] == "lr_schedule_mismatch:resume_191"


def resume_without_replay_in_the_log() -> RunBuilder:
    """The crashed attempt's rows are gone (the log was overwritten): only the events tell."""
    builder = RunBuilder().plant_resume_defect(200, 190, "lr_reset")
    builder.train = (
        builder.train.drop_duplicates("step", keep="last").sort_values("step").reset_index(drop=True)
    )
    return builder


@fixture_run(resume_without_replay_in_the_log)
def test_resume_known_from_the_events_only_is_checked(diagnosis: Diagnosis) -> None:
    row = checked(diagnosis)
    assert not row["is_seen_in_log"]
    assert row["resume_step"] == 191
    assert "lr_schedule_mismatch:resume_191" in resume_ids(diagnosis)


def relaunched_from_scratch() -> RunBuilder:
    """Two launches of one script appended in one log: the first (another setting, its loss 0.3x)
    stopped at step 80, the second started over at step 1 and ran to the end."""
    builder = RunBuilder()
    first = builder.train[builder.train["step"] <= 80].copy()
    first["loss"] = first["loss"] * 0.3
    builder.train = pd.concat([first, builder.train], ignore_index=True)
    return builder


@fixture_run(relaunched_from_scratch)
def test_relaunch_from_the_first_step_is_no_resume_defect(diagnosis: Diagnosis) -> None:
    """Its loss back at an untrained model's level, its warmup and data from the start are what a
    fresh start does: no loss jump, no LR or data finding; the first launch's steps are a restart."""
    row = checked(diagnosis)
    assert row["is_fresh_start"] and not row["is_loss_jump"]
    assert pd.isna(row["lr_change"]) and pd.isna(row["data_order"])
    assert "started over" in row["defects"]
    assert resume_ids(diagnosis) == []
    assert not ids_of(diagnosis, "loss_spikes")
    assert ids_of(diagnosis, "run_restart") == ["run_restart:1"]


def loaded_initial_weights(event: str) -> RunBuilder:
    """A continued-training run that loads its starting weights before its first step."""
    builder = RunBuilder()
    builder.events = pd.concat(
        [pd.DataFrame([(0, event)], columns=["step", "event"]), builder.events], ignore_index=True
    )
    return builder


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        # the checkpoint's step is not named: the event's place before the first step decides
        ("resuming from checkpoint at iteration 0", "restart"),
        # a checkpoint at iteration 0 holds no update: the run starting
        ("loading checkpoint from /ckpt/gpt2 at iteration 0", "run_start"),
    ],
)
@fixture_run(lambda event, kind: loaded_initial_weights(event))
def test_loading_weights_before_the_first_step_is_no_restart(
    diagnosis: Diagnosis, event: str, kind: str
) -> None:
    assert not ids_of(diagnosis, "run_restart", "step_sequence")
    kinds = diagnosis.query(
        "select event_kind from main.int_events_classified where step = 0 and event_text like '%checkpoint%'"
    )
    assert list(kinds["event_kind"]) == [kind]


@fixture_run(lambda: RunBuilder().plant_restart(130, 100))
def test_resume_event_mid_run_is_still_a_restart(diagnosis: Diagnosis) -> None:
    """The control: a resume from a named checkpoint after training began stays a restart."""
    assert ids_of(diagnosis, "run_restart") == ["run_restart:101"]


# --- where the reference keys come from (importers/reference_keys.py) ---------------------


def test_reference_keys_come_from_the_config_then_the_files_beside_the_log(tmp_path) -> None:
    from run_diagnosis.importers.reference_keys import reference_keys

    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "vocab_size": 32000,
                "_name_or_path": "meta-llama/Llama-2-7b-hf",
                "id2label": {"0": "a", "1": "b"},
            }
        )
    )
    (tmp_path / "adapter_config.json").write_text(
        json.dumps({"base_model_name_or_path": "TinyLlama/TinyLlama-1.1B"})
    )
    log = tmp_path / "trainer_state.json"
    # the importer's own config wins (shallowest key first), the files beside the log fill the rest
    lifted, notes = reference_keys({"hparams": {"model": {"vocab_size": 50258}}}, str(log))
    assert lifted == {
        "vocab_size": 50258,
        "num_classes": 2,
        "num_classes_basis": "stated",  # the labels have names: the model's own classes
        "model_name": "meta-llama/Llama-2-7b-hf",
        "output_head": "classifier",  # ... which makes the head a classifier's
    }
    assert any("from id2label in config.json" in note for note in notes)
    # a key the config already sets at the top level is kept as it is
    assert "vocab_size" not in reference_keys({"vocab_size": 100}, str(log))[0]


def test_a_bare_label_map_is_told_from_a_stated_class_count(tmp_path) -> None:
    from run_diagnosis.importers.reference_keys import reference_keys

    log = tmp_path / "trainer_state.json"
    default_map = {"0": "LABEL_0", "1": "LABEL_1"}
    (tmp_path / "config.json").write_text(json.dumps({"id2label": default_map, "vocab_size": 32000}))
    assert reference_keys({}, str(log))[0]["num_classes_basis"] == "label_map"
    # beside a head that predicts tokens (a seq2seq model's config lists three LABEL_i), the map is
    # no class count at all: the vocabulary is what the model predicts
    for head in ("LlamaForCausalLM", "PegasusForConditionalGeneration", "GPT2LMHeadModel"):
        (tmp_path / "config.json").write_text(
            json.dumps({"architectures": [head], "id2label": default_map, "vocab_size": 96103})
        )
        lifted, notes = reference_keys({}, str(log))
        assert "num_classes" not in lifted and lifted["vocab_size"] == 96103, head
        assert any("not read as a class count" in note for note in notes)
    # the same map beside a classification head is the classifier's own
    (tmp_path / "config.json").write_text(
        json.dumps({"architectures": ["BertForSequenceClassification"], "id2label": default_map})
    )
    assert reference_keys({}, str(log))[0]["num_classes_basis"] == "stated"
    # ... and so is a PEFT adapter's task type, and a key that names the count
    (tmp_path / "config.json").write_text(json.dumps({"num_labels": 2, "task_type": "SEQ_CLS"}))
    assert reference_keys({}, str(log))[0]["num_classes_basis"] == "stated"
    assert reference_keys({"hparams": {"num_classes": 5}}, str(log))[0]["num_classes_basis"] == "stated"


def test_the_head_a_config_names_is_a_classifier_or_a_generator(tmp_path) -> None:
    from run_diagnosis.importers.reference_keys import reference_keys

    log = tmp_path / "trainer_state.json"
    assert "output_head" not in reference_keys({}, str(log))[0]  # nothing says
    adapter = tmp_path / "adapter_config.json"
    heads = (("SEQ_CLS", "classifier"), ("TOKEN_CLS", "classifier"), ("CAUSAL_LM", "generator"))
    for task_type, head in heads:
        adapter.write_text(json.dumps({"base_model_name_or_path": "bloom-1b7", "task_type": task_type}))
        lifted, notes = reference_keys({}, str(log))
        assert lifted["output_head"] == head, task_type
        assert any("from task_type in adapter_config.json" in note for note in notes)
    # a causal LM's config beside a classification adapter: the classifier's head is what is trained
    adapter.write_text(json.dumps({"task_type": "SEQ_CLS"}))
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BloomForCausalLM"]}))
    assert reference_keys({}, str(log))[0]["output_head"] == "classifier"
    adapter.unlink()
    assert reference_keys({}, str(log))[0]["output_head"] == "generator"
    # the run's own config wins
    assert "output_head" not in reference_keys({"output_head": "classifier"}, str(log))[0]


def classifier_adapter_with_a_start(start: float) -> RunBuilder:
    """A LoRA classifier (output_head classifier, its base model's name known: BLOOM, ln V = 12.4)
    whose loss starts at `start` and falls to 0.4 in its first tenth, then learns slowly."""
    builder = RunBuilder().plant_config(model_name="bigscience/bloom-1b7", output_head="classifier")
    return builder.plant_loss_curve(start, 0.4, start, 0.3)


@fixture_run(lambda: classifier_adapter_with_a_start(11.3))
def test_a_classifier_is_not_judged_against_its_backbones_vocabulary(diagnosis: Diagnosis) -> None:
    """A classifier's head predicts classes: a start at 11.3, under BLOOM's ln V (12.4) but above
    ln 21,843 (9.99, the largest label set in common use), is a mis-scaled head (low: the class
    count is not known); the backbone's vocabulary is never its chance level."""
    ref = reference(diagnosis)
    assert pd.isna(ref["chance_basis"]) and ref["is_classifier_head"]
    row = finding(diagnosis, "initial_loss_too_high:start")
    assert row["severity"] == "low"
    assert "largest label set in common use" in row["title"]


@fixture_run(lambda: classifier_adapter_with_a_start(math.log(3) * 1.02))
def test_a_classifier_starting_near_ln_k_has_no_start_finding(diagnosis: Diagnosis) -> None:
    """The control: the same classifier starting near ln 3 (a fresh head) raises nothing about its start."""
    assert not ids_of(diagnosis, "initial_loss_too_high")
    assert bool(reference(diagnosis)["is_classifier_head"])


def test_a_count_in_the_projects_own_config_beside_the_log(tmp_path) -> None:
    from run_diagnosis.importers.reference_keys import reference_keys

    log = tmp_path / "metrics.csv"
    (tmp_path / "default.yaml").write_text("model:\n  num_classes: 15\n  hidden: 256\nepochs: 300\n")
    lifted, notes = reference_keys({}, str(log))
    assert (lifted["num_classes"], lifted["num_classes_basis"]) == (15, "stated")
    assert any("num_classes in default.yaml" in note for note in notes)
    # names are not taken from such files, only counts
    (tmp_path / "other.yaml").write_text("model_name: resnet18\n")
    assert "model_name" not in reference_keys({}, str(log))[0]
    # W&B's config.yaml ({desc, value} per key) is read by its values: a language model's default
    # label map there is a label map, not a stated count
    (tmp_path / "other.yaml").unlink()
    wandb = tmp_path / "wandb_dir"
    wandb.mkdir()
    (wandb / "config.yaml").write_text(
        "wandb_version: 1\narchitectures:\n  desc: null\n  value: [LlamaForCausalLM]\n"
        "id2label:\n  desc: null\n  value: {0: LABEL_0, 1: LABEL_1}\n"
    )
    lifted = reference_keys({}, str(wandb / "output.log"))[0]
    assert (lifted["num_classes"], lifted["num_classes_basis"]) == (2, "label_map")
    # two files that disagree give nothing (two stages, two datasets)
    (tmp_path / "finetune.yaml").write_text("num_classes: 10\n")
    assert "num_classes" not in reference_keys({}, str(log))[0]


def flat_at_three() -> RunBuilder:
    """Training and validation loss flat at 3.0 from the first log."""
    return RunBuilder().plant_flat_loss(level=3.0)


def resumed_from_an_earlier_run() -> RunBuilder:
    """The same, in a log that starts at step 10,001: it continues an earlier run, whose model had
    converged."""
    builder = flat_at_three()
    for frame in (builder.train, builder.evals, builder.events):
        frame["step"] = frame["step"] + 10_000
    return builder.plant_config(total_steps=10_240, decay_steps=10_240, warmup_steps=0)


@fixture_run(resumed_from_an_earlier_run)
def test_flat_loss_of_a_continuation_is_not_no_learning(diagnosis: Diagnosis) -> None:
    assert reference(diagnosis)["regime"] == "continuation"
    assert not ids_of(diagnosis, "no_learning", "underfitting")


@fixture_run(flat_at_three)
def test_the_same_flat_loss_from_the_start_is_no_learning(diagnosis: Diagnosis) -> None:
    assert ids_of(diagnosis, "no_learning") == ["no_learning:run"]


def noisy_training_loss_with_improving_validation() -> RunBuilder:
    """Single-batch training losses too noisy to show a trend (flat within their scatter), while
    validation falls from 5.7 to 3.1 (the builder's evaluations): the model learns."""
    return RunBuilder().plant_flat_loss(level=3.0).plant_loss_curve(3.0, 2.95, 5.7, 3.1)


@fixture_run(noisy_training_loss_with_improving_validation)
def test_validation_that_improves_outweighs_a_training_loss_too_noisy_to_show_it(
    diagnosis: Diagnosis,
) -> None:
    assert not ids_of(diagnosis, "no_learning", "underfitting")


def noisy_single_batch_fall_without_validation() -> RunBuilder:
    """Single small-batch losses (noise 0.4) that fall 22% over the run, no validation logged: the
    fall is within twice the log-to-log scatter, but a fall of a fifth is no evidence of no learning."""
    builder = RunBuilder(noise=0.4).plant_loss_curve(0.75, 0.58, 1.0, 1.0)
    builder.evals = builder.evals.iloc[0:0]
    return builder


@fixture_run(noisy_single_batch_fall_without_validation)
def test_a_fall_of_a_fifth_hidden_in_noise_is_not_flat(diagnosis: Diagnosis) -> None:
    progress = diagnosis.query("select relative_drop, is_flat from main.int_learning_progress_measured")
    assert progress["relative_drop"].iloc[0] > 0.1 and not progress["is_flat"].iloc[0]
    assert "no_learning:run" not in ids_of(diagnosis, "no_learning")


def first_steps_of_a_pretraining_run(n_steps: int) -> RunBuilder:
    """A from-scratch language model's log that falls steadily from 10.87 to 10.71 (1.5%, beyond its
    noise) over its first `n_steps` steps, with no LR, evaluation or planned length logged (the
    build-nanogpt log.txt of a run stopped after 14 steps)."""
    builder = RunBuilder(total_steps=max(n_steps, 40))
    builder.train = builder.train.iloc[:n_steps].copy()
    wiggle = np.where(np.arange(n_steps) % 2 == 0, 0.002, -0.002)
    builder.train["loss"] = np.linspace(10.87, 10.71, n_steps) + wiggle
    builder.train["learning_rate"] = np.nan
    builder.evals = builder.evals.iloc[0:0]
    return builder.plant_config(total_steps=None, warmup_steps=None, decay_steps=None)


@pytest.mark.parametrize(("n_steps", "severity"), [(14, "low"), (400, "high")])
@fixture_run(first_steps_of_a_pretraining_run)
def test_a_small_steady_fall_in_the_first_steps_is_too_early_to_judge(
    diagnosis: Diagnosis, n_steps: int, severity: str
) -> None:
    # 1.5% is under no_learning_max_drop either way; in a log of the first 14 steps (under
    # progress_early_steps) it is a start, not a plateau: low. The same fall over 400 steps is flat: high
    row = finding(diagnosis, "no_learning:run")
    assert row["severity"] == severity
    assert ("too early to judge" in row["evidence"]) == (severity == "low")


# --- a pretrained start: flat is little left to learn, worse after the first evaluation is not ---


def flat_pretrained(peak_lr: float) -> RunBuilder:
    """A Llama-vocabulary fine-tune whose losses sit flat at 2.0 (a fifth of ln V) from the first log."""
    builder = RunBuilder(peak_lr=peak_lr, min_lr=peak_lr / 10)
    builder.plant_config(vocab_size=32000, optimizer={"name": "adamw_torch"})
    return builder.plant_flat_loss(level=2.0)


@fixture_run(lambda: flat_pretrained(2e-5))
def test_flat_far_below_chance_from_the_start_is_low(diagnosis: Diagnosis) -> None:
    # a pretrained model with little left to learn (a continued stage, the format learned in the first
    # steps): a note, not a run that cannot learn
    row = finding(diagnosis, "no_learning:run")
    assert row["severity"] == "low"
    assert "a pretrained model with little left to learn" in row["evidence"]
    assert reference(diagnosis)["regime"] == "fine_tune"


@fixture_run(lambda: flat_pretrained(1e-9))
def test_flat_pretrained_start_at_an_lr_far_below_usual_is_not_learning(diagnosis: Diagnosis) -> None:
    # the same flat loss with an LR 1000x below the fine-tuning range: the LR explains it, so it stays high
    row = finding(diagnosis, "no_learning:run")
    assert row["severity"] == "high"
    assert row["caused_by"] == "schedule_sanity:lr_far_below_usual"


def knocked_off_its_optimum(train_keeps_falling: bool) -> RunBuilder:
    """A Llama-vocabulary fine-tune at a usual LR, first evaluated at step 40 after its training loss
    fell 2.0 -> 1.2. Then validation rises from 1.25 and the training loss rises with it to 1.8 (the
    model knocked off its pretrained optimum: got worse), or keeps falling to 0.6 while validation
    rises to 1.6 (overfitting: the control)."""
    builder = RunBuilder(peak_lr=2e-4, min_lr=2e-5)
    builder.plant_config(vocab_size=32000, optimizer={"name": "adamw_torch"})
    steps = builder.train["step"].to_numpy(dtype=float)
    descent = 2.0 - 0.8 * np.clip(steps / 20, 0, 1)
    if train_keeps_falling:
        later = 0.6 + 0.6 * np.exp(-(steps - 40) / 80)
    else:
        later = 1.2 + 0.6 * np.clip((steps - 40) / 40, 0, 1)
    curve = np.where(steps <= 40, descent, later)
    builder.train["loss"] = curve * np.exp(builder.rng.normal(0, builder.noise / 2, len(steps)))
    builder.evals = builder.evals[builder.evals["step"] >= 40].reset_index(drop=True)
    eval_steps = builder.evals["step"].to_numpy(dtype=float)
    if train_keeps_falling:
        val = 1.25 + 0.35 * (eval_steps - 40) / 200
    else:
        val = 1.25 + 0.55 * np.clip((eval_steps - 40) / 40, 0, 1)
    builder.evals["val_loss"] = val * np.exp(builder.rng.normal(0, 0.002, len(eval_steps)))
    return builder


@fixture_run(lambda: knocked_off_its_optimum(train_keeps_falling=False))
def test_validation_and_training_worse_after_the_first_evaluation_is_no_learning(
    diagnosis: Diagnosis,
) -> None:
    row = finding(diagnosis, "no_learning:got_worse")
    assert row["severity"] == "medium"
    assert "not overfitting" in row["evidence"]
    assert not ids_of(diagnosis, "overfitting")


def improved_then_degraded() -> RunBuilder:
    """Validation falls 20% (1.25 -> 1.0 at step 80), then both losses climb to the end (validation
    to ~2.4, scattering +-0.1 around its trend): the model learned, then got worse. Its scatter makes
    the noise bar of a meaningful gain (3x the median eval-to-eval change, 0.6) larger than the 0.25
    gained, yet a 20% gain is a gain: not got_worse (nor overfitting: the training loss climbs too),
    but a run that learned, then lost it (its training loss held ~0.95, then climbed back past its
    start, no spike explaining it: a divergence, medium)."""
    builder = knocked_off_its_optimum(train_keeps_falling=False)
    steps = builder.train["step"].to_numpy(dtype=float)
    climb = 0.95 + 1.25 * (steps - 80) / 160
    curve = np.where(steps <= 80, 1.2 - 0.25 * np.clip((steps - 20) / 60, 0, 1), climb)
    curve = np.where(steps <= 20, 2.0 - 0.8 * steps / 20, curve)
    builder.train["loss"] = curve * np.exp(builder.rng.normal(0, builder.noise / 2, len(steps)))
    builder.evals["val_loss"] = [1.25, 1.12, 1.00, 1.7, 1.5, 2.0, 1.8, 2.3, 2.1, 2.6, 2.4]
    return builder


@fixture_run(improved_then_degraded)
def test_validation_that_improved_first_is_not_got_worse(diagnosis: Diagnosis) -> None:
    assert ids_of(diagnosis, "no_learning", "underfitting", "overfitting") == ["no_learning:lost_progress"]
    assert finding(diagnosis, "no_learning:lost_progress")["severity"] == "medium"


def learned_then_lost(jump: bool) -> RunBuilder:
    """No evaluations; the training loss falls 5.8 -> 3.1 by step 150 as usual, then is back at its
    start by the end: `jump`, at once at step 160 (x1.9, kept: a level jump); else a steady climb
    from step 160 to x1.9 at step 215, kept to the end (a divergence no single step explains)."""
    builder = RunBuilder()
    builder.evals = builder.evals.iloc[0:0]
    if jump:
        return builder.plant_level_jump(160, 1.9)
    steps = builder.train["step"].to_numpy(dtype=float)
    builder.train["loss"] *= 1 + 0.9 * np.clip((steps - 160) / 55, 0, 1)
    return builder


@pytest.mark.parametrize("jump", [True, False])
@fixture_run(learned_then_lost)
def test_a_run_that_learned_then_lost_it_is_not_a_run_that_never_learned(
    diagnosis: Diagnosis, jump: bool
) -> None:
    """Start and end alone read flat (no_learning:run, high, before); the stretch it held at ~3.1
    says it learned: lost_progress, low when the jump is a loss spike (loss_spikes reports it),
    medium for the climb no spike explains."""
    row = finding(diagnosis, "no_learning:lost_progress")
    assert "no_learning:run" not in ids_of(diagnosis, "no_learning")
    assert row["severity"] == ("low" if jump else "medium")
    assert "the run learned, then lost it" in row["title"]
    assert row["cost_unit"] == "nats" and row["estimated_cost"] > 2
    if jump:
        assert "loss_spikes:160" in ids_of(diagnosis, "loss_spikes")


@fixture_run(lambda: fine_tune(2e-5, 2.05, rise=0.0).plant_loss_curve(2.0, 1.9, 2.05, 2.05))
def test_pretrained_start_whose_validation_never_moves_is_low(diagnosis: Diagnosis) -> None:
    # a training loss 5% down and validation flat at 2.05 from the first evaluation, at a usual LR
    row = finding(diagnosis, "no_learning:no_val_gain")
    assert row["severity"] == "low"
    assert "a pretrained model with little left to learn" in row["evidence"]


def noisy_sparse_regression(val_gain: float) -> RunBuilder:
    """A regression's mean squared error logged every 13th step, each a single small batch (scatter
    of 45% of its level, a drift from 0.0076 down a half hidden in it: a fall the log cannot show),
    and thirteen evaluations scattering 10% around a level that falls by `val_gain` (relative) over
    the run: validation is the only evidence of learning."""
    builder = RunBuilder(seed=11).plant_sparse_logging(13)
    steps = builder.train["step"].to_numpy(dtype=float)
    level = 0.0076 * (1 - 0.5 * steps / 240)
    builder.train["loss"] = level * np.exp(builder.rng.normal(0, 0.45, len(steps)))
    eval_steps = builder.evals["step"].to_numpy(dtype=float)
    val = 0.0035 * (1 - val_gain * eval_steps / 240)
    builder.evals["val_loss"] = val * np.exp(builder.rng.normal(0, 0.1, len(eval_steps)))
    return builder


@fixture_run(lambda: noisy_sparse_regression(val_gain=0.0))
def test_validation_that_never_gains_beside_a_too_noisy_training_loss_is_low_no_learning(
    diagnosis: Diagnosis,
) -> None:
    progress = diagnosis.table("int_learning_progress_measured").iloc[0]
    assert progress["is_noise_bound"] and progress["relative_drop"] >= 0.1 and not progress["has_val_gain"]
    row = finding(diagnosis, "no_learning:no_val_gain")
    assert row["severity"] == "low"


@fixture_run(lambda: noisy_sparse_regression(val_gain=0.7))
def test_validation_that_gains_beside_a_too_noisy_training_loss_learned(diagnosis: Diagnosis) -> None:
    assert diagnosis.table("int_learning_progress_measured").iloc[0]["is_noise_bound"]
    assert not ids_of(diagnosis, "no_learning", "underfitting")


def noisy_sparse_regression_with_a_dip(held: bool) -> RunBuilder:
    """noisy_sparse_regression with no gain over the run, but a validation that dips 5.7% at its
    second evaluation (beyond its noise bar: the later evaluations barely move) and then either holds
    the dip or settles at or above its first value."""
    builder = noisy_sparse_regression(val_gain=0.0)
    later = 0.00330 if held else 0.00360
    builder.evals["val_loss"] = [0.0035, 0.0033] + [
        later + 0.00001 * (i % 2) for i in range(len(builder.evals) - 2)
    ]
    return builder


@pytest.mark.parametrize("held", [False, True])
@fixture_run(noisy_sparse_regression_with_a_dip)
def test_a_validation_dip_not_held_beside_a_too_noisy_training_loss_is_no_gain(
    diagnosis: Diagnosis, held: bool
) -> None:
    """A small dip (under a tenth) the later evaluations did not hold shows no learning where the
    training loss is too noisy to show a fall: low no_learning, its title saying so; held, it is a
    gain and the run learned."""
    progress = diagnosis.table("int_learning_progress_measured").iloc[0]
    assert progress["is_noise_bound"] and progress["val_gain"] >= progress["val_gain_threshold"]
    if held:
        assert progress["has_val_gain"] and not ids_of(diagnosis, "no_learning", "underfitting")
        return
    assert not progress["has_val_gain"]
    row = finding(diagnosis, "no_learning:no_val_gain")
    assert row["severity"] == "low"
    assert "a dip the later evaluations did not hold" in row["title"]


def small_fall_noisy_validation(gain: float) -> RunBuilder:
    """A regression whose training loss falls 9% over the run (under underfitting_max_drop, beyond its
    1% noise) and whose thirteen evaluations scatter about 6% around a level `gain` (relative) under
    the first evaluation's from the second on: the best evaluation's gain under the bar of three
    eval-to-eval jitters either way (a behavioural-cloning CNN's steering loss, the forty-eighth
    held-out half)."""
    builder = RunBuilder(seed=3)
    steps = builder.train["step"].to_numpy(dtype=float)
    builder.train["loss"] = 0.064 * (1 - 0.09 * steps / 240) * np.exp(builder.rng.normal(0, 0.01, len(steps)))
    jitter = np.array([0.0, 0.05, -0.04, 0.06, -0.05, 0.03, -0.06, 0.04, -0.03, 0.05, -0.05, 0.02, -0.02])
    levels = np.r_[1.0, np.full(len(builder.evals) - 1, 1 - gain)]
    builder.evals["val_loss"] = 0.0652 * levels * (1 + jitter[: len(builder.evals)])
    return builder


@pytest.mark.parametrize("gain", [0.0, 0.09])
@fixture_run(small_fall_noisy_validation)
def test_no_validation_gain_above_the_jitter_bar_where_both_losses_fell_is_low(
    diagnosis: Diagnosis, gain: float
) -> None:
    """Both losses fell (the later evaluations' median more than their jitter under the first): a gain
    the jitter cannot confirm is no evidence there was none, low; validation that stays at its first
    level beside the same training loss is no_learning, medium, as before."""
    progress = diagnosis.table("int_learning_progress_measured").iloc[0]
    assert progress["learning_verdict"] == "no_val_gain" and not progress["is_noise_bound"]
    row = finding(diagnosis, "no_learning:no_val_gain")
    assert row["severity"] == ("low" if gain else "medium")
    assert ("only that jitter leaves the validation gain unconfirmed" in row["evidence"]) == bool(gain)


@fixture_run(lambda: knocked_off_its_optimum(train_keeps_falling=True))
def test_validation_worse_while_training_keeps_falling_is_overfitting(diagnosis: Diagnosis) -> None:
    assert not ids_of(diagnosis, "no_learning", "underfitting")
    assert finding(diagnosis, "overfitting:40")["detector_severity"] == "high"


# --- a pretrained language model above ln V at its first log -------------------------------


@fixture_run(lambda: fine_tune(2e-5, 1.7, rise=0.0).plant_initial_loss([10.6]))
def test_pretrained_start_above_ln_vocab_is_a_broken_start(diagnosis: Diagnosis) -> None:
    # 10.6 against ln 32000 = 10.37: only 2% above, which a fresh init can be, but the next losses are
    # at 2.0, so the model was pretrained and should have started far below ln V
    row = finding(diagnosis, "initial_loss_too_high:start")
    assert row["severity"] == "medium"
    assert "a pretrained model" in row["evidence"]
    assert reference(diagnosis)["regime"] == "fine_tune"


@fixture_run(lambda: fine_tune(2e-5, 1.7, rise=0.0).plant_initial_loss([10.2]))
def test_pretrained_start_under_ln_vocab_is_no_finding(diagnosis: Diagnosis) -> None:
    assert not ids_of(diagnosis, "initial_loss_too_high")


@fixture_run(lambda: RunBuilder().plant_initial_loss([12.1, 15.0, 12.9]))
def test_start_is_the_highest_of_the_first_losses(diagnosis: Diagnosis) -> None:
    # per-batch losses: the first (12.1) is under ln 262144 = 12.48, the second 1.2x it; no vocabulary
    # is known, so low
    row = finding(diagnosis, "initial_loss_too_high:start")
    assert row["severity"] == "low"
    assert row["observed_value"] == pytest.approx(15.0)
    assert "the vocabulary is not known" in row["evidence"]


def test_model_names_under_fine_tuning_keys_are_reference_keys(tmp_path) -> None:
    from run_diagnosis.importers.reference_keys import reference_keys

    log = tmp_path / "train.log"
    log.write_text("")
    nested = {"model": {"pretrained_model": "Rostlab/prot_t5_xl_uniref50"}}
    assert reference_keys(nested, str(log))[0] == {"model_name": "Rostlab/prot_t5_xl_uniref50"}
    flat = {"base_model": "unsloth/llama-3-8b"}
    assert reference_keys(flat, str(log))[0] == {"model_name": "unsloth/llama-3-8b"}


# --- overfitting graded on levels ---------------------------------------------------------


def noisy_plateau_with_a_lucky_low() -> RunBuilder:
    """Validation flat at ~3.2 from step 80 with +-1.5% eval noise, one lucky low (3.01) at step 120
    and the last evaluation at 3.21 (+6.6% over it) while training keeps falling."""
    builder = RunBuilder()
    tail = [3.25, 3.17, 3.01, 3.22, 3.18, 3.24, 3.19, 3.23, 3.21]
    builder.evals.loc[builder.evals["step"] >= 80, "val_loss"] = tail
    return builder


@fixture_run(noisy_plateau_with_a_lucky_low)
def test_rise_from_a_lucky_low_within_the_eval_noise_is_low(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "overfitting:120")
    assert row["detector_severity"] == "low"
    assert "within 2 standard errors of the eval-to-eval noise" in row["evidence"]


def dip_below_a_plateau() -> RunBuilder:
    """Validation evaluated every 5 steps: down to a plateau of 3.2 (+-0.3%) by step 80, a dip to
    ~3.0 over steps 180-195 (its minimum, 2.98, at 190), then back at the plateau to the end (+7%
    over the minimum) while training keeps falling: an eval-set or data change, not a rise."""

    def curve(steps: np.ndarray) -> np.ndarray:
        val = np.where(steps <= 80, 5.5 + (3.2 - 5.5) * steps / 80, 3.2)
        dip = (steps >= 180) & (steps <= 195)
        val[dip] = [3.01, 3.0, 2.98, 3.02][: int(dip.sum())]
        return val

    return validation_shaped(5, curve, seed=3)


def validation_shaped(interval: int, curve, seed: int) -> RunBuilder:
    """Validation every `interval` steps along `curve(steps)` with 0.3% noise (the points
    `curve` sets exactly keep their noise too), training falling 10% more over the run."""
    builder = RunBuilder(eval_interval=interval)
    steps = builder.evals["step"].to_numpy(dtype=float)
    noise = np.random.default_rng(seed).normal(0, 0.003, len(steps))
    builder.evals["val_loss"] = curve(steps) * np.exp(noise)
    builder.train["loss"] = builder.train["loss"] * np.linspace(1.0, 0.9, len(builder.train))
    return builder


@fixture_run(dip_below_a_plateau)
def test_dip_below_a_plateau_that_validation_returns_to_is_low(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "overfitting:190")
    assert row["detector_severity"] == "low"
    assert "a dip, not a rise after a minimum" in row["evidence"]
    assert diagnosis.query("select is_dip_from_plateau from main.int_validation_rises_measured").iloc[0, 0]


def validation_steps_up_once() -> RunBuilder:
    """Validation evaluated every 10 steps, still falling (3.6 -> 3.0 over steps 100-160, its
    minimum at 160), then one jump to 3.45 at step 170 and level there to the end while training
    keeps falling: the eval set or the data changed at step 170, not a drift of memorisation."""
    return validation_shaped(10, lambda steps: np.where(steps <= 160, 5.5 - 2.5 * steps / 160, 3.45), seed=5)


@fixture_run(validation_steps_up_once)
def test_a_validation_rise_in_one_step_is_low(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "overfitting:160")
    assert row["detector_severity"] == "low"
    assert "a step, not a drift" in row["evidence"]


def overfitting_on_another_scale() -> RunBuilder:
    """The planted overfitting (validation +8% from step 100) in a validation series 3.5x below the
    training loss: another quantity or another set."""
    builder = RunBuilder().plant_overfitting(100, 0.08)
    builder.evals["val_loss"] = builder.evals["val_loss"] / 3.5
    return builder


@fixture_run(overfitting_on_another_scale)
def test_overfitting_in_a_validation_series_off_the_training_scale_is_low(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "overfitting:100")
    assert row["detector_severity"] == "low"
    assert "not on its scale" in row["evidence"]


# --- an LR that never anneals, with the warmup unknown -----------------------------------


def schedule_unknown(builder: RunBuilder) -> RunBuilder:
    return builder.plant_config(type=None, warmup_steps=None, decay_steps=None, min_lr=None)


@fixture_run(lambda: schedule_unknown(RunBuilder().plant_constant_lr()))
def test_run_ending_at_its_peak_lr_never_anneals_without_a_known_warmup(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "schedule_sanity:never_anneals")
    assert row["severity"] == "low"  # no decay declared: it may be by design


@fixture_run(lambda: schedule_unknown(RunBuilder()))
def test_run_that_anneals_without_a_known_warmup_is_no_finding(diagnosis: Diagnosis) -> None:
    assert "schedule_sanity:never_anneals" not in ids_of(diagnosis, "schedule_sanity")


@fixture_run(lambda: schedule_unknown(RunBuilder().plant_early_stop(15)).plant_config(total_steps=None))
def test_log_ending_while_the_lr_still_rises_is_not_never_anneals(diagnosis: Diagnosis) -> None:
    # stopped at step 15 of a 20-step warmup nobody declared, its length unknown too: the LR's last value
    # is its highest, but the run never reached a peak to stay at (nor does a run that died at step 1)
    assert "schedule_sanity:never_anneals" not in ids_of(diagnosis, "schedule_sanity")


@fixture_run(lambda: schedule_unknown(from_scratch(0.45, warmup_steps=300, total_steps=None)))
def test_lr_still_rising_at_the_end_of_a_run_of_unknown_length_is_a_low_warmup_note(
    diagnosis: Diagnosis,
) -> None:
    # no warmup declared, the logged LR rises to the last step and the run learns, so nothing names
    # the warmup as a cause: the LR that never reached its peak is still said, low
    row = finding(diagnosis, "schedule_sanity:warmup_covers_run")
    assert row["severity"] == "low"
    assert "still rising at the end" in row["title"]


def long_warmup(warmup_steps: int, declared: bool) -> RunBuilder:
    """A 240-step run warming its LR up over `warmup_steps`, then decaying: declared in the config, or
    only seen in the logged LR (schedule unknown)."""
    builder = RunBuilder(warmup_steps=warmup_steps)
    return builder if declared else schedule_unknown(builder)


@pytest.mark.parametrize(
    ("warmup_steps", "declared", "found"),
    [(150, True, True), (150, False, True), (20, True, False), (20, False, False)],
)
@fixture_run(long_warmup)
def test_a_warmup_over_most_of_the_run_is_a_low_note(
    diagnosis: Diagnosis, warmup_steps: int, declared: bool, found: bool
) -> None:
    # a warmup of 150 of 240 steps (62%, configured or as logged): the run peaks and decays, late (low); the
    # usual few percent (20 steps) is nothing
    ids = ids_of(diagnosis, "schedule_sanity")
    assert ("schedule_sanity:warmup_most_of_run" in ids) == found
    if found:
        row = finding(diagnosis, "schedule_sanity:warmup_most_of_run")
        assert row["severity"] == "low"
        assert "the LR peaks at step 150 of 240" in row["title"]


@pytest.mark.parametrize(("factor", "found"), [(0.04, True), (0.9, False)])
@fixture_run(lambda factor, found: schedule_unknown(RunBuilder(min_lr=0.0).plant_lr_scale(factor)))
def test_an_lr_that_never_came_near_its_configured_peak_is_medium(
    diagnosis: Diagnosis, factor: float, found: bool
) -> None:
    # only the peak is configured (an Ultralytics lr0): the logged LR rises and falls at 4% of it (a
    # warmup longer than the run's updates); at 90% of it (a sparse log's maximum) nothing is said
    ids = ids_of(diagnosis, "schedule_sanity", "lr_schedule_mismatch")
    assert ("schedule_sanity:peak_never_reached" in ids) == found, ids
    if found:
        row = finding(diagnosis, "schedule_sanity:peak_never_reached")
        assert row["severity"] == "medium"
        assert "4.0% of peak_lr" in row["title"] and "fell after it" in row["evidence"]


def slowly_rising_lr(builder: RunBuilder) -> RunBuilder:
    """The logged LR creeps up from 4.0% to 4.03% of the configured peak to the last step: a long
    one-cycle warmup the log stopped early in (a run stopped in its first epoch)."""
    builder.train["learning_rate"] = np.linspace(0.04, 0.0403, len(builder.train)) * builder.peak_lr
    return builder


@fixture_run(lambda: slowly_rising_lr(schedule_unknown(RunBuilder(min_lr=0.0))))
def test_an_lr_still_rising_far_below_its_peak_at_the_end_is_not_a_missed_peak(diagnosis: Diagnosis) -> None:
    # cut off on its way up, however slowly it rose (the warmup checks say it), not an LR that turned
    # below its peak: a first version of the rule read a rise within lr_relative_tolerance as flat
    assert "schedule_sanity:peak_never_reached" not in ids_of(diagnosis, "schedule_sanity")


@fixture_run(lambda: RunBuilder(min_lr=0.0).plant_lr_scale(0.04))
def test_a_scaled_peak_against_a_known_schedule_is_the_schedule_checks_alone(diagnosis: Diagnosis) -> None:
    # with the whole schedule configured every step is compared: lr_schedule_mismatch names the scaled
    # peak, and the peak alone is not said twice
    ids = ids_of(diagnosis, "schedule_sanity", "lr_schedule_mismatch")
    assert "lr_schedule_mismatch:scaled_peak" in ids and "schedule_sanity:peak_never_reached" not in ids


@fixture_run(lambda: RunBuilder(total_steps=2400).plant_early_stop(200))
def test_run_stopped_at_a_small_share_of_its_schedule_never_annealed_low(diagnosis: Diagnosis) -> None:
    # a cosine over 2400 steps, the log stops at 200 with the LR at 98% of its peak: the final loss is
    # that of an unannealed model; low, since the schedule may be right and the run cut short
    row = finding(diagnosis, "schedule_sanity:never_anneals")
    assert row["severity"] == "low"
    assert "because the run stopped at 8.3% of its configured 2400 steps" in row["title"]
    assert ids_of(diagnosis, "run_ended_early") == ["run_ended_early:stopped_early"]


@fixture_run(lambda: RunBuilder(total_steps=2400).plant_early_stop(1900))
def test_run_stopped_late_in_its_decay_is_no_never_anneals(diagnosis: Diagnosis) -> None:
    assert "schedule_sanity:never_anneals" not in ids_of(diagnosis, "schedule_sanity")


def no_configured_length(builder: RunBuilder) -> RunBuilder:
    return builder.plant_config(total_steps=None, decay_steps=None)


@fixture_run(lambda: no_configured_length(RunBuilder(total_steps=600, min_lr=0.0).plant_early_stop(400)))
def test_a_log_stopped_while_its_cosine_still_falls_ended_before_its_schedule(diagnosis: Diagnosis) -> None:
    # no length configured: the LR, at 25% of its peak and still falling along a cosine to 0 at
    # step 600, says where the schedule would end
    row = finding(diagnosis, "run_ended_early:schedule_unfinished")
    assert row["severity"] == "low"
    assert "the cosine schedule it follows ends near step" in row["title"]
    # the decay's start is read as the last step printed at the peak: within a few steps of 20
    assert row["expected_value"] == pytest.approx(600, rel=0.01)


def logged_to_its_end(min_lr: float) -> RunBuilder:
    return no_configured_length(RunBuilder(total_steps=600, min_lr=min_lr).plant_early_stop(600))


@pytest.mark.parametrize("min_lr", [3e-4, 0.0], ids=["cosine_to_a_floor", "cosine_to_zero"])
@fixture_run(logged_to_its_end)
def test_a_schedule_logged_to_its_end_is_not_unfinished(diagnosis: Diagnosis, min_lr: float) -> None:
    # logged to its end with no run-end event: a floor of 10% of the peak misfits a cosine to 0,
    # so nothing is projected; a cosine to 0 is projected where it ends
    assert "run_ended_early:schedule_unfinished" not in ids_of(diagnosis, "run_ended_early")


PLANNED_EPOCHS = "in epoch 1 of the 100 planned (num_epochs in the hparams)"
EPOCHS_UNFINISHED = f"epochs unfinished: the log ends {PLANNED_EPOCHS}"


def with_epochs_unfinished(builder: RunBuilder) -> RunBuilder:
    """The importer's note that the log ends in the first of 100 planned epochs, at its last step
    (lightning_csv writes it when no step count for the plan is known)."""
    last = int(builder.train["step"].max())
    note = pd.DataFrame([(last, EPOCHS_UNFINISHED)], columns=["step", "event"])
    builder.events = pd.concat([builder.events, note], ignore_index=True)
    return builder


def stopped_in_its_first_epoch() -> RunBuilder:
    return with_epochs_unfinished(no_configured_length(RunBuilder(total_steps=600).plant_early_stop(400)))


@fixture_run(stopped_in_its_first_epoch)
def test_a_log_that_ends_before_its_planned_epochs_ended_early(diagnosis: Diagnosis) -> None:
    # no step length configured, but the importer read 100 planned epochs and the log ends in the
    # first: the run stopped early (said before the schedule projection, a weaker evidence)
    row = finding(diagnosis, "run_ended_early:epochs_unfinished")
    assert row["severity"] == "low"
    assert row["title"].startswith(f"The log ends at step 400, {PLANNED_EPOCHS}, with no crash logged")
    assert "configured length unknown" in row["evidence"] and EPOCHS_UNFINISHED in row["evidence"]
    assert ids_of(diagnosis, "run_ended_early") == ["run_ended_early:epochs_unfinished"]


@fixture_run(lambda: with_epochs_unfinished(no_configured_length(RunBuilder(total_steps=600))))
def test_planned_epochs_unfinished_but_a_run_end_logged_is_complete(diagnosis: Diagnosis) -> None:
    # the run says it finished (a max_steps the log does not show ended it): not an early end
    assert not ids_of(diagnosis, "run_ended_early")


def validation_only() -> RunBuilder:
    """A run that logged only its validation loss (it bottoms at step 120, then climbs 30%)."""
    builder = RunBuilder().plant_overfitting(120, 0.3)
    builder.train = builder.train.iloc[0:0]
    return builder


@fixture_run(validation_only)
def test_run_with_a_validation_loss_only_is_diagnosed_on_it(diagnosis: Diagnosis) -> None:
    row = finding(diagnosis, "overfitting:120")
    assert "with no training loss to compare" in row["title"]
    assert not ids_of(diagnosis, "no_learning", "nan_loss", "loss_spikes", "underfitting")


def heavy_tailed_gradients() -> RunBuilder:
    """Gradient norms spread over orders of magnitude (log-normal, sigma 2.5: the middle half spans
    about 30x), as on a memorising LoRA classifier, with a 50-norm burst the loss does not react to."""
    builder = RunBuilder().plant_grad_burst(150, 2, 50.0)
    spread = np.exp(builder.rng.normal(0.0, 2.5, len(builder.train)))
    builder.train["grad_norm"] = np.where(builder.train["grad_norm"] == 50.0, 50.0, 0.1 * spread)
    return builder


@fixture_run(heavy_tailed_gradients)
def test_gradient_bursts_within_a_heavy_tailed_series_are_low(diagnosis: Diagnosis) -> None:
    found = diagnosis.findings()
    bursts = found[found["category"] == "grad_norm_spikes"]
    assert not bursts.empty and set(bursts["detector_severity"]) == {"low"}
    planted = bursts[(bursts["first_step"] <= 150) & (bursts["last_step"] >= 151)]
    assert len(planted) == 1 and "heavy-tailed" in planted.iloc[0]["evidence"]


# --- a loss with no learning signal --------------------------------------------------------


def rl_objective_loss() -> RunBuilder:
    """An RL run (GRPO-like): the logged loss is 0 to float rounding at every step, whatever is learned."""
    builder = RunBuilder()
    builder.train["loss"] = builder.rng.normal(0, 2e-6, len(builder.train))
    return builder


@fixture_run(rl_objective_loss)
def test_a_loss_that_is_zero_throughout_is_not_judged(diagnosis: Diagnosis) -> None:
    """No verdict on learning, and the report's coverage says why (the reward is the signal)."""
    assert not ids_of(diagnosis, "no_learning", "underfitting")
    coverage = diagnosis.query(
        "select category, could_run, reason from main.check_coverage"
        " where category in ('no_learning', 'underfitting')"
    )
    assert not coverage["could_run"].any()
    assert coverage["reason"].str.contains("every logged loss is 0").all()


def nothing_trained() -> RunBuilder:
    """Every logged loss and gradient norm exactly 0 from the first log (every label masked: a loss with
    no gradient), over a run that logs its gradient norm."""
    builder = RunBuilder()
    builder.train["loss"] = 0.0
    builder.train["grad_norm"] = 0.0
    return builder


@fixture_run(nothing_trained)
def test_a_zero_loss_with_a_zero_gradient_from_the_start_is_nothing_trained(diagnosis: Diagnosis) -> None:
    """Unlike an RL objective (0 at its sampling policy, with a gradient), no gradient at all: critical,
    and the coverage does not call the learning check unable to run."""
    row = finding(diagnosis, "no_learning:zero_loss")
    assert row["severity"] == "critical"
    assert "exactly 0 from the first log" in row["title"]
    coverage = diagnosis.query("select could_run from main.check_coverage where category = 'no_learning'")
    assert coverage["could_run"].all()


# --- a relaunch whose counter went back to step 1 (int_learning_progress_measured) ----------


def relaunched_at_step_one(carried: bool) -> RunBuilder:
    """A log whose counter goes back to step 1 after 120 steps, as a second Keras fit() appends
    to the same CSVLogger: the relaunch carried its weights on (its losses go on from where the
    first attempt ended: the curve's steps 121-240, renumbered 1-120), or it started afresh and
    stayed at the first loss (flat around the first attempt's first losses)."""
    builder = RunBuilder()
    first = builder.train[builder.train["step"] <= 120].copy()
    if carried:
        second = builder.train[builder.train["step"] > 120].copy()
    else:
        second = first.copy()
        second["loss"] = float(first["loss"].iloc[:3].median()) * np.exp(
            builder.rng.normal(0, 0.01, len(second))
        )
    second["step"] = np.arange(1, len(second) + 1)
    builder.train = pd.concat([first, second], ignore_index=True)
    builder.evals = builder.evals.iloc[0:0]
    builder.events = builder.events[builder.events["step"] == 0]
    return builder


@fixture_run(lambda: relaunched_at_step_one(carried=True))
def test_a_relaunch_that_carried_its_weights_on_is_judged_from_the_log_start(diagnosis: Diagnosis) -> None:
    progress = diagnosis.query("select * from main.int_learning_progress_measured").iloc[0]
    assert bool(progress["is_carried_relaunch"])
    assert progress["start_loss"] > 1.5 * progress["counted_start_loss"]  # the log's first losses
    assert progress["learning_verdict"] == "learned"
    assert not ids_of(diagnosis, "no_learning", "underfitting")
    assert ids_of(diagnosis, "run_restart")  # the counter still went back


@fixture_run(lambda: relaunched_at_step_one(carried=False))
def test_a_fresh_relaunch_that_stays_at_its_start_is_still_no_learning(diagnosis: Diagnosis) -> None:
    progress = diagnosis.query("select * from main.int_learning_progress_measured").iloc[0]
    assert not bool(progress["is_carried_relaunch"])
    assert progress["learning_verdict"] == "flat"
    assert finding(diagnosis, "no_learning:run")["severity"] == "high"
