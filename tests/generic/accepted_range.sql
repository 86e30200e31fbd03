{#- accepted_range: column_name lies within [min_value, max_value].
    arguments: min_value, max_value (either may be omitted, not both); inclusive (default true:
    the bounds themselves are accepted); where (optional SQL filter on the rows checked;
    dbt lifts a `where` given under arguments into the test config, which filters the model alike).
    fails with every row outside the range; NULLs pass (pair with not_null). -#}
{% test accepted_range(model, column_name, min_value=none, max_value=none, inclusive=true, where=none) %}
{%- if min_value is none and max_value is none -%}
  {{ exceptions.raise_compiler_error("accepted_range on " ~ column_name ~ ": set min_value, max_value or both") }}
{%- endif -%}
{%- set or_equal = '=' if inclusive else '' -%}

with rows_in_scope as (

    select * from {{ model }}
    {%- if where %}
    where {{ where }}
    {%- endif %}

),

out_of_range_rows as (

    select * from rows_in_scope
    where
    {%- if min_value is not none %}
        not ({{ column_name }} >{{ or_equal }} {{ min_value }})
    {%- endif %}
    {%- if min_value is not none and max_value is not none %}
        or
    {%- endif %}
    {%- if max_value is not none %}
        not ({{ column_name }} <{{ or_equal }} {{ max_value }})
    {%- endif %}

)

select * from out_of_range_rows

{% endtest %}
