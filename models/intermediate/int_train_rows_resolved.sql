-- Every raw train row with the decision about it. When a run resumes from a
-- checkpoint and logs steps again, the later attempt's rows are the ones that
-- count; the earlier attempt's rows at or after the resume point are kept but
-- superseded. Exact duplicate rows count once. Rows without a usable step are set aside.
--
-- An attempt starts at a row whose step was already logged and that does not
-- follow the row before it (the log jumps back to a step it has seen: a replay),
-- as opposed to a swap of two adjacent steps, which repeats no step.
with

rows_in_file as (
    select * from {{ run_ref('stg_training__steps') }}
),

usable as (
    select
        run_id,
        train_row_id,
        file_row_number,
        step,
        count(*) over (
            partition by run_id, step order by file_row_number rows between unbounded preceding and 1 preceding
        ) as earlier_rows_same_step,
        {{ previous_value('step', 'file_row_number', 'run_id') }} as previous_row_step
    from rows_in_file
    where step is not null and not is_exact_duplicate
),

attempt_starts as (
    select
        *,
        case when earlier_rows_same_step > 0 and step <= previous_row_step then 1 else 0 end
            as is_attempt_start_flag
    from usable
),

attempts as (
    select
        *,
        1 + sum(is_attempt_start_flag) over (
            partition by run_id order by file_row_number rows between unbounded preceding and current row
        ) as attempt_number,
        -- the lowest step any later attempt restarted from
        min(case when is_attempt_start_flag = 1 then step end) over (
            partition by run_id order by file_row_number rows between 1 following and unbounded following
        ) as later_restart_step
    from attempt_starts
),

ordered as (
    -- every row, narrow: its attempt, and whether it is out of order within that attempt (a
    -- swap), not because a replay started. The rows set aside have no attempt and are compared
    -- with each other, as one group per run. Computed before the raw columns are joined back,
    -- so the window sorts a few columns, not the whole row.
    select
        run_id,
        train_row_id,
        step,
        attempt_number,
        is_attempt_start_flag,
        later_restart_step,
        coalesce(step < max(step) over (
            partition by run_id, attempt_number order by file_row_number rows between unbounded preceding and 1 preceding
        ), false) as is_out_of_order_in_attempt
    from (
        select run_id, train_row_id, file_row_number, step, attempt_number, is_attempt_start_flag, later_restart_step
        from attempts
        union all
        select
            run_id,
            train_row_id,
            file_row_number,
            step,
            null as attempt_number,
            null as is_attempt_start_flag,
            null as later_restart_step
        from rows_in_file
        where step is null or is_exact_duplicate
    ) as every_row
),

resolved as (
    select
        rows_in_file.*,
        ordered.attempt_number,
        coalesce(ordered.is_attempt_start_flag = 1, false) as is_attempt_start,
        ordered.later_restart_step,
        case
            when rows_in_file.step is null then 'set_aside'
            when rows_in_file.is_exact_duplicate then 'set_aside'
            when ordered.step >= ordered.later_restart_step then 'superseded'
            else 'counted'
        end as resolution,
        case
            when rows_in_file.set_aside_reason is not null then rows_in_file.set_aside_reason
            when rows_in_file.step is null and rows_in_file.is_step_missing then 'step is empty'
            when rows_in_file.step is null then 'step is not an integer: ' || rows_in_file.step_raw
            when rows_in_file.is_exact_duplicate then 'exact duplicate of an earlier row'
            when ordered.step >= ordered.later_restart_step
                then 'superseded: the run logged this step again from step '
                    || cast(ordered.later_restart_step as {{ dbt.type_string() }}) || ' on'
        end as resolution_reason,
        ordered.is_out_of_order_in_attempt
    from rows_in_file
    left join ordered
        on rows_in_file.run_id = ordered.run_id
        and rows_in_file.train_row_id = ordered.train_row_id
),

final as (
    select
        *,
        (resolution = 'counted') as is_counted,
        (resolution = 'superseded') as is_superseded
    from resolved
)

select * from final
