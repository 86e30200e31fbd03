-- Which pass over the data each counted step belongs to. With shard ids, a
-- shard's k-th visit (a run of consecutive steps on it) belongs to epoch k: one
-- pass over all shards is one epoch, whatever order they were shuffled in. A
-- run of steps longer than one pass over the shard (ceil(n_examples /
-- batch_size) steps) is two visits back to back (the shuffle put the shard last
-- in one epoch and first in the next).
-- Without shard ids, the config's steps_per_epoch (written by importers from the
-- framework's own epoch counter) numbers the epochs.
with

steps as (
    select run_id, step, shard_id, is_shard_change from {{ run_ref('int_train_steps_resolved') }}
),

config as (
    -- one row per run: the run spine
    select run_id, steps_per_epoch, batch_size from {{ run_ref('stg_training__config') }}
),

shard_sizes as (
    select run_id, shard_id, n_examples from {{ run_ref('int_shards_resolved') }}
),

shard_counts as (
    -- its own scan (sharing `steps` would hold every step in memory for this one count)
    select run_id, count(shard_id) as steps_with_shard, count(*) as steps_total
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

shard_coverage as (
    select
        config.run_id,
        coalesce(shard_counts.steps_with_shard, 0) as steps_with_shard,
        coalesce(shard_counts.steps_total, 0) as steps_total
    from config
    left join shard_counts
        on config.run_id = shard_counts.run_id
),

runs as (
    select
        *,
        sum(case when is_shard_change then 1 else 0 end) over (
            partition by run_id order by step rows between unbounded preceding and current row
        ) as run_number
    from steps
),

runs_split as (
    select
        runs.*,
        row_number() over (partition by runs.run_id, runs.run_number order by runs.step) as position_in_run,
        cast(ceiling({{ safe_divide('shard_sizes.n_examples', 'config.batch_size') }}) as {{ dbt.type_bigint() }})
            as steps_per_visit
    from runs
    inner join config
        on runs.run_id = config.run_id
    left join shard_sizes
        on runs.run_id = shard_sizes.run_id
        and runs.shard_id = shard_sizes.shard_id
),

visits as (
    select
        *,
        run_number * 1000000
            + coalesce(cast(floor({{ safe_divide('position_in_run - 1', 'steps_per_visit') }}) as {{ dbt.type_bigint() }}), 0)
            as visit_number
    from runs_split
),

visit_starts as (
    select
        run_id,
        shard_id,
        visit_number,
        min(step) as visit_first_step,
        count(*) as visit_steps
    from visits
    where shard_id is not null
    group by run_id, shard_id, visit_number
),

visit_occurrence as (
    select
        *,
        row_number() over (partition by run_id, shard_id order by visit_first_step) as occurrence
    from visit_starts
),

assigned as (
    select
        visits.run_id,
        visits.step,
        visits.shard_id,
        visits.visit_number,
        visit_occurrence.occurrence as shard_visit_occurrence,
        case
            when shard_coverage.steps_with_shard = shard_coverage.steps_total then visit_occurrence.occurrence
            when config.steps_per_epoch > 0
                then cast(floor({{ safe_divide('greatest(visits.step, 1) - 1', 'config.steps_per_epoch') }}) as {{ dbt.type_bigint() }}) + 1
        end as epoch_number,
        case
            when shard_coverage.steps_with_shard = shard_coverage.steps_total then 'shard_visits'
            when config.steps_per_epoch > 0 then 'config_steps_per_epoch'
            else 'unknown'
        end as epoch_basis
    from visits
    left join visit_occurrence
        on visits.run_id = visit_occurrence.run_id
        and visits.visit_number = visit_occurrence.visit_number
        and visits.shard_id = visit_occurrence.shard_id
    inner join shard_coverage
        on visits.run_id = shard_coverage.run_id
    inner join config
        on visits.run_id = config.run_id
),

sequenced as (
    select
        *,
        (epoch_number > coalesce({{ previous_value('epoch_number', 'step', 'run_id') }}, epoch_number)) as is_epoch_start
    from assigned
),

epoch_spans as (
    -- an aggregate joined back (one row per epoch; the steps of no known epoch together, as a
    -- window partition would hold them: epoch numbers start at 1, so -1 stands for none)
    select
        run_id,
        coalesce(epoch_number, -1) as epoch_key,
        min(step) as epoch_first_step,
        max(step) as epoch_last_step
    from sequenced
    group by run_id, coalesce(epoch_number, -1)
),

final as (
    select
        sequenced.*,
        epoch_spans.epoch_first_step,
        epoch_spans.epoch_last_step
    from sequenced
    left join epoch_spans
        on sequenced.run_id = epoch_spans.run_id
        and coalesce(sequenced.epoch_number, -1) = epoch_spans.epoch_key
)

select * from final
