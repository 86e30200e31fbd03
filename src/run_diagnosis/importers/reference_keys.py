"""What a uniform guess would score: the vocabulary size, class count and model/tokenizer names a run carries.

The dbt model ``int_runs_referenced`` judges every run against the loss of a uniform guess,
ln(vocabulary size) or ln(number of classes). It reads four top-level config keys:
``vocab_size``, ``num_classes``, ``model_name`` and ``tokenizer_name`` (a name is matched against
the seed ``tokenizer_vocab_sizes``). Tools keep these facts in many places: a Lightning
``hparams.yaml`` (``vocab_size``, ``num_classes``), the Hugging Face model ``config.json``
beside a checkpoint (``vocab_size``, ``num_labels``/``id2label``, ``_name_or_path``), a PEFT
``adapter_config.json`` (``base_model_name_or_path``), a ``tokenizer_config.json``
(``tokenizer_class``, ``name_or_path``), a project's own small config file beside the log
(``default.yaml``, ``config.yaml``: the counts only, and only when those files agree).
``reference_keys`` lifts the first one found to the top level, the importer's own config first
(shallowest key first), then those files beside the source, and says in a note where each came
from. A key the config already sets at the top level is kept as it is.

A class count is also said to be ``stated`` or a ``label_map`` (``num_classes_basis``): a key
that names the count (``num_classes``, ``n_classes``...) or a label map beside a classification
head (``architectures`` ``...ForSequenceClassification``, a PEFT ``task_type`` ``SEQ_CLS``, a
``problem_type``, labels with names) is the task's own; a bare ``num_labels``/``id2label`` is in
every Hugging Face config (two labels by default), classifier or not, so the diagnosis uses it
only when the run's start agrees with it (``int_runs_referenced``).

The head the model predicts with is said too (``output_head``): ``classifier`` when a document
carries a sign of a classifier (a classification architecture, a PEFT ``task_type`` ``SEQ_CLS`` or
``TOKEN_CLS``, a problem type, labels with names), ``generator`` when it names a head that predicts
tokens (a ``...ForCausalLM`` architecture, a PEFT ``CAUSAL_LM``/``SEQ_2_SEQ_LM`` task type). A
classifier's uniform guess is ln(classes), never ln(vocabulary) of the backbone its name matches: a
LoRA adapter for sequence classification names its base language model, whose vocabulary the new
head does not predict over.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import yaml

# canonical key -> the keys that give it, in order of preference
VOCAB_KEYS = ("vocab_size", "n_vocab", "padded_vocab_size", "ntokens", "num_tokens_vocab")
CLASS_KEYS = ("num_classes", "num_labels", "n_classes", "nb_classes", "number_of_classes", "id2label")
TOKENIZER_KEYS = (
    "tokenizer_name",
    "tokenizer_name_or_path",
    "tokenizer_type",
    "tokenizer_class",
    "tokenizer",
)
MODEL_KEYS = (
    "model_name",
    "model_name_or_path",
    "base_model_name_or_path",
    "pretrained_model_name_or_path",
    # the checkpoint a fine-tune starts from, as training scripts and configs name it (Axolotl and
    # Unsloth base_model, a project's own pretrained_model / model_checkpoint)
    "base_model",
    "pretrained_model",
    "pretrained_model_name",
    "model_checkpoint",
    "_name_or_path",
    "model_type",
    "name_or_path",
)
# keys that name a class count themselves (a label map only lists labels: see CLASSIFIER_SIGNS)
STATED_CLASS_KEYS = ("num_classes", "n_classes", "nb_classes", "number_of_classes")
CLASSES_BASIS_KEY = "num_classes_basis"
# a label map (num_labels / id2label) is the task's own beside one of these: a classification
# head in the architectures, a PEFT task type, a problem type, or labels that have names
CLASSIFIER_ARCHITECTURE = re.compile(r"For(\w*Classification|MultipleChoice)$")
# a head that predicts tokens over the vocabulary (a language model, seq2seq or masked LM): its
# config's bare label map is a default Hugging Face carries (Pegasus and BART configs list three
# LABEL_i), not what the model predicts, so it is no class count of the run
GENERATOR_ARCHITECTURE = re.compile(
    r"(For(CausalLM|ConditionalGeneration|MaskedLM|Seq2SeqLM|PreTraining)|LMHeadModel|WithLMHead)$"
)
CLASSIFIER_TASK_TYPES = frozenset({"SEQ_CLS", "TOKEN_CLS"})
GENERATOR_TASK_TYPES = frozenset({"CAUSAL_LM", "SEQ_2_SEQ_LM"})
HEAD_KEY = "output_head"
DEFAULT_LABEL = re.compile(r"^LABEL_\d+$")
# files beside the source that hold model facts (small JSON documents)
SIBLING_FILES = ("config.json", "adapter_config.json", "tokenizer_config.json")
SIBLING_MAX_BYTES = 1_000_000
SIDE_SUFFIXES = (".json", ".yaml", ".yml")  # a project's own config files beside the log
SIDE_COUNT_KEYS = ("vocab_size", "num_classes")  # what those may give: counts, not names
SEARCH_DEPTH = 4  # nested levels searched (hparams -> model -> config ...)


class TolerantLoader(yaml.SafeLoader):
    """SafeLoader that reads Python-object tags (Namespace, tuples...) as plain data."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A mapping whose key is a Python object read as plain data (a numpy scalar, pickled by
        ``!!python/object/apply`` as a list) keeps that key as a tuple, or as its text: SafeLoader
        refuses such a key as unhashable, and the whole file with it."""
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list):
                key = tuple(_hashable(item) for item in key)
            elif not isinstance(key, Hashable):
                key = repr(key)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


def _hashable(value: Any) -> Any:
    return value if isinstance(value, Hashable) else repr(value)


def _plain(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(cast(yaml.ScalarNode, node))  # neither mapping nor sequence


TolerantLoader.add_multi_constructor("tag:yaml.org,2002:python/", _plain)
TolerantLoader.add_multi_constructor("!", _plain)


def unwrap_wandb_config(document: Any) -> Any:
    """W&B's config.yaml stores each key as {desc, value}: keep just the values."""
    if not isinstance(document, dict):
        return document
    entries = {k: v for k, v in document.items() if k not in ("wandb_version", "_wandb")}
    if entries and all(isinstance(v, dict) and "value" in v for v in entries.values()):
        return {k: v["value"] for k, v in entries.items()}
    return document


