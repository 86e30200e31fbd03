-- Finding: non-finite loss or gradient in the counted steps, and loss-scale
-- overflow / skipped-step events. Evidence: the steps and the matching events.
-- A non-finite gradient norm beside a finite loss is an update the loss scaler skipped
-- (a mixed-precision scaler skips the step whose gradients overflowed, and the loss stays
-- finite); it counts as an overflow, not as a poisoned step. Skips inside the scaler's
-- calibration window at the start of the run (scaler_settle_steps) are routine and never
-- make the finding medium.
with

steps as (
    select
        run_id,
        step,
        loss,
        coalesce(is_loss_non_finite, false) as is_loss_non_finite,
        coalesce(is_grad_norm_non_finite, false) as is_grad_norm_non_finite,
        min(step) over (partition by run_id) as first_step_of_run
    from {{ run_ref('int_train_steps_resolved') }}
),

overflow_events as (
    select run_id, step from {{ run_ref('int_events_classified') }} where event_kind = 'loss_scale_overflow'
),

runs as (
    select run_id from {{ run_ref('stg_training__config') }}
),

nan_steps_by_run as (
    select
        run_id,
        count(*) as counted_steps,
        sum(case when is_loss_non_finite or is_grad_norm_non_finite then 1 else 0 end) as non_finite_steps,
        sum(case when is_loss_non_finite then 1 else 0 end) as non_finite_loss_steps,
        -- updates skipped on a gradient overflow after the scaler's calibration window
        sum(case when is_grad_norm_non_finite and not is_loss_non_finite
            and step > first_step_of_run + {{ threshold('scaler_settle_steps') }} then 1 else 0 end) as late_grad_skip_steps,
        min(case when is_loss_non_finite or is_grad_norm_non_finite then step end) as first_step,
        max(case when is_loss_non_finite or is_grad_norm_non_finite then step end) as last_step,
        min(case when not is_loss_non_finite and loss is not null then step end) as first_finite_loss_step,
        min(step) as first_counted_step,
        max(step) as final_step,
        -- the optimizer steps the log spans: a log written every N steps (Megatron, fairseq,
        -- HF logging_steps) counts one row per N updates, and an overflow skips one update
        greatest(count(*), max(step) - min(step) + 1) as spanned_steps
    from steps
    group by run_id
),

nan_steps as (
    -- one row per run (the run spine): a run with overflow events but no counted steps keeps its finding
    select
        runs.run_id,
        coalesce(nan_steps_by_run.counted_steps, 0) as counted_steps,
        coalesce(nan_steps_by_run.spanned_steps, 0) as spanned_steps,
        nan_steps_by_run.non_finite_steps,
        nan_steps_by_run.non_finite_loss_steps,
        coalesce(nan_steps_by_run.late_grad_skip_steps, 0) as late_grad_skip_steps,
        nan_steps_by_run.first_step,
        nan_steps_by_run.last_step,
        nan_steps_by_run.final_step,
        -- every non-finite loss or gradient came before the first finite one: no update was made with them (an
        -- update with non-finite gradients poisons every later loss), so they are values logged
        -- before the first update (an average over no batches) or updates a loss scaler skipped
        coalesce(nan_steps_by_run.last_step < nan_steps_by_run.first_finite_loss_step, false) as is_leading_placeholder,
        nan_steps_by_run.first_finite_loss_step
    from runs
    left join nan_steps_by_run
        on runs.run_id = nan_steps_by_run.run_id
),

overflows as (
    select
        runs.run_id,
        count(overflow_events.run_id) as overflow_events,
        sum(case when overflow_events.step > nan_steps_by_run.first_counted_step + {{ threshold('scaler_settle_steps') }}
            then 1 else 0 end) as late_overflow_events,
        min(overflow_events.step) as first_event_step,
        max(overflow_events.step) as last_event_step
    from runs
    left join overflow_events
        on runs.run_id = overflow_events.run_id
    left join nan_steps_by_run
        on runs.run_id = nan_steps_by_run.run_id
    group by runs.run_id
),

