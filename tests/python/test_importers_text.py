"""Importers for text logs (llm.c, nanoGPT, Megatron), TensorBoard event files and Megatron golden values.

The real public logs are read in place from ../shared/real-logs (never copied here); those tests
are skipped when the folder is absent. Everything else is built in tmp_path.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary import Writer
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util

from run_diagnosis import importers, multi_run
from run_diagnosis.importers import RunImportError, megatron_golden, tensorboard_events, text_logs
from run_diagnosis.importers.canonical import write_run
from support.paths import REAL_LOGS

LLMC = REAL_LOGS / "llmc-gpt2-124m" / "main.log"
MEGATRON_DS = REAL_LOGS / "megatron-deepspeed-gpt3-125m"
WITH_KERNEL = MEGATRON_DS / "gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-with-kernel.log"
BASELINE = MEGATRON_DS / "gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-baseline.log"
GOLDEN = REAL_LOGS / "megatron-lm-golden-values"

needs_real_logs = pytest.mark.skipif(
    not REAL_LOGS.is_dir(), reason=f"real public logs not present at {REAL_LOGS} (not redistributed)"
)


def events_of(run) -> list[tuple[int, str]]:
    return [(int(step), str(event)) for step, event in run.events.itertuples(index=False)]


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


# ============================================================================ real logs


@pytest.fixture(scope="module")
def llmc():
    return text_logs.load(LLMC)


@pytest.fixture(scope="module")
def kernel():
    return text_logs.load(WITH_KERNEL)


@pytest.fixture(scope="module")
def baseline():
    return text_logs.load(BASELINE)


@pytest.fixture(scope="module")
def golden_run():
    return megatron_golden.load(GOLDEN)


@needs_real_logs
@pytest.mark.real_logs
class TestRealLlmc:
    def test_every_train_step_and_val_point(self, llmc):
        assert len(llmc.train) == 19_552
        assert llmc.train["step"].tolist() == list(range(19_552))
        assert len(llmc.evals) == 80
        assert llmc.evals["step"].iloc[-1] == 19_552
        assert llmc.evals["val_loss"].iloc[0] == pytest.approx(11.0095)
        assert llmc.evals["val_loss"].iloc[-1] == pytest.approx(3.2731)

    def test_warmup_reaches_peak_at_step_699(self, llmc):
        train = llmc.train
        assert train["learning_rate"].max() == pytest.approx(6e-4)
        assert int(train.loc[train["learning_rate"] >= 6e-4, "step"].iloc[0]) == 699

    def test_grad_norm_spike_at_8715(self, llmc):
        after_warmup = llmc.train[llmc.train["step"] > 700]
        spike = after_warmup.loc[after_warmup["grad_norm"].idxmax()]
        assert int(spike["step"]) == 8715
        assert spike["grad_norm"] == pytest.approx(4.29)
        assert after_warmup["grad_norm"].median() == pytest.approx(0.28)

    def test_hellaswag_is_not_val_accuracy(self, llmc):
        assert llmc.evals["val_accuracy"].isna().all()
        assert any("HellaSwag accuracy logged at 79 points" in note for note in llmc.notes)

    def test_no_config_no_step_time_and_says_so(self, llmc):
        assert llmc.schedule == {} and llmc.config == {}
        assert any("carries no run config" in note for note in llmc.notes)
        assert llmc.train["step_time_sec"].isna().all()
        assert llmc.events.empty

    def test_detected_through_the_registry(self):
        assert importers.detect(LLMC).FORMAT == "text_log"
        assert importers.detect(LLMC.parent).FORMAT == "text_log"


@needs_real_logs
@pytest.mark.real_logs
class TestRealMegatronDeepSpeed:
    def test_row_counts(self, kernel, baseline):
        assert (len(kernel.train), len(kernel.evals)) == (213, 21)
        assert (len(baseline.train), len(baseline.evals)) == (47, 4)
        assert kernel.train["step"].tolist() == list(range(10, 2131, 10))
        assert kernel.evals["step"].tolist() == list(range(100, 2101, 100))

    def test_iteration_lines_are_printed_once_not_per_rank(self, kernel, baseline):
        # 8 ranks print the tracebacks, but Megatron prints each iteration line once
        assert kernel.train["step"].is_unique and baseline.train["step"].is_unique
        assert not any("repeat an earlier step" in note for note in kernel.notes)

    def test_values(self, kernel):
        first = kernel.train.iloc[0]
        assert first["loss"] == pytest.approx(10.69056)
        assert first["learning_rate"] == pytest.approx(5.308e-07)
        assert first["step_time_sec"] == pytest.approx(0.8496)
        assert kernel.train["step_time_sec"].median() == pytest.approx(0.606)
        spike = kernel.train.loc[kernel.train["step"] == 2110, "step_time_sec"]
        assert spike.tolist() == [pytest.approx(1.217)]
        assert kernel.train["grad_norm"].isna().all()
        assert any("no grad_norm" in note for note in kernel.notes)

    @pytest.mark.parametrize("which", ["kernel", "baseline"])
    def test_config_from_arguments_dump(self, which, request):
        run = request.getfixturevalue(which)
        assert run.schedule["type"] == "warmup_cosine"
        assert run.schedule["peak_lr"] == pytest.approx(3e-4)
        assert run.schedule["min_lr"] == pytest.approx(3e-5)
        assert run.config["grad_clip_norm"] == 1.0
        assert run.config["batch_size"] == 256
        assert run.config["eval_interval"] == 100
        assert run.config["checkpoint_interval"] == 10_000
        assert run.config["precision"] == "fp16"

    def test_token_based_schedule_is_a_declared_unknown(self, kernel):
        # 375e6 tokens would be ~715 steps at 256 x 2048 tokens, but the logged LR reaches only
        # 42% of its peak by step 2130: a step consumes fewer tokens, so the length is unknown
        assert kernel.schedule["warmup_steps"] is None
        assert kernel.schedule["decay_steps"] is None
        assert kernel.schedule["peak_lr"] == 3e-4
        assert (
            kernel.config["total_steps"] == 1_716_613
        )  # train_samples / global batch = the "/ M" of the lines
        assert any("lr_warmup_tokens = 375000000 tokens (~715 steps" in note for note in kernel.notes)

    def test_manual_stop_events(self, kernel, baseline):
        assert (2130, "training interrupted: KeyboardInterrupt (manual stop)") in events_of(kernel)
        assert (470, "training interrupted: KeyboardInterrupt (manual stop)") in events_of(baseline)
        assert any("NameError: free variable 'kill_cmd'" in e for _, e in events_of(baseline))
        assert (470, "launcher stopped: main process received SIGTERM") in events_of(baseline)
        # once per event, not once per rank
        texts = [e for _, e in events_of(kernel)]
        assert len(texts) == len(set(texts))

    def test_loss_scale_rises_only_so_no_overflow_event(self, kernel):
        assert not any("loss scale overflow" in e for _, e in events_of(kernel))
        assert any(
            "loss scale never dropped (2048 at the first line, 32768 at the last)" in n for n in kernel.notes
        )

    def test_writes_the_canonical_files(self, kernel, tmp_path):
        paths = write_run(kernel, tmp_path)
        train = pd.read_csv(paths["train"])
        assert list(train.columns) == [
            "step",
            "shard_id",
            "loss",
            "grad_norm",
            "learning_rate",
            "step_time_sec",
        ]
        assert len(train) == 213
        document = json.loads(paths["config"].read_text())
        assert document["provenance"]["unknown_fields"] == ["warmup_steps", "decay_steps"]
        assert importers.detect(WITH_KERNEL).FORMAT == "text_log"


@needs_real_logs
@pytest.mark.real_logs
class TestRealGoldenValues:
    def test_steps_and_values(self, golden_run):
        assert golden_run.train["step"].tolist() == list(range(1, 101))
        assert golden_run.train["loss"].iloc[0] == pytest.approx(10.93573)
        assert golden_run.train["loss"].iloc[-1] == pytest.approx(9.7052)
        times = golden_run.train.set_index("step")["step_time_sec"]
        assert times[70] == pytest.approx(0.596, abs=1e-3)
        assert times[2] == pytest.approx(5.21765)
        assert pd.isna(times[1])  # iteration-time starts at step 2

    def test_config_from_model_config_yaml(self, golden_run):
        assert golden_run.schedule == {
            "type": "warmup_cosine",
            "peak_lr": pytest.approx(1.5e-4),
            "min_lr": pytest.approx(1e-5),
            "warmup_steps": 3200,  # 0.01 x lr-decay-iters 320000
            "decay_steps": 320_000,
            "source_type": "cosine",
        }
        assert golden_run.config["total_steps"] == 100
        assert golden_run.config["grad_clip_norm"] == 1.0
        assert golden_run.config["batch_size"] == 32
        assert golden_run.config["checkpoint_interval"] == 50

    def test_ckpt_resume_is_a_note_not_an_event(self, golden_run):
        assert golden_run.events.empty
        assert any("TEST_TYPE ckpt-resume" in note for note in golden_run.notes)
        assert any("num-zeros" in note for note in golden_run.notes)

    def test_detected_through_the_registry(self):
        assert importers.detect(GOLDEN).FORMAT == "megatron_golden_values"


# ============================================================================ text logs: shapes

LLMC_STDOUT = """\
+-----------------------+----------------------------------------------------+
| Parameter             | Value                                              |
+-----------------------+----------------------------------------------------+
| sequence length T     | 1024                                               |
| total batch size      | 524288                                             |
| LR scheduler          | cosine                                             |
| learning rate (LR)    | 6.000000e-04                                       |
| warmup iterations     | 700                                                |
| final LR fraction     | 0.000000e+00                                       |
| val_loss_every        | 250                                                |
| checkpoint_every      | 0                                                  |
| train_num_batches     | 19560                                              |
| num_processes         | 8                                                  |
+-----------------------+----------------------------------------------------+
val loss 11.009500
step    1/19560 | loss 11.011600 (+nanz)| norm 14.9600 (+nanz)| lr 8.57e-07 | 1234.56 ms | 41 tok/s
step    2/19560 | train loss 10.958600 | norm 15.1800 | lr 1.71e-06 | 300.00 ms | 43.0% bf16 MFU
skipping update due to loss z-score of 6.500000
step    3/19560 | loss 10.857900 (+6.50z)| norm 14.4900 (+0.10z)| lr 2.57e-06 | 301.50 ms | 1 tok/s
val loss 10.500000
HellaSwag: 2500/10042 = 0.248954
Writing model to log124M/model_00000003.bin
"""


def test_llmc_stdout(tmp_path):
    run = text_logs.load(write(tmp_path, "train.out", LLMC_STDOUT))
    assert run.train["step"].tolist() == [1, 2, 3]
    assert run.train["loss"].tolist() == pytest.approx([11.0116, 10.9586, 10.8579])
    assert run.train["grad_norm"].tolist() == pytest.approx([14.96, 15.18, 14.49])
    assert run.train["step_time_sec"].tolist() == pytest.approx([1.23456, 0.3, 0.3015])
    # "val loss" has no step: it gets the number of steps completed before it
    assert run.evals["step"].tolist() == [0, 3]
    assert run.schedule["type"] == "warmup_cosine"
    assert run.schedule["peak_lr"] == pytest.approx(6e-4)
    assert run.schedule["min_lr"] == 0.0
    assert (run.schedule["warmup_steps"], run.schedule["decay_steps"]) == (700, 19_560)
    assert run.config["total_steps"] == 19_560
    assert run.config["batch_size"] == 512  # 524288 tokens / T 1024
    assert run.config["eval_interval"] == 250
    assert run.config["checkpoint_interval"] is None
    assert run.config["data_parallel_workers"] == 8
    assert run.config["grad_clip_norm"] is None
    assert run.config["grad_norm_measured"] == "before_clipping"  # train_gpt2.cu scales after logging it
    assert any("does not print the threshold" in note for note in run.notes)
    assert events_of(run) == [
        (3, "skipped update: loss z-score 6.500000 above the skip threshold"),
        (3, "checkpoint saved: log124M/model_00000003.bin"),
    ]


NANOGPT = """\
Overriding config with config/train_shakespeare_char.py:
learning_rate = 1e-3 # with baby networks can afford to go a bit higher
max_iters = 5000
lr_decay_iters = 5000 # make equal to max_iters usually
min_lr = 1e-4 # learning_rate / 10 usually
warmup_iters = 100
Overriding: batch_size = 32
tokens per iteration will be: 16,384
step 0: train loss 4.2874, val loss 4.2823
iter 0: loss 4.2654, time 29.17ms, mfu -100.00%
iter 10: loss 3.2457, time 11.24ms, mfu 33.18%
step 250: train loss 1.9637, val loss 2.0663
saving checkpoint to out-shakespeare-char
iter 250: loss 2.0170, time 1424.97ms, mfu 28.93%
"""


def test_nanogpt_stdout(tmp_path):
    run = text_logs.load(write(tmp_path, "nanogpt.log", NANOGPT))
    assert run.train["step"].tolist() == [0, 10, 250]
    assert run.train["step_time_sec"].tolist() == pytest.approx([0.02917, 0.01124, 1.42497])
    assert run.train["learning_rate"].isna().all() and run.train["grad_norm"].isna().all()
    assert run.evals["step"].tolist() == [0, 250]
    assert run.evals["val_loss"].tolist() == pytest.approx([4.2823, 2.0663])
    assert run.schedule["peak_lr"] == pytest.approx(1e-3)
    assert run.schedule["min_lr"] == pytest.approx(1e-4)
    assert (run.schedule["warmup_steps"], run.schedule["decay_steps"]) == (100, 5000)
    assert run.schedule["type"] is None  # decay_lr not printed: nanoGPT's default is not assumed
    assert run.config["total_steps"] == 5000
    assert run.config["grad_clip_norm"] is None
    assert (250, "checkpoint saved: out-shakespeare-char") in events_of(run)


def test_build_nanogpt_log_txt(tmp_path):
    run = text_logs.load(
        write(tmp_path, "log.txt", "0 val 10.9554\n0 hella 0.2495\n0 train 10.955000\n1 train 10.2\n")
    )
    assert run.train["loss"].tolist() == pytest.approx([10.955, 10.2])
    assert run.evals["step"].tolist() == [0]
    assert any("HellaSwag" in note for note in run.notes)


ARGUMENTS = """\
------------------------ arguments ------------------------
  clip_grad ....................................... 0.5
  eval_interval ................................... 20
  fp16 ............................................ True
  bf16 ............................................ False
  global_batch_size ............................... 64
  lr .............................................. 0.0006
  lr_decay_iters .................................. None
  lr_decay_samples ................................ None
  lr_decay_style .................................. linear
  lr_decay_tokens ................................. None
  lr_warmup_fraction .............................. None
  lr_warmup_iters ................................. 10
  lr_warmup_samples ............................... 0
  lr_warmup_tokens ................................ None
  min_lr .......................................... 6e-05
  save ............................................ /ckpt
  save_interval ................................... 30
  seq_length ...................................... 1024
  train_iters ..................................... 100
