"""The team's sample run (the seeds) built once for the whole test run.

`scripts/test.sh` runs the README's first recipe, `bash scripts/diagnose_sample.sh` (`dbt build
--selector ci`: every node, seeds, models, anomaly, hygiene and unit tests; then the report), in a
fresh copy of the tree (support/fresh_copy.py), in the background while pytest starts on the other
test files. When it is done it copies that build's database and target folder into one folder, keeps
the recipe's console output in `output.txt` there, writes its exit code into `exit_code`, and names
the folder in RUN_DIAGNOSIS_TEST_SAMPLE; the tests that read the sample (test_sample_run,
test_diagnose) wait for that file and use that build instead of building the sample again, and
test_readme_commands counts it as the README's first recipe run. Without the variable (one test
file run on its own) the same build is made once per process with the harness (`select="fqn:*"`
is the `ci` selector's definition).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from run_diagnosis.dbt_runner import ERROR_STATUSES, BuildResult, build_run, read_run_results
from support.paths import SEEDS

SAMPLE_BUILD_ENV_VAR = "RUN_DIAGNOSIS_TEST_SAMPLE"
SAMPLE_DB = "run_diagnosis.duckdb"  # the file name scripts/test.sh gives the sample's database
OUTPUT_FILE = "output.txt"  # dbt's console output, as scripts/test.sh keeps it
EXIT_CODE_FILE = "exit_code"  # written by scripts/test.sh when its build of the sample is done
WAIT_SECONDS = 900.0  # how long a test waits for that build (it takes about 40 s alone)
ALL_NODES = "fqn:*"  # selectors.yml: the `ci` selector
SEED_FILES = ("train_log.csv", "eval_log.csv", "shard_info.csv", "run_events.csv", "run_config.json")
SEED_PREFIX = "anthropic_"


def copy_seed_files(folder: Path) -> Path:
    """The sample run's five seed files copied into folder: a canonical run folder."""
    folder.mkdir(parents=True)
    for suffix in SEED_FILES:
        shutil.copy2(SEEDS / f"{SEED_PREFIX}{suffix}", folder / f"{SEED_PREFIX}{suffix}")
    return folder


@functools.cache
def sample_build() -> BuildResult:
    """The sample's `ci` build: scripts/test.sh's (RUN_DIAGNOSIS_TEST_SAMPLE), else one made here."""
    folder = os.environ.get(SAMPLE_BUILD_ENV_VAR)
    if not folder:
        work = Path(tempfile.mkdtemp(prefix="sample_build_"))
        return build_run(None, work / SAMPLE_DB, work, select=ALL_NODES, threads=4)
    return prebuilt(Path(folder))


def prebuilt(folder: Path) -> BuildResult:
    """The build scripts/test.sh made in folder, read back from its files once it is done."""
    exit_code = wait_for(folder / EXIT_CODE_FILE, WAIT_SECONDS)
    output = (folder / OUTPUT_FILE).read_text(encoding="utf-8")
    assert exit_code in ("0", "1"), f"scripts/test.sh's sample build exited {exit_code}:\n{output[-3000:]}"
    target = folder / "target"
    results = read_run_results(target)
    assert results, f"{target / 'run_results.json'} is missing or empty: rerun scripts/test.sh"
    counts = Counter(str(result.get("status")) for result in results)
    errors = tuple(
        str(result.get("message") or result.get("unique_id"))
        for result in results
        if result.get("status") in ERROR_STATUSES
    )
    return BuildResult(
        1 if errors else 0, folder / SAMPLE_DB, target, folder / "logs", 0.0, counts, errors, (), output
    )


def wait_for(path: Path, seconds: float) -> str:
    """The text of path once it exists (written whole by one `echo`), waiting up to seconds."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear within {seconds:.0f} s"
        time.sleep(0.5)
    return path.read_text(encoding="utf-8").strip()
