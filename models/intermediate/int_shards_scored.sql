-- Loss by data shard and by source, against each step's spike-free baseline:
-- the mean log residual (how much worse than the run's recent level its batches
-- were), how many of its steps spiked, and its share of the run. A shard or
-- source is flagged bad when most of its steps spike or its batches are
-- consistently far above the baseline.
with

scored as (
    select * from {{ ref('int_loss_baselines_computed') }}
    where log_residual is not null
),

shards as (
    select shard_id, source from {{ ref('int_shards_resolved') }}
),

totals as (
    select
        count(*) as scored_steps,
        sum(case when is_loss_spike then 1 else 0 end) as spike_steps
    from scored
),

with_source as (
    select
        scored.*,
        coalesce(shards.source, 'unknown') as source,
        (shards.shard_id is null) as is_unknown_shard
    from scored
    left join shards
        on scored.shard_id = shards.shard_id
    where scored.shard_id is not null
),

keyed as (
    -- every scored step twice: once under its shard, once under its source
    select 'shard' as grouping_level, shard_id as group_key, with_source.* from with_source
    union all
    select 'source' as grouping_level, source as group_key, with_source.* from with_source
),

groups as (
    select
        grouping_level,
        group_key,
        max(source) as source,
        count(*) as n_steps,
        min(step) as first_step,
        max(step) as last_step,
        avg(log_residual) as mean_log_residual,
        percentile_cont(0.5) within group (order by log_residual) as median_log_residual,
        sum(case when is_loss_spike then 1 else 0 end) as n_spikes,
        sum(case when is_loss_spike then loss - loss_baseline else 0 end) as spike_loss_excess,
        sum(case when loss > loss_baseline then loss - loss_baseline else 0 end) as loss_excess
    from keyed
    group by grouping_level, group_key
),

final as (
    select
        groups.grouping_level || ':' || groups.group_key as shard_group_id,
        groups.*,
        exp(groups.mean_log_residual) - 1 as mean_relative_excess,
        exp(groups.median_log_residual) - 1 as median_relative_excess,
        {{ safe_divide('groups.n_spikes', 'groups.n_steps') }} as spike_share_of_group,
        {{ safe_divide('groups.n_spikes', 'totals.spike_steps') }} as share_of_all_spikes,
        {{ safe_divide('groups.n_steps', 'totals.scored_steps') }} as share_of_steps,
        (
            groups.n_steps >= {{ var('bad_shard_min_steps') }}
            and (
                {{ safe_divide('groups.n_spikes', 'groups.n_steps') }} >= {{ var('bad_shard_min_spike_share') }}
                -- the median, not the mean: one spike inside a visit does not make a shard bad
                or exp(groups.median_log_residual) - 1 >= {{ var('bad_shard_min_median_excess') }}
            )
        ) as is_bad
    from groups
    cross join totals
)

select * from final
