{#- not_null_proportion: at least a share at_least of the rows have column_name set.
    arguments: at_least (0..1, default 0.95).
    fails with one row (non_null_rows, total_rows, not_null_proportion) when the share is below
    at_least; an empty model passes (the share is undefined). -#}
{% test not_null_proportion(model, column_name, at_least=0.95) %}
{%- if at_least is not number or at_least < 0 or at_least > 1 -%}
  {{ exceptions.raise_compiler_error("not_null_proportion on " ~ column_name ~ ": at_least must be within 0..1") }}
{%- endif %}

with row_counts as (

    select
        count({{ column_name }}) as non_null_rows,
        count(*) as total_rows
    from {{ model }}

),

not_null_shares as (

    select
        *,
        {{ safe_divide('non_null_rows', 'total_rows') }} as not_null_proportion
    from row_counts

),

shares_below_threshold as (

    select * from not_null_shares
    where not_null_proportion < {{ at_least }}

)

select * from shares_below_threshold

{% endtest %}
