-- Findings: gradient norms far above the typical norm around them (grad_norm_spike_factor x
-- the median of the grad_norm_local_window logged norms before the step; the run's median
-- until grad_norm_local_min_points are known), grouped into events of consecutive outlier
-- steps. Steps already reported as clip violations, and norms logged after clipping
-- at the clip limit, are left out (clipping explains them), and events inside the
-- warmup are told apart: large early
-- norms are common, large norms after warmup often precede loss spikes (OLMo 2).
-- A burst the loss does not react to (no loss spike event within
-- grad_norm_loss_reaction_intervals logging
-- intervals) is at most medium, and low below grad_norm_high_ratio: a single large
-- gradient that the optimizer absorbs costs little.
-- A burst that starts in the first rows after a resume that did not restore the training
-- state (int_resumes_checked: an LR discontinuity or a loss jump) is a symptom of it.
with

resume_defects as (
    select
        run_id,
        resume_step,
        jump_last_step,
        case when is_lr_discontinuous
            then 'lr_schedule_mismatch:resume_' || {{ fmt_int('resume_step') }}
            else 'loss_spikes:resume_' || {{ fmt_int('resume_step') }} end as resume_finding_id
    from {{ run_ref('int_resumes_checked') }}
    where is_lr_discontinuous or is_loss_jump
),

steps as (
    select run_id, step, grad_norm from {{ run_ref('int_train_steps_resolved') }} where grad_norm is not null
),

violations as (
    -- clip violations, and norms logged after clipping that sit at the clip limit: clipping
    -- worked there, the raw norm is unknown, and the loss spike they come with is reported
    select checked.run_id, checked.step
    from {{ run_ref('int_gradients_checked') }} as checked
    inner join {{ run_ref('stg_training__config') }} as stg
        on checked.run_id = stg.run_id
    where checked.is_clip_violation
        or (checked.ratio_to_clip >= 1 - {{ threshold('grad_norm_clipped_band') }}
            and coalesce(stg.grad_norm_measured, 'after_clipping') <> 'before_clipping')
),

loss_spikes as (
    select run_id, onset_step, last_step from {{ run_ref('int_loss_spikes_flagged') }}
),

