-- Finding: the logged learning rate went above the configured peak_lr.
-- Evidence: the steps, max logged LR vs peak_lr and the ratio, whether the
-- logged curve is the configured schedule rebuilt at the logged peak (right
-- shape, wrong peak), whether the ratio equals a config integer such as the
-- worker count, and how often the gradient hit the clip limit meanwhile.
with

compared as (
    select * from {{ run_ref('int_learning_rates_compared') }}
),

gradients as (
    select run_id, step, is_at_or_above_clip from {{ run_ref('int_gradients_checked') }}
),

config as (
    select run_id, peak_lr, data_parallel_workers from {{ run_ref('stg_training__config') }}
),

summary as (
    select
        compared.run_id,
        count(*) as counted_steps,
        sum(case when compared.is_above_peak then 1 else 0 end) as steps_above,
        min(case when compared.is_above_peak then compared.step end) as first_step,
        max(case when compared.is_above_peak then compared.step end) as last_step,
        max(compared.learning_rate) as max_logged_lr,
        max(compared.ratio_to_peak) as max_ratio,
        {{ stable_avg('case when compared.is_above_peak then compared.ratio_to_peak end') }} as mean_ratio_above,
        sum(case when compared.is_mismatch_at_logged_peak = false then 1 else 0 end) as steps_matching_at_logged_peak,
        count(compared.is_mismatch_at_logged_peak) as steps_comparable,
        sum(case when compared.is_above_peak and gradients.is_at_or_above_clip then 1 else 0 end)
            as clipped_steps_above
    from compared
    left join gradients
        on compared.run_id = gradients.run_id
        and compared.step = gradients.step
    group by compared.run_id
),

peak_step as (
    select compared.run_id, min(compared.step) as step_of_max
    from compared
    inner join summary
        on compared.run_id = summary.run_id
    where compared.learning_rate = summary.max_logged_lr
    group by compared.run_id
),

assessed as (
    select
        summary.*,
        peak_step.step_of_max,
        config.peak_lr,
        config.data_parallel_workers,
        {{ safe_divide('summary.steps_above', 'summary.counted_steps') }} as share_above,
        ({{ safe_divide('summary.steps_matching_at_logged_peak', 'summary.steps_comparable') }}
            >= {{ threshold('lr_shape_match_share') }}) as is_shape_right_peak_wrong,
        (
            config.data_parallel_workers > 1
            and abs(summary.max_ratio - config.data_parallel_workers) <= {{ threshold('lr_worker_ratio_tolerance') }} * config.data_parallel_workers
        ) as is_ratio_worker_count
    from summary
    left join peak_step
        on summary.run_id = peak_step.run_id
    inner join config
        on summary.run_id = config.run_id
    where summary.steps_above > 0
),

final as (
    select
        run_id,
        'lr_above_peak:run' as finding_id,
        'lr_above_peak' as category,
        case
            when max_ratio >= {{ threshold('lr_above_peak_critical_ratio') }} and share_above >= {{ threshold('lr_above_peak_critical_share') }} then 'critical'
            when max_ratio >= {{ threshold('lr_above_peak_high_ratio') }} then 'high'
            else 'medium'
        end as severity,
        'Learning rate peaked at ' || {{ fmt('max_logged_lr', 6) }} || ', ' || {{ fmt('max_ratio', 2) }}
            || 'x the configured peak_lr ' || {{ fmt('peak_lr', 6) }} || '; ' || {{ fmt_int('steps_above') }}
            || ' of ' || {{ fmt_int('counted_steps') }} || ' steps ran above it.' as title,
        'peak_lr (config) = ' || {{ fmt('peak_lr', 6) }}
            || '; max logged learning_rate = ' || {{ fmt('max_logged_lr', 6) }} || ' at step ' || {{ fmt_int('step_of_max') }}
            || '; ratio ' || {{ fmt('max_ratio', 2) }} || 'x (mean ' || {{ fmt('mean_ratio_above', 2) }} || 'x over the steps above)'
            || '; steps ' || {{ fmt_int('first_step') }} || '-' || {{ fmt_int('last_step') }} || ' above peak ('
            || {{ fmt_int('steps_above') }} || ' of ' || {{ fmt_int('counted_steps') }} || ', ' || {{ fmt_pct('share_above') }} || ')'
            || case when is_shape_right_peak_wrong
                then '; the logged curve is the configured schedule rebuilt with peak ' || {{ fmt('max_logged_lr', 6) }}
                    || ' (matches at ' || {{ fmt_int('steps_matching_at_logged_peak') }} || ' of ' || {{ fmt_int('steps_comparable') }}
                    || ' steps): the schedule shape is right, the peak is wrong'
                else '' end
            || case when is_ratio_worker_count
                then '; the ratio equals data_parallel_workers = ' || {{ fmt_int('data_parallel_workers') }}
                    || ': the LR looks multiplied by the worker count (a linear-scaling rule applied to an LR that was already global)'
                else '' end
            || '; grad_norm was at the clip limit on ' || {{ fmt_int('clipped_steps_above') }} || ' of the steps above peak'
            as evidence,
        first_step,
        last_step,
        steps_above as steps_affected,
        max_logged_lr as observed_value,
        peak_lr as expected_value,
        peak_lr * (1 + {{ threshold('lr_relative_tolerance') }}) as threshold_value,
        'lr_relative_tolerance' as threshold_name,
        share_above as estimated_cost,
        'share_of_updates' as cost_unit,
        'share of counted steps whose logged LR exceeded peak_lr x (1 + lr_relative_tolerance); every one of them took a larger update than configured'
            as cost_method,
        share_above * least(1.0, ln(max_ratio) / ln(8.0)) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Make the optimizer use the configured peak_lr ' || {{ fmt('peak_lr', 6) }}
            || case when is_ratio_worker_count
                then ' (find where the LR is multiplied by the ' || {{ fmt_int('data_parallel_workers') }} || ' workers)'
                else '' end
            || ', then confirm on a short run that the logged LR follows the configured schedule before the large run.'
            as recommendation
    from assessed
)

select * from final
