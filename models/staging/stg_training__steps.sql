-- One row per raw train-log row: raw text beside each parsed value, and a flag
-- for every way the row can be wrong. No row is dropped here.
with

source as (
    {{ raw_run_file('train') }}
),

parsed as (
    select
        -- ids
        file_row_number as train_row_id,
        file_row_number,
        -- raw text as written
        {{ raw_columns(['step', 'shard_id', 'loss', 'grad_norm', 'learning_rate', 'step_time_sec']) }}
        -- parsed values and their flags
        {{ integer_column('step') }},
        {{ identifier_column('shard_id') }},
        {{ numeric_column('loss') }},
        {{ numeric_column('grad_norm') }},
        {{ numeric_column('learning_rate') }},
        {{ numeric_column('step_time_sec') }},
        -- whole-row flags
        {{ is_exact_duplicate(['step', 'shard_id', 'loss', 'grad_norm', 'learning_rate', 'step_time_sec']) }}
            as is_exact_duplicate
    from source
),

flagged as (
    select
        *,
        (step_time_sec <= 0) as is_step_time_non_positive,
        (learning_rate < 0) as is_learning_rate_negative,
        (grad_norm < 0) as is_grad_norm_negative,
        -- lower than a step already logged above it in the file (a swap, or a replay after a resume)
        (step < max(step) over (
            order by file_row_number rows between unbounded preceding and 1 preceding
        )) as is_out_of_file_order
    from parsed
),

final as (
    select
        *,
        (
            is_step_missing or is_step_invalid
            or is_loss_missing or is_loss_non_numeric or is_loss_non_finite
            or is_grad_norm_missing or is_learning_rate_missing or is_step_time_sec_missing or is_shard_id_missing
            or is_grad_norm_non_numeric or is_grad_norm_non_finite or coalesce(is_grad_norm_negative, false)
            or is_learning_rate_non_numeric or is_learning_rate_non_finite or coalesce(is_learning_rate_negative, false)
            or is_step_time_sec_non_numeric or is_step_time_sec_non_finite
            or coalesce(is_step_time_non_positive, false)
            or is_exact_duplicate or coalesce(is_out_of_file_order, false)
        ) as has_defect
    from flagged
)

select * from final
