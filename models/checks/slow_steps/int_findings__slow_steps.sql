-- Finding: stretches of slow steps (a sustained shift in step time, at least
-- slow_stretch_min_steps steps each slow_step_factor x the run's usual step time) and
-- isolated stalls (a single non-checkpoint step stall_factor x the median; an epoch row
-- slow_step_factor x, its time the sum of hundreds of steps, and low).
-- Checkpoint saves are expected to be slow and left out. Evidence: the stretch,
-- its median vs the run's, the seconds lost, and events logged around it.
-- A logged row that is the mean over a window of steps (step_time_is_interval_mean)
-- counts its excess once per step of the window; rows slowed by an evaluation run in
-- their span (the window; for a one-step row its step or the step before) are reported
-- apart (slow_steps:evaluation_windows): the time evaluation costs, medium only from
-- slow_high_share_lost, never high.
-- Stalls that recur through the run (in stall_recurrence_min_parts or more of its
-- stall_recurrence_parts equal parts) are the loop's own work (an evaluation, a save, a
-- visualisation every N steps) or a recurring stall: reported apart
-- (slow_steps:recurring_stalls), low, with what they cost. An isolated stall is medium
-- only when it cost slow_medium_share_lost of the run and stall_medium_min_seconds, and
-- the rows are steps: an epoch row's time holds its validation, its save and any pause
-- of the machine, so one slow epoch is low.
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
        rows_are_epochs,
        stall_multiple,
        stall_threshold_name,
        case when rows_are_epochs then 'epoch' else 'step' end as row_unit,
        -- how many parts of the run the stalls fall in; a window slowed by its evaluation is no recurring stall
        count(distinct recurrence_part) as parts_hit,
        (not has_evaluation_in_window and count(distinct recurrence_part) >= {{ threshold('stall_recurrence_min_parts') }})
            as is_recurring,
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
    -- rows_are_epochs and the stall bar it sets: the run's (one value a run)
    group by run_id, has_evaluation_in_window, rows_are_epochs, stall_multiple, stall_threshold_name
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
    -- isolated stalls; apart, stalls that recur through the run (the loop's own work or a
    -- recurring stall: low); and, apart, logged windows slowed by the evaluation inside them
    -- (has_evaluation_in_window): what evaluation costs, an expected cost, so medium only
    -- when it takes slow_high_share_lost of the run, never high
    select
        stalls.run_id,
        case
            when stalls.has_evaluation_in_window then 'slow_steps:evaluation_windows'
            when stalls.is_recurring then 'slow_steps:recurring_stalls'
            else 'slow_steps:stalls'
        end as finding_id,
        'slow_steps' as category,
        case
            when stalls.has_evaluation_in_window
                and {{ safe_divide('stalls.seconds_lost', 'run_time.wall_clock_sec') }} >= {{ threshold('slow_high_share_lost') }}
                then 'medium'
            when not stalls.has_evaluation_in_window and not stalls.is_recurring and not stalls.rows_are_epochs
                and {{ safe_divide('stalls.seconds_lost', 'run_time.wall_clock_sec') }} >= {{ threshold('slow_medium_share_lost') }}
                and stalls.seconds_lost >= {{ threshold('stall_medium_min_seconds') }}
                then 'medium'
            else 'low'
        end as severity,
        case
            when stalls.has_evaluation_in_window
                then {{ fmt_int('stalls.slow_steps') }} || ' logged row(s) holding an evaluation ran slow, up to '
                    || {{ fmt('stalls.stretch_median_sec / run_time.usual_step_time_sec', 1) }} || 'x the usual step time: evaluation costs about '
                    || {{ fmt('stalls.seconds_lost', 1) }} || ' s.'
            when stalls.is_recurring
                then {{ fmt_int('stalls.slow_steps') }} || ' ' || stalls.row_unit || 's stalled at >= ' || stalls.stall_multiple
                    || 'x the usual ' || stalls.row_unit || ' time all through the run (scheduled work or a recurring stall), costing '
                    || {{ fmt('stalls.seconds_lost', 1) }} || ' s.'
            else {{ fmt_int('stalls.slow_steps') }} || ' isolated ' || stalls.row_unit || '(s) stalled at >= ' || stalls.stall_multiple
                || 'x the usual ' || stalls.row_unit || ' time outside checkpoint saves, costing ' || {{ fmt('stalls.seconds_lost', 1) }} || ' s.'
        end as title,
        case
            when stalls.has_evaluation_in_window
                then 'slow rows: ' || stalls.stall_list || '; usual step time ' || {{ fmt('run_time.usual_step_time_sec', 4) }}
                    || ' s; an evaluation ran in the span each of these rows stands for (its step or the step before; for a row that is '
                    || 'the mean over the steps since the previous logged row, step_time_is_interval_mean, anywhere in that window), '
                    || 'so its time is in the row''s; each lost at least what one step at '
                    || {{ threshold('stall_factor') }} || 'x the usual step time would'
            else 'stalled ' || stalls.row_unit || 's: ' || stalls.stall_list || '; usual ' || stalls.row_unit || ' time '
                || {{ fmt('run_time.usual_step_time_sec', 4) }}
                || ' s; none is a checkpoint step (checkpoint events or multiples of checkpoint_interval), nor the first or last row'
                || case
                    when stalls.is_recurring
                        then '; they fall in ' || {{ fmt_int('stalls.parts_hit') }} || ' of the run''s ' || {{ threshold('stall_recurrence_parts') }}
                            || ' equal parts: a cost the loop pays all through the run (an evaluation, a save or a visualisation every N steps, '
                            || 'or a recurring stall), low: whether it is by design is not in the log'
                    when stalls.rows_are_epochs
                        then '; the rows are epochs: an epoch''s time is the sum of hundreds of steps, so one at '
                            || {{ threshold('slow_step_factor') }} || 'x the usual is beyond their noise (slow_step_factor, not stall_factor); '
                            || 'it holds its validation, its save and any pause of the machine, '
                            || 'so a slow epoch is low, not a diagnosed straggler'
                    when stalls.seconds_lost < {{ threshold('stall_medium_min_seconds') }}
                        then '; under ' || {{ threshold('stall_medium_min_seconds') }} || ' s lost: low'
                    else ''
                end
        end as evidence,
        stalls.first_step,
        stalls.last_step,
        stalls.slow_steps as steps_affected,
        stalls.stretch_median_sec as observed_value,
        run_time.usual_step_time_sec as expected_value,
        -- a one-step window's bar; a window of n steps stalls from median + (stall_factor - 1) x median / n
        stalls.stall_multiple * run_time.usual_step_time_sec as threshold_value,
        stalls.stall_threshold_name as threshold_name,
        stalls.seconds_lost as estimated_cost,
        'seconds' as cost_unit,
        case when stalls.has_evaluation_in_window
            then 'sum over the windows of (mean step time - the run''s usual step time) x steps in the window'
            else 'sum over the stalled steps of (step time - the run''s usual step time)'
        end as cost_method,
        {{ safe_divide('stalls.seconds_lost', 'run_time.wall_clock_sec') }} as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case
            when stalls.has_evaluation_in_window
            then 'If this share matters, evaluate less often or on fewer batches (Megatron: eval_interval, eval_iters); '
                || 'a window much slower than the other evaluation windows points at the evaluation itself (data loading, I/O).'
            when stalls.is_recurring
            then 'Find what the loop runs at those ' || stalls.row_unit || 's (evaluation, checkpoint saves, sample generation, logging); '
                || 'if it is not meant to cost this share, run it less often or asynchronously.'
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
