-- Finding: grad_norm (the gradient used in the update, after clipping) above
-- grad_clip_norm, so clipping was not applied. Evidence: the steps, how far
-- above, when it started, whether clipping held before, and whether a resume
-- came just before the first violation (then the resume is the cause).
with

gradients as (
    select * from {{ run_ref('int_gradients_checked') }}
),

restarts as (
    select run_id, resume_step from {{ run_ref('int_restarts_detected') }}
),

violations as (
    select
        run_id,
        count(*) as violating_steps,
        min(step) as first_step,
        max(step) as last_step,
        max(grad_norm) as max_grad_norm,
        max(ratio_to_clip) as max_ratio,
        {{ stable_avg('ratio_to_clip') }} as mean_ratio,
        count(distinct violation_stretch_key) as stretches,
        max(grad_clip_norm) as grad_clip_norm
    from gradients
    where is_clip_violation
    group by run_id
),

gradient_counts as (
    select run_id, count(*) as counted_steps from gradients group by run_id
),

steps_before_first as (
    select
        gradients.run_id,
        max(gradients.grad_norm) as max_grad_norm_before,
        count(*) as steps_before
    from gradients
    inner join violations
        on gradients.run_id = violations.run_id
    where gradients.step < violations.first_step
    group by gradients.run_id
),

before_first as (
    -- one row per run with violations, even when the first violation is the first step
    select
        violations.run_id,
        steps_before_first.max_grad_norm_before,
        coalesce(steps_before_first.steps_before, 0) as steps_before,
        gradient_counts.counted_steps
    from violations
    left join steps_before_first
        on violations.run_id = steps_before_first.run_id
    left join gradient_counts
        on violations.run_id = gradient_counts.run_id
),

resume_before as (
    {{ last_resume_before('restarts', 'violations', threshold('clip_after_resume_window')) }}
),

after_resume as (
    select
        gradients.run_id,
        sum(case when gradients.is_clip_violation and gradients.step >= resume_before.resume_step then 1 else 0 end)
            as violations_after_resume
    from gradients
    inner join resume_before
        on gradients.run_id = resume_before.run_id
    group by gradients.run_id
),

final as (
    select
        violations.run_id,
        'grad_clip_violation:' || {{ fmt_int('violations.first_step') }} as finding_id,
        'grad_clip_violation' as category,
        case
            when violations.max_ratio >= {{ threshold('clip_high_ratio') }}
                or {{ safe_divide('violations.violating_steps', 'before_first.counted_steps') }} >= {{ threshold('clip_high_share') }}
                then 'high'
            else 'medium'
        end as severity,
        'Gradient clipping was not applied on ' || {{ fmt_int('violations.violating_steps') }}
            || ' steps: grad_norm reached ' || {{ fmt('violations.max_grad_norm', 3) }} || ', '
            || {{ fmt('violations.max_ratio', 2) }} || 'x grad_clip_norm ' || {{ fmt('violations.grad_clip_norm', 3) }}
            || case when resume_before.resume_step is not null
                then ', starting ' || {{ fmt_int('violations.first_step - resume_before.resume_step') }}
                    || ' steps after the resume at step ' || {{ fmt_int('resume_before.resume_step') }} || '.'
                else '.' end as title,
        'grad_clip_norm (config) = ' || {{ fmt('violations.grad_clip_norm', 4) }}
            || '; steps above it: ' || {{ fmt_int('violations.violating_steps') }} || ' in ' || {{ fmt_int('violations.stretches') }}
            || ' stretch(es), steps ' || {{ fmt_int('violations.first_step') }} || '-' || {{ fmt_int('violations.last_step') }}
            || '; max grad_norm ' || {{ fmt('violations.max_grad_norm', 4) }} || ' (' || {{ fmt('violations.max_ratio', 2) }}
            || 'x), mean ' || {{ fmt('violations.mean_ratio', 2) }} || 'x'
            || '; before step ' || {{ fmt_int('violations.first_step') }} || ' the largest grad_norm was '
            || {{ fmt('before_first.max_grad_norm_before', 4) }} || ' over ' || {{ fmt_int('before_first.steps_before') }} || ' steps'
            || case when resume_before.resume_step is not null
                then '; the run resumed at step ' || {{ fmt_int('resume_before.resume_step') }} || ' just before; '
                    || {{ fmt_int('after_resume.violations_after_resume') }} || ' of the violations come after it: clipping was lost on resume'
                else '' end as evidence,
        violations.first_step,
        violations.last_step,
        violations.violating_steps as steps_affected,
        violations.max_grad_norm as observed_value,
        violations.grad_clip_norm as expected_value,
        violations.grad_clip_norm * (1 + {{ threshold('clip_tolerance') }}) as threshold_value,
        'clip_tolerance' as threshold_name,
        violations.violating_steps as estimated_cost,
        'steps' as cost_unit,
        'count of updates whose gradient norm exceeded grad_clip_norm x (1 + clip_tolerance): each took an unclipped, larger-than-allowed step'
            as cost_method,
        {{ safe_divide('violations.violating_steps', 'before_first.counted_steps') }}
            * least(1.0, ln(violations.max_ratio) / ln(4.0) + 0.25) as impact_score,
        -- clipping lost on resume is a root cause of its own (the resume path has a bug to fix), not a side effect of the crash
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when resume_before.resume_step is not null
            then 'Re-apply gradient clipping after a resume (restore the clipping setting / scaler state with the checkpoint) and test a resume before the large run.'
            else 'Check that clip_grad_norm_ runs every step, after unscaling and before the optimizer step, with max_norm = grad_clip_norm.'
        end as recommendation
    from violations
    inner join before_first
        on violations.run_id = before_first.run_id
    left join resume_before
        on violations.run_id = resume_before.run_id
    left join after_resume
        on violations.run_id = after_resume.run_id
    where violations.violating_steps > 0
)

select * from final
