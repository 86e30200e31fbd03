"""The planned length a training script beside a log states (importers/script_settings.py): read
from the script's syntax (never run), used only when every script that names it agrees, and
turned into each format's plan (Lightning num_epochs, a Keras log's total_steps, a per-epoch
table's last step)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from run_diagnosis.importers import generic_log, keras_log, lightning_csv
from run_diagnosis.importers.script_settings import (
    PLANNED_EPOCH_KEYS,
    early_stopping,
    planned_epochs,
    script_settings,
    stops_early,
)


@pytest.mark.parametrize(
    ("script", "epochs"),
    [
        ("import pytorch_lightning as pl\ntrainer = pl.Trainer(max_epochs=35, log_every_n_steps=5)\n", 35),
        ("model.fit(x, y, epochs=50, batch_size=32, callbacks=[logger])\n", 50),
        ("EPOCHS = 100\nfor epoch in range(EPOCHS):\n    pass\n", 100),
        ("p = argparse.ArgumentParser()\np.add_argument('-e', '--num-epochs', type=int, default=20)\n", 20),
        ("flags.DEFINE_integer('max_epoch', 20, 'maximum training epochs')\n", 20),
        # a command-line option named in the singular is a setting too, never a loop's position
        ("parser.add_argument('-epoch', type=int, default=30)\n", 30),
        ("flags.DEFINE_integer('epoch', 25, 'training epochs')\n", 25),
        ("args = TrainingArguments(output_dir='out', num_train_epochs=3)\n", 3),
        ("def fit(self, loader, gpus=1, max_epochs=100):\n    pl.Trainer(max_epochs=max_epochs)\n", 100),
        # a whole number passed by position binds to the parameter of the one def of that name
        ("class M:\n    def train(self, epochs, batch_size):\n        pass\nM().train(200, 30)\n", 200),
        # a number passed by a name the script binds to it once
        ("target_epochs = 12\nmodel.fit(x, y, epochs=target_epochs, callbacks=[logger])\n", 12),
        # the bound of a loop over epochs, numbered from 0 or from 1, a number or a config field
        ("for epoch in range(40):\n    train_one_epoch()\n", 40),
        (
            "@dataclass\nclass Config:\n    pretrain_epochs: int = 50\ncfg = Config()\n"
            "for epoch in range(1, cfg.pretrain_epochs + 1):\n    pass\n",
            50,
        ),
    ],
)
def test_the_planned_epochs_a_script_states(tmp_path: Path, script: str, epochs: int) -> None:
    (tmp_path / "train.py").write_text(script)
    notes: list[str] = []
    planned = planned_epochs(tmp_path, notes, 1)
    assert planned is not None and planned[0] == epochs
    assert "train.py:" in planned[1] and not notes


def test_an_epoch_in_the_singular_outside_an_option_is_no_plan(tmp_path: Path) -> None:
    # a keyword or an assignment named 'epoch' is where a run is, not how long it is planned
    (tmp_path / "train.py").write_text("scheduler.step(epoch=5)\nepoch = 3\nsave(model, epoch=3)\n")
    assert planned_epochs(tmp_path, [], 1) is None


def test_a_script_is_parsed_never_run_and_disagreement_or_bad_syntax_gives_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    # a script that would leave a mark if it were executed
    (tmp_path / "a.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nEPOCHS = 30\n")
    assert planned_epochs(tmp_path, [], 1)[0] == 30 and not marker.exists()  # type: ignore[index]
    # another script planning another count: two stages, or a quick test beside the real run
    (tmp_path / "b.py").write_text("trainer.fit(model, epochs=1)\n")
    notes: list[str] = []
    assert planned_epochs(tmp_path, notes, 1) is None
    assert notes and "plan different epoch counts" in notes[0]
    (tmp_path / "b.py").write_text("def broken(:\n")  # does not parse: passed over
    assert planned_epochs(tmp_path, [], 1)[0] == 30  # type: ignore[index]
    # a setting named otherwise is no plan; flags and booleans are not counts
    (tmp_path / "a.py").write_text("batch_size = 32\nSHUFFLE = True\nlr = 3\n")
    assert planned_epochs(tmp_path, [], 1) is None
    assert {s.key for s in script_settings(tmp_path)} == {"batch_size", "lr"}
    # a positional number binds only to a function defined once in the script, never through *args
    (tmp_path / "a.py").write_text(
        "def train(epochs):\n    pass\ndef train(epochs, extra):\n    pass\ntrain(7)\n"
        "def run(epochs, size):\n    pass\nrun(*sizes)\nrange(12)\n"
    )
    assert planned_epochs(tmp_path, [], 1) is None
    assert "epochs" in PLANNED_EPOCH_KEYS
    # a plan the log already went past is another launch's (a command line over the default)
    (tmp_path / "a.py").write_text("parser.add_argument('--epochs', type=int, default=400)\n")
    notes: list[str] = []
    assert planned_epochs(tmp_path, notes, 634) is None and "not this run's plan" in notes[0]
    # two counts, one the log already went past (another loop's: a quantizer's list of 35): the other plans
    (tmp_path / "a.py").write_text("MAX_EPOCHS = 35\n")
    (tmp_path / "b.py").write_text("def fit(self, loader, max_epochs=100):\n    pass\n")
    notes = []
    assert planned_epochs(tmp_path, notes, 55)[0] == 100  # type: ignore[index]
    assert "MAX_EPOCHS=35" in notes[0] and "not this run's plan, the log holds 55 epochs" in notes[0]
    # the log short of both: the assignment wins, a parameter default being the value only when no
    # caller passes another
    assert planned_epochs(tmp_path, [], 20)[0] == 35  # type: ignore[index]
    (tmp_path / "b.py").unlink()
    # a script with early stopping: the plan stands, and a note says a shorter run may be by design
    script = "cb = EarlyStopping(monitor='val_loss', patience=5)\nmodel.fit(x, epochs=80)\n"
    (tmp_path / "a.py").write_text(script)
    notes: list[str] = []
    assert planned_epochs(tmp_path, notes, 12)[0] == 80  # type: ignore[index]
    assert any("early stopping" in note for note in notes)


def test_a_name_is_read_as_its_number_only_where_the_scripts_bind_it_to_one(tmp_path: Path) -> None:
    # bound in the config module the training script imports
    (tmp_path / "config.py").write_text("TOTAL = 25\n")
    (tmp_path / "train.py").write_text("from config import *\ntrainer = pl.Trainer(max_epochs=TOTAL)\n")
    planned = planned_epochs(tmp_path, [], 1)
    assert planned is not None and planned[0] == 25 and "TOTAL assigned at config.py:1" in planned[1]
    (tmp_path / "config.py").unlink()
    # bound twice to two numbers, bound by a loop, or a function's parameter: no number
    for script in (
        "TOTAL = 25\nTOTAL = 30\ntrainer = pl.Trainer(max_epochs=TOTAL)\n",
        "for TOTAL in (5, 10):\n    trainer = pl.Trainer(max_epochs=TOTAL)\n",
        "TOTAL = 25\ndef fit(TOTAL):\n    pl.Trainer(max_epochs=TOTAL)\n",
        "TOTAL = 25\nTOTAL += 5\ntrainer = pl.Trainer(max_epochs=TOTAL)\n",
    ):
        (tmp_path / "train.py").write_text(script)
        assert planned_epochs(tmp_path, [], 1) is None, script
    # a loop over epochs from a resumed start, or over something else, states no count
    for script in ("for epoch in range(start_epoch, 30):\n    pass\n", "for batch in range(30):\n    pass\n"):
        (tmp_path / "train.py").write_text(script)
        assert planned_epochs(tmp_path, [], 1) is None, script


def notebook(cells: list[tuple[str, str]]) -> str:
    """A Jupyter notebook's JSON of (cell type, source) cells, as nbformat 4 writes it."""
    return json.dumps(
        {
            "cells": [
                {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True)}
                | ({"outputs": [], "execution_count": None} if kind == "code" else {})
                for kind, text in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def test_a_notebooks_code_cells_are_scripts(tmp_path: Path) -> None:
    # the plan in a notebook's code cell, beside magics and shell escapes that are no Python and a
    # Markdown cell that names another number: read from the code, the cell named in the note
    cells = [
        ("markdown", "We train for epochs = 10 first, then more."),
        ("code", "%matplotlib inline\n!pip install lightning\nimport lightning as L"),
        ("code", "trainer = L.Trainer(\n    max_epochs=50,\n    accelerator='gpu',\n)\ntrainer.fit(model)"),
    ]
    (tmp_path / "train.ipynb").write_text(notebook(cells))
    notes: list[str] = []
    planned = planned_epochs(tmp_path, notes, 2)
    assert planned is not None and planned[0] == 50
    assert "train.ipynb cell 3:1" in planned[1]  # the line of the call, in its cell
    # two cells planning two counts (a quick test, then the run) say nothing while the log has not
    # passed either; once it holds 2 epochs, the quick test's 1 is not its plan; nor does a file that
    # is not a notebook's JSON
    cells.append(("code", "trainer = L.Trainer(max_epochs=1)"))
    (tmp_path / "train.ipynb").write_text(notebook(cells))
    assert planned_epochs(tmp_path, [], 1) is None
    assert planned_epochs(tmp_path, [], 2)[0] == 50  # type: ignore[index]
    (tmp_path / "train.ipynb").write_text("max_epochs = 50\n")
    assert planned_epochs(tmp_path, [], 2) is None


def lightning_log(folder: Path, epochs_logged: int, steps_per_epoch: int = 10) -> Path:
    lines = ["epoch,step,train_loss,val_loss"]
    for epoch in range(epochs_logged):
        for i in range(steps_per_epoch):
            step = epoch * steps_per_epoch + i
            lines.append(f"{epoch},{step},{2.0 - 0.01 * step:.4f},")
        lines.append(f"{epoch},{(epoch + 1) * steps_per_epoch - 1},,{1.9 - 0.02 * epoch:.4f}")
    (folder / "metrics.csv").write_text("\n".join(lines) + "\n")
    (folder / "hparams.yaml").write_text("lr: 0.001\n")
    return folder


def test_a_lightning_log_takes_its_plan_from_the_trainer_call_beside_it(tmp_path: Path) -> None:
    lightning_log(tmp_path, epochs_logged=4)
    (tmp_path / "train.py").write_text("trainer = pl.Trainer(max_epochs=35)\ntrainer.fit(model)\n")
    run = lightning_csv.load(tmp_path)
    assert run.config["num_epochs"] == 35
    assert any("max_epochs=35 in the script train.py:1" in note for note in run.notes)
    # the plan a config file states wins; the script is read only when none does
    (tmp_path / "hparams.yaml").write_text("lr: 0.001\nmax_epochs: 4\n")
    assert lightning_csv.load(tmp_path).config["num_epochs"] == 4


def test_a_log_sparser_than_its_epochs_gives_no_epoch_length_from_its_rows(tmp_path: Path) -> None:
    # Lightning's default log_every_n_steps=50 over 2-step epochs: the rows hold epochs 24, 49, 74 ..
    # at steps 49, 99, 149 ..; a row is not where its epoch ended, so 50 steps an epoch is no length
    # (x 2000 planned epochs it made 100,000 planned steps of a run that had finished at 4,000)
    rows = [f"{0.8 - 0.0001 * s:.5f},{(s + 1) // 2 - 1},{s}" for s in range(49, 4000, 50)]
    (tmp_path / "metrics.csv").write_text("train_loss,epoch,step\n" + "\n".join(rows) + "\n")
    (tmp_path / "train.py").write_text("trainer = L.Trainer(max_epochs=2000)\n")
    run = lightning_csv.load(tmp_path)
    assert run.config["num_epochs"] == 2000 and run.config["total_steps"] is None
    assert run.config["steps_per_epoch"] == 2


def test_a_keras_log_and_a_per_epoch_table_take_their_plan_from_the_script(tmp_path: Path) -> None:
    keras = tmp_path / "keras"
    keras.mkdir()
    rows = "\n".join(f"{e},{1.0 - 0.05 * e:.3f},{1.1 - 0.04 * e:.3f}" for e in range(8))
    (keras / "training_log.csv").write_text("epoch,loss,val_loss\n" + rows + "\n")
    (keras / "train.py").write_text("history = model.fit(x, y, epochs=50)\n")
    assert keras_log.load(keras / "training_log.csv").config["total_steps"] == 50
    table = tmp_path / "table"
    table.mkdir()
    rows = "\n".join(f"{e},{1.0 - 0.05 * e:.3f},{1.1 - 0.04 * e:.3f}" for e in range(1, 9))
    (table / "history.csv").write_text("epoch,train_loss,val_loss\n" + rows + "\n")
    (table / "config.py").write_text("epochs = 100\n")
    run = generic_log.load(table / "history.csv")
    assert run.config["total_steps"] == 100  # the counter starts at 1: epoch 100 is the last row
    # without the script: no plan
    (table / "config.py").unlink()
    assert generic_log.load(table / "history.csv").config.get("total_steps") is None


def test_a_step_log_numbered_by_epochs_ends_before_the_scripts_plan(tmp_path: Path) -> None:
    # 'iteration' counts epochs, 'step' restarts in each: three epochs logged of the 20 main.py plans
    lines = [
        f"2024-01-01 10:{e:02d}:{s:02d} INFO iteration:{e} step:{s * 10}/40, "
        f"NER loss:{3.0 - 0.1 * e - 0.01 * s:.4f}"
        for e in range(1, 4)
        for s in range(1, 5)
    ]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "main.py").write_text('flags.DEFINE_integer("max_epoch", 20, "maximum training epochs")\n')
    run = generic_log.load(tmp_path / "train.log")
    assert run.layout is not None and run.layout["train"]["epochs_logged"] == 3
    ends = [e for e in run.events["event"] if e.startswith("epochs unfinished: ")]
    assert ends == [
        "epochs unfinished: the log ends in epoch 3 of the 20 planned "
        "(max_epoch=20 in the script main.py:1 (flags.DEFINE_integer default))"
    ]
    # a plan the log reaches says nothing
    (tmp_path / "main.py").write_text('flags.DEFINE_integer("max_epoch", 3, "maximum training epochs")\n')
    assert not any(
        e.startswith("epochs unfinished") for e in generic_log.load(tmp_path / "train.log").events["event"]
    )


def test_the_logs_own_settings_dump_plans_before_a_script(tmp_path: Path) -> None:
    # an arguments dump before the first training row is the launched run's plan: it wins over
    # the script's default beside the log; settings printed after the rows start are not read
    header = ["Namespace(batch_size=32, epochs=30, lr=0.01)", "n_layers: 4"]
    rows = [
        f"Epoch {e} | train loss {1.0 - 0.05 * e:.3f} | val loss {1.1 - 0.04 * e:.3f}" for e in range(1, 6)
    ]
    (tmp_path / "train.log").write_text("\n".join([*header, *rows, "epochs: 99"]) + "\n")
    (tmp_path / "train.py").write_text("parser.add_argument('--epochs', type=int, default=100)\n")
    run = generic_log.load(tmp_path / "train.log")
    assert run.config["total_steps"] == 30
    assert any("epochs=30 at train.log:1 (the log's own settings)" in note for note in run.notes)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("training_hyperparameters.json", '{"batch_size": 64, "num_epochs": 50, "save_best": true}'),
        ("params.yaml", "train:\n  epochs: 50\n  lr: 0.001\n"),
    ],
)
def test_a_settings_file_saved_beside_the_log_plans_it(tmp_path: Path, name: str, text: str) -> None:
    """A JSON or YAML settings file the run saved beside its log states the plan at its top level or
    one level down, as a settings dump does; deeper (a scheduler's own settings), a value that is
    not a whole number (true, 50.0), or a file that is no mapping, it plans nothing."""
    rows = "\n".join(f"{e},{0.22 - 0.01 * e:.4f}" for e in range(11))
    (tmp_path / "train_metrics.csv").write_text("epoch,train_epoch_loss\n" + rows + "\n")
    (tmp_path / name).write_text(text)
    run = generic_log.load(tmp_path / "train_metrics.csv")
    assert run.config["total_steps"] == 49  # the counter starts at 0: epoch 49 is the last of 50
    assert any(f"{name} (a settings file beside the log" in note for note in run.notes)
    for unplanned in (
        '{"scheduler": {"cosine": {"num_epochs": 50}}}',
        '{"num_epochs": true, "epochs": 50.0}',
        '[{"num_epochs": 50}]',
    ):
        (tmp_path / name).unlink()
        (tmp_path / "settings.json").write_text(unplanned)
        assert generic_log.load(tmp_path / "train_metrics.csv").config.get("total_steps") is None
        name = "settings.json"


