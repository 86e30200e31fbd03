"""The DVCLive importer on folders the tests write in each layout DVCLive's writer has produced.

* DVCLive >= 1.0: ``dvclive/plots/metrics/<name>.tsv`` (header ``step<TAB><last part>`` since
  2.0, ``timestamp`` only with ``log_metric(..., timestamp=True)``), ``dvclive/metrics.json``,
  ``dvclive/params.yaml``; a NaN written as the text ``nan`` (2.15.1 on);
* 0.5 - 0.12: ``dvclive/scalars/<name>.tsv`` (``timestamp step <full name>``) and ``dvclive.json``;
* 0.0 - 0.4: ``dvclive/<name>.tsv`` and ``dvclive.json``;
* the Hugging Face callback (one DVCLive step per ``on_log`` call), whose trainer steps are
  recovered from the TrainingArguments in ``params.yaml``.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml

from run_diagnosis import importers
from run_diagnosis.importers import RunImportError, dvclive_log
from support.commands import run_diagnosis
from support.paths import REPO


def write_history(
    folder: Path,
    name: str,
    rows: Iterable[tuple[int, object]],
    column: str | None = None,
    start_ms: int | None = None,
) -> None:
    """One history file as DVCLive writes it (``timestamp`` first when start_ms is given, 10 s apart)."""
    path = folder / f"{name}.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    column = column or name.rsplit("/", 1)[-1]
    header = ["timestamp", "step", column] if start_ms is not None else ["step", column]
    lines = ["\t".join(header)]
    for step, value in rows:
        cells = [str(start_ms + 10_000 * step)] if start_ms is not None else []
        lines.append("\t".join([*cells, str(step), str(value)]))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def loss_at(step: int) -> float:
    return round(1.0 + 4.0 * math.exp(-step / 20), 4)


def lightning_run(root: Path) -> Path:
    """DVCLive 3.x through the Lightning logger: DVCLive's step is the trainer's global step."""
    live = root / "dvclive"
    metrics = live / "plots" / "metrics"
    steps = range(0, 100, 10)
    write_history(metrics, "train/step/loss", [(s, "nan" if s == 90 else loss_at(s)) for s in steps])
    write_history(metrics, "val/loss", [(s, loss_at(s) + 0.2) for s in (49, 99)])
    write_history(metrics, "lr-AdamW", [(s, 3e-4) for s in steps])
    write_history(metrics, "dice", [(s, 0.5) for s in steps])
    write_history(metrics, "grad_2.0_norm_total", [(s, 2.5) for s in steps])  # Lightning's grad_norm()
    (live / "metrics.json").write_text(
        json.dumps({"step": 99, "train": {"step": {"loss": "nan"}}, "test": {"acc": 0.8}}), encoding="utf-8"
    )
    (live / "params.yaml").write_text(
        yaml.safe_dump(
            {
                "model": {"lr": 3e-4, "vocab_size": 1000},
                "trainer": {"max_steps": 100, "gradient_clip_val": 1.0},
            }
        ),
        encoding="utf-8",
    )
    return root


def test_dvclive_3x_layout_nested_names_nan_params_and_summary(tmp_path: Path) -> None:
    project = lightning_run(tmp_path)
    assert importers.detect(project).FORMAT == "dvclive"
    run = importers.load_run(project)
    assert list(run.train["step"]) == list(range(0, 100, 10))
    assert math.isnan(float(run.train["loss"].iloc[-1]))  # the text "nan" is a NaN loss, kept
    assert float(run.train["loss"].iloc[0]) == loss_at(0)
    assert list(run.evals["step"]) == [49, 99]
    assert set(run.train["learning_rate"].astype(float)) == {3e-4}
    assert run.schedule["peak_lr"] == 3e-4
    assert run.config["total_steps"] == 100
    assert run.config["grad_clip_norm"] == 1.0
    assert run.config["vocab_size"] == 1000
    assert run.config["grad_norm_measured"] == "before_clipping"  # grad_norm() runs before Lightning clips
    notes = "\n".join(run.notes)
    assert "not understood: dice" in notes
    assert "test/acc=0.8" in notes  # a summary value without history is named, not dropped
    assert "plots/metrics (DVCLive >= 1.0)" in notes


def test_dvclive_0x_scalars_and_oldest_layouts_read_full_name_columns_and_timestamps(tmp_path: Path) -> None:
    for layout in ("scalars", "flat"):
        root = tmp_path / layout / "dvclive"  # the DVCLive folder; its summary dvclive.json beside it
        history = root / "scalars" if layout == "scalars" else root
        for name in ("train/loss", "eval/loss"):
            offset = 0.1 if name == "eval/loss" else 0.0
            rows = [(s, loss_at(s) + offset) for s in range(8)]
            write_history(history, name, rows, column=name, start_ms=1_655_747_311_442)
        summary = {"step": 7, "train": {"loss": loss_at(7)}, "final_score": 0.9}
        (root.parent / "dvclive.json").write_text(json.dumps(summary), encoding="utf-8")
        assert importers.detect(root.parent).FORMAT == "dvclive", layout
        run = importers.load_run(root.parent)
        assert list(run.train["step"]) == list(range(8)), layout
        assert list(run.evals["val_loss"].astype(float)) == [loss_at(s) + 0.1 for s in range(8)], layout
        assert list(run.train["step_time_sec"].dropna().astype(float)) == [10.0] * 7, layout
        notes = "\n".join(run.notes)
        assert ("scalars (DVCLive 0.5 - 0.12)" if layout == "scalars" else "DVCLive 0.0 - 0.4") in notes
        assert "final_score=0.9" in notes, layout  # the summary beside the folder was read


def hf_run(root: Path) -> Path:
    """transformers' DVCLiveCallback: one DVCLive step per on_log call (a train log every 5 trainer
    steps, an evaluation every 10 after its train log, the run's mean loss once at the end)."""
    live = root / "dvclive"
    metrics = live / "plots" / "metrics"
    loss, evals, lr, norm, epoch, mean = [], [], [], [], [], []
    dv = 0
    for trainer_step in range(5, 45, 5):
        loss.append((dv, loss_at(trainer_step)))
        lr.append((dv, 1e-4 * trainer_step / 40))
        norm.append((dv, 1.5))
        epoch.append((dv, trainer_step / 40))
        dv += 1
        if trainer_step % 10 == 0:
            evals.append((dv, loss_at(trainer_step) + 0.3))
            epoch.append((dv, trainer_step / 40))
            dv += 1
    mean.append((dv, 2.0))
    write_history(metrics, "loss", loss)
    write_history(metrics, "eval/loss", evals)
    write_history(metrics, "learning_rate", lr)
    write_history(metrics, "grad_norm", norm)
    write_history(metrics, "epoch", epoch)
    write_history(metrics, "train/loss", mean)
    args = {
        "learning_rate": 1e-4,
        "lr_scheduler_type": "linear",
        "max_grad_norm": 1.0,
        "max_steps": 40,
        "warmup_steps": 0,
        "logging_strategy": "steps",
        "logging_steps": 5,
        "logging_first_step": False,
        "eval_strategy": "steps",
        "eval_steps": 10,
        "num_train_epochs": 1,
    }
    (live / "params.yaml").write_text(yaml.safe_dump(args), encoding="utf-8")
    (live / "metrics.json").write_text(json.dumps({"step": dv, "loss": loss[-1][1]}), encoding="utf-8")
    return root


