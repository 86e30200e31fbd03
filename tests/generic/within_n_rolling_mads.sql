{#- within_n_rolling_mads: each point of column_name stays within n_mads rolling MADs of the median
    of the `window` points before it (by sort_column, within group_by): spikes on a step axis.
    arguments: sort_column (the step axis); n_mads (threshold, default 5); window (trailing points,
    default 20; the current point is excluded); min_periods (prior points needed before a point is
    scored, 2..window, default 8); group_by (column or list, optional); take_logs (score ln(x):
    multiplicative spikes; non-positive values are skipped); direction ('both', 'up', 'down');
    min_mad (relative floor on the MAD: min_mad * |baseline|, or min_mad itself in log units,
    default 0.01); min_mad_absolute (absolute floor, for a zero baseline, default 1e-9).
    baseline = rolling median; mad = rolling median of the earlier points' absolute deviations
    from their own baselines (two passes over the same frame), raised to the floors, so a
    zero-spread series still scores a jump and nothing divides by zero; score = (x - baseline) / mad.
    NULL values and sort keys are skipped; ties on sort_column are ordered by the value.
    fails with every spike: the point, scored_value, baseline, mad, score and prior_points. -#}
{% test within_n_rolling_mads(
    model, column_name, sort_column, n_mads=5, window=20, min_periods=8, group_by=none,
    take_logs=false, direction='both', min_mad=0.01, min_mad_absolute=1e-9
) %}
{%- if direction not in ('both', 'up', 'down') -%}
  {{ exceptions.raise_compiler_error("within_n_rolling_mads: direction must be both, up or down, got " ~ direction) }}
{%- elif window is not integer or window < 2 or min_periods is not integer
    or min_periods < 2 or min_periods > window -%}
  {{ exceptions.raise_compiler_error("within_n_rolling_mads: need integers 2 <= min_periods <= window") }}
{%- elif n_mads is not number or n_mads <= 0 or min_mad < 0 or min_mad_absolute < 0 -%}
  {{ exceptions.raise_compiler_error("within_n_rolling_mads: n_mads must be > 0, the MAD floors >= 0") }}
{%- endif -%}
{%- set group_columns = [group_by] if group_by is string else (group_by or []) -%}
{%- set point_order = [sort_column, 'scored_value'] -%}

with scored_points as (

    select
        {%- for group_column in group_columns %}
        {{ group_column }},
        {%- endfor %}
        {%- if sort_column != column_name %}
        {{ sort_column }},
        {%- endif %}
        {{ column_name }},
        {%- if take_logs %}
        ln(cast({{ column_name }} as {{ type_double() }})) as scored_value
        {%- else %}
        cast({{ column_name }} as {{ type_double() }}) as scored_value
        {%- endif %}
    from {{ model }}
    where {{ column_name }} is not null
      and {{ sort_column }} is not null
      {%- if take_logs %}
      and {{ column_name }} > 0
      {%- endif %}

),

points_with_baseline as (

    select
        *,
        count(scored_value) {{ trailing_window(point_order, window, group_columns) }} as prior_points,
        {{ rolling_median('scored_value', point_order, window, group_columns) }} as baseline
    from scored_points

),

points_with_deviation as (

    select
        *,
        abs(scored_value - baseline) as absolute_deviation
    from points_with_baseline

),

points_with_spread as (

    select
        *,
        {{ rolling_median('absolute_deviation', point_order, window, group_columns) }} as rolling_mad
    from points_with_deviation

),

points_with_floored_spread as (

    select
        *,
        greatest(
            rolling_mad,
            {{ min_mad }}{% if not take_logs %} * abs(baseline){% endif %},
            {{ min_mad_absolute }}
        ) as mad
    from points_with_spread
    where prior_points >= {{ min_periods }}
      and rolling_mad is not null

),

points_with_score as (

    select
        *,
        {{ safe_divide('scored_value - baseline', 'mad') }} as score
    from points_with_floored_spread

),

spikes as (

    select * from points_with_score
    where
    {%- if direction == 'up' %}
        score > {{ n_mads }}
    {%- elif direction == 'down' %}
        score < -{{ n_mads }}
    {%- else %}
        abs(score) > {{ n_mads }}
    {%- endif %}

)

select * from spikes

{% endtest %}
