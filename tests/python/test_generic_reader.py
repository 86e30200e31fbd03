"""The generic reader: a training log of no known format, its layout inferred (importers.generic_log).

Every fixture log is written by the test into tmp_path, in the layouts the issue names, each with
the noise real consoles carry (timestamps, log levels, tqdm bars, ANSI codes, warnings, tracebacks,
rank prefixes, cut lines, bytes that are not UTF-8). The real public logs are read in place from
../shared/real-logs (never copied here): the generic reader must not take any run a specific
importer reads.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from run_diagnosis import diagnose, importers
from run_diagnosis.importers import RunImportError, canonical_files, generic_lines, generic_log, metric_names
from run_diagnosis.importers.canonical import config_document, write_run
from run_diagnosis.importers.generic_lines import COUNTERLESS, COUNTERLESS_MIN_ROWS
from run_diagnosis.report_layout import layout_lines
from run_diagnosis.run_files import INTERVAL_MEAN_KEY
from support.dbt_session import Diagnosis, fixture_run
from support.paths import SHARED
from support.run_builder import RunBuilder

REAL_LOGS = SHARED / "real-logs"
SAMPLE_RUN = SHARED / "sample-run"
needs_real_logs = pytest.mark.skipif(not REAL_LOGS.is_dir(), reason=f"real logs not present at {REAL_LOGS}")


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


def losses(run) -> list[float]:
    return [float(v) for v in run.train["loss"]]


def steps(frame) -> list[int]:
    return [int(s) for s in frame["step"]]


def loss_of(step: int) -> float:
    return round(10.0 / (1 + step / 50), 4)


# ============================================================================ the layouts of the issue


def pipe_console(n: int = 30) -> str:
    lines = [
        "\x1b[32m2024-05-08 04:06:12,127 INFO\x1b[0m Starting training with 4 GPUs",
        "/usr/lib/python3/site-packages/torch/nn/modules/rnn.py:83: UserWarning: dropout option adds dropout",
        '  warnings.warn("dropout option adds dropout after all but last "',
    ]
    for i in range(n):
        step = 10 * (i + 1)
        bar = "\r".join(f"{p}%|##        | {p}/100 [00:01<00:09, 9.8it/s]" for p in (10, 50, 90))
        lines.append(bar)
        lines.append(
            f"2024-05-08 04:06:{i:02d},722 INFO step {step:5d} | loss {loss_of(step)} | lr 6.0e-04 | "
            f"norm 0.41 | dt 405ms | 12.3k tok/s"
        )
    lines += [
        "Traceback (most recent call last):",
        '  File "train.py", line 12, in <module>',
        "KeyboardInterrupt",
    ]
    return "\n".join(lines) + "\n"


def test_pipe_console_with_units_and_noise(tmp_path: Path) -> None:
    run = generic_log.load(write(tmp_path, "train.log", pipe_console()))
    assert steps(run.train) == [10 * (i + 1) for i in range(30)]
    assert losses(run) == [loss_of(s) for s in steps(run.train)]
    assert set(run.train["learning_rate"]) == {6.0e-04}
    assert set(run.train["grad_norm"]) == {0.41}
    assert list(run.train["step_time_sec"]) == pytest.approx([0.405] * 30)  # 405ms
    layout = run.layout
    assert layout["fields"]["loss"] == "loss" and layout["train"]["counter"]["name"] == "step"
    skipped = layout["skipped"]
    assert skipped["traceback"]["lines"] == 3
    assert skipped["progress redraw (carriage return)"]["lines"] == 60  # two redraws a bar
    assert "warning" in skipped and len(skipped["warning"]["examples"]) <= 2
    assert layout["confidence"] == "high"


def block_console(ranks: bool) -> str:
    lines = ["[rank0]: Configuration: TrainConfig(seed=6198, d_model=768)"]
    for i in range(12):
        step = 10 * (i + 1)
        for rank in (0, 1) if ranks else (0,):
            prefix = f"[rank{rank}]: " if ranks else ""
            lines.append(
                f"{prefix}2025-12-27 22:12:56.867\thost:0\tolmo.train:990\tINFO\t[step={step}/7630,epoch=0]"
            )
            lines.append(f"{prefix}    optim/total_grad_norm={0.4 + rank}")
            lines.append(f"{prefix}    train/CrossEntropyLoss={loss_of(step) + rank}")
            lines.append(f"{prefix}    throughput/total_tokens=5,242,880")
    return "\n".join(lines) + "\n"


def test_block_layout_and_interleaved_rank_prefixes(tmp_path: Path) -> None:
    run = generic_log.load(write(tmp_path, "console.txt", block_console(ranks=True)))
    assert steps(run.train) == [10 * (i + 1) for i in range(12)]
    assert losses(run) == [loss_of(s) for s in steps(run.train)]  # rank 0's values, not rank 1's
    assert set(run.train["grad_norm"]) == {0.4}
    assert run.config["total_steps"] == 7630
    assert run.layout["skipped"]["record of another rank (rank 0 is read)"]["lines"] == 12
    assert run.layout["fields"]["loss"] == "train/CrossEntropyLoss"


def test_an_epoch_header_takes_its_values_past_a_librarys_notices(tmp_path: Path) -> None:
    # Keras fit(verbose=2): "Epoch N/M" then the epoch's values; TensorFlow's allocator notices
    # (more lines than a block's continuation window) printed between them must not lose the epoch
    lines = []
    for epoch in range(1, 9):
        lines.append(f"Epoch {epoch}/8")
        if epoch == 5:
            lines += [
                f"2021-05-09 18:30:53.33{i}423: I tensorflow/stream_executor/cuda/cuda_driver.cc:789] "
                f"failed to allocate {613 - 50 * i}.15M ({642935552 - 1000 * i} bytes) from device: "
                "CUDA_ERROR_OUT_OF_MEMORY: out of memory"
                for i in range(7)
            ]
        lines.append(f"19/19 - 12s - loss: {loss_of(epoch)} - accuracy: 0.{50 + epoch}")
    run = generic_log.load(write(tmp_path, "train_log.txt", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(1, 9))
    assert losses(run) == [loss_of(e) for e in range(1, 9)]


def test_a_value_in_decibels_is_a_metric_named_in_the_layout(tmp_path: Path) -> None:
    # an image-restoration log: "Average PSNR : 18.33dB" is a validation metric this tool does not
    # judge, but it is read and named, not lost as a line without numbers
    lines = [f"<epoch:{e:3d}, lr:1.000e-04> loss: {loss_of(e):.3e}" for e in range(1, 21)]
    lines.insert(10, "<epoch: 10, Average PSNR : 18.33dB")
    run = generic_log.load(write(tmp_path, "train_log.txt", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(1, 21))
    assert "Average PSNR" in run.layout["not_used"]


def test_a_counter_glued_to_its_word_is_the_counter(tmp_path: Path) -> None:
    # print("EP%d, avg_loss=" % epoch): the epoch is read from 'EP12' as from 'EP 12'; a word that
    # merely ends in digits ('gpt2', 'layer_ep3') is not a counter
    lines = [f"Load file: gpt2, EP{e}, avg_loss={loss_of(e):.4f}" for e in range(0, 20)]
    run = generic_log.load(write(tmp_path, "train.txt", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(0, 20))
    assert losses(run) == [round(loss_of(e), 4) for e in range(0, 20)]
    assert run.layout["train"]["counter"]["name"] == "EP"
    assert generic_lines.GLUED_COUNTER.sub(r"\1 \2", "model gpt2 layer_ep3 Epoch7 iter500") == (
        "model gpt2 layer_ep3 Epoch 7 iter 500"
    )


def test_a_log_whose_head_is_megabytes_of_one_bars_redraws_is_recognised(tmp_path: Path) -> None:
    # nohup of a Hugging Face Trainer: tqdm redraws its bar (carriage returns, no new line) for every
    # step, megabytes before the first printed dict; the sniff reads the head as the lines hold it once
    # their redraws are reduced to the last state, as the reader does
    redraws = "".join(f"\r  0%|          | {i}/240003 [00:00<16:20:00,  4.08it/s]" for i in range(60000))
    dicts = [
        f"{{'loss': {loss_of(10 * i)}, 'learning_rate': 5e-05, 'epoch': {i / 10}}}" for i in range(1, 11)
    ]
    path = write(tmp_path, "nohup.out", "\n".join(["Running training", redraws, *dicts]) + "\n")
    assert path.stat().st_size > generic_log.SNIFF_BYTES
    run = importers.detect(path).load(path)
    assert losses(run) == [loss_of(10 * i) for i in range(1, 11)]


def test_a_counter_joined_to_its_loss_by_a_hyphen_is_a_two_column_table(tmp_path: Path) -> None:
    # f"{epoch:04d}-{loss:.4f}" once an epoch in loss.txt: a headerless counter,value table named after
    # the file; one line of another shape (a date, a negative value, an exponent) keeps it no table
    rows = [f"{e:04d}-{loss_of(e):.4f}" for e in range(1, 31)]
    run = generic_log.load(write(tmp_path, "loss.txt", "\n".join(rows) + "\n"))
    assert steps(run.train) == list(range(1, 31))
    assert losses(run) == [round(loss_of(e), 4) for e in range(1, 31)]
    assert generic_lines.sniff_delimiter(rows) == "-"
    assert generic_lines.sniff_delimiter([*rows, "0031-1.5e-05"]) != "-"


def colon_rows(epochs: list[int]) -> list[str]:
    # f"{epoch} : {batch} : {loss} : {top1} : {top5}" appended to losses.txt, three rows an epoch
    return [
        f"{e} : {b} : {loss_of(150 * (e - 1) + b)} : 0.{e:02d} : 0.{e + 20:02d}"
        for e in epochs
        for b in (50, 100, 150)
    ]


def test_numbers_joined_by_colons_under_a_header_of_words_are_a_table(tmp_path: Path) -> None:
    # a header of words and rows of numbers, every cell split by ' : '; the column 'e' is named by no
    # word, but it holds the batch counter (it never changes while batch advances, and advances when
    # batch starts again): step = (e - 1) x 150 + batch, and 'e' is no metric left not understood
    rows = ["e : batch : loss           : train 1 : train 5 ", *colon_rows(list(range(1, 7)))]
    run = generic_log.load(write(tmp_path, "losses.txt", "\n".join(rows) + "\n"))
    assert steps(run.train) == [150 * (e - 1) + b for e in range(1, 7) for b in (50, 100, 150)]
    assert losses(run) == [loss_of(150 * (e - 1) + b) for e in range(1, 7) for b in (50, 100, 150)]
    assert not any(note.startswith(metric_names.NOT_UNDERSTOOD) and " e" in note for note in run.notes)
    # a console whose colons end labels, or a clock's, is no table of numbers
    assert generic_lines.sniff_delimiter(rows) == ":"
    labels = ["Training started", *(f"Epoch: {e} Loss: {loss_of(e)} Acc: 0.5" for e in range(1, 9))]
    assert generic_lines.sniff_delimiter(labels) != ":"
    clocks = ["time : loss : acc", *(f"12:0{e}:00 : {loss_of(e)} : 0.5" for e in range(1, 9))]
    assert generic_lines.sniff_delimiter(clocks) != ":"


def test_an_epoch_entered_again_by_a_resume_keeps_its_inner_counter(tmp_path: Path) -> None:
    # a file opened in append mode by each resume: epochs 1-4, then 4 again and 5-6, then 6 again.
    # The batch counter restarts with each epoch and with each resume: the resumes are where the
    # rebuilt step goes back, not one restart per epoch
    rows = ["e : batch : loss : train 1 : train 5", *colon_rows([1, 2, 3, 4, 4, 5, 6, 6])]
    run = generic_log.load(write(tmp_path, "losses.txt", "\n".join(rows) + "\n"))
    assert [step for step, _ in run.events.itertuples(index=False, name=None)] == [500, 800]
    assert steps(run.train)[:12] == [150 * (e - 1) + b for e in range(1, 5) for b in (50, 100, 150)]
    # the same under a named epoch counter
    named = [rows[0].replace("e :", "epoch :", 1), *rows[1:]]
    run = generic_log.load(write(tmp_path, "named.txt", "\n".join(named) + "\n"))
    assert [step for step, _ in run.events.itertuples(index=False, name=None)] == [500, 800]


def first_run(rows: int) -> list[float]:
    # an epoch mean falling from 10 towards 2 at a fresh model's pace, a little noise
    return [round((2 + 8 * math.exp(-i / 6)) * (1 + 0.01 * math.sin(7 * i)), 4) for i in range(rows)]


def loss_lines(values: list[float]) -> str:
    return "".join(f"Loss, {v:.6f}\n" for v in values)


def test_a_rerun_appended_to_a_counterless_log_starts_the_rows_again(tmp_path: Path) -> None:
    # with open('loss.csv', 'a') in a notebook cell run twice: no counter, so the second run shows only
    # as the loss going back to its first rows' level and falling again at their pace
    run = generic_log.load(write(tmp_path, "loss.csv", loss_lines(first_run(30) + first_run(25))))
    assert steps(run.train) == [*range(1, 31), *range(1, 26)]
    assert [step for step, _ in run.events.itertuples(index=False, name=None)] == [1]
    assert any("started over 1 time(s)" in note for note in run.notes)
    # a spike that comes back at once, and a divergence that stays at the start's level, are no rerun
    spike = first_run(30)
    spike[20:22] = [9.5, 6.0]
    diverged = first_run(30) + [9.8 + 0.01 * (i % 3) for i in range(20)]
    for values in (spike, diverged):
        run = generic_log.load(write(tmp_path, "loss.csv", loss_lines(values)))
        assert steps(run.train) == list(range(1, len(values) + 1))
        assert run.events.empty


def test_an_elapsed_clock_that_starts_over_while_the_counter_carries_on_is_a_resume(tmp_path: Path) -> None:
    # Ultralytics' resume continues the epoch count, and its results.csv 'time' (seconds since the
    # process started) starts over: a new process took the run on at epoch 7
    clock = [380.0 * e for e in range(1, 7)] + [360.0 * (e - 6) for e in range(7, 13)]
    rows = [f"{e},{t},{2.0 - 0.1 * e:.2f}" for e, t in zip(range(1, 13), clock, strict=True)]
    run = generic_log.load(write(tmp_path, "results.csv", "\n".join(["epoch,time,train/loss", *rows]) + "\n"))
    assert steps(run.train) == list(range(1, 13))
    assert [(s, e) for s, e in run.events.itertuples(index=False, name=None)] == [
        (7, "run resumed: 'time' went backwards (a new process)")
    ]
    # a clock that only grows: no event
    rows = [f"{e},{380.0 * e},{2.0 - 0.1 * e:.2f}" for e in range(1, 13)]
    run = generic_log.load(write(tmp_path, "results.csv", "\n".join(["epoch,time,train/loss", *rows]) + "\n"))
    assert run.events.empty


def test_launches_appended_to_one_epoch_log_are_restarts_where_the_counter_starts_over(
    tmp_path: Path,
) -> None:
    # a script appending one line an epoch to the same file at every launch: a launch that ended
    # after its first epoch, another, one of three epochs, then one of four. The epoch counter repeats
    # only its first value, and goes back to it: launches, not an epoch logged on several rows
    epochs = [0, 0, 0, 1, 2, 0, 1, 2, 3]
    values = [415.17, 242.14, 437.2, 64.19, 63.22, 284.14, 20.58, 12.82, 8.11]
    text = "".join(f"epoch:{e}\tloss:{v}\tf1:0.1\n" for e, v in zip(epochs, values, strict=True))
    run = generic_log.load(write(tmp_path, "log.txt", text))
    assert steps(run.train) == epochs
    assert [step for step, _ in run.events.itertuples(index=False, name=None)] == [0, 0, 0]
    assert "started over at 0 at line 2" in run.events["event"].iloc[0]
    # an epoch logged on several rows repeats its other values too: rows in file order, no restart
    batches = [0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    text = "".join(f"epoch:{e}\tloss:{3.0 - 0.1 * i:.3f}\n" for i, e in enumerate(batches))
    run = generic_log.load(write(tmp_path, "log.txt", text))
    assert steps(run.train) == list(range(1, len(batches) + 1))
    assert run.events.empty


def test_a_loop_index_named_i_is_the_step_counter(tmp_path: Path) -> None:
    # print(f"i: {i}, train_loss: {loss}") inside `for i, batch in enumerate(loader)`, under an
    # 'Epoch 1' banner, in a file two launches appended to: the index counts the steps, and its
    # going back to 0 is the second launch
    lines = ["Epoch 1", *(f"[TRAIN]: i: {i}, train_loss: {1.39 - 0.001 * i}" for i in range(12))]
    lines += ["Epoch 1", *(f"[TRAIN]: i: {i}, train_loss: {1.39 - 0.001 * i}" for i in range(5))]
    run = generic_log.load(write(tmp_path, "log.txt", "\n".join(lines) + "\n"))
    assert steps(run.train) == [*range(12), *range(5)]
    assert [step for step, _ in run.events.itertuples(index=False, name=None)] == [0]
    assert not any(note.startswith(metric_names.NOT_UNDERSTOOD) for note in run.notes)


def test_a_folder_of_a_training_and_a_validation_table_is_one_run_per_split(tmp_path: Path) -> None:
    # train.log and valid.log, each 'epoch,loss,ppl,accuracy': two tables a Keras CSVLogger could have
    # written, but one run written per split; the Keras reader reads one log and leaves them alone
    header = "epoch,loss,ppl,accuracy\n"
    train = header + "".join(
        f"{e}, {loss_of(e + 1):.5f}, {math.exp(loss_of(e + 1)):.3f},0.5\n" for e in range(12)
    )
    valid = header + "".join(f"{e}, {1.1 * loss_of(e + 1):.5f}, 9.0,0.4\n" for e in range(12))
    write(tmp_path, "train.log", train)
    write(tmp_path, "valid.log", valid)
    module = importers.detect(tmp_path)
    assert module is generic_log
    run = module.load(tmp_path)
    assert len(run.train) == 12 and len(run.evals) == 12
    # a folder of one such table is the Keras reader's still
    (tmp_path / "valid.log").unlink()
    assert importers.detect(tmp_path) is not generic_log


def test_a_metrics_csv_without_a_step_column_is_no_lightning_log(tmp_path: Path) -> None:
    # a DQN script's logs/metrics.csv: 'episode,reward,loss' has Lightning's file name, not its columns
    rows = "".join(f"{e},{20.0 + e},{0.5 + 0.1 * e:.3f}\n" for e in range(30))
    write(tmp_path, "metrics.csv", "episode,reward,loss\n" + rows)
    assert importers.detect(tmp_path) is generic_log
    run = generic_log.load(tmp_path)
    # its loss, logged beside a reward, is the agent's TD loss: its targets move with the policy
    assert config_document(run)["loss_objective"] == "reinforcement"
    assert len(run.train) == 30
    # a loss with no episode or reward beside it is no agent's
    write(tmp_path, "metrics.csv", "row,quality,loss\n" + rows)
    assert config_document(generic_log.load(tmp_path)).get("loss_objective") is None


def test_a_log_its_detected_reader_cannot_read_is_read_by_the_generic_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # detection guesses by a file's name or shape; a reader that claimed a log and could not read it
    # leaves it to the generic reader, which says so in the run's first note
    def cannot_read(path: Path) -> None:
        raise RunImportError(f"{path}: no step column")

    claimed = SimpleNamespace(FORMAT="claimed", load=cannot_read)
    monkeypatch.setattr(importers, "detect", lambda path: claimed)
    log = write(tmp_path, "log.txt", "".join(f"step {s} loss {loss_of(s):.4f}\n" for s in range(1, 31)))
    for run in (importers.load_run(log), diagnose.read_source(log, None)):
        assert steps(run.train) == list(range(1, 31))
        assert run.notes[0].endswith("no step column); read by the generic reader instead")
    # the reader the user chose keeps its error; so does a file the generic reader cannot read either
    monkeypatch.setattr(importers, "by_format", lambda fmt: claimed)
    with pytest.raises(diagnose.BadInput, match="no step column"):
        diagnose.read_source(log, "claimed")
    notes = write(tmp_path, "notes.txt", "a shopping list\nmilk\n")
    with pytest.raises(RunImportError, match="no step column"):
        importers.load_run(notes)
    # the tool's own five files keep their error (it names the file, row and column to mend)
    with pytest.raises(RunImportError, match="no step column"):
        importers.generic_instead(canonical_files, log, RunImportError("no step column"))


def test_lines_printed_alike_under_banners_that_name_splits_take_their_split(tmp_path: Path) -> None:
    # one print for both loops, 'Epoch 0 | loss = 0.033 | current = 0.915', under a banner each:
    # the banners say which loop printed the line
    lines = []
    for e in range(12):
        lines += [
            f"===== training epoch {e + 1} =====",
            f"Epoch {e} | loss = {loss_of(e + 1):.4f} | current = 0.9",
        ]
        lines += [
            f"===== validate epoch {e + 1} =====",
            f"Epoch {e} | loss = {1.2 * loss_of(e + 1):.4f} | current = 0.8",
        ]
    run = generic_log.load(write(tmp_path, "log.txt", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(12)) and len(run.evals) == 12
    assert losses(run) == [round(loss_of(e + 1), 4) for e in range(12)]
    # one banner naming one split says nothing of the lines after the next phase starts
    lines = [f"Epoch {e} | loss = {loss_of(e + 1):.4f}" for e in range(12)]
    run = generic_log.load(write(tmp_path, "log.txt", "\n".join(["===== Validation =====", *lines]) + "\n"))
    assert steps(run.train) == list(range(12)) and run.evals.empty
    # training lines that carry on after an evaluation's banner and its own lines stay training lines
    lines = ["start training"]
    for e in range(1, 13):
        lines += [
            f"iteration:{e} step:{b}/300, NER loss:{loss_of(e) + 0.01 * b / 100:.4f}" for b in (100, 200, 300)
        ]
        lines += ["evaluate:dev", f"accuracy: {90 + e / 10:.2f}%; precision: 70.0%"]
    run = generic_log.load(write(tmp_path, "log.txt", "\n".join(lines) + "\n"))
    assert len(run.train) == 36


def test_single_batch_noise_in_a_counterless_log_is_no_rerun(tmp_path: Path) -> None:
    # a fine-tune of batch 2 printing each batch's loss: the losses scatter by half their level from
    # row to row, so stretches of harder batches at twice the level, starting near the first rows'
    # level, are the log's own noise (a PSPNet log of 585 batches, the forty-third held-out half)
    rng = np.random.default_rng(7)
    values = [round(float(v), 4) for v in np.exp(rng.normal(math.log(0.9), 0.6, 300))]
    values[:4] = [2.64, 1.55, 0.79, 1.44]
    values[150:155] = [2.83, 2.68, 1.28, 1.64, 2.52]
    run = generic_log.load(write(tmp_path, "loss.csv", loss_lines(values)))
    assert steps(run.train) == list(range(1, 301))
    assert run.events.empty and not any("started over" in note for note in run.notes)


def test_a_table_written_with_decimal_commas(tmp_path: Path) -> None:
    # 'step;loss;val_loss' then '10;1,6667;1,8333': a locale's export; a cell whose comma can only be a
    # decimal comma makes every comma of the table one (its '1,218' is 1.218); without one, '1,218'
    # stays a thousands separator
    values = [1.6667, 1.218, 0.4216, *(round(0.4 - 0.01 * i, 4) for i in range(12))]
    rows = [f"{10 * (i + 1)};{v};{v + 0.1:.4f}".replace(".", ",") for i, v in enumerate(values)]
    run = generic_log.load(write(tmp_path, "losses.csv", "\n".join(["step;loss;val_loss", *rows]) + "\n"))
    assert losses(run) == values
    counts = [f"{10 * (i + 1)};{loss_of(i):.4f};1,218" for i in range(12)]
    run = generic_log.load(write(tmp_path, "counts.csv", "\n".join(["step;loss;tokens", *counts]) + "\n"))
    assert losses(run) == [round(loss_of(i), 4) for i in range(12)]
    assert run.layout["format"] == "csv"


def test_a_float32_loss_too_large_for_a_fraction_is_still_a_loss(tmp_path: Path) -> None:
    # a mean squared error of unscaled prices prints whole ("611333636096.0000"): above 2**24 a
    # float32 has no fraction, so whole values there are no sign of a count
    lines = [
        f"2025-11-04 15:50:04,453 [INFO] __main__: Epoch [{e}/1000], Train Loss: "
        f"{float(round(6.1e11 / (1 + e / 100), -4)):.4f}, Train RMSE: 781878.2745,"
        for e in range(10, 210, 10)
    ]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert run.layout["fields"]["loss"] == "Train Loss"
    assert losses(run)[0] == round(6.1e11 / 1.1, -4)
    # whole values a float32 could carry a fraction in still read as counts, not a loss
    counts = [f"Epoch [{e}/100], Train Loss: {1000 + 7 * e}.0000, acc: 0.5" for e in range(1, 21)]
    with pytest.raises(RunImportError):
        generic_log.load(write(tmp_path, "counts.log", "\n".join(counts) + "\n"))


def test_a_block_whose_loss_follows_a_component_of_it(tmp_path: Path) -> None:
    # stable-baselines3 prints one table per iteration; its entropy_loss (a component) comes before
    # its loss in the block, and must not shut the loss out of the record
    blocks = []
    for it in range(1, 13):
        blocks += [
            "-----------------------------------------",
            "| time/                   |             |",
            f"|    iterations           | {it:<11d} |",
            f"|    total_timesteps      | {4192 * it:<11d} |",
            "| train/                  |             |",
            f"|    entropy_loss         | {-2.19 + 0.01 * it:<11.4g} |",
            "|    learning_rate        | 0.0003      |",
            f"|    loss                 | {loss_of(it):<11.4g} |",
            f"|    value_loss           | {0.9 - 0.01 * it:<11.4g} |",
        ]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(blocks) + "\n"))
    assert run.layout["fields"]["loss"] == "loss"
    assert losses(run) == [float(f"{loss_of(it):.4g}") for it in range(1, 13)]


def test_a_counter_printed_abbreviated_is_read_at_its_rows_interval(tmp_path: Path) -> None:
    """LeRobot prints its step as 'step:400' and then 'step:1K' ... 'step:12K' (one row every 200
    steps, so 1K three rows running): a counter rounded to its digits, read at the rows' regular
    interval (every printed value within its rounding of it); its episode count 'ep:1K' is no
    reason to skip a line."""
    lines = []
    for row in range(60):
        step = 400 + 200 * row
        shown = str(step) if step < 1000 else f"{step / 1000:.0f}K"
        episodes = 10 * row
        ep = str(episodes) if episodes < 1000 else f"{episodes / 1000:.0f}K"
        lines.append(
            f"INFO 2026-06-12 10:53:24 ot_train.py:357 step:{shown} ep:{ep} loss:{2.0 - 0.01 * row:.3f}"
        )
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    run = importers.detect(log).load(log)
    assert list(run.train["step"]) == [400 + 200 * row for row in range(60)]
    assert "printed abbreviated on 57 rows" in run.notes[0]


@pytest.mark.parametrize("falling", [True, False])
def test_numbers_named_by_their_split_alone_are_its_losses_when_they_fall(
    tmp_path: Path, falling: bool
) -> None:
    """A JSON list of {"epoch", "train", "val"} rows (a tutorial's per-phase history): no name says
    what is measured, and the number a training log records for each split is its loss, when the
    training series falls (low confidence, said so); one that rises (an accuracy) is refused."""
    rows = []
    for epoch in range(1, 21):
        train = 0.5 + 0.4 / epoch if falling else 0.9 - 0.4 / epoch
        rows.append({"epoch": epoch, "train": train, "val": train + 0.05})
    log = tmp_path / "training_log.json"
    log.write_text(json.dumps(rows, indent=2))
    if not falling:
        with pytest.raises(RunImportError, match="none of them reads as a training loss"):
            importers.detect(log).load(log)
        return
    run = importers.detect(log).load(log)
    assert list(run.train["loss"].round(4))[:2] == [0.9, 0.7]
    assert list(run.evals["val_loss"].round(4))[:2] == [0.95, 0.75]
    assert any("named by their split alone and falling over the run" in note for note in run.notes)


@pytest.mark.parametrize("stem", ["train_log", "train_history", "run_log"])
def test_a_headerless_table_named_after_its_split_file_is_that_splits_loss(tmp_path: Path, stem: str) -> None:
    """'4.557,4.556' rows with no header and no counter in train_log.txt (a loop that writes its loss
    and accuracy each epoch): the first column, named after the file, is named by its split alone (a
    file-kind word beside it says nothing of what is measured), so, falling, it is the training loss;
    a file whose name is no split word says nothing either way."""
    rows = "\n".join(f"{4.6 - 0.1 * e:.4f},{5 + 2.2 * e:.2f}" for e in range(39))
    log = write(tmp_path, f"{stem}.txt", rows + "\n")
    if stem == "run_log":
        with pytest.raises(RunImportError):
            generic_log.load(log)
        return
    run = generic_log.load(log)
    assert len(run.train) == 39 and list(run.train["loss"].round(4))[:2] == [4.6, 4.5]


def test_a_loss_term_a_schedule_switches_on_is_an_event(tmp_path: Path) -> None:
    """A logged term of the loss exactly 0 on the rows of the first epoch and not 0 from the second
    (an auxiliary loss a schedule turns on) is an objective change at its first row; a hinge term
    at 0 on a few scattered rows is none."""
    lines = []
    for step in range(1, 41):
        aux = 0.0 if step <= 20 else 0.5 + 0.01 * step
        hinge = 0.0 if step % 7 == 0 else 0.2
        total = 2.0 - 0.01 * step + aux + hinge
        counter = f"Epoch: [{(step - 1) // 20}][{(step - 1) % 20 + 1}/20]"
        lines.append(f"{counter}\tLoss {total:.4f}\taux_loss {aux:.4f}\thinge_loss {hinge:.4f}")
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    run = importers.detect(log).load(log)
    changes = [e for e in run.events["event"] if e.startswith("loss terms changed: ")]
    assert changes == [
        "loss terms changed: 'aux_loss' switched on at step 21 (exactly 0 on the 20 logged rows before): "
        "the training loss sums other terms from here"
    ]


def test_a_step_counter_that_never_moves_beside_an_epoch_that_does(tmp_path: Path) -> None:
    # one line an epoch, printed at its first iteration: 'iter:0/18' on every line; the epoch counts
    lines = [
        f"[train] epoch:{e} iter:0/18 0.00% lr:0.001000 loss:{loss_of(e + 1):.6f} ETA:0.0min"
        for e in range(30)
    ]
    run = generic_log.load(write(tmp_path, "train_log.txt", "\n".join(lines) + "\n"))
    assert steps(run.train) == [18 * e for e in range(30)]
    assert losses(run) == [round(loss_of(e + 1), 6) for e in range(30)]


def test_a_loss_read_from_one_term_of_a_sum_is_marked_in_the_config(tmp_path: Path) -> None:
    # YOLOv8's results.csv logs box, cls and dfl terms, no total: the first stands in, and the config
    # says so (loss_objective term), so the learning verdicts read it as a weak signal of the whole
    header = "epoch,train/box_loss,train/cls_loss,train/dfl_loss,val/box_loss,val/cls_loss,val/dfl_loss"
    rows = [f"{e},{1.0 + 0.02 * e},{3.0 - 0.1 * e},1.3,1.2,2.5,1.4" for e in range(10)]
    run = generic_log.load(write(tmp_path, "results.csv", "\n".join([header, *rows]) + "\n"))
    assert run.loss_name == "train/box_loss"
    assert config_document(run)["loss_objective"] == "term"
    # a logged total is the objective itself
    whole = ["epoch,train/loss,val/loss", *(f"{e},{3.0 - 0.1 * e},2.9" for e in range(10))]
    run = generic_log.load(write(tmp_path, "whole.csv", "\n".join(whole) + "\n"))
    assert config_document(run).get("loss_objective") is None
    # a term exactly 0 on every row never engaged (box and dfl on images without a labelled object):
    # the class term stands in, for the validation loss too, so that the two compare
    rows = [f"{e},0,{60.5 - e},0,1.8,{2.2 + 0.01 * e},1.3" for e in range(10)]
    run = generic_log.load(write(tmp_path, "zeros.csv", "\n".join([header, *rows]) + "\n"))
    assert run.loss_name == "train/cls_loss" and list(run.train["loss"])[:2] == [60.5, 59.5]
    assert list(run.evals["val_loss"])[:2] == [2.2, 2.21]
    assert any("'train/box_loss' is exactly 0 on every row" in note for note in run.notes)


def test_a_split_whose_box_term_never_engaged_is_named_in_the_config(tmp_path: Path) -> None:
    """A box-regression term exactly 0 on every row while another term of its split is not: no labelled
    box reached that split's loss (the config names the terms); a class term of 0 (a one-class YOLOv5)
    or a split all of whose terms are 0 (YOLOv9 logs no validation loss) says nothing of its targets."""
    header = "epoch,train/box_loss,train/obj_loss,train/cls_loss,val/box_loss,val/obj_loss,val/cls_loss"

    def zero_terms(name: str, row: str) -> tuple[object, object]:
        rows = [row.format(e=e, fall=1.0 - 0.05 * e) for e in range(10)]
        document = config_document(generic_log.load(write(tmp_path, name, "\n".join([header, *rows]) + "\n")))
        return document.get("train_zero_loss_terms"), document.get("val_zero_loss_terms")

    # validation without labels: val box and cls 0, val objectness not (YOLOv5 with an unlabelled val set)
    assert zero_terms("v.csv", "{e},{fall},0.04,0.03,0,0.022,0") == (None, "val/box_loss")
    # training without labels: both splits' box terms 0 beside their class terms
    assert zero_terms("t.csv", "{e},0,0.04,{fall},0,0.02,1.2") == ("train/box_loss", "val/box_loss")
    # a one-class detector logs cls 0 in both splits; YOLOv9 logs every validation term as 0
    assert zero_terms("one.csv", "{e},{fall},0.04,0,0.9,0.02,0") == (None, None)
    assert zero_terms("v9.csv", "{e},{fall},0.04,0.03,0,0,0") == (None, None)


def test_a_detectors_map_at_iou_half_is_written_to_the_eval_log(tmp_path: Path) -> None:
    # YOLOv8's results.csv: metrics/mAP50(B) is the validation mAP at IoU 0.5 (the eval log's optional
    # val_map50), mAP50-95 is another metric; a run whose log names no mAP writes no such column
    header = "epoch,train/box_loss,metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss"
    rows = [f"{e},{1.5 - 0.05 * e},{0.04 * e:.3f},{0.02 * e:.3f},{1.6 - 0.04 * e}" for e in range(1, 11)]
    run = generic_log.load(write(tmp_path, "results.csv", "\n".join([header, *rows]) + "\n"))
    assert [round(float(v), 3) for v in run.evals["val_map50"]] == [round(0.04 * e, 3) for e in range(1, 11)]
    written = write_run(run, tmp_path / "run")["eval"].read_text(encoding="utf-8").splitlines()
    assert written[0] == "step,val_loss,val_accuracy,val_map50"
    plain = ["epoch,train/loss,val/loss", *(f"{e},{3.0 - 0.1 * e},2.9" for e in range(10))]
    run = generic_log.load(write(tmp_path, "plain.csv", "\n".join(plain) + "\n"))
    written = write_run(run, tmp_path / "plain")["eval"].read_text(encoding="utf-8").splitlines()
    assert written[0] == "step,val_loss,val_accuracy"


def test_a_reinforcement_learning_loss_stands_in_before_a_divergence_and_is_marked(tmp_path: Path) -> None:
    # a PPO table: a return, the value-function loss (the only loss logged), the policy's entropy and
    # KL; the KL is a diagnostic the loop prints, not what it minimises, so the named loss stands in,
    # and the config says it is a reinforcement-learning loss (its targets move with the policy)
    header = "steps,iteration,mean_reward,vf_loss,entropy,kl"
    rows = [
        f"{2048 * (i + 1)},{i + 1},{-100 + 5 * i},{3.0 + 0.5 * i},{41.0 - 0.01 * i},0.004" for i in range(40)
    ]
    run = generic_log.load(write(tmp_path, "train.csv", "\n".join([header, *rows]) + "\n"))
    assert run.loss_name == "vf_loss"
    assert config_document(run)["loss_objective"] == "reinforcement"
    assert metric_names.is_reinforcement("train/policy_gradient_loss")
    assert metric_names.is_reinforcement("td_loss") and metric_names.is_reinforcement("value_loss")
    # a loss's value is no value loss; a plain or a GAN loss is none either
    assert not any(metric_names.is_reinforcement(n) for n in ("loss value", "train_loss", "d_loss", "kl"))


def test_the_whole_runs_loss_before_one_numbered_groups(tmp_path: Path) -> None:
    # group DRO's table: one loss per data group (avg_loss_group:0 .. :3) beside the run's own
    # (avg_actual_loss): the group's is a part; alone, numbered losses still read (sets of a family)
    parts = [f"avg_loss_group:{g}" for g in range(4)]
    names = ["epoch", "batch", *parts, "avg_actual_loss", "avg_acc"]
    assert metric_names.assign(names).columns["loss"] == "avg_actual_loss"
    assert metric_names.assign(["epoch", *parts]).columns["loss"] == "avg_loss_group:0"
    # no number, no family: two losses named apart are not parts of one
    assert metric_names.assign(["epoch", "loss", "lm loss"]).columns["loss"] in ("loss", "lm loss")


def test_an_epochs_last_batch_logged_off_the_interval_bounds_its_length(tmp_path: Path) -> None:
    # group DRO's train.csv: running averages at batches 49 and 74 of each 75-batch epoch (every 50
    # batches, and the epoch's last): the epoch is at least 75 long, not the 50 the interval gives
    rows = [f"{e},{b},{loss_of(e * 2 + i + 1):.4f}" for e in range(8) for i, b in enumerate((49, 74))]
    run = generic_log.load(write(tmp_path, "train.csv", "\n".join(["epoch,batch,loss", *rows]) + "\n"))
    assert steps(run.train)[:4] == [49, 74, 124, 149]
    assert steps(run.train) == sorted(set(steps(run.train)))


def test_one_run_written_per_split_is_read_as_one_run(tmp_path: Path) -> None:
    # train_losses.csv and test_losses.csv, each 'epoch,avg_loss': the file names say which split;
    # train.csv and val.csv beside a console log.txt: the tables are read, the log passed over (a note)
    rows = [f"{e},{loss_of(e + 1):.4f}" for e in range(20)]
    held = [f"{e},{loss_of(e + 1) + 0.2:.4f}" for e in range(20)]
    glow = tmp_path / "glow"
    glow.mkdir()
    write(glow, "train_losses.csv", "\n".join(["epoch,avg_loss", *rows]) + "\n")
    write(glow, "test_losses.csv", "\n".join(["epoch,avg_loss", *held]) + "\n")
    run = importers.detect(glow).load(glow)
    assert steps(run.train) == list(range(20)) and losses(run) == [float(r.split(",")[1]) for r in rows]
    assert list(run.evals["step"]) == list(range(20))
    assert list(run.evals["val_loss"]) == [float(r.split(",")[1]) for r in held]
    assert any("one run written per split" in note for note in run.notes)
    dro = tmp_path / "dro"
    dro.mkdir()
    write(dro, "train.csv", "\n".join(["epoch,loss", *rows]) + "\n")
    write(dro, "val.csv", "\n".join(["epoch,loss", *held]) + "\n")
    write(dro, "log.txt", "\n".join(f"Epoch {e}: loss {loss_of(e + 1):.4f}" for e in range(20)) + "\n")
    run = importers.detect(dro).load(dro)
    assert len(run.train) == 20 and len(run.evals) == 20
    assert any("not used: log.txt" in note for note in run.notes)
    # two files of the training split (two runs?) make no family: refused as before
    write(dro, "train_2.csv", "\n".join(["epoch,loss", *rows]) + "\n")
    write(dro, "training.csv", "\n".join(["epoch,loss", *rows]) + "\n")
    with pytest.raises(importers.RunImportError, match="expected one training log"):
        generic_log.load(dro)


def test_headerless_tables_per_split_with_a_clock_and_a_delimiter_of_their_own(tmp_path: Path) -> None:
    """A logger's own rows, `2024-11-29 18:15:04.852164🫤3🫤2.82`, one file per split (train_loss.txt
    beside val_loss.txt): the delimiter is the character every line holds as often, the leading date
    and time is when the row was written, and val_loss.txt, no training log alone (it holds a
    validation loss only), is the held-out member of the split family."""
    sep = "\N{FACE WITH DIAGONAL MOUTH}"
    stamp = "2024-11-{:02d} 18:15:04.852164"
    train = "".join(f"{stamp.format(e + 1)}{sep}{e}{sep}{loss_of(e + 1)}\n" for e in range(14))
    valid = "".join(f"{stamp.format(e + 1)}{sep}{e}{sep}{loss_of(e + 1) + 0.3}\n" for e in range(14))
    write(tmp_path, "train_loss.txt", train)
    write(tmp_path, "val_loss.txt", valid)
    assert importers.detect(tmp_path) is generic_log
    run = generic_log.load(tmp_path)
    assert steps(run.train) == list(range(14)) and losses(run) == [loss_of(e + 1) for e in range(14)]
    assert list(run.evals["val_loss"]) == pytest.approx([loss_of(e + 1) + 0.3 for e in range(14)])
    assert any("every row opens with a date and time" in n for n in run.notes)
    # without its training file, a validation table alone is still no training log
    (tmp_path / "train_loss.txt").unlink()
    assert not generic_log.sniff(tmp_path)


def test_one_run_written_twice_is_read_from_its_most_precise_file(tmp_path: Path) -> None:
    # history.csv (full precision) beside the train.log that printed the same epochs to 4 decimals:
    # one run, read from the table; the console is passed over with a note
    exact = [loss_of(e + 1) + 1e-5 * math.sin(e) for e in range(15)]
    table = [
        "epoch,trn_loss,val_loss,lr",
        *(f"{e + 1},{v!r},{v + 0.1!r},0.0002" for e, v in enumerate(exact)),
    ]
    printed = [
        f"Epoch {e + 1:2d}/15 | trn_loss: {v:.4f} | val_loss: {v + 0.1:.4f}" for e, v in enumerate(exact)
    ]
    run_dir = tmp_path / "convnext"
    run_dir.mkdir()
    write(run_dir, "history.csv", "\n".join(table) + "\n")
    write(run_dir, "train.log", "nohup: ignoring input\n" + "\n".join(printed) + "\n")
    run = importers.detect(run_dir).load(run_dir)
    assert losses(run) == exact and len(run.evals) == 15
    assert any("history.csv (" in n and "train.log (4 decimals) holds the same 15" in n for n in run.notes)
    # two runs of the same length whose losses differ beyond the printed rounding: refused as before
    other = tmp_path / "two_runs"
    other.mkdir()
    write(other, "history.csv", "\n".join(table) + "\n")
    moved = [f"Epoch {e + 1:2d}/15 | trn_loss: {v + 0.001:.4f}" for e, v in enumerate(exact)]
    write(other, "train.log", "\n".join(moved) + "\n")
    assert not generic_log.sniff(other)
    with pytest.raises(importers.RunImportError, match="expected one training log"):
        generic_log.load(other)
    # and so does the folder's detection, naming the two logs (not "no training log this tool can read")
    with pytest.raises(importers.RunImportError, match=r"read as logs: history\.csv, train\.log"):
        importers.detect(other)


def test_a_per_epoch_log_beside_its_per_batch_log_is_one_run_read_by_its_epochs(tmp_path: Path) -> None:
    # a training script's losses.json (one mean an epoch) beside its batch_losses.json (43 an epoch):
    # one run at two granularities, read as its epochs; the batch file is passed over with a note
    batches = [loss_of(b // 4) * (1 + 0.05 * math.sin(b)) for b in range(43 * 10)]
    epochs = [sum(batches[e * 43 : (e + 1) * 43]) / 43 for e in range(10)]
    run_dir = tmp_path / "autoencoder"
    run_dir.mkdir()
    write(run_dir, "losses.json", json.dumps(epochs))
    write(run_dir, "batch_losses.json", json.dumps(batches))
    assert generic_log.sniff(run_dir)
    run = importers.detect(run_dir).load(run_dir)
    assert losses(run) == pytest.approx(epochs)
    said = "losses.json (10 rows) is read; batch_losses.json holds its 430 batch losses"
    assert any(said in note for note in run.notes)
    # another run's epochs beside them (not the batches' means): two runs, refused as before
    write(run_dir, "losses.json", json.dumps([v * 1.01 for v in epochs]))
    with pytest.raises(importers.RunImportError, match="expected one training log"):
        generic_log.load(run_dir)


def test_an_actor_critic_logged_without_a_total_stands_in_with_its_value_loss(tmp_path: Path) -> None:
    # A2C's progress.csv: policy_loss (near zero by construction), value_loss, entropy_loss, no total
    rows = [
        f"{i * 100},{-0.01 * math.sin(i):.5f},{50 / (i + 1):.4f},{-1.0 + i * 0.01:.4f}" for i in range(1, 41)
    ]
    run = generic_log.load(
        write(tmp_path, "progress.csv", "step,policy_loss,value_loss,entropy_loss\n" + "\n".join(rows))
    )
    assert run.loss_name == "value_loss" and losses(run) == [float(r.split(",")[2]) for r in rows]


def test_an_epoch_headers_batch_lines_are_one_row_each(tmp_path: Path) -> None:
    # a loop printing "Epoch : N" once, then two counterless lines a batch (no batch counter), then a
    # test loop in another shape after training: every batch is a row in file order, the test's
    # lines are not training rows
    lines, batch_losses = ["cuda", "INFO: image shape is torch.Size([64, 3, 100, 100])"], []
    for epoch in range(1, 6):
        lines.append(f"Epoch : {epoch}")
        for batch in range(12):
            loss = loss_of((epoch - 1) * 12 + batch)
            batch_losses.append(loss)
            lines += [f"INFO: Number of correct items classified : {batch + epoch}", f"Loss : {loss}"]
    lines.append("OK: Finished training for 5 epochs")
    for batch in range(6):
        lines += [f"('Accuracy : ', {60 + batch}.5)", f"Loss : {1.9 + batch / 100}"]
    run = generic_log.load(write(tmp_path, "training_log.txt", "\n".join(lines) + "\n"))
    assert losses(run) == batch_losses
    assert steps(run.train) == list(range(1, len(batch_losses) + 1))
    assert any("12 rows" in note or "steps_per_epoch = 12" in note for note in run.notes), run.notes


def test_batch_lines_printed_before_the_first_header_are_the_first_passes(tmp_path: Path) -> None:
    # the header printed after the pass's first batch ("Train loss" first, then "=== epoch: 1 ===")
    lines, batch_losses = [], []
    for epoch in range(1, 5):
        for batch in range(10):
            loss = loss_of((epoch - 1) * 10 + batch)
            batch_losses.append(loss)
            lines.append(f"Train loss: {loss}")
            if batch == 0:
                lines.append(f"=== epoch: {epoch}, train acc: 0.{epoch}, test acc: 0.{epoch} ===")
    run = generic_log.load(write(tmp_path, "training_log.txt", "\n".join(lines) + "\n"))
    assert losses(run) == batch_losses
    assert COUNTERLESS not in run.layout["skipped"]  # the first line is a row, no longer a skipped line


def test_a_train_and_a_val_value_printed_alike_under_a_header_are_no_batches(tmp_path: Path) -> None:
    # "Epoch N" then two "Loss" lines (train, then val, printed alike): two lines a pass are not
    # batches; the pass keeps its first value, as before
    lines = []
    for epoch in range(1, 9):
        lines += [f"Epoch {epoch}", f"Loss: {loss_of(epoch)}", f"Loss: {loss_of(epoch) + 0.5}"]
        lines.append(f"Accuracy: 0.{50 + epoch}")  # a value of another name after them: the header's
    run = generic_log.load(write(tmp_path, "train.txt", "\n".join(lines) + "\n"))
    assert losses(run) == [loss_of(e) for e in range(1, 9)]
    assert steps(run.train) == list(range(1, 9))
    assert run.layout["skipped"][COUNTERLESS]["lines"] == 8  # the second Loss of each pass


def test_a_table_aligned_by_spaces_is_read_by_its_header(tmp_path: Path) -> None:
    # rllab / Berkeley logz: a header of names, then rows of numbers padded to fixed widths
    names = ["Iteration", "Wall_Time", "Train_Return", "Critic_Loss", "Actor_Loss"]
    rows = [[i * 50, i * 0.07, -100.0 + 7 * i, loss_of(i + 1) / 100, -0.6] for i in range(30)]
    text = (
        "".join(f"{n:<25}" for n in names) + "\n" + "\n".join("".join(f"{v!s:<25}" for v in r) for r in rows)
    )
    run = generic_log.load(write(tmp_path, "log.txt", text + "\n"))
    assert steps(run.train) == [r[0] for r in rows] and losses(run) == [r[3] for r in rows]
    assert any("aligned by spaces" in note for note in run.notes)
    # words between the numbers (a console line, not a row of a table): not a table
    console = "\n".join(f"Iteration {r[0]} Critic_Loss {r[3]} Actor_Loss {r[4]}" for r in rows)
    run = generic_log.load(write(tmp_path, "console.txt", "Training started here now\n" + console + "\n"))
    assert not any("aligned by spaces" in note for note in run.notes) and losses(run) == [r[3] for r in rows]


def test_a_json_document_of_metrics_grouped_by_split_is_one_run(tmp_path: Path) -> None:
    # Ludwig's training_statistics.json: split -> output feature -> metric -> one value an epoch, with
    # 'combined' the loss over every output (the whole, before one output's own)
    epochs = range(12)

    def split(shift: float) -> dict:
        combined = [loss_of(e + 1) + shift for e in epochs]
        own = [v * 0.9 for v in combined]
        return {
            "price": {"loss": own, "r2": [-0.5] * 12},
            "combined": {"loss": combined, "accuracy": [0.0] * 12},
        }

    document = {"training": split(0.0), "validation": split(0.1), "test": split(0.12)}
    run = generic_log.load(write(tmp_path, "training_statistics.json", json.dumps(document)))
    assert losses(run) == document["training"]["combined"]["loss"]
    assert list(run.evals["val_loss"]) == document["validation"]["combined"]["loss"]
    assert steps(run.train) == list(epochs)
    # the same arrays keyed by run (one per feature set): several runs, not one log
    runs = {"mfcc": split(0.0)["combined"], "chroma": split(0.2)["combined"]}
    with pytest.raises(RunImportError):
        generic_log.load(write(tmp_path, "results.json", json.dumps(runs)))


def test_a_results_document_keeps_its_log_under_one_key_with_metrics_grouped_by_split(tmp_path: Path) -> None:
    # a training script's results file: the best epoch and the test metrics beside the history, one
    # object an epoch whose metrics are grouped by split ({"train": {"loss": ...}, "val": {...}})
    history = [
        {"epoch": e + 1, "time": 170.0, "train": {"loss": loss_of(e), "race_acc": 50.0 + e},
         "val": {"loss": loss_of(e) * 0.8, "race_acc": 60.0 + e}}
        for e in range(15)
    ]  # fmt: skip
    document = {"best_epoch": 15, "test_metrics": {"race_accuracy": 78.8}, "history": history}
    run = generic_log.load(write(tmp_path, "metrics.json", json.dumps(document)))
    assert losses(run) == [row["train"]["loss"] for row in history]
    assert list(run.evals["val_loss"]) == [row["val"]["loss"] for row in history]
    assert any("the list under 'history'" in note for note in run.notes)
    # two logs side by side (two runs, or a log beside another table): not one run's log
    both = {"history": history, "baseline": history}
    with pytest.raises(RunImportError):
        generic_log.load(write(tmp_path, "results.json", json.dumps(both)))


def test_a_changed_plan_of_epochs_is_a_new_launch(tmp_path: Path) -> None:
    # five workers print '[code][Epoch 02/10] ... Loss:x' interleaved; the job is stopped in epoch 2
    # and launched again for 50 epochs: the epoch count restarts with another total at line 8
    codes = ("000660", "005930", "035420")
    first = [
        f"[{c}][Epoch {e:02d}/10] Epsilon:1.0 Loss:{loss_of(e) + i:.6f}"
        for e in (1, 2)
        for i, c in enumerate(codes)
    ]
    again = [
        f"[{c}][Epoch {e:02d}/50] Epsilon:1.0 Loss:{loss_of(e) + i:.6f}"
        for e in range(1, 6)
        for i, c in enumerate(codes)
    ]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join([*first, "NumExpr ready", *again]) + "\n"))
    assert len(run.train) == 21
    assert list(run.events["step"]) == [7]
    assert (
        "restarted the 'Epoch' count at line 8 (1 of 50; the rows before counted to 10)"
        in run.events["event"][0]
    )
    # the same workers under one plan: no launch but the first
    steady = [
        f"[{c}][Epoch {e:02d}/50] Epsilon:1.0 Loss:{loss_of(e) + i:.6f}"
        for e in range(1, 8)
        for i, c in enumerate(codes)
    ]
    run = generic_log.load(write(tmp_path, "steady.log", "\n".join(steady) + "\n"))
    assert run.events.empty


def test_a_counter_that_stays_on_most_rows_is_the_outer_count_of_one_that_moves(tmp_path: Path) -> None:
    # 'iteration:1 step:16/64': the iteration counts passes over the data (an epoch by another name),
    # the step moves within it: step = (iteration - 1) x 64 + step, no restart at each pass
    lines = [
        f"INFO - iteration:{e} step:{s}/64, NER loss:{loss_of(e * 64 + s):.6f}"
        for e in range(1, 5)
        for s in range(4, 65, 16)
    ]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == [(e - 1) * 64 + s for e in range(1, 5) for s in range(4, 65, 16)]
    assert run.events.empty or not run.events["event"].str.contains("restart").any()


def test_an_epoch_counter_with_a_total_on_every_row_plans_the_run(tmp_path: Path) -> None:
    # 'Epoch [3/50], Loss: x' on each of an epoch's 10 rows, the log ending in epoch 6: planned
    # 50 epochs of 10 rows, so the run stopped at 60 of 500 rows
    lines = [f"Epoch [{e}/50], Loss: {loss_of(e * 10 + b)}" for e in range(1, 7) for b in range(10)]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert run.config["total_steps"] == 500 and run.config["steps_per_epoch"] == 10


def test_identical_records_of_several_ranks_are_kept_once(tmp_path: Path) -> None:
    lines = [
        f"iter {s} || Loss: {loss_of(s)} || timer: 0.31 sec." for s in range(0, 200, 10) for _ in range(4)
    ]
    run = generic_log.load(write(tmp_path, "out.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(0, 200, 10))
    assert run.layout["skipped"][generic_log.REPEATED]["lines"] == 60
    # the copies are said in an event (the log_quality check's note), at the first step
    noted = [
        (s, e) for s, e in run.events.itertuples(index=False) if e.startswith("log written several times")
    ]
    assert (
        noted
        and noted[0][0] == 0
        and "60 training record(s)" in noted[0][1]
        and "about 4 times" in noted[0][1]
    )


def test_an_isolated_repeated_record_is_kept_for_the_checks(tmp_path: Path) -> None:
    """A relaunch that appended its first epoch again (MAE's log.txt opened in append mode, the
    same seed): one record repeated among many is a defect of the log, kept for staging to flag."""
    lines = [json.dumps({"train_loss": loss_of(e), "epoch": e}) for e in range(40)]
    run = generic_log.load(write(tmp_path, "log.txt", "\n".join([lines[0], *lines]) + "\n"))
    assert steps(run.train) == [0, *range(40)]
    assert generic_log.REPEATED not in run.layout["skipped"]
    assert any("too few to be a second process" in note for note in run.notes)


def test_the_last_rows_eta_gives_the_planned_length(tmp_path: Path) -> None:
    """detectron2's metrics.json: every 20 iterations, 'time' a step and 'eta_seconds' left; a log
    whose last row still expects 1,200 s at 0.4 s a step stopped 3,000 steps short of its plan."""

    def rows(last: int, max_iter: int) -> list[str]:
        return [
            json.dumps(
                {
                    "iteration": i,
                    "total_loss": loss_of(i),
                    "time": 0.4,
                    "eta_seconds": 0.4 * (max_iter - 1 - i),
                }
            )
            for i in range(19, last + 1, 20)
        ]

    stopped = generic_log.load(write(tmp_path, "metrics.json", "\n".join(rows(4999, 8000)) + "\n"))
    assert stopped.config["total_steps"] == 8000 - 1  # detectron2 counts iterations from 0
    assert any("ETA" in note for note in stopped.notes)
    finished = generic_log.load(write(tmp_path, "done.json", "\n".join(rows(7999, 8000)) + "\n"))
    assert finished.config["total_steps"] is None


def test_numbered_rank_prefixes_read_rank_zero(tmp_path: Path) -> None:
    lines = [f"{r}: step {s} loss {loss_of(s) + r}" for s in range(1, 21) for r in (1, 0)]
    run = generic_log.load(write(tmp_path, "slurm-1.out", "\n".join(lines) + "\n"))
    assert losses(run) == [loss_of(s) for s in range(1, 21)]


def hf_console() -> str:
    lines = ["***** Running training *****", "  Num examples = 1000"]
    for i in range(1, 21):
        lines.append(
            f"  {5 * i}%|#   | {i}/20 [00:0{i % 10}<00:10, 2.1it/s]{{'loss': {loss_of(i)}, "
            f"'grad_norm': 0.41, 'learning_rate': 6e-05, 'epoch': {i / 10}}}"
        )
        if i % 10 == 0:
            lines.append(f"{{'eval_loss': {loss_of(i) + 0.5}, 'eval_runtime': 3.1, 'epoch': {i / 10}}}")
    lines.append("{'train_runtime': 120.5, 'train_samples_per_second': 8.1, 'train_loss': 3.2, 'epoch': 2.0}")
    return "\n".join(lines) + "\n"


def test_dict_lines_without_a_step_are_numbered_and_evaluations_placed(tmp_path: Path) -> None:
    run = generic_log.load(write(tmp_path, "nohup.out", hf_console()))
    assert losses(run) == [loss_of(i) for i in range(1, 21)]  # the train_runtime summary is no row
    assert steps(run.train) == list(range(1, 21))
    assert steps(run.evals) == [10, 20]  # the step of the last training row before each evaluation
    assert [float(v) for v in run.evals["val_loss"]] == [loss_of(10) + 0.5, loss_of(20) + 0.5]
    assert run.layout["train"]["counter"]["kind"] == "record"
    assert run.layout["confidence"] == "low"
    assert any("no step counter" in r for r in run.layout["low_confidence"])


def test_per_epoch_csv_under_any_name_is_a_per_epoch_run(tmp_path: Path) -> None:
    rows = [
        "epoch,accuracy,loss,val_accuracy,val_loss",
        *(f"{e},0.{e},{loss_of(e)},0.{e},{loss_of(e) + 1}" for e in range(1, 9)),
    ]
    rows.insert(5, rows[0])  # a repeated header (appended by a second process)
    run = generic_log.load(write(tmp_path, "history.log", "\n".join(rows) + "\n"))
    assert steps(run.train) == list(range(1, 9)) and steps(run.evals) == list(range(1, 9))
    assert run.config["rows_are"] == "epoch"
    assert run.layout["train"]["counter"]["kind"] == "epoch"
    assert run.layout["skipped"]["repeated header row"]["lines"] == 1
    assert config_document(run)["rows_are"] == "epoch"


def test_json_arrays_json_lines_and_tsv(tmp_path: Path) -> None:
    history = {
        "loss": [loss_of(e) for e in range(5)],
        "val_loss": [1.5, 1.2, 1.1, 1.15, 1.3],
        "lr": [1e-3] * 5,
    }
    run = generic_log.load(write(tmp_path, "history.json", json.dumps(history)))
    assert losses(run) == history["loss"] and steps(run.train) == list(range(5))
    lines = [
        json.dumps({"step": s, "train_mean_nll": loss_of(s), "num_loss_tokens": 500 + s}) for s in range(10)
    ]
    run = generic_log.load(write(tmp_path, "metrics.jsonl", "\n".join(lines)))
    assert losses(run) == [loss_of(s) for s in range(10)]  # not the whole-number token count
    tsv = "step\tloss\n" + "".join(f"{s}\t{loss_of(s)}\n" for s in range(0, 100, 10))
    assert losses(generic_log.load(write(tmp_path, "train.log", tsv))) == [
        loss_of(s) for s in range(0, 100, 10)
    ]


def test_inner_counts_become_steps(tmp_path: Path) -> None:
    lines = [
        f"Epoch: [{e}][{b:3d}/44]\tLoss {loss_of(e * 44 + b)} ({loss_of(e):.4f})"
        for e in range(3)
        for b in (0, 20, 40)
    ]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == [e * 44 + b for e in range(3) for b in (0, 20, 40)]
    assert losses(run) == [loss_of(e * 44 + b) for e in range(3) for b in (0, 20, 40)]  # not the mean
    lines = [
        f"Epoch {e} | Step {s}/500 | Loss: {loss_of(e * 500 + s)}"
        for e in range(2)
        for s in range(0, 500, 100)
    ]
    run = generic_log.load(write(tmp_path, "train2.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == [e * 500 + s for e in range(2) for s in range(0, 500, 100)]
    assert run.events.empty  # an inner count's reset is no restart


def test_an_inner_count_from_0_to_its_total_takes_one_position_more(tmp_path: Path) -> None:
    """`Train: [ 1/5] Step 000/335` .. `Step 335/335`: a counter from 0 that reaches its /M takes
    M + 1 positions an epoch. Counted as M, each epoch's 0 would land on the last step of the epoch
    before, and every boundary would read as a step logged twice (a resume): no event, no repeat."""
    inner = (0, 100, 200, 300, 335)
    lines = [
        f"2021-12-19 01:3{e}:{i:02d},540 Train: [{e:2d}/5] Step {b:03d}/335 Loss {loss_of(e * 336 + b)}"
        for e in range(1, 4)
        for i, b in enumerate(inner)
    ]
    run = generic_log.load(write(tmp_path, "log.txt", "\n".join(lines) + "\n"))
    assert steps(run.train) == [(e - 1) * 336 + b for e in range(1, 4) for b in inner]
    assert run.events.empty
    lines = [f"Epoch: [{e}][{b:3d}/44]\tLoss {loss_of(e * 45 + b)}" for e in range(3) for b in (0, 20, 44)]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == [e * 45 + b for e in range(3) for b in (0, 20, 44)]


def test_bare_inner_count_in_brackets_becomes_steps(tmp_path: Path) -> None:
    """SwAV/DINO/MoCo-style ``Epoch: [e][i]`` without a total: the period is the largest inner + 1,
    and a launch appended after another (the epoch back to 0) is a second attempt."""
    body = [
        f"Epoch: [{e}][{b}]  Time 0.31 (0.30)  Loss {loss_of(e * 150 + b)} (4.0)"
        for e in range(3)
        for b in (0, 50, 100)
    ]
    again = [
        f"Epoch: [{e}][{b}]  Time 0.31 (0.30)  Loss {loss_of(b)} (4.0)"
        for e in range(2)
        for b in (0, 50, 100)
    ]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(body + again) + "\n"))
    first = [e * 101 + b for e in range(3) for b in (0, 50, 100)]
    assert steps(run.train) == first + [e * 101 + b for e in range(2) for b in (0, 50, 100)]
    assert any("restarts" in r for r in run.layout["low_confidence"])


def test_step_in_brackets_opening_a_metrics_line(tmp_path: Path) -> None:
    """clu's metric writer ('[120] train_loss=0.31') beside a progress line that names its own
    counter: the bracketed number is the step of its own line, not a continuation of the line above."""
    lines, glog = [], "I0103 20:09:51.2 1399"
    for s in range(10, 110, 10):
        lines.append(f"{glog} logging_writer.py:35] [{s}] img_sec_core_train=178.3, train_loss={loss_of(s)}")
        lines.append(f"{glog} train.py:201] Step: {s}/1000 {s / 10:.1f}%, img/sec/core: 178.4, ETA: 4.6h")
    run = generic_log.load(write(tmp_path, "output.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(10, 110, 10))
    assert losses(run) == [loss_of(s) for s in range(10, 110, 10)]


def test_a_count_and_a_parenthesis_opening_a_metrics_line_is_its_counter(tmp_path: Path) -> None:
    """The first-order-motion family's logger ('00000003) perceptual - 53.7; warp_loss - 0.46', once
    an epoch, appending to one file): the zero-padded count is the counter, so a launch that wrote
    its first count again is seen as going back, and a list item ('1) see below') is no counter."""
    lines = [
        f"{e:08d}) perceptual - {54 - e / 10:.5f}; equivariance_value - 0.2{e:02d}; warp_loss - {loss_of(e)}"
        for e in [0, *range(12)]
    ]
    run = generic_log.load(write(tmp_path, "log.txt", "\n".join(lines) + "\n"))
    assert steps(run.train) == [0, *range(12)]
    record = generic_lines.parse_pairs(1, "1) see the notes below")
    assert record is None or not record.counters


def test_traceback_after_the_last_training_line_is_the_run_ending(tmp_path: Path) -> None:
    """A log that ends in a traceback (an interrupt, an exception) stopped there: an event at the
    last logged step names it; a traceback the run survived (training went on) is no ending."""
    lines = [f"step {s} loss {loss_of(s)}" for s in range(10, 110, 10)]
    trace = [
        "Traceback (most recent call last):",
        '  File "train.py", line 9, in <module>',
        "KeyboardInterrupt",
    ]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines + trace) + "\n"))
    assert [(int(s), e) for s, e in run.events.itertuples(index=False)] == [
        (
            100,
            "Traceback (most recent call last) after the last training line ended the log: KeyboardInterrupt",
        )
    ]
    survived = lines[:5] + trace + lines[5:]
    assert generic_log.load(write(tmp_path, "again.log", "\n".join(survived) + "\n")).events.empty


def test_a_stop_the_loop_reports_after_the_last_training_line_is_the_run_ending(tmp_path: Path) -> None:
    """A loop that catches the KeyboardInterrupt and reports it ('Training interrupted by user -
    Step 100') leaves no traceback: the line itself, after the last training line, is the ending (a
    crash event, as event_patterns classes it); the same line with training going on after it is none."""
    lines = [f"step {s} loss {loss_of(s)}" for s in range(10, 110, 10)]
    stop = "2025-08-10 02:29:39,926 - trainer - INFO - Training interrupted by user - Step 100 (Epoch 0)"
    run = generic_log.load(write(tmp_path, "train.log", "\n".join([*lines, stop]) + "\n"))
    assert [(int(s), e.split(": ", 1)[0]) for s, e in run.events.itertuples(index=False)] == [
        (100, "training interrupted by the user after the last training line (a manual stop)")
    ]
    survived = [*lines[:5], stop, *lines[5:]]
    assert generic_log.load(write(tmp_path, "again.log", "\n".join(survived) + "\n")).events.empty


def test_a_running_average_that_is_not_finite_marks_its_row_non_finite(tmp_path: Path) -> None:
    """'Loss 5.00142 (inf)' (an AverageMeter: the last batch's loss, then the mean since the epoch
    began): an average that is not finite where the value is says a non-finite loss fell in the
    epoch, and the row holds that average; finite averages leave the printed values as they are."""
    lines = []
    for epoch in range(12):
        average = "inf" if epoch in (5, 6) else f"{loss_of(epoch * 10) + 0.05:.5f}"
        loss = f"{loss_of(epoch * 10):.5f}"
        lines.append(f"Epoch: [{epoch}][100]\tBatch Time 1.2 (1.3)\tLoss {loss} ({average})")
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    read = losses(run)
    assert [math.isinf(v) for v in read] == [epoch in (5, 6) for epoch in range(12)]
    assert read[4] == pytest.approx(loss_of(40), abs=1e-5)
    assert any("running average printed after 'Loss' at 2 row(s)" in note for note in run.notes)


def test_a_split_word_and_a_whole_number_open_the_line_as_its_counter(tmp_path: Path) -> None:
    """'Train 3, loss: ...' / 'Test 3, loss: ...' (DGCNN and its ports write one line per epoch and
    split): the split word names the line's split, the number after it is the counter."""
    lines = []
    for epoch in range(25):
        lines.append(f"Train {epoch}, loss: {loss_of(epoch):.6f}, train acc: 0.5, train avg acc: 0.4")
        lines.append(f"Test {epoch}, loss: {loss_of(epoch) + 0.2:.6f}, test acc: 0.5, test avg acc: 0.4")
    run = generic_log.load(write(tmp_path, "run.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(25)) and steps(run.evals) == list(range(25))
    assert losses(run)[3] == pytest.approx(loss_of(3))
    assert run.evals["val_loss"].iloc[3] == pytest.approx(loss_of(3) + 0.2)
    # after the line's own counter, a split word and a number are no second counter
    counted = [f"Epoch {2 * e}, Train 1, loss: {loss_of(e):.6f}" for e in range(25)]
    again = generic_log.load(write(tmp_path, "counted.log", "\n".join(counted) + "\n"))
    assert steps(again.train) == list(range(0, 50, 2))


def test_a_split_word_in_the_segment_that_names_the_number(tmp_path: Path) -> None:
    """'Epoch 1 - eval: avg_loss - 5.14': the segment that names the number also says its split; a
    training and an evaluation line per epoch are two layouts, not two training rows an epoch."""
    lines = []
    for epoch in range(1, 21):
        lines.append(f"Epoch {epoch} - train: avg_loss - {loss_of(epoch):.4f}")
        lines.append(f"Epoch {epoch} - eval: avg_loss - {loss_of(epoch) + 0.5:.4f}")
    run = generic_log.load(write(tmp_path, "output.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(1, 21)) and steps(run.evals) == list(range(1, 21))
    assert losses(run)[2] == pytest.approx(loss_of(3), abs=1e-4)
    assert run.evals["val_loss"].iloc[2] == pytest.approx(loss_of(3) + 0.5, abs=1e-4)


def test_a_time_column_that_only_grows_is_elapsed_time(tmp_path: Path) -> None:
    """Ultralytics' results.csv 'time' is seconds since the start: read as a duration, every epoch
    would look slower than the last. A column that rises on nine rows in ten and ends 3x its first
    value is a clock: its differences are the step times; a duration that scatters is kept."""
    rows = [f"{e},{500 * e + (7 if e % 3 else 0)},{2.0 - e / 100}" for e in range(1, 21)]
    run = generic_log.load(
        write(tmp_path, "results.csv", "epoch,time,train/box_loss\n" + "\n".join(rows) + "\n")
    )
    times = list(run.train["step_time_sec"])
    assert times[0] is None or math.isnan(times[0])
    assert times[1:] == pytest.approx(
        [500 + (7 if e % 3 else 0) - (7 if (e - 1) % 3 else 0) for e in range(2, 21)]
    )
    scattered = [f"{e},{480 + (e * 37) % 50},{2.0 - e / 100}" for e in range(1, 21)]
    run = generic_log.load(
        write(tmp_path, "r2.csv", "epoch,time,train/box_loss\n" + "\n".join(scattered) + "\n")
    )
    assert list(run.train["step_time_sec"]) == [480 + (e * 37) % 50 for e in range(1, 21)]


@pytest.mark.parametrize(
    ("args_file", "args", "first_epoch", "planned"),
    [
        (
            "args.yaml",
            "model: yolov8n.yaml\nepochs: 125\npatience: 5\nlr0: 0.01\n",
            1,
            125,
        ),  # YOLOv8+: epochs 1..N
        (
            "opt.yaml",
            "weights: yolov5s.pt\nepochs: 30\nlr0: 0.01\n",
            0,
            29,
        ),  # a 0-based counter: the last is N-1
        (
            "opt.yaml",
            "weights: yolov5s.pt\ncfg: models/yolov5s.yaml\nhyp: data/hyps/hyp.scratch-low.yaml\n"
            "epochs: 300\n",
            0,
            299,
        ),  # YOLOv5/v7's opt.yaml as train.py saves it: weights and a hyp file, no lr0 of its own
        # no model, weights, hyp or lr0: not an Ultralytics argument file, but a settings file saved
        # beside the log all the same (script_settings.settings_beside), whose plan it is
        ("args.yaml", "epochs: 125\n", 1, 125),
        ("args.yaml", "lr: 0.01\n", 1, None),  # a settings file that plans nothing
        (None, "", 1, None),  # nothing beside the log: no plan
    ],
)
def test_an_ultralytics_argument_file_gives_the_planned_epochs(
    tmp_path: Path, args_file: str | None, args: str, first_epoch: int, planned: int | None
) -> None:
    """results.csv states no plan; Ultralytics saves its arguments beside it: a run stopped after 8
    epochs is 8 of its planned length (run_ended_early can tell), not a complete run."""
    rows = [f"{e},{3.0 - e / 10},{2.9 - e / 10}" for e in range(first_epoch, first_epoch + 8)]
    log = write(tmp_path, "results.csv", "epoch,train/box_loss,val/box_loss\n" + "\n".join(rows) + "\n")
    if args_file:
        (tmp_path / args_file).write_text(args, encoding="utf-8")
    run = generic_log.load(log)
    assert run.config.get("total_steps") == planned
    planned_from = [note for note in run.notes if note.startswith("planned length from ")]
    assert (planned is not None) == any(f"{args_file} " in note for note in planned_from)


@pytest.mark.parametrize(
    ("dump", "planned"),
    [
        ("Model: resnet50\nN epochs: 300\nBatch size: 64\n", 300),  # group_DRO's log.txt header
        ("Namespace(lr=0.01, num_epochs=40)\n", 40),
        ("Epochs: 3/100 loss 0.5\n", None),  # a progress count, not a settings dump
        (None, None),
    ],
)
def test_a_console_beside_the_table_gives_its_settings_dump_as_the_plan(
    tmp_path: Path, dump: str | None, planned: int | None
) -> None:
    """A run that writes a table (train.csv) and prints its settings to a console beside it (log.txt):
    the console's dump is the launched run's plan, so a table of 8 epochs is 8 of it."""
    rows = [f"{e},{3.0 - e / 10},{2.9 - e / 10}" for e in range(1, 9)]
    log = write(tmp_path, "train.csv", "epoch,loss,val_loss\n" + "\n".join(rows) + "\n")
    if dump is not None:
        (tmp_path / "log.txt").write_text(dump + "Epoch 1 loss 2.9\n", encoding="utf-8")
    run = generic_log.load(log)
    assert run.config.get("total_steps") == planned
    assert any("a settings dump beside the log" in note for note in run.notes) == (planned is not None)


YOLO_LR_HEADER = "epoch,train/box_loss,val/box_loss,x/lr0,x/lr1,x/lr2\n"


def yolo_lr_rows(epochs: int, bias_group: int) -> str:
    """YOLOv5 results.csv rows: two groups warm up from 0 to lr0 0.01 over 3 epochs and decay, the
    bias group (`bias_group`) warms down from warmup_bias_lr 0.1 to the same curve."""
    rows = []
    for e in range(epochs):
        weights = 0.01 * min(1.0, (e + 1) / 3) * (1 - e / epochs)
        bias = weights if e >= 3 else 0.1 - (0.1 - weights) * (e + 1) / 3
        groups = [weights, weights, weights]
        groups[bias_group] = bias
        rows.append(f"{e},{3.0 - e / 10},{2.9 - e / 10}," + ",".join(f"{g:.6g}" for g in groups))
    return YOLO_LR_HEADER + "\n".join(rows) + "\n"


@pytest.mark.parametrize("bias_group", [0, 2])
def test_the_lr_is_the_schedule_most_parameter_groups_share(tmp_path: Path, bias_group: int) -> None:
    """YOLOv5 logs three parameter groups' LRs; the biases warm down from 0.1 while the weights warm
    up from 0, and the bias group is x/lr0 in some versions, x/lr2 in others: the run's LR is the
    curve the other two share, never the bias group's 0.1 (above the configured lr0 0.01)."""
    run = generic_log.load(write(tmp_path, "results.csv", yolo_lr_rows(10, bias_group)))
    assert run.train["learning_rate"].max() <= 0.01
    shared = [n for n in run.notes if "the schedule most of the parameter groups share" in n]
    assert bool(shared) == (bias_group == 0)  # x/lr0 is chosen first anyway when it is shared


@pytest.mark.parametrize(
    ("files", "peak", "optimizer"),
    [
        (
            {
                "opt.yaml": "weights: yolov5s.pt\nepochs: 10\nadam: false\n",
                "hyp.yaml": "lr0: 0.01\nlrf: 0.1\n",
            },
            0.01,
            "SGD",
        ),
        (
            {"opt.yaml": "weights: yolov5s.pt\nepochs: 10\noptimizer: AdamW\nhyp: {lr0: 0.002}\n"},
            0.002,
            "AdamW",
        ),
        ({"args.yaml": "model: yolov8n.pt\nepochs: 10\noptimizer: SGD\nlr0: 0.02\n"}, 0.02, "SGD"),
        # YOLOv8's default: Ultralytics ignores lr0 and picks the optimizer and its LR itself
        ({"args.yaml": "model: yolov8n.pt\nepochs: 10\noptimizer: auto\nlr0: 0.01\n"}, None, None),
        ({}, None, None),
    ],
)
def test_an_ultralytics_run_states_its_peak_lr(
    tmp_path: Path, files: dict[str, str], peak: float | None, optimizer: str | None
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    run = generic_log.load(write(tmp_path, "results.csv", yolo_lr_rows(10, 2)))
    assert run.schedule.get("peak_lr") == peak
    assert (run.config.get("optimizer") or {}).get("name") == optimizer


@pytest.mark.parametrize(
    ("data", "dataset", "written", "same"),
    [
        # coco128.yaml: val is the training folder, by design of the demo set
        (
            "data\\coco128.yaml",
            "path: ../datasets/coco128\ntrain: images/train2017\nval: images/train2017\n",
            "coco128.yaml",
            True,
        ),
        # the same folder written two ways (a Windows root, a trailing slash)
        ("config.yaml", "path: C:\\data\ntrain: images\nval: ./images/\n", "config.yaml", True),
        # a list of folders for each split, in another order
        ("sets/d.yaml", "train: [a/img, b/img]\nval: [b/img, a/img]\n", "sets/d.yaml", True),
        ("data.yaml", "path: /mnt/data\ntrain: images/train\nval: images/val\n", "data.yaml", False),
    ],
)
def test_an_ultralytics_run_states_its_training_and_validation_data(
    tmp_path: Path, data: str, dataset: str, written: str, same: bool
) -> None:
    # args.yaml's `data` names the dataset file (as the training command was given it: found under
    # the run folder, above it, or beside the log by its name); its `val` may be its `train`
    (tmp_path / "args.yaml").write_text(f"model: yolov8n.pt\nepochs: 10\ndata: {data}\n", encoding="utf-8")
    (tmp_path / written).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / written).write_text(dataset, encoding="utf-8")
    run = generic_log.load(write(tmp_path, "results.csv", yolo_lr_rows(10, 2)))
    assert (run.config["train_data"] == run.config["eval_data"]) is same
    # no dataset file, or one without both splits: nothing is said
    (tmp_path / written).write_text("names: [a, b]\n", encoding="utf-8")
    run = generic_log.load(write(tmp_path, "results.csv", yolo_lr_rows(10, 2)))
    assert "train_data" not in run.config and "eval_data" not in run.config


def test_a_console_with_no_counter_on_any_line_numbers_its_loss_lines(tmp_path: Path) -> None:
    # print(f"Training loss: {loss:.4f}, validation loss: {val:.4f}") once an epoch, no epoch printed:
    # the lines naming the same numbers, a training loss among them, are the rows in file order
    rows = [f"Training loss: {loss_of(e):.4f}, validation loss: {1.1 * loss_of(e):.4f}" for e in range(1, 21)]
    run = generic_log.load(write(tmp_path, "losses.txt", "\n".join(["Model: TFT", "------", *rows]) + "\n"))
    assert steps(run.train) == list(range(1, 21))
    assert losses(run) == [round(loss_of(e), 4) for e in range(1, 21)]
    assert [float(v) for v in run.evals["val_loss"]] == [round(1.1 * loss_of(e), 4) for e in range(1, 21)]
    assert COUNTERLESS not in run.layout["skipped"]
    # fewer such lines are a summary, not a series
    with pytest.raises(RunImportError):
        generic_log.load(write(tmp_path, "summary.txt", "\n".join(rows[: COUNTERLESS_MIN_ROWS - 1]) + "\n"))
    # beside lines with a counter, counterless lines stay what they were (settings, summaries)
    counted = [f"epoch {e} loss {loss_of(e):.4f}" for e in range(1, 21)]
    run = generic_log.load(write(tmp_path, "mixed.txt", "\n".join([*counted, *rows]) + "\n"))
    assert steps(run.train) == list(range(1, 21)) and run.layout["skipped"][COUNTERLESS]["lines"] == 20


def test_a_word_repeated_before_each_value_names_it(tmp_path: Path) -> None:
    """'Loss, 10.43' on every row (an epoch loop printing to a file): the word names the number, the
    rows are numbered in file order; a first row whose word does not repeat is a header, and two
    different words on the rows are no such column: the lines are then a console with no counter,
    whose lines naming the loss are its rows (counterless_rows)."""
    lines = "".join(f"Loss, {loss_of(e):.6f}\n" for e in range(1, 31))
    run = generic_log.load(write(tmp_path, "loss.csv", lines))
    assert steps(run.train) == list(range(1, 31)) and losses(run)[0] == pytest.approx(loss_of(1), abs=1e-6)
    assert run.layout["format"] == "csv"
    mixed = "".join(f"{'Loss' if e % 2 else 'Acc'}, {loss_of(e):.6f}\n" for e in range(1, 31))
    run = generic_log.load(write(tmp_path, "mixed.csv", mixed))
    assert run.layout["format"] == "console"
    assert losses(run) == pytest.approx([loss_of(e) for e in range(1, 31, 2)], abs=1e-6)


def test_restarted_counter_keeps_both_attempts(tmp_path: Path) -> None:
    first = [f"step {s} loss {loss_of(s)}" for s in range(0, 110, 10)]
    second = [
        "Loaded checkpoint at step 60",
        *(f"step {s} loss {loss_of(s) - 0.01}" for s in range(60, 200, 10)),
    ]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(first + second) + "\n"))
    assert steps(run.train) == list(range(0, 110, 10)) + list(range(60, 200, 10))
    assert [(int(s), e[:24]) for s, e in run.events.itertuples(index=False)] == [
        (60, "resuming from step 60: t")
    ]
    assert any("restarts" in r for r in run.layout["low_confidence"])


def test_cut_last_line_and_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    text = "".join(f"Epoch {e}/9, Train Loss: {loss_of(e)}, Test Acc: 80.{e}%\n" for e in range(1, 9))
    raw = "训练参数:\n".encode("gbk") + text.encode() + b"Epoch 9/9, Train Loss: 0.6"  # killed mid-write
    run = generic_log.load(write(tmp_path, "training.log", raw))
    assert losses(run) == [loss_of(e) for e in range(1, 9)]
    assert run.layout["skipped"]["last line cut off mid-write"]["lines"] == 1
    nuls = b"\x00" * 500 + text.encode()  # a log truncated and written to again
    assert losses(generic_log.load(write(tmp_path, "nul.log", nuls))) == [loss_of(e) for e in range(1, 9)]


def test_loss_in_bits_or_as_perplexity_is_read_in_nats(tmp_path: Path) -> None:
    lines = [f"Step {s}/100; acc: 50.0; xent: 2.5; lr: 1.0" for s in (10, 20)]
    lines.insert(2, "Validation perplexity: 7.389")
    run = generic_log.load(write(tmp_path, "onmt.log", "\n".join(lines) + "\n"))
    assert [float(v) for v in run.evals["val_loss"]] == [pytest.approx(math.log(7.389))]
    assert steps(run.evals) == [20]


# ============================================================================ correcting it


def ambiguous_log() -> str:
    return "".join(f"it {i} obj {loss_of(i)} aux {i / 100}\n" for i in range(1, 30))


def test_map_names_the_counter_and_the_loss(tmp_path: Path) -> None:
    log = write(tmp_path, "run.log", ambiguous_log())
    with pytest.raises(
        RunImportError, match=r"none of them reads as a training loss.*--map step=<counter>,loss="
    ):
        generic_log.load(log)
    run = generic_log.load(log, {"loss": "obj"})
    assert losses(run) == [loss_of(i) for i in range(1, 30)]
    assert run.layout["fields"]["loss"] == "obj"
    write(tmp_path, "run.log.map.yaml", "train_loss: obj\n")  # the same, in a file beside the log
    assert losses(generic_log.load(log)) == [loss_of(i) for i in range(1, 30)]


def test_diagnose_map_flag_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write(tmp_path, "run.log", ambiguous_log())
    assert diagnose.main([str(log), "--out", str(tmp_path / "out"), "--map", "lossy=obj"]) == 2
    assert "unknown field 'lossy'" in capsys.readouterr().err
    assert (
        diagnose.main([str(log), "--out", str(tmp_path / "o2"), "--map", "loss=obj", "--format", "text_log"])
        == 2
    )
    assert "cannot be used with --format text_log" in capsys.readouterr().err
    assert diagnose.main([str(log), "--out", str(tmp_path / "o3")]) == 2
    assert "--map step=<counter>,loss=" in capsys.readouterr().err


# ============================================================================ what must be refused


@pytest.mark.parametrize(
    ("name", "text", "found"),
    [
        ("README.md", "# poemGen\n\nRun `python train.py` to train.\n", "none with a counter"),
        (
            "config.yaml",
            "training:\n  max_steps: 1000\n  learning_rate: 3.0e-4\n  warmup_steps: 100\n",
            "none with a counter",
        ),
        ("requirements.txt", "torch>=2.0.0\nnumpy==1.26.4\ntransformers>=4.30\n", "none with a counter"),
        ("results.csv", "model,lr,best_accuracy\nbase,0.001,72.5\nlarge,0.01,77.8\n", "none of them"),
        (
            "README2.md",
            "# cifar\n\nExample output:\n```\n"
            + "".join(
                f"Global Step: {s}, accuracy: 99.0%, loss = 0.0{s % 9}\n" for s in range(9910, 10010, 10)
            )
            + "```\n",
            "Markdown document",
        ),
    ],
)
def test_non_logs_are_refused_with_what_was_found(tmp_path: Path, name: str, text: str, found: str) -> None:
    path = write(tmp_path, name, text)
    assert not generic_log.sniff(path)
    with pytest.raises(RunImportError, match=found) as refused:
        importers.detect(path)
    assert "--map" in str(refused.value)


# ============================================================== hostile input never ends in a traceback


BASES = [pipe_console(8), block_console(ranks=True), hf_console(), ambiguous_log()]


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    base=st.sampled_from(BASES),
    cuts=st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 200), st.binary(max_size=12)), max_size=6),
)
def test_mutated_logs_are_read_or_refused_never_a_traceback(tmp_path: Path, base: str, cuts: list) -> None:
    raw = bytearray(base.encode())
    for position, length, inserted in cuts:  # cut a piece out and put hostile bytes in its place
        at = position % (len(raw) + 1)
        raw[at : at + length] = inserted
    path = write(tmp_path, "fuzz.log", bytes(raw))
    try:
        run = generic_log.load(path)
    except RunImportError as error:
        assert str(path) in str(error)
        return
    assert len(run.train) >= 2 and run.layout["train"]["rows"] == len(run.train)
    write_run(run, tmp_path / "out")


