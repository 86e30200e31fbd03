-- How much the training loss fell: the median loss of the first
-- progress_start_points steps against the last progress_window_share of the
-- counted steps (spikes left out), the relative
-- drop, and the change over the last quarter of the run (is it still falling?).
with

scored as (
    select step, loss, is_loss_spike
    from {{ ref('int_loss_baselines_computed') }}
    where loss is not null and not is_loss_spike
),

positioned as (
    select
        *,
        row_number() over (order by step) as position,
        count(*) over () as n_steps
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
            as three_quarter_loss
    from positioned
),

final as (
    select
        1 as progress_id,
        n_steps,
        first_step,
        last_step,
        start_loss,
        end_loss,
        three_quarter_loss,
        1 - {{ safe_divide('end_loss', 'start_loss') }} as relative_drop,
        1 - {{ safe_divide('end_loss', 'three_quarter_loss') }} as last_quarter_relative_drop
    from windows
)

select * from final
