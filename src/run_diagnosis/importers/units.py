"""Units printed with a loss or an accuracy, converted to the one unit the project uses.

The canonical unit of every loss (``loss``, ``val_loss``) is **nats per token** (the natural
log, what PyTorch's cross-entropy returns); accuracies are a **share in 0..1**. Logs print
other units, as a suffix on the value (``val loss 2.41 BPC``), in a cell (``"2.41 bits"``) or
in the column name (``val_bpc``, ``val_loss (bits)``, ``val_ppl``):

* bits (``bits``, ``bit``, ``BPC``, ``BPB``, ``BPT``, ``bits/char``...): x ln 2;
* nats (``nats``, ``nat``): unchanged;
* perplexity (``ppl``, ``perplexity``): ln(value) (the perplexity of a per-token loss);
* percent (``%``) for an accuracy: / 100.

What cannot be known from a unit: whether a per-character (BPC) and a per-token loss of
another run are comparable; the conversion keeps the quantity's own denominator.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

LN_2 = math.log(2.0)

# unit spelling (lower case, spaces removed) -> canonical unit name
UNIT_NAMES: dict[str, str] = {
    "nat": "nats",
    "nats": "nats",
    "bit": "bits",
    "bits": "bits",
    "bpc": "bits",
    "bpb": "bits",
    "bpt": "bits",
    "bpd": "bits",
    "bits/char": "bits",
    "bits/byte": "bits",
    "bits/token": "bits",
    "bits/dim": "bits",
    "ppl": "ppl",
    "perplexity": "ppl",
    "%": "percent",
    "percent": "percent",
}
# a unit suffix after a number, for the text-log regexes (case-insensitive)
UNIT_PATTERN = r"(?i:bits/(?:char|byte|token|dim)|bits?|nats?|bp[cbtd]|ppl|perplexity|%)"
_CELL = re.compile(
    rf"^\s*(?P<number>[-+]?[\d.]+(?:[eE][-+]?\d+)?|nan|inf)\s*(?P<unit>{UNIT_PATTERN})?\s*$", re.I
)
# unit words inside a column name: val_bpc, val_loss (bits), eval/ppl, val_perplexity, acc_%
_COLUMN_UNIT = re.compile(
    r"(?:^|[\s_/(\[-])(?P<unit>bits?|nats?|bp[cbtd]|ppl|perplexity|%)(?:$|[\s_/)\]-])", re.I
)


# seconds per unit of a time the logs keep (a step's duration, an elapsed clock); None: seconds
SECONDS_PER_TIME_UNIT: dict[str | None, float] = {
    None: 1.0,
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "min": 60.0,
    "h": 3600.0,
}


class UnitError(ValueError):
    """A unit that this module does not know, or a value that cannot carry it."""


def canonical_unit(unit: str | None) -> str | None:
    """'BPC' -> 'bits', ' Nats ' -> 'nats', None/'' -> None; UnitError for an unknown unit."""
    if unit is None or not unit.strip():
        return None
    key = re.sub(r"\s+", "", unit.lower())
    if key not in UNIT_NAMES:
        raise UnitError(f"unknown unit {unit!r}: expected one of {', '.join(sorted(set(UNIT_NAMES)))}")
    return UNIT_NAMES[key]


def loss_to_nats(value: float, unit: str | None) -> float:
    """A loss in ``unit`` (None: already nats) as nats."""
    name = canonical_unit(unit)
    if name in (None, "nats") or not math.isfinite(value):
        return value
    if name == "bits":
        return value * LN_2
    if name == "ppl":
        if value <= 0:
            raise UnitError(f"a perplexity must be positive: {value!r}")
        return math.log(value)
    raise UnitError(f"{unit!r} is not a loss unit (bits, nats or perplexity)")


def accuracy_to_share(value: float, unit: str | None) -> float:
    """An accuracy in ``unit`` ('%' or None: a share already) as a share in 0..1."""
    name = canonical_unit(unit)
    if name is None:
        return value
    if name == "percent":
        return value / 100.0
    raise UnitError(f"{unit!r} is not an accuracy unit (% or none)")


def split_cell(text: str) -> tuple[float, str | None]:
    """'2.41 BPC' -> (2.41, 'BPC'); '3.1' -> (3.1, None); ValueError when not a number (+ unit)."""
    found = _CELL.match(text)
    if not found:
        raise ValueError(f"not a number with an optional unit: {text!r}")
    return float(found.group("number")), found.group("unit")


def column_unit(column: str) -> str | None:
    """The unit a column's name states ('val_bpc' -> 'bpc'), or None."""
    found = _COLUMN_UNIT.search(column)
    return found.group("unit") if found else None


def convert(field: str, value: float, unit: str | None) -> float:
    """A canonical field's value in ``unit`` converted: losses to nats, accuracies to a share."""
    if field in ("loss", "val_loss"):
        return loss_to_nats(value, unit)
    if field == "val_accuracy":
        return accuracy_to_share(value, unit)
    if canonical_unit(unit) is None:
        return value
    raise UnitError(f"field {field!r} takes no unit, found {unit!r}")


def cell_parser(
    field: str, column: str | None, parse_number: Callable[[Any], float | None]
) -> Callable[[Any], float | None]:
    """A cell parser for one canonical field read from ``column``: a unit in the cell
    (``"2.41 BPC"``) or else in the column name (``val_bpc``) is converted; plain cells go
    through ``parse_number`` (which keeps nan/inf and raises ValueError on text)."""
    named = column_unit(column) if column else None

    def parse(cell: Any) -> float | None:
        unit = named
        number: float | None
        found = _CELL.match(cell) if isinstance(cell, str) else None
        if found and found.group("unit"):
            number, unit = split_cell(cell)
        else:
            number = parse_number(cell)
        if number is None:
            return None
        try:
            return convert(field, number, unit)
        except UnitError as error:
            raise ValueError(str(error)) from error

    return parse