# ============================================================================ the report and the contract


def test_layout_reaches_the_config_and_the_report(tmp_path: Path) -> None:
    run = generic_log.load(write(tmp_path, "nohup.out", hf_console()))
    written = write_run(run, tmp_path / "run")
    layout = json.loads(written["config"].read_text())["provenance"]["layout"]
    assert layout["train"]["rows"] == 20 and layout["fields"]["val_loss"] == "eval_loss"
    lines = layout_lines(SimpleNamespace(summary={"inferred_layout": json.dumps(layout)}))
    assert lines[0].startswith("Low confidence: this diagnosis rests on a layout inferred")
    assert any(line.startswith("Training rows: 20, read from the console file") for line in lines)
    assert layout_lines(SimpleNamespace(summary={"inferred_layout": None})) == []


@fixture_run(lambda: RunBuilder().plant_config(rows_are="epoch"))
def test_checks_that_need_steps_say_a_per_epoch_log_stops_them(diagnosis: Diagnosis) -> None:
    assert diagnosis.success, diagnosis.errors
    coverage = diagnosis.table("check_coverage").set_index("category")
    for category in ("step_sequence", "lr_schedule_mismatch"):
        assert not coverage.loc[category, "could_run"]
        assert "rows are epochs" in coverage.loc[category, "reason"]
    # slow epochs are judged (a stall there is low: docs/judgement.md)
    for category in ("overfitting", "slow_steps"):
        assert coverage.loc[category, "could_run"]


