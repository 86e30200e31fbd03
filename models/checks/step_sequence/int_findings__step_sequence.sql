-- Finding: the step column repeats, goes backwards or skips. One row per kind
-- (replayed after a restart, exact duplicates, swapped order, missing steps),
-- with the rows and whether a restart explains them.
with

rows_resolved as (
    select * from {{ run_ref('int_train_rows_resolved') }}
),

steps as (
    select * from {{ run_ref('int_train_steps_resolved') }}
),

restarts as (
    select run_id, resume_step, is_seen_in_events from {{ run_ref('int_restarts_detected') }}
),

totals as (
    select run_id, count(*) as raw_rows from rows_resolved group by run_id
),

replayed as (
    select
        rows_resolved.run_id,
        min(rows_resolved.step) as first_step,
        max(rows_resolved.step) as last_step,
        count(*) as affected,
        min(rows_resolved.later_restart_step) as resume_step
    from rows_resolved
    where rows_resolved.is_superseded
    group by rows_resolved.run_id
    having count(*) > 0
),

duplicates as (
    select
        run_id,
        min(step) as first_step,
        max(step) as last_step,
        count(*) as affected,
        {{ dbt.listagg(fmt_int('step'), "', '", "order by step") }} as step_list
    from rows_resolved
    where is_exact_duplicate
    group by run_id
    having count(*) > 0
),

swaps as (
    select
        run_id,
        min(step) as first_step,
        max(step) as last_step,
        count(*) as affected,
        {{ dbt.listagg("'step ' || " ~ fmt_int('step') ~ " || ' at file row ' || " ~ fmt_int('file_row_number'), "', '", "order by step, file_row_number") }}
            as step_list
    from rows_resolved
    where is_out_of_order_in_attempt and is_counted
    group by run_id
    having count(*) > 0
),

cadence as (
    -- the logging interval the log keeps (1 when every step is logged, 15 for logging_steps=15)
    select run_id, percentile_cont(0.5) within group (order by step - previous_step) as logging_interval
    from steps
    where previous_step is not null
    group by run_id
),

gap_rows as (
    -- a gap is a jump of more than one and a half logging intervals; its size in missing log lines
    select
        steps.run_id,
        steps.step,
        steps.previous_step,
        cadence.logging_interval,
        cast(round((steps.step - steps.previous_step) / cadence.logging_interval) as {{ dbt.type_bigint() }}) - 1
            as missing_lines,
        row_number() over (partition by steps.run_id order by steps.step) as gap_number
    from steps
    inner join cadence
        on steps.run_id = cadence.run_id
    where steps.step - steps.previous_step > {{ threshold('step_gap_factor') }} * cadence.logging_interval
),

gaps as (
    select
        run_id,
        min(previous_step + 1) as first_step,
        max(step - 1) as last_step,
        sum(missing_lines) as affected,
        count(*) as gap_count,
        max(logging_interval) as logging_interval,
        {{ dbt.listagg(
            "case when gap_number <= 5 then " ~ fmt_int('previous_step + 1') ~ " || '-' || " ~ fmt_int('step - 1') ~ " end",
            "', '", "order by step") }}
            || case when count(*) > 5 then ' and ' || {{ fmt_int('count(*) - 5') }} || ' more' else '' end as step_list
    from gap_rows
    group by run_id
    having count(*) > 0
),

unioned as (
    select
        replayed.run_id,
        'step_sequence:replayed' as finding_id,
        case when restarts.resume_step is not null then 'info' else 'medium' end as severity,
        'Steps ' || {{ fmt_int('replayed.first_step') }} || '-' || {{ fmt_int('replayed.last_step') }}
            || ' were logged twice: ' || case when restarts.is_seen_in_events
                then 'the restart explains it; the second attempt''s rows are used.'
                else 'the log jumps back with no restart event; the later rows are used.' end as title,
        {{ fmt_int('replayed.affected') }} || ' earlier rows superseded by the attempt that restarted at step '
            || {{ fmt_int('replayed.resume_step') }} || '; they stay in step_metrics (is_counted = false) for comparison' as evidence,
        replayed.first_step,
        replayed.last_step,
        replayed.affected,
        case when restarts.resume_step is not null then 'run_restart:' || {{ fmt_int('replayed.resume_step') }} end as caused_by,
        'Nothing to fix in the data: make the logger mark resumed attempts (an attempt id column) so replays are explicit.'
            as recommendation
    from replayed
    left join restarts
        on replayed.run_id = restarts.run_id
        and replayed.resume_step = restarts.resume_step

    union all

    select
        run_id,
        'step_sequence:exact_duplicates',
        'low',
        {{ fmt_int('affected') }} || ' train row(s) are exact duplicates of an earlier row (step ' || step_list || ').',
        'rows identical in every column to an earlier row: counted once; steps ' || step_list,
        first_step, last_step, affected,
        cast(null as {{ dbt.type_string() }}),
        'Make the logger write each step once (a retried write or two ranks logging the same step).'
    from duplicates

    union all

    select
        run_id,
        'step_sequence:out_of_order',
        'low',
        {{ fmt_int('affected') }} || ' step(s) were logged out of order (' || step_list || ').',
        'rows whose step is lower than a step logged before them in the same attempt: ' || step_list
            || '; placed by step number, values unchanged',
        first_step, last_step, affected,
        cast(null as {{ dbt.type_string() }}),
        'Harmless once sorted; if the logger is asynchronous, write the step with each row (it does) and sort before plotting.'
    from swaps

    union all

    select
        gaps.run_id,
        'step_sequence:gaps',
        case when {{ safe_divide('affected', 'totals.raw_rows') }} >= 0.01 then 'medium' else 'low' end,
        {{ fmt_int('affected') }} || ' expected log line(s) are missing (' || {{ fmt_int('gap_count') }} || ' gap(s): ' || step_list || ').',
        'the log writes a line every ' || {{ fmt('logging_interval', 1) }} || ' step(s); ' || {{ fmt_int('gap_count') }}
            || ' jump(s) of more than 1.5 intervals: ' || step_list || '; nothing is known about those updates',
        first_step, last_step, affected,
        cast(null as {{ dbt.type_string() }}),
        'Find out whether those steps ran (lost log lines) or were skipped (overflow, data-loader errors).'
    from gaps
    left join totals
        on gaps.run_id = totals.run_id
),

final as (
    select
        unioned.run_id,
        unioned.finding_id,
        'step_sequence' as category,
        severity,
        title,
        evidence,
        first_step,
        last_step,
        affected as steps_affected,
        cast(affected as {{ type_double() }}) as observed_value,
        cast(0 as {{ type_double() }}) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        {{ log_rows_cost('affected', 'totals.raw_rows', 'count of log rows affected; the training itself is not hurt by how it was logged') }},
        caused_by,
        recommendation
    from unioned
    left join totals
        on unioned.run_id = totals.run_id
)

select * from final
