-- How close each main threshold check came to firing, one row per run and check
-- statistic: the run's most extreme value of what the check compares, the limit,
-- the level a healthy run sits at (reference_value: 1 for a ratio to a configured
-- value, which a healthy run reaches, 0 for an excess or a count), the margin =
-- the share of the allowed excess used, (observed - reference) / (limit - reference)
-- (1 at the limit; a check fires past it), and whether it fired. Read from the
-- checks' own measurement models (no rule is re-derived here); has_fired is tested
-- against the findings mart (tests/check_margins_agree_with_findings.sql). Counts of
-- events fire from the first one: limit 1, margin the count. docs/margins.md.
{%- set tolerance = threshold('lr_relative_tolerance') %}
{%- set statistics = [
    {'check': 'lr_above_peak', 'statistic': 'max_lr_ratio_to_peak', 'limit': '1 + ' ~ tolerance, 'reference': '1',
     'limit_name': 'lr_relative_tolerance', 'pattern': 'lr_above_peak:%'},
    {'check': 'grad_clip_violation', 'statistic': 'max_grad_norm_ratio_to_clip', 'limit': '1 + ' ~ threshold('clip_tolerance'), 'reference': '1',
     'limit_name': 'clip_tolerance', 'pattern': 'grad_clip_violation:%'},
    {'check': 'loss_spikes', 'statistic': 'max_share_of_spike_bar_excess', 'limit': '1', 'reference': '0',
     'limit_name': 'spike_n_mads', 'pattern': 'loss_spikes:%'},
    {'check': 'loss_spikes', 'statistic': 'loss_jumps_at_resume', 'limit': '1',
     'limit_name': none, 'pattern': 'loss_spikes:%'},
    {'check': 'loss_spikes', 'statistic': 'epoch_loss_jumps', 'limit': '1',
     'limit_name': none, 'pattern': 'loss_spikes:%'},
    {'check': 'slow_steps', 'statistic': 'longest_slow_run_steps', 'limit': threshold('slow_stretch_min_steps'),
     'limit_name': 'slow_stretch_min_steps', 'pattern': 'slow_steps:%'},
    {'check': 'slow_steps', 'statistic': 'worst_stall_medians_lost',
     'limit': 'coalesce(worst_stall_medians_lost.stall_limit, ' ~ threshold('stall_factor') ~ ' - 1)',
     'limit_name': 'stall_factor', 'limit_name_sql': 'coalesce(worst_stall_medians_lost.stall_limit_name, \'stall_factor\')',
     'pattern': 'slow_steps:%'},
    {'check': 'overfitting', 'statistic': 'final_rise_over_minimum', 'limit': threshold('overfit_min_relative_rise'),
     'limit_name': 'overfit_min_relative_rise', 'pattern': 'overfitting:%'},
    {'check': 'overfitting', 'statistic': 'sustained_rise_share', 'limit': '1',
     'limit_name': 'overfit_sustained_noise_multiple', 'pattern': 'overfitting:%'},
    {'check': 'overfitting', 'statistic': 'accuracy_gap_to_training', 'limit': threshold('overfit_accuracy_gap_min'),
     'limit_name': 'overfit_accuracy_gap_min', 'pattern': 'overfitting:%'},
    {'check': 'nan_loss', 'statistic': 'non_finite_steps', 'limit': '1', 'limit_name': none, 'pattern': 'nan_loss:run'},
    {'check': 'nan_loss', 'statistic': 'loss_scale_overflow_events', 'limit': '1', 'limit_name': none, 'pattern': 'nan_loss:run'},
    {'check': 'nan_loss', 'statistic': 'non_finite_eval_losses', 'limit': '1', 'limit_name': none, 'pattern': 'nan_loss:eval'},
    {'check': 'step_sequence', 'statistic': 'replayed_rows', 'limit': '1', 'limit_name': none,
     'pattern': 'step_sequence:replayed'},
    {'check': 'step_sequence', 'statistic': 'exact_duplicate_rows', 'limit': '1', 'limit_name': none,
     'pattern': 'step_sequence:exact_duplicates'},
    {'check': 'step_sequence', 'statistic': 'out_of_order_rows', 'limit': '1', 'limit_name': none,
     'pattern': 'step_sequence:out_of_order'},
] %}
with