@pytest.mark.parametrize(
    ("script", "stops"),
    [
        ("cb = EarlyStopping(monitor='val_loss', patience=5)\n", True),
        ("if epochs_without_gain >= patience:\n    print('Early stopping')\n    break\n", True),
        ("patience = 10\nif bad > patience:\n    break\n", True),  # a loop's own patience
        # a plateau scheduler's patience lowers the LR and stops nothing
        ("sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=5)\n", False),
        ("reduce_lr = ReduceLROnPlateau(monitor='val_loss', patience=3)\n", False),
        ("model.fit(x, y, epochs=50)\n", False),
    ],
)
def test_early_stopping_is_said_or_a_patience_no_scheduler_takes(
    tmp_path: Path, script: str, stops: bool
) -> None:
    """The note on the plan and the config's early_stopping field read one predicate: a script that
    says it stops early, or counts a patience that no plateau scheduler on its line takes."""
    assert stops_early(script) == stops
    (tmp_path / "train.py").write_text(script + "model.fit(x, y, epochs=50)\n")
    notes: list[str] = []
    assert bool(early_stopping(tmp_path, notes)) == stops
    planned = planned_epochs(tmp_path, notes, 8)
    assert planned is not None and planned[0] == 50
    assert any("configures early stopping" in note for note in notes) == stops
