-- Finding: the logged LR departs from the configured warmup + decay curve.
-- The shape of the departure is named: a scaled peak (the curve matches the
-- schedule rebuilt at the logged peak), no warmup, a constant LR (after the warmup), a reset after
-- a resume, or a different decay. Evidence: where they part and by how much.
-- And, config or not, one finding per resume where the LR is discontinuous
-- (int_resumes_checked: the LR after the resume against the pre-crash trajectory):
-- it jumped, dropped, or the warmup restarted. A config-based reset_after_resume is
-- then a symptom of it.
with

compared as (
    select * from {{ run_ref('int_learning_rates_compared') }}
),

config as (
    select run_id, warmup_steps, decay_steps, peak_lr from {{ run_ref('stg_training__config') }}
),

resumes as (
    select run_id, step as resume_step from {{ run_ref('int_train_rows_resolved') }} where is_attempt_start
),

first_compared as (
    select run_id, min(step) as first_compared_step from compared group by run_id
),

summary as (
    select
        compared.run_id,
        count(*) as counted_steps,
        count(is_lr_mismatch) as comparable_steps,
        sum(case when is_lr_mismatch then 1 else 0 end) as mismatched_steps,
        min(case when is_lr_mismatch then step end) as first_step,
        max(case when is_lr_mismatch then step end) as last_step,
        sum(case when is_mismatch_at_logged_peak = false then 1 else 0 end) as steps_matching_at_logged_peak,
        max(learning_rate) as max_logged_lr,
        min(learning_rate) as min_logged_lr,
        -- after the configured warmup: a warmup that ran but a decay that never came is a constant LR too
        max(case when compared.step > coalesce(config.warmup_steps, 0) then learning_rate end) as max_logged_lr_after_warmup,
        min(case when compared.step > coalesce(config.warmup_steps, 0) then learning_rate end) as min_logged_lr_after_warmup,
        max(case when compared.step > coalesce(config.warmup_steps, 0) then expected_learning_rate end) as max_expected_lr_after_warmup,
        min(case when compared.step > coalesce(config.warmup_steps, 0) and expected_learning_rate > 0 then expected_learning_rate end)
            as min_expected_lr_after_warmup,
        -- the departure as a ratio, where the schedule expects a positive LR (the last step of a decay to 0
        -- expects 0: any logged LR is infinitely far from it)
        max(case when is_lr_mismatch and expected_learning_rate > 0 then abs(ln(greatest(lr_ratio, 1e-12))) end) as max_abs_log_ratio,
        {{ stable_avg('case when is_lr_mismatch and expected_learning_rate > 0 then abs(ln(greatest(lr_ratio, 1e-12))) end') }} as mean_abs_log_ratio,
        max(case when step = first_compared.first_compared_step then learning_rate end) as first_logged_lr
    from compared
    inner join first_compared
        on compared.run_id = first_compared.run_id
    left join config
        on compared.run_id = config.run_id
    group by compared.run_id
),

first_mismatch as (
    select compared.run_id, compared.step, compared.learning_rate, compared.expected_learning_rate
    from compared
    inner join summary
        on compared.run_id = summary.run_id
    where compared.step = summary.first_step
),

resume_before as (
    {{ last_resume_before('resumes', 'summary', threshold('lr_resume_attribution_steps')) }}
),

classified as (
    select
        summary.*,
        first_mismatch.learning_rate as lr_at_first,
        first_mismatch.expected_learning_rate as expected_at_first,
        resume_before.resume_step,
        config.warmup_steps,
        config.decay_steps,
        (summary.max_logged_lr > config.peak_lr * (1 + {{ threshold('lr_relative_tolerance') }})) as is_peak_above_config,
        case
            when {{ safe_divide('summary.steps_matching_at_logged_peak', 'summary.comparable_steps') }}
                >= {{ threshold('lr_shape_match_share') }} then 'scaled_peak'
            when {{ safe_divide('summary.max_logged_lr_after_warmup', 'summary.min_logged_lr_after_warmup') }} < {{ threshold('constant_lr_max_spread') }}
                and {{ safe_divide('summary.max_expected_lr_after_warmup', 'nullif(summary.min_expected_lr_after_warmup, 0)') }}
                    > {{ threshold('constant_lr_min_expected_spread') }} then 'constant_lr'
            when resume_before.resume_step is not null then 'reset_after_resume'
            -- a skipped warmup accounts for mismatches within the warmup only
            when config.warmup_steps > 0 and summary.first_logged_lr >= {{ threshold('no_warmup_min_start_share') }} * summary.max_logged_lr
                and summary.mismatched_steps <= config.warmup_steps then 'no_warmup'
            when summary.first_step > coalesce(config.warmup_steps, 0) then 'different_decay'
            else 'departs'
        end as mismatch_kind
    from summary
    inner join config
        on summary.run_id = config.run_id
    left join first_mismatch
        on summary.run_id = first_mismatch.run_id
    left join resume_before
        on summary.run_id = resume_before.run_id
    where summary.mismatched_steps > 0
),

