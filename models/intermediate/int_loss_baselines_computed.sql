-- A robust, spike-free baseline of the training loss for every counted step:
-- the median of the log losses of the spike_window steps before it, with the
-- MAD as spread, recomputed over spike_passes passes, each excluding the steps
-- the earlier passes flagged (see the spike_baseline_pass macro: a later pass recomputes
-- only the stats its new exclusions change). The first
-- spike_min_periods steps are not scored: there is no past to judge them by.
-- Computed in int_train_steps_measured (the wide per-step model); this view is its columns
-- of the loss baseline.
-- A view: a projection of a table, read by each reader as that table's columns. It reads the
-- whole model (ref, not run_ref): its readers keep only their batch's runs.
{{ config(materialized='view') }}
with

measured as (
    select
        run_id,
        step,
        shard_id,
        loss,
        log_loss,
        log_baseline,
        log_mad,
        baseline_points,
        loss_baseline,
        log_residual,
        robust_z,
        is_loss_spike,
        was_flagged_by_earlier_pass,
        spike_threshold_loss,
        spike_threshold_name
    from {{ ref('int_train_steps_measured') }}
)

select * from measured
