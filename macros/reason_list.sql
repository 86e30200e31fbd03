{#- '; '-joined texts of the conditions that hold, or NULL when none does.
    parts: list of (condition SQL, text) pairs. -#}
{% macro reason_list(parts) -%}
    nullif({% for condition, text in parts %}case when {{ condition }} then '{{ text }}; ' else '' end{% if not loop.last %} || {% endif %}{% endfor %}, '')
{%- endmacro %}

{#- a double rounded to 9 decimals first: a sum's last bits depend on the order rows are read
    in (one run built alone or among others), and 17.725 must not print as 17.72 one time and
    17.73 the next -#}
{% macro stable_double(expression) -%}
    round(cast({{ expression }} as {{ type_double() }}), 9)
{%- endmacro %}

{#- a number as text for titles and evidence, rounded to `digits` significant-looking decimals -#}
{% macro fmt(expression, digits=4) -%}
    coalesce({{ rounded_double_text(stable_double(expression), digits) }}, 'n/a')
{%- endmacro %}

{#- an integer as text -#}
{% macro fmt_int(expression) -%}
    coalesce(cast(cast({{ expression }} as {{ dbt.type_bigint() }}) as {{ dbt.type_string() }}), 'n/a')
{%- endmacro %}

{#- a share as a percentage text, e.g. 0.786 -> '78.6%' -#}
{% macro fmt_pct(expression, digits=1) -%}
    {#- at least one decimal, whatever the caller asks: a double rounded to 0 digits still prints as 84.0, which misstates 84.2% -#}
    {%- set digits = [digits, 1] | max -%}
    coalesce({{ rounded_double_text('100 * ' ~ stable_double(expression), digits) }} || '%', 'n/a')
{%- endmacro %}