# ============================================================== the specific importers keep their files


def case_targets() -> list[Path]:
    keys = json.loads((REAL_LOGS / "expected.json").read_text())
    targets = []
    for case, key in sorted(keys.items()):
        files = key.get("files", [])
        targets.append(REAL_LOGS / case / files[0] if len(files) == 1 else REAL_LOGS / case)
    return targets


@needs_real_logs
def test_generic_reader_takes_no_real_log_nor_the_sample() -> None:
    for target in [*case_targets(), SAMPLE_RUN]:
        try:
            taken = importers.detect(target).FORMAT
        except RunImportError:
            continue  # a folder of several runs: multi_run reads them one by one
        assert taken != generic_log.FORMAT, target


def test_line_timestamps_give_step_times_when_none_is_logged(tmp_path: Path) -> None:
    # Python logging stamps every line; the log itself states no time: the seconds between training
    # lines over the steps between them are the step times, and a restarted counter starts over
    stamps = [0, 60, 120, 300, 900]
    lines = [
        f"2025-04-24 21:{s // 60:02d}:{s % 60:02d},500 - INFO - Epoch [{i + 1}/50], Train Loss: {2 - i / 10}"
        for i, s in enumerate(stamps)
    ]
    lines.append("2025-04-24 22:00:00,500 - INFO - Epoch [1/50], Train Loss: 1.95")
    lines.append("2025-04-24 22:02:00,500 - INFO - Epoch [2/50], Train Loss: 1.85")
    run = generic_log.load(write(tmp_path, "training.log", "\n".join(lines) + "\n"))
    times = [None if math.isnan(t) else t for t in run.train["step_time_sec"].astype(float)]
    assert times == [None, 60.0, 60.0, 180.0, 600.0, None, 120.0]
    assert any("step_time_sec from the training lines' timestamps" in n for n in run.notes)
    assert (
        config_document(run)[INTERVAL_MEAN_KEY] is True
    )  # the seconds between lines over the steps between them


