{#- values_increasing: column_name rises from row to row in sort_column order.
    arguments: sort_column (the order, e.g. step); partition_by (list of columns, default []:
    one sequence per partition, e.g. [run_id] for one per run); group_by (column or list: one
    sequence per group within the partition, optional); strictly (default true: each value > the
    previous; false: >=).
    rows with a NULL value or sort key are skipped; ties on sort_column are ordered by the value.
    fails with every row not above (or, not strictly, below) the previous row, with previous_value. -#}
{% test values_increasing(model, column_name, sort_column, group_by=none, strictly=true, partition_by=[]) %}
{%- set group_columns = (([partition_by] if partition_by is string else (partition_by or []) | list)
    + ([group_by] if group_by is string else (group_by or []) | list)) | unique | list -%}

with sequenced_values as (

    select
        {%- for group_column in group_columns %}
        {{ group_column }},
        {%- endfor %}
        {%- if sort_column != column_name %}
        {{ sort_column }},
        {%- endif %}
        {{ column_name }},
        {{ previous_value(column_name, [sort_column, column_name], group_columns) }} as previous_value
    from {{ model }}
    where {{ column_name }} is not null
      and {{ sort_column }} is not null

),

non_increasing_rows as (

    select * from sequenced_values
    where previous_value is not null
      and not ({{ column_name }} {{ '>' if strictly else '>=' }} previous_value)

)

select * from non_increasing_rows

{% endtest %}
