-- Finding: the run passed over the same data more than once. Evidence: how the
-- epochs were found (shard visits or the config's steps_per_epoch), where each
-- epoch started, and the loss before and after each boundary: a drop well
-- beyond the usual change is the staircase of memorisation.
-- And one per resume whose data position was not restored (int_resumes_checked):
-- the data after it follows the pre-crash order from an earlier position, or the
-- step counter restarted before the checkpoint (data_repetition: replayed), or from a
-- later one, or the counter jumped past the checkpoint (data_skipped), or the shards
-- read at the same steps differ from the crashed attempt's (order changed).
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

boundary_counts as (
    select
        *,
        -- a staircase: drops at more boundaries than noise gives. Each boundary beats the
        -- staircase_typical_percentile of the changes inside epochs by chance with probability
        -- p = 1 - that percentile, so the count of such drops among n boundaries is binomial(n, p) under
        -- noise alone: the count observed is a staircase when it lies staircase_min_z standard deviations
        -- or more above n p (normal approximation, with continuity correction). Among 49 boundaries, 7 drops
        -- are what noise gives; among 2, 2 are not; at the only one of a two-epoch run, one drop is
        -- (1 - 0.5 - p) / sqrt(p (1 - p)) = 1.33 standard deviations above
        staircase_steps > 0
            and staircase_steps - 0.5 - boundaries * (1 - {{ threshold('staircase_typical_percentile') }})
                >= {{ threshold('staircase_min_z') }} * sqrt(boundaries * (1 - {{ threshold('staircase_typical_percentile') }})
                    * {{ threshold('staircase_typical_percentile') }}) as is_staircase
    from boundary_text
),

run_finding as (
    select
        summary.run_id,
        'data_repetition:run' as finding_id,
        'data_repetition' as category,
        case when coalesce(boundary_counts.is_staircase, false) then 'medium' else 'low' end as severity,
        case
            -- passes from the first epoch's rows when the epochs are the shard visits; from the steps per
            -- epoch, the epochs started (a log every few steps puts fewer rows in its first epoch)
            when summary.first_epoch_steps > 0 and summary.epoch_basis = 'shard_visits'
                then 'The run made ' || {{ fmt('cast(summary.counted_steps as ' ~ type_double() ~ ') / summary.first_epoch_steps', 1) }}
                    || ' passes over its data (' || {{ fmt_int('summary.epochs_started') }} || ' epochs started): steps '
            else 'The run started ' || {{ fmt_int('summary.epochs_started') }} || ' epochs over its data: steps '
        end
            || {{ fmt_int('summary.first_repeat_step') }} || '-' || {{ fmt_int('summary.last_step') }}
            || ' re-read examples already seen (' || {{ fmt_int('summary.repeated_steps') }} || ' of ' || {{ fmt_int('summary.counted_steps') }}
            || ' logged rows)'
            || case when coalesce(boundary_counts.is_staircase, false)
                then ', and the loss drops in a staircase at ' || {{ fmt_int('boundary_counts.staircase_steps') }} || ' epoch boundaries.'
                when boundary_counts.staircase_steps > 0
                then '; the loss drops at ' || {{ fmt_int('boundary_counts.staircase_steps') }} || ' of ' || {{ fmt_int('boundary_counts.boundaries') }}
                    || ' epoch boundaries, as often as the noise inside epochs would: no staircase.'
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
            || '; epoch boundaries: ' || coalesce(boundary_counts.boundary_list, 'none')
            || '; the usual change between neighbouring windows is ' || {{ fmt_pct('boundary_counts.typical_abs_change') }}
            as evidence,
        summary.first_repeat_step as first_step,
        summary.last_step,
        summary.repeated_steps as steps_affected,
        cast(summary.epochs_started as {{ type_double() }}) as observed_value,
        cast(1 as {{ type_double() }}) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        {{ safe_divide('summary.repeated_steps', 'summary.counted_steps') }} as estimated_cost,
        'share_of_updates' as cost_unit,
        'share of counted steps spent on examples the model had already trained on' as cost_method,
        {{ safe_divide('summary.repeated_steps', 'summary.counted_steps') }}
            * case when coalesce(boundary_counts.is_staircase, false) then 0.5 else 0.1 end as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when coalesce(boundary_counts.is_staircase, false)
            then 'The model is memorising repeated examples: train on more unique data (or fewer epochs) and watch validation loss from the first repeat.'
            else 'Repetition is by design here, but plan the large run with enough unique data (one epoch or less) and keep an eye on validation loss after each boundary.'
        end as recommendation
    from summary
    -- a run without epoch boundaries or shard rows keeps its finding (the whole-log aggregates gave one row)
    left join boundary_counts
        on summary.run_id = boundary_counts.run_id
    inner join config
        on summary.run_id = config.run_id
    left join shards
        on summary.run_id = shards.run_id
    where summary.epochs_started >= 2
),

resumes as (
    select
        resumes.*,
        totals.counted_steps,
        case
            when data_order = 'replayed' or steps_replayed_before_checkpoint > 0 then 'replayed'
            when data_order = 'skipped' or steps_skipped > 0 then 'skipped'
            when data_order = 'order_changed' then 'order_changed'
        end as data_defect,
        -- how many steps of data the resume moved the run by (replayed or skipped)
        greatest(abs(coalesce(data_step_offset, 0)), steps_replayed_before_checkpoint, steps_skipped) as steps_moved
    from {{ run_ref('int_resumes_checked') }} as resumes
    inner join (
        select run_id, count(*) as counted_steps from {{ run_ref('int_train_steps_resolved') }} group by run_id
    ) as totals
        on resumes.run_id = totals.run_id
),

resume_findings as (
    select
        run_id,
        case when data_defect = 'skipped' then 'data_skipped' else 'data_repetition' end || ':resume_' || {{ fmt_int('resume_step') }}
            as finding_id,
        case when data_defect = 'skipped' then 'data_skipped' else 'data_repetition' end as category,
        -- the data moved by a material share of the run: medium; a few steps: low (a few batches seen
        -- twice or never change little); an order change at the same steps: low
        case when data_defect <> 'order_changed'
                and {{ safe_divide('steps_moved', 'counted_steps') }} >= {{ threshold('resume_data_medium_share') }} then 'medium'
            else 'low' end as severity,
        case data_defect
            when 'replayed' then 'The resume at step ' || {{ fmt_int('resume_step') }} || ' replayed data: '
                || case when steps_replayed_before_checkpoint > 0
                    then 'the run restarted at step ' || {{ fmt_int('first_after_step') }} || ', ' || {{ fmt_int('steps_replayed_before_checkpoint') }}
                        || ' steps before its checkpoint (step ' || {{ fmt_int('checkpoint_step') }} || ').'
                    else 'the data after it repeats what the run read ' || {{ fmt_int('steps_moved') }} || ' steps earlier (the data loader lost its position).' end
            when 'skipped' then 'The resume at step ' || {{ fmt_int('resume_step') }} || ' skipped data: '
                || case when steps_skipped > 0
                    then 'the run went on at step ' || {{ fmt_int('first_after_step') }} || ', ' || {{ fmt_int('steps_skipped') }}
                        || ' steps past its checkpoint (step ' || {{ fmt_int('checkpoint_step') }} || ').'
                    else 'the data after it is what the crashed attempt read ' || {{ fmt_int('steps_moved') }} || ' steps later.' end
            else 'The resume at step ' || {{ fmt_int('resume_step') }} || ' changed the data order: the shards read after it differ from those the crashed attempt read at the same steps.'
        end as title,
        'resume at step ' || {{ fmt_int('resume_step') }} || case when checkpoint_step is not null then ' (checkpoint ' || {{ fmt_int('checkpoint_step') }} || ')' else '' end
            || '; first step after it ' || {{ fmt_int('first_after_step') }}
            || case when after_shard_rows > 0 then '; shards of the first ' || {{ fmt_int('after_shard_rows') }} || ' rows after it ('
                || {{ fmt_int('after_shard_changes') }} || ' shard changes): same as the crashed attempt at the same steps on '
                || {{ fmt_pct('same_step_match_share') }} || ' of ' || {{ fmt_int('same_step_rows') }} || ' rows'
                || case when data_step_offset is not null then '; the pre-crash order at an offset of ' || {{ fmt_int('data_step_offset') }}
                    || ' steps matches ' || {{ fmt_pct('greatest(coalesce(best_offset_match_share, 0), coalesce(start_match_share, 0))') }}
                    || ' of them' else '' end
                else '' end
            || case when steps_skipped > 0 or steps_replayed_before_checkpoint > 0
                then '; the step counter resumed at ' || {{ fmt_int('first_after_step') }} || ' against the checkpoint at '
                    || {{ fmt_int('checkpoint_step') }} || ' (more than ' || {{ threshold('step_gap_factor') }} || ' logging intervals apart)' else '' end
            || '; at this resume: ' || defects as evidence,
        resume_step as first_step,
        resume_step + steps_moved as last_step,
        steps_moved as steps_affected,
        cast(first_after_step as {{ type_double() }}) as observed_value,
        cast(coalesce(checkpoint_step + 1, resume_step) as {{ type_double() }}) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        {{ safe_divide('steps_moved', 'counted_steps') }} as estimated_cost,
        'share_of_updates' as cost_unit,
        'steps of data the resume replayed or skipped, as a share of the counted steps' as cost_method,
        least(1.0, {{ safe_divide('steps_moved', 'counted_steps') }}) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Save and restore the data loader''s position (sampler state, epoch and offset) with the checkpoint, and the step counter with it; '
            || 'check the first batches after a resume are those the crashed attempt read at the same steps.' as recommendation
    from resumes
    where data_defect is not null
),

final as (
    select * from run_finding
    union all
    select * from resume_findings
)

select * from final