final as (
    select
        run_id,
        'lr_schedule_mismatch:' || mismatch_kind as finding_id,
        'lr_schedule_mismatch' as category,
        case
            when mismatch_kind = 'scaled_peak' and is_peak_above_config then 'low'
            when {{ safe_divide('mismatched_steps', 'comparable_steps') }} >= {{ threshold('lr_mismatch_high_share') }}
                or max_abs_log_ratio >= ln({{ threshold('lr_mismatch_high_ratio') }}) then 'high'
            else 'medium'
        end as severity,
        case mismatch_kind
            when 'scaled_peak' then 'The logged LR follows the configured schedule shape but at a different peak.'
            when 'constant_lr' then case when warmup_steps > 0 and min_logged_lr < min_logged_lr_after_warmup
                then 'The learning rate stayed constant after its warmup although the config asks for a decay.'
                else 'The learning rate stayed constant although the config asks for warmup and decay.' end
            when 'reset_after_resume' then 'The LR schedule restarted or shifted when the run resumed at step ' || {{ fmt_int('resume_step') }} || '.'
            when 'no_warmup' then 'The run skipped its ' || {{ fmt_int('warmup_steps') }} || '-step warmup: the LR started near its peak.'
            when 'different_decay' then 'The LR decays differently from the configured ' || {{ fmt_int('decay_steps') }} || '-step schedule.'
            else 'The logged learning rate departs from the configured schedule.'
        end
            || ' ' || {{ fmt_int('mismatched_steps') }} || ' of ' || {{ fmt_int('comparable_steps') }} || ' steps differ.' as title,
        'first step where they part: ' || {{ fmt_int('first_step') }} || ' (logged ' || {{ fmt('lr_at_first', 8) }}
            || ', expected ' || {{ fmt('expected_at_first', 8) }} || '); mismatched steps ' || {{ fmt_int('first_step') }} || '-'
            || {{ fmt_int('last_step') }} || ' (' || {{ fmt_int('mismatched_steps') }} || ' of ' || {{ fmt_int('comparable_steps') }}
            || '); largest departure ' || coalesce('x' || {{ fmt('exp(max_abs_log_ratio)', 2) }}, 'where the schedule expects 0') || '; expected LR rebuilt from the config (warmup '
            || {{ fmt_int('warmup_steps') }} || ' steps, decay to step ' || {{ fmt_int('decay_steps') }}
            || ') for every step, one step either side accepted, tolerance ' || {{ fmt_pct(threshold('lr_relative_tolerance'), 0) }}
            as evidence,
        first_step,
        last_step,
        mismatched_steps as steps_affected,
        lr_at_first as observed_value,
        expected_at_first as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        {{ safe_divide('mismatched_steps', 'comparable_steps') }} as estimated_cost,
        'share_of_updates' as cost_unit,
        'share of steps whose logged LR is outside the rebuilt schedule band' as cost_method,
        -- a scaled peak above the config is the lr_above_peak finding's harm already: not counted twice
        case when mismatch_kind = 'scaled_peak' and is_peak_above_config then 0
            else {{ safe_divide('mismatched_steps', 'comparable_steps') }} * least(1.0, mean_abs_log_ratio / ln(8.0))
        end as impact_score,
        case
            when mismatch_kind = 'scaled_peak' and is_peak_above_config then 'lr_above_peak:run'
            -- a schedule reset on resume is its own root cause (the resume path does not restore the scheduler):
            -- the resume's own finding below, when the LR after it is discontinuous with the pre-crash one
            when mismatch_kind = 'reset_after_resume' then 'lr_schedule_mismatch:resume_' || {{ fmt_int('resume_step') }}
            -- an LR that stays up (constant, or a decay far longer than configured) is costed as never annealing,
            -- when that finding exists (the findings layer drops a cause the run did not produce)
            when mismatch_kind in ('constant_lr', 'different_decay') then 'schedule_sanity:never_anneals'
        end as caused_by,
        case mismatch_kind
            when 'scaled_peak' then 'Fix the peak (see lr_above_peak); the schedule shape itself is right.'
            when 'constant_lr' then 'Attach the LR scheduler to the optimizer (it is not stepping).'
            when 'reset_after_resume' then 'Restore the scheduler state from the checkpoint on resume.'
            when 'no_warmup' then 'Restore the warmup: check warmup_steps reaches the scheduler.'
            when 'different_decay' then 'Set the scheduler decay length to decay_steps ' || {{ fmt_int('decay_steps') }} || ' (or fix the config).'
            else 'Compare the scheduler the code builds with the config, step by step.'
        end as recommendation
    from classified
),

