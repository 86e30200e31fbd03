-- Finding: a learning-rate schedule that cannot work as configured or logged.
-- Checks: the LR never anneals (the configured decay length is
-- never_anneals_decay_factor x the run or more, or the logged LR at the end is
-- still never_anneals_end_lr_share of its peak), warmup covers the whole run (or the
-- logged run never left its warmup, when that is named as the cause of a failure to
-- learn), a warmup over most of the run (low), a logged LR that never came near its configured peak,
-- min_lr above peak_lr, a logged LR that collapsed to next to nothing for the last part of the run,
-- and an LR far outside the range usual for how the run
-- was trained and its optimizer (int_learning_rates_ranged), reported when a failure to
-- learn names it as its cause. A cause is at least as severe as the symptoms it explains
-- (the learning-progress findings that name it in caused_by). Evidence: the config
-- fields and the logged LR.
with

config as (
    select run_id, schedule_type, peak_lr, min_lr, warmup_steps, decay_steps, total_steps from {{ run_ref('stg_training__config') }}
),

lr_by_step as (
    select
        run_id,
        step,
        learning_rate,
        expected_learning_rate,
        row_number() over (partition by run_id order by step desc rows between unbounded preceding and current row) as from_end,
        row_number() over (partition by run_id order by step rows between unbounded preceding and current row) as from_start,
        max(learning_rate) over (partition by run_id) as run_peak_lr
    from {{ run_ref('int_learning_rates_compared') }}
    where learning_rate is not null
),

lr_live as (
    -- the last step the logged LR was above lr_collapsed_share of its peak: after it the LR stayed at next to
    -- nothing to the end of the log
    select
        *,
        max(case when learning_rate > {{ threshold('lr_collapsed_share') }} * run_peak_lr then step end)
            over (partition by run_id) as last_live_step
    from lr_by_step
),

logged_by_run as (
    select
        run_id,
        max(learning_rate) as logged_peak_lr,
        max(case when from_end = 1 then learning_rate end) as end_lr,
        max(case when from_end = 1 then step end) as end_step,
        max(case when from_start = 1 then learning_rate end) as first_lr,
        -- the first step the logged LR reached its peak: the end of the warmup as logged
        min(case when learning_rate >= run_peak_lr then step end) as peak_step,
        count(*) as logged_steps,
        -- steps the configured schedule could be rebuilt at (lr_schedule_mismatch compares those)
        count(expected_learning_rate) as scheduled_steps,
        min(step) as first_lr_step,
        max(last_live_step) as last_live_step,
        -- the first logged step of the final stretch at next to no LR, and its LR (the highest in it)
        min(case when step > last_live_step then step end) as collapsed_from_step,
        max(case when step > last_live_step then learning_rate end) as collapsed_lr,
        count(case when step > last_live_step then 1 end) as collapsed_steps
    from lr_live
    group by run_id
),

logged as (
    -- one row per run (the run spine), 0 logged steps when the run logged no LR
    select
        config.run_id,
        logged_by_run.logged_peak_lr,
        logged_by_run.end_lr,
        logged_by_run.end_step,
        logged_by_run.peak_step,
        logged_by_run.first_lr,
        coalesce(logged_by_run.logged_steps, 0) as logged_steps,
        coalesce(logged_by_run.scheduled_steps, 0) as scheduled_steps,
        logged_by_run.first_lr_step,
        logged_by_run.last_live_step,
        logged_by_run.collapsed_from_step,
        logged_by_run.collapsed_lr,
        coalesce(logged_by_run.collapsed_steps, 0) as collapsed_steps
    from config
    left join logged_by_run
        on config.run_id = logged_by_run.run_id
),