def test_logged_step_time_wins_over_line_timestamps(tmp_path: Path) -> None:
    text = pipe_console()  # every line stamped a second apart, and 'dt 405ms' logged
    run = generic_log.load(write(tmp_path, "train.log", text))
    assert set(run.train["step_time_sec"].round(3)) == {0.405}
    assert INTERVAL_MEAN_KEY not in config_document(run)  # a logged step time is the step's own


def test_epoch_counter_repeated_on_batch_lines_gives_steps_per_epoch(tmp_path: Path) -> None:
    # 'Epoch E - Batch loss: x', one line a batch: rows are numbered in file order and the rows of
    # each epoch say how long an epoch is (the last, cut short, does not count)
    lines = [f"Epoch {e} - Batch loss: {3.0 - e / 10 - b / 100}" for e in (1, 2, 3) for b in range(12)]
    lines += [f"Epoch 4 - Batch loss: {2.5 - b / 100}" for b in range(5)]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(1, 42))
    assert run.config["steps_per_epoch"] == 12
    # HF's fractional 'epoch' (global step / steps an epoch) on rows logged every 25 of 1163 steps:
    # its whole part repeats on the rows of each epoch (46 or 47 of them)
    dicts = [f"{{'loss': {2.0 - i / 1000}, 'epoch': {round(25 * i / 1163, 4)}}}" for i in range(1, 200)]
    run = generic_log.load(write(tmp_path, "output.log", "\n".join(dicts) + "\n"))
    assert run.config["steps_per_epoch"] in (46, 47)
    # a counter that goes back (a restart) tells no epoch length
    again = lines + [f"Epoch 1 - Batch loss: {3.0 - b / 100}" for b in range(12)]
    assert (
        "steps_per_epoch"
        not in generic_log.load(write(tmp_path, "again.log", "\n".join(again) + "\n")).config
    )


