-- Finding: a shard (or a source spanning several shards) whose batches are
-- consistently worse than the run's baseline. Evidence: its steps, how many
-- spiked and their share of all spikes, its mean loss excess, its share of the run.
with

scored as (
    select * from {{ run_ref('int_shards_scored') }}
),

shard_counts as (
    select run_id, source, count(*) as shards_in_source
    from {{ run_ref('int_shards_resolved') }}
    group by run_id, source
),

candidates as (
    select scored.*, shard_counts.shards_in_source
    from scored
    left join shard_counts
        on scored.run_id = shard_counts.run_id
        and scored.source = shard_counts.source
    where scored.is_bad
        -- a source is reported on its own only when it spans several shards
        and (scored.grouping_level = 'shard' or coalesce(shard_counts.shards_in_source, 0) >= 2)
),

final as (
    select
        run_id,
        'bad_data_shard:' || case when grouping_level = 'shard' then group_key else 'source_' || group_key end as finding_id,
        'bad_data_shard' as category,
        case
            when mean_relative_excess >= {{ threshold('bad_shard_high_mean_excess') }} or share_of_all_spikes >= {{ threshold('bad_shard_high_spike_share') }} then 'high'
            else 'medium'
        end as severity,
        case when grouping_level = 'shard'
            then 'Shard ' || group_key || ' (' || coalesce(source, 'unknown source') || ') is bad data: its batches'
            else 'Source ' || group_key || ' is bad data: its ' || {{ fmt_int('shards_in_source') }} || ' shards'' batches'
        end
            || ' ran ' || {{ fmt_pct('mean_relative_excess') }} || ' above the loss baseline on average and caused '
            || {{ fmt_int('n_spikes') }} || ' of the run''s spike steps.' as title,
        grouping_level || ' ' || group_key || ' (source ' || coalesce(source, 'unknown') || '): ' || {{ fmt_int('n_steps') }}
            || ' counted steps (' || {{ fmt_pct('share_of_steps') }} || ' of the run), steps ' || {{ fmt_int('first_step') }} || '-'
            || {{ fmt_int('last_step') }} || '; ' || {{ fmt_int('n_spikes') }} || ' of them spiked ('
            || {{ fmt_pct('spike_share_of_group') }} || ' of its steps, ' || {{ fmt_pct('share_of_all_spikes') }}
            || ' of all spike steps, ' || {{ fmt('spike_concentration', 1) }} || 'x its chance share); worst of its '
            || {{ fmt_int('n_visits') }} || ' visit(s): ' || {{ fmt_pct('max_visit_spike_share') }} || ' of steps spiked; mean loss ' || {{ fmt_pct('mean_relative_excess') }}
            || ' above the step''s baseline (other shards: within a few percent); loss above baseline summed over its steps '
            || {{ fmt('loss_excess', 2) }} as evidence,
        first_step,
        last_step,
        n_steps as steps_affected,
        mean_relative_excess as observed_value,
        cast(0 as {{ type_double() }}) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        loss_excess as estimated_cost,
        'loss_excess' as cost_unit,
        'sum over its steps of (loss - spike-free baseline) where positive' as cost_method,
        share_of_steps * least(1.0, mean_relative_excess) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Open ' || grouping_level || ' ' || group_key || ' and look for broken text (encoding, markup, duplicated blocks, '
            || 'wrong language); filter or drop it before the large run, and keep per-source loss curves on.' as recommendation
    from candidates
)

select * from final