assessed as (
    select
        config.run_id,
        config.schedule_type,
        config.peak_lr,
        config.min_lr,
        config.warmup_steps,
        config.decay_steps,
        config.total_steps,
        logged.logged_peak_lr,
        logged.end_lr,
        logged.end_step,
        logged.peak_step,
        logged.first_lr,
        logged.logged_steps,
        logged.scheduled_steps,
        logged.last_live_step,
        logged.collapsed_from_step,
        logged.collapsed_lr,
        logged.collapsed_steps,
        -- the share of the logged run (first to last logged LR) after the LR collapsed
        {{ safe_divide('logged.end_step - logged.last_live_step', 'logged.end_step - logged.first_lr_step') }} as collapsed_share,
        coalesce(config.total_steps, logged.end_step) as run_steps,
        -- the length a warmup is held against: the configured one, else the logged LR's or the training log's end
        coalesce(config.total_steps, logged.end_step, run_ends.last_train_step) as warmup_run_steps,
        -- the log stops before never_anneals_stopped_share of the configured length
        coalesce(logged.end_step < {{ threshold('never_anneals_stopped_share') }} * config.total_steps, false) as is_stopped_before_end,
        -- the logged LR reached its maximum only at its last logged step, over enough logged values to show a
        -- rise: the run ended inside its warmup
        coalesce(logged.peak_step >= logged.end_step and logged.logged_steps >= {{ threshold('warmup_unfinished_min_lr_values') }}, false)
            as is_still_warming_up,
        coalesce(config.warmup_steps, logged.peak_step) as warmup_end_step,
        {{ safe_divide('logged.end_lr', 'logged.logged_peak_lr') }} as end_share_of_peak,
        -- share of the LR drop from the peak to min_lr the run never made
        greatest(0.0, least(1.0, {{ safe_divide('logged.end_lr - coalesce(config.min_lr, 0)', 'logged.logged_peak_lr - coalesce(config.min_lr, 0)') }}))
            as missing_anneal_share
    from config
    inner join logged
        on config.run_id = logged.run_id
    left join {{ run_ref('int_run_ends_measured') }} as run_ends
        on config.run_id = run_ends.run_id
),

symptoms as (
    -- the failures to learn that name a schedule_sanity finding as their cause (int_learning_progress_measured:
    -- the verdict learning_progress reports, its finding id and severity), and the worst severity among
    -- them (the cause takes at least that severity)
    select
        run_id,
        learning_cause as cause_id,
        max({{ severity_rank('verdict_severity') }}) as symptom_rank,
        min(verdict_finding_id) as symptom_id
    from {{ run_ref('int_learning_progress_measured') }}
    where learning_cause like 'schedule_sanity:%' and verdict_finding_id is not null
    group by run_id, learning_cause
),

lr_ranges as (
    select * from {{ run_ref('int_learning_rates_ranged') }}
),

