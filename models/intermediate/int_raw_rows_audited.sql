-- Every raw row of every file, once, with what was done with it: kept as is,
-- repaired (how: its defects, from int_raw_row_defects), or set aside (why). Counts per
-- file add up to the raw row counts; the report's "double-check before relying on the
-- numbers" reads this.
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

train_rows as (
    select * from {{ run_ref('int_train_rows_resolved') }}
),

known_shards as (
    select run_id, shard_id from {{ run_ref('int_shards_resolved') }}
),

train_audited as (
    select
        train_rows.run_id,
        'train' as file_kind,
        train_rows.file_row_number,
        train_rows.step,
        case
            when train_rows.resolution <> 'counted' then 'set_aside'
            when {{ reason_list([
                ('train_rows.has_defect and not (train_rows.is_out_of_file_order and not train_rows.is_out_of_order_in_attempt)', 'x'),
                ('train_rows.is_out_of_order_in_attempt', 'x'),
                ('known_shards.shard_id is null and train_rows.shard_id is not null', 'x'),
            ]) }} is not null then 'repaired'
            else 'kept'
        end as outcome,
        case
            when train_rows.resolution <> 'counted' then train_rows.resolution_reason
            else train_defects.defect_reasons
        end as reason
    from train_rows
    left join known_shards
        on train_rows.run_id = known_shards.run_id
        and train_rows.shard_id = known_shards.shard_id
    left join row_defects as train_defects
        on train_rows.run_id = train_defects.run_id
        and train_defects.file_kind = 'train'
        and train_rows.file_row_number = train_defects.file_row_number
),

eval_rows as (
    select * from {{ run_ref('stg_training__evals') }}
),

evals_kept as (
    select run_id, eval_row_id from {{ run_ref('int_evals_resolved') }}
),

eval_audited as (
    select
        eval_rows.run_id,
        'eval' as file_kind,
        eval_rows.file_row_number,
        eval_rows.step,
        case
            when evals_kept.eval_row_id is null then 'set_aside'
            when eval_rows.has_defect then 'repaired'
            else 'kept'
        end as outcome,
        case
            when eval_rows.step is null then 'step is not an integer: ' || coalesce(eval_rows.step_raw, '(empty)')
            when eval_rows.is_exact_duplicate then 'exact duplicate of an earlier row'
            when evals_kept.eval_row_id is null and eval_rows.val_loss is null then 'val_loss unreadable'
            when evals_kept.eval_row_id is null then 'step evaluated again later in the file: the later row is used'
            else eval_defects.defect_reasons
        end as reason
    from eval_rows
    left join evals_kept
        on eval_rows.run_id = evals_kept.run_id
        and eval_rows.eval_row_id = evals_kept.eval_row_id
    left join row_defects as eval_defects
        on eval_rows.run_id = eval_defects.run_id
        and eval_defects.file_kind = 'eval'
        and eval_rows.file_row_number = eval_defects.file_row_number
),

shard_rows as (
    select * from {{ run_ref('stg_training__shards') }}
),

shard_audited as (
    select
        shard_rows.run_id,
        'shards' as file_kind,
        shard_rows.file_row_number,
        cast(null as {{ dbt.type_bigint() }}) as step,
        case
            when shard_id is null or is_duplicate_shard_row then 'set_aside'
            when has_defect then 'repaired'
            else 'kept'
        end as outcome,
        case
            when shard_id is null then 'shard_id empty'
            when is_duplicate_shard_row and is_conflicting_duplicate
                then 'repeats shard ' || shard_id || ' with different values: the first row is used'
            when is_duplicate_shard_row then 'repeats shard ' || shard_id || ' (same values once normalised)'
            else shard_defects.defect_reasons
        end as reason
    from shard_rows
    left join row_defects as shard_defects
        on shard_rows.run_id = shard_defects.run_id
        and shard_defects.file_kind = 'shards'
        and shard_rows.file_row_number = shard_defects.file_row_number
),

event_rows as (
    select * from {{ run_ref('stg_training__events') }}
),

event_kinds as (
    select run_id, event_row_id, event_kind from {{ run_ref('int_events_classified') }}
),

event_audited as (
    select
        event_rows.run_id,
        'events' as file_kind,
        event_rows.file_row_number,
        event_rows.step,
        case
            when event_kinds.event_row_id is null or event_rows.step is null then 'set_aside'
            when event_kinds.event_kind = 'other' then 'repaired'
            else 'kept'
        end as outcome,
        case
            when event_rows.is_exact_duplicate then 'exact duplicate of an earlier event'
            when event_rows.step is null then 'step is not an integer: ' || coalesce(event_rows.step_raw, '(empty)')
            when event_kinds.event_kind = 'other' then 'event text matches no pattern in event_patterns: kind other'
        end as reason
    from event_rows
    left join event_kinds
        on event_rows.run_id = event_kinds.run_id
        and event_rows.event_row_id = event_kinds.event_row_id
),

config_audited as (
    select
        run_id,
        'config' as file_kind,
        1 as file_row_number,
        cast(null as {{ dbt.type_bigint() }}) as step,
        case when unknown_fields <> '' or impossible_fields <> '' then 'repaired' else 'kept' end as outcome,
        nullif(
            case when unknown_fields <> '' then 'required fields declared unknown (null): ' || unknown_fields || '; ' else '' end
            || case when impossible_fields <> '' then 'impossible values read as unknown: ' || impossible_values || '; ' else '' end,
            '') as reason
    from {{ run_ref('stg_training__config') }}
),

unioned as (
    select * from train_audited
    union all
    select * from eval_audited
    union all
    select * from shard_audited
    union all
    select * from event_audited
    union all
    select * from config_audited
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
    from unioned
)

select * from final
