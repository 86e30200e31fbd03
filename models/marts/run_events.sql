-- The run's events (start, checkpoint saves, crashes, restarts, end) in step order,
-- with the whole event text: the report marks them on the plots and takes the
-- saved checkpoints from here (a step is only a checkpoint if the events say so).
with

events as (
    select * from {{ run_ref('int_events_classified') }}
),

final as (
    select
        run_id,
        event_row_id,
        step,
        event_kind,
        event_text,
        checkpoint_step,
        resumed_from_step
    from events
)

select * from final
