-- Step times against the run's usual step time: slow steps, the stretches they form
-- (a sustained level shift, not a one-step z-score), and the steps where a
-- checkpoint was saved, which are expected to be slow and are left out. The usual
-- step time is the run's median, or, when the run has two sustained regimes (a quarter
-- of its stretches slow_step_factor x slower than another quarter), the fast one: a
-- slowdown that lasts more than half the run is still a slowdown.
-- When the config says a logged step time is the mean over the steps since the
-- previous logged row (step_time_is_interval_mean, e.g. Megatron), a row stands for
-- that window: its excess over the median counts once per step of the window, a
-- stall is a window that lost as much time as one stalled step would
-- ((stall_factor - 1) x the median: for a one-step window exactly the old rule), and
-- an evaluation run inside the window (at the previous logged step or after it) is
-- named, since its time is in the mean. A one-step row with an evaluation at its step or
-- the step before holds that evaluation's time likewise (the loop evaluates at the top of
-- an iteration, or after logging the previous one).
-- A window holding a checkpoint save (at its start step, saved after that row was logged, or
-- inside it) is a checkpoint window, expected to be slow, as a checkpoint step is.
-- The first and the last timed row of a run are never stalls: the first holds the start-up
-- (compilation, allocator and data-loader warm-up), the last the run's closing work (the
-- final save or evaluation). A step the config's checkpoint_interval does not name (or a
-- config without one) is not a checkpoint step unless an event says a checkpoint was saved.
{#- the part (0 .. @parts - 1) of its run's timed step range a step of `steps` lies in; `@run` names a
    row with first_step and step_span: the stretch (of slow_regime_chunks) that finds speed regimes,
    and the part (of stall_recurrence_parts) that tells a recurring stall from an incident -#}
{%- set part_of = "cast(floor((steps.step - @run.first_step) * @parts * 1.0 / @run.step_span) as "
    ~ dbt.type_bigint() ~ ")" %}
{%- set chunk_of = part_of | replace('@parts', threshold('slow_regime_chunks') | string) %}
{#- the multiple of the median a row stalls at: stall_factor for a step (a single step's time is noisy),
    slow_step_factor for an epoch row (the sum of hundreds of steps: their noise averages out) -#}
{%- set stall_multiple = "case when rows_are_epochs then " ~ threshold('slow_step_factor') ~ " else "
    ~ threshold('stall_factor') ~ " end" %}
with

config as (
    -- one row per run: the run spine
    select
        run_id,
        checkpoint_interval,
        coalesce(step_time_is_interval_mean, 'false') = 'true' as is_interval_mean,
        coalesce(rows_are, 'step') = 'epoch' as rows_are_epochs
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
        case when config.is_interval_mean then resolved.previous_step end as window_start_step,
        lag(resolved.step_time_sec) over (partition by resolved.run_id order by resolved.step) as previous_time_sec,
        lead(resolved.step_time_sec) over (partition by resolved.run_id order by resolved.step) as next_time_sec,
        (
            row_number() over (partition by resolved.run_id order by resolved.step) = 1
            or row_number() over (partition by resolved.run_id order by resolved.step desc) = 1
        ) as is_edge_row,
        config.rows_are_epochs
    from {{ run_ref('int_train_steps_resolved') }} as resolved
    inner join config
        on resolved.run_id = config.run_id
    where resolved.step_time_sec > 0
),

evaluations_in_windows as (
    -- rows whose time holds an evaluation: an interval window (more than one step) with one that
    -- ran after the log line of window_start_step or later, before this row's line; a one-step row
    -- with one at its step (run at the top of the iteration, nanoGPT) or at the step before (run
    -- after that row was logged, the Hugging Face Trainer). Never an epoch row: every epoch holds
    -- its validation, and a slow epoch is judged as such
    select distinct steps.run_id, steps.step
    from steps
    inner join {{ run_ref('int_evals_resolved') }} as evals
        on steps.run_id = evals.run_id
        and evals.step >= coalesce(steps.window_start_step, steps.step - 1)
        and evals.step <= case when steps.window_steps > 1 then steps.step - 1 else steps.step end
    where not steps.rows_are_epochs
),

checkpoint_events as (
    select distinct run_id, step from {{ run_ref('int_events_classified') }}
    where event_kind = 'checkpoint_saved'
),

checkpoint_rows as (
    -- rows holding a checkpoint save: at the step, or, for a row standing for a window
    -- (is_interval_mean), from window_start_step (saved after that row was logged) to the step
    select distinct steps.run_id, steps.step
    from steps
    inner join checkpoint_events
        on steps.run_id = checkpoint_events.run_id
        and checkpoint_events.step >= coalesce(steps.window_start_step, steps.step)
        and checkpoint_events.step <= steps.step
),

run_medians as (
    select
        run_id,
        percentile_cont(0.5) within group (order by step_time_sec) as median_step_time_sec,
        count(*) as timed_steps,
        min(step) as first_step,
        max(step) - min(step) + 1 as step_span
    from steps
    group by run_id
),

chunked as (
    -- each step's stretch: the run's step range cut into slow_regime_chunks equal stretches
    select
        steps.run_id,
        steps.step,
        steps.step_time_sec,
        {{ chunk_of | replace('@run', 'run_medians') }} as chunk_number
    from steps
    inner join run_medians
        on steps.run_id = run_medians.run_id
),

chunk_medians as (
    select run_id, chunk_number, percentile_cont(0.5) within group (order by step_time_sec) as chunk_median_sec
    from chunked
    group by run_id, chunk_number
),

regimes as (
    -- the sustained levels: the lower and upper quartiles of the stretches' medians
    select
        run_id,
        percentile_cont(0.25) within group (order by chunk_median_sec) as fast_level_sec,
        percentile_cont(0.75) within group (order by chunk_median_sec) as slow_level_sec
    from chunk_medians
    group by run_id
),

usual_times as (
    -- the run's usual step time: its median, unless a quarter of the run sustains a speed
    -- slow_step_factor x faster than another quarter (two regimes: the slow one is a slowdown
    -- however long it lasts, and the fast one is what the hardware does); needs at least
    -- slow_stretch_min_steps rows per stretch, or a stretch median is one noisy step
    select
        run_id,
        first_step,
        step_span,
        case when is_two_regime then least(fast_level_sec, median_step_time_sec) else median_step_time_sec end
            as usual_step_time_sec,
        median_step_time_sec,
        -- the line between the regimes: their geometric mean (a step nearer the slow level, in ratio)
        sqrt(fast_level_sec * slow_level_sec) as regime_split_sec,
        is_two_regime
    from (
        select
            config.run_id,
            run_medians.first_step,
            run_medians.step_span,
            run_medians.median_step_time_sec,
            regimes.fast_level_sec,
            regimes.slow_level_sec,
            coalesce(
                run_medians.timed_steps >= {{ threshold('slow_regime_chunks') }} * {{ threshold('slow_stretch_min_steps') }}
                and regimes.slow_level_sec >= {{ threshold('slow_step_factor') }} * regimes.fast_level_sec,
                false
            ) as is_two_regime
        from config
        left join run_medians
            on config.run_id = run_medians.run_id
        left join regimes
            on config.run_id = regimes.run_id
    ) as measured
),

slow_chunks as (
    -- in a run of two regimes, each stretch whose median is slow_step_factor x the fast regime, and
    -- whether both its neighbours are too (inside a slowdown, not at its edge)
    select
        run_id,
        chunk_number,
        is_slow_chunk,
        is_slow_chunk
            and coalesce(lag(is_slow_chunk) over (partition by run_id order by chunk_number), false)
            and coalesce(lead(is_slow_chunk) over (partition by run_id order by chunk_number), false)
            as is_inside_slowdown
    from (
        select
            chunk_medians.run_id,
            chunk_medians.chunk_number,
            chunk_medians.chunk_median_sec >= {{ threshold('slow_step_factor') }} * usual_times.usual_step_time_sec
                as is_slow_chunk
        from chunk_medians
        inner join usual_times
            on chunk_medians.run_id = usual_times.run_id
        where usual_times.is_two_regime
    ) as judged_chunks
),

flagged as (
    select
        steps.run_id,
        steps.step,
        steps.step_time_sec,
        steps.window_steps,
        steps.window_steps * (steps.step_time_sec - usual_times.usual_step_time_sec) as window_excess_sec,
        (evaluations_in_windows.step is not null) as has_evaluation_in_window,
        usual_times.usual_step_time_sec,
        {{ safe_divide('steps.step_time_sec', 'usual_times.usual_step_time_sec') }} as ratio_to_usual,
        -- a save the events name in the row's span (the step; an interval window from its start),
        -- or a multiple of checkpoint_interval there: the largest multiple up to the step lies in it
        coalesce(
            checkpoint_rows.step is not null
            or (
                config.checkpoint_interval > 0
                and floor(steps.step * 1.0 / config.checkpoint_interval) * config.checkpoint_interval
                    >= coalesce(steps.window_start_step, steps.step)
            ),
            false
        ) as is_checkpoint_step,
        steps.is_edge_row,
        steps.rows_are_epochs,
        {{ part_of | replace('@parts', threshold('stall_recurrence_parts') | string) | replace('@run', 'usual_times') }}
            as recurrence_part,
        usual_times.is_two_regime,
        usual_times.median_step_time_sec,
        -- slow: the step against the run's median; or, in a run of two regimes, every step of a slow
        -- stretch inside a slowdown (judged step by step, a slow regime near slow_step_factor would
        -- break into fragments at every noisy step), and at a slowdown's edge the steps nearer the
        -- slow regime than the fast one (its geometric mean: the fast steps of the stretch a slowdown
        -- starts in are not slow)
        (
            steps.step_time_sec >= {{ threshold('slow_step_factor') }} * usual_times.median_step_time_sec
            or coalesce(slow_chunks.is_inside_slowdown, false)
            or (
                coalesce(slow_chunks.is_slow_chunk, false)
                and (
                    steps.step_time_sec >= usual_times.regime_split_sec
                    -- one quick step between two slow ones does not end a slowdown
                    or (steps.previous_time_sec >= usual_times.regime_split_sec and steps.next_time_sec >= usual_times.regime_split_sec)
                )
            )
        ) as is_slow
    from steps
    inner join usual_times
        on steps.run_id = usual_times.run_id
    left join slow_chunks
        on steps.run_id = slow_chunks.run_id
        and usual_times.is_two_regime
        and slow_chunks.chunk_number = {{ chunk_of | replace('@run', 'usual_times') }}
    inner join config
        on steps.run_id = config.run_id
    left join checkpoint_rows
        on steps.run_id = checkpoint_rows.run_id
        and steps.step = checkpoint_rows.step
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
        usual_step_time_sec,
        ratio_to_usual,
        is_two_regime,
        is_checkpoint_step,
        is_edge_row,
        rows_are_epochs,
        -- the multiple of the median a row stalls at, and the threshold that sets it (one a run)
        {{ stall_multiple }} as stall_multiple,
        case when rows_are_epochs then 'slow_step_factor' else 'stall_factor' end as stall_threshold_name,
        recurrence_part,
        is_slow,
        -- the length of the run of consecutive slow steps this step belongs to (0 when not slow)
        case when is_slow then stretch_length else 0 end as slow_run_length,
        (is_slow and stretch_length >= {{ threshold('slow_stretch_min_steps') }}) as is_in_slow_stretch,
        case when is_slow and stretch_length >= {{ threshold('slow_stretch_min_steps') }} then stretch_first_step end
            as slow_stretch_first_step,
        -- outside a slow stretch, a window that lost what one step at stall_factor x the median
        -- loses; for a one-step window: step time >= stall_factor x the median (which is slow);
        -- an epoch row at slow_step_factor x (stall_multiple); never the run's first or last row
        -- (start-up, closing work)
        (
            not (is_slow and stretch_length >= {{ threshold('slow_stretch_min_steps') }})
            and not is_checkpoint_step
            and not is_edge_row
            and window_excess_sec >= ({{ stall_multiple }} - 1) * median_step_time_sec
        ) as is_stall
    from stretch_sizes
)

select * from final
