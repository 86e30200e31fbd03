-- The step sequence that counts: one row per step, from the attempt that the run
-- kept, in step order, with what happened just before it (a resume, a shard change).
-- Computed in int_train_steps_measured (the wide per-step model); this view is its columns
-- of the step sequence.
-- A view: a projection of a table, read by each reader as that table's columns. It reads the
-- whole model (ref, not run_ref): its readers keep only their batch's runs.
{{ config(materialized='view') }}
with

measured as (
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
        previous_step,
        previous_shard_id,
        step_index,
        steps_missing_before,
        is_shard_change
    from {{ ref('int_train_steps_measured') }}
)

select * from measured
