"""The README's recipes run as written on a fresh clone (issue 26).

Every ```bash block of README.md is run, in its own `bash -e`, in a fresh copy of this
repository (support/fresh_copy.py: the files a clone would hold, uncommitted changes included,
nothing git ignores), in the README's order. The venv is reused (RUN_DIAGNOSIS_VENV:
scripts/bootstrap.sh finds it up to date) and the copy's own package comes first on PYTHONPATH,
so the copy runs its own code without a new install.

scripts/test.sh makes that copy and runs the README's first recipe in it (PRERUN, `bash
scripts/diagnose_sample.sh`: the sample's `ci` build, which the sample's tests read too) in the
background, with the environment this test gives the blocks; RUN_DIAGNOSIS_TEST_CLONE names the
copy. Then the block that is exactly that command is not run a second time: its exit code and
output are the ones scripts/test.sh kept (support/sample_build.py), and the other blocks run
afterwards in the same copy. Run alone, this file makes its own copy and runs every block.

The README's placeholders name the user's data; they are replaced by data that exists here
(PLACEHOLDERS: the team's sample run as five files, a warehouse of two copies of it), and every
/tmp path by a folder of this test that does not exist yet (the recipe itself must create what
it needs). A block that cannot run here says so in a marker line right before its fence:

    <!-- readme-test: skip (why) -->

(tests/python/test_readme_commands.py checks that each skipped block gives its reason.)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmark import README_END, README_START
from report_readme import replace_between
from support.fresh_copy import fresh_copy
from support.paths import REPO
from support.sample_build import EXIT_CODE_FILE, OUTPUT_FILE, SAMPLE_BUILD_ENV_VAR, WAIT_SECONDS, wait_for

README = REPO / "README.md"
PERFORMANCE = REPO / "docs" / "performance.md"
README_MAX_LINES = 150  # a front door (issue 23): the detail lives in docs/
LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#[^)]*)?\)")
SEEDS = REPO / "seeds"
SKIP_MARKER = re.compile(r"^<!-- readme-test: skip \((?P<why>[^)]+)\) -->$")
FENCE = re.compile(r"^```bash\n(?P<body>.*?)^```$", re.S | re.M)
BLOCK_SECONDS = 900  # a block that hangs fails instead of holding the suite
CLONE_ENV_VAR = "RUN_DIAGNOSIS_TEST_CLONE"  # scripts/test.sh's copy, PRERUN already run in it
PRERUN = "bash scripts/diagnose_sample.sh"  # the README block scripts/test.sh runs (same command)


@dataclass(frozen=True)
class Block:
    number: int
    line: int
    body: str
    skip: str | None  # the reason, for a block marked as needing what this machine lacks


def readme_blocks(text: str) -> list[Block]:
    """The ```bash blocks of a README, in order, each with its skip reason (if marked)."""
    blocks = []
    for number, match in enumerate(FENCE.finditer(text), start=1):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = SKIP_MARKER.match(before.strip())
        line = text[: match.start()].count("\n") + 1
        blocks.append(Block(number, line, match.group("body"), marker.group("why") if marker else None))
    return blocks


def sample_run(folder: Path) -> Path:
    """The team's sample run as a five-file run folder (the seeds, with their common prefix)."""
    folder.mkdir(parents=True)
    for path in SEEDS.glob("anthropic_*"):
        shutil.copy2(path, folder / path.name)
    return folder


def placeholders(work: Path) -> dict[str, str]:
    """The README's placeholders and /tmp paths -> data and folders of this test, longest first."""
    run = sample_run(work / "data" / "run")
    warehouse = work / "data" / "warehouse"
    for name in ("run_a", "run_b"):
        sample_run(warehouse / name)
    mapping = {
        "/path/to/run": str(run),
        "SOURCE": str(run),
        "DIR": str(work / "out"),
        "/warehouse": str(warehouse),
        "<run_id>": "run_a",
        "/tmp/": f"{work / 'tmp'}/",
    }
    (work / "tmp").mkdir()
    return dict(sorted(mapping.items(), key=lambda item: -len(item[0])))


def substituted(body: str, mapping: dict[str, str]) -> str:
    """The block with each placeholder replaced, in one pass (a value is never rewritten): a word
    (SOURCE, DIR) only as a whole word (never inside RUN_DIAGNOSIS_RUN_DIR or SOURCES.md), a path
    at any place."""
    patterns = []
    for placeholder in mapping:  # longest first
        before = r"(?<![\w/])" if placeholder[0].isalnum() else ""
        after = r"(?!\w)" if placeholder[-1].isalnum() else ""
        patterns.append(before + re.escape(placeholder) + after)
    return re.sub("|".join(patterns), lambda match: mapping[match.group(0)], body)


def command_of(body: str) -> str:
    """A block's commands without comments and blank lines, one per line."""
    lines = (line.split("#", 1)[0].strip() for line in body.splitlines())
    return "\n".join(line for line in lines if line)


@dataclass(frozen=True)
class Clone:
    folder: Path
    prerun: tuple[str, str] | None  # PRERUN's exit code and output, when scripts/test.sh ran it here


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Clone:
    """scripts/test.sh's fresh copy once its PRERUN is done, else one made here."""
    shared, sample = os.environ.get(CLONE_ENV_VAR), os.environ.get(SAMPLE_BUILD_ENV_VAR)
    if shared and sample:
        exit_code = wait_for(Path(sample) / EXIT_CODE_FILE, WAIT_SECONDS)  # before any block uses target/
        output = (Path(sample) / OUTPUT_FILE).read_text(encoding="utf-8")
        return Clone(Path(shared), (exit_code, output))
    return Clone(fresh_copy(tmp_path_factory.mktemp("readme") / "clone"), None)


def test_the_readme_has_runnable_blocks_and_every_skip_says_why() -> None:
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    assert len([b for b in blocks if b.skip is None]) >= 4, blocks
    assert all(b.skip and len(b.skip) > 10 for b in blocks if b.skip is not None)


def test_placeholders_are_replaced_as_words_only(tmp_path: Path) -> None:
    mapping = {"SOURCE": "/data/run", "DIR": "/out", "/tmp/": "/work/tmp/"}
    body = "run-diagnosis diagnose SOURCE --out DIR  # DIR/run/ (the five files); SOURCES.md stays\n"
    body += "RUN_DIAGNOSIS_DB=/tmp/myrun/x.duckdb\n"
    assert substituted(body, mapping) == (
        "run-diagnosis diagnose /data/run --out /out  # /out/run/ (the five files); SOURCES.md stays\n"
        "RUN_DIAGNOSIS_DB=/work/tmp/myrun/x.duckdb\n"
    )


def test_the_prerun_command_is_recognised_as_a_block() -> None:
    body = "bash scripts/diagnose_sample.sh   # build everything (reports/)\n"
    assert command_of(body) == PRERUN and command_of(body + "rm -rf reports\n") != PRERUN


def test_every_readme_command_block_runs_on_a_fresh_clone(clone: Clone, tmp_path: Path) -> None:
    mapping = placeholders(tmp_path)
    env = {
        **os.environ,
        "RUN_DIAGNOSIS_VENV": str(REPO / ".venv"),
        "PYTHONPATH": str(clone.folder / "src"),
        "RUN_DIAGNOSIS_SKIP_BROWSER": "1",
    }
    env.pop("RUN_DIAGNOSIS_DB", None)
    env.pop("RUN_DIAGNOSIS_RUN_DIR", None)
    ran = []
    for block in readme_blocks((clone.folder / "README.md").read_text(encoding="utf-8")):
        if block.skip is not None:
            continue
        script = substituted(block.body, mapping)
        if clone.prerun is not None and command_of(script) == PRERUN:
            code, output = clone.prerun  # scripts/test.sh ran this very command here
            assert code == "0", (
                f"README block {block.number} (line {block.line}), run by scripts/test.sh, failed with "
                f"exit code {code}:\n{script}\n--- output (end) ---\n{output[-4000:]}"
            )
        else:
            result = subprocess.run(
                ["bash", "-e", "-c", script],
                cwd=clone.folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=BLOCK_SECONDS,
            )
            assert result.returncode == 0, (
                f"README block {block.number} (line {block.line}) failed with exit code "
                f"{result.returncode}:\n{script}\n--- stderr (end) ---\n{result.stderr[-4000:]}\n"
                f"--- stdout (end) ---\n{result.stdout[-2000:]}"
            )
        ran.append(block.number)
    assert ran
    # what the recipes promise to write
    out = tmp_path / "out"
    assert (out / "report.md").is_file() and (out / "findings.json").is_file()
    assert (tmp_path / "tmp" / "myrun" / "report.md").is_file()
    # the lineage page, and the sample's report its exposure links (../reports/report.html)
    assert (clone.folder / "target" / "static_index.html").is_file()
    assert (clone.folder / "reports" / "report.html").is_file()


def test_the_readme_is_a_front_door_whose_links_resolve() -> None:
    """README.md stays short and links into docs/; every relative link of the README and of the
    docs/ pages points at a file of the tree."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    linked = {match.group("target") for match in LINK.finditer(text)}
    docs = sorted((REPO / "docs").glob("*.md"))
    assert {f"docs/{page.name}" for page in docs} <= linked, "a docs/ page the README does not link"
    broken = [
        f"{page.relative_to(REPO)} -> {match.group('target')}"
        for page in [README, *docs]
        for match in LINK.finditer(page.read_text(encoding="utf-8"))
        if "://" not in match.group("target") and not (page.parent / match.group("target")).exists()
    ]
    assert broken == []


def test_the_documented_measured_numbers_are_the_benchmarks_own_block(tmp_path: Path) -> None:
    """docs/performance.md's benchmark tables sit between the markers `tools/benchmark.py
    --readme docs/performance.md` rewrites: they are its output, in its shape, and rewriting keeps
    the rest of the document."""
    text = PERFORMANCE.read_text(encoding="utf-8")
    assert text.count(README_START) == 1 and text.count(README_END) == 1
    block = text.split(README_START)[1].split(README_END)[0].strip()
    assert block.startswith("Measured ") and "| run | project: wall / CPU / peak |" in block
    rewritten = replace_between(text, README_START, README_END, "Measured now.")
    assert rewritten.replace(f"{README_START}\nMeasured now.\n{README_END}", "") == text.replace(
        f"{README_START}\n{block}\n{README_END}", ""
    )
