-- Finding: one per restart. Evidence: the crash and resume events, the
-- checkpoint it resumed from, how far the crashed attempt had got, the steps
-- replayed and the seconds those discarded steps cost.
with

restarts as (
    select * from {{ run_ref('int_restarts_detected') }}
),

totals as (
    -- one row per run (the run spine), so a run with no counted steps keeps its restarts
    select runs.run_id, coalesce(step_totals.counted_steps, 0) as counted_steps, step_totals.wall_clock_sec, step_totals.first_step
    from {{ run_ref('stg_training__config') }} as runs
    left join (
        select run_id, count(*) as counted_steps, {{ stable_sum('step_time_sec') }} as wall_clock_sec, min(step) as first_step
        from {{ run_ref('int_train_steps_resolved') }}
        group by run_id
    ) as step_totals
        on runs.run_id = step_totals.run_id
),

final as (
    select
        restarts.run_id,
        'run_restart:' || {{ fmt_int('restarts.resume_step') }} as finding_id,
        'run_restart' as category,
        case
            when {{ safe_divide('restarts.steps_lost', 'totals.counted_steps') }} >= {{ threshold('restart_high_share_lost') }} then 'high'
            else 'medium'
        end as severity,
        'The run ' || case when restarts.crash_event_text is not null then 'crashed' else 'stopped (no crash was logged)' end
            || ' after step ' || {{ fmt_int('restarts.crashed_after_step') }}
            -- an attempt that starts at the run's first step was launched again from scratch: nothing was resumed
            || case when restarts.resume_step <= totals.first_step then ' and was started again from its first step '
                    || {{ fmt_int('restarts.resume_step') }} || ' (the log holds both attempts)'
                else ' and resumed from step ' || {{ fmt_int('restarts.resume_step - 1') }} end
            || case
                when restarts.steps_lost = 0 then ', losing no steps.'
                else ', redoing ' || {{ fmt_int('restarts.steps_lost') }} || case when restarts.steps_lost = 1 then ' step' else ' steps' end
                    || case when restarts.replayed_seconds is not null
                        then ' (' || {{ fmt('restarts.replayed_seconds', 1) }} || ' s of compute thrown away).' else '.' end
            end as title,
        coalesce('crash: step ' || {{ fmt_int('restarts.crash_event_step') }} || ' "' || restarts.crash_event_text || '"; ', '')
            || coalesce('resume: step ' || {{ fmt_int('restarts.restart_event_step') }} || ' "' || restarts.restart_event_text || '"; ', '')
            || 'resumed from checkpoint step ' || {{ fmt_int('coalesce(restarts.resumed_from_step, restarts.resume_step - 1)') }}
            || '; the log ' || case when restarts.is_seen_in_log
                then 'replays steps ' || {{ fmt_int('restarts.resume_step') }} || '-' || {{ fmt_int('restarts.crashed_after_step') }}
                    || ' (' || {{ fmt_int('restarts.replayed_rows') }} || ' rows superseded by the second attempt)'
                else 'shows no replayed steps (the crashed attempt''s rows are missing or were overwritten)' end
            || '; steps of progress lost: ' || {{ fmt_int('restarts.steps_lost') }} || ' ('
            || {{ fmt_pct(safe_divide('restarts.steps_lost', 'totals.counted_steps')) }} || ' of the run)'
            || case when restarts.replayed_seconds is not null
                then '; their step time: ' || {{ fmt('restarts.replayed_seconds', 2) }} || ' s' else '' end
            || case when not restarts.is_seen_in_events then '; no restart event was logged: the replay is seen only in the step numbers' else '' end
            as evidence,
        restarts.resume_step as first_step,
        -- the replayed range; a resume that lost no steps (it carried on from its last step) is at its step
        case when restarts.crashed_after_step < restarts.resume_step then restarts.resume_step
            else restarts.crashed_after_step end as last_step,
        restarts.steps_lost as steps_affected,
        cast(restarts.crashed_after_step as {{ type_double() }}) as observed_value,
        cast(restarts.resume_step - 1 as {{ type_double() }}) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        coalesce(restarts.replayed_seconds, cast(restarts.steps_lost as {{ type_double() }})) as estimated_cost,
        case when restarts.replayed_seconds is not null then 'seconds' else 'steps' end as cost_unit,
        'step time of the discarded attempt''s steps from the checkpoint to the crash (or the count of those steps when step times are missing)'
            as cost_method,
        {{ safe_divide('restarts.steps_lost', 'totals.counted_steps') }} as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when restarts.crash_event_text is not null
            then 'Find why the job died ("' || restarts.crash_event_text || '")'
            else 'No crash was logged: if the stop was not planned, find why the job stopped'
        end
            -- checkpointing more often is advice only when the restart lost a material share of the run
            || case when {{ safe_divide('restarts.steps_lost', 'totals.counted_steps') }} >= {{ threshold('restart_checkpoint_advice_min_share') }}
                then '; checkpoint more often than every ' || {{ fmt_int('restarts.steps_lost') }} || ' steps of risk'
                else '' end
            || '; verify the resume restored the optimizer, scheduler, clipping and data-loader state (the learning rate, '
            || 'loss and gradient norm just after it should continue from just before it).' as recommendation
    from restarts
    inner join totals
        on restarts.run_id = totals.run_id
)

select * from final
