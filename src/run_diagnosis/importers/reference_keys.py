"""What a uniform guess would score: the vocabulary size, class count and model/tokenizer names a run carries.

The dbt model ``int_runs_referenced`` judges every run against the loss of a uniform guess,
ln(vocabulary size) or ln(number of classes). It reads four top-level config keys:
``vocab_size``, ``num_classes``, ``model_name`` and ``tokenizer_name`` (a name is matched against
the seed ``tokenizer_vocab_sizes``). Tools keep these facts in many places: a Lightning
``hparams.yaml`` (``vocab_size``, ``num_classes``), the Hugging Face model ``config.json``
beside a checkpoint (``vocab_size``, ``num_labels``/``id2label``, ``_name_or_path``), a PEFT
``adapter_config.json`` (``base_model_name_or_path``), a ``tokenizer_config.json``
(``tokenizer_class``, ``name_or_path``). ``reference_keys`` lifts the first one found to the
top level, the importer's own config first (shallowest key first), then those files beside the
source, and says in a note where each came from. A key the config already sets at the top
level is kept as it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

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
# files beside the source that hold model facts (small JSON documents)
SIBLING_FILES = ("config.json", "adapter_config.json", "tokenizer_config.json")
SIBLING_MAX_BYTES = 1_000_000
SEARCH_DEPTH = 4  # nested levels searched (hparams -> model -> config ...)


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
    lifted: dict[str, Any] = {}
    notes: list[str] = []
    for canonical, (keys, parse) in wanted.items():
        if config.get(canonical) is not None:
            continue
        for where, document in documents:
            hit = _first(document, keys, parse)
            if hit is not None:
                value, key = hit
                lifted[canonical] = value
                notes.append(
                    f"{canonical} = {value!r}, from {key} in {where} (for the uniform-guess loss level)"
                )
                break
    return lifted, notes