def test_hf_callback_steps_are_recovered_from_the_training_arguments(tmp_path: Path) -> None:
    run = importers.load_run(hf_run(tmp_path))
    assert list(run.train["step"]) == list(range(5, 45, 5))
    assert list(run.evals["step"]) == [10, 20, 30, 40]
    # the per-log `loss`, not the run's mean `train/loss` logged once at the end
    assert list(run.train["loss"].astype(float)) == [loss_at(s) for s in range(5, 45, 5)]
    assert run.config["grad_norm_measured"] == "before_clipping"  # HF's grad_norm is pre-clip
    assert run.config["grad_clip_norm"] == 1.0
    assert run.schedule["type"] == "warmup_linear"  # the canonical name of HF's linear (warmup 0)
    assert "training row k at k x logging_steps 5, evaluation j at j x eval_steps 10" in "\n".join(run.notes)


def test_hf_callback_steps_stay_dvclive_counts_when_logging_is_by_epoch(tmp_path: Path) -> None:
    project = hf_run(tmp_path)
    params = project / "dvclive" / "params.yaml"
    args = yaml.safe_load(params.read_text(encoding="utf-8"))
    params.write_text(yaml.safe_dump({**args, "logging_strategy": "epoch"}), encoding="utf-8")
    run = importers.load_run(project)
    assert list(run.train["step"])[:3] == [0, 1, 3]  # DVCLive's own counter
    assert "not the trainer's step" in "\n".join(run.notes)
    params.unlink()  # an older DVCLive HF callback logged no params: the counter stays, and is named
    write_history(project / "dvclive" / "plots" / "metrics", "train/runtime", [(13, 60.0)])
    run = importers.load_run(project)
    assert list(run.train["step"])[:3] == [0, 1, 3]
    assert "the params hold no TrainingArguments: the step is DVCLive's count" in "\n".join(run.notes)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("step\tloss\n0\t2.0\n1.5\t1.9\n", "loss.tsv, line 3, column 'step': '1.5' is not a step number"),
        ("step\tloss\n0\t2.0\n1\t1.9\t7\n", "loss.tsv: not readable as a DVCLive history"),
        ("timestamp\tstep\tloss\nsoon\t0\t2.0\n", "loss.tsv, line 2, column 'timestamp'"),
        ("epoch\tloss\n0\t2.0\n", "loss.tsv, line 1: expected the header 'step<TAB>loss'"),
    ],
)
def test_a_malformed_history_names_file_line_and_column(tmp_path: Path, content: str, expected: str) -> None:
    project = lightning_run(tmp_path)
    (project / "dvclive" / "plots" / "metrics" / "loss.tsv").write_text(content, encoding="utf-8")
    with pytest.raises(RunImportError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        dvclive_log.load(project)


def test_text_values_and_a_broken_summary_are_notes_not_silent(tmp_path: Path) -> None:
    project = lightning_run(tmp_path)
    write_history(project / "dvclive" / "plots" / "metrics", "stage", [(0, "warmup"), (10, "main")])
    (project / "dvclive" / "metrics.json").write_text('{"step": 99,', encoding="utf-8")
    notes = "\n".join(dvclive_log.load(project).notes)
    assert "stage.tsv (stage): 2 value(s) are text, not numbers (first at line 2): left out" in notes
    assert "metrics.json: not valid JSON" in notes


def test_two_dvclive_folders_are_refused_and_other_tsvs_are_not_dvclive(tmp_path: Path) -> None:
    lightning_run(tmp_path / "one")
    lightning_run(tmp_path / "two")
    (tmp_path / "both").mkdir()
    for name in ("one", "two"):
        (tmp_path / name / "dvclive").rename(tmp_path / "both" / f"live_{name}")
    with pytest.raises(RunImportError, match="holds 2 DVCLive folders"):
        dvclive_log.load(tmp_path / "both")
    other = tmp_path / "other"
    other.mkdir()
    (other / "table.tsv").write_text("id\tname\n1\ta\n", encoding="utf-8")
    (other / "steps.tsv").write_text("step\tloss\n0\t1.0\n", encoding="utf-8")
    assert not dvclive_log.sniff(other)  # TSVs outside a DVCLive folder layout are not taken


def test_a_dvclive_run_is_diagnosed_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = subprocess.run(
        [*run_diagnosis("diagnose"), str(hf_run(tmp_path / "run")), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    findings = json.loads(next(out.rglob("findings.json")).read_text(encoding="utf-8"))
    # grad_norm 1.5 above the clip 1.0 is HF's pre-clip norm: the step was clipped, no violation
    assert not [f for f in findings if f["category"] == "grad_clip_violation"]
