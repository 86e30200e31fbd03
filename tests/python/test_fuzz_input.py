"""Property-based fuzz of hostile input (hypothesis): a mutated fixture run either stops at the
validator with a one-line error naming its file (exit 2 in run-diagnosis diagnose, before any build), or
builds with every raw train row accounted for exactly once in the row audit.

The runs the validator accepts are built together, in one dbt build (a few seconds in-process
whatever their number: dbt's per-node work, not the rows, is its cost); CI runs FUZZ_EXAMPLES=4 by
default. A longer campaign, with its last result in docs/bad-input.md:

    FUZZ_EXAMPLES=60 python -m pytest tests/python/test_fuzz_input.py -q --hypothesis-show-statistics
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, Phase, event, given, settings
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


@dataclass(frozen=True)
class Example:
    """A mutated fixture run the validator accepted: its folder, how it was mutated, its records."""

    folder: Path
    plan: list[tuple[str, int, str]]
    ending: str
    bom: bool
    records: int


def mutated_runs(candidates: Path, outcomes: Counter[str]) -> list[Example]:
    """EXAMPLES mutated runs drawn by hypothesis (derandomized: the same every time), each written
    under candidates/ and validated: a run the validator stops must get a one-line error naming
    its folder (checked here, where hypothesis can shrink a failure); the others are returned, to be
    built together (one dbt build, test below). outcomes counts what became of each."""
    accepted: list[Example] = []
    count = iter(range(10**6))

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=[HealthCheck.too_slow],
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
    def draw(plan: list[tuple[str, int, str]], ending: str, bom: bool) -> None:
        folder = RunBuilder(total_steps=60).write(candidates / f"run-{next(count):03d}")
        records = mutated(folder, plan, ending, bom)
        try:
            validate_run.validate_run(folder)
        except validate_run.RunValidationError as error:
            message = str(error)
            assert "\n" not in message and str(folder) in message
            outcomes[f"stopped by the validator: {message.split(': ', 2)[-1][:40]}"] += 1
            event(f"stopped by the validator: {message.split(': ', 2)[-1][:40]}")
            return
        accepted.append(Example(folder, plan, ending, bom, records))
        outcomes["passed the validator: built and audited together"] += 1
        event("built (every row audited, checked after the build)")

    draw()
    return accepted


def test_mutated_run_is_named_error_or_fully_audited(dbt_session: DbtSession, tmp_path: Path) -> None:
    """Every mutated run the validator accepts builds, in one dbt build of all of them from a folder
    with a hostile name, with every raw train row accounted for exactly once in the row audit, and
    nothing written beside the run folders."""
    outcomes: Counter[str] = Counter()
    examples = mutated_runs(tmp_path / "candidates", outcomes)
    print(f"{EXAMPLES} mutated runs drawn:", dict(outcomes))  # the campaign's tally (pytest -s)
    if not examples:
        return  # every drawn run stopped at the validator (checked in mutated_runs)
    runs = tmp_path / "fuzz {{ 7*7 }} [x] "
    runs.mkdir()
    for example in examples:
        shutil.move(example.folder, runs / example.folder.name)
    whole = dbt_session.build(runs)
    failed = [(e.plan, e.ending, e.bom) for e in examples]
    assert whole.success, (failed, whole.errors)
    for example in examples:
        audit = dataclasses.replace(whole, run_id=example.folder.name).table("audit_summary")
        train = audit[audit["file_kind"] == "train"]
        counts = (int(train["n_rows"].sum()), int(train["raw_rows"].max()))
        assert counts == (example.records, example.records), (example.plan, example.ending, example.bom)
    assert sorted(p.name for p in runs.iterdir()) == sorted(e.folder.name for e in examples)
