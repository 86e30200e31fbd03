-- A robust, spike-free baseline of the training loss for every counted step:
-- the median of the log losses of the spike_window steps before it, with the
-- MAD as spread, recomputed over spike_passes passes, each excluding the steps
-- the earlier passes flagged (see the spike_baseline_pass macro: a later pass recomputes
-- only the stats its new exclusions change). The first
-- spike_min_periods steps are not scored: there is no past to judge them by.
-- A table of its own, read from int_train_steps_resolved on a narrow stream (run, step, log
-- loss): the rolling medians sort only what they need; int_train_steps_measured joins it.
-- On DuckDB the passes before the last are statements of their own (the pre-hook, macros/
-- spike_baseline.sql): one query holding every pass's window state does not fit a 10M-step run
-- in 4 GB, one pass at a time does. Spark and the unit tests run the passes in this one query.
{{ config(
    pre_hook="{{ build_loss_baseline_stages() }}",
    post_hook="{{ drop_loss_baseline_stages() }}"
) }}
{%- set passes = threshold('spike_passes') %}
with

{{ loss_baseline_ctes(passes, first_pass=loss_baseline_statement_passes() + 1) }},

neighbours as (
    -- the log losses logged just before and just after each step
    select
        *,
        {{ previous_value('log_loss', 'step', 'run_id') }} as previous_log_loss,
        {{ next_value('log_loss', 'step', 'run_id') }} as next_log_loss
    from pass_{{ passes }}
),

baselines as (
    select
        run_id,
        step,
        log_loss,
        log_baseline,
        log_mad,
        baseline_points,
        exp(log_baseline) as loss_baseline,
        log_loss - log_baseline as log_residual,
        0.6745 * (log_loss - log_baseline) / greatest(coalesce(log_mad, 0), {{ threshold('spike_min_mad') }}) as robust_z,
        -- before spike_min_periods points there is no baseline; a spike there is an isolated excursion:
        -- spike_isolated_ratio times both the loss logged before it and the one after it (never the first
        -- log, whose fall to the second is the start of training, nor the last)
        is_outlier or coalesce(
            coalesce(baseline_points, 0) < {{ threshold('spike_min_periods') }}
            and log_loss - previous_log_loss >= ln({{ threshold('spike_isolated_ratio') }})
            and log_loss - next_log_loss >= ln({{ threshold('spike_isolated_ratio') }}),
            false
        ) as is_loss_spike,
        is_excluded_{{ passes - 1 }} as was_flagged_by_earlier_pass
    from neighbours
),

bars as (
    -- the loss above which this step would be a spike: the highest of the three bars it must
    -- clear (the robust z of spike_baseline_pass, the relative excess, and the absolute excess
    -- of int_loss_spikes_flagged); none before spike_min_periods baseline points
    select
        baselines.*,
        case when baseline_points >= {{ threshold('spike_min_periods') }} then exp(log_baseline
            + {{ threshold('spike_n_mads') }} * greatest(coalesce(log_mad, 0), {{ threshold('spike_min_mad') }}) / 0.6745) end as robust_bar,
        case when baseline_points >= {{ threshold('spike_min_periods') }} then loss_baseline * (1 + {{ threshold('spike_min_relative_excess') }}) end
            as relative_bar,
        case when baseline_points >= {{ threshold('spike_min_periods') }} then loss_baseline + {{ threshold('spike_min_absolute_excess') }} end
            as absolute_bar
    from baselines
),

final as (
    select
        resolved.run_id,
        resolved.step,
        resolved.shard_id,
        resolved.loss,
        bars.log_loss,
        bars.log_baseline,
        bars.log_mad,
        bars.baseline_points,
        bars.loss_baseline,
        bars.log_residual,
        bars.robust_z,
        bars.is_loss_spike,
        bars.was_flagged_by_earlier_pass,
        greatest(bars.robust_bar, bars.relative_bar, bars.absolute_bar) as spike_threshold_loss,
        case
            when bars.robust_bar is null then null
            when bars.robust_bar >= bars.relative_bar and bars.robust_bar >= bars.absolute_bar then 'spike_n_mads'
            when bars.relative_bar >= bars.absolute_bar then 'spike_min_relative_excess'
            else 'spike_min_absolute_excess'
        end as spike_threshold_name
    from resolved
    left join bars
        on resolved.run_id = bars.run_id
        and resolved.step = bars.step
)

select * from final