def keras_progress(epochs: int, batches: int, callbacks: bool) -> str:
    """Keras 3 fit() captured to a file: each progress state on its own line (running values), the
    last one of an epoch printed again with its validation values, callbacks' messages between."""
    lines = []
    for epoch in range(1, epochs + 1):
        lines.append(f"Epoch {epoch}/{epochs + 10}")
        for done in range(1, batches + 1):
            running = round(loss_of(epoch) + 0.5 * (batches - done) / batches, 4)
            lines.append(f"{done}/{batches} ━━━━━━━━━━ 2s 300ms/step - accuracy: 0.5 - loss: {running}")
        if callbacks:
            lines.append(f"Epoch {epoch}: val_loss improved from 9.9 to 0.{epoch}, saving model to best.h5")
            lines.append(f"Epoch {epoch}: finished saving model to best.h5")
        lines.append(
            f"{batches}/{batches} ━━━━━━━━━━ 3s 300ms/step - accuracy: 0.5 - loss: {loss_of(epoch)} "
            f"- val_accuracy: 0.4 - val_loss: {loss_of(epoch) + 0.1}"
        )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("callbacks", [False, True])
def test_a_pass_takes_its_last_progress_state_not_its_first(tmp_path: Path, callbacks: bool) -> None:
    # the running loss of the first batches is not the epoch's; the callbacks' own 'Epoch N: ...'
    # messages inside the pass are no rows of their own (nothing lost: each is counted as skipped)
    run = generic_log.load(write(tmp_path, "training_log.txt", keras_progress(6, 5, callbacks)))
    assert steps(run.train) == list(range(1, 7))
    assert losses(run) == [loss_of(e) for e in range(1, 7)]
    assert [float(v) for v in run.evals["val_loss"]] == [loss_of(e) + 0.1 for e in range(1, 7)]
    notes = " ".join(run.notes)
    assert "progress state superseded by a later one of its pass" in notes
    assert ("a callback's message inside a pass" in notes) is callbacks


