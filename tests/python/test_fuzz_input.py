"""Property-based fuzz of hostile input (hypothesis): a mutated fixture run either stops at the
validator with a one-line error naming its file (exit 2 in run-diagnosis diagnose, before any build), or
builds with every raw train row accounted for exactly once in the row audit.

Each example is a dbt build (a few seconds in-process), so CI runs FUZZ_EXAMPLES=4 by
default. A longer campaign, with its last result in docs/bad-input.md:

    FUZZ_EXAMPLES=60 python -m pytest tests/python/test_fuzz_input.py -q --hypothesis-show-statistics
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from run_diagnosis import validate_run
from support.dbt_session import DbtSession
from support.run_builder import RunBuilder

TRAIN = "fixture_train_log.csv"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "4"))
# text planted into cells: markup, SQL, Jinja, shell, non-finite and huge numbers, NUL, emoji
PAYLOADS = [
    "{{ 7*7 }}",
    "{% do run_query('select 1') %}",
    "'; drop table findings; --",
    "<script>alert(1)</script>",
    "$(touch pwned)",
    "NaN",
    "-inf",
    "1e309",
    "-104",
    "\x00",
    "🙂",
    "x" * 1000,
    "",
]

Mutation = Callable[[list[str], int, str], list[str]]


def set_cell(lines: list[str], at: int, payload: str) -> list[str]:
    row = 1 + at % (len(lines) - 1)
    cells = lines[row].split(",")
    cells[at % len(cells)] = payload.replace(",", ";").replace('"', "'").replace("\n", " ")
    return [*lines[:row], ",".join(cells), *lines[row + 1 :]]


def duplicate_line(lines: list[str], at: int, _: str) -> list[str]:
    row = 1 + at % (len(lines) - 1)
    return [*lines[: row + 1], lines[row], *lines[row + 1 :]]


def delete_line(lines: list[str], at: int, _: str) -> list[str]:
    row = 1 + at % (len(lines) - 1)
    return [*lines[:row], *lines[row + 1 :]] if len(lines) > 2 else lines


def swap_lines(lines: list[str], at: int, _: str) -> list[str]:
    row = 1 + at % (len(lines) - 2) if len(lines) > 3 else 1
    return [*lines[:row], lines[row + 1], lines[row], *lines[row + 2 :]] if len(lines) > 3 else lines


def rename_header(lines: list[str], at: int, _: str) -> list[str]:
    names = lines[0].split(",")
    names[at % len(names)] = names[(at + 1) % len(names)]  # a duplicate column name
    return [",".join(names), *lines[1:]]


def truncate(lines: list[str], at: int, _: str) -> list[str]:
    return [*lines[:-1], lines[-1][: at % max(len(lines[-1]), 1)]]


MUTATIONS: dict[str, Mutation] = {
    "set_cell": set_cell,
    "duplicate_line": duplicate_line,
    "delete_line": delete_line,
    "swap_lines": swap_lines,
    "rename_header": rename_header,
    "truncate": truncate,
}
ENDINGS = {"lf": "\n", "crlf": "\r\n", "cut": ""}


def mutated(folder: Path, plan: list[tuple[str, int, str]], ending: str, bom: bool) -> int:
    """Apply the plan to the train log; returns its number of data records (as Python's csv reads)."""
    path = folder / TRAIN
    lines = path.read_text().splitlines()
    for name, at, payload in plan:
        lines = MUTATIONS[name](lines, at, payload)
    text = "\n".join(lines).replace("\n", "\r\n" if ending == "crlf" else "\n") + ENDINGS[ending]
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    records = list(csv.reader(io.StringIO(text, newline="")))
    return sum(1 for record in records[1:] if record)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    plan=st.lists(
        st.tuples(st.sampled_from(sorted(MUTATIONS)), st.integers(0, 10**6), st.sampled_from(PAYLOADS)),
        min_size=1,
        max_size=4,
    ),
    ending=st.sampled_from(sorted(ENDINGS)),
    bom=st.booleans(),
)
def test_mutated_run_is_named_error_or_fully_audited(
    dbt_session: DbtSession, plan: list[tuple[str, int, str]], ending: str, bom: bool
) -> None:
    with tempfile.TemporaryDirectory(prefix="fuzz {{ 7*7 }} [x] ") as temp:
        folder = RunBuilder(total_steps=60).write(Path(temp) / "run")
        records = mutated(folder, plan, ending, bom)
        try:
            validate_run.validate_run(folder)
        except validate_run.RunValidationError as error:
            message = str(error)
            assert "\n" not in message and str(folder) in message
            event(f"stopped by the validator: {message.split(': ', 2)[-1][:40]}")
            return
        diagnosis = dbt_session.build(folder)
        assert diagnosis.success, (plan, ending, bom, diagnosis.errors)
        audit = diagnosis.table("audit_summary")
        train = audit[audit["file_kind"] == "train"]
        assert int(train["n_rows"].sum()) == int(train["raw_rows"].max()) == records, (plan, ending, bom)
        assert sorted(p.name for p in Path(temp).iterdir()) == ["run"]  # nothing written beside it
        event("built, every row audited")
