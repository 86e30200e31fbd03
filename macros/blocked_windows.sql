{#- Windows over a run's rows in blocks (issue 22, docs/performance.md).

    A window over a whole run (`partition by run_id order by step`) is one partition: DuckDB
    sorts and evaluates it on one thread and cannot spill it, so a 10M-step run needs the
    whole stream in memory. The same results come from blocks of window_block_rows rows:

    - a trailing frame (`rows between n preceding and ...`, lag) reads at most n rows before
      the current one: each block gets the last n rows of the block before it again as a halo
      (rows_with_halo), the window runs `partition by run_id, window_block`, and only the
      block's own rows (is_block_row) are kept: each of them sees the same frame as over the
      whole run;
    - a running total (`rows between unbounded preceding and current row`) is the total within
      the block plus the totals of the run's earlier blocks (block_totals_before: one row per
      block), and a row number is a count.

    The blocks are numbered from a dense 1-based row index in the window's order (step_index,
    a clean point's index): every block but the last holds exactly window_block_rows rows, so
    the rows a halo needs are the last ones of the block before. A run shorter than one block
    is one block. -#}

{#- the block of a row from its 1-based index in the run's order: 1..B block 0, B+1..2B block 1 -#}
{% macro window_block(index_column) -%}
cast(floor({{ safe_divide(index_column ~ ' - 1', threshold('window_block_rows')) }}) as {{ dbt.type_bigint() }})
{%- endmacro %}

{#- the rows of `source` (a CTE with a dense 1-based index_column per run) with their block
    (window_block) and is_block_row, plus the last `halo` rows of each block again at the head
    of the next block (is_block_row false): a window over `partition by run_id, window_block`
    with a trailing frame of at most `halo` rows gives each of the block's own rows the frame it
    has over the whole run. Filter on is_block_row after the window (an outer query). -#}
{% macro rows_with_halo(source, index_column, halo) -%}
  {%- set block_rows = threshold('window_block_rows') -%}
  {%- if execute and halo > block_rows -%}
    {{ exceptions.raise_compiler_error("rows_with_halo: a halo of " ~ halo ~ " rows needs window_block_rows >= " ~ halo ~ ", got " ~ block_rows) }}
  {%- endif -%}
    select
        {{ source }}.*,
        {{ window_block(index_column) }} as window_block,
        true as is_block_row
    from {{ source }}
    union all
    select
        {{ source }}.*,
        {{ window_block(index_column) }} + 1 as window_block,
        false as is_block_row
    from {{ source }}
    where {{ index_column }} > ({{ window_block(index_column) }} + 1) * {{ block_rows }} - {{ halo }}
{%- endmacro %}

{#- the running total of `expression` within the row's block, in step order -#}
{% macro block_running_sum(expression, partition_by=['run_id', 'window_block'], order_by='step') -%}
sum({{ expression }}) over ({{ window_partition_clause(partition_by) }}order by {{ rolling_stats_column_list(order_by) }} rows between unbounded preceding and current row)
{%- endmacro %}

{#- one row per (run_id, block_column) of `source`, with, for each (name, aggregate) in `totals`,
    the aggregate's sum over the run's earlier blocks (0 for the first): aggregate is an aggregate
    expression over one block (`sum(case when ... then 1 else 0 end)`, `count(distinct step)`) -#}
{% macro block_totals_before(source, block_column, totals) -%}
    select
        run_id,
        {{ block_column }}
        {%- for name, aggregate in totals %},
        cast(coalesce(sum({{ aggregate }}) over (
            partition by run_id order by {{ block_column }} rows between unbounded preceding and 1 preceding
        ), 0) as {{ dbt.type_bigint() }}) as {{ name }}
        {%- endfor %}
    from {{ source }}
    group by run_id, {{ block_column }}
{%- endmacro %}
