-- Findings: gradient norms far above the typical norm around them (grad_norm_spike_factor x
-- the median of the grad_norm_local_window logged norms before the step; the run's median
-- until grad_norm_local_min_points are known), grouped into events of consecutive outlier
-- steps. Steps already reported as clip violations, and norms logged after clipping
-- at the clip limit, are left out (clipping explains them), and events inside the
-- warmup are told apart: large early
-- norms are common, large norms after warmup often precede loss spikes (OLMo 2).
-- A burst the loss does not react to (no loss spike event within two logging
-- intervals) is at most medium, and low below grad_norm_high_ratio: a single large
-- gradient that the optimizer absorbs costs little.
with

steps as (
    select step, grad_norm from {{ ref('int_train_steps_resolved') }} where grad_norm is not null
),

violations as (
    -- clip violations, and norms logged after clipping that sit at the clip limit: clipping
    -- worked there, the raw norm is unknown, and the loss spike they come with is reported
    select checked.step
    from {{ ref('int_gradients_checked') }} as checked
    cross join {{ ref('stg_training__config') }} as stg
    where checked.is_clip_violation
        or (checked.ratio_to_clip >= 1 - {{ var('grad_norm_clipped_band') }}
            and coalesce(stg.grad_norm_measured, 'after_clipping') <> 'before_clipping')
),

loss_spikes as (
    select onset_step, last_step from {{ ref('int_loss_spikes_flagged') }}
),

log_interval as (
    select coalesce(percentile_cont(0.5) within group (order by step - previous_step), 1) as median_interval
    from {{ ref('int_train_steps_resolved') }}
),

local_reference as (
    select
        step,
        grad_norm,
        {{ rolling_median('grad_norm', 'step', var('grad_norm_local_window')) }} as local_median,
        count(grad_norm) {{ trailing_window('step', var('grad_norm_local_window')) }} as local_points
    from steps
),

lr_peak as (
    -- without a configured warmup, the step where the logged LR first reaches its peak ends it
    select min(step) as lr_peak_step
    from {{ ref('int_train_steps_resolved') }}
    where learning_rate >= 0.99 * (select max(learning_rate) from {{ ref('int_train_steps_resolved') }})
),

config as (
    select
        coalesce(stg.warmup_steps, lr_peak.lr_peak_step) as warmup_steps,
        case when stg.warmup_steps is null and lr_peak.lr_peak_step is not null then ' (from the logged LR peak)' else '' end
            as warmup_basis
    from {{ ref('stg_training__config') }} as stg
    cross join lr_peak
),

run_median as (
    select
        percentile_cont(0.5) within group (order by grad_norm) as median_grad_norm,
        count(*) as counted_steps,
        max(step) as last_step
    from steps
),

referenced as (
    select
        local_reference.step,
        local_reference.grad_norm,
        case when local_reference.local_points >= {{ var('grad_norm_local_min_points') }}
            then local_reference.local_median else run_median.median_grad_norm end as reference_grad_norm,
        local_reference.local_points
    from local_reference
    cross join run_median
),

outliers as (
    select
        steps.step,
        steps.grad_norm,
        steps.reference_grad_norm,
        {{ safe_divide('steps.grad_norm', 'steps.reference_grad_norm') }} as ratio_to_median,
        -- the first logged steps (no local history yet) count with the warmup: a fresh model's
        -- first gradients are large whatever the schedule, and an unknown warmup is no warmup
        (steps.step <= coalesce(config.warmup_steps, 0)
            or steps.local_points < {{ var('grad_norm_local_min_points') }}) as is_in_warmup,
        {{ previous_value('steps.step', 'steps.step') }} as previous_outlier_step
    from referenced as steps
    cross join run_median
    cross join config
    left join violations
        on steps.step = violations.step
    where violations.step is null
        and run_median.counted_steps >= 3
        and steps.grad_norm >= {{ var('grad_norm_spike_factor') }} * steps.reference_grad_norm
),

events as (
    select
        *,
        sum(case when previous_outlier_step is null or step - previous_outlier_step > 2 * (
            select median_interval from log_interval
        ) then 1 else 0 end) over (order by step rows between unbounded preceding and current row) as event_number
    from outliers
),

