"""Whole-number settings a training script beside a log states: read from its syntax, never run.

A run's planned length is often written nowhere but in the script that launched it:
``pl.Trainer(max_epochs=35)``, ``model.fit(..., epochs=50)``, ``EPOCHS = 100`` in a ``config.py``,
``parser.add_argument("--epochs", type=int, default=20)``, absl's
``flags.DEFINE_integer("max_epoch", 20, ...)``, or ``model.train(200, 30)`` where the same script
defines ``def train(self, epochs, batch_size)`` (a whole number passed by position is the parameter
it binds to, when one function of that name is defined there). ``script_settings`` parses every
small ``*.py`` beside the log, and each code cell of a Jupyter notebook there, with :mod:`ast`
(nothing is imported or executed) and returns each whole-number literal so stated, with where it
was found. The caller decides which keys it wants (the importers' own key tables, e.g.
``num_epochs``) and uses a key only when every script names the same value: two different values
(a test call with ``epochs=1`` beside the real one, a script of another stage) say nothing.

A script states what its author meant at the time it was committed; the run may have been
launched with another value on the command line. So a plan the log already went past is not
used, and the notes name the script and line; what such a plan changes is run_ended_early (a low
finding) and the planned length the schedule checks compare against. A log's own settings dump
(``logged_settings``) is the launched run's and wins over the scripts.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from run_diagnosis.importers.reference_keys import side_documents
from run_diagnosis.run_files import EARLY_STOPPING_KEY

SCRIPT_SUFFIX = ".py"
NOTEBOOK_SUFFIX = ".ipynb"
SCRIPT_MAX_BYTES = 1_000_000
# a notebook holds its outputs (plots as base64) beside its code: a larger file is still read
NOTEBOOK_MAX_BYTES = 20_000_000
# an IPython line that is no Python: a magic (%matplotlib, %%time) or a shell escape (!pip install)
IPYTHON_LINE = re.compile(r"^\s*[%!]")


@dataclass(frozen=True)
class Setting:
    """One whole number a script states for a name."""

    key: str  # the name: a keyword argument, an assigned variable, an option or flag name
    value: int
    where: str  # '<script>:<line> (<how>)'
    # a function parameter's default: the value only when no caller passes another, so it counts
    # only where no other setting names the plan
    is_default: bool = False


# how _settings_of says a function parameter's default was found
PARAMETER_DEFAULT = "parameter default"
# a method's first parameter, which a call on an object or class binds itself
BOUND_FIRST_PARAMETERS = ("self", "cls")


def _int(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


class Constants:
    """The names the scripts beside a log bind to one whole number and to nothing else
    (``target_epochs = 12``, a dataclass field ``pretrain_epochs: int = 50``, ``EPOCHS = 30`` in a
    config.py the training script imports), so that a value passed by name
    (``epochs=target_epochs``, ``range(cfg.pretrain_epochs)``) reads as that number. A name bound
    to different numbers, or bound otherwise too (a loop variable, a function parameter, an
    augmented or computed assignment), in any of the scripts, is no constant."""

    def __init__(self, trees: list[tuple[str, ast.Module]]) -> None:
        values: dict[str, set[int | None]] = {}
        where: dict[str, str] = {}
        for script, tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Name):
                            values.setdefault(target.id, set()).add(_int(node.value))
                            where.setdefault(target.id, f"{script}:{node.lineno}")
        for node in (node for _, tree in trees for node in ast.walk(tree)):
            # any other binding makes the name's value depend on the path the code takes
            if isinstance(node, ast.arg):
                values.setdefault(node.arg, set()).add(None)
            elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor | ast.comprehension):
                for name in ast.walk(node.target):
                    if isinstance(name, ast.Name):
                        values.setdefault(name.id, set()).add(None)
            elif isinstance(node, ast.withitem | ast.NamedExpr):
                bound = node.optional_vars if isinstance(node, ast.withitem) else node.target
                for name in ast.walk(bound) if bound is not None else []:
                    if isinstance(name, ast.Name):
                        values.setdefault(name.id, set()).add(None)
        self.values = {
            name: number
            for name, bound_to in values.items()
            if len(bound_to) == 1 and (number := next(iter(bound_to))) is not None
        }
        self.where = where

    def number(self, node: ast.AST | None) -> tuple[int, str] | None:
        """The whole number a literal, or a name (``EPOCHS``, ``cfg.epochs``: its last part) bound
        once to one, stands for, with how it was read."""
        literal = _int(node)
        if literal is not None:
            return literal, ""
        name = (
            node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        )
        if name is None or name not in self.values:
            return None
        return self.values[name], f", {name} assigned at {self.where[name]}"


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


# a command-line option is a setting, never a loop's state: one named in the singular ('-epoch', a
# flag 'epoch') sets the epoch count as '--epochs' does (a keyword or an assignment 'epoch = 3' is a
# position, not a plan)
OPTION_PLAN_ALIASES = {"epoch": "epochs"}


def _option_name(text: str) -> str:
    name = text.lstrip("-").replace("-", "_")
    return OPTION_PLAN_ALIASES.get(name.lower(), name)


def _call_settings(call: ast.Call, constants: Constants) -> list[tuple[str, int, str]]:
    """(key, value, how) a call states: its whole-number keywords (a number, or a name bound to
    one), an argparse option's default, an absl DEFINE_integer flag's default."""
    found = []
    method = call.func.attr if isinstance(call.func, ast.Attribute) else None
    options = [_string(arg) for arg in call.args]
    keywords = {kw.arg: kw.value for kw in call.keywords if kw.arg is not None}
    if method == "add_argument" and options and all(o and o.startswith("-") for o in options):
        default = constants.number(keywords.get("default"))
        if default is not None:
            # the long option names the setting ('-e', '--epochs' -> epochs)
            name = max((o for o in options if o), key=len)
            found.append((_option_name(name), default[0], "argparse default" + default[1]))
        return found
    if method is not None and method.startswith("DEFINE_") and len(call.args) >= 2 and options[0]:
        default = constants.number(call.args[1])
        if default is not None:
            found.append((_option_name(options[0]), default[0], f"flags.{method} default" + default[1]))
        return found
    for key, value in keywords.items():
        number = constants.number(value)
        if number is not None:
            found.append((key, number[0], "keyword argument" + number[1]))
    return found


# the loop variable of a loop over epochs ('for epoch in range(EPOCHS)', 'for i_epoch in ...')
EPOCH_LOOP_VARIABLE = re.compile(r"epoch", re.IGNORECASE)
# the key a loop's bound is filed under (one of PLANNED_EPOCH_KEYS)
EPOCH_LOOP_KEY = "epochs"


def _loop_settings(loop: ast.For | ast.AsyncFor, constants: Constants) -> list[tuple[str, int, str]]:
    """The epoch count a loop over epochs runs: ``for epoch in range(N)`` and ``range(0, N)`` run
    N, ``range(1, N + 1)`` runs N (numbered from 1); N a number or a name bound to one. A loop
    from another start (a resumed epoch, a variable) states no count."""
    target = loop.target
    iterator = loop.iter
    if not (isinstance(target, ast.Name) and EPOCH_LOOP_VARIABLE.search(target.id)):
        return []
    if not (
        isinstance(iterator, ast.Call) and isinstance(iterator.func, ast.Name) and iterator.func.id == "range"
    ):
        return []
    arguments = iterator.args
    if iterator.keywords or not 1 <= len(arguments) <= 2:
        return []
    start = _int(arguments[0]) if len(arguments) == 2 else 0
    stop = arguments[-1]
    if start == 1 and isinstance(stop, ast.BinOp) and isinstance(stop.op, ast.Add) and _int(stop.right) == 1:
        bound = constants.number(stop.left)  # range(1, N + 1): N epochs numbered from 1
    elif start == 0:
        bound = constants.number(stop)
    else:
        return []
    if bound is None:
        return []
    return [(EPOCH_LOOP_KEY, bound[0], f"the bound of 'for {target.id} in range(...)'" + bound[1])]


def _positional_settings(
    call: ast.Call, functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]], constants: Constants
) -> list[tuple[str, int, str]]:
    """(parameter, value, how) for each whole number a call passes by position to a function the
    script defines once under that name: ``model.train(200, 30)`` beside ``def train(self, epochs,
    batch_size)`` states epochs 200 and batch_size 30. A name defined twice, or a call unpacking
    ``*args``, binds nothing."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    defined = functions.get(name or "", [])
    if len(defined) != 1 or any(isinstance(arg, ast.Starred) for arg in call.args):
        return []
    target = defined[0]
    parameters = target.args.posonlyargs + target.args.args
    if isinstance(func, ast.Attribute) and parameters and parameters[0].arg in BOUND_FIRST_PARAMETERS:
        parameters = parameters[1:]
    how = f"positional argument of {target.name}, defined at line {target.lineno}"
    return [
        (parameter.arg, number[0], how + number[1])
        for parameter, arg in zip(parameters, call.args, strict=False)
        if (number := constants.number(arg)) is not None
    ]


