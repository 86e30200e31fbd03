-- Step times against the run's median: slow steps, the stretches they form
-- (a sustained level shift, not a one-step z-score), and the steps where a
-- checkpoint was saved, which are expected to be slow and are left out.
with

steps as (
    select run_id, step, step_time_sec
    from {{ run_ref('int_train_steps_resolved') }}
    where step_time_sec > 0
),

config as (
    -- one row per run: the run spine
    select run_id, checkpoint_interval from {{ run_ref('stg_training__config') }}
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
        run_median.median_step_time_sec,
        {{ safe_divide('steps.step_time_sec', 'run_median.median_step_time_sec') }} as ratio_to_median,
        (
            checkpoint_events.step is not null
            or (config.checkpoint_interval > 0 and mod(steps.step, config.checkpoint_interval) = 0)
        ) as is_checkpoint_step,
        (steps.step_time_sec >= {{ var('slow_step_factor') }} * run_median.median_step_time_sec) as is_slow
    from steps
    inner join run_median
        on steps.run_id = run_median.run_id
    inner join config
        on steps.run_id = config.run_id
    left join checkpoint_events
        on steps.run_id = checkpoint_events.run_id
        and steps.step = checkpoint_events.step
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
        median_step_time_sec,
        ratio_to_median,
        is_checkpoint_step,
        is_slow,
        (is_slow and stretch_length >= {{ var('slow_stretch_min_steps') }}) as is_in_slow_stretch,
        case when is_slow and stretch_length >= {{ var('slow_stretch_min_steps') }} then stretch_first_step end
            as slow_stretch_first_step,
        (
            is_slow and stretch_length < {{ var('slow_stretch_min_steps') }}
            and not is_checkpoint_step
            and ratio_to_median >= {{ var('stall_factor') }}
        ) as is_stall
    from stretch_sizes
)

select * from final
