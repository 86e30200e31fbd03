-- How much the training loss fell, in one row: the median loss of the first
-- progress_start_points steps against the last progress_window_share of the
-- counted steps (spikes left out), the relative drop, the change over the last
-- quarter of the run (is it still falling?), the log-to-log scatter of the loss
-- (is the fall larger than the noise?), and the evidence for a loss that is no
-- likelihood (negative values) or that collapsed to exactly zero.
with

all_points as (
    select step, loss from {{ ref('int_train_steps_resolved') }} where loss is not null
),

scored as (
    select step, loss, is_loss_spike
    from {{ ref('int_loss_baselines_computed') }}
    where loss is not null and not is_loss_spike
),

positioned as (
    select
        *,
        row_number() over (order by step) as position,
        count(*) over () as n_steps,
        abs(loss - {{ previous_value('loss', 'step') }}) as step_change
    from scored
),

windows as (
    select
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
),

zeros as (
    -- exact zeros, and the last non-zero loss logged before the first of them
    select
        sum(case when loss = 0 then 1 else 0 end) as zero_loss_steps,
        min(case when loss = 0 then step end) as first_zero_step,
        min(loss) as min_loss,
        count(*) as logged_steps
    from all_points
),

before_zero as (
    select max(all_points.loss) as loss_before_zero
    from all_points
    cross join zeros
    where all_points.step = (
        select max(earlier.step) from all_points as earlier
        where earlier.step < zeros.first_zero_step and earlier.loss <> 0
    )
),

final as (
    select
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
        zeros.logged_steps,
        coalesce(zeros.zero_loss_steps, 0) as zero_loss_steps,
        zeros.first_zero_step,
        before_zero.loss_before_zero,
        coalesce(zeros.min_loss < 0, false) as has_negative_loss
    from windows
    cross join zeros
    cross join before_zero
)

select * from final
