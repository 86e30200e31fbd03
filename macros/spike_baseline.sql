{#-
  One pass of the robust loss baseline, as CTEs named <name>_*, ending in a CTE
  <name> with one row per source row: run_id, step, log_loss, the carry_columns,
  exclude_column, log_baseline, log_mad, baseline_points, is_outlier (the next pass
  reads it directly: no join back to the source). The source CTE has run_id, step,
  log_loss, exclude_column and the carry_columns; every window is per run (partition by run_id).
  The baseline of a step is the median of the log losses of the `window` steps
  before it that are not excluded (source column `exclude_column`); the spread
  is estimated from the median absolute step-to-step change of the clean log
  loss over the same steps (divided by sqrt 2, the MAD of iid noise), which a
  smooth trend (the fast fall of early training) does not inflate, unlike the
  MAD around a lagging median. An excluded step is
  judged against the clean steps before it, so a long spike cannot drag its own
  baseline up. Iterated a few times, each pass excluding what earlier passes
  flagged (baseline-excludes-anomalies, as Elementary #1589 and re_data #328 ask).
-#}
{% macro spike_baseline_pass(name, source_cte, exclude_column, carry_columns=[]) %}
{%- set window = threshold('spike_window') %}
{%- set min_mad = threshold('spike_min_mad') %}
{%- set carried %}{% for column in carry_columns %}{{ column }}, {% endfor %}{{ exclude_column }}{% endset %}
{{ name }}_clean as (
    -- the clean points in step order, each with its step-to-step change (one window pass)
    select
        run_id,
        step,
        log_loss,
        row_number() over (partition by run_id order by step) as clean_index,
        abs(log_loss - {{ previous_value('log_loss', 'step', 'run_id') }}) / sqrt(2.0) as step_change
    from {{ source_cte }}
    where not {{ exclude_column }} and log_loss is not null
),

{{ name }}_through as (
    -- stats of the `window` clean points ending at each clean point. The stats *before*
    -- clean point k are the stats *through* point k - 1, so two medians serve both uses.
    select
        run_id,
        clean_index,
        {{ rolling_median('log_loss', 'step', window - 1, partition_by='run_id', include_current_row=true) }} as center_through,
        {{ rolling_median('step_change', 'step', window - 1, partition_by='run_id', include_current_row=true) }} as spread_through,
        count(log_loss) {{ trailing_window('step', window - 1, partition_by='run_id', include_current_row=true) }} as points_through
    from {{ name }}_clean
),

{{ name }}_anchored as (
    -- the clean point whose stats judge each step: for a clean step the one before it,
    -- for any other step the last clean point before it (an excluded step is judged
    -- against the clean past, so a long spike cannot drag its own baseline up)
    select
        run_id,
        step,
        log_loss,
        {{ carried }},
        cast(sum(case when not {{ exclude_column }} and log_loss is not null then 1 else 0 end)
            over (partition by run_id order by step rows between unbounded preceding and current row) as {{ dbt.type_bigint() }})
        - case when not {{ exclude_column }} and log_loss is not null then 1 else 0 end as judge_index
    from {{ source_cte }}
),

{{ name }}_scored as (
    select
        anchored.run_id,
        anchored.step,
        anchored.log_loss,
        {%- for column in carry_columns %}
        anchored.{{ column }},
        {%- endfor %}
        anchored.{{ exclude_column }},
        through.center_through as log_baseline,
        through.spread_through as log_mad,
        coalesce(through.points_through, 0) as baseline_points
    from {{ name }}_anchored as anchored
    left join {{ name }}_through as through
        on anchored.run_id = through.run_id
        and anchored.judge_index = through.clean_index
),

{{ name }} as (
    select
        *,
        coalesce(
            baseline_points >= {{ threshold('spike_min_periods') }}
            and log_loss - log_baseline > ln(1 + {{ threshold('spike_min_relative_excess') }})
            and 0.6745 * (log_loss - log_baseline) / greatest(coalesce(log_mad, 0), {{ min_mad }})
                > {{ threshold('spike_n_mads') }},
            false
        ) as is_outlier
    from {{ name }}_scored
)
{% endmacro %}
