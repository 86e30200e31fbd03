{#- median of expression over the current row and the `following` rows after it
    (within each partition_by group, e.g. 'run_id': one series per run) -#}
{% macro leading_median(expression, order_by, following, partition_by=none) %}
  {{ return(adapter.dispatch('leading_median', 'run_diagnosis')(expression, order_by, following, partition_by)) }}
{% endmacro %}

{#- DuckDB: the same frame read backwards (the order reversed, `following` preceding rows up to
    the current one): the same rows, so the same median, and DuckDB's trailing-frame quantile
    is about 3x faster than its leading-frame one (1M steps: 0.5 s against 1.7 s) -#}
{% macro default__leading_median(expression, order_by, following, partition_by=none) %}
  {%- set columns = [order_by] if order_by is string else order_by -%}
  quantile_cont({{ expression }}, 0.5) over ({{ window_partition_clause(partition_by) }}order by {% for column in columns %}{{ column }} desc{{ ', ' if not loop.last }}{% endfor %} rows between {{ following }} preceding and current row)
{%- endmacro %}

{% macro spark__leading_median(expression, order_by, following, partition_by=none) %}
  percentile({{ expression }}, 0.5) over ({{ window_partition_clause(partition_by) }}order by {{ order_by }} rows between current row and {{ following }} following)
{%- endmacro %}

{#- median of expression over the rows whose order_by value lies within `span` before the current
    row's (a range frame: on a sparsely logged run it holds fewer rows, never older ones),
    within each partition_by group -#}
{% macro median_over_range(expression, order_by, span, partition_by=none) %}
  {{ return(adapter.dispatch('median_over_range', 'run_diagnosis')(expression, order_by, span, partition_by)) }}
{% endmacro %}

{% macro default__median_over_range(expression, order_by, span, partition_by=none) %}
  quantile_cont({{ expression }}, 0.5) over ({{ window_partition_clause(partition_by) }}order by {{ order_by }} range between {{ span }} preceding and current row)
{%- endmacro %}

{% macro spark__median_over_range(expression, order_by, span, partition_by=none) %}
  percentile({{ expression }}, 0.5) over ({{ window_partition_clause(partition_by) }}order by {{ order_by }} range between {{ span }} preceding and current row)
{%- endmacro %}
