{#- One row per streak (rows sharing a streak_key, see streaks.sql) of the rows of `keyed` where
    `flag` is true, for streaks of at least `min_points` rows: its first and last step and its
    length, plus any `measures` (SQL aggregates, named). The body of a CTE. -#}
{% macro streak_spans(keyed, flag, partition_by, min_points, measures=[]) %}
    select
        {{ partition_by }},
        streak_key,
        min(step) as streak_first_step,
        max(step) as streak_last_step,
        count(*) as streak_points
        {%- for measure in measures %},
        {{ measure }}
        {%- endfor %}
    from {{ keyed }}
    where {{ flag }}
    group by {{ partition_by }}, streak_key
    having count(*) >= {{ min_points }}
{%- endmacro %}