def test_an_epoch_summary_after_a_pass_header_is_a_row_not_a_callback_message(tmp_path: Path) -> None:
    """A loop that prints Keras' pass header (`Epoch 3/30`), then its own summary in name-value pairs
    (`Epoch 3: train_loss=0.52, val_dice=0.71 ± 0.26`): the summary is the epoch's row. A callback's
    message opens with words (`Epoch 3: val_loss improved from ...`), a summary with a name and = or :."""
    lines = []
    for epoch in range(1, 12):
        lines.append(f"2025-10-22 15:48:37,762 - INFO - Epoch {epoch}/30")
        lines.append(
            f"2025-10-22 15:52:00,125 - INFO - Epoch {epoch}: train_loss={0.8 - 0.03 * epoch:.6f}, "
            f"val_dice={0.7 + 0.01 * epoch:.6f} ± 0.23"
        )
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(1, 12))
    assert losses(run) == [round(0.8 - 0.03 * e, 6) for e in range(1, 12)]


def test_a_line_opening_with_an_episode_number_is_counted_by_it(tmp_path: Path) -> None:
    # a DQN loop: 'Episode 10/500 | Reward: ... | Loss: ...': the episode is the run's counter and its
    # total the plan; an episode count among other metrics (SB3's time/episodes) stays a metric
    lines = [
        f"Episode {10 * i:4d}/300 | Reward: {-500 + i:8.1f} | Avg (10): {-600 + i:8.1f} | "
        f"Loss: {loss_of(i)} | Epsilon: {0.99**i:.4f}"
        for i in range(1, 31)
    ]
    run = generic_log.load(write(tmp_path, "training_log.txt", "\n".join(lines) + "\n"))
    assert steps(run.train) == [10 * i for i in range(1, 31)]
    assert losses(run) == [loss_of(i) for i in range(1, 31)]
    from run_diagnosis.importers.generic_lines import parse_pairs

    record = parse_pairs(1, "time/episodes: 12 | loss: 3.1")
    assert record is not None and not record.counters and "time/episodes" in record.metrics


