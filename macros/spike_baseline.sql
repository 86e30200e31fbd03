{#-
  One pass of the robust loss baseline, as CTEs named <name>_*, ending in a CTE
  <name> with one row per source row: run_id, step, log_loss, the carry_columns,
  exclude_column, log_baseline, log_mad, baseline_points, is_outlier (the next pass
  reads it directly: no join back to the source). The source CTE has run_id, step,
  log_loss, exclude_column and the carry_columns; every window is per run (partition by run_id).
  The baseline of a step is the median of the log losses of the `window` steps
  before it that are not excluded (source column `exclude_column`); the spread
  is estimated from the median absolute step-to-step change of the clean log
  loss over the same steps (divided by sqrt 2, the MAD of iid noise), which a
  smooth trend (the fast fall of early training) does not inflate, unlike the
  MAD around a lagging median. An excluded step is
  judged against the clean steps before it, so a long spike cannot drag its own
  baseline up. Iterated a few times, each pass excluding what earlier passes
  flagged (baseline-excludes-anomalies, as Elementary #1589 and re_data #328 ask).
-#}
{#- A later pass (previous_pass given: the CTE name of the pass before, whose source excluded
    previous_exclude_column) recomputes only what the newly excluded points change, exactly.
    A clean point's stats depend on its `window` clean points and the one before them (the
    step change of the first); when none of those is newly excluded (excluded here, clean in
    the previous pass) the previous pass's stats of the same step are its stats here, since the
    clean points between them are the same. The others (a few dozen per spike) get the same
    rolling medians over their own frames: their `window` clean points, a contiguous stretch of
    the clean sequence, each point's step change computed on the whole sequence. At 1M steps
    this replaces two rolling medians over every step (about 1.8 s a pass) with a join. -#}
{#- previous_through: where the previous pass's stats through each clean point are (default the
    CTE <previous_pass>_through; a table when the passes are statements of their own);
    through_relation: this pass's own stats through each clean point, already a table (its
    rolling medians are not computed again) -#}
{% macro spike_baseline_pass(name, source_cte, exclude_column, carry_columns=[], previous_pass=none, previous_exclude_column=none,
    previous_through=none, through_relation=none) %}
{%- set window = threshold('spike_window') %}
{%- set min_mad = threshold('spike_min_mad') %}
{%- set carried %}{% for column in carry_columns %}{{ column }}, {% endfor %}{{ exclude_column }}{% endset %}
{%- set is_clean %}not {{ exclude_column }} and log_loss is not null{% endset %}
{{ name }}_anchored as (
    -- the clean point whose stats judge each step: for a clean step the one before it,
    -- for any other step the last clean point before it (an excluded step is judged
    -- against the clean past, so a long spike cannot drag its own baseline up); in a later
    -- pass also how many newly excluded points lie before each step (the same window: one sort)
    select
        run_id,
        step,
        log_loss,
        {{ carried }},
        {{ spike_points_before(is_clean) }} as judge_index
        {%- if previous_pass is not none %},
        {{ spike_points_before(exclude_column ~ ' and not ' ~ previous_exclude_column ~ ' and log_loss is not null') }} as newly_excluded_before
        {%- endif %}
    from {{ source_cte }}
),
{%- if through_relation is not none %}
{#- this pass's stats are a table already: only the scoring below is left -#}
{%- elif previous_pass is none %}
{{ name }}_clean as (
    -- the clean points in step order, each with its step-to-step change (one window pass)
    select
        run_id,
        step,
        log_loss,
        row_number() over (partition by run_id order by step) as clean_index,
        abs(log_loss - {{ previous_value('log_loss', 'step', 'run_id') }}) / sqrt(2.0) as step_change
    from {{ source_cte }}
    where {{ is_clean }}
),

{{ name }}_through as (
    -- stats of the `window` clean points ending at each clean point. The stats *before*
    -- clean point k are the stats *through* point k - 1, so two medians serve both uses.
    select
        run_id,
        step,
        clean_index,
        {{ spike_window_stats(window) }}
    from {{ name }}_clean
),

{%- else %}

{{ name }}_clean as (
    -- the clean points (a clean point's index is the count of clean points before it, plus
    -- one), their step changes, and whether a newly excluded point lies among the `window`
    -- points and the one before them that its stats depend on (newly_excluded_before only
    -- grows: its lowest over the frame is its value at the frame's first point)
    select
        run_id,
        step,
        log_loss,
        judge_index + 1 as clean_index,
        abs(log_loss - {{ previous_value('log_loss', 'step', 'run_id') }}) / sqrt(2.0) as step_change,
        (newly_excluded_before - case
            when count(*) {{ trailing_window('step', window, partition_by='run_id', include_current_row=true) }} > {{ window }}
                then min(newly_excluded_before) {{ trailing_window('step', window, partition_by='run_id', include_current_row=true) }}
            else 0
        end) > 0 as is_changed
    from {{ name }}_anchored
    where {{ is_clean }}
),

{{ name }}_frame_offsets as (
    {% for offset in range(window) %}select {{ offset }} as frame_offset{{ '\n    union all\n    ' if not loop.last }}{% endfor %}
),

{{ name }}_frame_points as (
    -- the clean points the changed points' frames hold
    select distinct
        changed.run_id,
        changed.clean_index - {{ name }}_frame_offsets.frame_offset as clean_index
    from {{ name }}_clean as changed
    cross join {{ name }}_frame_offsets
    where changed.is_changed
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
    ) as frames
),

{{ name }}_through as (
    -- a changed point's stats recomputed; any other's those of the previous pass at its step
    select
        clean.run_id,
        clean.step,
        clean.clean_index,
        case when clean.is_changed then recomputed.center_through else previous.center_through end as center_through,
        case when clean.is_changed then recomputed.spread_through else previous.spread_through end as spread_through,
        case when clean.is_changed then recomputed.points_through else previous.points_through end as points_through
    from {{ name }}_clean as clean
    left join {{ previous_through if previous_through is not none else previous_pass ~ '_through' }} as previous
        on clean.run_id = previous.run_id
        and clean.step = previous.step
    left join {{ name }}_recomputed as recomputed
        on clean.run_id = recomputed.run_id
        and clean.clean_index = recomputed.clean_index
),
{%- endif %}

{{ name }}_scored as (
    select
        anchored.run_id,
        anchored.step,
        anchored.log_loss,
        {%- for column in carry_columns %}
        anchored.{{ column }},
        {%- endfor %}
        anchored.{{ exclude_column }},
        through.center_through as log_baseline,
        through.spread_through as log_mad,
        coalesce(through.points_through, 0) as baseline_points
    from {{ name }}_anchored as anchored
    left join {{ through_relation if through_relation is not none else name ~ '_through' }} as through
        on anchored.run_id = through.run_id
        and anchored.judge_index = through.clean_index
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

{#- the count of the steps before this one (in step order, within its run) where `condition` holds -#}
{% macro spike_points_before(condition) -%}
cast(sum(case when {{ condition }} then 1 else 0 end)
            over (partition by run_id order by step rows between unbounded preceding and current row) as {{ dbt.type_bigint() }})
        - case when {{ condition }} then 1 else 0 end
{%- endmacro %}

{#- the stats of the `window` clean points ending at each row: the median log loss, the median
    step change and how many points there are -#}
{% macro spike_window_stats(window) -%}
{{ rolling_median('log_loss', 'step', window - 1, partition_by='run_id', include_current_row=true) }} as center_through,
        {{ rolling_median('step_change', 'step', window - 1, partition_by='run_id', include_current_row=true) }} as spread_through,
        count(log_loss) {{ trailing_window('step', window - 1, partition_by='run_id', include_current_row=true) }} as points_through
{%- endmacro %}

{#- The CTEs of int_loss_baselines_computed from the resolved steps up to pass `last_pass`
    (a CTE pass_<last_pass>, and pass_<n>_through for its stats), starting after
    `first_pass - 1` passes that are tables already (loss_baseline_stage). With
    `through_is_table` the last pass's stats are read from its stage table instead of being
    computed. first_pass 1 and no tables: the one query every engine can run. -#}
{% macro loss_baseline_ctes(last_pass, first_pass=1, through_is_table=false) %}
resolved as (
    select run_id, step, shard_id, loss from {{ run_ref('int_train_steps_resolved') }}
),
{% if first_pass == 1 %}
steps_0 as (
    select
        run_id,
        step,
        case when loss > 0 then ln(loss) end as log_loss,
        false as is_excluded_0
    from resolved
),
{% else %}
{{ loss_baseline_next_steps(first_pass - 1, loss_baseline_stage(first_pass - 1, 'pass')) }},
{% endif %}
{%- for pass_number in range(first_pass, last_pass + 1) %}
{#- the first pass over every step; each later one recomputes only what its new exclusions change -#}
{{ spike_baseline_pass('pass_' ~ pass_number, 'steps_' ~ (pass_number - 1), 'is_excluded_' ~ (pass_number - 1),
    previous_pass=(none if pass_number == 1 else 'pass_' ~ (pass_number - 1)),
    previous_exclude_column=(none if pass_number == 1 else 'is_excluded_' ~ (pass_number - 2)),
    previous_through=(loss_baseline_stage(pass_number - 1, 'through') if pass_number == first_pass and pass_number > 1 else none),
    through_relation=(loss_baseline_stage(pass_number, 'through') if through_is_table and pass_number == last_pass else none)) }}
{%- if pass_number < last_pass %},
{{ loss_baseline_next_steps(pass_number, 'pass_' ~ pass_number) }},
{%- endif %}
{%- endfor %}
{%- endmacro %}

{#- steps_<n>: the steps the pass after pass n reads; it excludes what pass n and the earlier ones flagged -#}
{% macro loss_baseline_next_steps(pass_number, pass_relation) -%}
steps_{{ pass_number }} as (
    select
        run_id,
        step,
        log_loss,
        is_excluded_{{ pass_number - 1 }},
        (is_excluded_{{ pass_number - 1 }} or is_outlier) as is_excluded_{{ pass_number }}
    from {{ pass_relation }}
)
{%- endmacro %}

{#- The table holding one stage of pass n while int_loss_baselines_computed builds: 'pass' (its
    scored steps) or 'through' (its stats through each clean point); beside the model, dropped
    by its post-hook -#}
{% macro loss_baseline_stage(pass_number, stage) %}
  {{ return(api.Relation.create(database=this.database, schema=this.schema,
      identifier=this.identifier ~ '__' ~ stage ~ '_' ~ pass_number, type='table')) }}
{% endmacro %}

{#- How many of the spike passes run as statements of their own, before the model's query.
    On DuckDB every pass but the last: each statement holds one pass's window state, where one
    query holds the materialised CTEs of every pass together (at 10M steps 8 GB for three
    passes, one pass's 1.5 GB: docs/performance.md). Other engines (Spark) and unit tests run
    the one query. -#}
{% macro loss_baseline_statement_passes() %}
  {{ return(adapter.dispatch('loss_baseline_statement_passes', 'run_diagnosis')()) }}
{% endmacro %}

{% macro default__loss_baseline_statement_passes() %}
  {{ return(0) }}
{% endmacro %}

{% macro duckdb__loss_baseline_statement_passes() %}
  {#- a unit test (model.resource_type 'unit_test') has no hooks: it runs the one query -#}
  {% if not execute or this is none or model.resource_type != 'model' %}{{ return(0) }}{% endif %}
  {{ return(threshold('spike_passes') - 1) }}
{% endmacro %}

{#- pre-hook of int_loss_baselines_computed: the passes before the last, each as two statements
    (its stats through each clean point, then its scored steps, which read them) -#}
{% macro build_loss_baseline_stages() %}
  {%- for pass_number in range(1, loss_baseline_statement_passes() + 1) %}
create or replace table {{ loss_baseline_stage(pass_number, 'through') }} as
with
{{ loss_baseline_ctes(pass_number, first_pass=pass_number) }}
select * from pass_{{ pass_number }}_through;
create or replace table {{ loss_baseline_stage(pass_number, 'pass') }} as
with
{{ loss_baseline_ctes(pass_number, first_pass=pass_number, through_is_table=true) }}
select * from pass_{{ pass_number }};
  {%- endfor %}
{% endmacro %}

{#- post-hook of int_loss_baselines_computed: drop the stage tables -#}
{% macro drop_loss_baseline_stages() %}
  {%- for pass_number in range(1, loss_baseline_statement_passes() + 1) %}
drop table if exists {{ loss_baseline_stage(pass_number, 'through') }};
drop table if exists {{ loss_baseline_stage(pass_number, 'pass') }};
  {%- endfor %}
{% endmacro %}