resume_findings as (
    -- the LR after a resume against the pre-crash trajectory (no config needed)
    select
        run_id,
        'lr_schedule_mismatch:resume_' || {{ fmt_int('resume_step') }} as finding_id,
        'lr_schedule_mismatch' as category,
        -- the discontinuity is certain; what it cost shows in the loss after it (loss_spikes:resume_*)
        'medium' as severity,
        case lr_change
            when 'warmup_restarted' then 'The LR warmup restarted when the run resumed at step ' || {{ fmt_int('resume_step') }}
                || ': the LR fell to ' || {{ fmt('lr_after', 8) }} || ' (it was ' || {{ fmt('lr_expected_high / (1 + ' ~ threshold('lr_relative_tolerance') ~ ')', 8) }}
                || ') and climbed again.'
            when 'jumped_up' then case when boundary_source = 'learning_rate'
                then 'The LR jumped ' || {{ fmt('lr_after * (1 + ' ~ threshold('lr_relative_tolerance') ~ ') / lr_expected_high', 1) }} || 'x at step ' || {{ fmt_int('resume_step') }} || ' after it had stopped rising: '
                    || {{ fmt('lr_after', 8) }} || ' instead of about ' || {{ fmt('lr_expected_high / (1 + ' ~ threshold('lr_relative_tolerance') ~ ')', 8) }}
                    || ' (the schedule restarted: a resume that did not restore the scheduler, or a new run continuing the step counter).'
                else 'The LR jumped ' || {{ fmt('lr_after * (1 + ' ~ threshold('lr_relative_tolerance') ~ ') / lr_expected_high', 1) }} || 'x when the run resumed at step ' || {{ fmt_int('resume_step') }}
                    || ': ' || {{ fmt('lr_after', 8) }} || ' instead of about ' || {{ fmt('lr_expected_high / (1 + ' ~ threshold('lr_relative_tolerance') ~ ')', 8) }}
                    || ' (the scheduler state was not restored).' end
            else 'The LR dropped to ' || {{ fmt('lr_after', 8) }} || ' (' || {{ fmt('lr_expected_low / (1 - ' ~ threshold('lr_relative_tolerance') ~ ') / lr_after', 1) }} || 'x lower) when the run resumed at step '
                || {{ fmt_int('resume_step') }} || ', instead of about ' || {{ fmt('lr_expected_low / (1 - ' ~ threshold('lr_relative_tolerance') ~ ')', 8) }}
                || ' (the scheduler state was not restored).'
        end as title,
        case boundary_source when 'learning_rate' then 'no restart in the log or the events: the jump is the only sign of a resume; LR jump at step '
            when 'events' then 'resume (from the events; the log does not replay steps) at step ' else 'resume at step ' end
            || {{ fmt_int('resume_step') }} || case when checkpoint_step is not null then ' (checkpoint ' || {{ fmt_int('checkpoint_step') }} || ')' else '' end
            || '; first LR after it ' || {{ fmt('lr_after', 8) }} || ' at step ' || {{ fmt_int('first_after_step') }}
            || '; expected from ' || lr_basis || ': ' || {{ fmt('lr_expected_low', 8) }} || ' to ' || {{ fmt('lr_expected_high', 8) }}
            || ' (tolerance ' || {{ fmt_pct(threshold('lr_relative_tolerance'), 0) }} || ' included); ratio to the band ' || {{ fmt('lr_ratio', 2) }}
            || ' (a discontinuity beyond ' || {{ threshold('resume_lr_jump_ratio') }} || 'x either way)'
            || case when lr_change = 'warmup_restarted' then '; then rising to ' || {{ fmt('lr_after_window_max', 8) }}
                || ' within ' || {{ threshold('resume_window_rows') }} || ' rows while the pre-crash LR was not rising: a warmup from the start' else '' end
            || '; at this resume: ' || case when defects = '' then 'nothing else' else defects end
            as evidence,
        resume_step as first_step,
        first_after_step as last_step,
        cast(1 as {{ dbt.type_bigint() }}) as steps_affected,
        lr_after as observed_value,
        case when lr_ratio > 1 then lr_expected_high / (1 + {{ threshold('lr_relative_tolerance') }})
            else lr_expected_low / (1 - {{ threshold('lr_relative_tolerance') }}) end as expected_value,
            cast(null as {{ type_double() }}) as threshold_value,
            cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(null as {{ type_double() }}) as estimated_cost,
        'none' as cost_unit,
        'no direct cost: what the discontinuity cost shows in the loss after the resume (loss_spikes:resume_*)' as cost_method,
        least(1.0, abs(ln(lr_ratio)) / ln(8.0)) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case lr_change
            when 'warmup_restarted' then 'Restore the scheduler state (its step count) from the checkpoint on resume, so the warmup does not run again.'
            else 'Restore the scheduler state from the checkpoint on resume (or rebuild it for the step the checkpoint holds and the original total), and check the first logged LR after a resume equals the last one before it.'
        end as recommendation
    from {{ run_ref('int_resumes_checked') }}
    where is_lr_discontinuous
),

unioned as (
    select * from final
    union all
    select * from resume_findings
)

select * from unioned
