"""The reference seeds load on every engine the project supports.

dbt-spark's seed loader writes each value into its INSERT statement inside single quotes without
doubling a quote in the value, so an apostrophe in a reference seed stops the Spark build with
PARSE_SYNTAX_ERROR (seen with `event_patterns` and `usual_learning_rates`, 2026-12-04). The run
seeds are the user's data and are read through the engine's file reader instead (docs/spark.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[2] / "seeds" / "reference"


@pytest.mark.parametrize("seed", sorted(REFERENCE.glob("*.csv")), ids=lambda p: p.name)
def test_reference_seed_holds_no_single_quote(seed: Path) -> None:
    lines = seed.read_text(encoding="utf-8").splitlines()
    quoted = [n for n, line in enumerate(lines, start=1) if "'" in line]
    assert not quoted, f"{seed.name}: a single quote on line(s) {quoted} breaks dbt-spark's seed load"
