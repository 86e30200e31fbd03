{#- Gaps and islands: a key shared by the consecutive rows (in order_by order, within partition_by)
    on which `flag` has the same value. Group the rows where the flag is true by partition and this
    key to get each streak (its first row, last row, length). Used by int_runs_compared (a run that
    departs from its baseline, or is slower, for several points in a row). -#}
{% macro streak_key(flag, partition_by, order_by) -%}
    row_number() over (
        partition by {{ partition_by }} order by {{ order_by }}
        rows between unbounded preceding and current row
    ) - row_number() over (
        partition by {{ partition_by }}, {{ flag }} order by {{ order_by }}
        rows between unbounded preceding and current row
    )
{%- endmacro %}
