-- Finding: the run passed over the same data more than once. Evidence: how the
-- epochs were found (shard visits or the config's steps_per_epoch), where each
-- epoch started, and the loss before and after each boundary: a drop well
-- beyond the usual change is the staircase of memorisation.
-- Second finding, one per resume: the data loader did not resume where it left off.
-- The steps from the checkpoint to the crash ran twice (int_replays_compared); a
-- deterministic resume replays the same batches, so a replay that reads other shards
-- than the first attempt restarted (or reshuffled) its epoch: examples are repeated
-- or skipped from there on.
with

epochs as (
    select * from {{ run_ref('int_epochs_assigned') }}
),

boundaries as (
    select * from {{ run_ref('int_epoch_boundaries_compared') }}
),

config as (
    select run_id, batch_size from {{ run_ref('stg_training__config') }}
),

replays as (
    select * from {{ run_ref('int_replays_compared') }}
    where steps_with_other_shard >= {{ var('resume_data_order_min_share') }} * shard_compared_steps
        and steps_with_other_shard > 0
),

shards as (
    select run_id, count(*) as shard_count, sum(n_examples) as total_examples
    from {{ run_ref('int_shards_resolved') }}
    group by run_id
),

summary as (
    select
        run_id,
        max(epoch_number) as epochs_started,
        max(epoch_basis) as epoch_basis,
        count(*) as counted_steps,
        sum(case when epoch_number >= 2 then 1 else 0 end) as repeated_steps,
        min(case when epoch_number >= 2 then step end) as first_repeat_step,
        max(step) as last_step,
        -- rows logged, not steps trained: a log written every N steps has N steps per row
        sum(case when epoch_number = 1 then 1 else 0 end) as first_epoch_steps,
        min(case when epoch_number = 1 then step end) as first_epoch_first_step,
        max(case when epoch_number = 1 then step end) as first_epoch_last_step
    from epochs
    group by run_id
),

boundary_text as (
    select
        run_id,
        count(*) as boundaries,
        sum(case when is_staircase_step then 1 else 0 end) as staircase_steps,
        max(case when is_staircase_step then relative_drop end) as largest_drop,
        {{ dbt.listagg(
            "'step ' || " ~ fmt_int('boundary_step') ~ " || ' (epoch ' || " ~ fmt_int('epoch_number') ~ " || '): loss '"
            ~ " || " ~ fmt('median_before', 3) ~ " || ' -> ' || " ~ fmt('median_after', 3)
            ~ " || case when is_staircase_step then ' staircase drop' else '' end",
            "'; '", "order by boundary_step") }} as boundary_list,
        max(typical_abs_change) as typical_abs_change
    from boundaries
    group by run_id
),

run_finding as (
    select
        summary.run_id,
        'data_repetition:run' as finding_id,
        'data_repetition' as category,
        case when boundary_text.staircase_steps > 0 then 'medium' else 'low' end as severity,
        'The run made ' || {{ fmt('cast(summary.counted_steps as ' ~ type_double() ~ ') / nullif(summary.first_epoch_steps, 0)', 1) }}
            || ' passes over its data (' || {{ fmt_int('summary.epochs_started') }} || ' epochs started): steps '
            || {{ fmt_int('summary.first_repeat_step') }} || '-' || {{ fmt_int('summary.last_step') }}
            || ' re-read examples already seen (' || {{ fmt_int('summary.repeated_steps') }} || ' of ' || {{ fmt_int('summary.counted_steps') }}
            || ' logged rows)'
            || case when boundary_text.staircase_steps > 0
                then ', and the loss drops in a staircase at ' || {{ fmt_int('boundary_text.staircase_steps') }} || ' epoch boundaries.'
                else '; no loss staircase at the epoch boundaries.' end as title,
        'epochs found from ' || case summary.epoch_basis
                when 'shard_visits' then 'the shard visits (a shard''s k-th visit is epoch k)'
                when 'config_steps_per_epoch' then 'the steps per epoch in the config'
                else summary.epoch_basis end
            || '; epoch 1 = steps ' || {{ fmt_int('summary.first_epoch_first_step') }}
            || '-' || {{ fmt_int('summary.first_epoch_last_step') }} || ' (' || {{ fmt_int('summary.first_epoch_steps') }} || ' logged rows)'
            || case when shards.shard_count > 0
                then ' (' || {{ fmt_int('shards.shard_count') }} || ' shards, ' || {{ fmt_int('shards.total_examples') }}
                    || ' examples; batch_size ' || {{ fmt_int('config.batch_size') }} || ')'
                else '' end
            || '; epoch boundaries: ' || coalesce(boundary_text.boundary_list, 'none')
            || '; the usual change between neighbouring windows is ' || {{ fmt_pct('boundary_text.typical_abs_change') }}
            as evidence,
        summary.first_repeat_step as first_step,
        summary.last_step,
        summary.repeated_steps as steps_affected,
        cast(summary.epochs_started as {{ type_double() }}) as observed_value,
        cast(1 as {{ type_double() }}) as expected_value,
        {{ safe_divide('summary.repeated_steps', 'summary.counted_steps') }} as estimated_cost,
        'share_of_updates' as cost_unit,
        'share of counted steps spent on examples the model had already trained on' as cost_method,
        {{ safe_divide('summary.repeated_steps', 'summary.counted_steps') }}
            * case when boundary_text.staircase_steps > 0 then 0.5 else 0.1 end as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when boundary_text.staircase_steps > 0
            then 'The model is memorising repeated examples: train on more unique data (or fewer epochs) and watch validation loss from the first repeat.'
            else 'Repetition is by design here, but plan the large run with enough unique data (one epoch or less) and keep an eye on validation loss after each boundary.'
        end as recommendation
    from summary
    -- a run without epoch boundaries or shard rows keeps its finding (the whole-log aggregates gave one row)
    left join boundary_text
        on summary.run_id = boundary_text.run_id
    inner join config
        on summary.run_id = config.run_id
    left join shards
        on summary.run_id = shards.run_id
    where summary.epochs_started >= 2
),

resume_findings as (
    select
        run_id,
        'data_repetition:resume_' || {{ fmt_int('resume_step') }} as finding_id,
        'data_repetition' as category,
        'medium' as severity,
        'After the resume at step ' || {{ fmt_int('resume_step') }} || ' the data loader did not continue where it left off: '
            || {{ fmt_int('steps_with_other_shard') }} || ' of ' || {{ fmt_int('shard_compared_steps') }}
            || ' replayed steps read other shards than the first attempt did, so examples were repeated or skipped from there on.' as title,
        'steps ' || {{ fmt_int('first_compared_step') }} || '-' || {{ fmt_int('last_compared_step') }}
            || ' ran twice from the checkpoint before step ' || {{ fmt_int('resume_step') }} || ' (first attempt, then the replay after the resume); '
            || 'the shard differs between the two attempts on ' || {{ fmt_int('steps_with_other_shard') }} || ' of the '
            || {{ fmt_int('shard_compared_steps') }} || ' steps with a shard id in both; a resume that restores the loader state replays the same batches'
            as evidence,
        resume_step as first_step,
        last_compared_step as last_step,
        steps_with_other_shard as steps_affected,
        cast(steps_with_other_shard as {{ type_double() }}) as observed_value,
        cast(0 as {{ type_double() }}) as expected_value,
        {{ safe_divide('steps_with_other_shard', 'shard_compared_steps') }} as estimated_cost,
        'share_of_updates' as cost_unit,
        'share of the replayed steps that read other shards than the first attempt' as cost_method,
        {{ safe_divide('steps_with_other_shard', 'shard_compared_steps') }} * 0.1 as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Save the data loader''s state (epoch, position in it, shuffle seed) in each checkpoint and restore it on resume; '
            || 'check with a resume test that the replayed steps read the same shards as the first attempt.' as recommendation
    from replays
),

final as (
    select * from run_finding
    union all
    select * from resume_findings
)

select * from final
