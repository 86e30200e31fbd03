-- Every raw row of every file, once, with what was done with it: set aside (why), else
-- repaired (how: its defects, from int_raw_row_defects; for events and the config, the
-- repair), else kept as is. Counts per file add up to the raw row counts; the report's
-- "double-check before relying on the numbers" reads this.
with

row_defects as (
    -- what was done with each used row's defects (int_raw_row_defects), in catalogue order
    select
        run_id,
        file_kind,
        file_row_number,
        {{ dbt.listagg('action', "'; '", 'order by defect_rank') }} as defect_reasons
    from {{ run_ref('int_raw_row_defects') }}
    group by run_id, file_kind, file_row_number
),

{#- each file's rows with why a row was set aside (NULL: used) and, for events and the config,
    what was repaired; the defects repaired in train, eval and shard rows come from row_defects -#}
train_rows as (
    select
        run_id,
        'train' as file_kind,
        file_row_number,
        step,
        case when resolution <> 'counted' then resolution_reason end as set_aside_reason,
        cast(null as {{ dbt.type_string() }}) as repair_reason
    from {{ run_ref('int_train_rows_resolved') }}
),

evals_kept as (
    select run_id, eval_row_id from {{ run_ref('int_evals_resolved') }}
),

eval_rows as (
    select
        eval_rows.run_id,
        'eval' as file_kind,
        eval_rows.file_row_number,
        eval_rows.step,
        case
            when evals_kept.eval_row_id is not null then null
            when eval_rows.step is null then 'step is not an integer: ' || coalesce(eval_rows.step_raw, '(empty)')
            when eval_rows.is_exact_duplicate then 'exact duplicate of an earlier row'
            when eval_rows.is_val_loss_missing and eval_rows.val_accuracy is not null
                then 'no val_loss logged: an accuracy-only evaluation (only overfitting:accuracy_gap reads it)'
            when eval_rows.val_loss is null then 'val_loss unreadable'
            when eval_rows.is_val_loss_placeholder then 'val_loss exactly 0 beside real losses: a placeholder, not a measurement'
            else 'step evaluated again later in the file: the later row is used'
        end as set_aside_reason,
        cast(null as {{ dbt.type_string() }}) as repair_reason
    from {{ run_ref('stg_training__evals') }} as eval_rows
    left join evals_kept
        on eval_rows.run_id = evals_kept.run_id
        and eval_rows.eval_row_id = evals_kept.eval_row_id
),

shard_rows as (
    select
        run_id,
        'shards' as file_kind,
        file_row_number,
        cast(null as {{ dbt.type_bigint() }}) as step,
        case
            when shard_id is null then 'shard_id empty'
            when is_duplicate_shard_row and is_conflicting_duplicate
                then 'repeats shard ' || shard_id || ' with different values: the first row is used'
            when is_duplicate_shard_row then 'repeats shard ' || shard_id || ' (same values once normalised)'
        end as set_aside_reason,
        cast(null as {{ dbt.type_string() }}) as repair_reason
    from {{ run_ref('stg_training__shards') }}
),

event_kinds as (
    select run_id, event_row_id, event_kind from {{ run_ref('int_events_classified') }}
),

event_rows as (
    -- every event not an exact duplicate is classified
    select
        event_rows.run_id,
        'events' as file_kind,
        event_rows.file_row_number,
        event_rows.step,
        case
            when event_rows.is_exact_duplicate then 'exact duplicate of an earlier event'
            when event_rows.step is null then 'step is not an integer: ' || coalesce(event_rows.step_raw, '(empty)')
        end as set_aside_reason,
        case when event_kinds.event_kind = 'other' then 'event text matches no pattern in event_patterns: kind other' end
            as repair_reason
    from {{ run_ref('stg_training__events') }} as event_rows
    left join event_kinds
        on event_rows.run_id = event_kinds.run_id
        and event_rows.event_row_id = event_kinds.event_row_id
),

config_rows as (
    select
        run_id,
        'config' as file_kind,
        1 as file_row_number,
        cast(null as {{ dbt.type_bigint() }}) as step,
        cast(null as {{ dbt.type_string() }}) as set_aside_reason,
        nullif(
            case when unknown_fields <> '' then 'required fields declared unknown (null): ' || unknown_fields || '; ' else '' end
            || case when impossible_fields <> '' then 'impossible values read as unknown: ' || impossible_values || '; ' else '' end,
            '') as repair_reason
    from {{ run_ref('stg_training__config') }}
),

unioned as (
    select * from train_rows
    union all
    select * from eval_rows
    union all
    select * from shard_rows
    union all
    select * from event_rows
    union all
    select * from config_rows
),

audited as (
    select
        unioned.*,
        case
            when unioned.set_aside_reason is not null then 'set_aside'
            when coalesce(unioned.repair_reason, row_defects.defect_reasons) is not null then 'repaired'
            else 'kept'
        end as outcome,
        coalesce(unioned.set_aside_reason, unioned.repair_reason, row_defects.defect_reasons) as reason
    from unioned
    left join row_defects
        on unioned.run_id = row_defects.run_id
        and unioned.file_kind = row_defects.file_kind
        and unioned.file_row_number = row_defects.file_row_number
),

final as (
    select
        run_id,
        file_kind || ':' || cast(file_row_number as {{ dbt.type_string() }}) as audit_row_id,
        file_kind,
        file_row_number,
        step,
        outcome,
        -- trailing separator of the reason list dropped
        case when reason like '%; ' then substring(reason, 1, length(reason) - 2) else reason end as reason
    from audited
)

select * from final
