"""Time the diagnosis beside its two yardsticks, and print the ratios the goals are stated in.

    python tools/benchmark.py                      # sample, 10k and 1M steps
    python tools/benchmark.py --with-10m           # ... and 10M steps (minutes, GBs)
    python tools/benchmark.py --steps 10000 --no-sample
    python tools/benchmark.py --fleet 1000 --no-sample --steps   # 1,000 runs x 10k steps, + 1 run
    python tools/benchmark.py --readme docs/performance.md    # ... and write the output there

Three commands run as separate processes, each measured whole (wall seconds, CPU seconds
and peak resident memory of the process tree, from wait4):

- project: `run-diagnosis diagnose RUN --out DIR` (import, `dbt build` with the default
  selector, report), the user's path;
- floor:   `dbt build` of benchmarks/dbt_floor/, a one-model project on the same dbt and
  adapter: what any dbt project pays before its first row;
- peer:    `benchmarks/pandas_peer.py RUN`, the pandas notebook doing the same checks.

Plus a raw DuckDB scan of the train log (in-process) as the data's own floor. Each synthetic
run's findings are compared with those recorded in benchmarks/reference_findings.json (every
field, floats to 6 significant digits; `--record-reference` records them): a change made for
speed must leave them identical. With --fleet N,
N runs of --fleet-steps steps each are written into one folder of run folders and built
together in one `dbt build` (the warehouse of runs), then one more run is added and the
build repeated: the increment processes that run only. Runs are
synthetic (canonical files; a spike, a slow stretch, a restart that replays 1%). Progress
goes to stderr; the Markdown tables with the goals go to stdout. The machine's load
average is printed with them: on a shared machine, wall times grow with the load, CPU
seconds much less.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from report_readme import replace_between
from run_diagnosis.dbt_runner import FILE_LOG_LEVEL_ENV_VAR, dbt_executable
from run_diagnosis.run_files import FILE_SUFFIXES, run_file

REPO = Path(__file__).resolve().parents[1]  # tools/ -> the checkout
FLOOR_PROJECT = REPO / "benchmarks" / "dbt_floor"
PEER = REPO / "benchmarks" / "pandas_peer.py"
# the user's command, installed beside this Python (scripts/bootstrap.sh)
DIAGNOSE = [str(Path(sys.executable).with_name("run-diagnosis")), "diagnose"]
GB = 1024**3
# the synthetic runs' findings as recorded (run size -> digest and summary), and how they compare
REFERENCE = REPO / "benchmarks" / "reference_findings.json"
REFERENCE_DIGITS = 6  # significant digits of a float (a reordered float sum moves the last bits)
SUMMARY_FIELDS = ("finding_id", "severity", "first_step", "last_step", "steps_affected", "rank")
PREFIX = "bench_"  # the synthetic runs' file-name prefix
TEN_K, ONE_M, TEN_M = 10_000, 1_000_000, 10_000_000
# docs/performance.md's block of measured numbers, written by `--readme docs/performance.md`
# (never edited by hand)
README_START = (
    "<!-- benchmark output: start (written by python tools/benchmark.py --readme docs/performance.md) -->"
)
README_END = "<!-- benchmark output: end -->"


@dataclass(frozen=True)
class Measure:
    """One whole-process measurement."""

    wall_s: float
    cpu_s: float
    peak_mb: float
    # what the process wrote on stderr, each line with the seconds since it started
    stderr: tuple[tuple[float, str], ...] = ()

    def seen(self, prefix: str) -> float | None:
        """Seconds from the start to the first stderr line starting with prefix."""
        return next((at for at, line in self.stderr if line.startswith(prefix)), None)

    def cell(self) -> str:
        return f"{self.wall_s:.1f} s / {self.cpu_s:.1f} s CPU / {self.peak_mb:,.0f} MB"


def say(message: str) -> None:
    print(f"benchmark: {message}", file=sys.stderr, flush=True)


def run_measured(command: list[str], env: dict[str, str] | None = None, cwd: Path = REPO) -> Measure:
    """Run command to completion; wall time, CPU (user + sys) and the peak RSS of the largest
    process of its tree (wait4's rusage covers the child and the children it waited for)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines = tuple((time.perf_counter() - started, line.rstrip("\n")) for line in process.stderr)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        errors = "\n".join(line for _, line in lines)
        raise SystemExit(f"benchmark: {' '.join(command)} failed ({process.returncode}):\n{errors[-3000:]}")
    return Measure(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, lines)


def synthetic_run(steps: int, folder: Path, seed: int = 0) -> int:
    """Write a canonical run of `steps` steps: one epoch over shards of 256 examples
    (8 steps each at batch 32), warmup + cosine LR, a loss spike, a slow stretch
    and a restart that replays 1% of the run. Returns the number of raw train rows."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    step = np.arange(1, steps + 1)
    warmup, peak, floor_lr = max(10, steps // 100), 3e-3, 3e-4
    progress = np.clip((step - warmup) / (steps - warmup), 0, 1)
    lr = np.where(
        step <= warmup,
        peak * step / warmup,
        floor_lr + (peak - floor_lr) * 0.5 * (1 + np.cos(np.pi * progress)),
    )
    loss = (3.0 + 2.7 * np.exp(-step / (steps / 20))) * np.exp(rng.normal(0, 0.02, steps))
    loss[steps // 2 : steps // 2 + 5] *= 2.5
    step_time = 0.12 * np.exp(rng.normal(0, 0.04, steps))
    step_time[int(steps * 0.7) : int(steps * 0.7) + max(5, steps // 100)] *= 5
    n_shards = math.ceil(steps / 8)
    train = pd.DataFrame(
        {
            "step": step,
            "shard_id": (step - 1) // 8,
            "loss": loss,
            "grad_norm": np.clip(0.4 + rng.normal(0, 0.05, steps), 0.05, 0.95),
            "learning_rate": lr,
            "step_time_sec": step_time,
        }
    )
    crash, resume = int(steps * 0.4), int(steps * 0.39)
    replay = train[(train["step"] > resume) & (train["step"] <= crash)]
    train = pd.concat(
        [train[train["step"] <= crash], replay, train[train["step"] > crash]], ignore_index=True
    )
    train.to_csv(run_file(folder, "train", PREFIX), index=False, float_format="%.6g")
    eval_step = np.arange(0, steps + 1, max(1, steps // 50))
    pd.DataFrame(
        {
            "step": eval_step,
            "val_loss": 3.1 + 2.7 * np.exp(-np.maximum(eval_step, 1) / (steps / 20)),
            "val_accuracy": 0.2,
        }
    ).to_csv(run_file(folder, "eval", PREFIX), index=False, float_format="%.6g")
    pd.DataFrame(
        {
            "shard_id": range(n_shards),
            "n_examples": 256,
            "source": [f"source_{i % 7}" for i in range(n_shards)],
        }
    ).to_csv(run_file(folder, "shards", PREFIX), index=False)
    events = [(0, "run started")] + [
        (s, f"checkpoint saved: step_{s}.pt") for s in range(1000, steps + 1, 1000)
    ]
    events += [
        (crash, "worker exited unexpectedly"),
        (crash, f"job restarted; resuming from checkpoint step_{resume}.pt"),
    ]
    pd.DataFrame(events, columns=["step", "event"]).to_csv(run_file(folder, "events", PREFIX), index=False)
    config = {
        "run_name": f"bench-{steps}",
        "lr_schedule": {
            "type": "warmup_cosine",
            "peak_lr": peak,
            "min_lr": floor_lr,
            "warmup_steps": warmup,
            "decay_steps": steps,
        },
        "grad_clip_norm": 1.0,
        "batch_size": 32,
        "total_steps": steps,
        "eval_interval": max(1, steps // 50),
        "checkpoint_interval": 1000,
    }
    (run_file(folder, "config", PREFIX)).write_text(json.dumps(config))
    return len(train)


def findings_digest(findings_path: Path) -> tuple[str, list[list[object]]]:
    """The SHA-256 of every finding's every field (floats rounded) and a short summary of each."""
    findings = json.loads(findings_path.read_text(encoding="utf-8"))

    def rounded(value: object) -> object:
        return float(f"{value:.{REFERENCE_DIGITS}g}") if isinstance(value, float) else value

    view = [{key: rounded(value) for key, value in finding.items()} for finding in findings]
    digest = hashlib.sha256(json.dumps(view, sort_keys=True).encode()).hexdigest()
    return digest, [[finding.get(key) for key in SUMMARY_FIELDS] for finding in findings]


def compare_findings(steps: int, findings_path: Path, record: str | None) -> str:
    """One line: this run's findings against the recorded ones (record: a commit to record them as)."""
    references = json.loads(REFERENCE.read_text(encoding="utf-8")) if REFERENCE.exists() else {}
    digest, summary = findings_digest(findings_path)
    key = str(steps)
    if record is not None:
        references[key] = {
            "recorded_at": record,
            "sha256": digest,
            "fields": SUMMARY_FIELDS,
            "findings": summary,
        }
        REFERENCE.write_text(json.dumps(references, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return f"{steps:,} steps: {len(summary)} findings recorded as the reference ({record})"
    if key not in references:
        return f"{steps:,} steps: no reference findings recorded (--record-reference COMMIT)"
    reference = references[key]
    if reference["sha256"] == digest:
        recorded = reference["recorded_at"]
        return f"{steps:,} steps: the {len(summary)} findings are identical to those of {recorded}"
    added = [row for row in summary if row not in reference["findings"]]
    gone = [row for row in reference["findings"] if row not in summary]
    return (
        f"{steps:,} steps: findings DIFFER from those of {reference['recorded_at']}: "
        f"new or changed {added or 'none (other fields changed)'}; gone {gone or 'none'}"
    )


@dataclass
class Breakdown:
    """Where one diagnosis's time went, from dbt's run_results.json and its debug log (a second
    diagnosis of the same run, with RUN_DIAGNOSIS_DBT_FILE_LOG_LEVEL=debug: the timed one writes
    the default info log, which has no SQL timings)."""

    wall_s: float  # the whole run-diagnosis diagnose process
    node_phase_s: float  # dbt's node phase (run_results elapsed_time): the nodes, 2 threads
    node_sum_s: float  # the nodes' own times, summed over both threads
    sql_s: float | None  # of which DuckDB ran SQL ("SQL status: ... in X seconds" lines, summed)
    nodes: int

    # seconds from the start of run-diagnosis diagnose to its steps 2 (writing the run), 3 (dbt) and 4
    # (the report), from its progress lines
    write_at: float
    build_at: float
    report_at: float

    def row(self, name: str) -> str:
        dbt_start = self.report_at - self.build_at - self.node_phase_s
        if self.sql_s is None:
            sql, own = "not measured", "not measured"
        else:
            per_node = (self.node_sum_s - self.sql_s) / max(self.nodes, 1)
            sql, own = (
                f"{self.sql_s:.1f} s",
                f"{self.node_sum_s - self.sql_s:.1f} s ({per_node * 1000:.0f} ms a node)",
            )
        cells = (
            f"{self.wall_s:.1f} s",
            f"{self.write_at:.1f} s",
            f"{self.build_at - self.write_at:.1f} s",
            f"{dbt_start:.1f} s",
            f"{self.node_phase_s:.1f} s ({self.nodes} nodes)",
            f"{self.node_sum_s:.1f} s",
            sql,
            own,
            f"{self.wall_s - self.report_at:.1f} s",
        )
        return f"| {name} | " + " | ".join(cells) + " |"


BREAKDOWN_HEADER = (
    "| run | run-diagnosis diagnose wall | start-up, checking and reading the run | writing and checking the "
    "canonical files | dbt start-up and end (parse, hooks, artifacts) | node phase | node time "
    "summed (2 threads) | of it SQL in DuckDB | of it dbt's own work | report |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)
SQL_STATUS = re.compile(r"SQL status: \w+ in ([0-9.]+) seconds")
# the runs a second, debug-logged diagnosis is made of for the breakdown (not 10M: another 4 minutes)
BREAKDOWN_MAX_STEPS = ONE_M


def diagnose_measured(
    run_dir: Path, out: Path, env: dict[str, str] | None = None
) -> tuple[Measure, dict[str, Any]]:
    """run-diagnosis diagnose end to end, and the run_results.json of its build."""
    measure = run_measured([*DIAGNOSE, str(run_dir), "--out", str(out)], env=env)
    return measure, json.loads((out / "dbt" / "target" / "run_results.json").read_text())


def measure_project(
    run_dir: Path, out: Path, breakdown_run: bool = True
) -> tuple[Measure, float, str, Breakdown]:
    """run-diagnosis diagnose end to end (dbt's log file at its default level, as a user runs it);
    also dbt's own elapsed time, its three slowest nodes and where the time went: from a second
    diagnosis with dbt's debug log when breakdown_run, else without the SQL share."""
    measure, results = diagnose_measured(run_dir, out)
    slowest = sorted(results["results"], key=lambda r: -r["execution_time"])[:3]
    nodes = ", ".join(f"{r['unique_id'].split('.')[-1]} {r['execution_time']:.1f} s" for r in slowest)
    sql_s = None
    seen, timed = measure, results
    if breakdown_run:
        debug_out = out.with_name(out.name + "_debug_log")
        seen, timed = diagnose_measured(run_dir, debug_out, env={FILE_LOG_LEVEL_ENV_VAR: "debug"})
        log = (debug_out / "dbt" / "logs" / "dbt.log").read_text(encoding="utf-8", errors="replace")
        sql_s = sum(float(seconds) for seconds in SQL_STATUS.findall(log))
    breakdown = Breakdown(
        wall_s=seen.wall_s,
        node_phase_s=float(timed["elapsed_time"]),
        node_sum_s=sum(float(r["execution_time"]) for r in timed["results"]),
        sql_s=sql_s,
        nodes=len(timed["results"]),
        write_at=seen.seen("[2/4]") or 0.0,
        build_at=seen.seen("[3/4]") or 0.0,
        report_at=seen.seen("[4/4]") or seen.wall_s,
    )
    summary = f"{len(results['results'])} nodes; slowest: {nodes}"
    return measure, float(results["elapsed_time"]), summary, breakdown


def measure_floor(work: Path) -> Measure:
    """`dbt build` of the one-model project, fresh target folder (as each diagnosis has)."""
    target = work / "floor"
    command = [dbt_executable(), "build", "--profiles-dir", ".", "--target-path", str(target / "target")]
    command += ["--log-path", str(target / "logs")]
    return run_measured(command, env={"DBT_FLOOR_DB": str(target / "floor.duckdb")}, cwd=FLOOR_PROJECT)


def duckdb_scan_seconds(run_dir: Path) -> float:
    """A raw DuckDB scan of the train log: parse every row and aggregate every column."""
    path = next(run_dir.glob(f"*{FILE_SUFFIXES['train']}"))
    started = time.perf_counter()
    with duckdb.connect() as connection:
        connection.sql(
            "select count(*), max(step), avg(loss), max(grad_norm), max(learning_rate), sum(step_time_sec) "
            f"from read_csv('{path}')"
        ).fetchall()
    return time.perf_counter() - started


def measure_fleet_build(folder: Path, db_path: Path, work: Path) -> tuple[Measure, str]:
    """`dbt build` (default selector) of every run folder in `folder`, into db_path; with the
    increment line dbt printed ("incremental build: k of n run(s) new or changed")."""
    command = [dbt_executable(), "build", "--profiles-dir", ".", "--target-path", str(work / "target")]
    command += ["--log-path", str(work / "logs")]
    # 10M rows in one build: DuckDB's budget as for one 10M-step run (the goal there is <= 4 GB);
    # the 1 GB default runs out in the per-shard medians (1.25M shard groups)
    env = {
        "RUN_DIAGNOSIS_RUN_DIR": str(folder),
        "RUN_DIAGNOSIS_DB": str(db_path),
        "RUN_DIAGNOSIS_MEMORY_LIMIT": os.environ.get("RUN_DIAGNOSIS_MEMORY_LIMIT", "4GB"),
    }
    measure = run_measured(command, env=env)
    log = (work / "logs" / "dbt.log").read_text(encoding="utf-8", errors="replace")
    lines = [line for line in log.splitlines() if "incremental build:" in line]
    return measure, lines[-1].split("incremental build:", 1)[1].strip() if lines else "?"


def fleet(n_runs: int, steps: int, work: Path) -> list[str]:
    """Build n_runs runs in one warehouse, then add one run; the performance doc's table rows."""
    folder, db_path = work / f"fleet_{n_runs}", work / f"fleet_{n_runs}.duckdb"
    say(f"fleet: writing {n_runs} runs of {steps:,} steps ...")
    rows = sum(synthetic_run(steps, folder / f"run_{i:05d}", seed=i) for i in range(n_runs))
    say(f"fleet: {rows:,} train rows; building all {n_runs} runs at once ...")
    whole, batch = measure_fleet_build(folder, db_path, work / "fleet_dbt")
    say(f"fleet: {whole.cell()} ({batch}); adding one run ...")
    synthetic_run(steps, folder / f"run_{n_runs:05d}", seed=n_runs)
    added, added_batch = measure_fleet_build(folder, db_path, work / "fleet_dbt")
    say(f"fleet: +1 run {added.cell()} ({added_batch})")
    return [
        f"| {n_runs:,} runs x {steps:,} steps ({rows:,} rows), one build | {whole.cell()} | {batch} |",
        f"| + 1 run, incremental | {added.cell()} | {added_batch} |",
    ]


def load_average() -> str:
    return " / ".join(f"{value:.1f}" for value in os.getloadavg())


def goal(name: str, value: float, at_most: float | None = None, at_least: float | None = None) -> str:
    """One row of the goals table: the ratio, its target and whether it holds."""
    if at_most is not None:
        target, met = f"<= {at_most:g}", value <= at_most
    else:
        assert at_least is not None
        target, met = f">= {at_least:g}", value >= at_least
    return f"| {name} | {value:.2f} | {target} | {'met' if met else 'NOT met'} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--steps", type=int, nargs="*", default=[TEN_K, ONE_M], help="run sizes (default: 10k and 1M)"
    )
    parser.add_argument("--with-10m", action="store_true", help="add a 10M-step run (minutes, GBs)")
    parser.add_argument("--no-sample", action="store_true", help="skip the sample run and dbt's floor")
    parser.add_argument("--work-dir", type=Path, help="keep the generated runs and outputs here")
    parser.add_argument(
        "--fleet", type=int, default=0, metavar="N", help="also build N runs in one warehouse"
    )
    parser.add_argument("--fleet-steps", type=int, default=TEN_K, metavar="S", help="steps per fleet run")
    parser.add_argument(
        "--record-reference",
        metavar="COMMIT",
        help="record the synthetic runs' findings as the reference (name the commit they come from)",
    )
    parser.add_argument(
        "--readme",
        type=Path,
        metavar="DOC",
        help="also write the output between the benchmark markers of this file (docs/performance.md)",
    )
    args = parser.parse_args(argv)
    sizes = sorted(set(args.steps) | ({TEN_M} if args.with_10m else set()))
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="run_diagnosis_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    started_load = load_average()
    say(f"work folder {work}; load average {started_load}")
    rows: list[str] = []
    goals: list[str] = []
    project: dict[int, Measure] = {}
    peer: dict[int, Measure] = {}
    scans: dict[int, float] = {}
    breakdowns: dict[str, Breakdown] = {}
    same: list[str] = []
    if not args.no_sample:
        say("dbt's floor (one-model project) ...")
        floor = measure_floor(work)
        say(f"floor: {floor.cell()}; the sample run, end to end ...")
        sample, dbt_s, nodes, breakdowns["sample"] = measure_project(REPO / "seeds", work / "sample")
        say(f"sample: {sample.cell()} (dbt {dbt_s:.1f} s, {nodes})")
        sample_peer = run_measured([sys.executable, str(PEER), str(REPO / "seeds")])
        rows.append(
            f"| sample (240) | {sample.cell()} | {sample_peer.cell()} | floor {floor.cell()} | {nodes} |"
        )
        goals.append(goal("sample: project / dbt floor (wall)", sample.wall_s / floor.wall_s, at_most=2))
        goals.append(goal("sample: project / dbt floor (CPU)", sample.cpu_s / floor.cpu_s, at_most=2))
    for steps in sizes:
        run_dir = work / f"run_{steps}"
        say(f"{steps:,} steps: writing the run ...")
        raw_rows = synthetic_run(steps, run_dir)
        scans[steps] = duckdb_scan_seconds(run_dir)
        say(f"{steps:,} steps: pandas peer ...")
        peer[steps] = run_measured([sys.executable, str(PEER), str(run_dir)])
        say(f"{steps:,} steps: peer {peer[steps].cell()}; project ...")
        project[steps], dbt_s, nodes, breakdowns[f"{steps:,}"] = measure_project(
            run_dir, work / f"diagnosis_{steps}", breakdown_run=steps <= BREAKDOWN_MAX_STEPS
        )
        say(f"{steps:,} steps: project {project[steps].cell()} (dbt {dbt_s:.1f} s, {nodes})")
        same.append(
            compare_findings(steps, work / f"diagnosis_{steps}" / "findings.json", args.record_reference)
        )
        say(same[-1])
        rows.append(
            f"| {steps:,} ({raw_rows:,} rows) | {project[steps].cell()} | {peer[steps].cell()} "
            f"| DuckDB scan {scans[steps]:.2f} s | dbt {dbt_s:.1f} s, {nodes} |"
        )
    if ONE_M in project:
        one_m = project[ONE_M]
        goals.append(goal("1M: project / peer (wall)", one_m.wall_s / peer[ONE_M].wall_s, at_most=2))
        goals.append(goal("1M: project / peer (CPU)", one_m.cpu_s / peer[ONE_M].cpu_s, at_most=2))
        goals.append(goal("1M: project peak memory (GB)", one_m.peak_mb * 1024**2 / GB, at_most=1))
        if TEN_K in project:
            data_part = (one_m.wall_s - project[TEN_K].wall_s) / scans[ONE_M]
            goals.append(goal("1M: (1M - 10k) / DuckDB scan", data_part, at_most=10))
    if TEN_M in project:
        ten_m = project[TEN_M]
        goals.append(goal("10M: peer / project (wall)", peer[TEN_M].wall_s / ten_m.wall_s, at_least=2))
        goals.append(goal("10M: project peak memory (GB)", ten_m.peak_mb * 1024**2 / GB, at_most=4))
        if ONE_M in project:
            growth = ten_m.wall_s / project[ONE_M].wall_s
            goals.append(goal("10M / 1M project time", growth, at_most=11))
    out = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} cores; "
        f"load average (1/5/15 min) {started_load} at the start, {load_average()} at the end.\n",
        "| run | project: wall / CPU / peak | pandas peer: wall / CPU / peak | yardstick | dbt build |",
        "|---|---|---|---|---|",
        "\n".join(rows),
        "\n| goal | ratio | target | |\n|---|---:|---|---|",
        "\n".join(goals),
        "\nThe findings of the synthetic runs, against benchmarks/reference_findings.json:\n",
        "\n".join(f"- {line}" for line in same),
        "\nWhere the time goes:\n",
        BREAKDOWN_HEADER,
        "\n".join(breakdown.row(name) for name, breakdown in breakdowns.items()),
    ]
    if args.fleet:
        out += ["\n| warehouse | wall / CPU / peak | runs rebuilt |\n|---|---|---|"]
        out += ["\n".join(fleet(args.fleet, args.fleet_steps, work))]
    text = "\n".join(out)
    print(text)
    if args.readme is not None:  # the documented measured numbers come from here, not by hand
        readme = args.readme.read_text(encoding="utf-8")
        args.readme.write_text(replace_between(readme, README_START, README_END, text), encoding="utf-8")
        say(f"benchmark output written into {args.readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
