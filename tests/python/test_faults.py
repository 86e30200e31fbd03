"""The faults campaign (issue 24): the warehouse keeps its promise when it is broken the way an
operator breaks it. Every fault ends in a warehouse whose marts equal a clean build's, exactly,
or in a clear refusal (exit status 2, no traceback, nothing half-written); a defect of the tool
costs no report. docs/reliability.md lists each fault and its outcome.

The reference is one run-diagnosis diagnose of four runs, built together with one DuckDB thread:
`twice` (a resumed LLaMA-Factory log written by two processes at once: every line twice,
interleaved; issue 21 found no report for it), `steady` (healthy; its config leaves
decay_steps unknown, an info note), `troubled` (LR 4x the config, a slow stretch, a crash and
resume that lost clipping) and `sample` (the team's sample run, from the seeds). Float sums of
step times, replays and excess losses feed their costs: with a plain `sum()`, the sample's
slow-steps cost differed in its last bits between builds with one and four DuckDB threads.
Every other build here starts from the reference's canonical run folders and is compared with
it mart by mart, row by row (DuckDB's `except all` both ways). All builds use the database name
run-diagnosis diagnose uses, so the file parses the dbt project once.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from run_diagnosis import diagnose
from run_diagnosis.dbt_runner import BuildRefused, BuildResult, build_run
from run_diagnosis.report import write_report
from run_diagnosis.report_data import ReportNotWritten
from run_diagnosis.report_fleet import write_fleet
from run_diagnosis.safe_io import exclusive
from run_diagnosis.tool_defects import tool_defects
from support import report_fixtures as fx
from support.paths import REPO
from support.run_builder import RunBuilder
from support.sample_build import copy_seed_files

DB_NAME = diagnose.DB_FILE
RUN_IDS = ("sample", "steady", "troubled", "twice")
# the models only (the marts are what is compared; no model reads a test's result)
EXCLUDE = "path:seeds/anthropic_* resource_type:test resource_type:unit_test"
# the marts a clean build determines; the history marts (models/marts/history/) record each build
# (its invocation and time) and are by design different from one build to the next
MARTS = tuple(
    sorted(p.stem for p in (REPO / "models" / "marts").rglob("*.sql") if p.parent.name != "history")
)
DUCKDB_THREADS = "RUN_DIAGNOSIS_DUCKDB_THREADS"
# a build in another process, saying its progress on stderr; BuildRefused is its exit status 2
CHILD_BUILD = """
import sys
from pathlib import Path
from run_diagnosis.dbt_runner import BuildRefused, build_run
try:
    build_run(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), exclude=sys.argv[4], check=False,
              progress=lambda message: print(message, file=sys.stderr, flush=True))
except BuildRefused as error:
    print(f"refused: {error}", file=sys.stderr, flush=True)
    sys.exit(2)
"""
HOLD_DATABASE = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
sys.stdin.read()
"""


def llamafactory_log_written_twice(folder: Path) -> Path:
    """A resumed LLaMA-Factory trainer_log.jsonl (steps 10-120, then a new process from step 100
    to 200) as two processes write it: every line twice, interleaved."""
    lines = []
    for attempt, (first, last, clock) in enumerate(((10, 120, 0), (100, 200, 5))):
        for step in range(first, last + 1, 10):
            clock += 20
            loss = 3.0 * 0.993**step + 1.0 + 0.013 * attempt
            lines.append(
                {"current_steps": step, "total_steps": 200, "loss": round(loss, 4), "lr": 1e-4,
                 "elapsed_time": f"0:{clock // 60:02d}:{clock % 60:02d}"}
            )  # fmt: skip
    folder.mkdir(parents=True)
    text = "".join(json.dumps(line) + "\n" for line in lines for _ in (1, 2))
    (folder / "trainer_log.jsonl").write_text(text, encoding="utf-8")
    return folder


def sources(folder: Path) -> list[Path]:
    """The three runs as a user hands them to run-diagnosis diagnose."""
    RunBuilder(seed=3, total_steps=120).plant_config(decay_steps=None).write(folder / "steady")
    troubled = (
        RunBuilder(seed=5, total_steps=120)
        .plant_lr_scale(4.0)
        .plant_slow_stretch(40, 55, 5.0)
        .plant_restart(crash_after=90, resume_from=70, unclipped_after=True)
    )
    troubled.write(folder / "troubled")
    twice = llamafactory_log_written_twice(folder / "twice")
    return [twice, folder / "steady", folder / "troubled", copy_seed_files(folder / "sample")]


