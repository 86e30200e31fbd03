-- The loss on each side of every epoch boundary: the median of the spike_window
-- steps before against the median of the staircase_window steps after (spikes
-- left out, each step's loss divided by its source's typical offset so that a
-- switch from a hard source to an easy one is not read as a drop), and how that
-- change compares with the same change measured inside epochs, away from any
-- boundary. A drop at the boundary well beyond the usual is the staircase of a
-- model recognising examples it has seen (memorisation).
{%- set w = var('staircase_window') %}
with

scored as (
    select step, shard_id, loss, is_loss_spike from {{ ref('int_loss_baselines_computed') }}
),

epochs as (
    select step, epoch_number, is_epoch_start, epoch_first_step, epoch_last_step from {{ ref('int_epochs_assigned') }}
),

shards as (
    select shard_id, source from {{ ref('int_shards_resolved') }}
),

source_offsets as (
    select group_key as source, median_log_residual from {{ ref('int_shards_scored') }}
    where grouping_level = 'source'
),

clean as (
    select
        scored.step,
        case when not scored.is_loss_spike and scored.loss > 0
            then exp(ln(scored.loss) - coalesce(source_offsets.median_log_residual, 0)) end as adjusted_loss,
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
    left join shards
        on scored.shard_id = shards.shard_id
    left join source_offsets
        on shards.source = source_offsets.source
),

windows as (
    select
        *,
        {{ rolling_median('adjusted_loss', 'step', var('spike_window')) }} as median_before,
        {{ leading_median('adjusted_loss', 'step', w - 1) }} as median_after
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
        coalesce(
            changes.relative_drop >= {{ var('staircase_min_relative_drop') }}
            -- without comparisons inside epochs (a sparse log) the usual change is unknown: no verdict
            and changes.relative_drop > typical.typical_abs_change,
            false
        ) as is_staircase_step
    from changes
    cross join typical
    where changes.is_epoch_start
)

select * from final
