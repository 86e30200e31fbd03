-- Every run that names a baseline (config baseline_run_id, another run of the same
-- build) aligned with it point by point, on two axes: by step, and by tokens seen
-- (step x batch_size, when both configs give batch_size). A run point (a counted
-- train step or a counted evaluation) takes the baseline's last point at or before
-- the same position (the exact step when both log the same steps); past the
-- baseline's last train point the baseline side is NULL. Compared: smoothed loss
-- (against the baseline's own noise scale, int_run_curves_smoothed), validation
-- loss, learning rate, grad norm and smoothed step time. The rule that reads these
-- (departures beyond noise, sustained slowdowns) is in int_runs_compared.
-- A table rebuilt whole on every build (not an increment of the batch's runs):
-- each row reads two runs (a run and its baseline).
{{ config(materialized='table') }}
with

config as (
    select run_id, baseline_run_id, batch_size from {{ ref('stg_training__config') }}
),

pairs as (
    -- a baseline that is not in this build, or the run itself, gives no pair
    select
        runs.run_id,
        baselines.run_id as baseline_run_id,
        runs.batch_size,
        baselines.batch_size as baseline_batch_size
    from config as runs
    inner join config as baselines
        on runs.baseline_run_id = baselines.run_id
    where runs.baseline_run_id <> runs.run_id
),

axes as (
    select run_id, baseline_run_id, 'step' as align_axis, 1 as run_scale, 1 as baseline_scale
    from pairs
    union all
    select run_id, baseline_run_id, 'tokens' as align_axis, batch_size as run_scale, baseline_batch_size as baseline_scale
    from pairs
    where batch_size is not null and baseline_batch_size is not null
),

curves as (
    select * from {{ ref('int_run_curves_smoothed') }}
),

evals as (
    select run_id, step, val_loss from {{ ref('int_evals_compared') }}
    where val_loss is not null
),

run_steps as (
    -- the run's points: counted train steps and counted evaluations (an evaluation at step 0 has no train step)
    select run_id, step from curves
    union
    select run_id, step from evals
),

sequenced as (
    -- the baseline's train points, its evaluations and the run's points on one axis; at a tie the
    -- baseline's points come first, so a run point takes the baseline point at its own position
    select
        axes.run_id, axes.baseline_run_id, axes.align_axis,
        curves.step * axes.baseline_scale as position, 0 as side_order,
        curves.step as baseline_train_step,
        cast(null as {{ dbt.type_bigint() }}) as baseline_eval_step,
        cast(null as {{ dbt.type_bigint() }}) as step
    from axes
    inner join curves
        on axes.baseline_run_id = curves.run_id
    union all
    select
        axes.run_id, axes.baseline_run_id, axes.align_axis,
        evals.step * axes.baseline_scale as position, 1 as side_order,
        cast(null as {{ dbt.type_bigint() }}) as baseline_train_step,
        evals.step as baseline_eval_step,
        cast(null as {{ dbt.type_bigint() }}) as step
    from axes
    inner join evals
        on axes.baseline_run_id = evals.run_id
    union all
    select
        axes.run_id, axes.baseline_run_id, axes.align_axis,
        run_steps.step * axes.run_scale as position, 2 as side_order,
        cast(null as {{ dbt.type_bigint() }}) as baseline_train_step,
        cast(null as {{ dbt.type_bigint() }}) as baseline_eval_step,
        run_steps.step
    from axes
    inner join run_steps
        on axes.run_id = run_steps.run_id
),

carried as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        position,
        side_order,
        step,
        max(baseline_train_step) over (
            partition by run_id, baseline_run_id, align_axis order by position, side_order
            rows between unbounded preceding and current row
        ) as carried_train_step,
        max(baseline_eval_step) over (
            partition by run_id, baseline_run_id, align_axis order by position, side_order
            rows between unbounded preceding and current row
        ) as carried_eval_step,
        max(case when side_order = 0 then position end) over (
            partition by run_id, baseline_run_id, align_axis
            rows between unbounded preceding and unbounded following
        ) as baseline_last_position
    from sequenced
),

run_points as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        step,
        position,
        case when position <= baseline_last_position then carried_train_step end as baseline_step,
        carried_eval_step as baseline_eval_step
    from carried
    where side_order = 2
),

final as (
    select
        run_points.run_id,
        run_points.baseline_run_id,
        run_points.align_axis,
        run_points.step,
        run_points.position,
        run_points.baseline_step,
        run_curve.loss,
        run_curve.loss_smoothed,
        baseline_curve.loss as baseline_loss,
        baseline_curve.loss_smoothed as baseline_loss_smoothed,
        baseline_curve.loss_noise as baseline_loss_noise,
        -- compared only where both smoothed curves have a full frame
        case when run_curve.is_scored and baseline_curve.is_scored
            then run_curve.loss_smoothed - baseline_curve.loss_smoothed end as loss_delta,
        case when run_curve.is_scored and baseline_curve.is_scored
            then {{ safe_divide('run_curve.loss_smoothed - baseline_curve.loss_smoothed', 'baseline_curve.loss_noise') }} end
            as loss_delta_in_noise,
        run_evals.val_loss,
        run_points.baseline_eval_step,
        case when run_evals.val_loss is not null then baseline_evals.val_loss end as baseline_val_loss,
        run_evals.val_loss - baseline_evals.val_loss as val_loss_delta,
        run_curve.learning_rate,
        baseline_curve.learning_rate as baseline_learning_rate,
        {{ safe_divide('run_curve.learning_rate', 'baseline_curve.learning_rate') }} as learning_rate_ratio,
        run_curve.grad_norm,
        baseline_curve.grad_norm as baseline_grad_norm,
        {{ safe_divide('run_curve.grad_norm', 'baseline_curve.grad_norm') }} as grad_norm_ratio,
        run_curve.step_time_sec,
        baseline_curve.step_time_sec as baseline_step_time_sec,
        run_curve.step_time_smoothed,
        baseline_curve.step_time_smoothed as baseline_step_time_smoothed,
        {{ safe_divide('run_curve.step_time_smoothed', 'baseline_curve.step_time_smoothed') }} as step_time_ratio
    from run_points
    left join curves as run_curve
        on run_points.run_id = run_curve.run_id
        and run_points.step = run_curve.step
    left join curves as baseline_curve
        on run_points.baseline_run_id = baseline_curve.run_id
        and run_points.baseline_step = baseline_curve.step
    left join evals as run_evals
        on run_points.run_id = run_evals.run_id
        and run_points.step = run_evals.step
    left join evals as baseline_evals
        on run_points.baseline_run_id = baseline_evals.run_id
        and run_points.baseline_eval_step = baseline_evals.step
)

select * from final
