{#-
  Aggregates whose result does not depend on the order the rows arrive in (issue 24).

  A floating-point sum is exact only up to the order its terms are added in: DuckDB adds the
  rows of a group in whatever order its threads produced them (a table written by a parallel
  window or join is stored in a different order from one build to the next), so a plain
  `sum(step_time_sec)` gave 17.725000000000005 in one build and 17.724999999999998 in the
  next, and the marts of two builds of the same runs differed in their last bits. These add
  the terms sorted by their own value: terms that tie are equal, so every order of them gives
  the same sum, and the result is the same bytes whatever the thread count, the read order or
  the physical order of the table (tests/python/test_faults.py builds a warehouse twice with
  different threads and folder orders and compares every mart exactly).

  Use them for every sum or average of a non-integer value that reaches a mart; a sum of
  integers (counts) is exact in any order and needs none.
-#}

{#- sum(expression), the terms added in ascending order of their value; NULLs skipped, NULL when none -#}
{% macro stable_sum(expression) %}
  {{ return(adapter.dispatch('stable_sum', 'run_diagnosis')(expression)) }}
{% endmacro %}

{#- DuckDB and Postgres: an ordered aggregate adds its terms in the order given -#}
{% macro default__stable_sum(expression) %}sum({{ expression }} order by {{ expression }}){% endmacro %}

{#- Spark has no ordered aggregate: collect the terms (collect_list skips NULLs), sort them and
    fold left; an empty group gives NULL like sum() -#}
{% macro spark__stable_sum(expression) -%}
  aggregate(
    array_sort(collect_list(cast({{ expression }} as double))),
    cast(null as double),
    (running_total, term) -> coalesce(running_total, cast(0 as double)) + term
  )
{%- endmacro %}

{#- avg(expression) from stable_sum: NULL when no term is non-NULL -#}
{% macro stable_avg(expression) %}
  {{- safe_divide(stable_sum(expression), 'count(' ~ expression ~ ')') -}}
{% endmacro %}
