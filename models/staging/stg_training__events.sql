-- One row per raw system event: the step it was logged at and its text, trimmed
-- and lower-cased for matching. Kinds are assigned in int_events_classified.
with

source as (
    {{ raw_run_file('events') }}
),

parsed as (
    select
        run_id,
        file_row_number as event_row_id,
        file_row_number,
        {{ raw_columns(['step', 'event']) }}
        {{ integer_column('step') }},
        {{ clean_text('event') }} as event_text,
        lower({{ clean_text('event') }}) as event_text_lower,
        ({{ clean_text('event') }} is null) as is_event_missing,
        {{ is_exact_duplicate(['step', 'event']) }} as is_exact_duplicate
    from source
),

final as (
    select
        *,
        (is_step_missing or is_step_invalid or is_event_missing or is_exact_duplicate) as has_defect
    from parsed
)

select * from final
