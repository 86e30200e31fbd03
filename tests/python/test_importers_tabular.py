"""Importers for tabular/JSON training logs: HF Trainer, LLaMA-Factory, Lightning, W&B, canonical.

Real public logs are read in place from ../shared/real-logs (never copied into the repo);
the numbers asserted come from ../shared/real-logs/SOURCES.md. Malformed inputs are built
in tmp_path.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from run_diagnosis import diagnose, importers, multi_run
from run_diagnosis.importers import (
    RunImportError,
    canonical_files,
    hf_trainer,
    lightning_csv,
    llamafactory_log,
    metric_frames,
    training_args,
    wandb_history,
    wandb_run,
)
from run_diagnosis.importers.aliases import (
    ENV_VAR,
    UNREADABLE,
    load_aliases,
    python_literal,
    step_times_from_elapsed,
)
from run_diagnosis.importers.canonical import (
    EVAL_COLUMNS,
    EVENT_COLUMNS,
    REQUIRED_SCHEDULE_KEYS,
    REQUIRED_TOP_KEYS,
    SHARD_COLUMNS,
    TRAIN_COLUMNS,
    RunData,
    config_document,
    numeric_select,
    write_run,
)
from run_diagnosis.run_files import INTERVAL_MEAN_KEY
from support.paths import SHARED

REAL_LOGS = SHARED / "real-logs"
SAMPLE_RUN = SHARED / "sample-run"


def uses_real_logs(test: Any) -> Any:
    """Mark a test that reads ../shared/real-logs in place; skip it when they are absent."""
    skip = pytest.mark.skipif(not REAL_LOGS.is_dir(), reason=f"real logs not present at {REAL_LOGS}")
    return pytest.mark.real_logs(skip(test))


def real(name: str) -> Path:
    return REAL_LOGS / name


def events(run: RunData) -> list[tuple[int, str]]:
    return [(int(step), str(event)) for step, event in run.events.itertuples(index=False, name=None)]


def notes_with(run: RunData, text: str) -> list[str]:
    return [note for note in run.notes if text in note]


def gaps_as_none(values: pd.Series) -> list[float | None]:
    return [None if pd.isna(v) else float(v) for v in values]


def write_state(folder: Path, rows: list[dict[str, Any]], **top: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    state = {"global_step": max((r.get("step", 0) for r in rows), default=0), "log_history": rows, **top}
    path = folder / "trainer_state.json"
    path.write_text(json.dumps(state, indent=2), encoding="utf-8")
    return path


def train_rows(steps: range, **extra: Any) -> list[dict[str, Any]]:
    return [
        {"step": s, "loss": 2.0 - s / 1000, "learning_rate": 1e-5, "grad_norm": 1.5, **extra} for s in steps
    ]


# ---------------------------------------------------------------- HF Trainer, real files


@uses_real_logs
def test_whisper_old_transformers_has_no_grad_norm() -> None:
    run = hf_trainer.load(real("hf-whisper-ja-overfit/trainer_state.json"))
    assert len(run.train) == 200
    assert run.train["step"].tolist()[:2] == [25, 50] and run.train["step"].iloc[-1] == 5000
    assert run.train["grad_norm"].isna().all()
    assert notes_with(run, "no grad_norm in this log (transformers<4.38")
    assert run.evals["step"].tolist() == [1000, 2000, 3000, 4000, 5000]
    assert run.evals["val_loss"].round(3).tolist() == [0.321, 0.358, 0.394, 0.412, 0.420]
    assert run.evals["val_accuracy"].isna().all()  # eval_wer is not an accuracy
    assert notes_with(run, "eval_wer")
    assert run.config["total_steps"] == 5000
    assert run.config["eval_interval"] == 1000 and notes_with(run, "inferred")
    assert (3000, "best checkpoint: checkpoint-3000 (best_metric 0.743156)") in events(run)
    assert any(step == 5000 and event.startswith("run finished") for step, event in events(run))
    document = config_document(run)
    assert {"type", "peak_lr", "grad_clip_norm"} <= set(document["provenance"]["unknown_fields"])


@uses_real_logs
def test_tinyllama_checkpoint_copy() -> None:
    run = hf_trainer.load(real("hf-tinyllama-sft"))
    assert len(run.train) == 186 and len(run.evals) == 14
    assert run.train["step"].iloc[0] == 15 and run.train["step"].iloc[-1] == 2790
    loss_at = dict(zip(run.train["step"], run.train["loss"], strict=True))
    assert (loss_at[1395], loss_at[1410]) == (1.1062, 1.1563)  # the epoch-boundary bump
    assert run.config["total_steps"] == 2808
    assert run.config["logging_interval"] == 15 and run.config["eval_interval"] == 200
    assert run.config["checkpoint_interval"] == 200 and run.config["batch_size"] == 2
    assert run.config["num_epochs"] == 2
    assert run.evals["val_accuracy"].iloc[-1] == pytest.approx(0.75085, abs=1e-4)
    assert run.evals["val_loss"].iloc[-1] == pytest.approx(1.1219, abs=1e-4)
    assert not any(event.startswith("run finished") for _, event in events(run))
    assert notes_with(run, "global_step 2800 of max_steps 2808")
    assert run.config["grad_norm_measured"] == "before_clipping"


@uses_real_logs
def test_jaong_predict_rows_skipped_and_config_from_cmd_txt() -> None:
    run = hf_trainer.load(real("hf-jaong-cpt-10epoch"))
    assert len(run.train) == 10 and len(run.evals) == 10
    assert run.evals["step"].tolist() == [549 * k for k in range(1, 11)]
    assert notes_with(run, "skipped 10 log_history rows without 'step' (predict_*")
    assert notes_with(run, "cmd.txt")
    assert run.schedule == {
        "type": "warmup_linear",
        "peak_lr": 2e-05,
        "min_lr": 0.0,
        "warmup_steps": 0,
        "decay_steps": 5490,
        "source_type": "linear",
    }
    assert run.config["grad_clip_norm"] == 1.0
    assert run.config["total_steps"] == 5490 and run.config["batch_size"] == 6
    assert run.config["seed"] == 6000 and run.config["precision"] == "fp32"
    assert run.config["num_epochs"] == 10
    assert run.config["checkpoint_interval"] is None and notes_with(run, "save_strategy=no")
    assert run.config["eval_interval"] == 549 and notes_with(run, "evaluation_strategy=epoch")
    best = run.evals.loc[run.evals["val_loss"].idxmin()]
    assert (int(best["step"]), round(best["val_loss"], 4)) == (3294, 0.4853)  # epoch 6: overfitting after
    assert run.train["loss"].iloc[0] == 1.1409 and run.train["loss"].iloc[-1] == 0.2645
    assert (5490, "run finished: train_runtime 64358.151 s") in events(run)


@uses_real_logs
def test_law_llm_huge_early_loss_and_grad_norm() -> None:
    run = hf_trainer.load(real("hf-law-llm-loss-mismatch"))
    assert len(run.train) == 6 and len(run.evals) == 6
    assert run.train["loss"].iloc[0] == 284.8732
    assert run.train["grad_norm"].max() == pytest.approx(422.0, abs=0.1)
    assert run.config["total_steps"] == 692 and run.config["logging_interval"] == 100
    assert run.evals["val_loss"].iloc[-1] == pytest.approx(0.3038, abs=1e-4)


@uses_real_logs
def test_qwen_verifier() -> None:
    run = hf_trainer.load(real("hf-qwen05b-verifier/trainer_state.json"))
    assert len(run.train) == 24 and len(run.evals) == 6
    assert run.train["grad_norm"].iloc[:5].round(1).tolist() == [33.4, 11.8, 15.2, 13.8, 12.9]
    assert run.train["loss"].iloc[0] == 1.2847743034362793  # unrounded, as the newer format logs it
    val = run.evals["val_loss"].tolist()
    assert val == sorted(val, reverse=True) and round(val[0], 3) == 0.108 and round(val[-1], 3) == 0.049
    assert run.config["eval_interval"] == 20 and run.config["checkpoint_interval"] == 20
    assert next(event for step, event in events(run) if step == 120).startswith(
        "best checkpoint: checkpoint-120"
    )


# ---------------------------------------------------------------- LLaMA-Factory


@uses_real_logs
def test_llamafactory_folder_merges_state_and_step_times() -> None:
    run = llamafactory_log.load(real("llamafactory-mistral7b-lora"))
    assert run.source_format == "llamafactory_log"
    assert len(run.train) == 866 and run.evals.empty
    assert run.train["grad_norm"].max() == pytest.approx(16.25, abs=0.01)
    assert run.train.loc[run.train["grad_norm"].idxmax(), "step"] == 50
    times = run.train["step_time_sec"]
    assert math.isnan(times.iloc[0]) and times.notna().sum() == 865
    assert times.median() == pytest.approx(2.4, abs=0.05)
    # 10 steps per interval; together they span 5:39:46 minus the first interval's 0:00:24
    assert (times * 10).sum() == pytest.approx(5 * 3600 + 39 * 60 + 46 - 24, abs=0.01)
    assert config_document(run)[INTERVAL_MEAN_KEY] is True  # slow_steps judges windows, not steps
    assert run.config["total_steps"] == 8660 and run.config["eval_interval"] is None
    assert notes_with(run, "eval_steps=500 is recorded but log_history has no eval rows")
    assert notes_with(run, "step times from trainer_log.jsonl")
    assert not notes_with(run, "no per-step timing")


@uses_real_logs
def test_llamafactory_jsonl_alone() -> None:
    run = llamafactory_log.load(real("llamafactory-mistral7b-lora/trainer_log.jsonl"))
    assert len(run.train) == 866
    assert run.train["grad_norm"].isna().all() and notes_with(run, "pass the folder")
    assert run.train["step_time_sec"].median() == pytest.approx(2.4, abs=0.05)
    assert run.train["learning_rate"].max() == pytest.approx(5e-5)
    assert run.config["total_steps"] == 8660 and run.config["logging_interval"] == 10
    assert config_document(run)[INTERVAL_MEAN_KEY] is True
    assert events(run) == [(8660, "run finished")]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8"
    )
    return path


def test_llamafactory_resume_eval_and_long_elapsed(tmp_path: Path) -> None:
    base = {"total_steps": 40}
    log = write_jsonl(
        tmp_path / "trainer_log.jsonl",
        [
            {**base, "current_steps": 10, "loss": 2.0, "lr": 1e-5, "elapsed_time": "23:59:50"},
            {**base, "current_steps": 20, "loss": 1.9, "lr": 1e-5, "elapsed_time": "1 day, 0:00:10"},
            {**base, "current_steps": 20, "eval_loss": 1.8, "elapsed_time": "1 day, 0:05:10"},
            {**base, "current_steps": 30, "loss": 1.7, "lr": 1e-5, "elapsed_time": "1 day, 0:05:40"},
            {**base, "current_steps": 30, "loss": 1.7, "lr": 1e-5, "elapsed_time": "0:00:05"},
            {**base, "current_steps": 40, "loss": 1.6, "lr": 1e-5, "elapsed_time": "0:00:35"},
        ],
    )
    run = llamafactory_log.load(log)
    assert run.train["step"].tolist() == [10, 20, 30, 30, 40]  # kept as logged, duplicates included
    # 10->20: 20 s; 20->30 counted from the eval line, so the 300 s evaluation is not in it;
    # the second step 30 starts a new process (clock reset): no interval to measure
    assert gaps_as_none(run.train["step_time_sec"]) == [None, 2.0, 3.0, None, 3.0]
    assert run.evals[["step", "val_loss"]].values.tolist() == [[20, 1.8]]
    assert (30, "run resumed: elapsed_time restarted (a new training process)") in events(run)


def resumed_log_lines() -> list[dict[str, Any]]:
    """A resumed LLaMA-Factory log: steps 10-60, then a new process from step 40 (clock restarted,
    slightly different losses) to step 80."""
    base = {"total_steps": 80, "lr": 1e-5}
    first = [
        {**base, "current_steps": s, "loss": 2.0 - s / 100, "elapsed_time": f"0:{s // 10:02d}:00"}
        for s in range(10, 70, 10)
    ]
    resumed = [
        {**base, "current_steps": s, "loss": 2.01 - s / 100, "elapsed_time": f"0:{s // 10 - 3:02d}:30"}
        for s in range(40, 90, 10)
    ]
    return first + resumed


def test_llamafactory_log_written_twice_is_read_once(tmp_path: Path) -> None:
    """Two processes appending to one trainer_log.jsonl write every line twice, interleaved
    (issue 21): each line is read once, so the second copy neither becomes a row of its own nor
    a zero-length interval that reads as a new attempt; the real resume is still seen."""
    lines = resumed_log_lines()
    once = llamafactory_log.load(write_jsonl(tmp_path / "once" / "trainer_log.jsonl", lines))
    twice_path = write_jsonl(
        tmp_path / "twice" / "trainer_log.jsonl", [line for line in lines for _ in (1, 2)]
    )
    twice = llamafactory_log.load(twice_path)
    pd.testing.assert_frame_equal(twice.train, once.train)
    assert twice.train["step"].tolist() == [10, 20, 30, 40, 50, 60, 40, 50, 60, 70, 80]
    assert events(twice) == events(once)
    assert (40, "run resumed: elapsed_time restarted (a new training process)") in events(twice)
    assert notes_with(twice, "11 lines of trainer_log.jsonl repeat an earlier line exactly")
    assert not notes_with(once, "repeat an earlier line")


def test_llamafactory_bad_line_names_the_line(tmp_path: Path) -> None:
    log = write_jsonl(
        tmp_path / "trainer_log.jsonl",
        [
            {"current_steps": 10, "total_steps": 20, "loss": 1.0, "elapsed_time": "0:00:10"},
            {"current_steps": 20, "total_steps": 20, "loss": 0.9, "elapsed_time": "0:00:20"},
            '{"current_steps": 30, "total_steps": 20, "loss": 0.8, "elapsed_',
        ],
    )
    with pytest.raises(RunImportError, match=r"trainer_log\.jsonl, line 3: not valid JSON"):
        llamafactory_log.load(log)


def test_llamafactory_bad_elapsed_names_line_and_key(tmp_path: Path) -> None:
    log = write_jsonl(
        tmp_path / "trainer_log.jsonl",
        [{"current_steps": 10, "total_steps": 20, "loss": 1.0, "elapsed_time": "ten seconds"}],
    )
    with pytest.raises(
        RunImportError, match=r"line 1, key 'elapsed_time': expected H:MM:SS; found 'ten seconds'"
    ):
        llamafactory_log.load(log)


# ---------------------------------------------------------------- HF Trainer, built inputs


def test_training_args_json_cosine_warmup_ratio(tmp_path: Path) -> None:
    write_state(tmp_path, train_rows(range(10, 101, 10)), max_steps=100, logging_steps=10, save_steps=50)
    (tmp_path / "training_args.json").write_text(
        json.dumps(
            {
                "learning_rate": 3e-4,
                "lr_scheduler_type": "cosine",
                "warmup_ratio": 0.05,
                "max_grad_norm": 0.5,
                "save_strategy": "steps",
                "bf16": True,
                "seed": 7,
            }
        ),
        encoding="utf-8",
    )
    run = hf_trainer.load(tmp_path)
    assert run.schedule["type"] == "warmup_cosine" and run.schedule["peak_lr"] == 3e-4
    assert run.schedule["min_lr"] == 0.0 and run.schedule["decay_steps"] == 100
    assert run.schedule["warmup_steps"] == 5 and notes_with(run, "ceil(warmup_ratio 0.05 x 100 steps) = 5")
    assert run.config["grad_clip_norm"] == 0.5 and run.config["precision"] == "bf16"
    assert run.config["checkpoint_interval"] == 50 and run.config["seed"] == 7
    assert config_document(run)["provenance"]["unknown_fields"] == []


def test_an_epoch_counter_falling_back_while_the_step_goes_on_is_a_resume(tmp_path: Path) -> None:
    # resumed from checkpoint-30 onto a dataset 20x larger: the step and log history carry over,
    # the epoch count starts again (0.63 -> 0.04); rounded epochs that repeat are no fallback
    rows = [
        {**row, "epoch": epoch}
        for row, epoch in zip(
            train_rows(range(10, 101, 10)),
            [0.21, 0.42, 0.63, 0.04, 0.04, 0.05, 0.06, 0.06, 0.07, 0.08],
            strict=True,
        )
    ]
    run = hf_trainer.load(write_state(tmp_path / "resumed", rows))
    resumes = run.events[run.events["event"].str.startswith("resuming from step 30 ")]
    assert (
        list(resumes["step"]) == [30]
        and "fell back from 0.63 at step 30 to 0.04 at step 40" in resumes["event"].iloc[0]
    )
    steady = [{**row, "epoch": round(row["step"] / 47, 2)} for row in train_rows(range(10, 101, 10))]
    assert (
        not hf_trainer.load(write_state(tmp_path / "steady", steady))
        .events["event"]
        .str.startswith("resuming")
        .any()
    )


def test_epoch_fallback_ignores_a_second_run_appended_with_its_own_steps() -> None:
    # a log holding a run started again from step 0 (the step falls too) is a restart the step
    # sequence shows; only a fallback while the step advances is a resume onto other data
    first = [(s, s / 50) for s in range(10, 101, 10)]
    second = [(s, s / 20) for s in range(10, 61, 10)]
    assert training_args.epoch_fallback_events(first + second) == []
    assert [
        step for step, _ in training_args.epoch_fallback_events([(10, 0.5), (20, 1.0), (30, 0.1), (40, 0.2)])
    ] == [20]


LAUNCH_SCRIPT = """export LR=2e-5
# torchrun --nproc_per_node=1 train.py \\
deepspeed train.py --deepspeed ds_config.json \\
    --learning_rate $LR \\
    --lr_scheduler_type "cosine" \\
    --warmup_ratio=0.1 \\
    --num_train_epochs 1 \\
    # --fsdp "full_shard auto_wrap" \\
