"""The order scripts/test.sh's workers take the test files in: the slowest first.

pytest-xdist (`--dist loadfile`) gives each worker one whole file at a time from a queue and
the next when it is almost done; by default the queue is sorted by the number of tests, which
puts the files with few but long tests (a dbt build each) last, where one worker runs them
while the other waits. Longest first, the short files fill the gaps at the end instead.
conftest.py sorts the collected tests by file in this order (the others after, as collected;
each file's tests keep their order) and scripts/test.sh passes --no-loadscope-reorder.
How long the suite takes: docs/performance.md ("The test suite").
"""

from __future__ import annotations

from pathlib import Path

import pytest

SLOWEST_FIRST = (
    # its own build, the 40-trial sweep, and the session's two builds of every module's fixture
    # runs (conftest.py: its diverged run without its baseline, its runs with the structural tests)
    "test_fleet.py",
    "test_faults.py",
    # the README's recipes on a fresh copy: three dbt builds and dbt docs, each a new parse; it
    # waits for its first recipe (the sample's `ci` build), which scripts/test.sh runs in the
    # background meanwhile, so it comes after two long files
    "test_readme_commands.py",
    "test_warehouse.py",
    # four builds of one growing run, in sequence
    "test_history_alerts.py",
    "test_hostile_input.py",
    "test_real_logs.py",
    # after a minute or more of the others: it reads scripts/test.sh's build of the sample,
    # which runs in the background meanwhile (sample_build.py)
    "test_diagnose.py",
    "test_report.py",
    "test_upgrade.py",
    "test_importers_formats.py",
    "test_generic_reader.py",
    "test_incomplete_build.py",
    "test_importers_dvclive.py",
    "test_adding_a_check.py",
    "test_fuzz_input.py",
    "test_corpus_manifests.py",
    "test_staging.py",
    "test_detectors.py",
    "test_judgement.py",
    "test_story.py",
    "test_costing.py",
    "test_margins.py",
    "test_ranking.py",
    "test_registry.py",
    "test_calibration.py",
)


def slowest_first(items: list[pytest.Item]) -> None:
    """Sort items in place: the listed files first, in the list's order, then the others."""
    rank = {name: position for position, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(item.path).name, len(rank)))
