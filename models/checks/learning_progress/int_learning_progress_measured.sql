-- How much the training loss fell, in one row per run (even a run without steps:
-- the rows come from the run spine): the median loss of the first
-- progress_start_points steps against the last progress_window_share of the
-- counted steps (spikes left out), the relative drop, the change over the last
-- quarter of the run (is it still falling?), the log-to-log scatter of the loss
-- (is the fall larger than the noise?), and the evidence for a loss that is no
-- likelihood (negative values) or that collapsed to exactly zero.
with

runs as (
    -- the run spine: one row per run
    select run_id from {{ run_ref('stg_training__config') }}
),

all_points as (
    select run_id, step, loss from {{ run_ref('int_train_steps_resolved') }} where loss is not null
),

scored as (
    select run_id, step, loss, is_loss_spike
    from {{ run_ref('int_loss_baselines_computed') }}
    where loss is not null and not is_loss_spike
),

positioned as (
    select
        *,
        row_number() over (partition by run_id order by step) as position,
        count(*) over (partition by run_id) as n_steps,
        abs(loss - {{ previous_value('loss', 'step', 'run_id') }}) as step_change
    from scored
),

windows as (
    select
        run_id,
        max(n_steps) as n_steps,
        min(step) as first_step,
        max(step) as last_step,
        percentile_cont(0.5) within group (order by case
            when position <= {{ var('progress_start_points') }} then loss end)
            as start_loss,
        percentile_cont(0.5) within group (order by case
            when position > n_steps - greatest(3, ceiling(n_steps * {{ var('progress_window_share') }})) then loss end)
            as end_loss,
        percentile_cont(0.5) within group (order by case
            when position > 0.75 * n_steps - greatest(3, ceiling(n_steps * {{ var('progress_window_share') }}))
                and position <= 0.75 * n_steps then loss end)
            as three_quarter_loss,
        -- the median absolute change between consecutive logs over 0.6745 * sqrt(2): the standard
        -- deviation of one logged loss around its level if the noise is independent
        percentile_cont(0.5) within group (order by step_change) / (0.6745 * sqrt(2.0)) as loss_scatter
    from positioned
    group by run_id
),

zeros as (
    -- exact zeros, and the last non-zero loss logged before the first of them
    select
        run_id,
        sum(case when loss = 0 then 1 else 0 end) as zero_loss_steps,
        min(case when loss = 0 then step end) as first_zero_step,
        min(loss) as min_loss,
        count(*) as logged_steps
    from all_points
    group by run_id
),

last_non_zero as (
    -- the last non-zero step before the run's first zero
    select
        all_points.run_id,
        max(all_points.step) as step_before_zero
    from all_points
    inner join zeros
        on all_points.run_id = zeros.run_id
    where all_points.step < zeros.first_zero_step and all_points.loss <> 0
    group by all_points.run_id
),

before_zero as (
    select
        all_points.run_id,
        max(all_points.loss) as loss_before_zero
    from all_points
    inner join last_non_zero
        on all_points.run_id = last_non_zero.run_id
        and all_points.step = last_non_zero.step_before_zero
    group by all_points.run_id
),

final as (
    select
        runs.run_id,
        1 as progress_id,
        windows.n_steps,
        windows.first_step,
        windows.last_step,
        windows.start_loss,
        windows.end_loss,
        windows.three_quarter_loss,
        1 - {{ safe_divide('windows.end_loss', 'windows.start_loss') }} as relative_drop,
        1 - {{ safe_divide('windows.end_loss', 'windows.three_quarter_loss') }} as last_quarter_relative_drop,
        windows.loss_scatter,
        windows.start_loss - windows.end_loss as level_change,
        coalesce(zeros.logged_steps, 0) as logged_steps,
        coalesce(zeros.zero_loss_steps, 0) as zero_loss_steps,
        zeros.first_zero_step,
        before_zero.loss_before_zero,
        coalesce(zeros.min_loss < 0, false) as has_negative_loss
    from runs
    left join windows
        on runs.run_id = windows.run_id
    left join zeros
        on runs.run_id = zeros.run_id
    left join before_zero
        on runs.run_id = before_zero.run_id
)

select * from final
