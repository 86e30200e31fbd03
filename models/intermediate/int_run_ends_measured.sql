-- How each run's log ends, one row per run (the config is the run spine): the last step it
-- reached against the configured length, and what the log and the events say about the end.
-- `end_kind` decides, in this order:
--   partial_copy   the log is a copy taken while the run was writing: the train log's last row
--                  is cut off mid-line, or an importer logged a `log_cut_off` event (a W&B file
--                  that ends inside a record, or whose summary reached further than its history);
--   crash          the last crash (or kill) event comes after the last resume: the job died and
--                  was not resumed (a W&B run without an exit record too);
--   stopped_early  no crash, but the log ends more than one logging interval before the
--                  configured total_steps: a pruned or early-stopped trial, an interrupted run,
--                  or a stale total_steps;
--   epochs_unfinished  no configured length, but an importer's epochs_unfinished event says the
--                  log's epoch counter ends before the planned epoch count (no epoch ever ended,
--                  or epochs of irregular length: no step count for the plan could be computed);
--   schedule_unfinished  no configured length and no run-end event, but the logged learning
--                  rate is still falling along a cosine or linear schedule that would end at
--                  least schedule_end_min_share_left further on (int_lr_schedules_projected);
--   complete       nothing says it ended early (or its planned length is unknown).
-- The run_ended_early check and the run_story mart read it: a partial log is said first.
with

config as (
    select run_id, total_steps from {{ run_ref('stg_training__config') }}
),

train_steps as (
    select
        run_id,
        min(step) as first_step,
        max(step) as last_train_step,
        count(*) as rows_counted,
        percentile_cont(0.5) within group (order by step - previous_step) as logging_interval
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

cut_off_rows as (
    select run_id, max(case when is_cut_off then 1 else 0 end) as has_cut_off_row
    from {{ run_ref('stg_training__steps') }}
    group by run_id
),

last_evals as (
    select run_id, max(step) as last_eval_step from {{ run_ref('int_evals_resolved') }} group by run_id
),

events as (
    select * from {{ run_ref('int_events_classified') }}
),

projected as (
    -- where the decaying learning rate's schedule would end (int_lr_schedules_projected)
    select run_id, schedule_shape, projected_end_step
    from {{ run_ref('int_lr_schedules_projected') }}
    where projected_end_step is not null
),

event_steps as (
    select
        run_id,
        max(case when event_kind = 'crash' then step end) as last_crash_step,
        max(case when event_kind = 'restart' then step end) as last_restart_step,
        max(case when event_kind = 'run_end' then step end) as run_end_step,
        max(case when event_kind = 'log_cut_off' then step end) as cut_off_event_step,
        max(case when event_kind = 'epochs_unfinished' then step end) as epochs_unfinished_step
    from events
    group by run_id
),

event_texts as (
    -- the text of the last crash and of the first cut-off note (ties: the first row of the file)
    select
        run_id,
        max(case when event_kind = 'crash' and by_kind = 1 then event_text end) as last_crash_text,
        max(case when event_kind = 'log_cut_off' and by_kind = 1 then event_text end) as cut_off_event_text,
        max(case when event_kind = 'epochs_unfinished' and by_kind = 1 then event_text end) as epochs_unfinished_text
    from (
        select
            run_id,
            event_kind,
            event_text,
            row_number() over (
                partition by run_id, event_kind
                order by case when event_kind in ('crash', 'epochs_unfinished') then -step else step end, event_row_id
                rows between unbounded preceding and current row
            ) as by_kind
        from events
        where event_kind in ('crash', 'log_cut_off', 'epochs_unfinished') and step is not null
    ) as ranked
    group by run_id
),

ends as (
    select
        config.run_id,
        config.total_steps,
        train_steps.first_step,
        train_steps.last_train_step,
        -- where the run got to: the last train line, the last evaluation or a run-end event
        -- (a log written every N steps can end up to N - 1 steps before the true end); after a
        -- restart, an evaluation further than the last counted train line by more than a logging
        -- interval was logged by an attempt the restart superseded (its train rows are set aside by
        -- int_train_steps_resolved): it is not where the run got to
        greatest(
            train_steps.last_train_step,
            coalesce(
                case when event_steps.last_restart_step is null
                    or last_evals.last_eval_step <= train_steps.last_train_step
                        + greatest(coalesce(train_steps.logging_interval, 1), 1)
                    then last_evals.last_eval_step end,
                train_steps.last_train_step
            ),
            coalesce(event_steps.run_end_step, train_steps.last_train_step)
        ) as last_step,
        coalesce(train_steps.rows_counted, 0) as rows_counted,
        greatest(coalesce(train_steps.logging_interval, 1), 1) as logging_interval,
        coalesce(cut_off_rows.has_cut_off_row, 0) = 1 as has_cut_off_row,
        event_steps.cut_off_event_step,
        event_texts.cut_off_event_text,
        event_steps.last_crash_step,
        event_texts.last_crash_text,
        event_steps.last_restart_step,
        event_steps.run_end_step,
        event_steps.epochs_unfinished_step,
        event_texts.epochs_unfinished_text,
        projected.schedule_shape,
        projected.projected_end_step,
        -- the run's planned length: the configured one, else where its schedule projects its end
        coalesce(config.total_steps, projected.projected_end_step) as planned_steps
    from config
    left join train_steps
        on config.run_id = train_steps.run_id
    left join cut_off_rows
        on config.run_id = cut_off_rows.run_id
    left join last_evals
        on config.run_id = last_evals.run_id
    left join event_steps
        on config.run_id = event_steps.run_id
    left join event_texts
        on config.run_id = event_texts.run_id
    left join projected
        on config.run_id = projected.run_id
),

final as (
    select
        run_id,
        total_steps,
        first_step,
        last_train_step,
        last_step,
        rows_counted,
        logging_interval,
        has_cut_off_row,
        cut_off_event_step,
        cut_off_event_text,
        last_crash_step,
        last_crash_text,
        last_restart_step,
        run_end_step,
        epochs_unfinished_step,
        epochs_unfinished_text,
        schedule_shape,
        projected_end_step,
        case
            when has_cut_off_row or cut_off_event_step is not null then 'partial_copy'
            when last_crash_step is not null and (last_restart_step is null or last_restart_step < last_crash_step)
                and (run_end_step is null or run_end_step < last_crash_step) then 'crash'
            when total_steps is not null and total_steps - last_step >= logging_interval then 'stopped_early'
            -- no configured length, but the importer read a planned epoch count the log never reached
            when total_steps is null and run_end_step is null and epochs_unfinished_step is not null
                then 'epochs_unfinished'
            -- no configured length, but the learning rate is still falling along a schedule
            -- that ends further on (int_lr_schedules_projected)
            when total_steps is null and run_end_step is null
                and last_step < projected_end_step * (1 - {{ threshold('schedule_end_min_share_left') }})
                then 'schedule_unfinished'
            else 'complete'
        end as end_kind,
        planned_steps,
        {{ safe_divide('last_step', 'planned_steps') }} as share_of_planned
    from ends
)

select * from final