"""


def test_launch_script_arguments_are_read_like_the_shell_reads_them() -> None:
    # a commented line ending in a backslash does not continue; $LR is the script's own assignment
    found = training_args.parse_script_arguments(LAUNCH_SCRIPT)
    assert found["learning_rate"] == {"2e-5"} and found["lr_scheduler_type"] == {"cosine"}
    assert found["warmup_ratio"] == {"0.1"} and "fsdp" not in found and "nproc_per_node" not in found


def test_a_launch_script_beside_the_state_gives_the_schedule_a_deepspeed_config_overrides(
    tmp_path: Path,
) -> None:
    rows = [{**row, "learning_rate": 2e-5} for row in train_rows(range(1, 41))]
    write_state(tmp_path, rows, max_steps=40)
    (tmp_path / "run.sh").write_text(LAUNCH_SCRIPT, encoding="utf-8")
    scheduler = {"type": "WarmupLR", "params": {"warmup_max_lr": 2e-5}}
    (tmp_path / "ds_config.json").write_text(json.dumps({"zero_optimization": {}, "scheduler": scheduler}))
    run = hf_trainer.load(tmp_path / "trainer_state.json")
    assert run.schedule["type"] == "warmup_cosine" and run.schedule["peak_lr"] == 2e-5
    assert run.schedule["warmup_steps"] == 4  # ceil(0.1 x 40)
    assert notes_with(run, "launch script arguments") and notes_with(run, "its own scheduler, WarmupLR")
    # a script whose learning_rate is not the logged peak may launch another run: not used
    (tmp_path / "run.sh").write_text(LAUNCH_SCRIPT.replace("LR=2e-5", "LR=1e-3"), encoding="utf-8")
    other = hf_trainer.load(tmp_path / "trainer_state.json")
    assert other.schedule == {} and notes_with(other, "launch script arguments not used")


def test_training_args_yaml_reads_exponent_text_and_min_lr_kwargs(tmp_path: Path) -> None:
    write_state(tmp_path, train_rows(range(1, 4)), max_steps=1000)
    (tmp_path / "training_args.yaml").write_text(
        "learning_rate: 5e-5\nlr_scheduler_type: cosine_with_min_lr\n"
        "lr_scheduler_kwargs: {min_lr_rate: 0.1}\nwarmup_steps: 30\n",
        encoding="utf-8",
    )
    run = hf_trainer.load(tmp_path / "trainer_state.json")
    assert run.schedule["peak_lr"] == 5e-5  # YAML 1.1 reads "5e-5" as text
    assert run.schedule["type"] == "warmup_cosine" and run.schedule["min_lr"] == pytest.approx(5e-6)
    assert run.schedule["warmup_steps"] == 30


def test_arguments_dump_regex_handles_old_enum_style() -> None:
    text = (
        "INFO - Training/evaluation parameters TrainingArguments(\n"
        "learning_rate=0.0001,\nlr_scheduler_type=SchedulerType.COSINE,\nwarmup_steps=0,\n"
        "evaluation_strategy=IntervalStrategy.STEPS,\nlogging_dir=runs\\Mar22,\nreport_to=[],\n)\n"
        "  Total train batch size (w. parallel, distributed & accumulation) = 1,024\n"
    )
    args = training_args.parse_arguments_dump(text)
    assert args is not None
    assert (
        args["learning_rate"] == 0.0001 and args["report_to"] == [] and args["logging_dir"] == "runs\\Mar22"
    )
    assert args["_total_train_batch_size"] == 1024
    assert training_args.normalise_enum("lr_scheduler_type", args["lr_scheduler_type"]) == "cosine"
    assert training_args.parse_arguments_dump("no dump here") is None


def test_binary_text_file_is_not_parsed_for_arguments(tmp_path: Path) -> None:
    write_state(tmp_path, train_rows(range(1, 4)))
    (tmp_path / "console.log").write_bytes(b"\x00\x01TrainingArguments(\nlearning_rate=0.1,\n)\n")
    run = hf_trainer.load(tmp_path)
    assert run.schedule == {} and notes_with(run, "no training arguments beside trainer_state.json")


def test_checkpoint_folders_latest_state_and_events(tmp_path: Path) -> None:
    write_state(tmp_path / "checkpoint-50", train_rows(range(10, 51, 10)))
    write_state(tmp_path / "checkpoint-100", train_rows(range(10, 101, 10)))
    assert hf_trainer.sniff(tmp_path)
    run = hf_trainer.load(tmp_path)
    assert len(run.train) == 10
    assert events(run) == [(50, "checkpoint saved: checkpoint-50"), (100, "checkpoint saved: checkpoint-100")]
    assert notes_with(run, "checkpoint-100/trainer_state.json")


def test_nan_loss_survives_write_run(tmp_path: Path) -> None:
    rows = train_rows(range(1, 4))
    rows[1]["loss"] = float("nan")
    rows[2]["grad_norm"] = float("inf")
    del rows[0]["grad_norm"]
    write_state(tmp_path / "run", rows)
    run = hf_trainer.load(tmp_path / "run")
    paths = write_run(run, tmp_path / "out")
    written = pd.read_csv(paths["train"], dtype=str, keep_default_na=False)
    assert written["loss"].tolist() == ["1.999", "nan", "1.997"]
    assert written["grad_norm"].tolist() == ["", "1.5", "inf"]  # never logged stays empty


def test_rows_of_other_shapes_are_counted(tmp_path: Path) -> None:
    rows = [*train_rows(range(1, 3)), {"step": 2, "epoch": 0.5, "custom": 1}, {"step": 3, "eval_loss": 1.0}]
    write_state(tmp_path, rows)
    run = hf_trainer.load(tmp_path)
    assert len(run.train) == 2 and len(run.evals) == 1
    assert notes_with(run, "skipped 1 log_history rows that are neither train nor eval rows (keys: custom)")


def test_eval_accuracy_as_percentage_is_not_copied(tmp_path: Path) -> None:
    write_state(tmp_path, [*train_rows(range(1, 3)), {"step": 2, "eval_loss": 1.0, "eval_accuracy": 87.5}])
    run = hf_trainer.load(tmp_path)
    assert run.evals["val_accuracy"].isna().all() and notes_with(run, "outside 0..1")


EPOCH_STEPS = 230  # the true epoch length of the fixtures below
MAXSIZE = 2**63 - 1  # sys.maxsize, what transformers writes as num_train_epochs for a streamed dataset


def streamed_epoch(step: int, max_steps: int) -> float:
    """transformers' epoch for a dataset without a length: epochs done + step in epoch / max_steps."""
    return step // EPOCH_STEPS + (step % EPOCH_STEPS) / max_steps