def _settings_of(tree: ast.AST, constants: Constants) -> list[tuple[str, int, int, str]]:
    found = []
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.setdefault(node.name, []).append(node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += [(key, value, node.lineno, how) for key, value, how in _call_settings(node, constants)]
            found += [
                (key, value, node.lineno, how)
                for key, value, how in _positional_settings(node, functions, constants)
            ]
        elif isinstance(node, ast.For | ast.AsyncFor):
            found += [(key, value, node.lineno, how) for key, value, how in _loop_settings(node, constants)]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            # a parameter's default ('def fit(self, loader, max_epochs=100)'): the value the run
            # used unless its caller passed another, as an argparse default
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            pairs = list(
                zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True)
            )
            pairs += [
                (a, d)
                for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
                if d is not None
            ]
            for argument, default in pairs:
                number = _int(default)
                if number is not None:
                    found.append((argument.arg, number, default.lineno, PARAMETER_DEFAULT))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            number = _int(node.value)
            if number is not None:
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                found += [(name, number, node.lineno, "assignment") for name in names]
    return found


def _scripts(folder: Path) -> list[tuple[str, str]]:
    """(name, text) of the small Python scripts in ``folder``, in name order; a Jupyter notebook
    gives one entry per code cell (``train.ipynb cell 4``), its magics and shell escapes blanked."""
    if not folder.is_dir():
        return []
    scripts = []
    for path in sorted(folder.iterdir()):
        if not path.is_file():
            continue
        if path.suffix == SCRIPT_SUFFIX and path.stat().st_size <= SCRIPT_MAX_BYTES:
            scripts.append((path.name, path.read_text(encoding="utf-8", errors="replace")))
        elif path.suffix == NOTEBOOK_SUFFIX and path.stat().st_size <= NOTEBOOK_MAX_BYTES:
            scripts += _notebook_cells(path)
    return scripts