-------------------- end of arguments ---------------------
"""


def iteration(step: int, loss: str = "| lm loss: 5.000000E+00 ", scale: float = 65536.0, **extra: str) -> str:
    grad = extra.get("grad", "1.234")
    skipped, nans = extra.get("skipped", "0"), extra.get("nans", "0")
    return (
        f" [2024-05-01 10:00:00] iteration {step:8d}/     100 | consumed samples: {step * 64:12d} | "
        f"elapsed time per iteration (ms): 250.0 | learning rate: 3.000000E-04 | global batch size:    64 "
        f"{loss}| loss scale: {scale:.1f} | grad norm: {grad} | number of skipped iterations: {skipped:>3} | "
        f"number of nan iterations: {nans:>3} |\n"
    )


def test_megatron_lm_events_and_config(tmp_path):
    text = (
        ARGUMENTS
        + " loading checkpoint from /ckpt at iteration 10\n"
        + iteration(20)
        + iteration(30, scale=32768.0, skipped="2")
        + "  successfully saved checkpoint from iteration      30 to /ckpt [ t 1/1, p 1/1 ]\n"
        + iteration(40, loss="", scale=32768.0, grad="nan", nans="1")
        + " validation loss at iteration 40 on validation set | lm loss value: 4.900000E+00 |\n"
        + " validation loss at iteration 40 on test set | lm loss value: 4.800000E+00 |\n"
        + "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    run = text_logs.load(write(tmp_path, "megatron.log", text))
    assert run.train["step"].tolist() == [20, 30, 40]
    assert run.train["grad_norm"].tolist() == ["1.234", "1.234", "nan"]  # logged NaN kept as text
    assert pd.isna(run.train["loss"].iloc[2])  # Megatron omits lm loss when the interval had none
    assert run.train["step_time_sec"].tolist() == pytest.approx([0.25] * 3)
    assert run.evals["step"].tolist() == [40]  # the test-set line is not validation
    assert events_of(run) == [
        (10, "resuming from checkpoint at iteration 10"),
        (30, "loss scale overflow: scale reduced to 32768"),
        (30, "skipped iteration (loss scale overflow): 2 skipped in the log interval ending at iteration 30"),
        (30, "checkpoint saved: iteration 30"),
        (40, "nan iteration: 1 iteration(s) with NaN/inf loss in the log interval ending at 40"),
        (40, "error: torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"),
        (40, "error: CUDA out of memory"),
    ]
    assert run.schedule == {
        "type": "warmup_linear",
        "peak_lr": 6e-4,
        "min_lr": 6e-5,
        "warmup_steps": 10,
        "decay_steps": 100,
        "source_type": "linear",
    }
    assert any("decays over train_iters" in note for note in run.notes)
    assert (run.config["grad_clip_norm"], run.config["checkpoint_interval"]) == (0.5, 30)
    assert run.config["grad_norm_measured"] == "before_clipping"  # clip_grad_norm_fp32's total_norm
    assert run.interval_mean_times  # elapsed time per iteration: an interval mean (run_config.json says so)
    train_csv = write_run(run, tmp_path / "out")["train"].read_text().splitlines()
    assert train_csv[3].split(",")[3] == "nan"  # the NaN grad norm reaches the CSV


def test_megatron_without_arguments_dump_takes_total_from_lines(tmp_path):
    run = text_logs.load(write(tmp_path, "m.log", iteration(10) + iteration(20)))
    assert run.config["total_steps"] == 100
    assert run.interval_mean_times
    assert run.schedule == {}
    assert any("no 'arguments' dump" in note for note in run.notes)


# ============================================================================ text logs: malformed input


def test_unknown_text_shape_names_shapes_and_first_lines(tmp_path):
    path = write(tmp_path, "notes.log", "\n\nhello world\nepoch 1 done, accuracy=0.3\n")
    with pytest.raises(RunImportError) as error:
        text_logs.load(path)
    message = str(error.value)
    assert str(path) in message
    assert "llmc_main_log" in message and "megatron" in message and "nanogpt_stdout" in message
    assert "line 3: 'hello world'" in message
    assert text_logs.sniff(path) is False


def test_empty_file(tmp_path):
    path = write(tmp_path, "empty.log", "")
    with pytest.raises(RunImportError, match=r"empty\.log: the file is empty"):
        text_logs.load(path)


def test_blank_lines_only(tmp_path):
    with pytest.raises(RunImportError, match="only blank lines"):
        text_logs.load(write(tmp_path, "blank.log", "\n  \r\n\t\n"))


def test_truncated_last_line_is_left_out_and_noted(tmp_path):
    path = write(
        tmp_path,
        "main.log",
        "s:0 trl:10.9 lr:0.000001 norm:5.00\ns:1 trl:10.5 lr:0.000002 norm:4.00\ns:2 trl:1",
    )
    run = text_logs.load(path)
    assert run.train["step"].tolist() == [0, 1]
    assert any("line 3 (the last) has no line ending" in note and "s:2 trl:1" in note for note in run.notes)


def test_complete_last_line_is_kept(tmp_path):
    run = text_logs.load(write(tmp_path, "main.log", "s:0 trl:10.9 lr:0.000001 norm:5.00\ns:1 trl:10.5\n"))
    assert run.train["step"].tolist() == [0, 1]
    assert pd.isna(run.train["grad_norm"].iloc[1])


def test_cut_megatron_line_is_left_out(tmp_path):
    text = ARGUMENTS + iteration(10) + " iteration       20/     100 | consumed samp"
    run = text_logs.load(write(tmp_path, "m.log", text))
    assert run.train["step"].tolist() == [10]
    assert any("has no line ending" in note and "consumed samp" in note for note in run.notes)


def test_file_without_final_newline_is_noted(tmp_path):
    run = text_logs.load(
        write(tmp_path, "m.log", ARGUMENTS + iteration(10) + "Traceback (most recent call last):")
    )
    assert run.train["step"].tolist() == [10]
    assert any("does not end with a newline (last line" in note for note in run.notes)


def test_binary_garbage_named_log(tmp_path):
    path = write(tmp_path, "run.log", bytes(range(256)) * 40)
    with pytest.raises(
        RunImportError, match=r"run\.log: binary data, not a text log \(NUL byte at offset 0\)"
    ):
        text_logs.load(path)
    assert text_logs.sniff(path) is False


def test_binary_without_nul_bytes(tmp_path):
    path = write(tmp_path, "run.log", bytes(range(1, 32)) * 100)
    with pytest.raises(RunImportError, match="control bytes"):
        text_logs.load(path)


def test_unicode_text_and_bytes_that_are_not_utf8(tmp_path):
    text = "ステップ開始 🚀 µ-batch\ns:0 trl:10.9 lr:0.000001 norm:5.00\ns:1 trl:10.5 lr:0.000002 norm:4.00\n"
    run = text_logs.load(write(tmp_path, "main.log", text.encode("utf-8") + b"caf\xe9\n"))
    assert run.train["loss"].tolist() == pytest.approx([10.9, 10.5])


def test_utf16_log_from_windows_redirection(tmp_path):
    run = text_logs.load(write(tmp_path, "main.log", "s:0 trl:10.9\r\ns:1 trl:10.5\r\n".encode("utf-16")))
    assert run.train["step"].tolist() == [0, 1]


def test_crlf_ansi_colours_and_tqdm_redraws(tmp_path):
    text = (
        ARGUMENTS.replace("\n", "\r\n")
        + "\x1b[92m[OKAY]\x1b[0m\r\n"
        + " 10%|█         | 1/10 [00:01<00:09]\r 20%|██        | 2/10 [00:02<00:08]\r"
        + iteration(10).replace("lm loss", "\x1b[1mlm loss\x1b[0m").replace("\n", "\r\n")
        + iteration(20).replace("\n", "\r\n")
    )
    run = text_logs.load(write(tmp_path, "m.log", text))
    assert run.train["step"].tolist() == [10, 20]
    assert run.train["loss"].tolist() == pytest.approx([5.0, 5.0])
    assert run.schedule["peak_lr"] == pytest.approx(6e-4)


def test_folder_with_one_log_and_folder_with_two(tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    write(one, "main.log", "s:0 trl:10.9\n")
    write(one, "README.md", "s:0 trl:1\n")  # not a log suffix: not considered
    assert text_logs.load(one).train["step"].tolist() == [0]
    two = tmp_path / "two"
    two.mkdir()
    write(two, "a.log", "s:0 trl:10.9\n")
    write(two, "b.txt", "iter 0: loss 4.2, time 1.0ms, mfu 1.0%\n")
    with pytest.raises(
        RunImportError, match=r"2 text training logs in this folder \(a\.log, b\.txt\); pass one file"
    ):
        text_logs.load(two)


def test_twenty_thousand_lines_parse_fast(tmp_path):
    lines = "".join(
        f"s:{i} trl:{10 - i / 5000:.4f} lr:0.000600 norm:0.{i % 90 + 10}\n" for i in range(20_000)
    )
    path = write(tmp_path, "main.log", lines)
    started = time.perf_counter()
    run = text_logs.load(path)
    elapsed = time.perf_counter() - started
    assert len(run.train) == 20_000
    assert elapsed < 2.0, f"20k lines took {elapsed:.2f} s"


# ============================================================================ TensorBoard


def scalar(tag: str, value: float) -> summary_pb2.Summary.Value:
    return summary_pb2.Summary.Value(tag=tag, simple_value=value)


def plugin(name: str) -> summary_pb2.SummaryMetadata:
    return summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=name))


def text_value(tag: str, text: str) -> summary_pb2.Summary.Value:
    return summary_pb2.Summary.Value(
        tag=tag, metadata=plugin("text"), tensor=tensor_util.make_tensor_proto(text)
    )


def histogram_value(tag: str) -> summary_pb2.Summary.Value:
    histogram = summary_pb2.HistogramProto(
        min=0, max=1, num=3, sum=1, sum_squares=1, bucket_limit=[0.5, 1], bucket=[1, 2]
    )
    return summary_pb2.Summary.Value(tag=tag, histo=histogram)


def event_file(
    folder: Path, points: list[tuple[int, list[summary_pb2.Summary.Value]]], suffix: str = ""
) -> Path:
    """Write one event file with TensorBoard's own writer; returns its path."""
    before = set(folder.glob("*tfevents*")) if folder.exists() else set()
    writer = EventFileWriter(str(folder), filename_suffix=suffix)
    for step, values in points:
        writer.add_event(
            event_pb2.Event(wall_time=time.time(), step=step, summary=summary_pb2.Summary(value=values))
        )
    writer.close()
    (path,) = set(folder.glob("*tfevents*")) - before
    return path


