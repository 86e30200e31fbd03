-- For every counted step: the LR the configured schedule gives, the logged LR,
-- and where they part. The comparison accepts the schedule one step either side
-- (frameworks disagree on whether step s uses the LR of s or s-1), within
-- lr_relative_tolerance. The same curve rebuilt at the logged peak tells a
-- scaled peak apart from a different schedule.
{%- set tolerance = threshold('lr_relative_tolerance') %}
with

steps as (
    select run_id, step, attempt_number, is_attempt_start, learning_rate
    from {{ run_ref('int_train_steps_resolved') }}
),

config as (
    -- one row per run: the run spine
    select run_id, schedule_type, peak_lr, min_lr, warmup_steps, decay_steps
    from {{ run_ref('stg_training__config') }}
),

logged_peak_by_run as (
    select run_id, max(learning_rate) as logged_peak_lr
    from steps
    group by run_id
),

logged_peak as (
    select
        config.run_id,
        logged_peak_by_run.logged_peak_lr
    from config
    left join logged_peak_by_run
        on config.run_id = logged_peak_by_run.run_id
),

rebuilt as (
    select
        steps.*,
        config.peak_lr,
        config.min_lr,
        logged_peak.logged_peak_lr,
        {{ scheduled_lr('steps.step', 'config.schedule_type', 'config.peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_learning_rate,
        {{ scheduled_lr('steps.step - 1', 'config.schedule_type', 'config.peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_previous,
        {{ scheduled_lr('steps.step + 1', 'config.schedule_type', 'config.peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_next,
        {{ scheduled_lr('steps.step', 'config.schedule_type', 'logged_peak.logged_peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_at_logged_peak,
        {{ scheduled_lr('steps.step - 1', 'config.schedule_type', 'logged_peak.logged_peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_at_logged_peak_previous,
        {{ scheduled_lr('steps.step + 1', 'config.schedule_type', 'logged_peak.logged_peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_at_logged_peak_next
    from steps
    inner join config
        on steps.run_id = config.run_id
    inner join logged_peak
        on steps.run_id = logged_peak.run_id
),

banded as (
    select
        *,
        least(expected_previous, expected_learning_rate, coalesce(expected_next, expected_learning_rate))
            * (1 - {{ tolerance }}) as expected_low,
        greatest(expected_previous, expected_learning_rate, coalesce(expected_next, expected_learning_rate))
            * (1 + {{ tolerance }}) as expected_high,
        least(expected_at_logged_peak_previous, expected_at_logged_peak, coalesce(expected_at_logged_peak_next, expected_at_logged_peak))
            * (1 - {{ tolerance }}) as logged_peak_low,
        greatest(expected_at_logged_peak_previous, expected_at_logged_peak, coalesce(expected_at_logged_peak_next, expected_at_logged_peak))
            * (1 + {{ tolerance }}) as logged_peak_high
    from rebuilt
),

final as (
    select
        run_id,
        step,
        attempt_number,
        is_attempt_start,
        learning_rate,
        expected_learning_rate,
        expected_at_logged_peak,
        peak_lr,
        logged_peak_lr,
        {{ safe_divide('learning_rate', 'expected_learning_rate') }} as lr_ratio,
        {{ safe_divide('learning_rate', 'peak_lr') }} as ratio_to_peak,
        (learning_rate > peak_lr * (1 + {{ tolerance }})) as is_above_peak,
        case
            when learning_rate is null or expected_learning_rate is null then null
            else (learning_rate < expected_low or learning_rate > expected_high)
        end as is_lr_mismatch,
        case
            when learning_rate is null or expected_at_logged_peak is null then null
            else (learning_rate < logged_peak_low or learning_rate > logged_peak_high)
        end as is_mismatch_at_logged_peak
    from banded
)

select * from final