@pytest.mark.parametrize(
    ("epoch_of", "top"),
    [
        (lambda step: round(streamed_epoch(step, 1000), 2), {"num_train_epochs": MAXSIZE, "max_steps": 1000}),
        (lambda step: round(step / EPOCH_STEPS, 2), {"max_steps": 1000}),  # no num_train_epochs stated
    ],
    ids=["streamed dataset, num_train_epochs = sys.maxsize", "sized dataset, no num_train_epochs"],
)
def test_steps_per_epoch_from_the_logged_epoch(tmp_path: Path, epoch_of: Any, top: dict[str, Any]) -> None:
    rows = [{**row, "epoch": epoch_of(row["step"])} for row in train_rows(range(50, 1001, 50))]
    run = hf_trainer.load(write_state(tmp_path, rows, **top))
    assert run.config["num_epochs"] is None
    # within a logging interval (50) over the boundaries crossed (4)
    assert abs(run.config["steps_per_epoch"] - EPOCH_STEPS) <= 50 / 4
    assert notes_with(run, "from the logged epoch against step")
    if "num_train_epochs" in top:
        assert notes_with(run, "is not an epoch count")


def test_steps_per_epoch_is_never_zero(tmp_path: Path) -> None:
    rows = [{**r, "epoch": round(streamed_epoch(r["step"], 1000), 2)} for r in train_rows(range(50, 201, 50))]
    run = hf_trainer.load(write_state(tmp_path, rows, num_train_epochs=MAXSIZE, max_steps=1000))
    assert run.config.get("steps_per_epoch") is None  # under one epoch: no boundary to measure, never 0
    assert notes_with(run, "no epoch boundary to see")


def eval_set_rows(sets: dict[str, list[tuple[int, float]]]) -> list[dict[str, Any]]:
    """HF Trainer rows of a dict of eval datasets: one row per set and evaluation."""
    return [
        {"step": step, "epoch": step / 10, f"eval_{name}_loss": value, f"eval_{name}_runtime": 1.5}
        for name, points in sets.items()
        for step, value in points
    ]


def test_several_eval_sets_at_the_same_steps_are_averaged(tmp_path: Path) -> None:
    """eval_<set>_loss of each set at the same steps: val_loss is their mean (aliases.evaluation_sets)."""
    sets = {"g1": [(0, 4.0), (10, 2.0), (20, 3.0)], "g0": [(0, 6.0), (10, 1.0), (20, 2.0)]}
    write_state(tmp_path, [*train_rows(range(5, 25, 5)), *eval_set_rows(sets)])
    run = hf_trainer.load(tmp_path)
    assert run.evals["step"].tolist() == [0, 10, 20]
    assert run.evals["val_loss"].tolist() == [5.0, 1.5, 2.5]
    assert notes_with(run, "val_loss = the mean of 2 evaluation sets logged at the same 3 steps ('eval_g0_")
    assert not notes_with(run, "eval metrics not in the canonical eval log")


def test_several_eval_sets_at_other_steps_use_the_first(tmp_path: Path) -> None:
    sets = {"g1": [(10, 2.0), (20, 3.0)], "g0": [(10, 1.0), (20, 2.0), (30, 2.2)]}
    write_state(tmp_path, [*train_rows(range(5, 35, 5)), *eval_set_rows(sets)])
    run = hf_trainer.load(tmp_path)
    assert run.evals[["step", "val_loss"]].values.tolist() == [[10, 1.0], [20, 2.0], [30, 2.2]]
    assert notes_with(run, "val_loss <- 'eval_g0_loss', the first of 2 evaluation sets")


def test_accuracy_of_several_eval_sets_beside_one_eval_loss(tmp_path: Path) -> None:
    evals = [
        {"step": step, "eval_loss": loss, "eval_g0_accuracy": 0.5 + step / 100, "eval_g1_accuracy": 0.3}
        for step, loss in ((10, 2.0), (20, 1.5))
    ]
    write_state(tmp_path, [*train_rows(range(5, 25, 5)), *evals])
    run = hf_trainer.load(tmp_path)
    assert run.evals["val_loss"].tolist() == [2.0, 1.5]
    assert run.evals["val_accuracy"].tolist() == pytest.approx([0.45, 0.5])
    assert notes_with(run, "val_accuracy = the mean of 2 evaluation sets")


def test_several_validation_dataloaders_in_a_lightning_csv(tmp_path: Path) -> None:
    (tmp_path / "metrics.csv").write_text(
        "epoch,step,train_loss,val_loss/dataloader_idx_0,val_loss/dataloader_idx_1\n"
        "0,9,3.0,,\n0,9,,2.0,4.0\n1,19,2.5,,\n1,19,,1.0,nan\n",
        encoding="utf-8",
    )
    run = lightning_csv.load(tmp_path)
    assert run.evals["step"].tolist() == [9, 19]
    assert run.evals["val_loss"].tolist() == ["3", "nan"]  # a NaN in one set makes the mean NaN: visible
    assert notes_with(run, "val_loss = the mean of 2 evaluation sets")