HF_ARGS = {
    "learning_rate": 5e-5,
    "lr_scheduler_type": "cosine",
    "warmup_ratio": 0.1,
    "max_steps": 100,
    "max_grad_norm": 1.0,
    "per_device_train_batch_size": 8,
    "eval_strategy": "steps",
    "eval_steps": 20,
    "save_strategy": "steps",
    "save_steps": 50,
}


def test_tensorboard_detector_map50_is_the_eval_logs_val_map50(tmp_path: Path) -> None:
    """Ultralytics' TensorBoard scalars: metrics/mAP50(B) beside val/box_loss is the validation mAP
    at IoU 0.5 (the eval log's val_map50); metrics/mAP50-95(B) is another metric."""
    points = [
        (
            e,
            [
                scalar("train/box_loss", 1.5 - e / 50),
                scalar("val/box_loss", 1.6 - e / 60),
                scalar("metrics/mAP50(B)", e / 40),
                scalar("metrics/mAP50-95(B)", e / 80),
            ],
        )
        for e in range(1, 21)
    ]
    event_file(tmp_path / "train", points)
    run = tensorboard_events.load(tmp_path)
    assert run.evals["val_map50"].tolist() == pytest.approx([e / 40 for e in range(1, 21)])


def test_tensorboard_epoch_tag_gives_steps_per_epoch(tmp_path):
    """An epoch logged against the step (Lightning's 'epoch', HF's 'train/epoch') with no args summary:
    its boundaries give the steps per epoch, so the repetition check can number the epochs."""
    points = [
        (s, [scalar("train_loss", 3 - s / 1000), scalar("epoch", float((s - 1) // 30))])
        for s in range(1, 121)
    ]
    event_file(tmp_path / "lightning_logs" / "version_0", points)
    run = tensorboard_events.load(tmp_path)
    assert run.config["steps_per_epoch"] == 30
    assert any("steps_per_epoch = 30: from the logged epoch" in note for note in run.notes)


def test_tensorboard_hf_run_with_args(tmp_path):
    run_dir = tmp_path / "runs" / "Dec02_host"
    points = [(0, [text_value("args", json.dumps(HF_ARGS))])]
    for step in range(10, 101, 10):
        points.append(
            (
                step,
                [
                    scalar("train/loss", 2 - step / 100),
                    scalar("train/grad_norm", 0.1),
                    scalar("train/learning_rate", 5e-5),
                ],
            )
        )
        if step % 20 == 0:
            points.append((step, [scalar("eval/loss", 2.5 - step / 100)]))
    event_file(run_dir, points)
    assert tensorboard_events.sniff(tmp_path)
    run = tensorboard_events.load(tmp_path)
    assert run.train["step"].tolist() == list(range(10, 101, 10))
    assert run.train["grad_norm"].tolist() == [0.1] * 10  # the float32 as written, not 0.10000000149
    assert run.evals["val_loss"].tolist() == pytest.approx([2.3, 2.1, 1.9, 1.7, 1.5])
    assert run.schedule["type"] == "warmup_cosine"
    assert run.schedule["warmup_steps"] == 10
    assert (run.config["total_steps"], run.config["grad_clip_norm"]) == (100, 1.0)
    assert run.train["step_time_sec"].isna().all()
    assert importers.detect(tmp_path).FORMAT == "tensorboard"


def test_tensorboard_megatron_tags_loss_scale_drop_and_restart(tmp_path):
    first = [
        (
            s,
            [
                scalar("lm loss", 10 - s / 100),
                scalar("loss-scale", 4096.0 if s < 30 else 2048.0),
                scalar("iteration-time", 0.5),
                scalar("lm loss vs samples", 9.0),
            ],
        )
        for s in range(1, 50)
    ]
    event_file(tmp_path, first, suffix=".a")
    event_file(
        tmp_path,
        [(s, [scalar("lm loss", 9.6), scalar("lm loss validation", 9.7)]) for s in range(40, 45)],
        suffix=".b",
    )
    run = tensorboard_events.load(tmp_path)
    assert len(run.train) == 49 + 5
    assert int(run.train["step"].duplicated().sum()) == 5  # the resumed steps stay twice
    assert run.train["step_time_sec"].iloc[0] == 0.5
    assert len(run.evals) == 5
    events = events_of(run)
    assert events[0] == (30, "loss scale overflow: scale reduced to 2048")
    assert events[1][0] == 40 and "training process restarted" in events[1][1]
    assert any("lm loss vs samples" in note for note in run.notes)  # the samples axis is not a step axis


def test_tensorboard_tf2_style_scalars_from_tensorboards_writer(tmp_path):
    writer = Writer(str(tmp_path))  # tensor summaries; scalar metadata only with a tag's first value
    for step in range(1, 4):
        writer.add_scalar("train/loss", 0.1 * step, step)
        writer.add_scalar("eval/accuracy", 0.25, step)
    writer.close()
    run = tensorboard_events.load(tmp_path)
    assert run.train["loss"].tolist() == [0.1, 0.2, 0.3]
    assert run.evals["val_accuracy"].tolist() == [0.25, 0.25, 0.25]


def test_tensorboard_truncated_file_keeps_what_was_written(tmp_path):
    path = event_file(tmp_path, [(s, [scalar("train/loss", float(s))]) for s in range(1, 11)])
    data = path.read_bytes()
    path.write_bytes(data[:-7])
    run = tensorboard_events.load(path)
    assert run.train["step"].tolist() == list(range(1, 10))
    assert any("incomplete record" in note for note in run.notes)


def test_tensorboard_corrupted_record(tmp_path):
    path = event_file(tmp_path, [(s, [scalar("train/loss", float(s))]) for s in range(1, 11)])
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF  # inside the last record's payload
    path.write_bytes(bytes(data))
    run = tensorboard_events.load(path)
    assert run.train["step"].tolist() == list(range(1, 10))
    assert any("fails its checksum" in note for note in run.notes)


def test_tensorboard_without_scalars_names_the_tags(tmp_path):
    path = event_file(
        tmp_path, [(1, [histogram_value("layer0/weights")]), (1, [text_value("notes", "hello")])]
    )
    with pytest.raises(RunImportError) as error:
        tensorboard_events.load(tmp_path)
    message = str(error.value)
    assert "no scalar data" in message and path.name in message
    assert "layer0/weights (histograms)" in message and "notes (text)" in message


def test_tensorboard_garbage_file(tmp_path):
    path = write(tmp_path, "events.out.tfevents.123.host", b"\xff" * 300)
    with pytest.raises(RunImportError, match="not a TensorBoard event file"):
        tensorboard_events.load(path)


def test_tensorboard_unknown_tags_then_user_aliases(tmp_path, monkeypatch):
    event_file(tmp_path, [(s, [scalar("my/odd_metric", 1.0 / s)]) for s in range(1, 4)])
    monkeypatch.delenv("RUN_DIAGNOSIS_ALIASES", raising=False)
    with pytest.raises(RunImportError, match=r"my/odd_metric.*RUN_DIAGNOSIS_ALIASES"):
        tensorboard_events.load(tmp_path)
    aliases = write(tmp_path, "aliases.yaml", "loss: [my/odd_metric]\n")
    monkeypatch.setenv("RUN_DIAGNOSIS_ALIASES", str(aliases))
    run = tensorboard_events.load(tmp_path)
    assert run.train["loss"].tolist() == pytest.approx([1.0, 0.5, 1 / 3])


def test_tensorboard_lightning_valid_prefix_lands_in_the_eval_log(tmp_path):
    """Issue 21: a Lightning log whose validation tags start with `valid_` (not `val_`) was read
    with an empty eval log. The resolver reads valid_loss/valid_acc as validation metrics; the
    per-batch copy (valid_loss_step) and the epoch mean of the train loss are left out."""
    points = []
    for step in range(1, 301):
        values = [scalar("train_loss_step", 2.0 / step**0.2), scalar("lr-AdamW", 1e-3)]
        if step % 100 == 0:
            epoch = step // 100
            values += [
                scalar("valid_loss", 1.5 * epoch),  # overfits: several times its minimum by the end
                scalar("valid_acc", 0.6 - 0.1 * epoch),
                scalar("valid_loss_step", 9.0),
                scalar("train_loss_epoch", 1.0),
                scalar("epoch", float(epoch - 1)),
                scalar("zorp_metric", 3.0),
            ]
        points.append((step, values))
    event_file(tmp_path / "lightning_logs" / "version_0", points)
    run = tensorboard_events.load(tmp_path / "lightning_logs" / "version_0")
    assert run.evals["step"].tolist() == [100, 200, 300]
    assert run.evals["val_loss"].tolist() == pytest.approx([1.5, 3.0, 4.5])
    assert run.evals["val_accuracy"].tolist() == pytest.approx([0.5, 0.4, 0.3])
    assert len(run.train) == 300 and run.train["learning_rate"].iloc[0] == pytest.approx(1e-3)
    assert "not understood: zorp_metric" in run.notes
    used = next(n for n in run.notes if n.startswith("TensorBoard tags used"))
    assert "val_loss <- 'valid_loss'" in used and "valid_loss_step" not in used


def test_tensorboard_two_run_folders_is_an_error(tmp_path):
    for version in ("version_0", "version_1"):
        event_file(tmp_path / version, [(1, [scalar("train_loss", 1.0)])])
    with pytest.raises(RunImportError, match=r"2 folders \(version_0, version_1\)"):
        tensorboard_events.load(tmp_path)


# ============================================================================ golden values: malformed


def golden(tmp_path: Path, document: object, yaml_text: str | None = None) -> Path:
    path = write(tmp_path, "golden_values_dev.json", json.dumps(document))
    if yaml_text is not None:
        write(tmp_path, "model_config.yaml", yaml_text)
    return path


def test_golden_list_values_nan_and_missing_yaml(tmp_path):
    document = {
        "lm loss": {"start_step": 0, "end_step": 10, "step_interval": 5, "values": [10.0, "nan", 9.0]},
        "num-zeros": {"start_step": 0, "end_step": 10, "step_interval": 5, "values": [1, 2, 3]},
    }
    run = megatron_golden.load(golden(tmp_path, document))
    assert run.train["step"].tolist() == [0, 5, 10]
    assert run.train["loss"].tolist() == ["10", "nan", "9"]
    assert run.schedule == {} and run.config == {}
    assert any("no model_config.yaml" in note for note in run.notes)


def test_golden_bad_step_key(tmp_path):
    path = golden(
        tmp_path, {"lm loss": {"start_step": 1, "end_step": 2, "step_interval": 1, "values": {"one": 1.0}}}
    )
    with pytest.raises(RunImportError, match=r"metric 'lm loss': key 'one' in 'values' is not a step number"):
        megatron_golden.load(path)


def test_golden_bad_value_and_bad_yaml(tmp_path):
    path = golden(
        tmp_path, {"lm loss": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {"1": [1]}}}
    )
    with pytest.raises(RunImportError, match=r"metric 'lm loss', step 1: expected a number, found list"):
        megatron_golden.load(path)
    ok = {"lm loss": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {"1": 1.0}}}
    path = golden(tmp_path, ok, "MODEL_ARGS:\n  --lr: [unclosed\n")
    with pytest.raises(RunImportError, match=r"model_config\.yaml: line \d+: not valid YAML"):
        megatron_golden.load(path)


def test_golden_yaml_without_some_flags_says_which(tmp_path):
    ok = {"lm loss": {"start_step": 1, "end_step": 2, "step_interval": 1, "values": {"1": 1.0, "2": 0.9}}}
    run = megatron_golden.load(golden(tmp_path, ok, "MODEL_ARGS:\n  --lr: 1e-4\n  --train-iters: 2\n"))
    assert run.schedule["peak_lr"] == pytest.approx(1e-4)
    assert run.schedule["min_lr"] is None and run.config["grad_clip_norm"] is None
    assert any("does not set min_lr (Megatron's default: 0.0)" in note for note in run.notes)


def test_golden_sniff_rejects_other_json(tmp_path):
    assert not megatron_golden.sniff(write(tmp_path, "trainer_state.json", json.dumps({"log_history": []})))
    assert not megatron_golden.sniff(write(tmp_path, "broken.json", "{"))


def test_tensorboard_keras_train_and_validation_folders_are_one_run(tmp_path):
    """Keras' TensorBoard callback writes logdir/train and logdir/validation, the same tag
    (epoch_loss) in each: one run, its validation folder's epoch_loss the validation loss. Two
    folders of other names stay separate runs."""
    logdir = tmp_path / "logs"
    event_file(
        logdir / "train",
        [(e, [scalar("epoch_loss", 1.0 / (e + 1)), scalar("epoch_lr", 1e-3)]) for e in range(5)],
    )
    event_file(logdir / "validation", [(e, [scalar("epoch_loss", 1.2 / (e + 1))]) for e in range(5)])
    run = tensorboard_events.load(logdir)
    assert run.train["loss"].tolist() == pytest.approx([1.0 / (e + 1) for e in range(5)])
    assert run.evals["val_loss"].tolist() == pytest.approx([1.2 / (e + 1) for e in range(5)])
    assert any("split folders of one run (train, validation" in note for note in run.notes)
    assert multi_run.find_runs(logdir) == []  # one run, not two
    other = tmp_path / "sweep"
    for name in ("lr_1e-3", "lr_1e-4"):
        event_file(other / name, [(e, [scalar("epoch_loss", 1.0 / (e + 1))]) for e in range(5)])
    with pytest.raises(RunImportError, match="these are separate runs"):
        tensorboard_events.load(other)
