"""The pandas notebook a careful engineer would write for the same checks, as a script.

    python benchmarks/pandas_peer.py RUN_DIR [--json]

RUN_DIR holds the five canonical files (*train_log.csv, *eval_log.csv, *shard_info.csv,
*run_events.csv, *run_config.json). Checks, with the project's default thresholds:
LR vs the configured schedule and its peak, grad_norm over the clip limit, loss spikes
against a robust spike-free baseline (3 passes), bad shards, restarts and replayed steps,
slow stretches and stalls, overfitting. Prints one line per finding. It is the peer the
benchmark times the dbt project against, not part of the product.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

LR_TOL, CLIP_TOL = 0.05, 0.01
WINDOW, MIN_PERIODS, N_MADS, MIN_EXCESS, MIN_MAD, PASSES = 20, 8, 6.0, 0.5, 0.01, 3
SHARD_SPIKE_SHARE, SHARD_MEDIAN_EXCESS, SHARD_MIN_STEPS = 0.5, 0.3, 3
SLOW_FACTOR, SLOW_MIN_STEPS, STALL_FACTOR = 2.0, 3, 5.0
OVERFIT_RISE, OVERFIT_EVALS_AFTER = 0.01, 2


def one(folder: Path, suffix: str) -> Path:
    found = sorted(folder.glob(f"*{suffix}"))
    if len(found) != 1:
        sys.exit(f"pandas_peer: expected one *{suffix} in {folder}, found {len(found)}")
    return found[0]


def scheduled_lr(step: np.ndarray, schedule: dict) -> np.ndarray:
    peak, floor = schedule["peak_lr"], schedule.get("min_lr") or 0.0
    warmup, decay = schedule.get("warmup_steps") or 0, schedule.get("decay_steps")
    progress = np.clip((step - warmup) / max(1, decay - warmup), 0.0, 1.0)
    shape = 0.5 * (1 + np.cos(np.pi * progress)) if "cosine" in schedule["type"] else 1 - progress
    lr = floor + (peak - floor) * shape
    return np.where(step <= warmup, peak * step / max(warmup, 1), lr)


def resolve_rows(train: pd.DataFrame) -> pd.DataFrame:
    """Attempts: a row whose step is not above every step before it starts a replay.
    The last attempt's row counts for each step; earlier ones were superseded."""
    previous_max = train["step"].cummax().shift(fill_value=-1)
    train["attempt"] = (train["step"] <= previous_max).cumsum()
    train["is_counted"] = ~train.duplicated("step", keep="last")
    return train