eval_findings as (
    select
        run_id,
        'nan_loss:eval' as finding_id,
        'nan_loss' as category,
        -- the last evaluation non-finite: the run's final model gives no finite held-out loss
        case when last_non_finite_step = final_eval_step then 'medium' else 'low' end as severity,
        'Validation loss was NaN/inf at ' || {{ fmt_int('non_finite_evals') }} || ' of ' || {{ fmt_int('evals_logged') }}
            || ' evaluations (first at step ' || {{ fmt_int('first_non_finite_step') }} || ') while the training loss stayed finite: '
            || case when last_non_finite_step = final_eval_step
                then 'the final model''s outputs overflow on held-out data.'
                else 'the model''s outputs overflowed on held-out data at those checkpoints, then recovered.' end as title,
        'non-finite validation losses: ' || {{ fmt_int('non_finite_evals') }} || ' (steps ' || {{ fmt_int('first_non_finite_step') }} || '-'
            || {{ fmt_int('last_non_finite_step') }} || '); evaluations: ' || {{ fmt_int('evals_logged') }} || ', the last at step '
            || {{ fmt_int('final_eval_step') }} || '; every counted training loss finite' as evidence,
        first_non_finite_step as first_step,
        last_non_finite_step as last_step,
        non_finite_evals as steps_affected,
        cast(non_finite_evals as {{ type_double() }}) as observed_value,
        cast(0 as {{ type_double() }}) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(null as {{ type_double() }}) as estimated_cost,
        'none' as cost_unit,
        'no cost of its own: the checkpoints at those evaluations are unusable; training went on' as cost_method,
        case when last_non_finite_step = final_eval_step then 1.0 else {{ safe_divide('non_finite_evals', 'evals_logged') }} end as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Do not keep a checkpoint whose evaluation was non-finite; evaluate it again in fp32 (an fp16/AMP overflow in the evaluation'
            || ' pass, or logits that blew up): if it stays non-finite, the weights had diverged there.' as recommendation
    -- a NaN/inf validation loss beside finite training losses (int_eval_losses_checked)
    from {{ run_ref('int_eval_losses_checked') }}
    where is_flagged
),

run_findings as (
    select
        nan_steps.run_id,
        'nan_loss:run' as finding_id,
        'nan_loss' as category,
        case
            when nan_steps.non_finite_loss_steps > 0 and nan_steps.last_step = nan_steps.final_step then 'critical'
            -- fewer non-finite losses than nan_high_min_loss_steps, with finite losses after them: the run
            -- recovered (an update whose gradients were non-finite would have poisoned every later loss),
            -- so the bad batch's update was skipped or harmless: worth a look, not high
            when nan_steps.non_finite_loss_steps > 0 and not nan_steps.is_leading_placeholder
                and nan_steps.non_finite_loss_steps < {{ threshold('nan_high_min_loss_steps') }} then 'medium'
            when nan_steps.non_finite_loss_steps > 0 and not nan_steps.is_leading_placeholder then 'high'
            when {{ safe_divide('coalesce(overflows.late_overflow_events, 0) + nan_steps.late_grad_skip_steps', 'nan_steps.spanned_steps') }}
                > {{ threshold('overflow_medium_share') }} then 'medium'
            else 'low'
        end as severity,
        case when nan_steps.is_leading_placeholder and nan_steps.non_finite_loss_steps > 0
            then 'The first ' || {{ fmt_int('nan_steps.non_finite_loss_steps') }} || ' logged losses were NaN/inf, all before the first finite one (step '
                || {{ fmt_int('nan_steps.first_finite_loss_step') }} || '): no update was made with them (a non-finite update poisons every later'
                || ' loss), so they are values logged before the first update (an average over no batches) or updates a loss scaler skipped.'
            when nan_steps.non_finite_loss_steps > 0
            then 'Loss or gradient was NaN/inf on ' || {{ fmt_int('nan_steps.non_finite_steps') }} || ' steps, first at step '
                || {{ fmt_int('nan_steps.first_step') }} || '.'
            when nan_steps.non_finite_steps > 0
            then 'The gradient norm was NaN/inf on ' || {{ fmt_int('nan_steps.non_finite_steps') }} || ' steps with a finite loss, first at step '
                || {{ fmt_int('nan_steps.first_step') }} || ': updates the loss scaler skipped on an overflow, not a poisoned model.'
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
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(nan_steps.non_finite_steps + overflows.overflow_events as {{ type_double() }}) as estimated_cost,
        'steps' as cost_unit,
        'count of steps whose update was lost or poisoned (non-finite loss/gradient, skipped on overflow)' as cost_method,
        case when nan_steps.non_finite_loss_steps > 0 and nan_steps.last_step = nan_steps.final_step
            then 1.0
            else {{ safe_divide('nan_steps.non_finite_steps + overflows.overflow_events', 'nan_steps.counted_steps') }}
        end as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when nan_steps.is_leading_placeholder
            then 'Nothing to fix in the model: log the loss from the first update on (or skip an empty average), so that a real NaN later stands out.'
            else 'Find the first non-finite step''s batch and the LR there; in fp16 check the loss scaler, in bf16 look for a division by zero or an LR high enough to blow up the weights.'
        end as recommendation
    from nan_steps
    inner join overflows
        on nan_steps.run_id = overflows.run_id
    where nan_steps.non_finite_steps > 0 or overflows.overflow_events > 0
),

final as (
    select * from run_findings
    union all
    select * from eval_findings
)

select * from final
