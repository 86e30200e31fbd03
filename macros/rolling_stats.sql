{#- Rolling statistics over a trailing frame of rows, for models and generic tests.

    Every macro returns a window expression with an explicit `rows between` frame. The
    frame ends at `1 preceding` (the current row excluded: a point is judged against
    its past only) unless include_current_row=true.

    order_by / partition_by take a column (string) or a list of columns; put a
    tie-breaker after the step column so the order is deterministic. Models pass
    partition_by='run_id' (first, when a list) so that every run is its own series.

    Engines:
    - DuckDB (default__): quantile_cont(x, 0.5) over a rows frame (exact, interpolated).
    - Spark: percentile(x, 0.5) over the same frame: exact and interpolated like
      DuckDB, so both engines give the same baseline. percentile_approx(x, 0.5) over
      the same frame is the drop-in for very wide frames; it returns an element of the
      frame (the lower middle for an even count), so results differ slightly.
    - Postgres: ordered-set aggregates (percentile_cont ... within group) cannot be
      window functions, so there is no single-expression rolling median; the macro
      stops at compile time instead of producing SQL that fails at run time.
-#}

{#- a comma-separated column list from a column name, a list of names, or none ('') -#}
{% macro rolling_stats_column_list(columns) %}
  {%- if columns is none -%}
    {{ return('') }}
  {%- elif columns is string -%}
    {{ return(columns) }}
  {%- else -%}
    {{ return(columns | join(', ')) }}
  {%- endif -%}
{% endmacro %}

{#- `partition by <columns> ` for a window (columns as above; '' for none) -#}
{% macro window_partition_clause(partition_by) %}
  {%- set partition_list = rolling_stats_column_list(partition_by) -%}
  {{ return('partition by ' ~ partition_list ~ ' ' if partition_list else '') }}
{% endmacro %}

{#- over (partition by ... order by ... rows between <preceding> preceding and 1 preceding | current row) -#}
{% macro trailing_window(order_by, preceding, partition_by=none, include_current_row=false) -%}
  {%- if preceding is not integer or preceding < 1 -%}
    {{ exceptions.raise_compiler_error("trailing_window: preceding must be a positive integer, got " ~ preceding) }}
  {%- endif -%}
  over ({{ window_partition_clause(partition_by) }}order by {{ rolling_stats_column_list(order_by) }}
  {{- ' ' -}} rows between {{ preceding }} preceding and {{ 'current row' if include_current_row else '1 preceding' }})
{%- endmacro %}

{#- median of expression over the trailing frame (NULL when the frame holds no non-null value) -#}
{% macro rolling_median(expression, order_by, preceding, partition_by=none, include_current_row=false) %}
  {{ return(adapter.dispatch('rolling_median', 'run_diagnosis')(
      expression, order_by, preceding, partition_by, include_current_row)) }}
{% endmacro %}

{% macro default__rolling_median(expression, order_by, preceding, partition_by, include_current_row) -%}
  quantile_cont({{ expression }}, 0.5) {{ trailing_window(order_by, preceding, partition_by, include_current_row) }}
{%- endmacro %}

{% macro spark__rolling_median(expression, order_by, preceding, partition_by, include_current_row) -%}
  percentile({{ expression }}, 0.5) {{ trailing_window(order_by, preceding, partition_by, include_current_row) }}
{%- endmacro %}

{% macro postgres__rolling_median(expression, order_by, preceding, partition_by, include_current_row) %}
  {{ exceptions.raise_compiler_error(
      "rolling_median: Postgres has no windowed median (percentile_cont cannot take an over clause);"
      ~ " aggregate array_agg(x) over the same frame and take the median of the array in a lateral subquery") }}
{% endmacro %}

{#- the previous row's value: lag() with an explicit one-row frame (Spark rejects a frame on lag) -#}
{% macro previous_value(expression, order_by, partition_by=none) -%}
  max({{ expression }}) {{ trailing_window(order_by, 1, partition_by) }}
{%- endmacro %}

{#- the next row's value: lead() with an explicit one-row frame (as previous_value) -#}
{% macro next_value(expression, order_by, partition_by=none) -%}
  max({{ expression }}) over ({{ window_partition_clause(partition_by) }}order by {{ rolling_stats_column_list(order_by) }} rows between 1 following and 1 following)
{%- endmacro %}
