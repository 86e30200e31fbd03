-- One row per restart: where the log replays steps (a later attempt starts at a
-- step already logged) and/or where the events say the job crashed and resumed.
-- For each: the step the run resumed at, how far the crashed attempt had got,
-- the steps replayed, the wall-clock seconds those discarded steps cost, and the
-- crash and resume events that explain it. A resume event before the first step of
-- a log that starts at the beginning, from no named checkpoint, is the run loading
-- its initial weights, not a restart.
with

rows_resolved as (
    select * from {{ run_ref('int_train_rows_resolved') }}
),

events as (
    select * from {{ run_ref('int_events_classified') }}
),

log_restarts as (
    select
        starts.run_id,
        starts.step as resume_step,
        starts.attempt_number,
        max(earlier.step) as crashed_after_step,
        count(earlier.step) as replayed_rows,
        {{ stable_sum('earlier.step_time_sec') }} as replayed_seconds
    from rows_resolved as starts
    left join rows_resolved as earlier
        on earlier.run_id = starts.run_id
        and earlier.attempt_number = starts.attempt_number - 1
        and earlier.is_superseded
        and earlier.step >= starts.step
    where starts.is_attempt_start
    group by starts.run_id, starts.step, starts.attempt_number
),

log_starts as (
    -- where the log's step counter starts, and its first logging interval
    select
        run_id,
        min(step) as first_step,
        min(case when step > first_row_step then step end) - min(first_row_step) as first_interval
    from (
        select run_id, step, min(step) over (partition by run_id) as first_row_step
        from rows_resolved
    ) as stepped
    group by run_id
),

restart_events as (
    select
        events.run_id,
        events.step as event_step,
        events.resumed_from_step,
        events.event_text
    from events
    left join log_starts
        on events.run_id = log_starts.run_id
    where events.event_kind = 'restart'
        -- a "resume" before the first logged step of a log whose counter starts at the beginning
        -- (within one logging interval of step 0), from no named checkpoint: the run loading its
        -- initial or pretrained weights, not a crash-and-resume (a resumed job's counter goes on)
        and not coalesce(
            events.step <= log_starts.first_step
            and events.resumed_from_step is null
            and log_starts.first_step <= greatest(coalesce(log_starts.first_interval, 1), 1),
            false
        )
),

crash_events as (
    select run_id, step as event_step, event_text from events where event_kind = 'crash'
),

matched as (
    select
        coalesce(log_restarts.run_id, restart_events.run_id) as run_id,
        coalesce(log_restarts.resume_step, restart_events.resumed_from_step + 1, restart_events.event_step)
            as resume_step,
        log_restarts.attempt_number,
        log_restarts.crashed_after_step,
        coalesce(log_restarts.replayed_rows, 0) as replayed_rows,
        log_restarts.replayed_seconds,
        restart_events.event_step as restart_event_step,
        restart_events.resumed_from_step,
        restart_events.event_text as restart_event_text,
        (log_restarts.resume_step is not null) as is_seen_in_log,
        (restart_events.event_step is not null) as is_seen_in_events
    from log_restarts
    full outer join restart_events
        on restart_events.run_id = log_restarts.run_id
        and (
            restart_events.resumed_from_step + 1 = log_restarts.resume_step
            -- a checkpoint named after the step it was saved at, before or after that step's
            -- update (build-nanogpt saves model_<step>.pt before it): the resume the log shows
            or restart_events.resumed_from_step between log_restarts.resume_step - 1 and log_restarts.crashed_after_step
            or (
                restart_events.resumed_from_step is null
                and restart_events.event_step between log_restarts.resume_step - 1 and log_restarts.crashed_after_step + 1
            )
        )
),

with_crash as (
    select
        matched.*,
        crash_events.event_step as crash_event_step,
        crash_events.event_text as crash_event_text,
        -- one row per resume step (the finding's key): the crash nearest to where the attempt
        -- stopped; on a tie (no crash event, or the same resume logged twice) the latest attempt
        -- and the first restart event, so the pick is the same in every build
        row_number() over (
            partition by matched.run_id, matched.resume_step
            order by abs(crash_events.event_step - coalesce(matched.crashed_after_step, matched.restart_event_step, 0)) nulls last,
                matched.attempt_number desc nulls last, matched.restart_event_step nulls last,
                crash_events.event_step nulls last, crash_events.event_text nulls last, matched.restart_event_text nulls last
            rows between unbounded preceding and current row
        ) as crash_rank
    from matched
    left join crash_events
        on crash_events.run_id = matched.run_id
        and crash_events.event_step between coalesce(matched.resume_step - 1, 0)
            and coalesce(matched.crashed_after_step, matched.restart_event_step) + 1
),

{#- where the crashed attempt had got: the log's replay, else the crash event; else, from a restart
    event alone, the step it names (the checkpoint's, when it names one, was saved by the attempt
    that got to the event) or, naming none, the row before the event: the new attempt starts at
    the event and nothing the log shows was redone -#}
{%- set crashed_after -%}
    coalesce(
        crashed_after_step,
        crash_event_step,
        case when resumed_from_step is null then restart_event_step - 1 else restart_event_step end
    )
{%- endset %}

final as (
    select
        run_id,
        resume_step,
        attempt_number,
        {{ crashed_after }} as crashed_after_step,
        replayed_rows,
        -- steps of progress lost: from the checkpoint to where the crashed attempt had got
        greatest({{ crashed_after }} - resume_step + 1, 0) as steps_lost,
        replayed_seconds,
        resumed_from_step,
        restart_event_step,
        restart_event_text,
        crash_event_step,
        crash_event_text,
        is_seen_in_log,
        is_seen_in_events
    from with_crash
    where crash_rank = 1
)

select * from final
