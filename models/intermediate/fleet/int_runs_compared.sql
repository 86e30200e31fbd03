-- One row per run, baseline and alignment axis (step; tokens when both configs give
-- batch_size): where the run departs from its baseline, read from int_runs_aligned.
--   divergence: a point departs when the run's smoothed loss is above the baseline's by
--     more than divergence_n_noise x the baseline's own noise scale; the run diverges at
--     the first point of the first streak of divergence_min_points consecutive departing
--     points (points where both curves are scored; a point within noise ends a streak);
--   slowdown: a point is slower when the run's smoothed step time is at least
--     (1 + slowdown_min_share) x the baseline's; the run is slower from the first point of
--     the first streak of slowdown_min_points consecutive slower points;
--   the whole comparison: step time, grad norm and LR ratios, final validation gap.
-- is_primary_axis marks the axis the detector reads: tokens when present, else step.
-- A table rebuilt whole on every build (not an increment of the batch's runs):
-- each row reads two runs (a run and its baseline).
{{ config(materialized='table') }}
with

aligned as (
    select * from {{ ref('int_runs_aligned') }}
),

comparisons as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        count(*) as aligned_points,
        count(baseline_step) as points_with_baseline,
        min(step) as first_step,
        max(step) as last_step
    from aligned
    group by run_id, baseline_run_id, align_axis
),

axes_present as (
    select run_id, baseline_run_id, max(case when align_axis = 'tokens' then 1 else 0 end) as has_tokens_axis
    from comparisons
    group by run_id, baseline_run_id
),

loss_points as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        step,
        loss_smoothed,
        baseline_loss_smoothed,
        loss_delta,
        baseline_loss_noise,
        (loss_delta > {{ threshold('divergence_n_noise') }} * baseline_loss_noise) as is_departing
    from aligned
    where loss_delta is not null and baseline_loss_noise is not null
),

loss_streaks_keyed as (
    -- gaps and islands (macros/streaks.sql): consecutive departing points share a streak_key
    select
        loss_points.*,
        {{ streak_key('is_departing', 'run_id, baseline_run_id, align_axis', 'step') }} as streak_key,
        row_number() over (
            partition by run_id, baseline_run_id, align_axis order by step desc
            rows between unbounded preceding and current row
        ) as from_end
    from loss_points
),

loss_streaks as (
    {{ streak_spans('loss_streaks_keyed', 'is_departing', 'run_id, baseline_run_id, align_axis', threshold('divergence_min_points')) }}
),

divergences as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        min(streak_first_step) as divergence_step,
        count(*) as divergence_streaks,
        sum(streak_points) as departing_points
    from loss_streaks
    group by run_id, baseline_run_id, align_axis
),

divergence_onsets as (
    -- the loss gap where the divergence starts, and the largest gap from there on
    select
        divergences.run_id,
        divergences.baseline_run_id,
        divergences.align_axis,
        max(case when loss_streaks_keyed.step = divergences.divergence_step then loss_streaks_keyed.loss_delta end)
            as divergence_loss_delta,
        max(case when loss_streaks_keyed.step = divergences.divergence_step then loss_streaks_keyed.baseline_loss_noise end)
            as divergence_noise,
        max(loss_streaks_keyed.loss_delta) as max_loss_delta_after_divergence
    from divergences
    inner join loss_streaks_keyed
        on divergences.run_id = loss_streaks_keyed.run_id
        and divergences.baseline_run_id = loss_streaks_keyed.baseline_run_id
        and divergences.align_axis = loss_streaks_keyed.align_axis
        and loss_streaks_keyed.step >= divergences.divergence_step
    group by divergences.run_id, divergences.baseline_run_id, divergences.align_axis
),

loss_ends as (
    -- the last compared point: is the run still beyond the baseline's noise at the end?
    select
        run_id,
        baseline_run_id,
        align_axis,
        step as end_compared_step,
        loss_smoothed as end_loss_smoothed,
        baseline_loss_smoothed as end_baseline_loss_smoothed,
        loss_delta as end_loss_delta,
        baseline_loss_noise as end_baseline_noise,
        is_departing as is_departing_at_end
    from loss_streaks_keyed
    where from_end = 1
),

loss_summary as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        count(*) as compared_points,
        sum(case when is_departing then 1 else 0 end) as points_beyond_noise,
        percentile_cont(0.5) within group (order by baseline_loss_noise) as median_baseline_noise
    from loss_points
    group by run_id, baseline_run_id, align_axis
),

time_points as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        step,
        step_time_sec,
        baseline_step_time_sec,
        step_time_ratio,
        (step_time_ratio >= 1 + {{ threshold('slowdown_min_share') }}) as is_slower
    from aligned
    where step_time_ratio is not null
),

time_streaks_keyed as (
    select
        time_points.*,
        {{ streak_key('is_slower', 'run_id, baseline_run_id, align_axis', 'step') }} as streak_key
    from time_points
),

time_streaks as (
    {{ streak_spans('time_streaks_keyed', 'is_slower', 'run_id, baseline_run_id, align_axis', threshold('slowdown_min_points'), [
        'percentile_cont(0.5) within group (order by step_time_sec) as streak_step_time',
        'percentile_cont(0.5) within group (order by baseline_step_time_sec) as streak_baseline_step_time',
    ]) }}
),

first_time_streaks as (
    select
        time_streaks.*,
        row_number() over (
            partition by run_id, baseline_run_id, align_axis order by streak_first_step
            rows between unbounded preceding and current row
        ) as streak_order
    from time_streaks
),