def test_a_non_finite_term_makes_the_stand_in_loss_non_finite(tmp_path: Path) -> None:
    # YOLO's val/cls_loss = inf beside a finite val/box_loss: the sum, the validation loss, is inf
    header = "epoch,train/box_loss,train/cls_loss,train/dfl_loss,val/box_loss,val/cls_loss,val/dfl_loss"
    rows = [f"{e},{1.0 + 0.02 * e},{3.0 - 0.1 * e},1.3,1.2,{'inf' if e == 3 else 2.5},1.4" for e in range(10)]
    run = generic_log.load(write(tmp_path, "results.csv", "\n".join([header, *rows]) + "\n"))
    values = [float(v) for v in run.evals["val_loss"]]
    assert math.isinf(values[3]) and all(math.isfinite(v) for i, v in enumerate(values) if i != 3)
    assert any("non-finite on 1 row(s) where another term" in note for note in run.notes)


def test_a_headerless_first_column_of_fractions_is_no_counter(tmp_path: Path) -> None:
    # 'epoch_avg_loss,epoch_time_s' appended without a header: the first column is the loss the file
    # is named for, not a counter; a headerless column of whole numbers still counts the rows
    rows = [f"{loss_of(e) * 10:.6f},{0.4 + e / 100:.6f}" for e in range(40)]
    run = generic_log.load(write(tmp_path, "loss_log.txt", "\n".join(rows) + "\n"))
    assert losses(run) == [round(loss_of(e) * 10, 6) for e in range(40)]
    assert steps(run.train) == list(range(1, 41))
    counted = [f"{e},{loss_of(e)}" for e in range(0, 400, 10)]
    run = generic_log.load(write(tmp_path, "loss_log.csv", "\n".join(counted) + "\n"))
    assert steps(run.train) == list(range(0, 400, 10)) and losses(run) == [
        loss_of(e) for e in range(0, 400, 10)
    ]


