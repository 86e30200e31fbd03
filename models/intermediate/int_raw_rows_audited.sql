-- Every raw row of every file, once, with what was done with it: kept as is,
-- repaired (how), or set aside (why). Counts per file add up to the raw row
-- counts; the report's "double-check before relying on the numbers" reads this.
with

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
            else {{ reason_list([
                ('train_rows.is_loss_missing', 'loss empty: read as missing'),
                ('train_rows.is_loss_non_numeric', 'loss not a number: read as missing'),
                ('train_rows.is_loss_non_finite', 'loss non-finite (nan/inf): read as missing, counted as a NaN step'),
                ('train_rows.is_grad_norm_missing', 'grad_norm empty: read as missing'),
                ('train_rows.is_grad_norm_non_numeric', 'grad_norm not a number: read as missing'),
                ('train_rows.is_grad_norm_non_finite', 'grad_norm non-finite: read as missing'),
                ('train_rows.is_grad_norm_negative', 'grad_norm negative: impossible for a norm, kept as logged'),
                ('train_rows.is_learning_rate_negative', 'learning_rate negative: kept as logged'),
                ('train_rows.is_learning_rate_missing', 'learning_rate empty: read as missing'),
                ('train_rows.is_learning_rate_non_numeric or train_rows.is_learning_rate_non_finite', 'learning_rate unreadable: read as missing'),
                ('train_rows.is_step_time_sec_missing', 'step_time_sec empty: left out of timing checks'),
                ('train_rows.is_step_time_sec_non_numeric or train_rows.is_step_time_sec_non_finite', 'step_time_sec unreadable: left out of timing checks'),
                ('train_rows.is_step_time_non_positive', 'step_time_sec zero or negative: left out of timing checks'),
                ('train_rows.is_shard_id_missing', 'shard_id empty: step not attributed to a shard'),
                ('known_shards.shard_id is null and train_rows.shard_id is not null', 'shard_id not in shard_info: source unknown'),
                ('train_rows.is_out_of_order_in_attempt', 'logged out of step order: placed by its step number'),
            ]) }}
        end as reason
    from train_rows
    left join known_shards
        on train_rows.run_id = known_shards.run_id
        and train_rows.shard_id = known_shards.shard_id
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
            else {{ reason_list([
                ('eval_rows.is_accuracy_percent', 'val_accuracy logged in percent: divided by 100'),
                ('eval_rows.is_accuracy_out_of_range', 'val_accuracy outside 0..100: read as missing'),
                ('eval_rows.is_val_accuracy_non_numeric or eval_rows.is_val_accuracy_non_finite', 'val_accuracy unreadable: read as missing'),
                ('eval_rows.is_step_repeated', 'step evaluated more than once: this later row is used'),
                ('eval_rows.is_out_of_file_order', 'logged out of step order: placed by its step number'),
            ]) }}
        end as reason
    from eval_rows
    left join evals_kept
        on eval_rows.run_id = evals_kept.run_id
        and eval_rows.eval_row_id = evals_kept.eval_row_id
),

shard_rows as (
    select * from {{ run_ref('stg_training__shards') }}
),

shard_audited as (
    select
        run_id,
        'shards' as file_kind,
        file_row_number,
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
            else {{ reason_list([
                ('is_source_label_variant', 'source label differs only in case/spaces: normalised'),
                ('is_conflicting_duplicate', 'a later row contradicts this one: this first row is used'),
                ('is_n_examples_missing or is_n_examples_invalid', 'n_examples unreadable: read as missing'),
                ('is_n_examples_non_positive', 'n_examples zero or negative: kept as logged'),
                ('is_source_missing', 'source empty'),
            ]) }}
        end as reason
    from shard_rows
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
