"""Check the diagnosis's cost estimates against measured costs: the calibration benchmark.

    python benchmarks/calibration.py                      # ../shared/calibration, all seeds
    python benchmarks/calibration.py --db /tmp/cal/cal.duckdb --reuse
    python benchmarks/calibration.py --seeds 301,302      # the tuning seeds only

CALIBRATION (default ../shared/calibration next to the repository) holds `runs/<case>-s<seed>/`
(the canonical five files of one small training run each: clean, or with one fault planted in
the training loop) and `calibration.json` (per case: the faults, what it is paired with, the
measured paired cost per seed = final validation loss with the fault minus without, its mean
and range over seeds). Every run is diagnosed in one warehouse build (run_id = folder name,
see RUN_DIAGNOSIS_RUN_DIR in docs/own-run.md); each fault is paired with the finding that names it,
and the script prints:

- per fault: the measured mean and range over seeds, and per seed the estimate with its
  interval, its ratio to the mean, and whether it is reported within the run's noise floor;
- per seed group (the tuning seeds, the held-out seed): the acceptance figures of issue 30
  (faults with a mean >= 0.05 priced within 2x of it; faults with a mean < 0.03 priced at most
  0.05 or within noise; the interval overlapping the measured range for >= 80% of faults),
  whether the fix-first finding is the costliest on every run with a costly fault, and
  whether any clean run has a priced finding above its noise floor.

Progress goes to stderr, the Markdown report to stdout (and --json writes the numbers).
Exit 0 when the held-out seed meets every criterion, 1 when it does not, 2 on bad input.
The benchmark is not part of the product and not run in CI (it reads ../shared);
tests/python/test_calibration.py runs it on the held-out seed when the folder exists.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from run_diagnosis.dbt_runner import build_run

REPO = Path(__file__).resolve().parents[1]  # benchmarks/ -> the checkout
DEFAULT_CALIBRATION = REPO.parent / "shared" / "calibration"
DEV_SEEDS = ("301", "302")
HELD_OUT_SEED = "303"
COSTLY = 0.05  # a fault whose mean measured cost is at least this must be priced within 2x
NEGLIGIBLE = 0.03  # a fault below this must be priced at most CAP or reported within noise
CAP = 0.05
FACTOR = 2.0
OVERLAP_SHARE = 0.8

# which findings stand for each planted fault: a predicate on a root model finding
# (category, finding_id) given what calibration.json says was planted on that seed
Matcher = Callable[[pd.Series, list[dict[str, Any]]], bool]


def _is_bad_shard(finding: pd.Series, planted: list[dict[str, Any]]) -> bool:
    shards = {str(p["shard_id"]) for p in planted if "shard_id" in p}
    sources = {str(p["source"]) for p in planted if "source" in p}
    fid = str(finding["finding_id"])
    return finding["category"] == "bad_data_shard" and (
        fid.removeprefix("bad_data_shard:") in shards or fid.removeprefix("bad_data_shard:source_") in sources
    )


FAULT_FINDINGS: dict[str, Matcher] = {
    "lr_scaled": lambda f, _: f["category"] == "lr_above_peak",
    "bad_shard": _is_bad_shard,
    "decay_horizon": lambda f, _: (
        f["finding_id"] == "schedule_sanity:never_anneals" or f["category"] == "lr_schedule_mismatch"
    ),
    "no_warmup": lambda f, _: f["category"] == "lr_schedule_mismatch",
    "tiny_data": lambda f, _: f["finding_id"] == "data_repetition:run",
    "fp16_overflow": lambda f, _: f["category"] == "nan_loss",
    # a plain resume costs compute (run_restart); in the model ledger nothing should name it
    "resume": lambda f, _: False,
    "resume_sched_reset": lambda f, _: f["category"] == "lr_schedule_mismatch",
    "resume_noclip": lambda f, _: f["category"] == "grad_clip_violation",
    "resume_data_reset": lambda f, _: str(f["finding_id"]).startswith("data_repetition:resume"),
}


def say(message: str) -> None:
    print(f"calibration: {message}", file=sys.stderr, flush=True)


@dataclass
class Estimate:
    """One fault on one seed: the measured cost and what the diagnosis said."""

    case: str
    seed: str
    measured: float
    finding_id: str | None
    cost: float | None
    low: float | None
    high: float | None
    within_noise: bool
    estimator: str | None
    fix_first_id: str | None = None
    fix_first_is_costliest: bool | None = None

    def priced(self) -> float:
        """The estimate the criteria judge: 0 when no finding names the fault (the diagnosis
        then says it cost nothing in the model ledger)."""
        return 0.0 if self.cost is None else self.cost

    def interval(self) -> tuple[float, float]:
        if self.cost is None or self.low is None or self.high is None:
            return (0.0, 0.0)
        return (self.low, self.high)


@dataclass
class Fault:
    case: str
    faults: list[str]
    mean: float
    low: float
    high: float
    by_seed: dict[str, float]
    estimates: dict[str, Estimate] = field(default_factory=dict)


def load_calibration(folder: Path) -> dict[str, Fault]:
    path = folder / "calibration.json"
    try:
        data = json.loads(path.read_text())
        costs = data["costs"]
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"calibration: cannot read {path}: {exc}") from exc
    faults = {}
    for case, entry in costs.items():
        low, high = entry["cost_range"]
        faults[case] = Fault(
            case=case,
            faults=list(entry["faults"]),
            mean=float(entry["cost_mean"]),
            low=float(low),
            high=float(high),
            by_seed={str(s): float(v) for s, v in entry["cost_by_seed"].items()},
        )
    return faults


def build(runs: Path, seeds: list[str], db: Path, reuse: bool) -> None:
    """Diagnose the runs of these seeds together (one warehouse, run_id = folder name)."""
    if reuse and db.exists():
        say(f"reusing the warehouse {db}")
        return
    folders = sorted(f for f in runs.iterdir() if f.is_dir() and f.name.rsplit("-s", 1)[-1] in seeds)
    if not folders:
        raise SystemExit(f"calibration: no run folders for seeds {', '.join(seeds)} in {runs}")
    selected = db.parent / "runs"
    if selected.exists():
        shutil.rmtree(selected)
    for folder in folders:  # a folder of just these runs (copies: a few hundred KB each)
        shutil.copytree(folder, selected / folder.name)
    say(f"building {len(folders)} runs of {runs} into {db} (one dbt build; a minute or more)")
    started = time.monotonic()
    build_run(
        selected,
        db,
        db.parent / "dbt",
        exclude="resource_type:test resource_type:unit_test",
        progress=say,
        full_refresh=True,
    )
    say(f"built in {time.monotonic() - started:.0f} s")


def read_marts(db: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    with duckdb.connect(str(db), read_only=True) as con:
        findings = con.sql("select * from findings").df()
        summary = con.sql("select * from run_summary").df()
    return findings, summary


def _bool(value: Any) -> bool:
    return bool(value) if value is not None and not pd.isna(value) else False


def _num(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def estimate_for(
    fault: Fault, seed: str, planted: list[dict[str, Any]], findings: pd.DataFrame, summary: pd.DataFrame
) -> Estimate:
    run_id = f"{fault.case}-s{seed}"
    run = findings[
        (findings["run_id"] == run_id) & (findings["ledger"] == "model") & findings["is_root_cause"]
    ]
    matchers = [FAULT_FINDINGS[name] for name in fault.faults if name in FAULT_FINDINGS]
    named = run[[any(m(row, planted) for m in matchers) for _, row in run.iterrows()]]
    priced_rows = named[named["val_loss_cost"].notna()]
    top = (
        priced_rows.loc[priced_rows["val_loss_cost"].idxmax()]
        if len(priced_rows)
        else (named.iloc[0] if len(named) else None)
    )
    rows = summary[summary["run_id"] == run_id]
    fix_first = rows["fix_first_finding_id"].iloc[0] if len(rows) else None
    costliest = None
    if top is not None and fix_first is not None and not pd.isna(fix_first):
        priced = run[run["val_loss_cost"].notna() & ~run["cost_within_noise"].fillna(False).astype(bool)]
        best = priced["val_loss_cost"].max() if len(priced) else None
        costliest = fix_first == top["finding_id"] and (
            best is None or float(top["val_loss_cost"] or 0) >= float(best)
        )
    return Estimate(
        case=fault.case,
        seed=seed,
        measured=fault.by_seed[seed],
        finding_id=None if top is None else str(top["finding_id"]),
        cost=None if top is None else _num(top["val_loss_cost"]),
        low=None if top is None else _num(top["val_loss_cost_low"]),
        high=None if top is None else _num(top["val_loss_cost_high"]),
        within_noise=False if top is None else _bool(top["cost_within_noise"]),
        estimator=None if top is None else str(top["cost_estimator"]),
        fix_first_id=None if fix_first is None or pd.isna(fix_first) else str(fix_first),
        fix_first_is_costliest=costliest,
    )


@dataclass
class Criteria:
    seeds: tuple[str, ...]
    costly_ok: int = 0
    costly_within_2x: int = 0
    costly_total: int = 0
    negligible_ok: int = 0
    negligible_total: int = 0
    overlap_ok: int = 0
    overlap_total: int = 0
    fix_first_ok: int = 0
    fix_first_total: int = 0
    clean_priced: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def passed(self) -> bool:
        return (
            self.costly_ok == self.costly_total
            and self.negligible_ok == self.negligible_total
            and self.overlap_ok >= OVERLAP_SHARE * self.overlap_total
            and self.fix_first_ok == self.fix_first_total
            and not self.clean_priced
        )


def judge(faults: dict[str, Fault], seeds: Iterable[str], findings: pd.DataFrame) -> Criteria:
    """The acceptance figures of issue 30 over these seeds (each fault on each seed counts once)."""
    criteria = Criteria(seeds=tuple(seeds))
    for fault in faults.values():
        for seed in criteria.seeds:
            est = fault.estimates.get(seed)
            if est is None:
                continue
            where = f"{fault.case}-s{seed}"
            value = est.priced()
            if fault.mean >= COSTLY:
                criteria.costly_total += 1
                within = fault.mean / FACTOR <= value <= fault.mean * FACTOR
                ok = within and not est.within_noise
                criteria.costly_within_2x += within
                criteria.costly_ok += ok
                if not ok:
                    criteria.failures.append(
                        f"{where}: {value:.3f} not within 2x of the mean {fault.mean:.3f} (or within noise)"
                    )
                criteria.fix_first_total += 1
                criteria.fix_first_ok += bool(est.fix_first_is_costliest)
                if not est.fix_first_is_costliest:
                    criteria.failures.append(
                        f"{where}: fix first is {est.fix_first_id}, not the costliest {est.finding_id}"
                    )
            elif fault.mean < NEGLIGIBLE:
                criteria.negligible_total += 1
                ok = value <= CAP or est.within_noise
                criteria.negligible_ok += ok
                if not ok:
                    criteria.failures.append(f"{where}: {value:.3f} priced above {CAP} and not within noise")
            low, high = est.interval()
            criteria.overlap_total += 1
            overlaps = low <= fault.high and fault.low <= high
            criteria.overlap_ok += overlaps
            if not overlaps:
                criteria.failures.append(
                    f"{where}: interval {low:.3f} to {high:.3f} misses the measured "
                    f"{fault.low:.3f} to {fault.high:.3f}"
                )
    for seed in criteria.seeds:
        clean = findings[(findings["run_id"] == f"clean-s{seed}") & (findings["ledger"] == "model")]
        priced = clean[
            clean["val_loss_cost"].notna() & ~clean["cost_within_noise"].fillna(False).astype(bool)
        ]
        criteria.clean_priced += [
            f"clean-s{seed}: {r.finding_id} {r.val_loss_cost:.3f}" for r in priced.itertuples()
        ]
    return criteria


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def estimate_cell(est: Estimate | None, mean: float) -> str:
    if est is None:
        return "n/a"
    if est.cost is None:
        return "no finding" if est.finding_id is None else f"unpriced ({est.finding_id})"
    low, high = est.interval()
    ratio = f", {est.cost / mean:.1f}x" if abs(mean) >= NEGLIGIBLE else ""
    noise = " **noise**" if est.within_noise else ""
    return f"{fmt(est.cost)} ({fmt(low)} to {fmt(high)}){ratio}{noise}"


def markdown(faults: dict[str, Fault], seeds: list[str], groups: list[Criteria]) -> str:
    lines = [
        "| fault | measured mean (range over seeds) | "
        + " | ".join(f"estimate s{s} (interval, x mean)" for s in seeds)
        + " | estimator |",
        "|---|---|" + "---|" * len(seeds) + "---|",
    ]
    for fault in sorted(faults.values(), key=lambda f: -f.mean):
        estimators = sorted({e.estimator for e in fault.estimates.values() if e.estimator})
        lines.append(
            f"| {fault.case} | {fmt(fault.mean)} ({fmt(fault.low)} to {fmt(fault.high)}) | "
            + " | ".join(estimate_cell(fault.estimates.get(s), fault.mean) for s in seeds)
            + f" | {', '.join(estimators) or '-'} |"
        )
    lines.append("")
    lines.append(
        "| seeds | mean >= 0.05 priced within 2x (within 2x, priced or not) "
        "| mean < 0.03 at most 0.05 or noise "
        "| interval overlaps range | fix first is the costliest | clean runs priced above the floor |"
    )
    lines.append("|---|---|---|---|---|---|")
    for c in groups:
        share = c.overlap_ok / c.overlap_total if c.overlap_total else 0.0
        lines.append(
            f"| {', '.join(c.seeds)} | {c.costly_ok}/{c.costly_total} "
            f"({c.costly_within_2x}/{c.costly_total}) | "
            f"{c.negligible_ok}/{c.negligible_total} | "
            f"{c.overlap_ok}/{c.overlap_total} ({share:.0%}) | {c.fix_first_ok}/{c.fix_first_total} | "
            f"{len(c.clean_priced) or 'none'} |"
        )
    for c in groups:
        for failure in c.failures + c.clean_priced:
            lines.append(f"- s{'/'.join(c.seeds)}: {failure}")
    return "\n".join(lines)


def run(
    calibration: Path, db: Path, reuse: bool, seeds: list[str]
) -> tuple[str, list[Criteria], dict[str, Fault]]:
    faults = load_calibration(calibration)
    planted_all = json.loads((calibration / "calibration.json").read_text())["costs"]
    build(calibration / "runs", seeds, db, reuse)
    findings, summary = read_marts(db)
    for fault in faults.values():
        for seed in seeds:
            if seed not in fault.by_seed:
                continue
            planted = planted_all[fault.case].get("planted_by_seed", {}).get(seed, [])
            fault.estimates[seed] = estimate_for(fault, seed, planted, findings, summary)
    groups = (
        [judge(faults, [s for s in seeds if s in DEV_SEEDS], findings)] if set(seeds) & set(DEV_SEEDS) else []
    )
    groups += [judge(faults, [s], findings) for s in seeds if s not in DEV_SEEDS]
    return markdown(faults, seeds, groups), groups, faults


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="calibration.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--calibration", type=Path, default=DEFAULT_CALIBRATION, help="the calibration folder"
    )
    parser.add_argument("--db", type=Path, help="the DuckDB file to build (default: a temporary folder)")
    parser.add_argument(
        "--reuse", action="store_true", help="read --db as built before instead of rebuilding"
    )
    parser.add_argument(
        "--seeds",
        default=",".join((*DEV_SEEDS, HELD_OUT_SEED)),
        help=f"comma-separated seeds (tuning seeds {', '.join(DEV_SEEDS)}; held out {HELD_OUT_SEED})",
    )
    parser.add_argument("--json", type=Path, help="also write every estimate and criterion here")
    args = parser.parse_args(argv)
    if not (args.calibration / "runs").is_dir():
        print(f"calibration.py: error: no runs/ folder in {args.calibration}", file=sys.stderr)
        return 2
    seeds = [s.strip() for s in args.seeds.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(prefix="calibration_") as tmp:
        db = args.db or Path(tmp) / "calibration" / "calibration.duckdb"
        db.parent.mkdir(parents=True, exist_ok=True)
        text, groups, faults = run(args.calibration, db, args.reuse, seeds)
    print(text)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "faults": [
                        {
                            **{k: v for k, v in asdict(f).items() if k != "estimates"},
                            "estimates": {s: asdict(e) for s, e in f.estimates.items()},
                        }
                        for f in faults.values()
                    ],
                    "criteria": [asdict(c) | {"passed": c.passed()} for c in groups],
                },
                indent=1,
            )
        )
    held_out = [c for c in groups if c.seeds == (HELD_OUT_SEED,)]
    return 0 if all(c.passed() for c in held_out) else 1


if __name__ == "__main__":
    raise SystemExit(main())
