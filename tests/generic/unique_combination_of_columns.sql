{#- unique_combination_of_columns: no two rows share the same values in combination_of_columns.
    arguments: combination_of_columns (list of column names; NULLs compare equal, as in group by).
    An id unique only within a run is keyed with its run: [run_id, finding_id].
    fails with one row per duplicated combination and its occurrences. -#}
{% test unique_combination_of_columns(model, combination_of_columns) %}
{%- if combination_of_columns is string or not combination_of_columns -%}
  {{ exceptions.raise_compiler_error("unique_combination_of_columns: combination_of_columns must be a non-empty list") }}
{%- endif -%}
{%- set column_list = combination_of_columns | join(', ') -%}

with combination_counts as (

    select
        {{ column_list }},
        count(*) as occurrences
    from {{ model }}
    group by {{ column_list }}

),

duplicated_combinations as (

    select * from combination_counts
    where occurrences > 1

)

select * from duplicated_combinations

{% endtest %}
