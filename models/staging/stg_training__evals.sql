-- One row per raw eval-log row. Accuracy logged in percent (a value above 1) is
-- converted to a share and flagged; the logged value is kept beside it.
with

source as (
    {{ raw_run_file('eval') }}
),

parsed as (
    select
        run_id,
        file_row_number as eval_row_id,
        file_row_number,
        {{ raw_columns(['step', 'val_loss', 'val_accuracy']) }}
        {{ integer_column('step') }},
        {{ numeric_column('val_loss') }},
        {{ finite_or_null(parse_double('val_accuracy')) }} as val_accuracy_logged,
        ({{ clean_text('val_accuracy') }} is null) as is_val_accuracy_missing,
        ({{ clean_text('val_accuracy') }} is not null and {{ parse_double('val_accuracy') }} is null)
            as is_val_accuracy_non_numeric,
        {{ is_non_finite(parse_double('val_accuracy')) }} as is_val_accuracy_non_finite,
        {{ is_exact_duplicate(['step', 'val_loss', 'val_accuracy']) }} as is_exact_duplicate
    from source
),

converted as (
    select
        *,
        -- a share is at most 1; (1, 100] can only be percent
        (val_accuracy_logged > 1 and val_accuracy_logged <= 100) as is_accuracy_percent,
        (val_accuracy_logged < 0 or val_accuracy_logged > 100) as is_accuracy_out_of_range,
        case
            when val_accuracy_logged < 0 or val_accuracy_logged > 100 then null
            when val_accuracy_logged > 1 then val_accuracy_logged / 100.0
            else val_accuracy_logged
        end as val_accuracy,
        (count(*) over (partition by run_id, step) > 1) as is_step_repeated,
        (step < max(step) over (
            partition by run_id order by file_row_number rows between unbounded preceding and 1 preceding
        )) as is_out_of_file_order
    from parsed
),

final as (
    select
        *,
        (
            is_step_missing or is_step_invalid
            or is_val_loss_missing or is_val_loss_non_numeric or is_val_loss_non_finite
            or is_val_accuracy_non_numeric or is_val_accuracy_non_finite
            or coalesce(is_accuracy_percent, false) or coalesce(is_accuracy_out_of_range, false)
            or is_exact_duplicate or coalesce(is_step_repeated, false) or coalesce(is_out_of_file_order, false)
        ) as has_defect
    from converted
)

select * from final