def lightning_step_and_epoch_losses(folder: Path, steps_per_epoch: int, epochs: int) -> Path:
    """Lightning's CSV of self.log("train_loss", on_step=True, on_epoch=True) with the default
    log_every_n_steps=50: a train_loss_step row every 50 steps, a train_loss_epoch row each epoch."""
    rows = ["epoch,step,train_loss_step,train_loss_epoch,val_loss"]
    for step in range(steps_per_epoch * epochs):
        if (step + 1) % 50 == 0:
            rows.append(f"{step // steps_per_epoch},{step},{3.0 - step / 1000:.4f},,")
    for epoch in range(epochs):
        last = (epoch + 1) * steps_per_epoch - 1
        rows.append(f"{epoch},{last},,{3.0 - last / 1000:.4f},")
        rows.append(f"{epoch},{last},,,{3.1 - last / 1000:.4f}")
    (folder / "metrics.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def test_epoch_means_are_read_when_the_step_losses_are_sparser(tmp_path: Path) -> None:
    """Epochs of 5 steps: one step loss in 12 epochs, 12 epoch means: the epoch means are the series."""
    run = lightning_csv.load(lightning_step_and_epoch_losses(tmp_path, steps_per_epoch=5, epochs=12))
    assert len(run.train) == 12 and run.train["step"].tolist()[:2] == [4, 9]
    assert notes_with(run, "loss <- 'train_loss_epoch' (12 values), not 'train_loss_step' (1)")


def test_step_losses_are_read_when_they_are_the_fuller_series(tmp_path: Path) -> None:
    """Epochs of 200 steps: 4 step losses an epoch beat one mean an epoch: the per-step series stays."""
    run = lightning_csv.load(lightning_step_and_epoch_losses(tmp_path, steps_per_epoch=200, epochs=3))
    assert len(run.train) == 12 and run.train["step"].tolist()[:2] == [49, 99]
    assert not notes_with(run, "the epoch means are the fuller series")


def test_epoch_means_are_read_when_a_step_loss_is_logged_once_an_epoch(tmp_path: Path) -> None:
    """Epochs of 50 steps: one step loss an epoch (a single batch) beside one epoch mean (every
    batch of the epoch): as many of each, and the epoch means are read."""
    run = lightning_csv.load(lightning_step_and_epoch_losses(tmp_path, steps_per_epoch=50, epochs=8))
    assert len(run.train) == 8
    assert notes_with(run, "loss <- 'train_loss_epoch', not 'train_loss_step': as many values of each")


def test_step_losses_win_over_one_epoch_mean_whichever_name_the_resolver_chose(tmp_path: Path) -> None:
    """One epoch of 500 steps under a name prefix (`finetuning/`): ten step losses beside one epoch mean.
    The resolver's choice between the twins may fall on the epoch mean; the fuller series is read."""
    rows = ["epoch,finetuning/train_loss_epoch,finetuning/train_loss_step,finetuning/val_loss,step"]
    rows += [f"0,,{0.64 + (s % 3) / 100:.4f},,{s}" for s in range(49, 500, 50)]
    rows += ["0,,,0.374,499", "0,0.622,,,499"]
    (tmp_path / "metrics.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    run = lightning_csv.load(tmp_path)
    assert len(run.train) == 10 and run.train["step"].tolist()[:2] == [49, 99]
    assert all(
        not note.startswith("loss <- 'finetuning/train_loss_step'")
        or "the per-step values are the fuller" in note
        for note in run.notes
    )


def test_several_eval_sets_in_logged_records() -> None:
    """The importers of (step, {name: value}) records (MLflow, Trackio, Keras...) follow the same policy."""
    records = metric_frames.records_from_rows(
        [
            (1, {"train_loss": 2.0}, "row 1"),
            (1, {"eval/wiki_loss": 3.0, "eval/web_loss": 5.0}, "row 2"),
            (2, {"train_loss": 1.8}, "row 3"),
            (2, {"eval/wiki_loss": 2.0}, "row 4"),
        ]
    )
    frames = metric_frames.build_frames(records, "records")
    assert frames.evals[["step", "val_loss"]].values.tolist() == [[1, 3.0], [2, 2.0]]
    assert any("val_loss <- 'eval/wiki_loss', the first of 2 evaluation sets" in n for n in frames.notes)


# ---------------------------------------------------------------- malformed inputs


@uses_real_logs
def test_truncated_json_names_file_and_position(tmp_path: Path) -> None:
    text = real("hf-tinyllama-sft/trainer_state.json").read_text(encoding="utf-8")
    path = tmp_path / "trainer_state.json"
    path.write_text(text[:5000], encoding="utf-8")
    with pytest.raises(RunImportError) as raised:
        hf_trainer.load(path)
    message = str(raised.value)
    assert str(path) in message and "not valid JSON at line" in message and "truncated" in message


def test_empty_log_history(tmp_path: Path) -> None:
    path = write_state(tmp_path, [], max_steps=10)
    with pytest.raises(RunImportError, match=r"trainer_state\.json: key 'log_history' is empty"):
        hf_trainer.load(path)


def test_log_history_without_train_rows(tmp_path: Path) -> None:
    path = write_state(tmp_path, [{"step": 5, "eval_loss": 1.0}])
    with pytest.raises(RunImportError, match=r"none is a train row: expected rows with 'loss' and 'step'"):
        hf_trainer.load(path)


def test_step_that_is_not_a_number(tmp_path: Path) -> None:
    path = write_state(tmp_path, [{"step": "ten", "loss": 1.0}])
    with pytest.raises(
        RunImportError, match=r"log_history\[0\], key 'step': expected a whole number; found 'ten'"
    ):
        hf_trainer.load(path)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        (hf_trainer, "trainer_state.json"),
        (llamafactory_log, "trainer_log.jsonl"),
        (lightning_csv, "metrics.csv"),
        (wandb_history, "history.csv"),
        (wandb_history, "history.jsonl"),
        (canonical_files, "train_log.csv"),
    ],
)
def test_empty_file(tmp_path: Path, module: Any, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"")
    with pytest.raises(RunImportError, match="empty") as raised:
        module.load(path)
    assert str(path) in str(raised.value)


def test_unicode_names(tmp_path: Path) -> None:
    folder = tmp_path / "运行-ü ñ"
    write_state(folder, train_rows(range(10, 40, 10)))
    run = hf_trainer.load(folder)
    assert run.run_name == "运行-ü ñ" and len(run.train) == 3
    broken = tmp_path / "données" / "trainer_state.json"
    broken.parent.mkdir()
    broken.write_text('{"log_history": [', encoding="utf-8")
    with pytest.raises(RunImportError, match="données"):
        hf_trainer.load(broken)
    history = tmp_path / "历史.csv"
    history.write_text("step,损失\n1,2.5\n2,2.4\n", encoding="utf-8")
    aliases = tmp_path / "aliases.yaml"
    aliases.write_text("loss: [损失]\n", encoding="utf-8")
    run = wandb_history.load(history, aliases=aliases)
    assert run.train["loss"].tolist() == [2.5, 2.4] and run.run_name == "历史"


# ---------------------------------------------------------------- Lightning


@uses_real_logs
def test_lightning_version_0() -> None:
    run = lightning_csv.load(real("lightning-slm-sweep/version_0"))
    assert len(run.train) == 114 and run.train["step"].iloc[0] == 49
    assert run.train["loss"].iloc[0] == pytest.approx(8.6205, abs=1e-4)
    assert run.evals["step"].tolist() == [286 + 287 * k for k in range(20)]
    assert run.evals["val_loss"].iloc[0] == pytest.approx(6.8337, abs=1e-4)
    assert run.schedule == {"peak_lr": pytest.approx(5.3439e-05, rel=1e-4)}
    assert notes_with(run, "taken as peak_lr") and config_document(run)["lr_schedule"]["type"] is None
    assert run.config["num_epochs"] == 20 and run.config["eval_interval"] == 287
    assert run.config["total_steps"] == 5740 and notes_with(run, "20 x 287 steps per epoch")
    assert run.config["hparams"]["vocab_size"] == 50258
    assert run.train["grad_norm"].isna().all() and notes_with(run, "no grad_norm column")
    assert notes_with(run, "no learning-rate column")


@uses_real_logs
def test_lightning_pruned_high_lr_trial() -> None:
    run = lightning_csv.load(real("lightning-slm-sweep/version_19/metrics.csv"))
    assert run.schedule["peak_lr"] == pytest.approx(4.778e-4, rel=1e-3)
    val = run.evals["val_loss"].round(2).tolist()
    assert val[0] == 7.87 and val[-1] == 8.46 and val[-1] > val[0]
    assert notes_with(run, "stopped early")


@uses_real_logs
def test_lightning_sweep_folder_asks_for_one_version() -> None:
    assert lightning_csv.sniff(real("lightning-slm-sweep"))
    with pytest.raises(RunImportError, match=r"holds 40 Lightning runs \(version_0, version_1, version_2"):
        lightning_csv.load(real("lightning-slm-sweep"))