@contextmanager
def duckdb_threads(n: int) -> Iterator[None]:
    saved = os.environ.get(DUCKDB_THREADS)
    os.environ[DUCKDB_THREADS] = str(n)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(DUCKDB_THREADS, None)
        else:
            os.environ[DUCKDB_THREADS] = saved


@dataclass(frozen=True)
class Reference:
    """The clean diagnosis: its sources, output folder, canonical run folders and database."""

    sources: list[Path]
    out: Path

    @property
    def warehouse(self) -> Path:
        return self.out / diagnose.WAREHOUSE_SUBDIR

    @property
    def db_path(self) -> Path:
        return self.out / DB_NAME

    def copy_runs(self, folder: Path, order: tuple[str, ...] = RUN_IDS) -> Path:
        """The canonical run folders, copied into folder in the order given."""
        for run_id in order:
            shutil.copytree(self.warehouse / run_id, folder / run_id)
        return folder


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    root = tmp_path_factory.mktemp("reference")
    found = Reference(sources(root / "sources"), root / "out")
    with duckdb_threads(1):
        status = diagnose.main([*map(str, found.sources), "--out", str(found.out)])
    assert status == diagnose.EXIT_OK
    return found


def build(runs: Path, out: Path, **options: object) -> BuildResult:
    result = build_run(runs, out / DB_NAME, out, check=False, **options)  # type: ignore[arg-type]
    assert result.ok, "\n".join(result.errors) or result.output[-3000:]
    return result


def is_history_column(name: str) -> bool:
    """A column the fleet mart `runs` takes from the build history (how many builds, what changed
    since the previous one): it counts builds, so a rebuilt warehouse differs there by design."""
    return name == "build_number" or name.endswith("_since_previous_build")


def mart_differences(db_a: Path, db_b: Path) -> dict[str, str]:
    """mart -> how it differs between two builds (row counts, or rows in one and not the other)."""
    differences = {}
    with duckdb.connect() as con:
        con.execute(f"attach '{db_a}' as a (read_only)")
        con.execute(f"attach '{db_b}' as b (read_only)")
        for mart in MARTS:
            counts = [con.execute(f"select count(*) from {db}.main.{mart}").fetchone()[0] for db in "ab"]
            names = [row[0] for row in con.execute(f"describe a.main.{mart}").fetchall()]
            kept = ", ".join(name for name in names if not is_history_column(name))
            only_a, only_b = (
                con.execute(
                    f"select {kept} from {x}.main.{mart} except all select {kept} from {y}.main.{mart}"
                ).fetchall()
                for x, y in ("ab", "ba")
            )
            if counts[0] != counts[1] or only_a or only_b:
                differences[mart] = (
                    f"rows {counts}; first only in a: {only_a[:1]}; first only in b: {only_b[:1]}"
                )
    return differences


def assert_same_marts(db: Path, reference: Reference) -> None:
    assert not mart_differences(db, reference.db_path)
    with duckdb.connect(str(reference.db_path), read_only=True) as con:  # the comparison could fail
        assert con.execute("select count(distinct run_id) from main.findings").fetchone()[0] == len(RUN_IDS)


def without_footer(text: str) -> str:
    return re.sub(r"<footer>.*</footer>", "", text)  # the HTML footer holds the time and the path


def test_log_written_twice_gets_a_report_with_one_restart(reference: Reference) -> None:
    """Issue 21: dbt build failed on a duplicate run_restart finding id and the user got no report."""
    twice = json.loads((reference.out / "runs" / "twice" / "findings.json").read_text(encoding="utf-8"))
    assert [f["finding_id"] for f in twice if f["category"] == "run_restart"] == ["run_restart:100"]
    steady = (reference.out / "runs" / "steady" / "report.md").read_text(encoding="utf-8")
    assert "**Nothing serious found: no finding above low severity." in steady
    assert "## Fix first" not in steady  # its info note is not "fix first"


