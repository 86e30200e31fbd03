-- For every counted step: the LR the configured schedule gives, the logged LR,
-- and where they part. The comparison accepts the schedule one step either side
-- (frameworks disagree on whether step s uses the LR of s or s-1), within
-- lr_relative_tolerance. The same curve rebuilt at the logged peak tells a
-- scaled peak apart from a different schedule.
-- Computed in int_train_steps_measured (the wide per-step model); this view is its columns
-- of the learning rate.
-- A view: a projection of a table, read by each reader as that table's columns. It reads the
-- whole model (ref, not run_ref): its readers keep only their batch's runs.
{{ config(materialized='view') }}
with

measured as (
    select
        run_id,
        step,
        attempt_number,
        is_attempt_start,
        learning_rate,
        expected_learning_rate,
        expected_at_logged_peak,
        peak_lr,
        logged_peak_lr,
        lr_ratio,
        ratio_to_peak,
        is_above_peak,
        is_lr_mismatch,
        is_mismatch_at_logged_peak
    from {{ ref('int_train_steps_measured') }}
)

select * from measured
