-- Finding: non-finite loss or gradient in the counted steps, and loss-scale
-- overflow / skipped-step events. Evidence: the steps and the matching events.
with

steps as (
    select step, is_loss_non_finite, is_grad_norm_non_finite from {{ ref('int_train_steps_resolved') }}
),

overflow_events as (
    select step from {{ ref('int_events_classified') }} where event_kind = 'loss_scale_overflow'
),

nan_steps as (
    select
        count(*) as counted_steps,
        sum(case when is_loss_non_finite or is_grad_norm_non_finite then 1 else 0 end) as non_finite_steps,
        sum(case when is_loss_non_finite then 1 else 0 end) as non_finite_loss_steps,
        min(case when is_loss_non_finite or is_grad_norm_non_finite then step end) as first_step,
        max(case when is_loss_non_finite or is_grad_norm_non_finite then step end) as last_step,
        max(step) as final_step
    from steps
),

overflows as (
    select count(*) as overflow_events, min(step) as first_event_step, max(step) as last_event_step
    from overflow_events
),

final as (
    select
        'nan_loss:run' as finding_id,
        'nan_loss' as category,
        case
            when nan_steps.non_finite_loss_steps > 0 and nan_steps.last_step = nan_steps.final_step then 'critical'
            when nan_steps.non_finite_steps > 0 then 'high'
            when {{ safe_divide('overflows.overflow_events', 'nan_steps.counted_steps') }} > {{ var('overflow_medium_share') }} then 'medium'
            else 'low'
        end as severity,
        case when nan_steps.non_finite_steps > 0
            then 'Loss or gradient was NaN/inf on ' || {{ fmt_int('nan_steps.non_finite_steps') }} || ' steps, first at step '
                || {{ fmt_int('nan_steps.first_step') }} || '.'
            else 'The run logged ' || {{ fmt_int('overflows.overflow_events') }} || ' loss-scale overflow / skipped-step events.'
        end as title,
        'non-finite loss steps: ' || {{ fmt_int('nan_steps.non_finite_loss_steps') }} || '; non-finite loss or grad_norm steps: '
            || {{ fmt_int('nan_steps.non_finite_steps') }} || ' (steps ' || {{ fmt_int('nan_steps.first_step') }} || '-'
            || {{ fmt_int('nan_steps.last_step') }} || '); overflow/skip events: ' || {{ fmt_int('overflows.overflow_events') }}
            || case when overflows.overflow_events > 0
                then ' (steps ' || {{ fmt_int('overflows.first_event_step') }} || '-' || {{ fmt_int('overflows.last_event_step') }} || ')'
                else '' end as evidence,
        coalesce(nan_steps.first_step, overflows.first_event_step) as first_step,
        coalesce(nan_steps.last_step, overflows.last_event_step) as last_step,
        nan_steps.non_finite_steps + overflows.overflow_events as steps_affected,
        cast(nan_steps.non_finite_steps as {{ type_double() }}) as observed_value,
        cast(0 as {{ type_double() }}) as expected_value,
        cast(nan_steps.non_finite_steps + overflows.overflow_events as {{ type_double() }}) as estimated_cost,
        'steps' as cost_unit,
        'count of steps whose update was lost or poisoned (non-finite loss/gradient, skipped on overflow)' as cost_method,
        case when nan_steps.non_finite_loss_steps > 0 and nan_steps.last_step = nan_steps.final_step
            then 1.0
            else {{ safe_divide('nan_steps.non_finite_steps + overflows.overflow_events', 'nan_steps.counted_steps') }}
        end as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Find the first non-finite step''s batch and the LR there; in fp16 check the loss scaler, in bf16 look for a division by zero or an LR high enough to blow up the weights.'
            as recommendation
    from nan_steps
    cross join overflows
    where nan_steps.non_finite_steps > 0 or overflows.overflow_events > 0
)

select * from final
