-- A robust, spike-free baseline of the training loss for every counted step:
-- the median of the log losses of the spike_window steps before it, with the
-- MAD as spread, recomputed over spike_passes passes, each excluding the steps
-- the earlier passes flagged (see the spike_baseline_pass macro). The first
-- spike_min_periods steps are not scored: there is no past to judge them by.
-- Each pass reads the previous pass's rows directly (no join back to the steps).
{%- set passes = threshold('spike_passes') %}
with

steps_0 as (
    select
        run_id,
        step,
        shard_id,
        loss,
        case when loss > 0 then ln(loss) end as log_loss,
        false as is_excluded_0
    from {{ run_ref('int_train_steps_resolved') }}
),
{% for pass_number in range(1, passes + 1) %}
{{ spike_baseline_pass('pass_' ~ pass_number, 'steps_' ~ (pass_number - 1), 'is_excluded_' ~ (pass_number - 1), ['shard_id', 'loss']) }},
{% if pass_number < passes %}
steps_{{ pass_number }} as (
    -- the next pass excludes what this one and the earlier ones flagged
    select
        run_id,
        step,
        shard_id,
        loss,
        log_loss,
        (is_excluded_{{ pass_number - 1 }} or is_outlier) as is_excluded_{{ pass_number }}
    from pass_{{ pass_number }}
),
{% endif %}
{% endfor %}

final as (
    select
        run_id,
        step,
        shard_id,
        loss,
        log_loss,
        log_baseline,
        log_mad,
        baseline_points,
        exp(log_baseline) as loss_baseline,
        log_loss - log_baseline as log_residual,
        0.6745 * (log_loss - log_baseline) / greatest(coalesce(log_mad, 0), {{ threshold('spike_min_mad') }}) as robust_z,
        is_outlier as is_loss_spike,
        is_excluded_{{ passes - 1 }} as was_flagged_by_earlier_pass
    from pass_{{ passes }}
),

bars as (
    -- the loss above which this step would be a spike: the highest of the three bars it must
    -- clear (the robust z of spike_baseline_pass, the relative excess, and the absolute excess
    -- of int_loss_spikes_flagged); none before spike_min_periods baseline points
    select
        final.*,
        case when baseline_points >= {{ threshold('spike_min_periods') }} then exp(log_baseline
            + {{ threshold('spike_n_mads') }} * greatest(coalesce(log_mad, 0), {{ threshold('spike_min_mad') }}) / 0.6745) end as robust_bar,
        case when baseline_points >= {{ threshold('spike_min_periods') }} then loss_baseline * (1 + {{ threshold('spike_min_relative_excess') }}) end
            as relative_bar,
        case when baseline_points >= {{ threshold('spike_min_periods') }} then loss_baseline + {{ threshold('spike_min_absolute_excess') }} end
            as absolute_bar
    from final
),

barred as (
    select
        run_id, step, shard_id, loss, log_loss, log_baseline, log_mad, baseline_points, loss_baseline, log_residual,
        robust_z, is_loss_spike, was_flagged_by_earlier_pass,
        greatest(robust_bar, relative_bar, absolute_bar) as spike_threshold_loss,
        case
            when robust_bar is null then null
            when robust_bar >= relative_bar and robust_bar >= absolute_bar then 'spike_n_mads'
            when relative_bar >= absolute_bar then 'spike_min_relative_excess'
            else 'spike_min_absolute_excess'
        end as spike_threshold_name
    from bars
)

select * from barred