def read_side_document(path: Path) -> Any:
    """A small JSON or YAML file beside a log, parsed (JSON by its own, faster parser; YAML with a
    SafeLoader that builds plain data only, never Python objects); None when it cannot be read:
    a side file we cannot read is not the run's log, it just tells nothing."""
    try:
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=TolerantLoader)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError):
        return None


def side_documents(folder: Path, skip: tuple[str, ...] = ()) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(name, mapping) of every small JSON/YAML file in folder (a project's own config files
    beside a log, W&B's config.yaml unwrapped), by name, those named in skip left out; unreadable
    ones are passed over."""
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        if path.suffix not in SIDE_SUFFIXES or path.name in skip or not path.is_file():
            continue
        if path.stat().st_size > SIBLING_MAX_BYTES:
            continue
        document = unwrap_wandb_config(read_side_document(path))
        if isinstance(document, Mapping):
            yield path.name, document


def walk_keys(document: Mapping[str, Any], depth: int = 0) -> Iterator[tuple[int, str, Any]]:
    """(depth, key, value) of every key, breadth first: a shallow key before a nested one."""
    nested: list[Mapping[str, Any]] = []
    for key, value in document.items():
        yield depth, str(key), value
        if isinstance(value, Mapping):
            nested.append(value)
    if depth < SEARCH_DEPTH:
        for child in nested:
            yield from walk_keys(child, depth + 1)


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, float) and value.is_integer() and value > 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


def _name(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _first(
    document: Mapping[str, Any], keys: tuple[str, ...], parse: Callable[[Any], Any]
) -> tuple[Any, str] | None:
    """The first key of `keys` (in their order of preference) found at the shallowest depth.
    A key ending in ``id2label`` counts its labels (a class count written as the label map)."""
    found: dict[str, tuple[int, Any]] = {}
    for depth, key, value in walk_keys(document):
        if key in found:
            continue
        if key in keys and parse(value) is not None:
            found[key] = (depth, parse(value))
        elif key in keys and key.endswith("id2label") and isinstance(value, Mapping) and value:
            found[key] = (depth, len(value))
    if not found:
        return None
    key, (_, value) = min(found.items(), key=lambda item: (item[1][0], keys.index(item[0])))
    return value, key


def _sibling_documents(source_path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The model-fact files beside the source (the source itself when it is a folder)."""
    source = Path(source_path)
    folder = source if source.is_dir() else source.parent
    for name in SIBLING_FILES:
        path = folder / name
        if not path.is_file() or path.stat().st_size > SIBLING_MAX_BYTES:
            continue
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(document, Mapping):
            yield name, document


def _is_classifier_sign(name: str, value: Any) -> bool:
    """One key of a config that says the model is a classifier (CLASSIFIER_ARCHITECTURE...)."""
    if name == "architectures" and isinstance(value, list):
        return any(isinstance(a, str) and CLASSIFIER_ARCHITECTURE.search(a) is not None for a in value)
    if name == "task_type":
        return value in CLASSIFIER_TASK_TYPES
    if name == "problem_type":
        return value == "single_label_classification"
    if name.endswith("id2label") and isinstance(value, Mapping) and value:
        return not all(DEFAULT_LABEL.match(str(label)) for label in value.values())
    return False


def _is_generator_sign(name: str, value: Any) -> bool:
    """One key of a config that says the model predicts tokens (GENERATOR_ARCHITECTURE...)."""
    if name == "architectures" and isinstance(value, list):
        return any(isinstance(a, str) and GENERATOR_ARCHITECTURE.search(a) is not None for a in value)
    return name == "task_type" and value in GENERATOR_TASK_TYPES


def output_head(documents: list[tuple[str, Mapping[str, Any]]]) -> tuple[str, str] | None:
    """(head, where): ``classifier`` when any document carries a sign of a classifier, else
    ``generator`` when one names a token-predicting head; None when none says."""
    generator: str | None = None
    for where, document in documents:
        for _, name, value in walk_keys(document):
            if _is_classifier_sign(name, value):
                return "classifier", f"{name} in {where}"
            if generator is None and _is_generator_sign(name, value):
                generator = f"{name} in {where}"
    return ("generator", generator) if generator is not None else None


def predicts_tokens(key: str, document: Mapping[str, Any]) -> bool:
    """A bare label map (``key``) in a document whose architectures name a token-predicting head
    (GENERATOR_ARCHITECTURE) and no sign of a classifier."""
    if classes_basis(key, document) != "label_map":
        return False
    return any(
        name == "architectures" and _is_generator_sign(name, value) for _, name, value in walk_keys(document)
    )


def classes_basis(key: str, document: Mapping[str, Any]) -> str:
    """How a class count found under key in document was stated: ``stated`` (a key naming the count,
    or a label map beside a sign of a classifier), else ``label_map``."""
    if key in STATED_CLASS_KEYS:
        return "stated"
    for _, name, value in walk_keys(document):
        if _is_classifier_sign(name, value):
            return "stated"
    return "label_map"


def _side_count(
    side: list[tuple[str, Mapping[str, Any]]], canonical: str, keys: tuple[str, ...]
) -> tuple[int, str, str, Mapping[str, Any]] | None:
    """A count (vocabulary or classes) from the project's own small config files beside the log
    (side: their documents), with its key, a note and the file's document: used only when every
    file that names it names the same value."""
    found: dict[str, tuple[int, str, Mapping[str, Any]]] = {}
    for name, document in side:
        hit = _first(document, keys, _positive_int)
        if hit is not None:
            found[name] = (hit[0], hit[1], document)
    if len({value for value, _, _ in found.values()}) != 1:
        return None
    name, (value, key, document) = next(iter(found.items()))
    return value, key, f"{key} in {name}, the only {canonical} beside the log", document


def reference_keys(config: Mapping[str, Any], source_path: str) -> tuple[dict[str, Any], list[str]]:
    """The reference keys to set at the top level of the run config, and a note for each."""
    wanted: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
        "vocab_size": (VOCAB_KEYS, _positive_int),
        "num_classes": (CLASS_KEYS, _positive_int),
        "tokenizer_name": (TOKENIZER_KEYS, _name),
        "model_name": (MODEL_KEYS, _name),
    }
    documents: list[tuple[str, Mapping[str, Any]]] = [("the run config", config)]
    documents += list(_sibling_documents(source_path))
    source = Path(source_path)
    folder = source if source.is_dir() else source.parent
    side: list[tuple[str, Mapping[str, Any]]] | None = None  # read once, when first needed
    lifted: dict[str, Any] = {}
    notes: list[str] = []
    for canonical, (keys, parse) in wanted.items():
        if config.get(canonical) is not None:
            continue
        for where, document in documents:
            hit = _first(document, keys, parse)
            if hit is not None and canonical == "num_classes" and predicts_tokens(hit[1], document):
                notes.append(
                    f"{hit[1]} in {where} not read as a class count: its architectures predict tokens "
                    "over the vocabulary (a default label map, not the task's)"
                )
                continue
            if hit is not None:
                value, key = hit
                lifted[canonical] = value
                notes.append(
                    f"{canonical} = {value!r}, from {key} in {where} (for the uniform-guess loss level)"
                )
                if canonical == "num_classes":
                    lifted[CLASSES_BASIS_KEY] = classes_basis(key, document)
                break
        else:
            if canonical not in SIDE_COUNT_KEYS:
                continue
            if side is None:
                side = list(side_documents(folder, (*SIBLING_FILES, source.name)))
            counted = _side_count(side, canonical, keys)
            if counted is not None:
                value, key, where, document = counted
                lifted[canonical] = value
                notes.append(f"{canonical} = {value!r}, from {where} (for the uniform-guess loss level)")
                if canonical == "num_classes":
                    lifted[CLASSES_BASIS_KEY] = classes_basis(key, document)
    if config.get(HEAD_KEY) is None:
        head = output_head(documents)
        if head is not None:
            lifted[HEAD_KEY] = head[0]
            notes.append(
                f"{HEAD_KEY} = {head[0]!r}, from {head[1]} (a classifier is judged against ln(classes))"
            )
    if config.get("num_classes") is not None and config.get(CLASSES_BASIS_KEY) is None:
        lifted[CLASSES_BASIS_KEY] = "stated"  # the run's own config names it at the top level
    return lifted, notes
