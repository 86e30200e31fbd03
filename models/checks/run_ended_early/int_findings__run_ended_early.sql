-- Finding: the run's log ends before the run did, or before its configured length (one per run,
-- from int_run_ends_measured): a partial copy of the log (said first by the report: every
-- judgement covers only the steps the copy holds), a job that died and was not resumed, or a
-- run that stopped early with no crash logged (a pruned or early-stopped trial in a sweep, an
-- interrupted run, or a stale total_steps), before its planned epochs when no step count for
-- the plan is known (an importer's epochs_unfinished event). Not a config problem: the config is not wrong
-- because a trial was pruned. Severity low (a fact about the log, not a fault of training).
with

ends as (
    select * from {{ run_ref('int_run_ends_measured') }}
    where end_kind <> 'complete'
),

final as (
    select
        run_id,
        'run_ended_early:' || end_kind as finding_id,
        'run_ended_early' as category,
        'low' as severity,
        case end_kind
            when 'partial_copy' then 'The log is a partial copy: it ends at step ' || {{ fmt_int('last_step') }}
                || case when has_cut_off_row then ' with its last row cut off mid-line' else '' end
                -- the importer's own words say how it knows (e.g. a summary that reached further)
                || case when cut_off_event_text like 'partial copy: %'
                    then ' (' || substring(cut_off_event_text, 15, length(cut_off_event_text) - 14) || ')'
                    else '' end
                || ', and the run itself may have gone further; every judgement here covers steps '
                || {{ fmt_int('first_step') }} || '-' || {{ fmt_int('last_step') }} || ' only.'
            when 'crash' then 'The run ended at step ' || {{ fmt_int('last_step') }}
                || coalesce(' of ' || {{ fmt_int('total_steps') }} || ' planned', '')
                || ' after "' || last_crash_text || '" and was not resumed.'
            {%- set epochs_prefix = 'epochs unfinished: the log ends in epoch ' %}
            when 'epochs_unfinished' then 'The log ends at step ' || {{ fmt_int('last_step') }} || ', in epoch '
                -- the importer's words after its prefix (canonical.epochs_unfinished_event)
                || substring(epochs_unfinished_text, {{ epochs_prefix | length + 1 }}, length(epochs_unfinished_text) - {{ epochs_prefix | length }})
                || ', with no crash logged: a pruned or early-stopped trial, an interrupted run, or a copy of the log taken before the end.'
            when 'schedule_unfinished' then 'The log ends at step ' || {{ fmt_int('last_step') }}
                || ' with its learning rate still falling: the ' || schedule_shape || ' schedule it follows ends near step '
                || {{ fmt_int('projected_end_step') }} || ' (' || {{ fmt_pct('share_of_planned') }} || ' reached), and no run end is logged.'
            else 'The log ends at step ' || {{ fmt_int('last_step') }} || ' of ' || {{ fmt_int('total_steps') }}
                || ' planned (' || {{ fmt_pct('share_of_planned') }} || ') with no crash logged: a pruned or '
                || 'early-stopped trial, an interrupted run, or a copy of the log taken before the end.'
        end as title,
        'last step reached ' || {{ fmt_int('last_step') }}
            || case when total_steps is not null
                then '; configured total_steps ' || {{ fmt_int('total_steps') }} || ' (' || {{ fmt_pct('share_of_planned') }} || ' reached)'
                else '; configured length unknown' end
            || coalesce('; the logged learning rate follows a ' || schedule_shape || ' decay from its peak that reaches 0 near step '
                || {{ fmt_int('projected_end_step') }} || ' (int_lr_schedules_projected)', '')
            || case when has_cut_off_row then '; the train log''s last row has no line end (cut off mid-row)' else '' end
            || coalesce('; importer: "' || cut_off_event_text || '"', '')
            || coalesce('; importer: "' || epochs_unfinished_text || '"', '')
            || coalesce('; last crash or kill: step ' || {{ fmt_int('last_crash_step') }} || ' "' || last_crash_text || '"', '')
            || case when last_restart_step is not null then '; last resume: step ' || {{ fmt_int('last_restart_step') }} else '; no resume after it' end
            as evidence,
        last_step as first_step,
        last_step,
        cast(greatest(coalesce(floor(planned_steps) - last_step, 0), 0) as {{ dbt.type_bigint() }}) as steps_affected,
        cast(last_step as {{ type_double() }}) as observed_value,
        cast(planned_steps as {{ type_double() }}) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(null as {{ type_double() }}) as estimated_cost,
        'none' as cost_unit,
        'the log ends before the run did or before its planned length: no cost of its own; the judgements cover only the steps logged' as cost_method,
        cast(0 as {{ type_double() }}) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case end_kind
            when 'partial_copy' then 'Diagnose the complete log (copy the run''s files after it finished, or from the tracking server) before acting on this report.'
            when 'crash' then 'Find why the job died, then resume it from its last checkpoint or rerun it; a sweep trial that died is not a result.'
            when 'epochs_unfinished' then 'If a pruner or early stopping ended it, nothing is wrong; otherwise find what stopped it (a time limit, preemption) and resume from the last checkpoint. If the run finished, a max_steps the log does not show ended it, or its planned epoch count is stale.'
            when 'schedule_unfinished' then 'If the run was stopped on purpose, its final loss is that of a model whose learning rate had not annealed; otherwise find what stopped it (a time limit, preemption) and resume from the last checkpoint. Diagnose the complete log if there is one.'
            else 'If a pruner or early stopping ended it, nothing is wrong (say so in the config); otherwise find what stopped it (a time limit, preemption) and resume from the last checkpoint. If the run finished, total_steps in the config is stale.'
        end as recommendation
    from ends
)

select * from final
