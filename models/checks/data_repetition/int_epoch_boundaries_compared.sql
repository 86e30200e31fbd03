-- The loss on each side of every epoch boundary: the median of the spike_window
-- steps before against the median of the staircase_window steps after (spikes
-- left out, each step's loss divided by its source's typical offset so that a
-- switch from a hard source to an easy one is not read as a drop), and how that
-- change compares with the same change measured inside epochs, away from any
-- boundary. A drop at the boundary well beyond the usual is the staircase of a
-- model recognising examples it has seen (memorisation).
{%- set w = threshold('staircase_window') %}
with

scored as (
    -- the spike flag and the epoch of every counted step: one table (the wide model)
    select run_id, step, shard_id, loss, is_loss_spike, epoch_number, is_epoch_start, epoch_first_step, epoch_last_step
    from {{ run_ref('int_train_steps_measured') }}
),

runs_with_boundaries as (
    -- only a run with an epoch boundary has a row below: the rolling medians of the others
    -- (a one-epoch run: every step of a 1M-step run, for nothing) are not computed
    select distinct run_id from scored
    where is_epoch_start
),

shards as (
    select run_id, shard_id, source from {{ run_ref('int_shards_resolved') }}
),

source_offsets as (
    select run_id, group_key as source, median_log_residual from {{ run_ref('int_shards_scored') }}
    where grouping_level = 'source'
),

clean as (
    select
        scored.run_id,
        scored.step,
        case when not scored.is_loss_spike and scored.loss > 0
            then exp(ln(scored.loss) - coalesce(source_offsets.median_log_residual, 0)) end as adjusted_loss,
        scored.epoch_number,
        scored.is_epoch_start,
        -- both windows inside one epoch: a measure of the ordinary change
        (
            scored.step - scored.epoch_first_step >= {{ threshold('spike_window') }}
            and scored.epoch_last_step - scored.step >= {{ w }}
        ) as is_inside_epoch
    from scored
    inner join runs_with_boundaries
        on scored.run_id = runs_with_boundaries.run_id
    left join shards
        on scored.run_id = shards.run_id
        and scored.shard_id = shards.shard_id
    left join source_offsets
        on shards.run_id = source_offsets.run_id
        and shards.source = source_offsets.source
),

windows as (
    select
        *,
        {{ rolling_median('adjusted_loss', 'step', threshold('spike_window'), partition_by='run_id') }} as median_before,
        {{ leading_median('adjusted_loss', 'step', w - 1, partition_by='run_id') }} as median_after
    from clean
),

changes as (
    select
        *,
        1 - {{ safe_divide('median_after', 'median_before') }} as relative_drop
    from windows
),

typical_by_run as (
    select
        run_id,
        percentile_cont({{ threshold('staircase_typical_percentile') }}) within group (order by abs(relative_drop)) as typical_abs_change
    from changes
    where is_inside_epoch and relative_drop is not null
    group by run_id
),

typical as (
    -- one row per run (the run spine); NULL when the run has no comparison inside an epoch
    select
        runs.run_id,
        typical_by_run.typical_abs_change
    from {{ run_ref('stg_training__config') }} as runs
    left join typical_by_run
        on runs.run_id = typical_by_run.run_id
),

final as (
    select
        changes.run_id,
        changes.step as boundary_step,
        changes.epoch_number,
        changes.median_before,
        changes.median_after,
        changes.relative_drop,
        typical.typical_abs_change,
        coalesce(
            changes.relative_drop >= {{ threshold('staircase_min_relative_drop') }}
            -- without comparisons inside epochs (a sparse log) the usual change is unknown: no verdict
            and changes.relative_drop > typical.typical_abs_change,
            false
        ) as is_staircase_step
    from changes
    inner join typical
        on changes.run_id = typical.run_id
    where changes.is_epoch_start
)

select * from final