bursts as (
    -- one row per burst after warmup; the bursts inside warmup together as one
    select
        case when is_in_warmup then 'warmup' else {{ fmt_int('min(step)') }} end as burst_key,
        max(case when is_in_warmup then 1 else 0 end) as is_warmup,
        count(*) as outlier_steps,
        min(step) as first_step,
        max(step) as last_step,
        max(grad_norm) as max_grad_norm,
        max(ratio_to_median) as max_ratio,
        min(reference_grad_norm) as min_reference,
        max(reference_grad_norm) as max_reference,
        {{ dbt.listagg("'step ' || " ~ fmt_int('step') ~ " || ' (' || " ~ fmt('grad_norm', 3) ~ " || ')'", "', '", "order by grad_norm desc") }}
            as outlier_list
    from events
    group by case when is_in_warmup then 'warmup' else {{ fmt_int('event_number') }} end, is_in_warmup
),

near_loss_spikes as (
    -- loss spike events starting or running within two logging intervals of the burst
    select bursts.burst_key, count(loss_spikes.onset_step) as loss_spike_steps
    from bursts
    cross join log_interval
    left join loss_spikes
        on loss_spikes.onset_step <= bursts.last_step + 2 * log_interval.median_interval
        and loss_spikes.last_step >= bursts.first_step - 2 * log_interval.median_interval
    group by bursts.burst_key
),

final as (
    select
        'grad_norm_spikes:' || bursts.burst_key as finding_id,
        'grad_norm_spikes' as category,
        case
            when bursts.is_warmup = 1 then 'low'
            when near_loss_spikes.loss_spike_steps > 0 and bursts.max_ratio >= {{ var('grad_norm_high_ratio') }} then 'high'
            when near_loss_spikes.loss_spike_steps > 0 or bursts.max_ratio >= {{ var('grad_norm_high_ratio') }} then 'medium'
            else 'low'
        end as severity,
        'Gradient norm reached ' || {{ fmt('bursts.max_grad_norm', 3) }} || ', ' || {{ fmt('bursts.max_ratio', 1) }}
            || 'x the median ' || {{ fmt('bursts.max_reference', 3) }} || ' of the norms before it'
            || case when bursts.is_warmup = 1 then ', during warmup or the first logged steps (' || {{ fmt_int('bursts.outlier_steps') }} || ' steps).'
                when bursts.first_step = bursts.last_step then ', at step ' || {{ fmt_int('bursts.first_step') }} || '.'
                else ', at steps ' || {{ fmt_int('bursts.first_step') }} || '-' || {{ fmt_int('bursts.last_step') }} || '.' end
            as title,
        'reference: median of the ' || {{ var('grad_norm_local_window') }} || ' logged norms before each step ('
            || {{ fmt('bursts.min_reference', 4) }} || '-' || {{ fmt('bursts.max_reference', 4) }} || '; run median '
            || {{ fmt('run_median.median_grad_norm', 4) }} || ' over ' || {{ fmt_int('run_median.counted_steps') }}
            || ' counted steps); steps at >= ' || {{ var('grad_norm_spike_factor') }} || 'x it (largest first): ' || substring(bursts.outlier_list, 1, 400)
            || '; warmup: ' || coalesce({{ fmt_int('config.warmup_steps') }} || ' steps' || config.warmup_basis, 'unknown (treated as none)')
            || '; loss spike events within two logging intervals: ' || {{ fmt_int('near_loss_spikes.loss_spike_steps') }}
            || case when near_loss_spikes.loss_spike_steps = 0 and bursts.is_warmup = 0
                then ' (the loss did not react, so at most medium)' else '' end
            || '; clip violations are reported separately and left out here' as evidence,
        bursts.first_step,
        bursts.last_step,
        bursts.outlier_steps as steps_affected,
        bursts.max_grad_norm as observed_value,
        run_median.median_grad_norm as expected_value,
        cast(bursts.outlier_steps as {{ type_double() }}) as estimated_cost,
        'steps' as cost_unit,
        'count of updates taken with a gradient norm far above the run''s median (a large, possibly destabilising step)'
            as cost_method,
        {{ safe_divide('bursts.outlier_steps', 'run_median.counted_steps') }} * least(1.0, ln(bursts.max_ratio) / ln(10.0))
            * case when bursts.is_warmup = 1 then 0.5 else 1.0 end as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when bursts.is_warmup = 1
            then 'Large norms during warmup are common; if they are extreme, lengthen the warmup or lower the initial LR, and make sure gradient clipping is on.'
            else 'Look at the batches of this burst (repeated n-grams, very long or corrupted examples); enable or tighten gradient clipping and consider a lower LR.'
        end as recommendation
    from bursts
    cross join run_median
    cross join config
    left join near_loss_spikes
        on bursts.burst_key = near_loss_spikes.burst_key
)

select * from final