log_interval as (
    select run_id, coalesce(percentile_cont(0.5) within group (order by step - previous_step), 1) as median_interval
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

local_reference as (
    select
        run_id,
        step,
        grad_norm,
        {{ rolling_median('grad_norm', 'step', threshold('grad_norm_local_window'), 'run_id') }} as local_median,
        count(grad_norm) {{ trailing_window('step', threshold('grad_norm_local_window'), 'run_id') }} as local_points
    from steps
),

lr_max as (
    select run_id, max(learning_rate) as max_learning_rate
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

lr_peak as (
    -- without a configured warmup, the step where the logged LR first reaches its peak ends it
    select train_steps.run_id, min(train_steps.step) as lr_peak_step
    from {{ run_ref('int_train_steps_resolved') }} as train_steps
    inner join lr_max
        on train_steps.run_id = lr_max.run_id
    where train_steps.learning_rate >= {{ threshold('lr_peak_reached_share') }} * lr_max.max_learning_rate
    group by train_steps.run_id
),

config as (
    select
        stg.run_id,
        coalesce(stg.warmup_steps, lr_peak.lr_peak_step) as warmup_steps,
        case when stg.warmup_steps is null and lr_peak.lr_peak_step is not null then ' (from the logged LR peak)' else '' end
            as warmup_basis
    from {{ run_ref('stg_training__config') }} as stg
    left join lr_peak
        on stg.run_id = lr_peak.run_id
),

run_norms as (
    select
        run_id,
        percentile_cont(0.5) within group (order by grad_norm) as median_grad_norm,
        -- the middle half of the run's norms: how far apart its ordinary norms are
        percentile_cont(0.25) within group (order by grad_norm) as lower_quartile_grad_norm,
        percentile_cont(0.75) within group (order by grad_norm) as upper_quartile_grad_norm,
        count(*) as counted_steps,
        max(step) as last_step
    from steps
    group by run_id
),

run_median as (
    select
        run_id,
        median_grad_norm,
        counted_steps,
        last_step,
        {{ safe_divide('upper_quartile_grad_norm', 'lower_quartile_grad_norm') }} as quartile_ratio,
        -- norms whose middle half already spans grad_norm_heavy_tail_quartile_ratio x: heavy-tailed
        coalesce(upper_quartile_grad_norm >= {{ threshold('grad_norm_heavy_tail_quartile_ratio') }} * lower_quartile_grad_norm, false)
            as is_heavy_tailed
    from run_norms
),

referenced as (
    select
        local_reference.run_id,
        local_reference.step,
        local_reference.grad_norm,
        case when local_reference.local_points >= {{ threshold('grad_norm_local_min_points') }}
            then local_reference.local_median else run_median.median_grad_norm end as reference_grad_norm,
        local_reference.local_points
    from local_reference
    inner join run_median
        on local_reference.run_id = run_median.run_id
),

outliers as (
    select
        steps.run_id,
        steps.step,
        steps.grad_norm,
        steps.reference_grad_norm,
        {{ safe_divide('steps.grad_norm', 'steps.reference_grad_norm') }} as ratio_to_median,
        -- the first logged steps (no local history yet) count with the warmup: a fresh model's
        -- first gradients are large whatever the schedule, and an unknown warmup is no warmup
        (steps.step <= coalesce(config.warmup_steps, 0)
            or steps.local_points < {{ threshold('grad_norm_local_min_points') }}) as is_in_warmup,
        {{ previous_value('steps.step', 'steps.step', 'steps.run_id') }} as previous_outlier_step
    from referenced as steps
    inner join run_median
        on steps.run_id = run_median.run_id
    inner join config
        on steps.run_id = config.run_id
    left join violations
        on steps.run_id = violations.run_id
        and steps.step = violations.step
    where violations.step is null
        and run_median.counted_steps >= 3
        -- a spike is a multiple of a positive reference: against a median of 0 (norms logged as 0) there
        -- is no ratio, and 0 >= k x 0 is no spike
        and steps.reference_grad_norm > 0
        and steps.grad_norm >= {{ threshold('grad_norm_spike_factor') }} * steps.reference_grad_norm
),

events as (
    select
        outliers.*,
        sum(case when outliers.previous_outlier_step is null
            or outliers.step - outliers.previous_outlier_step > {{ threshold('grad_norm_burst_gap_intervals') }} * log_interval.median_interval
            then 1 else 0 end)
            over (partition by outliers.run_id order by outliers.step rows between unbounded preceding and current row) as event_number
    from outliers
    inner join log_interval
        on outliers.run_id = log_interval.run_id
),

bursts as (
    -- one row per burst after warmup; the bursts inside warmup together as one
    select
        run_id,
        case when is_in_warmup then 'warmup' else {{ fmt_int('min(step)') }} end as burst_key,
        max(case when is_in_warmup then 1 else 0 end) as is_warmup,
        count(*) as outlier_steps,
        min(step) as first_step,
        max(step) as last_step,
        max(grad_norm) as max_grad_norm,
        max(ratio_to_median) as max_ratio,
        min(reference_grad_norm) as min_reference,
        max(reference_grad_norm) as max_reference,
        {{ dbt.listagg("'step ' || " ~ fmt_int('step') ~ " || ' (' || " ~ fmt('grad_norm', 3) ~ " || ')'", "', '", "order by grad_norm desc, step") }}
            as outlier_list
    from events
    group by run_id, case when is_in_warmup then 'warmup' else {{ fmt_int('event_number') }} end, is_in_warmup
),

near_loss_spikes as (
    -- loss spike events starting or running within grad_norm_loss_reaction_intervals logging intervals of the burst
    select bursts.run_id, bursts.burst_key, count(loss_spikes.onset_step) as loss_spike_steps
    from bursts
    inner join log_interval
        on bursts.run_id = log_interval.run_id
    left join loss_spikes
        on bursts.run_id = loss_spikes.run_id
        and loss_spikes.onset_step <= bursts.last_step + {{ threshold('grad_norm_loss_reaction_intervals') }} * log_interval.median_interval
        and loss_spikes.last_step >= bursts.first_step - {{ threshold('grad_norm_loss_reaction_intervals') }} * log_interval.median_interval
    group by bursts.run_id, bursts.burst_key
),

final as (
    select
        bursts.run_id,
        'grad_norm_spikes:' || bursts.burst_key as finding_id,
        'grad_norm_spikes' as category,
        case
            when bursts.is_warmup = 1 then 'low'
            -- in a heavy-tailed series a burst the loss did not react to is within its ordinary spread, not an event
            when near_loss_spikes.loss_spike_steps = 0 and run_median.is_heavy_tailed then 'low'
            when near_loss_spikes.loss_spike_steps > 0 and bursts.max_ratio >= {{ threshold('grad_norm_high_ratio') }} then 'high'
            when near_loss_spikes.loss_spike_steps > 0 or bursts.max_ratio >= {{ threshold('grad_norm_high_ratio') }} then 'medium'
            else 'low'
        end as severity,
        'Gradient norm reached ' || {{ fmt('bursts.max_grad_norm', 3) }} || ', ' || {{ fmt('bursts.max_ratio', 1) }}
            || 'x the median ' || {{ fmt('bursts.max_reference', 3) }} || ' of the norms before it'
            || case when bursts.is_warmup = 1 then ', during warmup or the first logged steps (' || {{ fmt_int('bursts.outlier_steps') }} || ' steps).'
                when bursts.first_step = bursts.last_step then ', at step ' || {{ fmt_int('bursts.first_step') }} || '.'
                else ', at steps ' || {{ fmt_int('bursts.first_step') }} || '-' || {{ fmt_int('bursts.last_step') }} || '.' end
            as title,
        'reference: median of the ' || {{ threshold('grad_norm_local_window') }} || ' logged norms before each step ('
            || {{ fmt('bursts.min_reference', 4) }} || '-' || {{ fmt('bursts.max_reference', 4) }} || '; run median '
            || {{ fmt('run_median.median_grad_norm', 4) }} || ' over ' || {{ fmt_int('run_median.counted_steps') }}
            || ' counted steps); steps at >= ' || {{ threshold('grad_norm_spike_factor') }} || 'x it (largest first): ' || substring(bursts.outlier_list, 1, 400)
            || '; warmup: ' || coalesce({{ fmt_int('config.warmup_steps') }} || ' steps' || config.warmup_basis, 'unknown (treated as none)')
            || '; loss spike events within two logging intervals: ' || {{ fmt_int('near_loss_spikes.loss_spike_steps') }}
            || case when near_loss_spikes.loss_spike_steps = 0 and bursts.is_warmup = 0 and run_median.is_heavy_tailed
                then ' (the loss did not react, and the run''s norms are heavy-tailed: their middle half spans '
                    || {{ fmt('run_median.quartile_ratio', 0) }}
                    || 'x, so a burst against a local median is ordinary spread: low)'
                when near_loss_spikes.loss_spike_steps = 0 and bursts.is_warmup = 0
                then ' (the loss did not react, so at most medium)' else '' end
            || '; clip violations are reported separately and left out here' as evidence,
        bursts.first_step,
        bursts.last_step,
        bursts.outlier_steps as steps_affected,
        bursts.max_grad_norm as observed_value,
        run_median.median_grad_norm as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(bursts.outlier_steps as {{ type_double() }}) as estimated_cost,
        'steps' as cost_unit,
        'count of updates taken with a gradient norm far above the run''s median (a large, possibly destabilising step)'
            as cost_method,
        {{ safe_divide('bursts.outlier_steps', 'run_median.counted_steps') }} * least(1.0, ln(bursts.max_ratio) / ln(10.0))
            * case when bursts.is_warmup = 1 then 0.5 else 1.0 end as impact_score,
        resume_defects.resume_finding_id as caused_by,
        case
            when resume_defects.resume_finding_id is not null
                then 'The burst follows the resume at step ' || {{ fmt_int('resume_defects.resume_step') }}
                    || ', which did not restore the training state (see ' || resume_defects.resume_finding_id || '): fix the resume.'
            when bursts.is_warmup = 1
            then 'Large norms during warmup are common; if they are extreme, lengthen the warmup or lower the initial LR, and make sure gradient clipping is on.'
            else 'Look at the batches of this burst (repeated n-grams, very long or corrupted examples); enable or tighten gradient clipping and consider a lower LR.'
        end as recommendation
    from bursts
    inner join run_median
        on bursts.run_id = run_median.run_id
    inner join config
        on bursts.run_id = config.run_id
    left join near_loss_spikes
        on bursts.run_id = near_loss_spikes.run_id
        and bursts.burst_key = near_loss_spikes.burst_key
    left join resume_defects
        on bursts.run_id = resume_defects.run_id
        and bursts.first_step between resume_defects.resume_step and resume_defects.jump_last_step
)

select * from final
