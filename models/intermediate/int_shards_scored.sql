-- Loss by data shard and by source, against each step's spike-free baseline:
-- the mean log residual (how much worse than the run's recent level its batches
-- were), how many of its steps spiked, and its share of the run. A shard or
-- source is flagged bad when most of its steps spike, its batches are
-- consistently far above the baseline, or one visit (consecutive steps on it)
-- mostly spiked while the group carries several times its chance share of all
-- spikes: a normal-looking visit (in warmup, say) does not hide a bad shard.
with

scored as (
    select run_id, step, shard_id, loss, loss_baseline, log_residual, is_loss_spike
    from {{ run_ref('int_loss_baselines_computed') }}
    where log_residual is not null
),

shards as (
    select run_id, shard_id, source from {{ run_ref('int_shards_resolved') }}
),

totals_by_run as (
    -- its own scan of the baselines (sharing `scored` would hold every scored step in memory)
    select
        run_id,
        count(*) as scored_steps,
        sum(case when is_loss_spike then 1 else 0 end) as spike_steps
    from {{ run_ref('int_loss_baselines_computed') }}
    where log_residual is not null
    group by run_id
),

totals as (
    -- one row per run (the run spine), as the whole-run totals were one row on any input
    select
        runs.run_id,
        coalesce(totals_by_run.scored_steps, 0) as scored_steps,
        totals_by_run.spike_steps
    from {{ run_ref('stg_training__config') }} as runs
    left join totals_by_run
        on runs.run_id = totals_by_run.run_id
),

with_source as (
    select
        scored.*,
        coalesce(shards.source, 'unknown') as source
    from scored
    left join shards
        on scored.run_id = shards.run_id
        and scored.shard_id = shards.shard_id
    where scored.shard_id is not null
),

changes as (
    -- a visit (consecutive scored steps on one shard, or one source) starts where the
    -- step before it was on another one
    select
        with_source.*,
        coalesce(shard_id <> {{ previous_value('shard_id', 'step', 'run_id') }}, true) as is_shard_visit_start,
        coalesce(source <> {{ previous_value('source', 'step', 'run_id') }}, true) as is_source_visit_start
    from with_source
),

visit_numbered as (
    -- visits numbered along the run: the visit number with the shard (or source) names a visit
    select
        *,
        sum(case when is_shard_visit_start then 1 else 0 end) over (
            partition by run_id order by step rows between unbounded preceding and current row
        ) as shard_visit_number,
        sum(case when is_source_visit_start then 1 else 0 end) over (
            partition by run_id order by step rows between unbounded preceding and current row
        ) as source_visit_number
    from changes
),

visits as (
    select
        run_id,
        'shard' as grouping_level,
        shard_id as group_key,
        count(*) as visit_steps,
        sum(case when is_loss_spike then 1 else 0 end) as visit_spikes
    from visit_numbered
    group by run_id, shard_id, shard_visit_number
    union all
    select
        run_id,
        'source' as grouping_level,
        source as group_key,
        count(*) as visit_steps,
        sum(case when is_loss_spike then 1 else 0 end) as visit_spikes
    from visit_numbered
    group by run_id, source, source_visit_number
),

worst_visits as (
    select
        run_id,
        grouping_level,
        group_key,
        count(*) as n_visits,
        max(case when visit_steps >= {{ threshold('bad_shard_min_steps') }}
            then {{ safe_divide('visit_spikes', 'visit_steps') }} end) as max_visit_spike_share
    from visits
    group by run_id, grouping_level, group_key
),

{%- for level, key in [('shard', 'shard_id'), ('source', 'source')] %}

{{ level }}_groups as (
    select
        run_id,
        '{{ level }}' as grouping_level,
        {{ key }} as group_key,
        max(source) as source,
        count(*) as n_steps,
        min(step) as first_step,
        max(step) as last_step,
        {{ stable_avg('log_residual') }} as mean_log_residual,
        percentile_cont(0.5) within group (order by log_residual) as median_log_residual,
        sum(case when is_loss_spike then 1 else 0 end) as n_spikes,
        {{ stable_sum('case when is_loss_spike then loss - loss_baseline else 0 end') }} as spike_loss_excess,
        {{ stable_sum('case when loss > loss_baseline then loss - loss_baseline else 0 end') }} as loss_excess
    from visit_numbered
    group by run_id, {{ key }}
),
{%- endfor %}

groups as (
    -- every scored step counts twice: once under its shard, once under its source
    select * from shard_groups
    union all
    select * from source_groups
),

final as (
    select
        groups.run_id,
        groups.grouping_level || ':' || groups.group_key as shard_group_id,
        groups.grouping_level,
        groups.group_key,
        groups.source,
        groups.n_steps,
        groups.first_step,
        groups.last_step,
        groups.mean_log_residual,
        groups.median_log_residual,
        groups.n_spikes,
        groups.spike_loss_excess,
        groups.loss_excess,
        exp(groups.mean_log_residual) - 1 as mean_relative_excess,
        exp(groups.median_log_residual) - 1 as median_relative_excess,
        {{ safe_divide('groups.n_spikes', 'groups.n_steps') }} as spike_share_of_group,
        {{ safe_divide('groups.n_spikes', 'totals.spike_steps') }} as share_of_all_spikes,
        {{ safe_divide('groups.n_steps', 'totals.scored_steps') }} as share_of_steps,
        worst_visits.n_visits,
        worst_visits.max_visit_spike_share,
        {{ safe_divide(safe_divide('groups.n_spikes', 'totals.spike_steps'), safe_divide('groups.n_steps', 'totals.scored_steps')) }}
            as spike_concentration,
        (
            groups.n_steps >= {{ threshold('bad_shard_min_steps') }}
            and (
                {{ safe_divide('groups.n_spikes', 'groups.n_steps') }} >= {{ threshold('bad_shard_min_spike_share') }}
                -- the median, not the mean: one spike inside a visit does not make a shard bad
                or exp(groups.median_log_residual) - 1 >= {{ threshold('bad_shard_min_median_excess') }}
                -- a shard with one visit mostly spiking, and spikes concentrated on it far beyond chance
                -- (shards only: a source holding one bad shard would pass this through that shard)
                or coalesce(
                    groups.grouping_level = 'shard'
                    and worst_visits.max_visit_spike_share >= {{ threshold('bad_shard_visit_spike_share') }}
                    and {{ safe_divide(safe_divide('groups.n_spikes', 'totals.spike_steps'), safe_divide('groups.n_steps', 'totals.scored_steps')) }}
                        >= {{ threshold('bad_shard_spike_concentration') }},
                    false
                )
            )
        ) as is_bad
    from groups
    inner join totals
        on groups.run_id = totals.run_id
    left join worst_visits
        on groups.run_id = worst_visits.run_id
        and groups.grouping_level = worst_visits.grouping_level
        and groups.group_key = worst_visits.group_key
)

select * from final
