-- The loss on each side of every epoch boundary: the spike-free baseline of the
-- steps before (int_loss_baselines_computed) against the median of the same number after
-- (spikes left out), and how that change compares with the change at ordinary
-- steps. A drop at the boundary well beyond the usual is the staircase of a model
-- recognising examples it has seen (memorisation).
{%- set w = var('staircase_window') %}
with

scored as (
    select step, loss, loss_baseline, is_loss_spike from {{ ref('int_loss_baselines_computed') }}
),

epochs as (
    select step, epoch_number, is_epoch_start, epoch_first_step, epoch_last_step from {{ ref('int_epochs_assigned') }}
),

clean as (
    select
        scored.step,
        scored.loss_baseline,
        case when not scored.is_loss_spike then scored.loss end as clean_loss,
        epochs.epoch_number,
        epochs.is_epoch_start,
        -- both windows inside one epoch: a measure of the ordinary change
        (
            scored.step - epochs.epoch_first_step >= {{ var('spike_window') }}
            and epochs.epoch_last_step - scored.step >= {{ w }}
        ) as is_inside_epoch
    from scored
    inner join epochs
        on scored.step = epochs.step
),

windows as (
    select
        *,
        -- the spike-free baseline is the level of the steps before
        loss_baseline as median_before,
        {{ leading_median('clean_loss', 'step', w - 1) }} as median_after
    from clean
),

changes as (
    select
        *,
        1 - {{ safe_divide('median_after', 'median_before') }} as relative_drop
    from windows
),

typical as (
    select
        percentile_cont(0.9) within group (order by abs(relative_drop)) as typical_abs_change
    from changes
    where is_inside_epoch and relative_drop is not null
),

final as (
    select
        changes.step as boundary_step,
        changes.epoch_number,
        changes.median_before,
        changes.median_after,
        changes.relative_drop,
        typical.typical_abs_change,
        (
            changes.relative_drop >= {{ var('staircase_min_relative_drop') }}
            and changes.relative_drop > typical.typical_abs_change
        ) as is_staircase_step
    from changes
    cross join typical
    where changes.is_epoch_start
)

select * from final
