"""Measure how long a diagnosis takes as runs grow: build the dbt project on
synthetic runs of N steps (canonical files, a few planted problems) and write
the report, timing each stage.

    python scripts/benchmark.py --steps 10000 100000 1000000

Prints a Markdown table (steps, raw rows, seconds to write the files, dbt
build, report, peak DuckDB file size) for the README.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dbt_runner import build_run
from report import write_report


def synthetic_run(steps: int, folder: Path, seed: int = 0) -> int:
    """Write a canonical run of `steps` steps: one epoch over shards of 256 examples
    (8 steps each at batch 32), warmup + cosine LR, a loss spike, a slow stretch
    and a restart that replays 1% of the run. Returns the number of raw rows."""
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
    spike = slice(steps // 2, steps // 2 + 5)
    loss[spike] *= 2.5
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
    train.to_csv(folder / "bench_train_log.csv", index=False, float_format="%.6g")
    eval_step = np.arange(0, steps + 1, max(1, steps // 50))
    pd.DataFrame(
        {
            "step": eval_step,
            "val_loss": 3.1 + 2.7 * np.exp(-np.maximum(eval_step, 1) / (steps / 20)),
            "val_accuracy": 0.2,
        }
    ).to_csv(folder / "bench_eval_log.csv", index=False, float_format="%.6g")
    pd.DataFrame(
        {
            "shard_id": range(n_shards),
            "n_examples": 256,
            "source": [f"source_{i % 7}" for i in range(n_shards)],
        }
    ).to_csv(folder / "bench_shard_info.csv", index=False)
    events = [(0, "run started")] + [
        (s, f"checkpoint saved: step_{s}.pt") for s in range(1000, steps + 1, 1000)
    ]
    events += [
        (crash, "worker exited unexpectedly"),
        (crash, f"job restarted; resuming from checkpoint step_{resume}.pt"),
    ]
    pd.DataFrame(events, columns=["step", "event"]).to_csv(folder / "bench_run_events.csv", index=False)
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
    (folder / "bench_run_config.json").write_text(json.dumps(config))
    return len(train)


def measure(steps: int, work: Path) -> dict[str, float]:
    folder = work / f"run_{steps}"
    folder.mkdir(parents=True)
    started = time.perf_counter()
    rows = synthetic_run(steps, folder)
    written = time.perf_counter()
    db_path = work / f"db_{steps}" / "run_diagnosis.duckdb"
    result = build_run(folder, db_path, work / f"dbt_{steps}")
    built = time.perf_counter()
    write_report(db_path, result.target_path, work / f"report_{steps}", progress=None)
    reported = time.perf_counter()
    return {
        "steps": steps,
        "raw_rows": rows,
        "write_s": written - started,
        "dbt_build_s": built - written,
        "report_s": reported - built,
        "db_mb": db_path.stat().st_size / 1e6,
        "summary": result.summary(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--steps", type=int, nargs="+", default=[10_000, 100_000, 1_000_000], help="run sizes"
    )
    parser.add_argument("--work-dir", type=Path, help="keep the generated runs and databases here")
    args = parser.parse_args(argv)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="run_diagnosis_bench_"))
    rows = []
    for steps in args.steps:
        print(f"benchmark: {steps:,} steps ...", file=sys.stderr, flush=True)
        row = measure(steps, work)
        print(
            f"benchmark: {steps:,} steps: dbt build {row['dbt_build_s']:.1f} s, "
            f"report {row['report_s']:.1f} s ({row['summary']})",
            file=sys.stderr,
        )
        rows.append(row)
    print("| steps | raw train rows | write files (s) | dbt build (s) | report (s) | DuckDB file (MB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['steps']:,} | {row['raw_rows']:,} | {row['write_s']:.1f} | {row['dbt_build_s']:.1f} "
            f"| {row['report_s']:.1f} | {row['db_mb']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
