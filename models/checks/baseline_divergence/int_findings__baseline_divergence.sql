-- Finding: a run against the baseline it names (config baseline_run_id, another run
-- of the same build), from int_runs_compared on its primary axis (tokens seen when
-- both configs give batch_size, else step). Two kinds:
--   baseline_divergence (model): the run's smoothed loss stays above the baseline's by
--     more than divergence_n_noise x the baseline's own noise for divergence_min_points
--     consecutive points; severity from the gap left at the end as a share of the
--     baseline's loss (the cost bands), low when the run came back within noise;
--   baseline_slowdown (compute): the run's smoothed step time stays at least
--     (1 + slowdown_min_share) x the baseline's for slowdown_min_points points; severity
--     from the share of the run's step time it costs (slow_*_share_lost).
-- A run built without its baseline (alone) has no comparison and no finding here.
-- A table rebuilt whole on every build (not an increment of the batch's runs):
-- a run's findings here depend on its baseline's rows.
{{ config(materialized='table') }}
with

compared as (
    select * from {{ ref('int_runs_compared') }}
    where is_primary_axis
),

divergence_findings as (
    select
        run_id,
        'baseline_divergence:' || {{ fmt_int('divergence_step') }} as finding_id,
        'baseline_divergence' as category,
        case
            when not is_departing_at_end then 'low'
            else {{ severity_name('greatest(2, ' ~ severity_rank(cost_band(safe_divide('end_loss_delta', 'end_baseline_loss_smoothed'))) ~ ')') }}
        end as severity,
        'Diverges from its baseline ' || baseline_run_id || ' at step ' || {{ fmt_int('divergence_step') }}
            || ': training loss +' || {{ fmt('divergence_loss_delta', 3) }} || ' nats above it ('
            || {{ fmt('divergence_loss_delta / divergence_noise', 1) }} || 'x the baseline''s noise), '
            || case when is_departing_at_end
                then '+' || {{ fmt('end_loss_delta', 3) }} || ' nats (' || {{ fmt_pct(safe_divide('end_loss_delta', 'end_baseline_loss_smoothed')) }}
                    || ') at step ' || {{ fmt_int('end_compared_step') }} || '.'
                else 'back within its noise by step ' || {{ fmt_int('end_compared_step') }} || '.'
            end as title,
        'aligned with ' || baseline_run_id || ' by ' || align_axis || ' (' || {{ fmt_int('compared_points') }}
            || ' points compared, smoothed over ' || {{ fmt_int(threshold('baseline_smoothing_window') + 1) }} || ' points); '
            || {{ fmt_int('points_beyond_noise') }} || ' points more than ' || {{ fmt(threshold('divergence_n_noise'), 1) }}
            || 'x the baseline''s noise above it (median noise ' || {{ fmt('median_baseline_noise', 4) }} || ' nats); the first '
            || {{ fmt_int(threshold('divergence_min_points')) }} || '+ in a row start at step ' || {{ fmt_int('divergence_step') }}
            || ' (gap ' || {{ fmt('divergence_loss_delta', 4) }} || ', noise ' || {{ fmt('divergence_noise', 4) }}
            || '), largest gap after it ' || {{ fmt('max_loss_delta_after_divergence', 4) }} || '; at step ' || {{ fmt_int('end_compared_step') }}
            || ' run ' || {{ fmt('end_loss_smoothed', 4) }} || ' vs baseline ' || {{ fmt('end_baseline_loss_smoothed', 4) }}
            || coalesce('; final val_loss ' || {{ fmt('final_val_loss', 4) }} || ' vs baseline ' || {{ fmt('final_baseline_val_loss', 4) }}
                || ' at step ' || {{ fmt_int('final_eval_step') }}, '')
            || coalesce('; LR differs (beyond ' || {{ fmt_pct(threshold('lr_relative_tolerance')) }} || ') on '
                || {{ fmt_pct('lr_differing_share') }} || ' of the compared steps, from step ' || {{ fmt_int('lr_first_differing_step') }}
                || ' (ratio ' || {{ fmt('lr_min_ratio', 3) }} || '-' || {{ fmt('lr_max_ratio', 3) }} || ')', '; same LR as the baseline')
            || coalesce('; grad norm ' || {{ fmt('grad_norm_ratio', 2) }} || 'x the baseline''s (medians)', '') as evidence,
        divergence_step as first_step,
        end_compared_step as last_step,
        end_compared_step - divergence_step + 1 as steps_affected,
        end_loss_smoothed as observed_value,
        end_baseline_loss_smoothed as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        greatest(0.0, end_loss_delta) as estimated_cost,
        'loss_excess' as cost_unit,
        'smoothed training loss of the run minus the baseline''s at the last compared point (nats)' as cost_method,
        least(1.0, greatest(0.0, {{ safe_divide('end_loss_delta', 'end_baseline_loss_smoothed') }}) / {{ threshold('cost_band_critical') }})
            * {{ safe_divide('end_compared_step - divergence_step + 1', 'last_step') }} as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Diff this run against ' || baseline_run_id || ' (config, code, data order, environment): what it changed made the loss depart at step '
            || {{ fmt_int('divergence_step') }} || '; revert it, or rerun both with another seed to confirm before the large run.' as recommendation
    from compared
    where divergence_step is not null
),

slowdown_findings as (
    select
        run_id,
        'baseline_slowdown:' || {{ fmt_int('slowdown_step') }} as finding_id,
        'baseline_slowdown' as category,
        case
            when slowdown_share_lost >= {{ threshold('slow_high_share_lost') }} then 'high'
            when slowdown_share_lost >= {{ threshold('slow_medium_share_lost') }} then 'medium'
            else 'low'
        end as severity,
        {{ fmt_pct('slowdown_ratio - 1', 0) }} || ' slower per step than its baseline ' || baseline_run_id || ' from step '
            || {{ fmt_int('slowdown_step') }} || ' (' || {{ fmt('slowdown_step_time_sec', 3) }} || ' s vs '
            || {{ fmt('slowdown_baseline_step_time_sec', 3) }} || ' s per step to step ' || {{ fmt_int('slowdown_last_step') }}
            || '), costing about ' || {{ fmt('slowdown_seconds_lost', 1) }} || ' s.' as title,
        'aligned with ' || baseline_run_id || ' by ' || align_axis || '; smoothed step time at least '
            || {{ fmt(1 + threshold('slowdown_min_share'), 2) }} || 'x the baseline''s on ' || {{ fmt_int('slowdown_points') }}
            || ' consecutive points from step ' || {{ fmt_int('slowdown_step') }} || ' to ' || {{ fmt_int('slowdown_last_step') }}
            || ' (medians ' || {{ fmt('slowdown_step_time_sec', 4) }} || ' s vs ' || {{ fmt('slowdown_baseline_step_time_sec', 4) }}
            || ' s); over the whole comparison the run''s median step time is ' || {{ fmt('step_time_ratio', 2) }}
            || 'x the baseline''s; seconds lost = steps in the stretch x the median extra time per step' as evidence,
        slowdown_step as first_step,
        slowdown_last_step as last_step,
        slowdown_last_step - slowdown_step + 1 as steps_affected,
        slowdown_step_time_sec as observed_value,
        slowdown_baseline_step_time_sec as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        slowdown_seconds_lost as estimated_cost,
        'seconds' as cost_unit,
        'steps in the slower stretch x (run median - baseline median step time over it)' as cost_method,
        least(1.0, slowdown_share_lost) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Compare the environment with ' || baseline_run_id || ' from step ' || {{ fmt_int('slowdown_step') }}
            || ': hardware and node, data loader and storage, precision, evaluation and logging frequency; at scale a slower step is paid on every step.'
            as recommendation
    from (
        select
            compared.*,
            -- the share of the run's step time the stretch cost: (1 - 1/ratio) x the stretch's share of the run's steps
            (1 - {{ safe_divide('1', 'slowdown_ratio') }}) * {{ safe_divide('slowdown_last_step - slowdown_step + 1', 'last_step') }}
                as slowdown_share_lost
        from compared
        where slowdown_step is not null
    ) as slowdowns
),

final as (
    select * from divergence_findings
    union all
    select * from slowdown_findings
)

select * from final
