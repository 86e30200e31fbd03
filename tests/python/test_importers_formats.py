"""Importers of issue 25: MLflow, Trackio, Parquet exports, Keras, torchtune, fairseq, OLMo /
Composer / DeepSpeed console output.

Each format has a fixture the test writes in tmp_path in the layout the tool writes (the SQLite
schemas are those of MLflow 3.18 and Trackio 0.43, read off stores those libraries wrote in a
throwaway environment), built to show the format's own convention: MLflow's NaN stored as 0 with
``is_nan``, Trackio's ``"NaN"`` text, fairseq's losses in bits and its overflow skips, OLMo-core's
``optim/step skipped``, DeepSpeed's ``skipped=`` counter. The real public files of
``corpus/formats.json`` are diagnosed end to end when they have been materialized in
/work/corpus/formats (``python corpus/corpus.py materialize corpus/formats.json
/work/corpus/formats``); skipped otherwise.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from run_diagnosis import importers, multi_run
from run_diagnosis.importers import (
    RunImportError,
    fairseq_log,
    keras_log,
    metric_frames,
    mlflow_store,
    parquet_export,
    torchtune_log,
    trainer_stdout,
    yolo_console,
    yolo_results,
)
from run_diagnosis.importers.canonical import RunData, config_document
from run_diagnosis.run_files import INTERVAL_MEAN_KEY
from support.commands import run_diagnosis
from support.paths import REPO

CORPUS = Path(os.environ.get("RUN_DIAGNOSIS_FORMATS_CORPUS", "/work/corpus/formats"))
MANIFEST = REPO / "corpus" / "formats.json"
NEW_FORMATS = (
    "mlflow",
    "trackio",
    "parquet",
    "keras",
    "torchtune",
    "fairseq",
    "trainer_stdout",
    "yolo_results_txt",
    "ultralytics_console",
)
SERIOUS = {"critical", "high", "medium"}
STEPS = 60
NAN_FROM = 45


def loss_at(step: int) -> float:
    return 2.0 + 6.0 * math.exp(-step / 12)


def losses(run: RunData) -> list[float]:
    return [float(v) for v in run.train["loss"]]


def events(run: RunData) -> list[str]:
    return [str(e) for e in run.events["event"]]


def detect(path: Path) -> str:
    return importers.detect(path).FORMAT


# ------------------------------------------------------------------ MLflow


HF_PARAMS = {
    "learning_rate": "0.0003",
    "lr_scheduler_type": "cosine",
    "max_grad_norm": "1.0",
    "max_steps": str(STEPS),
    "warmup_steps": "5",
    "logging_steps": "1",
}


def mlflow_db(path: Path) -> Path:
    """An MLflow SQLite store (the tables MLflow 3.18 writes, reduced to the columns read) with
    two runs: a healthy one and one whose loss went NaN at step NAN_FROM (stored as 0, is_nan 1)."""
    con = sqlite3.connect(path)
    con.executescript(
        """
        create table runs (run_uuid varchar(32) primary key, name varchar(250), status varchar(9),
            start_time bigint, end_time bigint, lifecycle_stage varchar(32), experiment_id integer);
        create table metrics (key varchar(250), value float, timestamp bigint, run_uuid varchar(32),
            step bigint, is_nan boolean);
        create table params (key varchar(250), value varchar(8000), run_uuid varchar(32));
        create table tags (key varchar(250), value varchar(8000), run_uuid varchar(32));
        """
    )
    for index, (run, status) in enumerate(
        (("healthy", "FINISHED"), ("diverged", "FAILED"), ("gone", "FINISHED"))
    ):
        uuid = f"{index:032d}"
        stage = "deleted" if run == "gone" else "active"
        con.execute(
            "insert into runs values (?, ?, ?, ?, ?, ?, 1)", [uuid, run, status, index, index + 1, stage]
        )
        con.executemany("insert into params values (?, ?, ?)", [(k, v, uuid) for k, v in HF_PARAMS.items()])
        for step in range(1, STEPS + 1):
            nan = run == "diverged" and step >= NAN_FROM
            stamp = 1_700_000_000_000 + step * 500
            rows = [
                ("train/loss", 0.0 if nan else loss_at(step), nan),
                ("train/learning_rate", 3e-4 * min(1, step / 5), False),
                ("train/grad_norm", 0.8, False),
            ]
            if step % 20 == 0:
                rows.append(("eval/loss", 0.0 if nan else loss_at(step) + 0.1, nan))
            con.executemany(
                "insert into metrics values (?, ?, ?, ?, ?, ?)",
                [(k, v, stamp, uuid, step, n) for k, v, n in rows],
            )
    con.commit()
    con.close()
    return path


def test_mlflow_sqlite_store_is_several_runs_and_honours_is_nan(tmp_path: Path) -> None:
    store = mlflow_db(tmp_path / "mlflow.db")
    assert detect(store) == "mlflow" and detect(tmp_path) == "mlflow"
    found = multi_run.find_runs(store)
    assert [r.name for r in found] == ["healthy", "diverged"]  # the deleted run is left out
    diverged = found[1].load()
    values = losses(diverged)
    assert all(math.isnan(v) for v in values[NAN_FROM - 1 :]) and not any(v == 0.0 for v in values)
    assert values[0] == pytest.approx(loss_at(1))
    assert diverged.evals["val_loss"].astype(str).tolist()[-1] == "nan"
    assert diverged.schedule["type"] == "warmup_cosine" and diverged.schedule["peak_lr"] == pytest.approx(
        3e-4
    )
    assert diverged.config["grad_clip_norm"] == 1.0 and diverged.config["total_steps"] == STEPS
    assert diverged.config["grad_norm_measured"] == "before_clipping"
    assert diverged.train["step_time_sec"].dropna().iloc[-1] == pytest.approx(0.5)  # ms timestamps
    assert (
        config_document(diverged)[INTERVAL_MEAN_KEY] is True
    )  # a timestamp's difference: the interval's mean
    assert any("crashed" in e for e in events(diverged))  # status FAILED
    with pytest.raises(RunImportError, match="holds 2 runs"):
        mlflow_store.load(store)


def mlflow_file_store(root: Path) -> Path:
    run = root / "mlruns" / "3" / "abc123"
    (run / "metrics" / "train").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "tags").mkdir()
    (run / "meta.yaml").write_text("run_id: abc123\nstatus: 5\nlifecycle_stage: active\n", encoding="utf-8")
    (run / "tags" / "mlflow.runName").write_text("keras-autolog", encoding="utf-8")
    lines = [f"{1_600_000_000_000 + s * 2000} {loss_at(s)} {s}" for s in range(STEPS)]
    lines[30] = f"{1_600_000_000_000 + 30 * 2000} nan 30"
    (run / "metrics" / "train" / "loss").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (run / "metrics" / "val_loss").write_text(
        "\n".join(f"{1_600_000_000_000 + s * 2000} {loss_at(s) + 0.2} {s}" for s in range(0, STEPS, 10))
        + "\n",
        encoding="utf-8",
    )
    (run / "params" / "epochs").write_text(str(STEPS), encoding="utf-8")
    return root / "mlruns"


def test_mlflow_file_store_reads_nested_keys_nan_and_status(tmp_path: Path) -> None:
    store = mlflow_file_store(tmp_path)
    for path in (store, store / "3", store / "3" / "abc123"):
        assert detect(path) == "mlflow"
    run = mlflow_store.load(store)
    assert run.run_name == "keras-autolog" and len(run.train) == STEPS and len(run.evals) == STEPS // 10
    assert math.isnan(losses(run)[30])
    assert any("killed" in e for e in events(run))  # status 5 = KILLED
    assert any("not Hugging Face TrainingArguments" in n for n in run.notes)


# ------------------------------------------------------------------ Trackio


def trackio_db(path: Path) -> Path:
    """A Trackio project (the metrics/configs tables Trackio 0.43 writes), two runs; non-finite
    values stored as the text "NaN", as Trackio does."""
    con = sqlite3.connect(path)
    con.executescript(
        """
        create table metrics (id integer primary key autoincrement, run_id text not null,
            timestamp text not null, run_name text not null, step integer not null, metrics text not null,
            log_id text, space_id text);
        create table configs (id integer primary key autoincrement, run_id text not null,
            run_name text not null, config text not null, created_at text not null, unique(run_id));
        """
    )
    for run in ("baseline", "diverged"):
        con.execute(
            "insert into configs (run_id, run_name, config, created_at) values (?, ?, ?, ?)",
            [
                run,
                run,
                json.dumps({**{k: json.loads(v) if v[0].isdigit() else v for k, v in HF_PARAMS.items()}}),
                "x",
            ],
        )
        for step in range(1, STEPS + 1):
            value: Any = "NaN" if run == "diverged" and step >= NAN_FROM else loss_at(step)
            document = {"train/loss": value, "train/learning_rate": 3e-4, "train/grad_norm": 0.7}
            stamp = f"2026-01-01T00:{step // 60:02d}:{step % 60:02d}+00:00"
            con.execute(
                "insert into metrics (run_id, timestamp, run_name, step, metrics) values (?, ?, ?, ?, ?)",
                [run, stamp, run, step, json.dumps(document).encode()],  # orjson bytes, as Trackio writes
            )
    con.commit()
    con.close()
    return path


def test_trackio_project_is_several_runs_with_nan_text(tmp_path: Path) -> None:
    project = trackio_db(tmp_path / "lm-sweep.db")
    assert detect(project) == "trackio"
    found = multi_run.find_runs(project)
    assert [r.name for r in found] == ["baseline", "diverged"]
    diverged = found[1].load()
    assert sum(math.isnan(v) for v in losses(diverged)) == STEPS - NAN_FROM + 1
    assert diverged.train["step_time_sec"].dropna().iloc[-1] == pytest.approx(1.0)
    assert diverged.schedule["type"] == "warmup_cosine" and diverged.config["grad_clip_norm"] == 1.0


# ------------------------------------------------------------------ Parquet


def write_parquet(rows: list[dict[str, Any]], path: Path, nan_where: str = "false") -> Path:
    """rows as a Parquet file; float_value is NaN where `nan_where` holds (a pandas NaN would be
    read by DuckDB as NULL, while neptune-exporter's pyarrow keeps NaN)."""
    frame = pd.DataFrame(rows)
    with duckdb.connect() as con:
        con.register("frame", frame)
        replace = (
            "select * replace "
            f"(case when {nan_where} then 'nan'::double else float_value end as float_value) "
            if "float_value" in frame.columns
            else "select * "
        )
        con.execute(f"copy ({replace} from frame) to '{path}' (format parquet)")
    return path


def test_neptune_long_parquet_splits_runs_params_and_series(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = []
    for run in ("LM-1", "LM-2"):
        rows += [
            {
                "project_id": "org/lm",
                "run_id": run,
                "attribute_path": f"config/{k}",
                "attribute_type": "string",
                "step": None,
                "timestamp": None,
                "float_value": None,
                "string_value": v,
            }
            for k, v in HF_PARAMS.items()
        ]
        for step in range(1, STEPS + 1):
            for name, value in (("train/loss", loss_at(step)), ("train/lr", 3e-4), ("val/loss", None)):
                if name == "val/loss" and step % 10:
                    continue
                value = loss_at(step) + 0.1 if name == "val/loss" else value
                rows.append(
                    {
                        "project_id": "org/lm",
                        "run_id": run,
                        "attribute_path": name,
                        "attribute_type": "float_series",
                        "step": float(step),
                        "timestamp": pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(seconds=step),
                        "float_value": value,
                        "string_value": None,
                    }
                )
    nan_at_30 = "run_id = 'LM-2' and attribute_path = 'train/loss' and step = 30"
    export = write_parquet(rows, tmp_path / "part_0.parquet", nan_at_30)
    assert detect(export) == "parquet" and detect(tmp_path) == "parquet"
    found = multi_run.find_runs(tmp_path)
    assert [r.name for r in found] == ["LM-1", "LM-2"]
    second = found[1].load()
    assert len(second.train) == STEPS and len(second.evals) == STEPS // 10 and math.isnan(losses(second)[29])
    assert second.schedule["peak_lr"] == pytest.approx(3e-4) and second.config["total_steps"] == STEPS
    assert second.train["step_time_sec"].dropna().iloc[-1] == pytest.approx(1.0)


def test_wide_parquet_of_one_run(tmp_path: Path) -> None:
    rows = [
        {"step": s, "timestamp": f"2026-01-01T00:00:{s:02d}", "loss": loss_at(s), "lr": 1e-3}
        for s in range(1, 50)
    ]
    export = write_parquet(rows, tmp_path / "history.parquet")
    run = parquet_export.load(export)
    assert len(run.train) == 49 and run.train["learning_rate"].iloc[0] == pytest.approx(1e-3)


# ------------------------------------------------------------------ long CSV tables


def test_mlflow_metric_download_is_read_as_a_long_table(tmp_path: Path) -> None:
    """MLflow's UI downloads a metric history as 'Run, Run ID, metric, step, timestamp, value'
    (quoted, milliseconds): a long table, one run per run id, step times from the timestamps."""
    lines = ['"Run","Run ID","metric","step","timestamp","value"']
    for step in range(10, 310, 10):
        when = 1761884192934 + step * 5300
        lines.append(f'"snake-57","f8bb","loss","{step}","{when}","{loss_at(step / 10)}"')
        if step % 100 == 0:
            lines.append(f'"snake-57","f8bb","eval_loss","{step}","{when}","{loss_at(step / 10) + 0.2}"')
    (tmp_path / "loss.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "lora_ft.py").write_text("print('the script beside it')\n", encoding="utf-8")
    assert detect(tmp_path) == "long_csv" and detect(tmp_path / "loss.csv") == "long_csv"
    run = importers.by_format("long_csv").load(tmp_path)
    assert run.train["step"].tolist() == list(range(10, 310, 10)) and len(run.evals) == 3
    assert run.train["loss"].iloc[0] == pytest.approx(loss_at(1.0))
    assert run.train["step_time_sec"].dropna().iloc[-1] == pytest.approx(5.3)  # ms deltas / 10 steps


def test_long_csv_of_two_runs_is_two_runs_and_a_summary_table_is_not_a_history(tmp_path: Path) -> None:
    """tbparse's scalars (wall_time, step, tag, value) with a run column: one report per run; a long table
    without a step column holds final values only and is left to the other readers."""
    rows = ["run,wall_time,step,tag,value"] + [
        f"{run},{1_700_000_000 + 2.5 * step},{step},train/loss,{loss_at(step) + offset}"
        for run, offset in (("a", 0.0), ("b", 0.5))
        for step in range(1, 41)
    ]
    table = tmp_path / "scalars.csv"
    table.write_text("\n".join(rows) + "\n", encoding="utf-8")
    found = multi_run.find_runs(table)
    assert [r.name for r in found] == ["a", "b"]
    second = found[1].load()
    assert second.train["loss"].iloc[0] == pytest.approx(loss_at(1) + 0.5)
    assert second.train["step_time_sec"].dropna().iloc[-1] == pytest.approx(2.5)  # from the wall time
    summary = tmp_path / "summary"
    summary.mkdir()
    (summary / "final.csv").write_text("metric,value\nloss,0.31\nacc,0.9\n", encoding="utf-8")
    assert not importers.by_format("long_csv").sniff(summary / "final.csv")


def write_scalar_download(folder: Path, run: str, tag: str, offset: float, steps: int = 20) -> Path:
    """TensorBoard's 'Download CSV' of one scalar: 'Wall time,Step,Value', named run-<run>-tag-<tag>."""
    rows = [f"{1_700_000_000 + s * 30.5},{s},{loss_at(s) + offset}" for s in range(steps)]
    path = folder / f"run-{run}-tag-{tag}.csv"
    path.write_text("Wall time,Step,Value\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_tensorboard_scalar_downloads_are_named_by_their_files(tmp_path: Path) -> None:
    """Keras' train and validation writers downloaded from TensorBoard: one run whose loss is
    train/epoch_loss and validation loss validation/epoch_loss, step times from the wall time; two
    experiments' downloads of one tag are two runs."""
    keras = tmp_path / "keras"
    keras.mkdir()
    write_scalar_download(keras, "train", "epoch_loss", 0.0)
    write_scalar_download(keras, "validation", "epoch_loss", 0.2)
    assert detect(keras) == "long_csv"
    run = importers.by_format("long_csv").load(keras)
    assert run.run_name == "keras" and len(run.train) == 20 and len(run.evals) == 20
    assert run.evals["val_loss"].iloc[0] == pytest.approx(loss_at(0) + 0.2)
    assert run.train["step_time_sec"].dropna().iloc[-1] == pytest.approx(30.5)
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    write_scalar_download(sweep, "lr_1e-3", "train_loss", 0.0)
    write_scalar_download(sweep, "lr_1e-2", "train_loss", 0.5)
    assert [r.name for r in multi_run.find_runs(sweep)] == ["lr_1e-2", "lr_1e-3"]


# ------------------------------------------------------------------ bare columns named by their files


def test_keras_history_saved_with_savetxt_is_read_by_file_name(tmp_path: Path) -> None:
    """np.savetxt of each Keras history key: headerless columns named by their files; a validation
    loss as long as the loss makes the rows epochs; a column of another length is not joined."""
    for name, offset in (("loss", 0.0), ("val_loss", 0.3), ("acc", None), ("val_acc", None)):
        values = [0.5 + e / 100 if offset is None else loss_at(e) + offset for e in range(12)]
        (tmp_path / f"{name}.csv").write_text("".join(f"{v:.18e}\n" for v in values), encoding="utf-8")
    batches = "".join(f"{loss_at(b / 10)}\n" for b in range(120))
    (tmp_path / "batch_loss.txt").write_text(batches, encoding="utf-8")
    assert detect(tmp_path) == "column_files"
    run = importers.by_format("column_files").load(tmp_path)
    assert run.train["step"].tolist() == list(range(1, 13)) and run.config["rows_are"] == "epoch"
    assert run.evals["val_loss"].iloc[0] == pytest.approx(loss_at(0) + 0.3)
    assert run.evals["val_accuracy"].iloc[-1] == pytest.approx(0.61)
    assert any("batch_loss.txt (120 rows)" in n and "not used" in n for n in run.notes)


def test_the_training_loss_column_is_the_one_a_validation_loss_pairs_with(tmp_path: Path) -> None:
    """loss.csv of 5 rows (another experiment's) beside train_loss.csv and val_loss.csv of 20: the
    resolver's first choice, 'loss', has no validation partner; train_loss, logged with val_loss, is
    the run's training loss."""
    columns = {"loss": [2000.0 + e for e in range(5)], "train_loss": [loss_at(e) for e in range(20)]}
    columns["val_loss"] = [loss_at(e) + 0.3 for e in range(20)]
    for name, values in columns.items():
        (tmp_path / f"{name}.csv").write_text("".join(f"{v:.18e}\n" for v in values), encoding="utf-8")
    run = importers.by_format("column_files").load(tmp_path)
    assert len(run.train) == 20 and run.train["loss"].iloc[0] == pytest.approx(loss_at(0))
    assert len(run.evals) == 20 and any("not used: loss.csv (5 rows)" in n for n in run.notes)


def test_a_lone_column_of_losses_is_steps_and_a_table_is_no_column(tmp_path: Path) -> None:
    steps = "".join(f"{loss_at(s)}\n" for s in range(30))
    (tmp_path / "train_losses.txt").write_text(steps, encoding="utf-8")
    run = importers.by_format("column_files").load(tmp_path / "train_losses.txt")
    assert len(run.train) == 30 and "rows_are" not in run.config
    pandas = tmp_path / "pandas"
    pandas.mkdir()  # pd.DataFrame({"train_loss": losses}).to_csv(index=False): one header line names it
    (pandas / "history.csv").write_text("train_loss\n" + steps, encoding="utf-8")
    assert len(importers.by_format("column_files").load(pandas).train) == 30
    unnamed = tmp_path / "train_loss.csv"  # an unnamed column: pandas' label 0 heads it, named by the file
    unnamed.write_text("0\n" + steps, encoding="utf-8")
    first = importers.by_format("column_files").load(unnamed).train["loss"].iloc[0]
    assert first == pytest.approx(loss_at(0))
    other = tmp_path / "other"
    other.mkdir()
    (other / "loss.csv").write_text("epoch,loss\n1,2.0\n2,1.5\n", encoding="utf-8")
    (other / "accuracy.txt").write_text("0.5\n0.6\n0.7\n", encoding="utf-8")  # no loss among the columns
    (other / "losses.txt").write_text("loss\n0.5\nepoch 2\n0.4\n", encoding="utf-8")  # text between numbers
    assert not importers.by_format("column_files").sniff(other)


def test_one_line_of_numbers_is_a_series_written_across(tmp_path: Path) -> None:
    """A callback appending ',<loss>' to one line each epoch: one row of numbers, a leading empty
    field no value, read in order and named by the file; two numbers on a line are no series."""
    across = tmp_path / "losses.csv"
    across.write_text("".join(f",{loss_at(e)}" for e in range(67)), encoding="utf-8")
    assert detect(across) == "column_files"
    run = importers.by_format("column_files").load(across)
    assert run.train["step"].tolist() == list(range(1, 68))
    assert run.train["loss"].iloc[-1] == pytest.approx(loss_at(66))
    two = tmp_path / "two"
    two.mkdir()
    (two / "loss.csv").write_text("0.52,0.61\n", encoding="utf-8")  # one record of two metrics
    assert not importers.by_format("column_files").sniff(two)


def test_lines_of_numbers_written_across_are_passes_read_line_after_line(tmp_path: Path) -> None:
    """A loop writing an epoch's batch losses on one line (','.join, a trailing comma): three lines of
    108 values are 324 losses in order; a headerless table whose first column counts its rows, or lines
    of a few numbers, are not passes."""
    passes = tmp_path / "train_losses.txt"
    passes.write_text(
        "".join("".join(f"{loss_at(e * 108 + b):.6f}," for b in range(108)) + "\n" for e in range(3)),
        encoding="utf-8",
    )
    assert detect(passes) == "column_files"
    run = importers.by_format("column_files").load(passes)
    assert len(run.train) == 324 and run.train["loss"].iloc[200] == pytest.approx(loss_at(200), abs=1e-6)
    assert any("3 lines of numbers written across" in note for note in run.notes)
    table = tmp_path / "table" / "loss.csv"
    table.parent.mkdir()
    table.write_text("".join(f"{e},{','.join(['0.5'] * 12)}\n" for e in range(1, 6)), encoding="utf-8")
    assert not importers.by_format("column_files").sniff(table.parent)
    few = tmp_path / "few" / "loss.csv"
    few.parent.mkdir()
    few.write_text("0.9,0.8,0.7\n0.6,0.5,0.4\n", encoding="utf-8")
    assert not importers.by_format("column_files").sniff(few.parent)


def test_split_columns_are_the_quantity_their_file_is_named_for(tmp_path: Path) -> None:
    """pandas' to_csv of a DataFrame(train=..., valid=...) into losses.csv: the columns name only
    the split, the file names the quantity (losses); in accuracy.csv the same columns are
    accuracies (no loss: refused); in a file named for nothing, the number a training log records
    for each split is its loss when the training series falls (read with low confidence, said so)."""
    rows = [f"{e},{loss_at(e)},{loss_at(e) + 0.3}" for e in range(30)]
    body = "\n".join([",train,valid", *rows]) + "\n"
    losses_csv = tmp_path / "losses.csv"
    losses_csv.write_text(body, encoding="utf-8")
    run = importers.detect(losses_csv).load(losses_csv)
    assert len(run.train) == 30 and run.train["loss"].iloc[0] == pytest.approx(loss_at(0))
    assert run.evals["val_loss"].iloc[0] == pytest.approx(loss_at(0) + 0.3)
    for name in ("accuracy.csv", "log.csv"):
        other = tmp_path / name.replace(".csv", "")
        other.mkdir()
        (other / name).write_text(body, encoding="utf-8")
    with pytest.raises(importers.RunImportError):
        importers.detect(tmp_path / "accuracy" / "accuracy.csv").load(tmp_path / "accuracy" / "accuracy.csv")
    log = tmp_path / "log" / "log.csv"
    run = importers.detect(log).load(log)
    assert run.train["loss"].iloc[0] == pytest.approx(loss_at(0))
    assert any("named by their split alone and falling over the run" in note for note in run.notes)


def test_an_elapsed_clock_in_hours_and_one_printed_too_coarse(tmp_path: Path) -> None:
    """A live metrics CSV whose clock is elapsed_hours: 0.0025 h per 10 steps is 0.9 s a step (the
    unit is the name's); the same clock printed to one decimal (six minutes) stands still between
    most rows, so it measures no step: no step time, and a note says why."""
    rows = [(10 * (i + 1), loss_at(i / 10), 0.0025 * (i + 1)) for i in range(200)]
    for name, digits in (("fine", 4), ("coarse", 1)):
        folder = tmp_path / name
        folder.mkdir()
        lines = ["step,loss,elapsed_hours"] + [f"{s},{v},{h:.{digits}f}" for s, v, h in rows]
        (folder / "metrics.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    fine = importers.detect(tmp_path / "fine").load(tmp_path / "fine")
    assert fine.train["step_time_sec"].dropna().median() == pytest.approx(0.9, rel=1e-3)
    coarse = importers.detect(tmp_path / "coarse").load(tmp_path / "coarse")
    assert coarse.train["step_time_sec"].isna().all()
    assert any("'elapsed_hours' stood still between" in n for n in coarse.notes)


# ------------------------------------------------------------------ Keras


def test_keras_csvlogger_and_history_json(tmp_path: Path) -> None:
    header = "epoch,accuracy,learning_rate,loss,val_accuracy,val_loss"
    rows = [f"{e},0.5,0.001,{loss_at(e)},0.4,{loss_at(e) + 0.3}" for e in range(20)]
    rows[7] = "7,0.5,0.001,nan,0.4,nan"
    csv_file = tmp_path / "training.log"
    csv_file.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    assert detect(csv_file) == "keras"
    run = keras_log.load(csv_file)
    assert run.train["step"].tolist() == list(range(1, 21))  # epochs completed
    assert math.isnan(losses(run)[7]) and len(run.evals) == 20
    assert any("each row is an epoch" in n for n in run.notes)
    # so the checks judge epochs as epochs (an epoch mean's jump, a slow epoch), as for every per-epoch log
    assert run.config["rows_are"] == "epoch"
    semicolons = tmp_path / "semi" / "log.csv"
    semicolons.parent.mkdir()
    semicolons.write_text("my run\n" + "\n".join([header, *rows]).replace(",", ";") + "\n", encoding="utf-8")
    assert keras_log.load(semicolons.parent).train["step"].tolist() == list(range(1, 21))
    history = tmp_path / "hist" / "history.json"
    history.parent.mkdir()
    history.write_text(json.dumps({"loss": [3.0, 2.0, 1.5], "val_loss": [3.1, 2.2, 1.9], "lr": [1e-3] * 3}))
    assert detect(history) == "keras"
    from_json = keras_log.load(history)
    assert losses(from_json) == [3.0, 2.0, 1.5] and from_json.evals["val_loss"].tolist() == [3.1, 2.2, 1.9]
    assert from_json.config["rows_are"] == "epoch"


def test_a_csvlogger_file_written_with_decimal_commas(tmp_path: Path) -> None:
    # exported through a European locale: 'epoch;loss;val_loss' then '0;1,6667;1,8333'. A comma with
    # digits after it that are no group of three is a decimal comma, and in such a file so is every
    # comma (its '1,218' is 1.218); a value read as 16667 would be a silent 10,000x error
    values = [1.6667, 1.218, 0.4216, 0.3, 0.25, 0.2]
    rows = [f"{e};{v};{v + 0.1:.4f}".replace(".", ",") for e, v in enumerate(values)]
    path = tmp_path / "history.csv"
    path.write_text("\n".join(["epoch;loss;val_loss", *rows]) + "\n", encoding="utf-8")
    run = keras_log.load(path)
    assert losses(run) == values
    assert run.evals["val_loss"].tolist() == [round(v + 0.1, 4) for v in values]
    assert any("decimal commas" in note for note in run.notes)
    # thousands separators stay: OLMo's '8,388,608', a lone '1,218' in a file of no decimal commas
    assert (metric_frames.number("8,388,608"), metric_frames.number("1,218")) == (8388608.0, 1218.0)
    assert (metric_frames.number("0,4216"), metric_frames.number("12,5")) == (0.4216, 12.5)


def test_a_per_batch_table_with_an_epoch_column_is_no_csvlogger(tmp_path: Path) -> None:
    """'epoch,batch,loss': the batch starts again each epoch (CSVLogger never writes a batch
    counter): read as a table, step = epoch x 14 + batch, no restart at each epoch."""
    rows = [f"{e},{b},{loss_at(e * 14 + b)}" for e in range(5) for b in range(14)]
    table = tmp_path / "training_log.csv"
    table.write_text("epoch,batch,loss\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert detect(table) != "keras"
    run = importers.detect(table).load(table)
    assert run.train["step"].tolist() == list(range(70))
    assert any("starts again each 'epoch'" in n for n in run.notes)
    # appended runs (the epoch goes back with the batch) keep their restart
    table.write_text("epoch,batch,loss\n" + "\n".join(rows + rows[:14]) + "\n", encoding="utf-8")
    again = importers.detect(table).load(table)
    assert again.train["step"].tolist()[-14:] == list(range(14))


# ------------------------------------------------------------------ YOLO results.txt


def yolo_line(epoch: int, last: int, total: float, val_terms: tuple[float, float, float]) -> str:
    # train.py's '%10s' * 2 + '%10.4g' * 13: epoch/last, gpu_mem, box obj cls total, targets,
    # img_size, P R mAP@.5 mAP@.5:.95, val box obj cls
    cells = [
        f"{epoch}/{last}",
        "3.97G",
        total * 0.6,
        total * 0.15,
        total * 0.25,
        total,
        193,
        640,
        0.02,
        0.02,
        0.002,
        0.0004,
        *val_terms,
    ]
    return "".join(f"{c:>10}" if isinstance(c, str) else f"{c:10.4g}" for c in cells)


def test_yolo_results_txt_total_and_summed_validation_terms(tmp_path: Path) -> None:
    run_dir = tmp_path / "exp"
    run_dir.mkdir()
    lines = [yolo_line(e, 99, round(0.14 - 0.001 * e, 4), (0.1, 0.03, 0.02)) for e in range(30)]
    (run_dir / "results.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (run_dir / "hyp.yaml").write_text("lr0: 0.01\n", encoding="utf-8")
    assert detect(run_dir) == "yolo_results_txt"
    run = yolo_results.load(run_dir)
    assert run.train["step"].tolist() == list(range(1, 31))  # epochs completed
    assert losses(run)[0] == pytest.approx(0.14) and losses(run)[-1] == pytest.approx(0.111)
    assert run.evals["val_loss"].tolist() == pytest.approx([0.15] * 30)  # box + obj + cls
    assert run.evals["val_map50"].tolist() == pytest.approx([0.002] * 30)  # mAP@.5, not @.5:.95
    assert run.config["total_steps"] == 100  # 'i/99': epochs 0..99, the log stopped at 30
    assert any("val box + val obj + val cls" in n for n in run.notes)
    # a line of another shape names its line
    (run_dir / "results.txt").write_text(
        "\n".join([*lines[:3], "0/99 3.97G 0.1 broken"]) + "\n", encoding="utf-8"
    )
    with pytest.raises(RunImportError, match="line 4"):
        yolo_results.load(run_dir)
    # a whitespace table of another width is not this format
    other = tmp_path / "other.txt"
    other.write_text("\n".join("1/10 0.5 0.4" for _ in range(3)) + "\n", encoding="utf-8")
    assert not yolo_results.sniff(other)


def yolo_console_rows(epoch: str, box: float, terms: tuple[float, ...]) -> list[str]:
    """An epoch's progress rows as Ultralytics prints them: a redraw at 0% and the final 100% row."""
    cells = " ".join(f"{t:10.4g}" for t in terms)
    return [
        f"{epoch:>11}      2.29G {box + 0.2:10.4g} {cells}         29        640:   0%|          | 4/1426",
        f"{epoch:>11}      2.29G {box:10.4g} {cells}         21        640: 100%|##########| 1426/1426",
        "        Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|#| 246/246",
        "                   all       7866       9060      0.718      0.941      0.763      0.604",
    ]


def test_ultralytics_console_table_one_row_per_epoch(tmp_path: Path) -> None:
    header = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size"
    lines = ["Ultralytics YOLOv8.2.79 Python-3.10.12 torch-2.3.1+cu121", "Starting training for 30 epochs..."]
    for epoch in range(1, 21):
        rows = yolo_console_rows(f"{epoch}/30", round(1.3 - 0.02 * epoch, 4), (0.9, 0.85))
        # the first epochs' header was drawn over by the bar (a console capture loses it)
        lines += (["", header] if epoch > 2 else []) + rows
    lines[-4] = lines[-4] + "\r" + lines[-3]  # a redraw on the same line, carriage return between
    log = tmp_path / "nohup.out"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert detect(log) == "ultralytics_console"
    run = yolo_console.load(log)
    assert run.train["step"].tolist() == list(range(1, 21))  # counting from 1: step = epoch
    # box_loss of each epoch's 100% row
    assert losses(run)[0] == pytest.approx(1.28) and losses(run)[-1] == pytest.approx(0.9)
    assert run.config["total_steps"] == 30  # the log stopped at 20 of 30
    assert run.evals.empty  # the validation table has no loss
    assert any("of the terms box_loss, cls_loss, dfl_loss printed" in n for n in run.notes)
    # YOLOv5 counts from 0 ('0/299'); a printed total is the loss
    v5_header = "      Epoch   gpu_mem       box       obj       cls     total    labels  img_size"
    v5 = [v5_header]
    for epoch in range(10):
        total = 0.18 - 0.001 * epoch
        v5 += [f"{epoch}/299     3.97G    0.1    0.05    0.03    {total:.4f}    25    640: 100%|#| 50/50"]
    log.write_text("\n".join(v5) + "\n", encoding="utf-8")
    run = yolo_console.load(log)
    assert run.train["step"].tolist() == list(range(1, 11)) and run.config["total_steps"] == 300
    assert losses(run)[0] == pytest.approx(0.18)
    # a table of other columns is not this format
    log.write_text("Epoch loss acc\n1/10 0.5 0.4\n2/10 0.4 0.5\n", encoding="utf-8")
    assert not yolo_console.sniff(log)
    # a W&B run folder without its history, whose console printed this table, reads the table
    # (100 epochs), not the summary's final values (one row)
    files = tmp_path / "run-20240820_140021-kdl8giu6" / "files"
    files.mkdir(parents=True)
    (files / "output.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (files / "config.yaml").write_text("epochs:\n  value: 30\n", encoding="utf-8")
    (files / "wandb-summary.json").write_text('{"train/box_loss": 0.9, "_step": 20}', encoding="utf-8")
    assert len(importers.load_run(files.parent).train) == 20


# ------------------------------------------------------------------ torchtune


def test_torchtune_disk_logger_lines(tmp_path: Path) -> None:
    lines = ["INFO:torchtune.utils._logging:Running LoRAFinetuneRecipeSingleDevice with resolved config:"]
    lines += [
        f"Step {s} | loss:{loss_at(s)} lr:0.0003 tokens_per_second_per_gpu:1500.2 grad_norm:0.9 "
        "peak_memory_alloc:4.5"
        for s in range(1, 31)
    ]
    lines[10] = "Step 10 | loss:nan lr:0.0003 tokens_per_second_per_gpu:1500.2 grad_norm:nan"
    log = tmp_path / "logs" / "log_1717000000.txt"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert detect(log.parent) == "torchtune"
    run = torchtune_log.load(log.parent)
    assert len(run.train) == 30 and math.isnan(losses(run)[9])
    assert run.config["grad_norm_measured"] == "before_clipping"
    assert run.train["grad_norm"].astype(str).iloc[9] == "nan"


# ------------------------------------------------------------------ fairseq


FAIRSEQ_LINES = [
    "2021-03-08 12:29:51 | INFO | fairseq_cli.train | Namespace(arch='transformer', clip_norm=0.1, "
    "lr=[0.0005], lr_scheduler='inverse_sqrt', max_update=1000, warmup_updates=400)",
    *[
        f'2021-03-08 12:{30 + u // 100:02d}:00 | INFO | train_inner | {{"epoch": 1, "update": 0.{u}, '
        f'"loss": "{loss_at(u // 100) / math.log(2):.3f}", "ppl": "9.1", "num_updates": "{u}", '
        '"lr": "0.0001", '
        f'"gnorm": "1.25", "clip": "{100 if u < 300 else 0}", "loss_scale": "{64 if u < 500 else 32}", '
        f'"train_wall": "{u // 10}", "wall": "{u // 5}"}}'
        for u in range(100, 1001, 100)
    ],
]


def test_fairseq_json_stats_bits_clip_and_overflows(tmp_path: Path) -> None:
    lines = list(FAIRSEQ_LINES)
    lines.insert(
        5,
        "2021-03-08 12:34:00 | INFO | fairseq.trainer | NOTE: gradient overflow detected, "
        "ignoring gradient, setting loss scale to: 32.0",
    )
    lines.append(
        '2021-03-08 12:41:00 | INFO | valid | {"epoch": 1, "valid_loss": "3.5", "valid_nll_loss": "3.4", '
        '"valid_num_updates": "1000", "valid_best_loss": "3.5"}'
    )
    lines.append(
        '2021-03-08 12:41:01 | INFO | train | {"epoch": 1, "train_loss": "4.0", "train_num_updates": "1000"}'
    )
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert detect(log) == "fairseq"
    run = fairseq_log.load(log)
    assert len(run.train) == 10  # the epoch-average train_ line is not a second series
    assert losses(run)[0] == pytest.approx(
        round(loss_at(1) / math.log(2), 3) * math.log(2), rel=1e-6
    )  # bits -> nats
    assert run.evals["val_loss"].iloc[0] == pytest.approx(3.5 * math.log(2))
    assert run.config["grad_clip_norm"] == 0.1 and run.config["grad_norm_measured"] == "before_clipping"
    assert run.config["total_steps"] == 1000 and run.schedule["type"] == "inverse_sqrt"
    assert [e for e in events(run) if "overflow" in e] == [
        "fp16 gradient overflow: update skipped, loss scale reduced to 32.0"
    ]  # the loss-scale drop is not counted a second time
    assert any("clipping fired in 2 of 10" in n for n in run.notes)
    assert run.train["step_time_sec"].dropna().iloc[-1] == pytest.approx(0.2)  # wall deltas / 100 updates


def test_fairseq_loss_scale_drop_is_the_event_without_overflow_lines(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(FAIRSEQ_LINES) + "\n", encoding="utf-8")
    assert [e for e in events(fairseq_log.load(log)) if "loss scale dropped" in e]


# ------------------------------------------------------------------ OLMo / Composer / DeepSpeed


def test_olmo_blocks_step_skipped_and_config(tmp_path: Path) -> None:
    lines = [
        "2025-01-01 00:00:00.000\thost:0\ttrain:98\tINFO\tTrainConfig(run_name='x', "
        "optimizer=OptimizerConfig(name='adamw', learning_rate=0.0004, weight_decay=0.1), "
        "scheduler=SchedulerConfig(name='cosine_with_warmup', "
        "units='steps', t_warmup=10, t_max=None, alpha_f=0.1), max_duration='40', max_grad_norm=1.0, "
        "eval_interval=20, save_interval=20)"
    ]
    for step in range(1, 41):
        lines.append(
            f"2025-01-01 00:{step // 60:02d}:{step % 60:02d}.000\thost:0\tolmo.train:979\tINFO\t"
            f"[step={step}/40,epoch=0]"
        )
        lines += [
            f"    optim/total_grad_norm={0.9 if step != 25 else 7.5}",
            f"    train/CrossEntropyLoss={loss_at(step):.4f}",
            "    throughput/total_tokens=8,388,608",
            f"    optim/step skipped={1.0 if step == 25 else 0.0}",
        ]
        if step % 20 == 0:
            lines.append(f"    eval/c4_en-validation/CrossEntropyLoss={loss_at(step) + 0.1:.4f}")
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert detect(log) == "trainer_stdout"
    run = trainer_stdout.load(log)
    assert len(run.train) == 40 and len(run.evals) == 2
    assert run.schedule == {
        "type": "warmup_cosine",
        "peak_lr": 0.0004,
        "min_lr": pytest.approx(4e-5),
        "warmup_steps": 10,
        "decay_steps": 40,
    }
    assert run.config["grad_clip_norm"] == 1.0 and run.config["total_steps"] == 40
    assert [e for e in events(run) if "skipped" in e] == [
        "optimizer step skipped (optim/step skipped=1): overflow or non-finite update"
    ]
    assert run.train["step_time_sec"].dropna().iloc[-1] == pytest.approx(1.0)  # header time stamps


def test_composer_blocks_and_deepspeed_counters(tmp_path: Path) -> None:
    composer = ["[batch=1/30]:", "\t Train time/batch: 0", f"\t Train loss/train/total: {loss_at(1)}"]
    for batch in range(2, 31):
        composer += [
            f"[epoch=1][batch={batch}/30]:",
            f"\t Train loss/train/total: {loss_at(batch)}",
            "\t Train lr-DecoupledAdamW/group0: 0.0006",
            "\t Train l2_norm/grad/global: 0.4",
        ]
    composer += ["[eval][batch=30/30]:", "\t Eval metrics/eval/LanguageCrossEntropy: 2.9"]
    log = tmp_path / "composer" / "console.log"
    log.parent.mkdir()
    log.write_text("\n".join(composer) + "\n", encoding="utf-8")
    run = trainer_stdout.load(log.parent)
    assert len(run.train) == 30 and run.evals["val_loss"].tolist() == [2.9]
    assert run.train["learning_rate"].iloc[-1] == pytest.approx(6e-4) and run.config["total_steps"] == 30
    deepspeed = []
    for step in range(10, 101, 10):
        skipped = 0 if step < 50 else 2
        deepspeed.append(
            f"[2024-01-01 00:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, "
            f"skipped={skipped}, lr=[0.0001, 0.0001], mom=[(0.9, 0.999)]"
        )
        deepspeed.append(
            f"steps: {step} loss: {loss_at(step // 10):.4f} iter time (s): 0.512 samples/sec: 62.5"
        )
    ds_log = tmp_path / "ds.out"
    ds_log.write_text("\n".join(deepspeed) + "\n", encoding="utf-8")
    assert detect(ds_log) == "trainer_stdout"
    ds_run = trainer_stdout.load(ds_log)
    assert len(ds_run.train) == 10 and ds_run.train["learning_rate"].iloc[0] == pytest.approx(1e-4)
    assert ds_run.train["step_time_sec"].iloc[0] == pytest.approx(0.512)
    assert [e for e in events(ds_run) if "DeepSpeed skipped" in e] == [
        "DeepSpeed skipped 2 step(s) (fp16 overflow; 2 so far)"
    ]


# ------------------------------------------------------------------ registry, end to end


def test_help_lists_the_new_formats() -> None:
    result = subprocess.run(
        [*run_diagnosis("diagnose"), "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for fmt in NEW_FORMATS:
        assert f"  {fmt} " in result.stdout


def test_a_store_of_two_runs_is_diagnosed_end_to_end(tmp_path: Path) -> None:
    store = mlflow_db(tmp_path / "mlflow.db")
    out = tmp_path / "out"
    result = subprocess.run(
        [*run_diagnosis("diagnose"), str(store), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    findings = {
        run: json.loads((out / "runs" / run / "findings.json").read_text(encoding="utf-8"))
        for run in ("healthy", "diverged")
    }
    nan = [f for f in findings["diverged"] if f["category"] == "nan_loss"]
    assert nan and nan[0]["severity"] == "critical"  # NaN to the end: not a "zero loss"
    assert not any(f["category"] in ("nan_loss", "no_learning") for f in findings["healthy"])
    assert not any(f["finding_id"] == "no_learning:zero_loss" for f in findings["diverged"])
    assert "since previous build" in (out / "index.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------ real public files


def corpus_cases() -> dict[str, dict[str, Any]]:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


@pytest.mark.real_logs
@pytest.mark.skipif(
    not (CORPUS / "expected.json").is_file(), reason=f"formats corpus not materialized at {CORPUS}"
)
def test_real_public_files_are_diagnosed_end_to_end(tmp_path: Path) -> None:
    """Every case of corpus/formats.json, built together: exit 0, a report per run, the logged
    loss rows all read, and none of the key's false alarms at medium or above."""
    cases = corpus_cases()
    targets = [CORPUS / name for name in sorted(cases)]  # each case folder is one run, named by it
    out = tmp_path / "out"
    result = subprocess.run(
        [*run_diagnosis("diagnose"), *map(str, targets), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    reports = sorted(p.parent.name for p in (out / "runs").glob("*/findings.json"))
    assert len(reports) == len(cases), reports
    for run_dir in (out / "warehouse").iterdir():
        case = cases[run_dir.name]
        train = pd.read_csv(next(run_dir.glob("*train_log.csv")))
        assert len(train) == case["train_loss"]["n"], run_dir.name
        findings = json.loads((out / "runs" / run_dir.name / "findings.json").read_text(encoding="utf-8"))
        false = [
            f["finding_id"]
            for f in findings
            if f["category"] in case["must_not"] and f["severity"] in SERIOUS
        ]
        assert not false, (run_dir.name, false)


def test_histories_written_across_are_one_run_a_row(tmp_path: Path) -> None:
    """pandas' DataFrame of per-fold Keras histories saved with to_csv: one row a fold, one column an
    epoch (the header 1..N), one file a metric (train_losses.csv, val_losses.csv); a fold that stopped
    early leaves its last cells empty. Each row is a run (one report each); one row is one run."""
    folds = {0: 30, 1: 30, 2: 24}  # fold 2 stopped early
    header = "," + ",".join(str(e) for e in range(1, 31))
    for name, shift in (("train_losses", 0.0), ("val_losses", 0.2), ("train_accuracies", None)):
        lines = [header]
        for fold, epochs in folds.items():
            cells = [
                f"{loss_at(e) + fold * 0.01 + shift:.4f}" if shift is not None else f"{0.5 + e / 100:.3f}"
                for e in range(1, epochs + 1)
            ]
            lines.append(",".join([str(fold), *cells, *[""] * (30 - epochs)]))
        (tmp_path / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    runs = multi_run.find_runs(tmp_path)
    assert [r.name for r in runs] == ["row 0", "row 1", "row 2"]
    run = runs[2].load()
    assert list(run.train["step"]) == list(range(1, 25)) and run.config["rows_are"] == "epoch"
    assert run.train["loss"].iloc[0] == pytest.approx(loss_at(1) + 0.02, abs=1e-4)
    assert run.evals["val_loss"].iloc[-1] == pytest.approx(loss_at(24) + 0.02 + 0.2, abs=1e-4)
    with pytest.raises(importers.RunImportError, match="holds 3 runs"):
        importers.by_format("runs_across").load(tmp_path)
    # one fold is one run; a header that skips an epoch, or text between the numbers, is no such table
    one = tmp_path / "one"
    one.mkdir()
    (one / "train_losses.csv").write_text(f"{header}\n0,{','.join('0.5' for _ in range(30))}\n")
    assert importers.by_format("runs_across").load(one).run_name == "one"
    (one / "train_losses.csv").write_text(",1,2,4\n0,0.5,0.4,0.3\n")
    assert not importers.by_format("runs_across").sniff(one)
    (one / "train_losses.csv").write_text(",1,2,3\n0,0.5,n/a,0.3\n")
    assert not importers.by_format("runs_across").sniff(one)
