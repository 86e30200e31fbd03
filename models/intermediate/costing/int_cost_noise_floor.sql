-- How much the run's final validation loss would move from noise alone: the floor under
-- every cost estimate. One row per run (the config is the spine).
-- The eval-to-eval jitter is read from the second differences of the validation loss over
-- the evaluations the loss-curve law is fitted on (after the warmup and its first
-- evaluation interval, where the curve bends least): for independent noise of standard
-- deviation sigma on a smooth trend, the second difference v(i) - 2 v(i-1) + v(i-2) has
-- standard deviation sigma * sqrt(6). The median of its absolute value / 0.6745 estimates
-- that robustly (the trend's own bend moves it little). A second difference that uses an
-- evaluation right after a loss spike (a spike step since the previous evaluation) is left
-- out: that jump is a problem's effect, not the noise a cost must clear.
-- Fewer than noise_floor_min_points second differences: no floor (NULL). A cost is a difference between two runs' final losses, each with that
-- noise: the floor is noise_floor_z x sqrt(2) x sigma (var noise_floor_z).
{%- set min_points = threshold('noise_floor_min_points') %}
with

evals as (
    select run_id, step, val_loss, spike_steps
    from {{ run_ref('int_cost_curve_points') }}
    where is_fit_point
),

lagged as (
    select
        run_id,
        step,
        val_loss,
        spike_steps,
        {{ previous_value('val_loss', 'step', 'run_id') }} as previous_val_loss,
        {{ previous_value('spike_steps', 'step', 'run_id') }} as previous_spike_steps
    from evals
),

differenced as (
    select
        lagged.*,
        {{ previous_value('lagged.previous_val_loss', 'lagged.step', 'lagged.run_id') }} as second_previous_val_loss,
        {{ previous_value('lagged.previous_spike_steps', 'lagged.step', 'lagged.run_id') }} as second_previous_spike_steps
    from lagged
),

jitter as (
    select
        run_id,
        count(*) as jitter_points,
        percentile_cont(0.5) within group (
            order by abs(val_loss - 2 * previous_val_loss + second_previous_val_loss)
        ) / 0.6745 / sqrt(6.0) as eval_sigma
    from differenced
    where second_previous_val_loss is not null
        and spike_steps + previous_spike_steps + second_previous_spike_steps = 0
    group by run_id
),

final as (
    select
        config.run_id,
        coalesce(jitter.jitter_points, 0) as jitter_points,
        case when jitter.jitter_points >= {{ min_points }} then jitter.eval_sigma end as eval_sigma,
        case when jitter.jitter_points >= {{ min_points }}
            then {{ threshold('noise_floor_z') }} * sqrt(2.0) * jitter.eval_sigma end as noise_floor
    from {{ run_ref('stg_training__config') }} as config
    left join jitter
        on config.run_id = jitter.run_id
)

select * from final