runs as (
    -- the run spine: a run without the data a statistic needs gets a NULL value and has_fired false
    select run_id, grad_norm_measured from {{ run_ref('stg_training__config') }}
),

max_lr_ratio_to_peak as (
    select
        run_id,
        max(ratio_to_peak) as observed_value,
        max(case when is_above_peak then 1 else 0 end) as fired_flag
    from {{ run_ref('int_learning_rates_compared') }}
    group by run_id
),

max_grad_norm_ratio_to_clip as (
    -- a norm logged before clipping cannot show a violation (int_gradients_checked): no statistic then
    select
        gradients.run_id,
        max(case when coalesce(runs.grad_norm_measured, 'after_clipping') <> 'before_clipping' then gradients.ratio_to_clip end)
            as observed_value,
        max(case when gradients.is_clip_violation then 1 else 0 end) as fired_flag
    from {{ run_ref('int_gradients_checked') }} as gradients
    inner join runs
        on gradients.run_id = runs.run_id
    group by gradients.run_id
),

spike_events as (
    select run_id, count(*) as spike_events from {{ run_ref('int_loss_spikes_flagged') }} group by run_id
),

max_share_of_spike_bar_excess as (
    -- each scored step's excess over its baseline as a share of the excess its spike bar allows
    -- (the highest of its three bars, int_loss_baselines_computed): 0 on the baseline, 1 at the bar
    select
        baselines.run_id,
        max({{ safe_divide('baselines.loss - baselines.loss_baseline', 'baselines.spike_threshold_loss - baselines.loss_baseline') }})
            as observed_value,
        max(case when spike_events.spike_events > 0 then 1 else 0 end) as fired_flag
    from {{ run_ref('int_loss_baselines_computed') }} as baselines
    left join spike_events
        on baselines.run_id = spike_events.run_id
    group by baselines.run_id
),

loss_jumps_at_resume as (
    select
        run_id,
        cast(sum(case when is_loss_jump then 1 else 0 end) as {{ type_double() }}) as observed_value,
        max(case when is_loss_jump then 1 else 0 end) as fired_flag
    from {{ run_ref('int_resumes_checked') }}
    group by run_id
),

step_times as (
    select * from {{ run_ref('int_step_times_profiled') }}
),

longest_slow_run_steps as (
    select
        run_id,
        cast(max(slow_run_length) as {{ type_double() }}) as observed_value,
        max(case when is_in_slow_stretch then 1 else 0 end) as fired_flag
    from step_times
    group by run_id
),

worst_stall_medians_lost as (
    -- a stall is judged outside slow stretches, checkpoint saves and the run's first and last rows:
    -- the time a window lost, in run medians
    select
        run_id,
        max(case when not is_in_slow_stretch and not is_checkpoint_step and not is_edge_row
            then {{ safe_divide('window_excess_sec', 'usual_step_time_sec') }} end) as observed_value,
        max(case when is_stall then 1 else 0 end) as fired_flag,
        -- the run's stall bar (int_step_times_profiled: slow_step_factor for epoch rows, else stall_factor)
        max(stall_multiple) - 1 as stall_limit,
        max(stall_threshold_name) as stall_limit_name
    from step_times
    group by run_id
),

validation_rises as (
    select * from {{ run_ref('int_validation_rises_measured') }}
),

final_rise_over_minimum as (
    -- the relative rise of the last evaluation over the minimum; it fires (with the check's gates:
    -- enough evaluations after the minimum, training loss not rising, a run that learned) past the floor
    select
        run_id,
        relative_rise as observed_value,
        case when is_overfitting and not coalesce(is_sustained_mild_rise, false) then 1 else 0 end as fired_flag
    from validation_rises
),

sustained_rise_share as (
    -- a rise under the floor fires as low when the last evaluations all sit beyond the sustained bar
    select
        run_id,
        sustained_rise_share as observed_value,
        case when is_overfitting and coalesce(is_sustained_mild_rise, false) then 1 else 0 end as fired_flag
    from validation_rises
),

accuracy_gap_to_training as (
    -- an accuracy-only evaluation run: how far the held-out accuracy sits below the training
    -- accuracy the training loss guarantees (int_accuracy_gaps_measured)
    select
        run_id,
        accuracy_gap as observed_value,
        case when is_accuracy_gap then 1 else 0 end as fired_flag
    from {{ run_ref('int_accuracy_gaps_measured') }}
),

