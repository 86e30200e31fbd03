{#- median of expression over the current row and the `following` rows after it -#}
{% macro leading_median(expression, order_by, following) %}
  {{ return(adapter.dispatch('leading_median', 'run_diagnosis')(expression, order_by, following)) }}
{% endmacro %}

{% macro default__leading_median(expression, order_by, following) %}
  quantile_cont({{ expression }}, 0.5) over (order by {{ order_by }} rows between current row and {{ following }} following)
{%- endmacro %}

{% macro spark__leading_median(expression, order_by, following) %}
  percentile({{ expression }}, 0.5) over (order by {{ order_by }} rows between current row and {{ following }} following)
{%- endmacro %}

{#- median of expression over the rows whose order_by value lies within `span` before the current
    row's (a range frame: on a sparsely logged run it holds fewer rows, never older ones) -#}
{% macro median_over_range(expression, order_by, span) %}
  {{ return(adapter.dispatch('median_over_range', 'run_diagnosis')(expression, order_by, span)) }}
{% endmacro %}

{% macro default__median_over_range(expression, order_by, span) %}
  quantile_cont({{ expression }}, 0.5) over (order by {{ order_by }} range between {{ span }} preceding and current row)
{%- endmacro %}

{% macro spark__median_over_range(expression, order_by, span) %}
  percentile({{ expression }}, 0.5) over (order by {{ order_by }} range between {{ span }} preceding and current row)
{%- endmacro %}