def spike_pass(log_loss: pd.Series, excluded: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Baseline of each step = median of the WINDOW clean log losses before it; spread =
    median step-to-step change / sqrt 2 over the same steps; excluded steps use the stats
    of the clean steps before them."""
    clean = log_loss[~excluded & log_loss.notna()]
    change = clean.diff().abs() / np.sqrt(2.0)
    center = clean.rolling(WINDOW, min_periods=1).median()
    spread = change.rolling(WINDOW, min_periods=1).median()
    points = clean.rolling(WINDOW, min_periods=1).count()
    # stats of the clean rows strictly before each step: shift, then carry forward
    stats = pd.DataFrame({"center": center, "spread": spread, "points": points}).reindex(log_loss.index)
    through = stats.ffill()
    before = through.shift(1)
    before.loc[excluded] = through.loc[excluded]
    z = 0.6745 * (log_loss - before["center"]) / before["spread"].fillna(0).clip(lower=MIN_MAD)
    outlier = (
        (before["points"].fillna(0) >= MIN_PERIODS)
        & (log_loss - before["center"] > np.log1p(MIN_EXCESS))
        & (z > N_MADS)
    )
    return before["center"], outlier.fillna(False)


def diagnose(folder: Path) -> list[dict]:
    config = json.loads(one(folder, "run_config.json").read_text())
    numeric = {"step": "float64", "loss": "float64", "grad_norm": "float64", "learning_rate": "float64"}
    train = pd.read_csv(one(folder, "train_log.csv"), dtype={**numeric, "step_time_sec": "float64"})
    evals = pd.read_csv(one(folder, "eval_log.csv"))
    shards = pd.read_csv(one(folder, "shard_info.csv"))
    events = pd.read_csv(one(folder, "run_events.csv"))
    findings: list[dict] = []

    def found(category: str, key: object, **evidence: object) -> None:
        findings.append({"finding_id": f"{category}:{key}", **evidence})

    duplicates = train.duplicated()
    if duplicates.any():
        found("step_sequence", "exact_duplicates", rows=int(duplicates.sum()))
    train = resolve_rows(train[~duplicates].dropna(subset=["step"]).reset_index(drop=True))
    steps = train[train["is_counted"]].sort_values("step").set_index("step")

    replayed = train[~train["is_counted"]]
    for attempt, rows in replayed.groupby("attempt"):
        found(
            "run_restart",
            int(rows["step"].min()),
            attempt=int(attempt) + 1,
            replayed_rows=len(rows),
            seconds_lost=float(rows["step_time_sec"].sum()),
        )
    restart_events = events[events["event"].str.contains("restart|resum", case=False, na=False)]
    if len(restart_events) and not len(replayed):
        found("run_restart", int(restart_events["step"].iloc[0]), events=len(restart_events))

    schedule = config.get("lr_schedule") or {}
    if schedule.get("peak_lr"):
        lr = steps["learning_rate"]
        if lr.max() > schedule["peak_lr"] * (1 + LR_TOL):
            found("lr_above_peak", "run", max_lr=float(lr.max()), peak_lr=schedule["peak_lr"])
        expected = scheduled_lr(steps.index.to_numpy(), schedule)
        off = (lr - expected).abs() > LR_TOL * np.maximum(expected, 1e-12)
        if off.mean() > 0.05:
            found("lr_schedule_mismatch", "run", share_off=float(off.mean()))

    clip = config.get("grad_clip_norm")
    if clip:
        over = steps[steps["grad_norm"] > clip * (1 + CLIP_TOL)]
        if len(over):
            worst = float(over["grad_norm"].max())
            found("grad_clip_violation", int(over.index[0]), steps=len(over), max=worst)

    log_loss = np.log(steps["loss"].where(steps["loss"] > 0))
    excluded = pd.Series(False, index=steps.index)
    for _ in range(PASSES):
        previous = excluded
        baseline, outlier = spike_pass(log_loss, previous)
        excluded = previous | outlier
    steps["baseline"], steps["spike"] = np.exp(baseline), outlier
    event_start = steps["spike"] & ~steps["spike"].shift(fill_value=False)
    for step in steps.index[event_start]:
        loss, base = float(steps.at[step, "loss"]), float(steps.at[step, "baseline"])
        found("loss_spikes", int(step), loss=loss, baseline=base)

    steps["excess"] = steps["loss"] / steps["baseline"] - 1
    per_shard = steps.groupby("shard_id").agg(
        n=("loss", "size"), spike_share=("spike", "mean"), excess=("excess", "median")
    )
    judged = per_shard["n"] >= SHARD_MIN_STEPS
    spiky = per_shard["spike_share"] >= SHARD_SPIKE_SHARE
    bad_signal = spiky | (per_shard["excess"] >= SHARD_MEDIAN_EXCESS)
    bad = per_shard[judged & bad_signal]
    sources = shards.drop_duplicates("shard_id").set_index("shard_id")["source"]
    for shard, row in bad.iterrows():
        found("bad_data_shard", shard, source=sources.get(shard), spike_share=float(row["spike_share"]))

    checkpoints = events.loc[events["event"].str.contains("checkpoint saved", case=False, na=False), "step"]
    step_time = steps["step_time_sec"].drop(index=checkpoints, errors="ignore")
    slow = step_time >= SLOW_FACTOR * step_time.median()
    stretch_id = (slow != slow.shift()).cumsum()
    for _, stretch in step_time[slow].groupby(stretch_id[slow]):
        if len(stretch) >= SLOW_MIN_STEPS:
            found(
                "slow_steps",
                int(stretch.index[0]),
                steps=len(stretch),
                seconds_lost=float(stretch.sum() - len(stretch) * step_time.median()),
            )
        elif stretch.max() >= STALL_FACTOR * step_time.median():
            found("slow_steps", int(stretch.idxmax()), stall_seconds=float(stretch.max()))

    evals = evals.dropna(subset=["val_loss"]).drop_duplicates("step", keep="last").sort_values("step")
    if len(evals):
        best = evals["val_loss"].idxmin()
        after = evals.loc[evals["step"] > evals.at[best, "step"]]
        final, minimum = evals["val_loss"].iloc[-1], evals.at[best, "val_loss"]
        train_at_best = steps["loss"].loc[: evals.at[best, "step"]].tail(WINDOW).median()
        train_at_end = steps["loss"].tail(WINDOW).median()
        rose = final > minimum * (1 + OVERFIT_RISE) and len(after) >= OVERFIT_EVALS_AFTER
        if rose and train_at_end <= train_at_best:
            best_step = int(evals.at[best, "step"])
            found("overfitting", "run", best_step=best_step, rise=float(final / minimum - 1))
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", type=Path, help="folder with the five canonical run files")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    args = parser.parse_args(argv)
    findings = diagnose(args.run_dir)
    if args.json:
        print(json.dumps(findings, default=str, indent=1))
    else:
        for finding in findings:
            print(finding["finding_id"], {k: v for k, v in finding.items() if k != "finding_id"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