non_finite_steps as (
    select
        run_id,
        cast(sum(case when is_loss_non_finite or is_grad_norm_non_finite then 1 else 0 end) as {{ type_double() }}) as observed_value,
        max(case when is_loss_non_finite or is_grad_norm_non_finite then 1 else 0 end) as fired_flag
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

non_finite_eval_losses as (
    -- validation losses NaN/inf; nan_loss:eval fires on them only beside finite training losses
    select
        run_id,
        cast(non_finite_evals as {{ type_double() }}) as observed_value,
        case when is_flagged then 1 else 0 end as fired_flag
    from {{ run_ref('int_eval_losses_checked') }}
),

{#- events counted per run, each row one event: a run fires from its first one -#}
{%- set event_counts = {
    'loss_scale_overflow_events': (run_ref('int_events_classified'), "event_kind = 'loss_scale_overflow'"),
    'epoch_loss_jumps': (run_ref('int_epoch_loss_jumps_flagged'), '1 = 1'),
} %}
{%- for name, counted in event_counts.items() %}

{{ name }} as (
    select
        run_id,
        cast(count(*) as {{ type_double() }}) as observed_value,
        1 as fired_flag
    from {{ counted[0] }}
    where {{ counted[1] }}
    group by run_id
),
{%- endfor %}

rows_resolved as (
    select * from {{ run_ref('int_train_rows_resolved') }}
),

{%- set row_counts = {
    'replayed_rows': 'is_superseded',
    'exact_duplicate_rows': 'is_exact_duplicate',
    'out_of_order_rows': 'is_out_of_order_in_attempt and is_counted',
} %}
{%- for name, condition in row_counts.items() %}

{{ name }} as (
    select
        run_id,
        cast(sum(case when {{ condition }} then 1 else 0 end) as {{ type_double() }}) as observed_value,
        max(case when {{ condition }} then 1 else 0 end) as fired_flag
    from rows_resolved
    group by run_id
),
{%- endfor %}

measured as (
    {%- for statistic in statistics %}
    select
        runs.run_id,
        {{ sql_literal(statistic.check) }} as check_name,
        {{ sql_literal(statistic.statistic) }} as statistic_name,
        {{ sql_literal(statistic.pattern) }} as finding_id_pattern,
        {# counts of events: an absent statistic is none seen (0); a ratio without data stays NULL -#}
        {%- if statistic.limit == '1' and statistic.limit_name is none %}
        coalesce({{ statistic.statistic }}.observed_value, 0) as observed_value,
        {%- else %}
        {{ statistic.statistic }}.observed_value,
        {%- endif %}
        cast({{ statistic.limit }} as {{ type_double() }}) as threshold_value,
        cast({{ statistic.get('reference', '0') }} as {{ type_double() }}) as reference_value,
        {% if statistic.get('limit_name_sql') %}{{ statistic.limit_name_sql }}{% elif statistic.limit_name is none %}cast(null as {{ dbt.type_string() }}){% else %}{{ sql_literal(statistic.limit_name) }}{% endif %}
            as threshold_name,
        coalesce({{ statistic.statistic }}.fired_flag, 0) = 1 as has_fired
    from runs
    left join {{ statistic.statistic }}
        on runs.run_id = {{ statistic.statistic }}.run_id
    {% if not loop.last %}union all{% endif %}
    {%- endfor %}
),

margined as (
    select
        *,
        {{ safe_divide('observed_value - reference_value', 'threshold_value - reference_value') }} as margin,
        -- the check fired on the run when any statistic deciding the same findings did
        max(case when has_fired then 1 else 0 end) over (
            partition by run_id, finding_id_pattern order by statistic_name
            rows between unbounded preceding and unbounded following
        ) = 1 as has_check_fired
    from measured
),

final as (
    select
        run_id,
        check_name || ':' || statistic_name as margin_id,
        check_name,
        statistic_name,
        finding_id_pattern,
        observed_value,
        threshold_value,
        threshold_name,
        reference_value,
        margin,
        has_fired,
        has_check_fired,
        -- a near miss: the check did not fire, yet this statistic used near_miss_min_margin of the
        -- allowed excess (past 1 when the check's other conditions kept it silent)
        coalesce(not has_check_fired and margin >= {{ threshold('near_miss_min_margin') }}, false) as is_near_miss
    from margined
)

select * from final