checks as (
    select
        run_id,
        'never_anneals' as check_key,
        -- high when the config asks for a decay; a constant (or undeclared) schedule may be a choice
        -- (common for fine-tunes): the evidence that it is a mistake is weaker. A log that stops before the
        -- configured end is low: the decay may be right and the run cut short (run_ended_early says so)
        case
            when is_stopped_before_end then 'low'
            when schedule_type like '%cosine%' or schedule_type like '%linear%' then 'high'
            else 'low'
        end as severity,
        'The learning rate never anneals: it ends at ' || {{ fmt_pct('end_share_of_peak') }} || ' of its peak ('
            || {{ fmt('end_lr', 6) }} || ' at step ' || {{ fmt_int('end_step') }} || ')'
            || case when is_stopped_before_end
                then ', because the run stopped at ' || {{ fmt_pct(safe_divide('end_step', 'total_steps')) }}
                    || ' of its configured ' || {{ fmt_int('total_steps') }} || ' steps: its final loss is that of an unannealed model.'
                when decay_steps >= {{ threshold('never_anneals_decay_factor') }} * run_steps
                then ', because decay_steps ' || {{ fmt_int('decay_steps') }} || ' is ' || {{ fmt(safe_divide('decay_steps', 'run_steps'), 1) }}
                    || 'x the run''s ' || {{ fmt_int('run_steps') }} || ' steps.'
                else '.' end as title,
        'decay_steps (config) = ' || {{ fmt_int('decay_steps') }} || ', total_steps = ' || {{ fmt_int('run_steps') }}
            || '; logged LR peak ' || {{ fmt('logged_peak_lr', 6) }} || ', at the last step ' || {{ fmt('end_lr', 6) }}
            || ' (' || {{ fmt_pct('end_share_of_peak') }} || ' of the peak; min_lr ' || {{ fmt('min_lr', 6) }}
            || '): the run skipped ' || {{ fmt_pct('missing_anneal_share') }} || ' of the drop from peak to min_lr'
            || case when schedule_type like '%cosine%' or schedule_type like '%linear%'
                then '; the config asks for a ' || schedule_type || ' decay'
                else '; the config declares no decay (schedule ' || coalesce(schedule_type, 'unknown') || '): low, it may be by design' end
            as evidence,
        cast(1 as {{ dbt.type_bigint() }}) as first_step,
        end_step as last_step,
        logged_steps as steps_affected,
        end_lr as observed_value,
        min_lr as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        missing_anneal_share as estimated_cost,
        'share_of_anneal' as cost_unit,
        '(LR at the end - min_lr) / (logged peak - min_lr): the share of the cooldown the run never made' as cost_method,
        missing_anneal_share as impact_score,
        'Set decay_steps to the run length (' || {{ fmt_int('run_steps') }} || ') or add a cooldown to min_lr over the last 10-20% of steps.'
            as recommendation
    from assessed
    -- the run went on past its warmup: the configured one, else the warmup as logged (the LR reached its peak
    -- before the last logged step). An unknown warmup is no reason to skip the check: a run stopped at its
    -- peak LR never annealed; a log that ends while the LR still rises (or after one step) says nothing
    where run_steps > coalesce(warmup_steps, peak_step)
        and (
            decay_steps >= {{ threshold('never_anneals_decay_factor') }} * run_steps
            -- the logged LR still high at the end: at the configured end, or (low) in a log that stopped well
            -- before it (the decay configured was never reached)
            or (end_share_of_peak >= {{ threshold('never_anneals_end_lr_share') }}
                and (end_step >= coalesce(total_steps, end_step)
                    or (is_stopped_before_end and end_step > coalesce(warmup_steps, peak_step))))
        )

    union all

    select
        run_id,
        'warmup_covers_run' as check_key,
        -- a warmup as long as the configured run cannot work: high; an LR still rising at the end of a run
        -- not stopped early: low (the warmup configured is unknown, or the log may end early); a run stopped
        -- inside its warmup is only as severe as the failure to learn it explains
        case
            -- high against a configured length or a logged LR; against the training log's end alone (no length
            -- configured, no LR logged) medium: the log may have stopped early
            when warmup_steps >= warmup_run_steps and (total_steps is not null or logged_steps > 0) then 'high'
            when warmup_steps >= warmup_run_steps then 'medium'
            when is_still_warming_up and not is_stopped_before_end then 'low'
            else 'info'
        end as severity,
        case when warmup_steps >= warmup_run_steps
            then 'Warmup (' || {{ fmt_int('warmup_steps') }} || ' steps) is as long as the run (' || {{ fmt_int('warmup_run_steps') }}
                || ' steps): the LR never reaches its peak nor decays.'
            when warmup_steps is null
            then 'The logged LR was still rising at the end of the run (step ' || {{ fmt_int('coalesce(end_step, warmup_run_steps)') }}
                || '): it never reached its peak.'
            else 'The run stopped at step ' || {{ fmt_int('coalesce(end_step, warmup_run_steps)') }} || ', inside its ' || {{ fmt_int('warmup_steps') }}
                || '-step warmup: the LR never reached its peak.' end as title,
        case when warmup_steps >= warmup_run_steps
            then 'warmup_steps (config) = ' || {{ fmt_int('warmup_steps') }}
                || case when total_steps is not null then ' >= total_steps ' when logged_steps > 0 then ' >= the last logged LR''s step '
                    else ' >= the last logged training step (no length configured, no LR logged) ' end || {{ fmt_int('warmup_run_steps') }}
            when warmup_steps is null
            then 'warmup_steps unknown; the logged LR at the last step ' || {{ fmt('end_lr', 8) }} || ' is its maximum, still rising'
            else 'warmup_steps (config) = ' || {{ fmt_int('warmup_steps') }} || ' >= the last logged step '
                || {{ fmt_int('coalesce(end_step, warmup_run_steps)') }} || coalesce(' (total_steps ' || {{ fmt_int('total_steps') }} || ')', '') end
            || '; logged LR peak ' || {{ fmt('logged_peak_lr', 6) }} || ' vs peak_lr ' || {{ fmt('peak_lr', 6) }} as evidence,
        cast(1 as {{ dbt.type_bigint() }}) as first_step,
        coalesce(end_step, warmup_run_steps) as last_step,
        logged_steps as steps_affected,
        cast(warmup_steps as {{ type_double() }}) as observed_value,
        cast(warmup_run_steps as {{ type_double() }}) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(null as {{ type_double() }}) as estimated_cost,
        'none' as cost_unit,
        'no cost estimate: the run has no stretch at the intended LR to compare with' as cost_method,
        1.0 as impact_score,
        'Set warmup_steps to a few percent of the run (e.g. ' || {{ fmt_int('greatest(1, warmup_run_steps / 20)') }} || ').' as recommendation
    from assessed
    where warmup_steps >= warmup_run_steps
        -- or the logged LR still rose at the end of a run that did not stop before its configured end (a log
        -- cut short inside a sound warmup is run_ended_early's): low, the warmup length is not known
        or (is_still_warming_up and not is_stopped_before_end)
        -- or the logged run never left its warmup, and a failure to learn names it as its cause
        or exists (
            select 1 from symptoms
            where symptoms.run_id = assessed.run_id and symptoms.cause_id = 'schedule_sanity:warmup_covers_run'
        )

    union all

    select
        run_id,
        'warmup_most_of_run' as check_key,
        -- the run does reach its peak and decay, so the schedule works, late: most of the updates ran below the
        -- peak LR and the decay is squeezed into what is left. Its cost is unknown and it may be a choice: low
        'low' as severity,
        'Warmup takes ' || {{ fmt_pct(safe_divide('warmup_end_step', 'warmup_run_steps'), 0) }} || ' of the run: the LR peaks at step '
            || {{ fmt_int('warmup_end_step') }} || ' of ' || {{ fmt_int('warmup_run_steps') }} || ', leaving '
            || {{ fmt_int('warmup_run_steps - warmup_end_step') }} || ' steps at and after its peak.' as title,
        case when warmup_steps is not null
            then 'warmup_steps (config) = ' || {{ fmt_int('warmup_steps') }} || ' of ' || {{ fmt_int('warmup_run_steps') }} || ' steps'
            else 'warmup_steps unknown; the logged LR rises from ' || {{ fmt('first_lr', 8) }} || ' to its peak ' || {{ fmt('logged_peak_lr', 8) }}
                || ' at step ' || {{ fmt_int('peak_step') }} || ' and falls to ' || {{ fmt('end_lr', 8) }} || ' by step ' || {{ fmt_int('end_step') }} end
            || '; more than ' || {{ fmt_pct(threshold('warmup_long_share'), 0) }} || ' of the run (usual warmups: a few percent of it); low: the run'
            || ' did reach its peak and decay, its cost is unknown and it may be by design' as evidence,
        cast(1 as {{ dbt.type_bigint() }}) as first_step,
        warmup_end_step as last_step,
        logged_steps as steps_affected,
        cast(warmup_end_step as {{ type_double() }}) as observed_value,
        cast(warmup_run_steps as {{ type_double() }}) as expected_value,
        {{ threshold('warmup_long_share') }} as threshold_value,
        'warmup_long_share' as threshold_name,
        cast(null as {{ type_double() }}) as estimated_cost,
        'none' as cost_unit,
        'no cost estimate: the run has no stretch with a usual warmup to compare with' as cost_method,
        0.2 as impact_score,
        'Set warmup_steps to a few percent of the run (e.g. ' || {{ fmt_int('greatest(1, warmup_run_steps / 20)') }}
            || '); a warmup sized for a longer run does not shrink with it.' as recommendation
    from assessed
    -- the warmup ends only past warmup_long_share of the run and the run goes on after it (a warmup as
    -- long as the run is warmup_covers_run's): as configured, or as logged (the logged LR rose to its
    -- peak from well below it, over enough values to show the rise, and fell after it)
    where (warmup_steps > {{ threshold('warmup_long_share') }} * warmup_run_steps and warmup_steps < warmup_run_steps)
        or (warmup_steps is null
            and peak_step > {{ threshold('warmup_long_share') }} * run_steps
            and peak_step < end_step
            and first_lr < (1 - {{ threshold('lr_relative_tolerance') }}) * logged_peak_lr
            and logged_steps >= {{ threshold('warmup_unfinished_min_lr_values') }})

    union all

    select
        run_id,
        'peak_never_reached' as check_key,
        -- a logged LR that turned (or stayed flat) far below the configured peak trained the whole run
        -- at a fraction of the LR it was set to: a warmup longer than the run's updates (YOLO's
        -- minimum warmup iterations on a tiny dataset), a scheduler stepped per epoch where it was
        -- sized in steps, an LR scaled down by a wrapper
        'medium' as severity,
        'The learning rate never came near its configured peak: it peaked at ' || {{ fmt('logged_peak_lr', 8) }}
            || ' (step ' || {{ fmt_int('peak_step') }} || '), ' || {{ fmt_pct(safe_divide('logged_peak_lr', 'peak_lr'), 1) }}
            || ' of peak_lr ' || {{ fmt('peak_lr', 6) }} || '.' as title,
        'peak_lr (config) = ' || {{ fmt('peak_lr', 6) }} || '; the logged LR ' || {{ fmt('first_lr', 8) }} || ' at its first value, '
            || {{ fmt('logged_peak_lr', 8) }} || ' at its maximum (step ' || {{ fmt_int('peak_step') }} || '), '
            || {{ fmt('end_lr', 8) }} || ' at its last (step ' || {{ fmt_int('end_step') }} || '), over ' || {{ fmt_int('logged_steps') }}
            || ' logged values: the maximum is under ' || {{ fmt_pct(threshold('lr_peak_reached_min_share'), 0) }}
            || ' of the configured peak, and the LR ' || case when end_lr < (1 - {{ threshold('lr_relative_tolerance') }}) * logged_peak_lr
                then 'fell after it' else 'stayed at it' end
            || coalesce('; warmup_steps (config) = ' || {{ fmt_int('warmup_steps') }}, '; no warmup length configured') as evidence,
        cast(1 as {{ dbt.type_bigint() }}) as first_step,
        end_step as last_step,
        logged_steps as steps_affected,
        logged_peak_lr as observed_value,
        peak_lr as expected_value,
        {{ threshold('lr_peak_reached_min_share') }} * peak_lr as threshold_value,
        'lr_peak_reached_min_share' as threshold_name,
        cast(null as {{ type_double() }}) as estimated_cost,
        'none' as cost_unit,
        'no cost estimate: the run has no stretch at its configured LR to compare with' as cost_method,
        0.5 as impact_score,
        'Check what sets the LR: a warmup longer than the run''s updates (count the optimizer steps, not the epochs), '
            || 'a scheduler stepped at another rate than it was sized for, or an LR scaled by a wrapper.' as recommendation
    from assessed
    -- the logged maximum is far under the configured peak, and reached before the last logged value
    -- (the LR fell after it, or stayed at it from the start): it was not cut off on its way up (a log
    -- stopped inside its warmup is warmup_covers_run's and run_ended_early's), and a configured warmup
    -- as long as the run is
    -- warmup_covers_run's; only a peak without the schedule around it (no type, warmup or decay to
    -- rebuild the curve at each step from): with one, lr_schedule_mismatch compares every step and
    -- names a scaled peak itself
    where logged_peak_lr < {{ threshold('lr_peak_reached_min_share') }} * peak_lr
        and scheduled_steps = 0
        and logged_steps >= {{ threshold('lr_peak_reached_min_lr_values') }}
        and peak_step < end_step
        and not coalesce(warmup_steps >= warmup_run_steps, false)

    union all

    select
        run_id,
        'lr_collapsed' as check_key,
        -- updates at under lr_collapsed_share of the peak LR move the weights by next to nothing: the compute after
        -- the collapse is spent: medium (what it cost is compute, as for a run that stopped learning, not the model
        -- the run had reached)
        'medium' as severity,
        'The learning rate collapsed to ' || {{ fmt('collapsed_lr', 8) }} || ' (' || {{ fmt_pct(safe_divide('collapsed_lr', 'logged_peak_lr'), 4) }}
            || ' of its peak ' || {{ fmt('logged_peak_lr', 8) }} || ') from step ' || {{ fmt_int('collapsed_from_step') }}
            || ' and stayed there: the last ' || {{ fmt_pct('collapsed_share', 0) }} || ' of the run changed next to nothing.' as title,
        'logged LR peak ' || {{ fmt('logged_peak_lr', 8) }} || '; above ' || {{ fmt_pct(threshold('lr_collapsed_share'), 2) }}
            || ' of it for the last time at step ' || {{ fmt_int('last_live_step') }} || ', at most ' || {{ fmt('collapsed_lr', 8) }}
            || ' on the ' || {{ fmt_int('collapsed_steps') }} || ' logged values after it, to the last (step ' || {{ fmt_int('end_step') }}
            || '): ' || {{ fmt_pct('collapsed_share', 0) }} || ' of the logged run (at least ' || {{ fmt_pct(threshold('lr_collapsed_min_share'), 0) }}
            || '); a cosine or linear decay to zero spends under 2% of a run that low'
            || coalesce('; schedule ' || schedule_type, '') as evidence,
        collapsed_from_step as first_step,
        end_step as last_step,
        collapsed_steps as steps_affected,
        collapsed_lr as observed_value,
        logged_peak_lr as expected_value,
        {{ threshold('lr_collapsed_share') }} * logged_peak_lr as threshold_value,
        'lr_collapsed_share' as threshold_name,
        collapsed_share as estimated_cost,
        'share_of_updates' as cost_unit,
        'the share of the logged run after the LR fell under lr_collapsed_share of its peak for good: updates that changed next to nothing'
            as cost_method,
        collapsed_share as impact_score,
        'Find what cut the LR: a plateau scheduler halving it again and again (set its min_lr, or stop the run when it '
            || 'stops improving), an exponential or step decay sized for a shorter run; end the run where learning stops, '
            || 'or keep the LR above a floor.' as recommendation
    from assessed
    -- the LR was above the floor once and fell under it for good, over the last lr_collapsed_min_share or more of
    -- the logged run, on enough logged values to show it
    where collapsed_share >= {{ threshold('lr_collapsed_min_share') }}
        and collapsed_steps >= {{ threshold('lr_peak_reached_min_lr_values') }}
        and logged_peak_lr > 0

    union all

    select
        run_id,
        'min_lr_above_peak' as check_key,
        'medium' as severity,
        'min_lr ' || {{ fmt('min_lr', 6) }} || ' is above peak_lr ' || {{ fmt('peak_lr', 6) }} || ': the "decay" raises the LR.' as title,
        'min_lr (config) = ' || {{ fmt('min_lr', 6) }} || ' > peak_lr = ' || {{ fmt('peak_lr', 6) }} as evidence,
        cast(null as {{ dbt.type_bigint() }}) as first_step,
        cast(null as {{ dbt.type_bigint() }}) as last_step,
        cast(0 as {{ dbt.type_bigint() }}) as steps_affected,
        min_lr as observed_value,
        peak_lr as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(null as {{ type_double() }}) as estimated_cost,
        'none' as cost_unit,
        'no cost estimate: config check' as cost_method,
        0.5 as impact_score,
        'Swap or fix min_lr and peak_lr in the config.' as recommendation
    from assessed
    where min_lr > peak_lr

    union all

    select
        lr_ranges.run_id,
        case when lr_ranges.is_far_above then 'lr_far_above_usual' else 'lr_far_below_usual' end as check_key,
        'info' as severity,
        'The learning rate ' || {{ fmt('lr_ranges.judged_lr', 8) }} || ' is '
            || {{ fmt('case when lr_ranges.is_far_above then ' ~ safe_divide('lr_ranges.judged_lr', 'lr_ranges.lr_high') ~ ' else ' ~ safe_divide('lr_ranges.lr_low', 'lr_ranges.judged_lr') ~ ' end', 0) }}
            || 'x' || case when lr_ranges.is_far_above then ' above the top of' else ' below the bottom of' end
            || ' the range usual for ' || replace(lr_ranges.regime, '_', ' ') || ' training with ' || lr_ranges.optimizer_family
            || ' (' || {{ fmt('lr_ranges.lr_low', 8) }} || ' to ' || {{ fmt('lr_ranges.lr_high', 8) }} || '): the run did not learn.' as title,
        'LR judged: ' || lr_ranges.lr_basis || ' ' || {{ fmt('lr_ranges.judged_lr', 8) }} || ' (configured peak_lr '
            || {{ fmt('lr_ranges.peak_lr', 8) }} || ', logged peak ' || {{ fmt('lr_ranges.logged_peak_lr', 8) }}
            || '); usual range for ' || replace(lr_ranges.regime, '_', ' ') || ' (how the run started against the uniform-guess level) with '
            || lr_ranges.optimizer_basis || ': ' || {{ fmt('lr_ranges.lr_low', 8) }} || ' to ' || {{ fmt('lr_ranges.lr_high', 8) }}
            || ' (' || lr_ranges.range_source || '); far outside = ' || {{ threshold('lr_usual_far_factor') }} || 'x beyond an edge'
            || '; the failure to learn it explains: ' || symptoms.symptom_id as evidence,
        cast(null as {{ dbt.type_bigint() }}) as first_step,
        cast(null as {{ dbt.type_bigint() }}) as last_step,
        cast(0 as {{ dbt.type_bigint() }}) as steps_affected,
        lr_ranges.judged_lr as observed_value,
        case when lr_ranges.is_far_above then lr_ranges.lr_high else lr_ranges.lr_low end as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(null as {{ type_double() }}) as estimated_cost,
        'none' as cost_unit,
        'no cost estimate: the run has no stretch at a usual LR to compare with' as cost_method,
        1.0 as impact_score,
        case when lr_ranges.is_far_above
            then 'Lower the LR into the usual range (' || {{ fmt('lr_ranges.lr_low', 8) }} || ' to ' || {{ fmt('lr_ranges.lr_high', 8) }}
                || '); check how the LR is computed (a scaling by batch or worker count, a wrong unit).'
            else 'Raise the LR into the usual range (' || {{ fmt('lr_ranges.lr_low', 8) }} || ' to ' || {{ fmt('lr_ranges.lr_high', 8) }}
                || '); check the scheduler is not stuck in warmup or multiplying the LR by a tiny factor.' end as recommendation
    from lr_ranges
    inner join symptoms
        on lr_ranges.run_id = symptoms.run_id
        and symptoms.cause_id = case when lr_ranges.is_far_above then 'schedule_sanity:lr_far_above_usual' else 'schedule_sanity:lr_far_below_usual' end
    where lr_ranges.is_far_above or lr_ranges.is_far_below
),

final as (
    select
        checks.run_id,
        'schedule_sanity:' || checks.check_key as finding_id,
        'schedule_sanity' as category,
        -- a cause at least as severe as the worst symptom it explains
        {{ severity_name('greatest(' ~ severity_rank('checks.severity') ~ ', coalesce(symptoms.symptom_rank, 1))') }} as severity,
        title,
        evidence,
        first_step,
        last_step,
        steps_affected,
        observed_value,
        expected_value,
        threshold_value,
        threshold_name,
        estimated_cost,
        cost_unit,
        cost_method,
        impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        recommendation
    from checks
    left join symptoms
        on checks.run_id = symptoms.run_id
        and symptoms.cause_id = 'schedule_sanity:' || checks.check_key
)

select * from final