slowdowns as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        streak_first_step as slowdown_step,
        streak_last_step as slowdown_last_step,
        streak_points as slowdown_points,
        streak_step_time as slowdown_step_time_sec,
        streak_baseline_step_time as slowdown_baseline_step_time_sec,
        {{ safe_divide('streak_step_time', 'streak_baseline_step_time') }} as slowdown_ratio,
        -- seconds lost over the stretch: its steps x the median extra time per step
        (streak_last_step - streak_first_step + 1) * (streak_step_time - streak_baseline_step_time) as slowdown_seconds_lost
    from first_time_streaks
    where streak_order = 1
),

overall as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        {{ safe_divide(
            'percentile_cont(0.5) within group (order by step_time_sec)',
            'percentile_cont(0.5) within group (order by baseline_step_time_sec)') }} as step_time_ratio,
        {{ stable_sum('step_time_sec') }} as run_step_time_sec
    from aligned
    where step_time_sec is not null and baseline_step_time_sec is not null
    group by run_id, baseline_run_id, align_axis
),

grad_norms as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        {{ safe_divide(
            'percentile_cont(0.5) within group (order by grad_norm)',
            'percentile_cont(0.5) within group (order by baseline_grad_norm)') }} as grad_norm_ratio
    from aligned
    where grad_norm is not null and baseline_grad_norm is not null
    group by run_id, baseline_run_id, align_axis
),

learning_rates as (
    select
        run_id,
        baseline_run_id,
        align_axis,
        count(*) as lr_compared_points,
        {{ safe_divide(
            'sum(case when abs(learning_rate_ratio - 1) > ' ~ threshold('lr_relative_tolerance') ~ ' then 1 else 0 end)',
            'count(*)') }} as lr_differing_share,
        min(case when abs(learning_rate_ratio - 1) > {{ threshold('lr_relative_tolerance') }} then step end) as lr_first_differing_step,
        min(learning_rate_ratio) as lr_min_ratio,
        max(learning_rate_ratio) as lr_max_ratio
    from aligned
    where learning_rate_ratio is not null
    group by run_id, baseline_run_id, align_axis
),

final_evals as (
    select run_id, baseline_run_id, align_axis, step, val_loss, baseline_val_loss, val_loss_delta
    from (
        select
            aligned.*,
            row_number() over (
                partition by run_id, baseline_run_id, align_axis order by step desc
                rows between unbounded preceding and current row
            ) as from_end
        from aligned
        where val_loss_delta is not null
    ) as compared_evals
    where from_end = 1
),

final as (
    select
        comparisons.run_id,
        comparisons.baseline_run_id,
        comparisons.align_axis,
        (comparisons.align_axis = 'tokens' or axes_present.has_tokens_axis = 0) as is_primary_axis,
        comparisons.first_step,
        comparisons.last_step,
        comparisons.aligned_points,
        comparisons.points_with_baseline,
        coalesce(loss_summary.compared_points, 0) as compared_points,
        coalesce(loss_summary.points_beyond_noise, 0) as points_beyond_noise,
        loss_summary.median_baseline_noise,
        divergences.divergence_step,
        onsets.divergence_loss_delta,
        onsets.divergence_noise,
        onsets.max_loss_delta_after_divergence,
        coalesce(divergences.departing_points, 0) as departing_points,
        loss_ends.end_compared_step,
        loss_ends.end_loss_smoothed,
        loss_ends.end_baseline_loss_smoothed,
        loss_ends.end_loss_delta,
        loss_ends.end_baseline_noise,
        loss_ends.is_departing_at_end,
        final_evals.step as final_eval_step,
        final_evals.val_loss as final_val_loss,
        final_evals.baseline_val_loss as final_baseline_val_loss,
        final_evals.val_loss_delta as final_val_loss_delta,
        overall.step_time_ratio,
        overall.run_step_time_sec,
        slowdowns.slowdown_step,
        slowdowns.slowdown_last_step,
        slowdowns.slowdown_points,
        slowdowns.slowdown_step_time_sec,
        slowdowns.slowdown_baseline_step_time_sec,
        slowdowns.slowdown_ratio,
        slowdowns.slowdown_seconds_lost,
        grad_norms.grad_norm_ratio,
        coalesce(learning_rates.lr_compared_points, 0) as lr_compared_points,
        learning_rates.lr_differing_share,
        learning_rates.lr_first_differing_step,
        learning_rates.lr_min_ratio,
        learning_rates.lr_max_ratio
    from comparisons
    inner join axes_present
        on comparisons.run_id = axes_present.run_id
        and comparisons.baseline_run_id = axes_present.baseline_run_id
    {%- for cte, alias in [('loss_summary', 'loss_summary'), ('divergences', 'divergences'), ('divergence_onsets', 'onsets'),
        ('loss_ends', 'loss_ends'), ('final_evals', 'final_evals'), ('overall', 'overall'), ('slowdowns', 'slowdowns'),
        ('grad_norms', 'grad_norms'), ('learning_rates', 'learning_rates')] %}
    left join {{ cte }}{% if alias != cte %} as {{ alias }}{% endif %}
        on comparisons.run_id = {{ alias }}.run_id
        and comparisons.baseline_run_id = {{ alias }}.baseline_run_id
        and comparisons.align_axis = {{ alias }}.align_axis
    {%- endfor %}
)

select * from final