def test_lightning_epoch_column_gives_steps_per_epoch(tmp_path: Path) -> None:
    """Lightning logs the epoch on every row: 25 steps an epoch, four epochs, so the repetition
    check can number them (there are no shard ids); a log within one epoch says nothing."""
    folder = tmp_path / "version_0"
    folder.mkdir()
    rows = [f"{(s - 1) // 25},{s},{3.0 - s / 1000}" for s in range(1, 101)]
    (folder / "metrics.csv").write_text("epoch,step,train_loss\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert lightning_csv.load(folder).config["steps_per_epoch"] == 25
    (folder / "metrics.csv").write_text(
        "epoch,step,train_loss\n" + "\n".join(rows[:20]) + "\n", encoding="utf-8"
    )
    assert lightning_csv.load(folder).config.get("steps_per_epoch") is None


@pytest.mark.parametrize(
    ("hparams", "last_epoch", "event"),
    [
        ("max_epochs: 100\n", 0, "epochs unfinished: the log ends in epoch 1 of the 100 planned"),
        ("max_epochs: 1\n", 0, None),  # the one planned epoch is the one logged: nothing unfinished
        ("max_epochs: 100\nmax_steps: 8000\n", 0, None),  # a step count: int_run_ends_measured compares
        ("max_epochs: 100\n", 3, None),  # regular epoch ends give the plan's steps (total_steps)
    ],
    ids=["first_of_100", "one_planned", "max_steps", "epoch_length_known"],
)
def test_lightning_log_ending_before_its_planned_epochs_is_an_event(
    tmp_path: Path, hparams: str, last_epoch: int, event: str | None
) -> None:
    """No epoch ended (every row is epoch 0) and no max_steps: the plan's step count is unknown,
    so the importer says where the log ends against the planned epochs, as an event at its last
    step (int_run_ends_measured: end kind epochs_unfinished)."""
    folder = tmp_path / "version_0"
    folder.mkdir()
    steps = range(49, 1000 * (last_epoch + 1), 50)
    rows = [f"{s // 1000},{s},{3.0 - s / 10000}" for s in steps]
    (folder / "metrics.csv").write_text("epoch,step,train_loss\n" + "\n".join(rows) + "\n", encoding="utf-8")
    (folder / "hparams.yaml").write_text(hparams, encoding="utf-8")
    run = lightning_csv.load(folder)
    unfinished = [(step, text) for step, text in events(run) if text.startswith("epochs unfinished")]
    if event is None:
        assert not unfinished
    else:
        assert unfinished == [(steps[-1], event + " (num_epochs in the hparams)")]
        assert notes_with(run, "the log ends in epoch 0 (counting from 0) of num_epochs 100")


@pytest.mark.parametrize(
    ("hparams", "last_epoch", "warmup"),
    [
        # 5 warmup epochs in a 1-epoch plan, no epoch ended: at least 5 x the 1000 steps logged
        ("max_epochs: 1\nwarmup_epochs: 5\n", 0, 5000),
        # 2 of 10 planned epochs of a regular 1000 steps (total_steps 10,000): 2000
        ("max_epochs: 10\nwarmup_epochs: 2\n", 3, 2000),
        # a warmup shorter than the plan and no epoch ended: the length of an epoch is unknown
        ("max_epochs: 10\nwarmup_epochs: 2\n", 0, None),
        # warmup_steps given: it wins
        ("max_epochs: 1\nwarmup_epochs: 5\nwarmup_steps: 30\n", 0, 30),
        ("max_epochs: 1\n", 0, None),
    ],
    ids=["longer_than_the_plan", "epoch_length_known", "epoch_length_unknown", "warmup_steps_wins", "none"],
)
def test_lightning_warmup_in_epochs_is_read_as_steps(
    tmp_path: Path, hparams: str, last_epoch: int, warmup: int | None
) -> None:
    """warmup_epochs (timm, MAE and many LightningModules count the warmup in epochs) becomes
    warmup_steps when an epoch's steps are known, or when the warmup outlasts the planned epochs
    (the steps logged in the one epoch so far are a lower bound of an epoch)."""
    folder = tmp_path / "version_0"
    folder.mkdir()
    rows = [f"{s // 1000},{s},{3.0 - s / 10000}" for s in range(49, 1000 * (last_epoch + 1), 50)]
    (folder / "metrics.csv").write_text("epoch,step,train_loss\n" + "\n".join(rows) + "\n", encoding="utf-8")
    (folder / "hparams.yaml").write_text(hparams, encoding="utf-8")
    run = lightning_csv.load(folder)
    assert run.schedule.get("warmup_steps") == warmup
    if warmup is None and "warmup_epochs" in hparams:
        assert notes_with(run, "warmup_epochs=2 but the steps of an epoch unknown")


def test_lightning_hparams_grouped_in_a_training_section_plan_the_run(tmp_path: Path) -> None:
    """A config saved with its settings grouped (`training: {max_steps: 50, warmup_steps: 500}`) plans
    the run as the same settings written flat; a model section's numbers are not the plan, and a key
    two training sections give differently is left out."""
    run = load_epoch_step_loss(
        tmp_path,
        [(0, s, 0.3 + 0.01 * (s % 3)) for s in range(25)],
        "seed: 1342\nmodel:\n  lr: 0.5\n  max_epochs: 7\ntraining:\n  max_steps: 50\n"
        "  learning_rate: 0.0001\n  warmup_steps: 500\n  gradient_clip_val: 1.0\n  batch_size: 2\n"
        "optim:\n  batch_size: 4\n",
    )
    assert run.config["total_steps"] == 50 and run.config["grad_clip_norm"] == 1
    assert run.schedule == {"peak_lr": 0.0001, "warmup_steps": 500}
    assert run.config.get("batch_size") is None and run.config.get("num_epochs") is None
    assert notes_with(
        run, "settings read from its sections: training.gradient_clip_val, training.learning_rate"
    )


# a Lightning log of epochs 0-1 (steps 9-199, every tenth), its loss falling from 3.0: it ends in epoch 1
TWO_EPOCHS_OF_STEPS = [(s // 100, s, 3.0 - s / 1000) for s in range(9, 200, 10)]


def test_lightning_hparams_of_a_dataclass_config_saved_whole_plan_the_run(tmp_path: Path) -> None:
    """A dataclass config saved whole (`cfg: !!python/object:__main__.Config` wrapping `experiment`,
    which holds `trainer` and `optimizer`) plans the run from its nested training sections: the
    log ends in epoch 1 of its 200 planned."""
    run = load_epoch_step_loss(
        tmp_path,
        TWO_EPOCHS_OF_STEPS,
        "cfg: !!python/object:__main__.Config\n  experiment: !!python/object:__main__.ExperimentConfig\n"
        "    optimizer: !!python/object:__main__.OptimizerConfig\n      lr: 0.0001\n"
        "    trainer: !!python/object:__main__.TrainerConfig\n      max_epochs: 200\n"
        "  model: !!python/object:__main__.ModelConfig\n    num_blocks: 3\n",
    )
    assert run.config["num_epochs"] == 200 and run.schedule["peak_lr"] == 0.0001
    assert notes_with(
        run, "settings read from its sections: cfg.experiment.optimizer.lr, cfg.experiment.trainer.max_epochs"
    )


def test_lightning_hparams_keyed_by_pickled_numpy_scalars_are_read(tmp_path: Path) -> None:
    """pytorch-forecasting saves its encoders whole: a mapping keyed by numpy scalars pickled as
    `? !!python/object/apply:numpy._core.multiarray.scalar [...]`. Read as plain data such a key is a
    list, which SafeLoader refuses as unhashable, and the whole file with it (the run was not read):
    the key is kept as a tuple and the plan is still read."""
    run = load_epoch_step_loss(
        tmp_path,
        TWO_EPOCHS_OF_STEPS,
        "max_epochs: 30\nlearning_rate: 0.003\ncategorical_encoders:\n  region:\n    classes_:\n"
        "      ? !!python/object/apply:numpy._core.multiarray.scalar\n"
        "      - !!python/object/apply:numpy.dtype\n        args: [i8, false, true]\n"
        "      - !!binary AQAAAAAAAAA=\n      : 0\n",
    )
    assert run.config["num_epochs"] == 30 and run.schedule["peak_lr"] == 0.003


def test_lightning_resumed_versions_keep_only_the_last_versions_unfinished_epochs(tmp_path: Path) -> None:
    """version_0 ends in epoch 1 of 6 and was resumed: its own end is not the run's; version_2 ends
    in epoch 5, the last planned: nothing unfinished."""
    for number, steps in enumerate([range(9, 200, 10), range(159, 400, 10), range(409, 600, 10)]):
        write_version(tmp_path, number, steps, RECIPE + "max_epochs: 6\n")
    first = lightning_csv.load(tmp_path / "version_0")
    assert first.events["event"].str.startswith("epochs unfinished").any()
    run = importers.load_run(tmp_path)
    assert not [text for _, text in events(run) if text.startswith("epochs unfinished")]


def test_lightning_testtube_csv_is_counted_by_its_epoch_with_meta_tags(tmp_path: Path) -> None:
    """The TestTube-era logger: metrics.csv without a step column (train_loss, epoch, created_at)
    and its hyperparameters as key,value rows in meta_tags.csv: one row an epoch."""
    folder = tmp_path / "version_0"
    folder.mkdir()
    rows = [f"{85.1 - e / 100},{e},2020-02-03 16:{e:02d}:00" for e in range(40)]
    (folder / "metrics.csv").write_text(
        "train_loss,epoch,created_at\n" + "\n".join(rows) + "\n", encoding="utf-8"
    )
    (folder / "meta_tags.csv").write_text('key,value\nlr,0.02\nhidden_nodes,"[10, 10]"\nmax_epochs,100\n')
    run = lightning_csv.load(folder)
    assert list(run.train["step"])[:3] == [0, 1, 2] and run.config["rows_are"] == "epoch"
    assert run.schedule["peak_lr"] == 0.02 and run.config["num_epochs"] == 100
    assert notes_with(run, "no step column") and notes_with(run, "meta_tags.csv")


def test_an_epoch_count_in_a_config_beside_the_metrics_plans_the_run(tmp_path: Path) -> None:
    """No epoch count in hparams.yaml: the only one in the other config files beside metrics.csv
    (nested, any name by its words) plans the run; two different ones (two stages) plan nothing."""
    folder = tmp_path / "version_0"
    folder.mkdir()
    rows = [f"{s // 25},{s},{3.0 - s / 1000}" for s in range(100)]  # Lightning counts from 0
    (folder / "metrics.csv").write_text("epoch,step,train_loss\n" + "\n".join(rows) + "\n", encoding="utf-8")
    (folder / "hparams.yaml").write_text("beta: 1.0\n", encoding="utf-8")
    (folder / "run_config.json").write_text(json.dumps({"pretraining": {"num_epochs": 50, "lr": 1e-4}}))
    run = lightning_csv.load(folder)
    assert run.config["num_epochs"] == 50 and run.config["total_steps"] == 1250
    assert notes_with(run, "the only epoch count there")
    (folder / "finetune.yaml").write_text("finetuning:\n  max_epochs: 10\n", encoding="utf-8")
    again = lightning_csv.load(folder)
    assert again.config.get("num_epochs") is None and notes_with(again, "disagree")


def test_an_hparams_file_of_python_assignments_is_read_and_one_of_anything_else_set_aside(
    tmp_path: Path,
) -> None:
    """hparams.yaml holding a script's constants as 'NAME = value' lines (YAML reads them as one
    string) gives its values; a file that is no mapping at all (a list) is set aside with a note,
    never fatal: the metrics are the run."""
    folder = tmp_path / "version_8"
    folder.mkdir()
    rows = [f"{s // 25},{s},{3.0 - s / 1000}" for s in range(100)]
    (folder / "metrics.csv").write_text("epoch,step,train_loss\n" + "\n".join(rows) + "\n", encoding="utf-8")
    (folder / "hparams.yaml").write_text(
        "EPOCHS = 20\nLEARNING_RATE = 0.001\nNAME = char model", encoding="utf-8"
    )
    run = lightning_csv.load(folder)
    assert run.config["num_epochs"] == 20 and run.schedule["peak_lr"] == 0.001
    (folder / "hparams.yaml").write_text("- 1\n- 2\n", encoding="utf-8")
    again = lightning_csv.load(folder)
    assert again.config.get("num_epochs") is None and notes_with(again, "hparams.yaml set aside")
    assert len(again.train) == 100


@pytest.mark.parametrize(
    ("key", "read"),
    [
        ("train_epochs", True),
        ("total_epochs", True),
        ("nb_epochs", True),
        ("warmup_epochs", False),
        # the singular (OpenSTL's 'epoch: 200', mmcv-style 'max_epoch'): saved once before training, a setting
        ("epoch", True),
        ("max_epoch", True),
        ("warmup_epoch", False),
        ("decay_epoch", False),
    ],
)
def test_an_epoch_count_is_read_by_its_words(key: str, read: bool) -> None:
    notes: list[str] = []
    picked = lightning_csv.pick_hparams({key: 200, "optim_lr": 0.001}, notes)
    assert picked.get("num_epochs") == (200 if read else None)


def test_lightning_lr_monitor_and_grad_norm_columns(tmp_path: Path) -> None:
    folder = tmp_path / "lightning_logs" / "version_3"
    folder.mkdir(parents=True)
    (folder / "metrics.csv").write_text(
        "epoch,step,lr-AdamW,lr-AdamW-momentum,train_loss_step,grad_2.0_norm_total,val_loss\n"
        ",9,0.001,0.9,,,\n"
        "0,9,,,3.5,0.8,\n"
        ",19,0.002,0.9,,,\n"
        "0,19,,,nan,12.0,\n"
        "0,19,,,,,3.1\n",
        encoding="utf-8",
    )
    (folder / "hparams.yaml").write_text(
        "lr: 0.002\nmax_steps: 100\ngradient_clip_val: 1.0\n"
        "args: !!python/object:argparse.Namespace\n  x: 1\n",
        encoding="utf-8",
    )
    run = lightning_csv.load(tmp_path / "lightning_logs")
    assert run.train["learning_rate"].tolist() == [0.001, 0.002]
    assert notes_with(run, "learning_rate for 2 rows taken from another row logged at the same step")
    assert (
        notes_with(run, "columns used: ")
        and "learning_rate <- 'lr-AdamW'" in notes_with(run, "columns used")[0]
    )
    assert run.train["loss"].tolist() == ["3.5", "nan"]  # a NaN loss stays visible
    assert run.train["grad_norm"].tolist() == [0.8, 12.0]
    assert run.evals["val_loss"].tolist() == [3.1]
    assert run.config["total_steps"] == 100 and run.config["grad_clip_norm"] == 1.0
    assert run.config["hparams"]["args"] == {"x": 1} and run.run_name == "lightning_logs/version_3"
    # grad_norm()'s total, logged in on_before_optimizer_step: before Lightning clips
    assert run.config["grad_norm_measured"] == "before_clipping"
    metrics = folder / "metrics.csv"
    metrics.write_text(metrics.read_text(encoding="utf-8").replace("grad_2.0_norm_total", "grad_norm"))
    # a norm of the user's own naming: when it was measured is not known
    assert "grad_norm_measured" not in lightning_csv.load(tmp_path / "lightning_logs").config


def load_epoch_step_loss(root: Path, rows: list[tuple[int, int, float]], hparams: str) -> RunData:
    """A CSVLogger version folder of (epoch, step, train/loss) rows and the given hparams.yaml, read."""
    folder = root / "version_0"
    folder.mkdir()
    lines = [f"{epoch},{step},{loss}" for epoch, step, loss in rows]
    (folder / "metrics.csv").write_text("epoch,step,train/loss\n" + "\n".join(lines) + "\n", encoding="utf-8")
    (folder / "hparams.yaml").write_text(hparams, encoding="utf-8")
    return lightning_csv.load(folder)


def write_version(root: Path, number: int, steps: range, hparams: str) -> Path:
    """A CSVLogger version folder: a train row per logged step (loss falling with the step), a
    validation row at the end with per-batch val rows (their 'step' is the batch index)."""
    folder = root / f"version_{number}"
    folder.mkdir(parents=True)
    rows = [f"{1 / (1 + s):.6f},{s // 100},{s},," for s in steps]
    rows += [f",{steps[-1] // 100},{batch},0.5," for batch in range(3)]  # val_loss_step per batch
    rows.append(f",{steps[-1] // 100},{steps[-1]},,0.4")
    (folder / "metrics.csv").write_text(
        "train_loss_step,epoch,step,val_loss_step,val_loss_epoch\n" + "\n".join(rows) + "\n", encoding="utf-8"
    )
    (folder / "hparams.yaml").write_text(hparams, encoding="utf-8")
    return folder


RECIPE = "lr: 0.0002\nbatch_size: 16\nnoise_schedule: [0.0001, 0.05]\n"


def test_lightning_versions_that_continue_each_other_are_one_run_resumed(tmp_path: Path) -> None:
    """version_1 restores a checkpoint (its steps go on from 159 < 199: 159-199 replayed), version_2
    starts right after version_1; only the checkpoint path, a data path and a switch changed."""
    write_version(tmp_path, 0, range(9, 200, 10), RECIPE + "checkpoint_name: null\nin_ram: true\n")
    write_version(tmp_path, 1, range(159, 400, 10), RECIPE + "checkpoint_name: epoch=1.ckpt\nin_ram: false\n")
    write_version(tmp_path, 2, range(409, 600, 10), RECIPE + "checkpoint_name: epoch=3.ckpt\nin_ram: false\n")
    assert lightning_csv.version_runs(tmp_path) == [[tmp_path / f"version_{n}" for n in range(3)]]
    assert multi_run.find_runs(tmp_path) == [], "one run: not a folder of several runs"
    run = importers.load_run(tmp_path)
    assert run.train["step"].tolist() == [*range(9, 200, 10), *range(159, 400, 10), *range(409, 600, 10)]
    assert [step for step, _ in events(run)] == [159, 409]
    assert all(text.startswith("run resumed: version_") and "restarted" in text for _, text in events(run))
    assert "steps 159-199 logged again" in events(run)[0][1] and "no step logged twice" in events(run)[1][1]
    assert notes_with(run, "version_0, version_1, version_2 read as one run resumed 2 time(s)")
    assert notes_with(run, "version_1: hparams that changed at the resume (not the training recipe): check")


@pytest.mark.parametrize(
    ("second_steps", "second_recipe", "why"),
    [
        (range(9, 200, 10), RECIPE.replace("0.0002", "0.001"), "a sweep: from the first step, another lr"),
        (range(9, 200, 10), RECIPE, "the same recipe run again from the first step"),
        (range(159, 400, 10), RECIPE.replace("16", "32"), "a new stage: steps go on, the batch size changed"),
        (range(2009, 2200, 10), RECIPE, "a gap of 1800 steps after the previous version's last"),
    ],
)
def test_lightning_versions_that_do_not_continue_are_separate_runs(
    tmp_path: Path, second_steps: range, second_recipe: str, why: str
) -> None:
    write_version(tmp_path, 0, range(9, 200, 10), RECIPE)
    write_version(tmp_path, 1, second_steps, second_recipe)
    assert lightning_csv.version_runs(tmp_path) == [[tmp_path / "version_0"], [tmp_path / "version_1"]], why
    assert [source.name for source in multi_run.find_runs(tmp_path)] == ["version_0", "version_1"]
    with pytest.raises(RunImportError, match="holds 2 Lightning runs"):
        lightning_csv.load(tmp_path)


def test_lightning_resumed_versions_beside_a_new_run_in_one_folder(tmp_path: Path) -> None:
    write_version(tmp_path, 0, range(9, 200, 10), RECIPE)
    write_version(tmp_path, 1, range(199, 400, 10), RECIPE)
    write_version(tmp_path, 2, range(9, 200, 10), RECIPE.replace("0.0002", "0.001"))
    runs = multi_run.find_runs(tmp_path)
    assert [source.name for source in runs] == ["version_0-version_1", "version_2"]
    assert len(runs[0].load().train) == 20 + 21 and len(runs[1].load().train) == 20


def test_lightning_csv_without_loss_column(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text("epoch,step,val_auroc\n0,9,0.7\n", encoding="utf-8")
    with pytest.raises(RunImportError) as raised:
        lightning_csv.load(path)
    message = str(raised.value)
    assert (
        str(path) in message
        and "no training-loss column: no numeric column reads as the training-loss" in message
    )
    assert "found columns: epoch, step, val_auroc" in message


def test_lightning_csv_of_validation_rows_only_is_read_as_an_eval_log(tmp_path: Path) -> None:
    # a run that logged only its validation loss (dev_loss once per epoch): diagnosed on that
    # series, the training-curve checks named as unable to run, never refused
    path = tmp_path / "metrics.csv"
    path.write_text("dev_auroc,dev_loss,epoch,step\n0.77,1.46,0,105\n0.81,1.40,1,211\n", encoding="utf-8")
    run = lightning_csv.load(path)
    assert run.train.empty
    assert run.evals["step"].tolist() == [105, 211] and run.evals["val_loss"].tolist() == [1.46, 1.40]
    assert any("no training loss is logged, only the validation loss 'dev_loss'" in n for n in run.notes)


# ---------------------------------------------------------------- W&B history


WANDB_ROWS = [
    {"_step": 0, "_runtime": 10.0, "train/global_step": 10, "train/loss": 2.0, "train/learning_rate": 1e-4,
     "train/grad_norm": 1.2},
    {"_step": 1, "_runtime": 30.0, "train/global_step": 20, "train/loss": 1.8, "train/learning_rate": 2e-4,
     "train/grad_norm": 1.1},
    {"_step": 2, "_runtime": 90.0, "train/global_step": 20, "eval/loss": 1.9, "eval/accuracy": 0.41},
    {"_step": 3, "_runtime": 110.0, "train/global_step": 30, "train/loss": 1.7, "train/learning_rate": 2e-4,
     "train/grad_norm": 0.9},
]  # fmt: skip


def check_wandb_run(run: RunData) -> None:
    assert run.train["step"].tolist() == [10, 20, 30]  # the trainer's step, not _step
    assert run.train["loss"].tolist() == [2.0, 1.8, 1.7]
    assert run.train["grad_norm"].tolist() == [1.2, 1.1, 0.9]
    times = run.train["step_time_sec"].tolist()
    assert math.isnan(times[0]) and times[1:] == [2.0, 2.0]  # eval time (60 s) not charged to steps 21-30
    assert run.evals.values.tolist() == [[20, 1.9, 0.41]]
    assert notes_with(run, "'_runtime' deltas")
    assert config_document(run)[INTERVAL_MEAN_KEY] is True  # each time the mean over its logging interval


def test_wandb_csv(tmp_path: Path) -> None:
    path = tmp_path / "wandb_export.csv"
    pd.DataFrame(WANDB_ROWS).to_csv(path, index=False)
    assert wandb_history.sniff(path) and wandb_history.sniff(tmp_path)
    check_wandb_run(wandb_history.load(path))


def test_wandb_jsonl_keeps_nan_apart_from_absent(tmp_path: Path) -> None:
    rows = [dict(r) for r in WANDB_ROWS]
    path = write_jsonl(tmp_path / "history.jsonl", rows)
    check_wandb_run(wandb_history.load(path))
    rows[3]["train/loss"] = float("nan")
    run = wandb_history.load(write_jsonl(tmp_path / "history.jsonl", rows))
    written = pd.read_csv(write_run(run, tmp_path / "out")["train"], dtype=str, keep_default_na=False)
    assert written["loss"].tolist() == ["2", "1.8", "nan"]


def test_wandb_run_folder_with_config(tmp_path: Path) -> None:
    files = tmp_path / "run-20240101_000000-abc" / "files"
    files.mkdir(parents=True)
    write_jsonl(files / "wandb-history.jsonl", WANDB_ROWS)
    (files / "config.yaml").write_text(
        "wandb_version: 1\n_wandb: {desc: null, value: {cli_version: 0.16.0}}\n"
        "learning_rate: {desc: null, value: 0.0002}\nlr_scheduler_type: {desc: null, value: linear}\n"
        "warmup_steps: {desc: null, value: 20}\nmax_steps: {desc: null, value: 30}\n"
        "max_grad_norm: {desc: null, value: 1.0}\n",
        encoding="utf-8",
    )
    run = wandb_history.load(tmp_path / "run-20240101_000000-abc")
    assert run.schedule["type"] == "warmup_linear" and run.schedule["warmup_steps"] == 20
    assert run.config["total_steps"] == 30 and run.config["grad_clip_norm"] == 1.0
    # HF Trainer arguments: the logged grad_norm is clip_grad_norm_'s return, before clipping
    assert run.config["grad_norm_measured"] == "before_clipping"
    assert notes_with(run, "config.yaml")


def test_wandb_chart_export(tmp_path: Path) -> None:
    path = tmp_path / "chart.csv"
    path.write_text(
        'Step,"my-run - train/loss","my-run - train/loss__MIN","my-run - train/loss__MAX"\n'
        "1,3.0,3.0,3.0\n2,2.5,2.5,2.5\n",
        encoding="utf-8",
    )
    run = wandb_history.load(path)
    assert run.run_name == "my-run" and run.train["loss"].tolist() == [3.0, 2.5]
    assert notes_with(run, "dropped 2 __MIN/__MAX band columns")


def test_wandb_csv_without_loss_and_bad_cells(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text("_step,_runtime,eval/accuracy\n0,1.0,0.3\n", encoding="utf-8")
    assert not wandb_history.sniff(path)
    with pytest.raises(
        RunImportError,
        match=r"no training-loss column: no numeric column reads as the training-loss "
        r"\(e\.g\. loss, .*train/loss",
    ):
        wandb_history.load(path)
    # a validation loss alone is read as the eval log (the training-curve checks cannot run)
    path.write_text("_step,_runtime,eval/loss\n0,1.0,3.0\n", encoding="utf-8")
    run = wandb_history.load(path)
    assert run.train.empty and run.evals["val_loss"].tolist() == [3.0]
    path.write_text("step,loss\n1,2.0\n2,oops\n", encoding="utf-8")
    with pytest.raises(RunImportError, match=r"row 2 \(line 3\), column 'loss': not a number"):
        wandb_history.load(path)


def test_wandb_jsonl_bad_line_names_the_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "history.jsonl", [WANDB_ROWS[0], WANDB_ROWS[1], "{not json"])
    with pytest.raises(RunImportError, match=r"history\.jsonl, line 3: not valid JSON"):
        wandb_history.load(path)


# ---------------------------------------------------------------- aliases


def test_alias_file_argument_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text("tick,wobble,loss\n1,9.0,1.0\n", encoding="utf-8")
    with pytest.raises(RunImportError, match=r"no step column: .*\(not understood: tick, wobble\)"):
        wandb_history.load(path)
    override = tmp_path / "aliases.json"
    override.write_text(json.dumps({"train_loss": ["wobble"], "step": "tick"}), encoding="utf-8")
    run = wandb_history.load(path, aliases=override)
    assert run.train["loss"].tolist() == [9.0] and run.train["step"].tolist() == [1]
    monkeypatch.setenv(ENV_VAR, str(override))
    assert load_aliases() == {"loss": ["wobble"], "step": ["tick"]}
    assert wandb_history.load(path).train["loss"].tolist() == [9.0]


def test_wide_table_columns_are_read_by_the_resolver(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text(
        "run,trainer/global_step,train/CrossEntropyLoss,z_loss,valid/loss,optim/LR (group 0),mystery\n"
        "a,1,3.0,0.1,3.5,0.001,7\na,2,2.0,0.1,,0.002,7\n",
        encoding="utf-8",
    )
    run = wandb_history.load(path)
    assert run.train["loss"].tolist() == [3.0, 2.0] and run.train["learning_rate"].tolist() == [0.001, 0.002]
    assert run.evals["val_loss"].tolist() == [3.5]
    assert notes_with(run, "not understood: mystery")  # the text column 'run' is no metric


def test_alias_file_errors_name_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "aliases.yaml"
    bad.write_text("los: [x]\n", encoding="utf-8")
    with pytest.raises(RunImportError, match=r"aliases\.yaml: key 'los' is not a canonical field"):
        load_aliases(bad)
    bad.write_text("loss: [1, 2]\n", encoding="utf-8")
    with pytest.raises(RunImportError, match=r"key 'loss': expected a list of column names"):
        load_aliases(bad)


def test_step_times_from_elapsed() -> None:
    times, resets = step_times_from_elapsed([10, 20, 20, 30, 5, 15], [5.0, 25.0, 85.0, 105.0, 1.0, None])
    assert times == [None, 2.0, None, 2.0, None, None] and resets == [5]


# ---------------------------------------------------------------- canonical files


@pytest.mark.skipif(not SAMPLE_RUN.is_dir(), reason=f"sample run not present at {SAMPLE_RUN}")
def test_canonical_sample_run_round_trip(tmp_path: Path) -> None:
    assert canonical_files.sniff(SAMPLE_RUN)
    run = canonical_files.load(SAMPLE_RUN)
    assert run.run_name == "smoke-240" and len(run.train) == 278 and run.notes == []
    paths = write_run(run, tmp_path, prefix="anthropic_")
    for kind in ("train", "eval", "shards", "events"):
        source = SAMPLE_RUN / paths[kind].name
        assert paths[kind].read_text(encoding="utf-8") == source.read_text(encoding="utf-8").replace(
            "\r\n", "\n"
        )
    original = json.loads((SAMPLE_RUN / "anthropic_run_config.json").read_text(encoding="utf-8"))
    written = json.loads(paths["config"].read_text(encoding="utf-8"))
    assert written.pop("provenance")["source_format"] == "canonical"
    assert written == original


@pytest.mark.skipif(not SAMPLE_RUN.is_dir(), reason=f"sample run not present at {SAMPLE_RUN}")
def test_canonical_from_one_file_and_missing_train_log(tmp_path: Path) -> None:
    run = canonical_files.load(SAMPLE_RUN / "anthropic_eval_log.csv")
    assert run.evals["val_accuracy"].iloc[0] == "0.00390625"  # text, exactly as written
    (tmp_path / "x_eval_log.csv").write_text("step,val_loss,val_accuracy\n", encoding="utf-8")
    assert not canonical_files.sniff(tmp_path)
    with pytest.raises(RunImportError, match=r"no \*train_log\.csv here: expected the canonical files"):
        canonical_files.load(tmp_path)
    with pytest.raises(RunImportError, match=r"no x_train_log\.csv beside x_eval_log\.csv"):
        canonical_files.load(tmp_path / "x_eval_log.csv")


@pytest.mark.skipif(not SAMPLE_RUN.is_dir(), reason=f"sample run not present at {SAMPLE_RUN}")
def test_canonical_by_reference_copies_the_files_as_they_are(tmp_path: Path) -> None:
    """What run-diagnosis diagnose does with a canonical source: the CSVs with exactly the canonical
    columns are copied byte for byte (CRLF line ends and all), one with other columns is rewritten without
    them, and a source inside the folder being written is read before it is replaced."""
    source = tmp_path / "source"
    source.mkdir()
    for path in SAMPLE_RUN.glob("anthropic_*"):
        (source / path.name).write_bytes(path.read_bytes())  # CRLF line ends, as committed
    events = source / "anthropic_run_events.csv"
    events.write_text("event,step,extra\nrun started,0,x\n", encoding="utf-8")  # reordered, one extra
    run = canonical_files.load(source, by_reference=True)
    assert sorted(run.files) == ["eval", "shards", "train"] and run.train.empty
    assert run.notes == ["anthropic_run_events.csv: columns extra are not canonical and are not written"]
    paths = write_run(run, tmp_path / "out")
    for kind in ("train", "eval", "shards"):
        assert paths[kind].read_bytes() == run.files[kind].read_bytes()
    assert paths["events"].read_text(encoding="utf-8") == "step,event\n0,run started\n"
    again = diagnose.write_canonical(
        canonical_files.load(paths["train"], by_reference=True), tmp_path / "out"
    )
    assert (again / "train_log.csv").read_text().splitlines() == run.files["train"].read_text().splitlines()


def test_canonical_reimport_keeps_provenance_notes(tmp_path: Path) -> None:
    write_state(tmp_path / "hf", train_rows(range(1, 4)))
    first = hf_trainer.load(tmp_path / "hf")
    write_run(first, tmp_path / "canonical")
    again = canonical_files.load(tmp_path / "canonical")
    assert again.notes[0].startswith("first imported from hf_trainer_state")
    assert again.notes[1:] == first.notes
    assert again.train["loss"].tolist() == ["1.999", "1.998", "1.997"]  # text, as written


# ---------------------------------------------------------------- write_run and the registry


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    losses=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=40),
    steps=st.sampled_from(["int64", "uint32", "int32", "float64"]),
    loss_type=st.sampled_from(["float64", "float32"]),
)
def test_write_run_writes_numbers_through_duckdb_as_pandas_would(
    tmp_path_factory: pytest.TempPathFactory, losses: list[float], steps: str, loss_type: str
) -> None:
    """A frame of plain numbers is written through DuckDB (printf %.10g): the same bytes as
    pandas' to_csv(float_format="%.10g"), missing columns empty; a text frame is written by pandas."""
    folder = tmp_path_factory.mktemp("numbers")
    with np.errstate(over="ignore"):
        loss = np.array(losses, dtype="float64").astype(loss_type)
    frame = pd.DataFrame({"step": np.arange(len(losses)).astype(steps), "loss": loss})
    frame["shard_id"] = pd.Series([None] * len(losses), dtype=object)  # unknown: empty cells
    assert numeric_select(frame, TRAIN_COLUMNS) is not None
    assert numeric_select(pd.DataFrame({"step": [1], "loss": ["1.5"]}), TRAIN_COLUMNS) is None  # text
    paths = write_run(RunData(source_format="test", source_path="x", train=frame), folder)
    expected = frame.reindex(columns=TRAIN_COLUMNS).to_csv(index=False, float_format="%.10g")
    assert paths["train"].read_text(encoding="utf-8") == expected


REAL_RUNS = [
    (hf_trainer, "hf-tinyllama-sft", 186, 14),
    (hf_trainer, "hf-jaong-cpt-10epoch", 10, 10),
    (hf_trainer, "hf-whisper-ja-overfit", 200, 5),
    (hf_trainer, "hf-law-llm-loss-mismatch", 6, 6),
    (hf_trainer, "hf-qwen05b-verifier", 24, 6),
    (llamafactory_log, "llamafactory-mistral7b-lora", 866, 0),
    (lightning_csv, "lightning-slm-sweep/version_0", 114, 20),
]


@uses_real_logs
@pytest.mark.parametrize(("module", "name", "n_train", "n_eval"), REAL_RUNS)
def test_write_run_round_trip(tmp_path: Path, module: Any, name: str, n_train: int, n_eval: int) -> None:
    run = module.load(real(name))
    paths = write_run(run, tmp_path)
    train = pd.read_csv(paths["train"])
    assert list(train.columns) == TRAIN_COLUMNS and len(train) == n_train
    assert train["loss"].tolist() == pytest.approx(run.train["loss"].astype(float).tolist(), rel=1e-9)
    assert train["step"].tolist() == run.train["step"].tolist()
    evals = pd.read_csv(paths["eval"])
    assert list(evals.columns) == EVAL_COLUMNS and len(evals) == n_eval
    assert list(pd.read_csv(paths["shards"]).columns) == SHARD_COLUMNS
    assert list(pd.read_csv(paths["events"]).columns) == EVENT_COLUMNS
    document = json.loads(paths["config"].read_text(encoding="utf-8"))
    assert set(REQUIRED_SCHEDULE_KEYS) <= set(document["lr_schedule"])
    assert set(REQUIRED_TOP_KEYS) <= set(document)
    unknown = document["provenance"]["unknown_fields"]
    assert all(document["lr_schedule"].get(k, document.get(k)) is None for k in unknown)
    assert document["provenance"]["notes"]  # every unknown is explained somewhere


@uses_real_logs
@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("hf-tinyllama-sft", "hf_trainer_state"),
        ("hf-jaong-cpt-10epoch", "hf_trainer_state"),
        ("hf-whisper-ja-overfit/trainer_state.json", "hf_trainer_state"),
        ("llamafactory-mistral7b-lora", "llamafactory_log"),
        ("llamafactory-mistral7b-lora/trainer_log.jsonl", "llamafactory_log"),
        ("lightning-slm-sweep/version_0", "lightning_csv"),
    ],
)
def test_registry_detects_format(name: str, fmt: str) -> None:
    assert fmt == importers.detect(real(name)).FORMAT


@pytest.mark.skipif(not SAMPLE_RUN.is_dir(), reason=f"sample run not present at {SAMPLE_RUN}")
def test_registry_detects_canonical() -> None:
    assert importers.detect(SAMPLE_RUN).FORMAT == "canonical"
    assert importers.by_format("wandb_history") is wandb_history


def test_trainer_state_saved_under_another_name_is_detected_by_its_content(tmp_path: Path) -> None:
    # a trainer_state.json committed as __init__.py: the content says what it is, not the name
    state = write_state(tmp_path / "run", train_rows(range(10, 60, 10)))
    odd = state.with_name("__init__.py")
    state.rename(odd)
    assert importers.detect(odd) is hf_trainer
    assert hf_trainer.load(odd).train["step"].tolist() == [10, 20, 30, 40, 50]
    # a JSON document of another kind under that name is still no training log
    other = tmp_path / "other" / "__init__.py"
    other.parent.mkdir()
    other.write_text('{"name": "a package", "version": 1}\n', encoding="utf-8")
    assert not hf_trainer.sniff(other)


def test_wandb_run_folder_without_its_history_reads_the_console_output(tmp_path: Path) -> None:
    # the .wandb history is the large file a commit leaves out; files/output.log holds what the
    # run printed (HF Trainer's dicts here): read in its place, and said so
    files = tmp_path / "latest-run" / "files"
    files.mkdir(parents=True)
    (files / "wandb-metadata.json").write_text('{"program": "train.py"}', encoding="utf-8")
    lines = [f"{{'loss': {2.0 - s / 100}, 'learning_rate': 1e-4, 'epoch': {s / 50}}}" for s in range(1, 21)]
    (files / "output.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = importers.load_run(tmp_path / "latest-run")
    assert len(run.train) == 20 and run.train["loss"].iloc[0] == pytest.approx(1.99)
    assert "without its run-<id>.wandb history: its console output files/output.log is read" in run.notes[0]
    # a folder that holds only that run folder (wandb/ with latest-run/ in it) is followed down to
    # it, and no further: files/ inside the run folder is the run's, not a wrapper
    wrapper = tmp_path / "wandb"
    shutil.copytree(tmp_path / "latest-run", wrapper / "latest-run")
    assert importers.unwrapped(wrapper) == wrapper / "latest-run"
    assert importers.unwrapped(tmp_path / "latest-run") == tmp_path / "latest-run"
    assert len(diagnose.read_source(wrapper, None).train) == 20
    # two such folders side by side are two runs, whatever the folders are called
    for name in ("trial-a", "trial-b"):
        shutil.copytree(tmp_path / "latest-run", tmp_path / "sweep" / name)
    assert [source.name for source in multi_run.find_runs(tmp_path / "sweep")] == ["trial-a", "trial-b"]
    # without the console output there is nothing to read: the refusal says why, in plain words
    (files / "output.log").unlink()
    (files / "wandb-summary.json").write_text('{"train/loss": 1.8}', encoding="utf-8")
    with pytest.raises(RunImportError, match=r"a W&B run folder without its run-<id>\.wandb history file"):
        importers.load_run(tmp_path / "latest-run")


def test_wandb_run_folder_with_only_its_summary_is_read_from_its_final_values(tmp_path: Path) -> None:
    # a sweep's run folder: no .wandb history, an output.log of blank lines and progress bars that no
    # importer reads, and a summary of the values the run logged last (W&B writes it at the end)
    files = tmp_path / "run-20230329_030534-dnevcmuk" / "files"
    files.mkdir(parents=True)
    (files / "config.yaml").write_text("optimizer:\n  value:\n    lr: 3.0e-05\n", encoding="utf-8")
    (files / "output.log").write_text(" epoch 0\n\n\n\n100%|#####| 6250/6250\n", encoding="utf-8")
    summary = {
        "lr": 3e-05,
        "train_loss_local": 0.36,  # the last batch's loss: one noisy draw
        "train_loss_epoch": 0.099,  # the last epoch's mean: the level
        "grad_norm_square": 95.7,
        "_timestamp": 1680088547.06,
        "_runtime": 3309.37,
        "_step": 62509,
        "test_acc_epoch": 0.536,
        "_wandb": {"runtime": 3308},
    }
    (files / "wandb-summary.json").write_text(json.dumps(summary), encoding="utf-8")
    folder = files.parent
    run = importers.load_run(folder)
    assert run.train[["step", "loss"]].values.tolist() == [[62509, 0.099]]
    assert run.evals["step"].tolist() == [62509]
    assert run.evals["val_accuracy"].tolist() == [0.536] and run.evals["val_loss"].isna().all()
    assert "read from wandb-summary.json, the values the run logged last" in run.notes[0]
    # what the run printed wins over its summary when an importer reads it (a curve, not one row)
    lines = [f"{{'loss': {2.0 - s / 100}, 'learning_rate': 1e-4, 'epoch': {s / 50}}}" for s in range(1, 21)]
    (files / "output.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(importers.load_run(folder).train) == 20
    # pointed at files/ itself, the run's printed log is read by the importer that reads it, not the summary
    assert not wandb_run.sniff(files)
    # a run folder that holds nothing but files/ is the run, not a wrapper to follow down into files/
    (files / "output.log").write_text("      1/100      6.1G      1.239      2.651\n", encoding="utf-8")
    assert importers.unwrapped(folder) == folder
    assert diagnose.read_source(folder, None).train[["step", "loss"]].values.tolist() == [[62509, 0.099]]
    # a run stopped in its first minute: a summary with W&B's own keys only is nothing to read
    (files / "output.log").write_text("\n\n", encoding="utf-8")
    (files / "wandb-summary.json").write_text('{"_wandb": {"runtime": 40}}', encoding="utf-8")
    with pytest.raises(RunImportError):
        importers.load_run(folder)


@pytest.mark.filterwarnings("error")
def test_a_printed_python_value_is_read_quietly() -> None:
    # a logged dict whose string holds an invalid escape ('\d' in a regex argument) warns when
    # parsed; the user reading the report must not see Python's warning, only the value
    assert python_literal("{'pattern': '\\d+', 'lr': 3e-4}") == {"pattern": "\\d+", "lr": 3e-4}
    assert python_literal("{'pattern': '\\d'}") == {"pattern": "\\d"}
    assert python_literal("[1, 2") is UNREADABLE


def test_a_loss_logged_beside_an_agents_episodes_or_rewards_is_a_reinforcement_learning_loss(
    tmp_path: Path,
) -> None:
    """Whatever the reader: a Lightning DQN's metrics.csv logs its TD loss as train_loss beside the
    episode reward, and a TD loss rises as the returns grow, so the config says loss_objective
    reinforcement (the loss checks then judge it low at most). A DPO run's rewards/chosen and
    rewards/margins are a preference model's scores, not an agent's returns: its loss stays a plain
    loss, as does a Lightning run logging no reward."""
    folder = tmp_path / "lightning_logs" / "version_0"
    folder.mkdir(parents=True)
    rows = "".join(f"{49 + 50 * i},0,0.9,{0.001 * i:.3f},{4e-5 * (1 + i):.6g}\n" for i in range(30))
    (folder / "metrics.csv").write_text(
        "step,epoch,epsilon,episode reward,train_loss\n" + rows, encoding="utf-8"
    )
    document = config_document(lightning_csv.load(folder))
    assert document["loss_objective"] == "reinforcement"
    assert "episode reward" in " ".join(document["provenance"]["notes"])
    (folder / "metrics.csv").write_text("step,epoch,epsilon,val_acc,train_loss\n" + rows, encoding="utf-8")
    assert config_document(lightning_csv.load(folder)).get("loss_objective") is None
    history = [
        {"step": s, "epoch": s / 100, "loss": 0.69 - 0.002 * s, "learning_rate": 5e-7,
         "rewards/chosen": 0.01 * s, "rewards/rejected": -0.01 * s, "rewards/margins": 0.02 * s,
         "rewards/accuracies": 0.6}
        for s in range(10, 210, 10)
    ]  # fmt: skip
    state = tmp_path / "dpo" / "trainer_state.json"
    state.parent.mkdir()
    state.write_text(json.dumps({"log_history": history, "max_steps": 200}), encoding="utf-8")
    assert config_document(hf_trainer.load(state.parent)).get("loss_objective") is None