def test_a_pass_the_log_ends_inside_is_no_row(tmp_path: Path) -> None:
    # the capture stops at 2/5 of epoch 7: its running loss is of part of the epoch, not the epoch's
    text = keras_progress(6, 5, callbacks=False)
    text += "Epoch 7/16\n1/5 ━━━━━━━━━━ 2s 300ms/step - accuracy: 0.5 - loss: 0.9\n"
    text += "2/5 ━━━━━━━━━━ 2s 300ms/step - accuracy: 0.5 - loss: 0.8\n"
    run = generic_log.load(write(tmp_path, "training_log.txt", text))
    assert steps(run.train) == list(range(1, 7))
    assert losses(run) == [loss_of(e) for e in range(1, 7)]
    assert "a pass that never finished" in " ".join(run.notes)


def test_glog_prefix_after_progress_dots(tmp_path: Path) -> None:
    """PaddlePaddle prints progress dots without a newline (--dot_period), so its next glog line
    ('I0305 23:00:29.745251    35 TrainerInternal.cpp:182]') opens after them; the prefix is
    stripped all the same."""
    glog = "I0305 23:00:29.745251    35 TrainerInternal.cpp:182]"
    lines = [f"{'.' * (s % 7)}{glog}  Iteration={s} AvgLoss={loss_of(s)}" for s in range(10, 110, 10)]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(10, 110, 10))
    assert losses(run) == [loss_of(s) for s in range(10, 110, 10)]
    assert not any("I0305" in note for note in run.notes)


def test_a_cost_written_in_seconds_is_a_duration_not_the_loss(tmp_path: Path) -> None:
    """'cost' is the objective in TF1 and PaddlePaddle logs ('Epoch 3 cost=0.41'), but a value
    written with a time unit ('Cost: 715.7 sec', what the epoch cost) is a duration: the loss is
    the name that is one (here a loss function's name, mse, the only other candidate)."""
    lines = [f"Epoch {e} Train, mse:{loss_of(e)}, Cost: {700 + e}.5 sec" for e in range(1, 11)]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert losses(run) == [loss_of(e) for e in range(1, 11)]
    costs = [f"Epoch {e} cost={loss_of(e)}" for e in range(1, 11)]
    assert losses(generic_log.load(write(tmp_path, "tf1.log", "\n".join(costs) + "\n"))) == [
        loss_of(e) for e in range(1, 11)
    ]


def test_a_tqdm_bar_that_starts_again_after_its_total_is_the_next_pass(tmp_path: Path) -> None:
    """A console capture of a per-epoch tqdm bar (a W&B output.log, a nohup log) keeps a few of
    each pass's redrawn states: the log may open at the end of the first pass, a pass may show only
    its end, and a pass's '0/100' (its postfix already the first batch's) follows the last pass's
    '100/100'. A count that goes back after reaching its total is the next pass, not a restart."""

    def bar(n: int, value: float) -> str:
        return f"{n}%|##| {n}/100 [00:{n // 10:02d}<00:10, 9.9it/s, loss={value}]"

    states = [(100, 0.9), (12, 0.85), (100, 0.8), (100, 0.7), (0, 0.72), (50, 0.65), (100, 0.6)]
    lines = ["Epoch 1/20", *(bar(n, v) for n, v in states)]
    run = generic_log.load(write(tmp_path, "output.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == [100, 112, 200, 300, 301, 350, 400]
    assert losses(run) == [v for _, v in states]
    assert run.events.empty


def test_a_split_word_then_an_unnamed_count_of_passes(tmp_path: Path) -> None:
    """A course template many student repositories keep prints '[ Train | 001/100 ] loss = 1.9,
    acc = 0.3' and '[ Valid | 001/100 ] ...': the split word names the line's split and the
    unnamed N/M after it counts that split's passes, M the planned number."""
    lines = []
    for e in range(1, 21):
        lines.append(f"[ Train | {e:03d}/100 ] loss = {loss_of(e * 10):.5f}, acc = {0.3 + e / 100:.5f}")
        lines.append(
            f"[ Valid | {e:03d}/100 ] loss = {loss_of(e * 10) + 0.2:.5f}, acc = {0.28 + e / 100:.5f}"
        )
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(1, 21)) and steps(run.evals) == list(range(1, 21))
    assert losses(run) == [round(loss_of(e * 10), 5) for e in range(1, 21)]
    assert run.config["total_steps"] == 100


def test_of_two_layouts_as_frequent_the_one_whose_counter_moves(tmp_path: Path) -> None:
    """PaddlePaddle prints a running cost every 1000 batches ('Batch=1000 AvgCost=11.56') and one at
    each pass's end ('Pass=3 Batch=1472 AvgCost=10.01'): as many lines each, but the first layout's
    counter is 1000 on every row and orders nothing; the pass ends are the training rows."""
    lines = []
    for p in range(10):
        lines.append(f"Batch=1000 samples=128000 AvgLoss={loss_of(p * 10 + 5)}")
        lines.append(f"Pass={p} Batch=1472 samples=188399 AvgLoss={loss_of(p * 10 + 9)}")
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(lines) + "\n"))
    assert losses(run) == [loss_of(p * 10 + 9) for p in range(10)]


def test_a_file_of_printed_lists_one_a_line_is_read_by_position(tmp_path: Path) -> None:
    """'loss_log: [tensor(2.3294, grad_fn=<AddBackward0>), ...]' (a loop that keeps its losses in
    Python lists and prints each once at the end, without .item()): every line names one list, the
    position in the lists is the counter, and a tensor's or NumPy scalar's repr is its number; one
    line that is no list makes it a console like any other."""
    logged = [round(2.3 * 0.99**i, 4) for i in range(40)]
    lines = [
        f"label_log: {[17 + i % 3 for i in range(40)]}",
        "loss_log: [" + ", ".join(f"tensor({x}, grad_fn=<AddBackward0>)" for x in logged) + "]",
        "cosine_log: [" + ", ".join(f"np.float64({0.8 - 0.01 * i:.4f})" for i in range(40)) + "]",
    ]
    run = generic_log.load(write(tmp_path, "train_log.txt", "\n".join(lines) + "\n"))
    assert steps(run.train) == list(range(40)) and losses(run) == logged
    assert generic_lines.named_lists(["loss_log: [1.0, 0.9]", "done in 3 s"]) is None
    # a console line printing its loss as a tensor (no .item()): the number, not "device='cuda" = 0
    console = [
        f"epoch {e} loss: tensor({1 - e / 20:.4f}, device='cuda:0', grad_fn=<NllLossBackward0>)"
        for e in range(12)
    ]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(console) + "\n"))
    assert losses(run) == [round(1 - e / 20, 4) for e in range(12)]


def test_the_pytorch_tutorials_progress_line_is_an_iteration_and_its_loss(tmp_path: Path) -> None:
    """'0m 24s (- 5m 10s) (5000 6%) 3.5270' (the PyTorch translation and character-RNN tutorials
    print '%s (%d %d%%) %.4f': time since the start and left, iteration and percent, the average loss
    bare), behind a logger's prefix or not: the iteration is the step and the bare number the loss;
    a later edit's named loss keeps its name."""
    bare = [
        f"{i // 2}m {i * 7 % 60}s (- {9 - i // 2}m 5s) ({i * 5000} {i * 100 // 15}%) {3.5 - 0.13 * i:.4f}"
        for i in range(1, 16)
    ]
    prefixed = [f"INFO---->train--->2022-03-23 10:37:{i:02d},456--->{line}" for i, line in enumerate(bare)]
    for name, lines in (("bare.log", bare), ("prefixed.log", prefixed)):
        run = generic_log.load(write(tmp_path, name, "\n".join(lines) + "\n"))
        assert steps(run.train) == [i * 5000 for i in range(1, 16)]
        assert losses(run) == [round(3.5 - 0.13 * i, 4) for i in range(1, 16)]
    named = generic_lines.clean(1, "0m 53s (10000 100%) training loss = 2.9386", False).text
    assert named == "iter 10000 | training loss = 2.9386"
    # no time since the start: no tutorial line ('(5000 6%)' alone says nothing of what follows)
    assert "iter" not in generic_lines.clean(1, "(5000 6%) 3.5270", False).text


def test_a_loss_renamed_by_a_later_launch_continues_its_series(tmp_path: Path) -> None:
    """Two launches appended to one log, the script edited between them ('step 50 loss 2.1', then
    'step 10 training loss = 3.4'): the second name, on a stretch of its own after the last of the
    first and its counter starting over, is the same training loss; read so, the counter's going back
    is a restart."""
    first = [f"step {s} loss {loss_of(s)}" for s in range(10, 110, 10)]
    second = [f"step {s} training loss = {loss_of(s) + 0.5}" for s in range(10, 60, 10)]
    run = generic_log.load(write(tmp_path, "train.log", "\n".join(first + second) + "\n"))
    assert steps(run.train) == list(range(10, 110, 10)) + list(range(10, 60, 10))
    assert any("the same training loss under another name" in note for note in run.notes)
    # a closing summary printed twice under another name (HF's 'train_loss' at the last step): its
    # counter does not go back, so it is no launch of its own
    closing = ["step 100 train_loss = 0.9"] * 2
    summary = generic_log.load(write(tmp_path, "summary.log", "\n".join([*first, *closing]) + "\n"))
    assert steps(summary.train) == list(range(10, 110, 10))


def test_a_table_the_console_prints_between_other_lines_is_read_by_its_header(tmp_path: Path) -> None:
    """Old Ultralytics YOLOv3 and its JDE port print 'Epoch Batch box conf id total nTargets time'
    once, behind a logger's prefix, then rows '0/29 0/165 0.227 2.06 19 158 83 59.6' among warnings
    and an evaluation table of another width: the rows are read under their header, 'N/M' cells of a
    counter column counted, the other lines set aside with their reason; 'total' names no loss, so
    the user says which column is (--map), and the error names the columns to choose from."""
    stamp = "2021-01-25 05:58:00 [INFO]:"
    lines = [f"{stamp}    Epoch   Batch   box   conf   id   total   nTargets   time"]
    for epoch in range(4):
        for batch in range(0, 165, 40):
            total = 158 - 10 * epoch - batch / 20
            lines.append(f"{stamp} {epoch:>6}/29 {batch:>6}/165 0.227 2.06 19 {total:.1f} 83 59.6")
        lines += [
            "/opt/torch/_functions.py:61: UserWarning: Was asked to gather",
            "  Image  Total  P  R  mAP",
        ]
        lines.append(f"   1000   3000   0.5   0.6   {0.3 + epoch / 100:.3f}")
    log = write(tmp_path, "log_train.txt", "\n".join(lines) + "\n")
    with pytest.raises(RunImportError, match=r"names box \(20\), conf \(20\), id \(20\), total \(20\)"):
        generic_log.load(log)
    run = generic_log.load(log, {"loss": "total"})
    assert len(run.train) == 20 and run.train["loss"].iloc[0] == 158.0
    assert steps(run.train)[:2] == sorted(steps(run.train))[:2]
    assert run.layout is not None and run.layout["skipped"]["not a row of the console's table"]["lines"] == 12


@pytest.mark.parametrize(
    ("counter", "loss", "val_loss"),
    [
        ("Эпоха", "Потеря обучения", "Потери валидации"),  # Russian
        ("Época", "Pérdida entrenamiento", "Pérdida validación"),  # Spanish
        ("轮次", "训练 损失", "验证 损失"),  # Chinese, words apart
    ],
)
def test_a_log_written_in_the_teams_own_language_is_read_by_its_words(
    tmp_path: Path, counter: str, loss: str, val_loss: str
) -> None:
    """A team prints its log in its own language ('Эпоха:  10 | Потеря обучения: 0.41'): the counter,
    the loss and the split are the same words in another alphabet. Before, a name without an ASCII
    letter was no name, and every line was 'numbers without a counter'."""
    row, epochs = "{}: {:3d} | {}: {} | {}: {:.4f}", range(1, 21)
    lines = [row.format(counter, e, loss, loss_of(e * 10), val_loss, loss_of(e * 10) + 0.1) for e in epochs]
    run = generic_log.load(write(tmp_path, "log.txt", "\n".join(lines) + "\n"))
    assert losses(run) == [loss_of(e * 10) for e in range(1, 21)]
    assert steps(run.train) == list(range(1, 21))
    assert run.layout["train"]["counter"]["name"] == counter
    assert list(run.evals["val_loss"].round(4)) == [round(loss_of(e * 10) + 0.1, 4) for e in range(1, 21)]
