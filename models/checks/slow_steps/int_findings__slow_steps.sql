-- Finding: stretches of slow steps (a sustained shift in step time, at least
-- slow_stretch_min_steps steps each slow_step_factor x the run's usual step time) and
-- isolated stalls (a single non-checkpoint step stall_factor x the median).
-- Checkpoint saves are expected to be slow and left out. Evidence: the stretch,
-- its median vs the run's, the seconds lost, and events logged around it.
-- A logged row that is the mean over a window of steps (step_time_is_interval_mean)
-- counts its excess once per step of the window; such windows slowed by an
-- evaluation run inside them are reported apart (slow_steps:evaluation_windows): the
-- time evaluation costs, medium only from slow_high_share_lost, never high.
with

profiled as (
    select * from {{ run_ref('int_step_times_profiled') }}
),

events as (
    select run_id, step, event_text from {{ run_ref('int_events_classified') }}
),

run_time as (
    select run_id, {{ stable_sum('step_time_sec * window_steps') }} as wall_clock_sec, max(usual_step_time_sec) as usual_step_time_sec
    from profiled
    group by run_id
),

stretches as (
    select
        run_id,
        slow_stretch_first_step as first_step,
        max(step) as last_step,
        count(*) as slow_steps,
        percentile_cont(0.5) within group (order by step_time_sec) as stretch_median_sec,
        {{ stable_sum('window_excess_sec') }} as seconds_lost,
        max(case when is_two_regime then 1 else 0 end) = 1 as is_two_regime
    from profiled
    where is_in_slow_stretch
    group by run_id, slow_stretch_first_step
),

stretch_events as (
    select
        stretches.run_id,
        stretches.first_step,
        {{ dbt.listagg("'step ' || " ~ fmt_int('events.step') ~ " || ': ' || events.event_text", "'; '", "order by events.step, events.event_text") }}
            as event_list
    from stretches
    inner join events
        on stretches.run_id = events.run_id
        and events.step between stretches.first_step - 1 and stretches.last_step + 1
    group by stretches.run_id, stretches.first_step
),

stalls as (
    select
        run_id,
        has_evaluation_in_window,
        min(step) as first_step,
        max(step) as last_step,
        count(*) as slow_steps,
        max(step_time_sec) as stretch_median_sec,
        {{ stable_sum('window_excess_sec') }} as seconds_lost,
        {{ dbt.listagg("'step ' || " ~ fmt_int('step') ~ " || ' (' || " ~ fmt('step_time_sec', 3) ~ " || ' s'"
            ~ " || case when window_steps > 1 then ' mean over ' || " ~ fmt_int('window_steps') ~ " || ' steps' else '' end || ')'",
            "', '", "order by step") }}
            as stall_list
    from profiled
    where is_stall
    group by run_id, has_evaluation_in_window
    having count(*) > 0
),

stretch_findings as (
    select
        stretches.run_id,
        'slow_steps:' || {{ fmt_int('stretches.first_step') }} as finding_id,
        'slow_steps' as category,
        case
            when {{ safe_divide('stretches.seconds_lost', 'run_time.wall_clock_sec') }} >= {{ threshold('slow_high_share_lost') }} then 'high'
            when {{ safe_divide('stretches.seconds_lost', 'run_time.wall_clock_sec') }} >= {{ threshold('slow_medium_share_lost') }} then 'medium'
            else 'low'
        end as severity,
        'Steps ' || {{ fmt_int('stretches.first_step') }} || '-' || {{ fmt_int('stretches.last_step') }} || ' ran '
            || {{ fmt('stretches.stretch_median_sec / run_time.usual_step_time_sec', 1) }} || 'x slower than usual ('
            || {{ fmt('stretches.stretch_median_sec', 3) }} || ' s vs ' || {{ fmt('run_time.usual_step_time_sec', 3) }}
            -- the seconds only: the share of the run is the cost's (compute_share_lost), one percentage per cost
            || ' s), costing ' || {{ fmt('stretches.seconds_lost', 1) }} || ' s.' as title,
        {{ fmt_int('stretches.slow_steps') }} || ' consecutive steps at >= ' || {{ threshold('slow_step_factor') }}
            || case when stretches.is_two_regime
                then 'x the run''s median step time, or in a stretch of the run (one of ' || {{ threshold('slow_regime_chunks') }}
                    || ') whose median is that multiple of the fast regime: the run has a fast and a slow regime'
                else 'x the run''s median step time' end
            || '; median in the stretch ' || {{ fmt('stretches.stretch_median_sec', 4) }}
            || ' s vs usual ' || {{ fmt('run_time.usual_step_time_sec', 4) }} || ' s; seconds lost (sum of excess over the usual step time) '
            || {{ fmt('stretches.seconds_lost', 2) }} || ' of ' || {{ fmt('run_time.wall_clock_sec', 1) }} || ' s of logged step time'
            || '; events around it: ' || coalesce(stretch_events.event_list, 'none (no checkpoint save, restart or crash explains it)')
            as evidence,
        stretches.first_step,
        stretches.last_step,
        stretches.slow_steps as steps_affected,
        stretches.stretch_median_sec as observed_value,
        run_time.usual_step_time_sec as expected_value,
        {{ threshold('slow_step_factor') }} * run_time.usual_step_time_sec as threshold_value,
        'slow_step_factor' as threshold_name,
        stretches.seconds_lost as estimated_cost,
        'seconds' as cost_unit,
        'sum over the stretch of (step time - the run''s usual step time)' as cost_method,
        {{ safe_divide('stretches.seconds_lost', 'run_time.wall_clock_sec') }} as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Find the straggler: per-rank step times, GPU clocks and thermals, data-loader and storage latency for steps '
            || {{ fmt_int('stretches.first_step') }} || '-' || {{ fmt_int('stretches.last_step') }}
            || '; at scale one slow rank sets the pace of all of them.' as recommendation
    from stretches
    inner join run_time
        on stretches.run_id = run_time.run_id
    left join stretch_events
        on stretches.run_id = stretch_events.run_id
        and stretches.first_step = stretch_events.first_step
),

stall_findings as (
    -- isolated stalls; and, apart, logged windows slowed by the evaluation inside them
    -- (has_evaluation_in_window): what evaluation costs, an expected cost, so medium only
    -- when it takes slow_high_share_lost of the run, never high
    select
        stalls.run_id,
        case when stalls.has_evaluation_in_window then 'slow_steps:evaluation_windows' else 'slow_steps:stalls' end
            as finding_id,
        'slow_steps' as category,
        case
            when {{ safe_divide('stalls.seconds_lost', 'run_time.wall_clock_sec') }}
                >= case when stalls.has_evaluation_in_window then {{ threshold('slow_high_share_lost') }} else {{ threshold('slow_medium_share_lost') }} end
                then 'medium'
            else 'low'
        end as severity,
        case when stalls.has_evaluation_in_window
            then {{ fmt_int('stalls.slow_steps') }} || ' logged window(s) holding an evaluation ran slow, up to '
                || {{ fmt('stalls.stretch_median_sec / run_time.usual_step_time_sec', 1) }} || 'x the usual step time: evaluation costs about '
                || {{ fmt('stalls.seconds_lost', 1) }} || ' s.'
            else {{ fmt_int('stalls.slow_steps') }} || ' isolated step(s) stalled at >= ' || {{ threshold('stall_factor') }}
                || 'x the usual step time outside checkpoint saves, costing ' || {{ fmt('stalls.seconds_lost', 1) }} || ' s.'
        end as title,
        case when stalls.has_evaluation_in_window
            then 'slow windows: ' || stalls.stall_list || '; usual step time ' || {{ fmt('run_time.usual_step_time_sec', 4) }}
                || ' s; each logged step time is the mean over the steps since the previous logged row (step_time_is_interval_mean), '
                || 'and an evaluation ran inside each of these windows, so its time is in the mean; each window lost at least what one step at '
                || {{ threshold('stall_factor') }} || 'x the usual step time would'
            else 'stalled steps: ' || stalls.stall_list || '; usual step time ' || {{ fmt('run_time.usual_step_time_sec', 4) }}
                || ' s; none is a checkpoint step (checkpoint events or multiples of checkpoint_interval)'
        end as evidence,
        stalls.first_step,
        stalls.last_step,
        stalls.slow_steps as steps_affected,
        stalls.stretch_median_sec as observed_value,
        run_time.usual_step_time_sec as expected_value,
        -- a one-step window's bar; a window of n steps stalls from median + (stall_factor - 1) x median / n
        {{ threshold('stall_factor') }} * run_time.usual_step_time_sec as threshold_value,
        'stall_factor' as threshold_name,
        stalls.seconds_lost as estimated_cost,
        'seconds' as cost_unit,
        case when stalls.has_evaluation_in_window
            then 'sum over the windows of (mean step time - the run''s usual step time) x steps in the window'
            else 'sum over the stalled steps of (step time - the run''s usual step time)'
        end as cost_method,
        {{ safe_divide('stalls.seconds_lost', 'run_time.wall_clock_sec') }} as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when stalls.has_evaluation_in_window
            then 'If this share matters, evaluate less often or on fewer batches (Megatron: eval_interval, eval_iters); '
                || 'a window much slower than the other evaluation windows points at the evaluation itself (data loading, I/O).'
            else 'Check what ran at those steps (evaluation, logging, garbage collection, I/O); move it off the training loop or make it asynchronous.'
        end as recommendation
    from stalls
    inner join run_time
        on stalls.run_id = run_time.run_id
),

final as (
    select * from stretch_findings
    union all
    select * from stall_findings
)

select * from final
