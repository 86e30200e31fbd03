{#- no_gaps: the integer values of column_name form an unbroken sequence with step interval.
    arguments: interval (positive integer, default 1); partition_by (list of columns, default []:
    one sequence per partition, e.g. [run_id] for one per run); group_by (column or list: one
    sequence per group within the partition, optional). NULLs and repeated values are ignored
    (test those with not_null/unique).
    fails with one row per gap: gap_start, gap_end (first and last missing value) and missing_count. -#}
{% test no_gaps(model, column_name, interval=1, group_by=none, partition_by=[]) %}
{%- if interval is not integer or interval < 1 -%}
  {{ exceptions.raise_compiler_error("no_gaps on " ~ column_name ~ ": interval must be a positive integer") }}
{%- endif -%}
{%- set group_columns = (([partition_by] if partition_by is string else (partition_by or []) | list)
    + ([group_by] if group_by is string else (group_by or []) | list)) | unique | list -%}

with present_values as (

    select distinct
        {%- for group_column in group_columns %}
        {{ group_column }},
        {%- endfor %}
        cast({{ column_name }} as {{ dbt.type_bigint() }}) as sequence_value
    from {{ model }}
    where {{ column_name }} is not null

),

consecutive_values as (

    select
        *,
        {{ previous_value('sequence_value', 'sequence_value', group_columns) }} as previous_sequence_value
    from present_values

),

gap_sizes as (

    select
        *,
        cast(floor({{ safe_divide('sequence_value - previous_sequence_value - 1', interval) }})
            as {{ dbt.type_bigint() }}) as missing_count
    from consecutive_values
    where sequence_value - previous_sequence_value > {{ interval }}

),

gaps as (

    select
        {%- for group_column in group_columns %}
        {{ group_column }},
        {%- endfor %}
        previous_sequence_value + {{ interval }} as gap_start,
        previous_sequence_value + missing_count * {{ interval }} as gap_end,
        missing_count
    from gap_sizes

)

select * from gaps

{% endtest %}
