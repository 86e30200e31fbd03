"""Units printed with losses (bits, BPC, ppl, %) and W&B chart-panel CSV exports with several runs.

All inputs are built in tmp_path (no W&B chart export exists in ../shared/real-logs, see
SOURCES.md); the multi-run folder logic is also checked on the real Lightning sweeps.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from pathlib import Path

import pytest

from run_diagnosis import diagnose, importers, multi_run
from run_diagnosis.importers import RunImportError, text_logs, wandb_history, wandb_run
from run_diagnosis.importers.units import (
    UnitError,
    accuracy_to_share,
    canonical_unit,
    column_unit,
    convert,
    loss_to_nats,
    split_cell,
)
from support.paths import REAL_LOGS

LN2 = math.log(2.0)


# ---------------------------------------------------------------- units


@pytest.mark.parametrize(
    ("unit", "name"),
    [("BPC", "bits"), ("bits", "bits"), ("bit", "bits"), ("bpb", "bits"), (" Nats ", "nats"), ("ppl", "ppl")],
)
def test_canonical_unit(unit: str, name: str) -> None:
    assert canonical_unit(unit) == name


def test_losses_become_nats() -> None:
    assert loss_to_nats(2.41, "BPC") == pytest.approx(2.41 * LN2)
    assert loss_to_nats(2.41, None) == 2.41
    assert loss_to_nats(2.41, "nats") == 2.41
    assert loss_to_nats(math.e**3, "ppl") == pytest.approx(3.0)
    assert math.isnan(loss_to_nats(math.nan, "bits")), "a NaN loss stays NaN (it is a finding)"


def test_accuracy_percent_becomes_a_share() -> None:
    assert accuracy_to_share(85.0, "%") == pytest.approx(0.85)
    assert convert("val_accuracy", 0.5, None) == 0.5


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: canonical_unit("furlongs"), "unknown unit"),
        (lambda: loss_to_nats(0.0, "ppl"), "positive"),
        (lambda: loss_to_nats(2.0, "%"), "not a loss unit"),
        (lambda: convert("grad_norm", 2.0, "bits"), "takes no unit"),
    ],
)
def test_bad_units_are_refused(call: object, message: str) -> None:
    with pytest.raises(UnitError, match=message):
        call()  # type: ignore[operator]


def test_cells_and_column_names() -> None:
    assert split_cell("2.41 BPC") == (2.41, "BPC")
    assert split_cell(" 3.1 ") == (3.1, None)
    with pytest.raises(ValueError, match="not a number"):
        split_cell("two point four")
    assert column_unit("val_bpc") == "bpc"
    assert column_unit("val_loss (bits)") == "bits"
    assert column_unit("eval/perplexity") == "perplexity"
    assert column_unit("val_loss") is None
    assert column_unit("train/loss") is None


def _nanogpt_log(path: Path, unit: str) -> Path:
    lines = []
    for step in range(0, 200, 10):
        lines.append(f"iter {step}: loss {3.0 - step / 400:.4f}{unit}, time 35.2ms, mfu 12.3%")
        if step % 50 == 0:
            lines.append(f"step {step}: train loss {3.0 - step / 400:.4f}{unit}, val loss 2.41{unit}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_text_log_unit_suffix_is_converted(tmp_path: Path) -> None:
    run = text_logs.load(_nanogpt_log(tmp_path / "bpc.log", " BPC"))
    plain = text_logs.load(_nanogpt_log(tmp_path / "plain.log", ""))
    assert list(run.evals["val_loss"]) == pytest.approx([2.41 * LN2] * 4)
    assert list(plain.evals["val_loss"]) == pytest.approx([2.41] * 4)
    assert list(run.train["loss"]) == pytest.approx(list(plain.train["loss"] * LN2))
    assert any("BPC" in note and "nats" in note for note in run.notes), run.notes


def test_llmc_stdout_val_line_with_unit(tmp_path: Path) -> None:
    path = tmp_path / "stdout.log"
    lines = [f"step {s:4d}/100 | train loss 3.{s:02d} | norm 1.0 | lr 1e-4 | 100.0 ms" for s in range(1, 21)]
    lines.insert(10, "val loss 2.41 bits")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = text_logs.load(path)
    assert list(run.evals["val_loss"]) == pytest.approx([2.41 * LN2])


def test_history_cells_and_columns_with_units(tmp_path: Path) -> None:
    path = tmp_path / "history.csv"
    rows = ["step,train_bpc,val_bpc"] + [
        f"{s},{4 - s / 10} bits,{'' if s % 5 else 3.0}" for s in range(1, 21)
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    run = wandb_history.load(path)
    assert run.train["loss"].iloc[0] == pytest.approx(3.9 * LN2)
    assert list(run.evals["val_loss"]) == pytest.approx([3.0 * LN2] * 4)
    assert any("val_bpc" in note for note in run.notes), run.notes


def test_history_cell_with_unknown_unit_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "history.csv"
    path.write_text("step,loss\n1,2.0\n2,1.9 furlongs\n", encoding="utf-8")
    with pytest.raises(RunImportError, match="row 2"):
        wandb_history.load(path)


# ---------------------------------------------------------------- W&B chart export, several runs


def _chart(path: Path, metric: str, runs: dict[str, list[str]], steps: list[int]) -> Path:
    header = ["Step"]
    for name in runs:
        header += [f"{name} - {metric}", f"{name} - {metric}__MIN", f"{name} - {metric}__MAX"]
    lines = [",".join(header)]
    for index, step in enumerate(steps):
        cells = [str(step)]
        for values in runs.values():
            value = values[index] if index < len(values) else ""
            cells += [value, value, value]
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_chart_export_with_several_runs_is_split(tmp_path: Path) -> None:
    steps = list(range(10, 310, 10))
    good = [f"{3 - i * 0.05:.3f}" for i in range(30)]
    short = ["2.5"] * 12  # stopped early: empty cells after step 120
    _chart(tmp_path / "loss.csv", "train/loss", {"lr-3e-4": good, "lr 1e-2 (bad)": short}, steps)
    _chart(
        tmp_path / "val.csv",
        "eval/loss",
        {"lr-3e-4": ["2.0", "1.8", "1.7"], "lr 1e-2 (bad)": ["2.6"]},
        [100, 200, 300],
    )
    runs = wandb_history.chart_runs(tmp_path)
    assert set(runs) == {"lr-3e-4", "lr 1e-2 (bad)"}
    good_run = wandb_history.load_chart_run(runs["lr-3e-4"], "lr-3e-4")
    bad_run = wandb_history.load_chart_run(runs["lr 1e-2 (bad)"], "lr 1e-2 (bad)")
    assert (len(good_run.train), len(good_run.evals)) == (30, 3)
    assert (len(bad_run.train), len(bad_run.evals)) == (12, 1)
    assert good_run.run_name == "lr-3e-4"
    assert list(good_run.train["step"]) == steps
    sources = multi_run.find_runs(tmp_path)
    assert [s.name for s in sources] == ["lr 1e-2 (bad)", "lr-3e-4"]
    assert len(sources[0].load().train) == 12


def test_single_chart_file_with_several_runs_is_multi_run(tmp_path: Path) -> None:
    path = _chart(tmp_path / "chart.csv", "train/loss", {"a": ["1.0", "0.9"], "b": ["2.0", "1.9"]}, [1, 2])
    assert [s.name for s in multi_run.find_runs(path)] == ["a", "b"]


def test_chart_export_malformed(tmp_path: Path) -> None:
    no_step = tmp_path / "no_step.csv"
    no_step.write_text("step_x,a - train/loss\n1,2.0\n", encoding="utf-8")
    assert wandb_history.chart_runs(no_step) == {}
    empty_run = _chart(tmp_path / "empty.csv", "train/loss", {"a": ["1.0", "0.9"], "b": []}, [1, 2])
    with pytest.raises(RunImportError, match="run 'b': no values"):
        wandb_history.load_chart_run([empty_run], "b")
    accuracy_only = _chart(tmp_path / "accuracy_only.csv", "eval/accuracy", {"a": ["0.5"], "b": ["0.6"]}, [1])
    with pytest.raises(RunImportError, match="no training-loss column"):
        wandb_history.load_chart_run([accuracy_only], "a")
    # a validation loss alone is diagnosed on that series (the training-curve checks cannot run)
    eval_only = _chart(tmp_path / "eval_only.csv", "eval/loss", {"a": ["1.0"], "b": ["2.0"]}, [1])
    run = wandb_history.load_chart_run([eval_only], "a")
    assert run.train.empty and run.evals["val_loss"].tolist() == [1.0]
    bad_cell = _chart(tmp_path / "bad.csv", "train/loss", {"a": ["1.0", "oops"], "b": ["2.0", "1.9"]}, [1, 2])
    with pytest.raises(RunImportError, match="not a number"):
        wandb_history.load_chart_run([bad_cell], "a")


# ---------------------------------------------------------------- .wandb files in both item encodings
# Written here from wandb_internal.proto: Record{num=1, history=2, exit=18}, HistoryRecord{item=1,
# step=2}, HistoryItem{key=1, nested_key=2 (repeated), value_json=16}; LevelDB-log framing in
# 32 KiB blocks after the 7-byte ':W&B' header (importers.wandb_run).


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _history_item(name: str, value: object, nested: bool) -> bytes:
    """One HistoryItem: the name in ``key`` (older clients) or as a ``nested_key`` path (newer)."""
    text = json.dumps(value).encode()
    if nested:
        path = b"".join(_bytes_field(2, part.encode()) for part in name.split("."))
        return path + _bytes_field(16, text)
    return _bytes_field(1, name.encode()) + _bytes_field(16, text)


def _datastore(records: list[bytes]) -> bytes:
    """A .wandb file: header, then each record framed as FULL or FIRST/MIDDLE/LAST chunks."""
    block = 32768
    data = bytearray(struct.pack("<4sHB", b":W&B", 0xBEE1, 1))
    for record in records:
        rest, first = record, True
        while True:
            left = block - len(data) % block
            if left < 7:
                data += bytes(left)
                continue
            chunk, rest = rest[: left - 7], rest[left - 7 :]
            kind = (1 if not rest else 2) if first else (4 if not rest else 3)
            data += struct.pack("<IHB", zlib.crc32(bytes([kind]) + chunk), len(chunk), kind) + chunk
            first = False
            if not rest:
                break
    return bytes(data)


def _wandb_run_file(folder: Path, rows: list[dict[str, object]], nested: bool, finished: bool = True) -> Path:
    records = []
    for number, row in enumerate(rows, start=1):
        items = b"".join(_bytes_field(1, _history_item(k, v, nested)) for k, v in row.items())
        history = items + _bytes_field(2, _int_field(1, number - 1))
        records.append(_int_field(1, number) + _bytes_field(2, history))
    if finished:
        records.append(_int_field(1, len(rows) + 1) + _bytes_field(18, _int_field(1, 0)))
    folder.mkdir(parents=True)
    path = folder / f"run-{folder.name}.wandb"
    path.write_bytes(_datastore(records))
    return path


WANDB_RUN_ROWS: list[dict[str, object]] = [
    {"train/global_step": 10 * n, "train/loss": 3.0 - 0.1 * n, "train/lr": 1e-4, "_runtime": 5.0 * n}
    for n in range(1, 6)
] + [{"train/global_step": 50, "eval": {"loss": 2.7}, "samples": {"_type": "image-file", "width": 64}}]


@pytest.mark.parametrize("nested", [False, True], ids=["key (field 1)", "nested_key (field 2)"])
def test_wandb_run_file_item_names_in_either_field(tmp_path: Path, nested: bool) -> None:
    """Newer clients name a history item by its nested_key path, older ones by key: both read the same;
    a dict value is flattened with '.' (eval.loss), a media object (_type) is not a scalar."""
    path = _wandb_run_file(tmp_path / "abc123", WANDB_RUN_ROWS, nested)
    assert wandb_run.sniff(path.parent)
    run = wandb_run.load(path.parent)
    assert run.train["step"].tolist() == [10, 20, 30, 40, 50]
    assert run.train["loss"].tolist() == pytest.approx([2.9, 2.8, 2.7, 2.6, 2.5])
    assert run.evals[["step", "val_loss"]].values.tolist() == [[50, 2.7]]
    assert run.events.empty, "an exit record: the run finished"
    assert not any("samples" in note for note in run.notes), run.notes


def test_wandb_run_file_record_split_across_blocks(tmp_path: Path) -> None:
    """A record longer than a 32 KiB block is framed FIRST/MIDDLE/LAST and read whole."""
    rows = [dict(row) for row in WANDB_RUN_ROWS[:5]]
    rows[2] = {**rows[2], **{f"extra/metric_{i}": float(i) for i in range(4000)}}
    run = wandb_run.load(_wandb_run_file(tmp_path / "big", rows, nested=True, finished=False).parent)
    assert run.train["step"].tolist() == [10, 20, 30, 40, 50]
    assert run.events["event"].str.contains("without an exit record").all()


def test_wandb_history_without_a_loss_reads_the_console_output(tmp_path: Path) -> None:
    """A run that logged only its accuracy to W&B and printed its loss: the .wandb history has no
    loss, so files/output.log is read instead, with a note; without the console output the refusal
    stands."""
    rows = [{"validation/accuracy": 0.6 + 0.01 * n, "_runtime": 5.0 * n} for n in range(1, 6)]
    folder = _wandb_run_file(tmp_path / "run-20220103-abc", rows, nested=False).parent
    (folder / "files").mkdir()
    printed = [f"Step {10 * n}: train_loss={0.7 - 0.01 * n:.3f}, learning_rate=0.03" for n in range(1, 30)]
    (folder / "files" / "output.log").write_text("\n".join(printed) + "\n", encoding="utf-8")
    for run in (importers.load_run(folder), diagnose.read_source(folder, None)):
        assert run.train["loss"].iloc[0] == pytest.approx(0.69)
        assert "its .wandb history logged no loss" in run.notes[0]
    (folder / "files" / "output.log").unlink()
    with pytest.raises(importers.NoLossError, match="no training-loss column"):
        importers.load_run(folder)


# ---------------------------------------------------------------- several runs in one folder


def test_single_run_folders_are_not_split(tmp_path: Path) -> None:
    for name in ("hf-tinyllama-sft", "tb-hf-gpt2ja-evalontrain", "nanogpt-gpt2-124m-resume-2epoch"):
        if (REAL_LOGS / name).exists():
            assert multi_run.find_runs(REAL_LOGS / name) == [], name
    checkpoints = tmp_path / "out"
    for step in (100, 200):
        (checkpoints / f"checkpoint-{step}").mkdir(parents=True)
        (checkpoints / f"checkpoint-{step}" / "trainer_state.json").write_text("{}", encoding="utf-8")
    assert multi_run.find_runs(checkpoints) == []


@pytest.mark.parametrize(
    ("folder", "count"), [("lightning-slm-sweep", 40), ("lightning-gan-nan-versions", 16)]
)
def test_real_sweeps_are_several_runs(folder: str, count: int) -> None:
    if not (REAL_LOGS / folder).exists():
        pytest.skip(f"{REAL_LOGS / folder} is absent")
    runs = multi_run.find_runs(REAL_LOGS / folder)
    assert len(runs) == count
    assert runs[0].name == "version_0" and runs[2].name == "version_2", "natural order"
    assert len(runs[2].load().train) > 0
    assert importers.detect(REAL_LOGS / folder / "version_2").FORMAT == "lightning_csv"


# ---------------------------------------------------------------- W&B run folders (.wandb)

ALPACA = REAL_LOGS / "wandb-alpaca-llama7b-runs"


@pytest.mark.parametrize(
    ("run", "rows", "finished"),
    [("run-20231106_034002-m84hjf9m", 120, True), ("run-20231122_093222-372eaod9", 390, False)],
)
def test_wandb_run_folder(run: str, rows: int, finished: bool) -> None:
    """SOURCES.md C15: m84hjf9m complete (120 steps); 372eaod9 killed at step 390 (no exit record)."""
    if not (ALPACA / run).exists():
        pytest.skip(f"{ALPACA / run} is absent")
    assert importers.detect(ALPACA / run).FORMAT == "wandb_run"
    loaded = wandb_run.load(ALPACA / run)
    assert len(loaded.train) == rows
    assert loaded.schedule["peak_lr"] == pytest.approx(2e-5)
    assert loaded.events.empty == finished
    assert list(loaded.train["step"])[:3] == [1, 2, 3]


def test_wandb_file_cut_off_and_malformed(tmp_path: Path) -> None:
    source = ALPACA / "run-20231106_034002-m84hjf9m" / "run-m84hjf9m.wandb"
    if not source.exists():
        pytest.skip(f"{source} is absent")
    data = source.read_bytes()
    cut = tmp_path / "cut" / "run-cut.wandb"
    cut.parent.mkdir()
    cut.write_bytes(data[: len(data) // 2 + 5])
    run = wandb_run.load(cut.parent)
    assert 0 < len(run.train) < 120
    assert any("ends inside a record" in note for note in run.notes), run.notes
    assert not run.events.empty, "no exit record: a stop event"
    garbage = tmp_path / "garbage" / "run-x.wandb"
    garbage.parent.mkdir()
    garbage.write_bytes(b"not a wandb file at all")
    assert not wandb_run.sniff(garbage.parent)
    with pytest.raises(RunImportError, match="W&B datastore"):
        wandb_run.load(garbage)
    header_only = tmp_path / "empty" / "run-y.wandb"
    header_only.parent.mkdir()
    header_only.write_bytes(data[:7])
    with pytest.raises(RunImportError, match="no history records"):
        wandb_run.load(header_only)


def test_folder_of_separate_text_logs_is_several_runs() -> None:
    """SOURCES.md B8: two Megatron-DeepSpeed runs' stdout side by side are two runs."""
    folder = REAL_LOGS / "megatron-deepspeed-gpt3-125m"
    if not folder.exists():
        pytest.skip(f"{folder} is absent")
    runs = multi_run.find_runs(folder)
    assert [run.name for run in runs] == [
        "gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-baseline",
        "gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-with-kernel",
    ]
    assert len(runs[0].load().train) == 47
