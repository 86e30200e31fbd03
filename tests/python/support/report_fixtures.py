"""Fixtures for the report tests: DuckDB files holding the marts' contract, and dbt target files.

`problem` is a small realistic run (60 steps): a restart at step 40 that replayed steps
36-40 and restarted the warmup (root cause, rank 1), the LR mismatch it explains
(symptom, rank 3, though its harm score is above the runner-up's, so order must come from
harm_rank), two loss spikes (independent root cause, runner-up, rank 2) and a
duplicated log row (low). `clean` is an imported run with no findings, no evals, no
shards and no grad_norm.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import duckdb

from run_diagnosis.project import categories
from run_diagnosis.report_data import CATALOG_COLUMNS, CATALOG_MART

FIXTURE_RUN_ID = "fixture-run"

# The marts exactly as the report's contract says (schema main), `run_id` left out (build_db adds it).
DDL: dict[str, str] = {
    "findings": """
        finding_id varchar primary key, category varchar, severity varchar, title varchar, evidence varchar,
        first_step bigint, last_step bigint, steps_affected bigint, observed_value double,
        expected_value double, estimated_cost double, cost_unit varchar, cost_method varchar,
        harm_score double, caused_by varchar, is_root_cause boolean, recommendation varchar,
        test_name varchar, harm_rank bigint""",
    "run_summary": """
        run_name varchar, source_format varchar, steps_logged bigint, steps_counted bigint,
        first_step bigint, last_step bigint, total_steps_config bigint, best_eval_step bigint,
        best_val_loss double, final_eval_step bigint, final_val_loss double, final_train_loss double,
        wall_clock_sec double, n_findings bigint, n_findings_above_low bigint,
        fix_first_finding_id varchar, runner_up_finding_id varchar""",
    "step_metrics": """
        train_row_id bigint, step bigint, is_counted boolean, attempt_number bigint, shard_id varchar,
        source varchar, loss double, loss_baseline double, is_loss_spike boolean, grad_norm double,
        grad_clip_norm double, is_clip_violation boolean, learning_rate double,
        expected_learning_rate double, step_time_sec double, is_slow_step boolean, epoch_number bigint""",
    "eval_metrics": """
        step bigint, val_loss double, val_accuracy double, is_counted boolean, is_best boolean,
        train_loss_smoothed double""",
    "shard_metrics": """
        grouping_level varchar, group_key varchar, source varchar, n_steps bigint,
        mean_loss_residual double, n_spikes bigint, share_of_steps double""",
    "audit_summary": "file_kind varchar, outcome varchar, reason varchar, n_rows bigint, raw_rows bigint",
    "check_coverage": "category varchar, could_run boolean, reason varchar",
    "run_context": """
        run_context_id bigint, run_name varchar, val_examples bigint, data_parallel_workers bigint,
        peak_lr double, min_lr double, grad_clip_norm double, n_evals bigint, first_eval_step bigint,
        first_val_loss double, best_eval_step bigint, best_val_loss double, final_eval_step bigint,
        final_val_loss double, n_checkpoints_saved bigint, last_checkpoint_step bigint,
        last_checkpoint_val_loss double, best_checkpoint_step bigint, best_checkpoint_val_loss double,
        n_eval_steps_repeated bigint""",
    "run_events": """
        event_row_id bigint, step bigint, event_kind varchar, event_text varchar, checkpoint_step bigint,
        resumed_from_step bigint""",
    "run_story": """
        end_kind varchar, first_step bigint, last_step bigint, total_steps bigint, rows_counted bigint,
        logging_interval double, is_sparse_log boolean, n_evals bigint, first_eval_step bigint,
        first_val_loss double, best_eval_step bigint, best_val_loss double, final_eval_step bigint,
        final_val_loss double, final_val_accuracy double, best_is_last boolean, plateau_step bigint,
        plateau_val_loss double, plateau_val_accuracy double, late_fall_share double, val_trend varchar,
        dip_step bigint, dip_val_loss double, dip_best_before double, dip_previous_eval_step bigint,
        dip_val_accuracy double, dip_previous_val_accuracy double, dip_accuracy_collapsed boolean,
        n_restarts bigint, n_crash_restarts bigint, n_spike_steps bigint, spike_shard_id varchar,
        spike_shard_source varchar, spike_shard_steps bigint, is_spikes_on_one_shard boolean""",
    "report_caveats": """
        caveat_id varchar, caveat varchar, finding_id varchar, lr_ratio double, data_parallel_workers bigint,
        final_lr double, is_final_lr_min_lr boolean, n_steps bigint, first_step bigint, last_step bigint,
        limit_value double, first_step_above bigint, val_examples bigint, val_accuracy double,
        accuracy_two_standard_errors double""",
}

# The cost columns of the harm ledgers (issue-8); a build may or may not have them.
COST_DDL: dict[str, str] = {
    "findings": """
        ledger varchar, val_loss_cost double, val_loss_cost_low double, val_loss_cost_high double,
        val_loss_cost_share double, cost_estimator varchar, cost_evidence varchar,
        compute_seconds_lost double, compute_share_lost double, confirm_rerun varchar,
        detector_severity varchar, ledger_rank bigint""",
    "run_summary": """
        fix_first_ranges_overlap boolean, compute_top_finding_id varchar, model_ledger_is_clean boolean""",
}

CATEGORIES = (
    "step_sequence", "run_restart", "lr_above_peak", "lr_schedule_mismatch", "grad_clip_violation",
    "loss_spikes", "nan_loss", "bad_data_shard", "data_repetition", "overfitting", "eval_contamination",
    "slow_steps", "config_mismatch", "log_quality", "no_learning", "underfitting",
)  # fmt: skip


def column_names(ddl: str) -> tuple[str, ...]:
    return tuple(c.split()[0] for c in ddl.replace("\n", " ").split(",") if c.strip())


def columns(mart: str) -> tuple[str, ...]:
    """The column names of a mart, in DDL order."""
    return column_names(DDL[mart])


def as_row(mart: str, **values: Any) -> tuple[Any, ...]:
    """A row of `mart` from column=value pairs (others null)."""
    unknown = set(values) - set(columns(mart))
    assert not unknown, f"not columns of {mart}: {unknown}"
    return tuple(values.get(c) for c in columns(mart))


def with_value(row: tuple[Any, ...], mart: str, **values: Any) -> tuple[Any, ...]:
    """A copy of `row` with some columns replaced."""
    return as_row(mart, **{**dict(zip(columns(mart), row, strict=True)), **values})


FINDING_KEYS = columns("findings")

PEAK_LR, MIN_LR, WARMUP, TOTAL = 0.003, 0.0003, 10, 60
SHARDS = {"0": "web", "1": "web", "2": "code", "3": "code", "4": "books", "5": "books"}
SPIKE_STEPS = (25, 26)
RESTART_STEP, REPLAY_FROM = 40, 36
VAL_EXAMPLES = 512
XSS = "<script>alert('x')</script> & \"quoted\""


def expected_lr(step: int) -> float:
    if step <= WARMUP:
        return PEAK_LR * step / WARMUP
    progress = (step - WARMUP) / (TOTAL - WARMUP)
    return MIN_LR + 0.5 * (PEAK_LR - MIN_LR) * (1 + math.cos(math.pi * progress))


def base_loss(step: int) -> float:
    return 2.2 + 3.3 * math.exp(-step / 12) + 0.04 * math.sin(step * 1.7)


def finding(
    finding_id: str,
    severity: str,
    steps: tuple[int, int],
    measured: tuple[float, float],
    cost: tuple[float, str, str],
    harm: tuple[float, int],
    **texts: str | None,
) -> dict[str, Any]:
    """A findings row: `measured` (observed, expected), `cost` (estimated cost, its unit, its method),
    `harm` (harm score, harm rank); `texts` the title, evidence, recommendation, test_name and
    caused_by (others null). As in the mart: the category is the id before its step, steps_affected
    counts the step range and a finding that nothing caused is a root cause."""
    (first, last), (observed, expected), (estimate, unit, method), (score, rank) = steps, measured, cost, harm
    row = as_row(
        "findings", finding_id=finding_id, category=finding_id.rsplit("-", 1)[0], severity=severity,
        first_step=first, last_step=last, steps_affected=last - first + 1, observed_value=observed,
        expected_value=expected, estimated_cost=estimate, cost_unit=unit, cost_method=method,
        harm_score=score, harm_rank=rank, is_root_cause=texts.get("caused_by") is None, **texts,
    )  # fmt: skip
    return dict(zip(FINDING_KEYS, row, strict=True))


# (id, severity, steps, (observed, expected), (cost, unit, method), (harm score, rank)), then the texts
PROBLEM_FINDINGS = [
    finding(
        "run_restart-040", "high", (36, 60), (2.0, 1.0),
        (5.0, "steps", "replayed steps x 1 (work redone)"), (3.2, 1),
        title="The run restarted at step 40 and replayed steps 36-40 from the last checkpoint.",
        evidence="event at step 40: worker exited unexpectedly; "
        "steps 36-40 logged twice (5 rows superseded); learning rate after the restart restarted its warmup",
        recommendation="Resume from the checkpoint with the optimizer and scheduler state restored.",
        test_name="assert_no_run_restarts",
    ),
    finding(
        "loss_spikes-025", "high", (25, 26), (3.41, 2.52),
        (0.031, "val_loss", "val loss excess after the spike vs trend"), (2.4, 2),
        title="Training loss spiked at steps 25-26, 0.9 above its baseline.",
        evidence="2 spikes above 3.5 rolling MADs; both on shard 3 (code); grad_norm 2.4 at the spikes",
        recommendation="Inspect shard 3 and lower the peak learning rate.", test_name="assert_no_loss_spikes",
    ),
    finding(
        "lr_schedule_mismatch-036", "medium", (36, 60), (0.0003, 0.0018),
        (0.2, "share_of_updates", "share of steps more than 10% off"), (2.6, 3),
        caused_by="run_restart-040", test_name="assert_lr_matches_schedule",
        title="Logged learning rate departs from the configured cosine schedule after step 36.",
        evidence="25 steps off schedule; max relative error 0.92 at step 41",
        recommendation="Restore the scheduler state on resume.",
    ),
    finding(
        "log_quality-010", "low", (10, 10), (1.0, 0.0), (0.0, "steps", "none: logging only"), (0.1, 4),
        title="One train-log row is an exact duplicate.",
        evidence=f"row 11 repeats step 10 exactly; the copy is set aside; raw text {XSS}",
        recommendation="Deduplicate on (step, attempt) when logging.",
    ),
]  # fmt: skip


def run_summary(run_name: str, source_format: str, steps_logged: int, steps: int, **values: Any) -> tuple:
    """A run_summary row of a run that counted steps 1..`steps`, as many as its config says."""
    return as_row(
        "run_summary", run_name=run_name, source_format=source_format, steps_logged=steps_logged,
        steps_counted=steps, first_step=1, last_step=steps, total_steps_config=steps, **values,
    )  # fmt: skip


def problem_steps() -> list[tuple[Any, ...]]:
    """Step rows: 60 counted, the 5 superseded first attempts of 36-40, one duplicate of step 10."""
    rows: list[tuple[Any, ...]] = []
    plan: list[tuple[int, bool, int]] = [(s, True, 1) for s in range(1, 36)]
    plan += [(s, False, 1) for s in range(REPLAY_FROM, RESTART_STEP + 1)]
    plan += [(s, True, 2) for s in range(REPLAY_FROM, TOTAL + 1)]
    plan.insert(10, (10, False, 1))  # the duplicate right after step 10
    for row_id, (step, counted, attempt) in enumerate(plan, start=1):
        shard = str(step % 6)
        spike = counted and step in SPIKE_STEPS
        loss = base_loss(step) + (0.9 if spike else 0.0)
        grad = 2.4 if spike else 0.6 + 0.1 * math.sin(step)
        restarted = attempt == 2
        lr = PEAK_LR * min(1.0, (step - REPLAY_FROM + 1) / WARMUP) * 0.1 if restarted else expected_lr(step)
        slow = counted and step == RESTART_STEP + 1
        rows.append(
            (row_id, step, counted, attempt, shard, SHARDS[shard], loss, base_loss(step), spike, grad, 1.0,
             grad > 1.0, lr, expected_lr(step), 2.5 if slow else 0.15 + 0.01 * math.cos(step), slow, 1)
        )  # fmt: skip
    return rows


def problem_evals() -> list[tuple[Any, ...]]:
    rows = []
    for step in range(0, TOTAL + 1, 10):
        val = 2.61 + 0.00005 * (step - 40) ** 2 + (3.0 if step == 0 else 0.0)
        rows.append((step, val, min(0.05 + step / 150, 0.45), True, step == 40, base_loss(max(step, 1))))
    return rows


def problem_tables() -> dict[str, list[tuple[Any, ...]]]:
    steps = problem_steps()
    return {
        "findings": [tuple(f[k] for k in FINDING_KEYS) for f in PROBLEM_FINDINGS],
        "run_summary": [
            run_summary(
                "fixture-60", "canonical", len(steps), TOTAL, best_eval_step=40, best_val_loss=2.61,
                final_eval_step=60, final_val_loss=2.63, final_train_loss=2.41, wall_clock_sec=14.2,
                n_findings=4, n_findings_above_low=3, fix_first_finding_id="run_restart-040",
                runner_up_finding_id="loss_spikes-025",
            )
        ],
        "step_metrics": steps,
        "eval_metrics": problem_evals(),
        "shard_metrics": [
            *(
                ("shard", k, src, 10, 0.12 if k == "3" else -0.02, 2 if k == "3" else 0, 1 / 6)
                for k, src in SHARDS.items()
            ),
            ("source", "books", "books", 20, -0.03, 0, 1 / 3),
            ("source", "code", "code", 20, 0.06, 2, 1 / 3),
            ("source", "web", "web", 20, -0.02, 0, 1 / 3),
        ],
        "audit_summary": [
            ("train", "kept", None, TOTAL, len(steps)),
            ("train", "set_aside", "superseded by the replay after the restart", 5, len(steps)),
            ("train", "set_aside", "exact duplicate row", 1, len(steps)),
            ("eval", "kept", None, 7, 7),
            ("shards", "kept", None, 6, 6),
            ("events", "kept", None, 3, 3),
            ("config", "repaired", "decay_steps missing: taken from total_steps", 1, 1),
        ],
        "check_coverage": [
            (
                c,
                c != "data_repetition",
                "the run is shorter than one epoch" if c == "data_repetition" else None,
            )
            for c in CATEGORIES
        ],
        "run_context": [
            as_row(
                "run_context", run_context_id=1, run_name="fixture-60", val_examples=VAL_EXAMPLES,
                data_parallel_workers=4, peak_lr=PEAK_LR, min_lr=MIN_LR, grad_clip_norm=1.0, n_evals=7,
                first_eval_step=0, first_val_loss=5.69, best_eval_step=40, best_val_loss=2.61,
                final_eval_step=60, final_val_loss=2.63, n_checkpoints_saved=3, last_checkpoint_step=50,
                last_checkpoint_val_loss=2.615, best_checkpoint_step=50, best_checkpoint_val_loss=2.615,
                n_eval_steps_repeated=0,
            )
        ],
        # what models/marts/run_story.sql decides on these evaluations: the best (step 40) lies a
        # third of the evaluated steps before the last one, so the run stopped improving
        "run_story": [
            as_row(
                "run_story", end_kind="complete", first_step=1, last_step=TOTAL, total_steps=TOTAL,
                rows_counted=TOTAL, logging_interval=1.0, is_sparse_log=False, n_evals=7, first_eval_step=0,
                first_val_loss=5.69, best_eval_step=40, best_val_loss=2.61, final_eval_step=60,
                final_val_loss=2.63, final_val_accuracy=0.45, best_is_last=False, plateau_step=10,
                plateau_val_loss=2.655, late_fall_share=0.0094, val_trend="stopped_improving",
                dip_accuracy_collapsed=False, n_restarts=1, n_crash_restarts=1,
            )
        ],
        "run_events": [
            (1, 0, "run_start", "run started", None, None),
            (2, 20, "checkpoint_saved", "checkpoint saved: step 20", 20, None),
            (3, 35, "checkpoint_saved", "checkpoint saved: step 35", 35, None),
            (4, 40, "crash", "worker died (rank 3); job terminated", None, None),
            (5, 40, "restart", "resuming from checkpoint step 35", None, 35),
            (6, 50, "checkpoint_saved", "checkpoint saved: step 50", 50, None),
            (7, 60, "run_end", "run finished", None, None),
        ],
        # what models/marts/report_caveats.sql decides: 512 examples is a small validation set; two
        # standard errors of the last evaluation's accuracy 0.45 (its grad norms stay below the limit)
        "report_caveats": [
            as_row(
                "report_caveats", caveat_id="val_set_small", caveat="val_set_small",
                val_examples=VAL_EXAMPLES, val_accuracy=0.45,
                accuracy_two_standard_errors=2 * math.sqrt(0.45 * 0.55 / VAL_EXAMPLES),
            )
        ],
    }  # fmt: skip


def clean_tables() -> dict[str, list[tuple[Any, ...]]]:
    """An imported run: no findings, no evals, no shards, no grad_norm."""
    steps = [
        (s, s, True, 1, None, None, base_loss(s), base_loss(s), False, None, None, None, expected_lr(s),
         expected_lr(s), 0.2, False, None)
        for s in range(1, 31)
    ]  # fmt: skip
    no_run = {
        "grad_clip_violation": "no grad_norm in the log",
        "overfitting": "no evaluations in the log",
        "eval_contamination": "no evaluations in the log",
        "bad_data_shard": "no shard ids in the log",
    }
    return {
        "findings": [],
        "run_summary": [
            run_summary(
                "imported-clean",
                "hf_trainer_state",
                30,
                30,
                final_train_loss=2.61,
                wall_clock_sec=6.0,
                n_findings=0,
                n_findings_above_low=0,
            )
        ],
        "step_metrics": steps,
        "eval_metrics": [],
        "shard_metrics": [],
        "audit_summary": [("train", "kept", None, 30, 30), ("config", "kept", None, 1, 1)],
        "check_coverage": [(c, c not in no_run, no_run.get(c)) for c in CATEGORIES],
        "run_context": [as_row("run_context", run_context_id=1, run_name="imported-clean", n_evals=0)],
        "run_events": [],
        "run_story": [
            as_row(
                "run_story",
                end_kind="complete",
                first_step=1,
                last_step=30,
                rows_counted=30,
                logging_interval=1.0,
                is_sparse_log=False,
                n_evals=0,
                val_trend="not_evaluated",
                dip_accuracy_collapsed=False,
                n_restarts=0,
                n_crash_restarts=0,
            )
        ],
        "report_caveats": [],  # no evaluations, no grad_norm, no LR finding: no caveat
    }


COST_FINDINGS: dict[str, dict[str, Any]] = {
    "run_restart-040": dict(
        ledger="model", val_loss_cost=0.05, val_loss_cost_low=0.02, val_loss_cost_high=0.08,
        val_loss_cost_share=0.05 / 2.63, cost_estimator="replay_ab",
        cost_evidence="val loss of the replayed steps against the first attempt, 2 evaluations",
        compute_seconds_lost=0.75, compute_share_lost=0.05,
        confirm_rerun="resume from step 35 with the scheduler state restored; "
        "val loss at step 60 should drop by about 0.05",
        detector_severity="high", ledger_rank=1,
    ),
    "loss_spikes-025": dict(
        ledger="model", val_loss_cost=0.03, val_loss_cost_low=0.01, val_loss_cost_high=0.06,
        val_loss_cost_share=0.03 / 2.63, cost_estimator="val_trend",
        cost_evidence="val trend around the spike",
        confirm_rerun="rerun steps 20-30 without shard 3; "
        "no spike and val loss at step 30 lower by about 0.03",
        detector_severity="high", ledger_rank=2,
    ),
    "lr_schedule_mismatch-036": dict(
        ledger="model", cost_estimator="none", detector_severity="medium", ledger_rank=3
    ),
    "log_quality-010": dict(
        ledger="records", cost_estimator="none", detector_severity="low", ledger_rank=1
    ),
}  # fmt: skip
SLOW_FINDING = finding(
    "slow_steps-041", "medium", (41, 44), (2.5, 0.15), (2.35, "seconds", "excess over the median"), (0.05, 5),
    title="Steps 41-44 ran 10x slower than usual.", evidence="4 steps at 2.5 s vs 0.15 s",
    recommendation="Find the straggler.",
)  # fmt: skip


def with_costs(
    tables: dict[str, list[tuple[Any, ...]]],
) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, str]]:
    """The problem run as a build with the ledger columns: (tables, ddl) for build_db."""
    ddl = {name: DDL[name] + (",\n" + COST_DDL[name] if name in COST_DDL else "") for name in DDL}
    cost_columns = column_names(COST_DDL["findings"])
    slow = {
        **dict.fromkeys(cost_columns), "ledger": "compute", "compute_seconds_lost": 2.35,
        "compute_share_lost": 0.165, "cost_estimator": "none", "detector_severity": "high", "ledger_rank": 1,
    }  # fmt: skip
    rows = []
    for row in [*tables["findings"], tuple(SLOW_FINDING[k] for k in FINDING_KEYS)]:
        extra = {**dict.fromkeys(cost_columns), **COST_FINDINGS.get(row[0], slow)}
        rows.append((*row, *(extra[c] for c in cost_columns)))
    summary = (*tables["run_summary"][0], True, "slow_steps-041", False)
    return {**tables, "findings": rows, "run_summary": [summary]}, ddl


def build_db(
    path: Path,
    tables: dict[str, list[tuple[Any, ...]]],
    skip: tuple[str, ...] = (),
    ddl: dict[str, str] | None = None,
) -> Path:
    """Write the marts (all but `skip`) into a new DuckDB file at `path`, as the one run `FIXTURE_RUN_ID`."""
    con = duckdb.connect(str(path))
    try:
        for name, columns_ddl in (ddl or DDL).items():
            if name in skip:
                continue
            # every mart carries the run first (a build may hold many runs; this one holds one)
            con.execute(f"create table main.{name} (run_id varchar, {columns_ddl})")
            rows = tables[name]
            if rows:
                marks = ", ".join("?" for _ in range(len(rows[0]) + 1))
                con.executemany(
                    f"insert into main.{name} values ({marks})", [[FIXTURE_RUN_ID, *r] for r in rows]
                )
        if CATALOG_MART not in skip:
            write_catalog(con)
        if "step_metrics" in (ddl or DDL) and "step_metrics" not in skip:
            derive_from_step_metrics(con, with_story="run_story" in (ddl or DDL) and "run_story" not in skip)
    finally:
        con.close()
    return path


# run_story's step-time columns, summed from step_metrics as models/marts/run_story.sql does
STORY_STEP_TIMES = """
    with counted_attempts as (
        select step, attempt_number,
            row_number() over (partition by step order by train_row_id desc) as from_last
        from main.step_metrics where is_counted
    ),
    rows_replayed as (
        select s.is_counted, s.step_time_sec,
            coalesce(not s.is_counted and s.attempt_number <> c.attempt_number, false) as is_replayed
        from main.step_metrics as s
        left join counted_attempts as c on s.step = c.step and c.from_last = 1
    )
    select
        count(step_time_sec) as n_timed_rows,
        count(*) filter (where is_counted) as n_counted_rows,
        sum(step_time_sec) filter (where is_counted) as counted_step_time_sec,
        count(*) filter (where is_replayed) as n_replayed_rows,
        sum(step_time_sec) filter (where is_replayed) as replayed_step_time_sec,
        count(*) filter (where is_counted and step_time_sec is null) as n_untimed_counted_rows,
        median(step_time_sec) filter (where is_counted) as median_step_time_sec
    from rows_replayed"""


def derive_from_step_metrics(con: duckdb.DuckDBPyConnection, with_story: bool) -> None:
    """The marts the report reads that a dbt build derives from step_metrics: step_plot_points as a
    short run's (every row, the run's counts on each) and run_story's step-time columns."""
    con.execute(
        """create table main.step_plot_points as
        select *, cast(null as double) as step_time_window_median,
            cast(null as bigint) as step_time_window_steps, false as is_step_time_window_middle,
            false as is_step_time_outlier, false as is_downsampled,
            count(*) over (partition by run_id) as run_rows_logged,
            count(*) filter (where is_counted) over (partition by run_id) as run_rows_counted
        from main.step_metrics"""
    )
    if with_story:
        con.execute(f"create table main.story_step_times as {STORY_STEP_TIMES}")
        con.execute(
            "create table main.run_story_with_times as select * from main.run_story, main.story_step_times"
        )
        con.execute("drop table main.run_story")
        con.execute("drop table main.story_step_times")
        con.execute("alter table main.run_story_with_times rename to run_story")


