{#-
  One pass of the robust loss baseline, as CTEs named <name>_*, ending in a CTE
  <name> with one row per source row: run_id, step, step_index, log_loss, the carry_columns,
  exclude_column, log_baseline, log_mad, baseline_points, is_outlier (the next pass
  reads it directly: no join back to the source). The source CTE has run_id, step,
  step_index (the step's 1-based row number in step order within its run), log_loss,
  exclude_column and the carry_columns; a later pass's source also has the previous pass's
  log_baseline, log_mad and baseline_points as previous_log_baseline, previous_log_mad,
  previous_baseline_points.
  The baseline of a step is the median of the log losses of the `window` steps
  before it that are not excluded (source column `exclude_column`); the spread
  is estimated from the median absolute step-to-step change of the clean log
  loss over the same steps (divided by sqrt 2, the MAD of iid noise), which a
  smooth trend (the fast fall of early training) does not inflate, unlike the
  MAD around a lagging median. An excluded step is
  judged against the clean steps before it, so a long spike cannot drag its own
  baseline up. Iterated a few times, each pass excluding what earlier passes
  flagged (baseline-excludes-anomalies, as Elementary #1589 and re_data #328 ask).

  How it is computed (issue 22, docs/performance.md): every window runs in blocks of
  window_block_rows rows (macros/blocked_windows.sql), never over a whole run, and no
  1M-row table is joined to another. Each clean point gets the stats of the `window` clean
  points before it (a frame ending 1 preceding); a clean step is judged by those, its own row.
  A step that is not clean is judged by the clean points up to the last one before it, i.e.
  the stats before the next clean point: the few such steps are joined to the clean points,
  and each run gets one point after its last step (no log loss) for the steps after its last
  clean point.
-#}
{#- A later pass (previous_pass given: the CTE name of the pass before, whose source excluded
    previous_exclude_column) recomputes only what the newly excluded points change, exactly.
    A clean point's stats depend on the `window` clean points before it and the one before
    them (the step change of the first); when no newly excluded point (excluded here, clean in
    the previous pass) lies between that one and the point, the previous pass's stats of the
    same step are its stats here, since the clean points before it are the same. The others (a
    few dozen per spike) get the same rolling medians over their own frames: their `window`
    clean points, a contiguous stretch of the clean sequence, each point's step change computed
    on the whole sequence. At 1M steps this replaces two rolling medians over every step
    (about 1.8 s a pass). -#}
{% macro spike_baseline_pass(name, source_cte, exclude_column, carry_columns=[], previous_pass=none, previous_exclude_column=none) %}
{%- set window = threshold('spike_window') %}
{%- set min_mad = threshold('spike_min_mad') %}
{%- set carried %}{% for column in carry_columns %}{{ column }}, {% endfor %}{{ exclude_column }}{% endset %}
{%- set is_clean %}not {{ exclude_column }} and log_loss is not null{% endset %}
{%- set is_newly_excluded %}{{ exclude_column }} and not {{ previous_exclude_column }} and log_loss is not null{% endset %}
{{ name }}_step_blocks as (
    select
        {{ source_cte }}.*,
        {{ window_block('step_index') }} as window_block
    from {{ source_cte }}
),

{{ name }}_totals_before_block as (
    -- per block of steps, the clean (and newly excluded) points of the run's earlier blocks
    {%- set totals = [('clean_before_block', 'sum(case when ' ~ is_clean ~ ' then 1 else 0 end)')] %}
    {%- if previous_pass is not none %}
    {%- do totals.append(('newly_excluded_before_block', 'sum(case when ' ~ is_newly_excluded ~ ' then 1 else 0 end)')) %}
    {%- endif %}
    {{ block_totals_before(name ~ '_step_blocks', 'window_block', totals) }}
),

{{ name }}_anchored as (
    -- judge_index: how many clean points lie before each step (an excluded step is judged
    -- against the clean past, so a long spike cannot drag its own baseline up); in a later pass
    -- also how many newly excluded points lie before it (the same window: one sort)
    select
        blocks.run_id,
        blocks.step,
        blocks.step_index,
        blocks.log_loss,
        {%- for column in carry_columns %}
        blocks.{{ column }},
        {%- endfor %}
        blocks.{{ exclude_column }},
        {%- if previous_pass is not none %}
        blocks.previous_log_baseline,
        blocks.previous_log_mad,
        blocks.previous_baseline_points,
        totals.newly_excluded_before_block + {{ spike_points_before(is_newly_excluded) }} as newly_excluded_before,
        {%- endif %}
        totals.clean_before_block + {{ spike_points_before(is_clean) }} as judge_index,
        coalesce({{ is_clean }}, false) as is_clean_point
    from {{ name }}_step_blocks as blocks
    inner join {{ name }}_totals_before_block as totals
        on blocks.run_id = totals.run_id
        and blocks.window_block = totals.window_block
),

{{ name }}_clean_points as (
    -- the clean points in step order (a clean point's index is the count of clean points
    -- before it, plus one), and after them one point per run, after its last step
    select
        run_id,
        step,
        step_index,
        log_loss,
        {%- for column in carry_columns %}
        {{ column }},
        {%- endfor %}
        {{ exclude_column }},
        {%- if previous_pass is not none %}
        previous_log_baseline,
        previous_log_mad,
        previous_baseline_points,
        newly_excluded_before,
        {%- endif %}
        judge_index + 1 as clean_index,
        false as is_run_end
    from {{ name }}_anchored
    where is_clean_point
    union all
    select
        run_id,
        max(step) + 1 as step,
        max(step_index) + 1 as step_index,
        cast(null as {{ type_double() }}) as log_loss,
        {%- for column in carry_columns %}
        null as {{ column }},
        {%- endfor %}
        false as {{ exclude_column }},
        {%- if previous_pass is not none %}
        cast(null as {{ type_double() }}) as previous_log_baseline,
        cast(null as {{ type_double() }}) as previous_log_mad,
        cast(null as {{ dbt.type_bigint() }}) as previous_baseline_points,
        cast(0 as {{ dbt.type_bigint() }}) as newly_excluded_before,  -- unread: the run's end is always recomputed
        {%- endif %}
        max(judge_index + case when is_clean_point then 1 else 0 end) + 1 as clean_index,
        true as is_run_end
    from {{ name }}_anchored
    group by run_id
),

{{ name }}_clean_with_halo as (
    -- blocks of clean points, each with the last `window` + 1 clean points of the block before
    -- it: the frames below reach `window` points back, and the step change of a frame's first
    -- point reads the point before it
    {{ rows_with_halo(name ~ '_clean_points', 'clean_index', window + 1) }}
),

{{ name }}_clean as (
    -- each clean point's step-to-step change{% if previous_pass is not none %}, and whether a
    -- newly excluded point lies between it and the clean point `window` + 1 before it
    -- (newly_excluded_before only grows: its lowest over the frame is its value at the frame's
    -- first point){% endif %}
    select
        *,
        abs(log_loss - {{ previous_value('log_loss', 'step', ['run_id', 'window_block']) }}) / sqrt(2.0) as step_change
        {%- if previous_pass is not none %},
        is_run_end or (newly_excluded_before - case
            when count(*) {{ trailing_window('step', window + 1, partition_by=['run_id', 'window_block'], include_current_row=true) }} > {{ window + 1 }}
                then min(newly_excluded_before) {{ trailing_window('step', window + 1, partition_by=['run_id', 'window_block'], include_current_row=true) }}
            else 0
        end) > 0 as is_changed
        {%- endif %}
    from {{ name }}_clean_with_halo
),
{%- if previous_pass is none %}

{{ name }}_judged as (
    -- the stats of the `window` clean points before each clean point
    select
        *
    from (
        select
            {{ name }}_clean.*,
            {{ spike_window_stats(window, ['run_id', 'window_block']) }}
        from {{ name }}_clean
    ) as with_stats
    where is_block_row
),

{%- else %}

{{ name }}_changed as (
    select * from {{ name }}_clean
    where is_block_row and is_changed
),

{{ name }}_frame_offsets as (
    {% for offset in range(window + 1) %}select {{ offset }} as frame_offset{{ '\n    union all\n    ' if not loop.last }}{% endfor %}
),

{{ name }}_frame_points as (
    -- the clean points the changed points' frames hold, and the changed points
    select distinct
        changed.run_id,
        changed.clean_index - {{ name }}_frame_offsets.frame_offset as clean_index
    from {{ name }}_changed as changed
    cross join {{ name }}_frame_offsets
),

{{ name }}_recomputed as (
    -- the rolling medians over those points only: each changed point's frame is a contiguous
    -- stretch of the clean sequence, so its `window` rows are the same as over every point
    select
        run_id,
        clean_index,
        {{ spike_window_stats(window) }}
    from (
        select clean.run_id, clean.step, clean.clean_index, clean.log_loss, clean.step_change
        from {{ name }}_clean as clean
        inner join {{ name }}_frame_points as frame_points
            on clean.run_id = frame_points.run_id
            and clean.clean_index = frame_points.clean_index
        where clean.is_block_row
    ) as frames
),

{{ name }}_judged as (
    -- a changed point's stats recomputed; any other's those of the previous pass at its step
    select
        clean.*,
        case when clean.is_changed then recomputed.center_before else clean.previous_log_baseline end as center_before,
        case when clean.is_changed then recomputed.spread_before else clean.previous_log_mad end as spread_before,
        case when clean.is_changed then recomputed.points_before else clean.previous_baseline_points end as points_before
    from {{ name }}_clean as clean
    left join {{ name }}_recomputed as recomputed
        on clean.run_id = recomputed.run_id
        and clean.clean_index = recomputed.clean_index
    where clean.is_block_row
),
{%- endif %}

{{ name }}_scored as (
    -- a clean step judged by its own row; any other by the next clean point's (or the run's end)
    select
        run_id,
        step,
        step_index,
        log_loss,
        {%- for column in carry_columns %}
        {{ column }},
        {%- endfor %}
        {{ exclude_column }},
        center_before as log_baseline,
        spread_before as log_mad,
        coalesce(points_before, 0) as baseline_points
    from {{ name }}_judged
    where not is_run_end
    union all
    select
        anchored.run_id,
        anchored.step,
        anchored.step_index,
        anchored.log_loss,
        {%- for column in carry_columns %}
        anchored.{{ column }},
        {%- endfor %}
        anchored.{{ exclude_column }},
        judged.center_before as log_baseline,
        judged.spread_before as log_mad,
        coalesce(judged.points_before, 0) as baseline_points
    from {{ name }}_anchored as anchored
    inner join {{ name }}_judged as judged
        on anchored.run_id = judged.run_id
        and anchored.judge_index + 1 = judged.clean_index
    where not anchored.is_clean_point
),

{{ name }} as (
    select
        *,
        coalesce(
            baseline_points >= {{ threshold('spike_min_periods') }}
            and log_loss - log_baseline > ln(1 + {{ threshold('spike_min_relative_excess') }})
            and 0.6745 * (log_loss - log_baseline) / greatest(coalesce(log_mad, 0), {{ min_mad }})
                > {{ threshold('spike_n_mads') }},
            false
        ) as is_outlier
    from {{ name }}_scored
)
{% endmacro %}

{#- the count of the steps before this one (in step order, within its block of steps) where
    `condition` holds -#}
{% macro spike_points_before(condition) -%}
cast({{ block_running_sum('case when ' ~ condition ~ ' then 1 else 0 end', ['blocks.run_id', 'blocks.window_block'], 'blocks.step') }} as {{ dbt.type_bigint() }})
        - case when {{ condition }} then 1 else 0 end
{%- endmacro %}

{#- the stats of the `window` clean points before each row: the median log loss, the median
    step change and how many points there are -#}
{% macro spike_window_stats(window, partition_by='run_id') -%}
{{ rolling_median('log_loss', 'step', window, partition_by=partition_by) }} as center_before,
        {{ rolling_median('step_change', 'step', window, partition_by=partition_by) }} as spread_before,
        count(log_loss) {{ trailing_window('step', window, partition_by=partition_by) }} as points_before
{%- endmacro %}
