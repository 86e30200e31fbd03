-- Step times against the run's median: slow steps, the stretches they form
-- (a sustained level shift, not a one-step z-score), and the steps where a
-- checkpoint was saved, which are expected to be slow and are left out.
-- When the config says a logged step time is the mean over the steps since the
-- previous logged row (step_time_is_interval_mean, e.g. Megatron), a row stands for
-- that window: its excess over the median counts once per step of the window, a
-- stall is a window that lost as much time as one stalled step would
-- ((stall_factor - 1) x the median: for a one-step window exactly the old rule), and
-- an evaluation run inside the window (at the previous logged step or after it) is
-- named, since its time is in the mean.
with

config as (
    -- one row per run: the run spine
    select run_id, checkpoint_interval, coalesce(step_time_is_interval_mean, 'false') = 'true' as is_interval_mean
    from {{ run_ref('stg_training__config') }}
),

steps as (
    select
        resolved.run_id,
        resolved.step,
        resolved.step_time_sec,
        case
            when config.is_interval_mean and resolved.previous_step < resolved.step then resolved.step - resolved.previous_step
            else 1
        end as window_steps,
        case when config.is_interval_mean then resolved.previous_step end as window_start_step
    from {{ run_ref('int_train_steps_resolved') }} as resolved
    inner join config
        on resolved.run_id = config.run_id
    where resolved.step_time_sec > 0
),

evaluations_in_windows as (
    -- interval windows (more than one step) holding an evaluation: it ran after the log line of
    -- window_start_step or later, before this row's line
    select distinct steps.run_id, steps.step
    from steps
    inner join {{ run_ref('int_evals_resolved') }} as evals
        on steps.run_id = evals.run_id
        and evals.step >= steps.window_start_step
        and evals.step < steps.step
    where steps.window_steps > 1
),

checkpoint_events as (
    select distinct run_id, step from {{ run_ref('int_events_classified') }}
    where event_kind = 'checkpoint_saved'
),

run_median_by_run as (
    select run_id, percentile_cont(0.5) within group (order by step_time_sec) as median_step_time_sec
    from steps
    group by run_id
),

run_median as (
    select
        config.run_id,
        run_median_by_run.median_step_time_sec
    from config
    left join run_median_by_run
        on config.run_id = run_median_by_run.run_id
),

flagged as (
    select
        steps.run_id,
        steps.step,
        steps.step_time_sec,
        steps.window_steps,
        steps.window_steps * (steps.step_time_sec - run_median.median_step_time_sec) as window_excess_sec,
        (evaluations_in_windows.step is not null) as has_evaluation_in_window,
        run_median.median_step_time_sec,
        {{ safe_divide('steps.step_time_sec', 'run_median.median_step_time_sec') }} as ratio_to_median,
        (
            checkpoint_events.step is not null
            or (config.checkpoint_interval > 0 and mod(steps.step, config.checkpoint_interval) = 0)
        ) as is_checkpoint_step,
        (steps.step_time_sec >= {{ threshold('slow_step_factor') }} * run_median.median_step_time_sec) as is_slow
    from steps
    inner join run_median
        on steps.run_id = run_median.run_id
    inner join config
        on steps.run_id = config.run_id
    left join checkpoint_events
        on steps.run_id = checkpoint_events.run_id
        and steps.step = checkpoint_events.step
    left join evaluations_in_windows
        on steps.run_id = evaluations_in_windows.run_id
        and steps.step = evaluations_in_windows.step
),

islands as (
    select
        *,
        row_number() over (partition by run_id order by step)
            - row_number() over (partition by run_id, is_slow order by step) as island_key
    from flagged
),

stretch_sizes as (
    select
        *,
        sum(case when is_slow then 1 else 0 end) over (partition by run_id, is_slow, island_key) as stretch_length,
        min(step) over (partition by run_id, is_slow, island_key) as stretch_first_step
    from islands
),

final as (
    select
        run_id,
        step,
        step_time_sec,
        window_steps,
        window_excess_sec,
        has_evaluation_in_window,
        median_step_time_sec,
        ratio_to_median,
        is_checkpoint_step,
        is_slow,
        -- the length of the run of consecutive slow steps this step belongs to (0 when not slow)
        case when is_slow then stretch_length else 0 end as slow_run_length,
        (is_slow and stretch_length >= {{ threshold('slow_stretch_min_steps') }}) as is_in_slow_stretch,
        case when is_slow and stretch_length >= {{ threshold('slow_stretch_min_steps') }} then stretch_first_step end
            as slow_stretch_first_step,
        -- outside a slow stretch, a window that lost what one step at stall_factor x the median
        -- loses; for a one-step window: step time >= stall_factor x the median (which is slow)
        (
            not (is_slow and stretch_length >= {{ threshold('slow_stretch_min_steps') }})
            and not is_checkpoint_step
            and window_excess_sec >= ({{ threshold('stall_factor') }} - 1) * median_step_time_sec
        ) as is_stall
    from stretch_sizes
)

select * from final
