-- A robust, spike-free baseline of the training loss for every counted step:
-- the median of the log losses of the spike_window steps before it, with the
-- MAD as spread, recomputed over spike_passes passes, each excluding the steps
-- the earlier passes flagged (see the spike_baseline_pass macro). The first
-- spike_min_periods steps are not scored: there is no past to judge them by.
{%- set passes = var('spike_passes') %}
with

steps as (
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
{{ spike_baseline_pass('pass_' ~ pass_number, 'steps_' ~ (pass_number - 1) if pass_number > 1 else 'steps', 'is_excluded_' ~ (pass_number - 1)) }},

steps_{{ pass_number }} as (
    select
        previous.*,
        (previous.is_excluded_{{ pass_number - 1 }} or current_pass.is_outlier) as is_excluded_{{ pass_number }},
        current_pass.log_baseline as log_baseline_{{ pass_number }},
        current_pass.log_mad as log_mad_{{ pass_number }},
        current_pass.baseline_points as baseline_points_{{ pass_number }},
        current_pass.is_outlier as is_outlier_{{ pass_number }}
    from {{ 'steps_' ~ (pass_number - 1) if pass_number > 1 else 'steps' }} as previous
    inner join pass_{{ pass_number }} as current_pass
        on previous.run_id = current_pass.run_id
        and previous.step = current_pass.step
),
{% endfor %}

final as (
    select
        run_id,
        step,
        shard_id,
        loss,
        log_loss,
        log_baseline_{{ passes }} as log_baseline,
        log_mad_{{ passes }} as log_mad,
        baseline_points_{{ passes }} as baseline_points,
        exp(log_baseline_{{ passes }}) as loss_baseline,
        log_loss - log_baseline_{{ passes }} as log_residual,
        0.6745 * (log_loss - log_baseline_{{ passes }})
            / greatest(coalesce(log_mad_{{ passes }}, 0), {{ var('spike_min_mad') }}) as robust_z,
        is_outlier_{{ passes }} as is_loss_spike,
        is_excluded_{{ passes - 1 }} as was_flagged_by_earlier_pass
    from steps_{{ passes }}
)

select * from final
