-- The step sequence that counts: one row per step, from the attempt that the run
-- kept, in step order, with what happened just before it (a resume, a shard change).
-- A table of its own, the first of the three per-step tables (then int_loss_baselines_computed,
-- then int_train_steps_measured, which joins both): each is one query with its own windows, so
-- DuckDB materialises and frees one concern's state at a time (docs/performance.md) and Spark
-- plans three small queries instead of one that inlines this sequence at each of its readers.
with

counted as (
    select * from {{ run_ref('int_train_rows_resolved') }}
    where is_counted
),

one_per_step as (
    -- two counted rows for one step can only come from a non-replay repeat; the later one wins
    select
        *,
        row_number() over (partition by run_id, step order by file_row_number desc) as copy_rank
    from counted
),

sequenced as (
    select
        run_id,
        step,
        train_row_id,
        file_row_number,
        attempt_number,
        is_attempt_start,
        shard_id,
        loss,
        grad_norm,
        learning_rate,
        step_time_sec,
        is_loss_non_finite,
        is_grad_norm_non_finite,
        {{ previous_value('step', 'step', 'run_id') }} as previous_step,
        {{ previous_value('shard_id', 'step', 'run_id') }} as previous_shard_id,
        row_number() over (partition by run_id order by step) as step_index
    from one_per_step
    where copy_rank = 1
),

resolved as (
    select
        sequenced.*,
        (step - previous_step - 1) as steps_missing_before,
        (previous_shard_id is null or shard_id <> previous_shard_id) as is_shard_change
    from sequenced
)

select * from resolved