def _notebook_cells(path: Path) -> list[tuple[str, str]]:
    """The code cells of a Jupyter notebook as (name, text); none when it is not a notebook's JSON."""
    try:
        document = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except ValueError:
        return []
    cells = document.get("cells") if isinstance(document, dict) else None
    found = []
    for number, cell in enumerate(cells if isinstance(cells, list) else [], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        # a blanked line keeps the cell's line numbers for the note that cites one
        lines = ["" if IPYTHON_LINE.match(line) else line for line in text.split("\n")]
        found.append((f"{path.name} cell {number}", "\n".join(lines)))
    return found


def _settings_in(scripts: list[tuple[str, str]]) -> list[Setting]:
    trees = []
    for name, text in scripts:
        try:
            trees.append((name, ast.parse(text, filename=name)))
        except (SyntaxError, ValueError):
            continue  # a script that does not parse is passed over
    constants = Constants(trees)
    settings = []
    for name, tree in trees:
        for key, value, line, how in _settings_of(tree, constants):
            settings.append(Setting(key, value, f"{name}:{line} ({how})", how == PARAMETER_DEFAULT))
    return settings


def script_settings(folder: Path) -> list[Setting]:
    """Every whole-number setting the small Python scripts in ``folder`` state, script by script
    in name order; a script that does not parse is passed over."""
    return _settings_in(_scripts(folder))


def _matching(settings: list[Setting], keys: tuple[str, ...]) -> list[Setting]:
    """The settings named by any of ``keys`` (case-insensitive) with a positive value."""
    wanted = {key.lower() for key in keys}
    return [s for s in settings if s.key.lower() in wanted and s.value > 0]


def agreed_setting(settings: list[Setting], keys: tuple[str, ...]) -> tuple[int, Setting] | None:
    """The value the settings named by any of ``keys`` (case-insensitive) all state, with the first
    of them; None when none does or they disagree."""
    matching = _matching(settings, keys)
    if len({s.value for s in matching}) != 1:
        return None
    return matching[0].value, matching[0]


def disagreeing(settings: list[Setting], keys: tuple[str, ...]) -> list[Setting]:
    """The settings named by ``keys`` when they state different values (for a note), else []."""
    matching = _matching(settings, keys)
    return matching if len({s.value for s in matching}) > 1 else []


# the names a script gives its planned epoch count (Lightning's max_epochs, Keras' epochs, HF's
# num_train_epochs, absl/TF1's max_epoch, old Keras' nb_epoch), matched in any case (EPOCHS = 100)
PLANNED_EPOCH_KEYS = (
    "epochs",
    "num_epochs",
    "max_epochs",
    "max_epoch",
    "n_epochs",
    "n_epoch",
    "nb_epoch",
    "nb_epochs",
    "num_epoch",
    "num_train_epochs",
    "total_epochs",
    "train_epochs",
    "epoch_num",
)


def logged_settings(path: Path, before_line: int, beside: bool = False) -> list[Setting]:
    """The epoch counts a log prints about itself before its first training row (an options or
    arguments dump: 'n_epochs: 100', 'N epochs: 300', 'Namespace(epochs=50, ...)', 'max_epochs = 20';
    not a progress count, 'epochs: 3/100'), as settings; beside: a console beside the log read."""
    names = "|".join(k.replace("_", "[ _]") for k in sorted(PLANNED_EPOCH_KEYS, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.])({names})\s*[:=]\s*(\d+)(?![\w./])", re.IGNORECASE)
    what = "a settings dump beside the log" if beside else "the log's own settings"
    found = []
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if number >= before_line:
                    break
                found += [
                    Setting(key.lower().replace(" ", "_"), int(value), f"{path.name}:{number} ({what})")
                    for key, value in pattern.findall(line)
                ]
    except OSError:
        return []
    return found


# a console printed beside the log read (the run's stdout beside the table it also wrote): its
# settings dump is read from its first DUMP_HEAD_LINES lines, when it is text of at most DUMP_MAX_BYTES
DUMP_SUFFIXES = (".txt", ".log", ".out")
DUMP_HEAD_LINES = 300
DUMP_MAX_BYTES = 64 * 1024 * 1024


def _document_settings(name: str, document: Mapping[str, Any]) -> list[Setting]:
    """The whole numbers a settings file the run saved beside its log (training_hyperparameters.json,
    args.json, params.yaml: reference_keys.side_documents reads them) states at its top level and one
    level down ({"train": {"epochs": 50}}); deeper (a scheduler's or a model's own sub-settings)
    they are no run's plan."""
    levels = [document, *(value for value in document.values() if isinstance(value, Mapping))]
    return [
        Setting(str(key).lower(), value, f"{name} (a settings file beside the log: {key})")
        for level in levels
        for key, value in level.items()
        if isinstance(value, int) and not isinstance(value, bool)
    ]


def settings_beside(log: Path) -> list[Setting]:
    """The epoch counts the consoles beside a log print in their settings dumps (group_DRO's log.txt
    'N epochs: 300' beside its train.csv), and those the settings files saved beside it state
    (a combiner's training_hyperparameters.json '"num_epochs": 50' beside its train_metrics.csv),
    for a log that prints none itself."""
    found: list[Setting] = []
    for path in sorted(log.parent.iterdir()) if log.parent.is_dir() else []:
        if path == log or not path.is_file() or path.suffix.lower() not in DUMP_SUFFIXES:
            continue
        if path.stat().st_size <= DUMP_MAX_BYTES:
            found += logged_settings(path, DUMP_HEAD_LINES, beside=True)
    for name, document in side_documents(log.parent, skip=(log.name,)):
        found += [s for s in _document_settings(name, document) if s.key in PLANNED_EPOCH_KEYS]
    return found


def planned_epochs(
    folder: Path, notes: list[str], logged_epochs: int, own: list[Setting] | None = None
) -> tuple[int, str] | None:
    """The epoch count the scripts beside a log plan (every one that names it names the same
    whole number), with where it is stated (the caller's note says it); None, with a note, when
    they disagree or when the log already holds more epochs (``logged_epochs``) than the plan: the
    run was launched with another value (a command-line option over the script's default).
    ``own``: the settings the log itself printed (an options dump), which win over the scripts:
    they are the launched run's."""
    own_plan = agreed_setting(own or [], PLANNED_EPOCH_KEYS)
    scripts: list[tuple[str, str]] = []
    if own_plan is not None:
        value, setting = own_plan
        where = f"{setting.key}={value} at {setting.where}"
    else:
        scripts = _scripts(folder)
        settings = _settings_in(scripts)
        stated = _matching([s for s in settings if not s.is_default], PLANNED_EPOCH_KEYS)
        defaults = _matching([s for s in settings if s.is_default], PLANNED_EPOCH_KEYS)
        if defaults and stated and all(s.value < logged_epochs for s in stated):
            notes.append(f"{_shown(stated)}: not this run's plan, the log holds {logged_epochs} epochs")
            stated = []
        # a function's parameter default plans the run only where no call, assignment or option does
        agreed = _agreed_plan(stated or defaults, logged_epochs, notes)
        if agreed is None:
            return None
        value, setting = agreed
        # what the script stated when committed: a command line may have launched the run with another
        where = f"{setting.key}={value} in the script {setting.where}"
    if logged_epochs > value:
        notes.append(f"{where} is not this run's plan: the log holds {logged_epochs} epochs")
        return None
    if any(stops_early(text) for _, text in scripts):
        notes.append(
            "a script beside the log configures early stopping: a run that ends before its planned "
            "epochs may have stopped by design"
        )
    return value, where


def _agreed_plan(settings: list[Setting], logged_epochs: int, notes: list[str]) -> tuple[int, Setting] | None:
    """The epoch count the settings agree on; when they disagree, a count the log already went past
    (``logged_epochs``) is not this run's plan (another loop's, another launch's) and the counts it
    has not passed decide, when they agree. None, with a note, when they still disagree."""
    agreed = agreed_setting(settings, PLANNED_EPOCH_KEYS)
    clash = disagreeing(settings, PLANNED_EPOCH_KEYS)
    reachable = [s for s in clash if s.value >= logged_epochs]
    if agreed is None and clash and len(reachable) < len(clash):
        agreed = agreed_setting(reachable, PLANNED_EPOCH_KEYS)
        if agreed is not None:
            passed = [s for s in clash if s.value < logged_epochs]
            notes.append(f"{_shown(passed)}: not this run's plan, the log holds {logged_epochs} epochs")
    if agreed is None and clash:
        notes.append(
            f"the scripts beside the log plan different epoch counts ({_shown(clash[:4])}): none used"
        )
    return agreed


def _shown(settings: list[Setting]) -> str:
    """Settings as a note names them: 'epochs=40 (train.py:12 (keyword argument)), ...'."""
    return ", ".join(f"{s.key}={s.value} ({s.where})" for s in settings)


# a script that says it stops early (EarlyStopping, early_stopping, print("Early stopping at ..."))
STOPS_EARLY = re.compile(r"early[ _-]?stop", re.IGNORECASE)
# a patience counted in the training loop ('patience = 10', 'if bad_epochs > patience: break') stops
# it early too, unless the line gives it to a plateau scheduler (ReduceLROnPlateau(..., patience=5)),
# which lowers the LR and stops nothing
PATIENCE = re.compile(r"patience", re.IGNORECASE)
SCHEDULER_LINE = re.compile(r"plateau|scheduler|reduce_?lr|lr_?reduc", re.IGNORECASE)


def stops_early(text: str) -> bool:
    """Whether a script stops its run early on a validation plateau: it says so, or it counts a
    patience that no plateau scheduler on the same line takes."""
    return any(
        STOPS_EARLY.search(line) or (PATIENCE.search(line) and not SCHEDULER_LINE.search(line))
        for line in text.splitlines()
    )


def early_stopping(folder: Path, notes: list[str]) -> dict[str, str]:
    """The config field EARLY_STOPPING_KEY (the script that says so) when a script beside the log
    stops its run early on a validation plateau (stops_early): the overfitting check then reads a
    rise that ended the run as the one early stopping watched for (low). {} otherwise."""
    for name, text in _scripts(folder):
        if stops_early(text):
            notes.append(
                f"{EARLY_STOPPING_KEY} = {name}: the script beside the log stops its run early on a plateau"
            )
            return {EARLY_STOPPING_KEY: name}
    return {}
