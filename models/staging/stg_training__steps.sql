-- One row per raw train-log row: raw text beside each parsed value, and a flag
-- for every way the row can be wrong. No row is dropped here.
-- Rows whose step cannot be trusted are set aside here (step NULL, set_aside_reason
-- says why; the row audit counts them): a negative step, a step column that never
-- changes (every row the same step), and a last row cut off mid-line.
with

source as (
    {{ raw_run_file('train') }}
),

file_end as (
    {{ raw_file_ends_mid_line('train') }}
),

screened as (
    select
        source.*,
        {{ parse_integer('step') }} as step_value
    from source
),

file_stats as (
    -- whole-file facts: the last row, and whether the step column ever changes
    select
        run_id,
        max(file_row_number) as last_row_number,
        min(step_value) as min_step,
        max(step_value) as max_step,
        count(step_value) as steps_read
    from screened
    group by run_id
),

set_aside as (
    select
        screened.*,
        (screened.file_row_number = file_stats.last_row_number and file_end.ends_mid_line) as is_cut_off,
        (screened.step_value < 0) as is_step_negative,
        (file_stats.min_step = file_stats.max_step
            and file_stats.steps_read >= {{ threshold('constant_step_min_rows') }}) as is_step_constant
    from screened
    inner join file_stats on screened.run_id = file_stats.run_id
    inner join file_end on screened.run_id = file_end.run_id
),

reasoned as (
    select
        *,
        case
            when is_cut_off then 'last row has no line end: the file was cut off mid-row, its values may be truncated'
            when is_step_negative then 'step ' || trim(step) || ' is negative: impossible for a training step'
            when is_step_constant then 'every row logs step ' || trim(step) || ': the step column carries no order'
        end as set_aside_reason
    from set_aside
),

in_file_order as (
    -- the two windows over the run's rows, computed on the raw text before the parsed columns
    -- exist (a window sorts every column it carries: at 1M rows, over the parsed row the
    -- out-of-order window sorted about 40 columns); `counted_step` is the step the row keeps
    select
        *,
        {{ is_exact_duplicate(['step', 'shard_id', 'loss', 'grad_norm', 'learning_rate', 'step_time_sec']) }}
            as is_exact_duplicate,
        ({{ out_of_file_order('counted_step') }}) as is_out_of_file_order
    from (
        select
            *,
            case when set_aside_reason is null then step_value end as counted_step
        from reasoned
    ) as with_counted_step
),

parsed as (
    select
        -- ids
        run_id,
        file_row_number as train_row_id,
        file_row_number,
        -- raw text as written
        {{ raw_columns(['step', 'shard_id', 'loss', 'grad_norm', 'learning_rate', 'step_time_sec']) }}
        -- parsed values and their flags (a set-aside row has no step, so nothing counts it)
        counted_step as step,
        ({{ clean_text('step') }} is null) as is_step_missing,
        ({{ clean_text('step') }} is not null and step_value is null) as is_step_invalid,
        coalesce(is_step_negative, false) as is_step_negative,
        coalesce(is_step_constant, false) as is_step_constant,
        is_cut_off,
        set_aside_reason,
        {{ identifier_column('shard_id') }},
        {{ numeric_column('loss') }},
        {{ numeric_column('grad_norm') }},
        {{ numeric_column('learning_rate') }},
        {{ numeric_column('step_time_sec') }},
        -- whole-row flags
        is_exact_duplicate,
        is_out_of_file_order
    from in_file_order
),

flagged as (
    select
        *,
        -- the defect rules beyond the column recipes: macros/raw_row_defects.sql
        {{- raw_row_defect_flags('train') }}
    from parsed
),

final as (
    select
        *,
        -- a defect of the catalogue, what sets the row aside, or out of file order
        {{ has_defect('train', ['is_step_missing', 'is_step_invalid', 'set_aside_reason is not null',
            'is_exact_duplicate', 'is_out_of_file_order']) }} as has_defect
    from flagged
)

select * from final