def write_catalog(con: duckdb.DuckDBPyConnection) -> None:
    """The check_catalog mart (no run column: one row a category) the report reads, from the
    check folders' metadata as the project declares it (run_diagnosis.project.categories())."""
    con.execute(f"create table main.{CATALOG_MART} ({', '.join(f'{c} varchar' for c in CATALOG_COLUMNS)})")
    rows = [
        [getattr(category, "name" if column == "category" else column) for column in CATALOG_COLUMNS]
        for category in categories().values()
    ]
    marks = ", ".join("?" for _ in CATALOG_COLUMNS)
    con.executemany(f"insert into main.{CATALOG_MART} values ({marks})", rows)


TESTS_PROBLEM = [
    ("assert_no_run_restarts", "warn", 1, "run_restart"),
    ("assert_no_loss_spikes", "warn", 2, "loss_spikes"),
    ("assert_lr_matches_schedule", "fail", 25, "lr_schedule_mismatch"),
    ("unique_findings_finding_id", "pass", 0, None),
]


def write_target(
    target: Path,
    tests: list[tuple[str, str, int, str | None]],
    other_nodes: tuple[tuple[str, str, str | None], ...] = (
        ("model.run_diagnosis.findings", "success", None),
    ),
) -> Path:
    """A dbt target folder (run_results.json, manifest.json) for tests (name, status, failures, category)."""
    target.mkdir(parents=True, exist_ok=True)
    results, nodes = [], {}
    for name, status, failures, category in tests:
        unique_id = f"test.run_diagnosis.{name}.abc123"
        results.append(
            {
                "unique_id": unique_id,
                "status": status,
                "failures": failures,
                "message": f"Got {failures} results",
            }
        )
        meta = {"category": category} if category else {}
        nodes[unique_id] = {
            "name": name,
            "resource_type": "test",
            "unique_id": unique_id,
            "config": {"severity": "warn" if status == "warn" else "ERROR", "meta": meta},
        }
    for unique_id, status, message in other_nodes:  # (unique_id, status, message) of models, unit tests
        results.append({"unique_id": unique_id, "status": status, "failures": None, "message": message})
        resource_type, name = unique_id.split(".")[0], unique_id.split(".")[-1]
        nodes[unique_id] = {"name": name, "resource_type": resource_type, "config": {}}
    (target / "run_results.json").write_text(
        json.dumps({"metadata": {"generated_at": "2026-12-02T12:00:00Z"}, "results": results})
    )
    (target / "manifest.json").write_text(json.dumps({"nodes": nodes}))
    return target
