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