@pytest.fixture(scope="module")
def rebuilt(reference: Reference, tmp_path_factory: pytest.TempPathFactory) -> tuple[BuildResult, list[str]]:
    """The reference database truncated to half its bytes, then built again with one dbt thread
    and four DuckDB threads, from run folders copied in the other order: the build, and what it
    said. (The reference: two dbt threads, one DuckDB thread.)"""
    root = tmp_path_factory.mktemp("rebuilt")
    runs, out = reference.copy_runs(root / "runs", RUN_IDS[::-1]), root / "build"
    out.mkdir()
    damaged = out / DB_NAME
    shutil.copy(reference.db_path, damaged)
    os.truncate(damaged, damaged.stat().st_size // 2)
    said: list[str] = []
    with duckdb_threads(4):
        return build(runs, out, threads=1, progress=said.append), said


def test_truncated_database_is_set_aside_and_rebuilt(
    reference: Reference, rebuilt: tuple[BuildResult, list[str]]
) -> None:
    result, said = rebuilt
    moved = [line for line in said if f"the database {result.db_path} cannot be read" in line]
    assert moved and f"moved aside to {DB_NAME}.unreadable" in moved[0]
    assert (result.db_path.parent / f"{DB_NAME}.unreadable").is_file()
    assert_same_marts(result.db_path, reference)


def test_same_input_gives_identical_marts_and_reports(
    reference: Reference, rebuilt: tuple[BuildResult, list[str]], tmp_path: Path
) -> None:
    """Other dbt and DuckDB thread counts, run folders in another order: the same marts to the
    last bit, and the same reports and fleet page byte for byte."""
    again, _ = rebuilt
    assert_same_marts(again.db_path, reference)
    for run_id in RUN_IDS:
        ours = write_report(again.db_path, again.target_path, tmp_path / "runs" / run_id, None, run_id)
        for kind, path in ours.items():
            theirs = reference.out / "runs" / run_id / path.name
            text, expected = path.read_text(encoding="utf-8"), theirs.read_text(encoding="utf-8")
            assert without_footer(text) == without_footer(expected), f"{run_id} {kind} differs"
    for path in write_fleet(again.db_path, tmp_path).values():
        assert path.read_text(encoding="utf-8") == (reference.out / path.name).read_text(encoding="utf-8")


def start_child_build(runs: Path, out: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", CHILD_BUILD, str(runs), str(out / DB_NAME), str(out), EXCLUDE]
    return subprocess.Popen(
        command,
        cwd=REPO,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def read_until(child: subprocess.Popen[str], reached: Callable[[str], bool]) -> list[str]:
    """The child's stderr lines up to the first that `reached` accepts (fails if it ends first)."""
    assert child.stderr is not None
    lines: list[str] = []
    for line in child.stderr:
        lines.append(line.rstrip())
        if reached(line):
            return lines
    child.wait()
    pytest.fail(
        f"the build ended (exit {child.returncode}) before the kill point:\n" + "\n".join(lines[-20:])
    )


def at_share(share: float) -> Callable[[str], bool]:
    """A progress line saying at least `share` of the build's nodes are done."""

    def reached(line: str) -> bool:
        done = re.search(r"dbt: (\d+) of (\d+) nodes done", line)
        return done is not None and int(done.group(1)) >= share * int(done.group(2))

    return reached


def test_killed_build_then_grown_and_removed_runs_rebuild_to_a_clean_build(
    reference: Reference, tmp_path: Path
) -> None:
    """In a built warehouse, a run's log is cut to 80 of its steps and an extra run is added; the
    build of them is SIGKILLed halfway through its models (a second build started meanwhile is
    refused, naming the first). Then the log is whole again and the extra run folder is removed:
    the next build redoes the cut run even though its files are back to what was built before
    (the killed build had deleted or rewritten some of its rows), deletes the removed run
    everywhere (the killed build had written some of its rows) and equals the clean build."""
    runs, out = reference.copy_runs(tmp_path / "runs"), tmp_path / "build"
    out.mkdir()
    shutil.copy(reference.db_path, out / DB_NAME)  # the same files: built already
    RunBuilder(seed=11, total_steps=120).plant_lr_scale(2.0).write(runs / "removed")
    train_log = next((runs / "steady").glob("*train_log.csv"))
    full = train_log.read_text(encoding="utf-8")
    train_log.write_text("".join(full.splitlines(keepends=True)[:81]), encoding="utf-8")

    first = start_child_build(runs, out)
    read_until(first, lambda line: "incremental build:" in line)  # it holds the lock
    rival = start_child_build(runs, out)
    _, said = rival.communicate(timeout=120)
    assert rival.returncode == 2, said
    assert f"refused: the database {out / DB_NAME} is in use by another process" in said
    assert f"pid {first.pid} " in said and "Traceback" not in said
    read_until(first, at_share(0.5))
    os.killpg(first.pid, signal.SIGKILL)
    assert first.wait() == -signal.SIGKILL
    with duckdb.connect(str(out / DB_NAME), read_only=True) as con:  # the kill left the extra run's rows
        assert con.execute(
            "select count(*) from main.stg_training__steps where run_id = 'removed'"
        ).fetchone()[0]

    train_log.write_text(full, encoding="utf-8")
    shutil.rmtree(runs / "removed")
    again = build(runs, out, exclude=EXCLUDE, threads=4)
    assert "incremental build: 1 of 4 run(s) new or changed" in again.output
    assert_same_marts(again.db_path, reference)


def test_database_open_in_another_program_is_refused_naming_it(reference: Reference, tmp_path: Path) -> None:
    held = tmp_path / DB_NAME
    shutil.copy(reference.db_path, held)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_DATABASE, str(held)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        expected = rf"the database {re.escape(str(held))} is open in another program \(.*PID {holder.pid}\)"
        with pytest.raises(BuildRefused, match=expected):
            build_run(reference.warehouse, held, tmp_path, exclude=EXCLUDE)
    finally:
        holder.communicate("")
    assert not (tmp_path / f"{DB_NAME}.unreadable").exists()  # refused, not set aside


def test_a_broken_invariant_quarantines_its_run_and_never_costs_the_report(
    reference: Reference, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A row of one run's findings duplicated in the database (what a defect of the tool would
    leave), and the same diagnosis again: the structural tests fail on that run's rows only, the
    build is completed anyway, every report is written, the run's report and findings name the
    defect first, the fleet page quarantines that run alone, and the exit status is 3."""
    out = tmp_path / "out"
    shutil.copytree(reference.out, out)
    with duckdb.connect(str(out / DB_NAME)) as con:
        one_row = "select * from main.findings where run_id = 'twice' order by finding_id limit 1"
        con.execute(f"insert into main.findings {one_row}")
    capsys.readouterr()
    assert diagnose.main([*map(str, reference.sources), "--out", str(out)]) == diagnose.EXIT_TOOL_DEFECT
    said = capsys.readouterr().err
    defect = "findings_finding_id_unique_within_run failed (1 failing row)"
    assert f"diagnose: defect of this tool: {defect} (rows of run twice)" in said
    assert "incremental build: 0 of 4 run(s) new or changed" in said and "Traceback" not in said
    twice = (out / "runs" / "twice" / "report.md").read_text(encoding="utf-8")
    assert re.fullmatch(
        r"## Defect of this tool: \d+ of its own checks failed on this run", twice.split("\n")[2]
    )
    assert f"- {defect}." in twice
    findings = json.loads((out / "runs" / "twice" / "findings.json").read_text(encoding="utf-8"))
    assert findings and all("findings_finding_id_unique_within_run" in f["tool_defects"] for f in findings)
    for run_id in ("sample", "steady", "troubled"):
        report = (out / "runs" / run_id / "report.md").read_text(encoding="utf-8")
        assert report == (reference.out / "runs" / run_id / "report.md").read_text(encoding="utf-8")
    index = (out / "index.md").read_text(encoding="utf-8")
    assert f"## Defects of the tool\n\n- {defect}: quarantined twice." in index
    assert re.search(r"\| twice \| [a-z]+ \(quarantined: a defect of the tool\) \|", index)
    assert index.count("quarantined: a defect of the tool") == 1


@contextmanager
def small_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted on folder (we run as root in CI); skipped when it cannot be mounted."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill ({mounted.stderr.strip() or 'mount failed'}; needs root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_failed_build_on_a_full_folder_is_refused_as_full_whatever_duckdb_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a full disk DuckDB can leave a database file it could not finish and report it as "not a
    valid DuckDB database file", with no word of the space: a failed build whose folder has less
    than FULL_FOLDER_FREE_BYTES free is refused as full (exit 2), not a tool failure (exit 1)."""
    from run_diagnosis import dbt_runner

    words = [
        f'IO Error: The file "{tmp_path}/diagnosis.duckdb" exists, '
        "but it is not a valid DuckDB database file!"
    ]
    monkeypatch.setattr(dbt_runner, "_free_bytes", lambda folder: 4096)
    with pytest.raises(BuildRefused, match=re.escape(f"{tmp_path} is full (no space left on its device)")):
        dbt_runner._refuse_on_folder_problem(words, tmp_path, failed=True)
    dbt_runner._refuse_on_folder_problem(words, tmp_path, failed=False)  # a build that passed: nothing
    monkeypatch.setattr(dbt_runner, "_free_bytes", lambda folder: 10 * dbt_runner.FULL_FOLDER_FREE_BYTES)
    dbt_runner._refuse_on_folder_problem(words, tmp_path, failed=True)  # room left: the error stands


def test_full_or_read_only_output_folder_is_exit_2_with_no_report(
    reference: Reference, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = str(reference.sources[1])
    with small_tmpfs(tmp_path / "small", "3m") as small:
        out = small / "out"
        assert diagnose.main([source, "--out", str(out)]) == diagnose.EXIT_BAD_INPUT
        said = capsys.readouterr().err
        assert f"diagnose: error: {out} is full (no space left on its device)" in said
        assert "Traceback" not in said and "Logging error" not in said
        assert not any((out / name).exists() for name in diagnose.REPORT_FILES)
    with small_tmpfs(tmp_path / "read_only", "1m") as read_only:
        subprocess.run(["mount", "-o", "remount,ro", str(read_only)], check=True)
        out = read_only / "out"
        assert diagnose.main([source, "--out", str(out)]) == diagnose.EXIT_BAD_INPUT
        assert f"diagnose: error: {out} is not writable (read-only file system)" in capsys.readouterr().err


def test_second_diagnosis_into_the_same_folder_is_refused(
    reference: Reference, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with exclusive(out / diagnose.LOCK_FILE, "the output folder"):
        assert diagnose.main([str(reference.sources[1]), "--out", str(out)]) == diagnose.EXIT_BAD_INPUT
    said = capsys.readouterr().err
    assert (
        f"diagnose: error: the output folder {out} is in use by another process: pid {os.getpid()} " in said
    )
    assert "--wait SECONDS" in said and not (out / "run").exists()


def test_a_report_that_cannot_be_written_whole_is_not_written_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while report.html is written: report.md is not replaced either, no
    temporary file stays, and the error names the folder (ReportNotWritten: exit 2)."""
    db = fx.build_db(tmp_path / "run.duckdb", fx.clean_tables())
    out = tmp_path / "reports"
    out.mkdir()
    old = {name: f"an earlier {name}\n" for name in ("report.md", "report.html", "findings.json")}
    for name, text in old.items():
        (out / name).write_text(text, encoding="utf-8")
    write_text = Path.write_text

    def disk_fills_at_the_html(path: Path, text: str, *args: object, **kwargs: object) -> int:
        if path.name == ".report.html.tmp":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return write_text(path, text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", disk_fills_at_the_html)
    with pytest.raises(ReportNotWritten, match=f"the report was not written: {re.escape(str(out))} is full"):
        write_report(db, tmp_path / "no-target", out, progress=None)
    assert {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()} == old


def test_which_failed_tests_are_defects_of_the_tool() -> None:
    """An anomaly test that fails fired on the run's problems; one that errors, and a structural
    test that fails or errors, are defects of the tool (not pinned to a run without the database)."""
    anomaly = {"config": {"meta": {"category": "overfitting"}}, "name": "validation_loss_rises"}
    structural = {"config": {}, "name": "findings_finding_id_unique_within_run"}
    nodes = {"test.p.anomaly": anomaly, "test.p.structural": structural, "test.p.warned": structural}
    results = [
        {"unique_id": "test.p.anomaly", "status": "fail", "failures": 2},
        {"unique_id": "test.p.structural", "status": "fail", "failures": 1},
        {"unique_id": "test.p.warned", "status": "warn", "failures": 1},
        {"unique_id": "model.p.findings", "status": "error"},
    ]
    found = tool_defects(results, nodes, None)
    assert [(d.test_name, d.status, d.run_ids) for d in found] == [
        ("findings_finding_id_unique_within_run", "fail", None)
    ]
    assert found[0].sentence() == "findings_finding_id_unique_within_run failed (1 failing row)"
    errored = tool_defects(
        [{"unique_id": "test.p.anomaly", "status": "error", "message": "Binder Error"}], nodes, None
    )
    assert [d.sentence() for d in errored] == ["validation_loss_rises could not run: Binder Error"]
