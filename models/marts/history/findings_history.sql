-- What each build found, kept across builds: one row per finding of every run this build
-- diagnosed (the batch: new or changed runs; every run on a full build), plus one row per
-- finding that was open at that run's previous build and is gone now. Each row's status
-- compares the finding (run_id, finding_id) with its latest earlier row:
--   new         never seen in this run before;
--   still_open  open at the previous build of the run, and still there;
--   resolved    open at the previous build of the run, gone in this one (its row repeats
--               what was last seen of it);
--   regressed   resolved at an earlier build, back in this one.
-- An append-only history (meta keeps_history, macros/incremental_runs.sql): never deleted
-- from, not dropped when the project changes, not rebuilt by --full-refresh. A run still
-- training is re-diagnosed each time its log grows, so its findings move through these
-- states build after build. On engines that build plain tables (Spark) it holds this build only.
{{ config(
    materialized=('incremental' if target.type == 'duckdb' else 'table'),
    full_refresh=false,
    on_schema_change='append_new_columns',
    meta={'keeps_history': true},
) }}

{#- the columns a finding carries into its history rows, with their types -#}
{%- set carried = {
    'category': dbt.type_string(), 'severity': dbt.type_string(), 'ledger': dbt.type_string(),
    'title': dbt.type_string(), 'evidence': dbt.type_string(),
    'first_step': dbt.type_bigint(), 'last_step': dbt.type_bigint(), 'steps_affected': dbt.type_bigint(),
    'val_loss_cost': type_double(), 'val_loss_cost_low': type_double(), 'val_loss_cost_high': type_double(),
    'compute_seconds_lost': type_double(), 'estimated_cost': type_double(), 'cost_unit': dbt.type_string(),
    'cost_evidence': dbt.type_string(), 'recommendation': dbt.type_string(), 'confirm_rerun': dbt.type_string(),
    'harm_rank': dbt.type_bigint(),
} -%}
{%- set state = {
    'run_id': dbt.type_string(), 'finding_id': dbt.type_string(), 'status': dbt.type_string(),
    'built_at': dbt.type_timestamp(), 'first_seen_at': dbt.type_timestamp(), 'opened_at': dbt.type_timestamp(),
} -%}
{%- set built_at = "cast(" ~ sql_literal(run_started_at.strftime('%Y-%m-%d %H:%M:%S.%f')) ~ " as " ~ dbt.type_timestamp() ~ ")" -%}

with

built_runs as (
    -- the runs this build diagnosed: one row each in run_summary
    select run_id from {{ run_ref('run_summary') }}
),

current_findings as (
    select run_id, finding_id{% for column in carried %}, {{ column }}{% endfor %}
    from {{ run_ref('findings') }}
),

{% if is_incremental() %}
earlier_rows as (
    select
        history.*,
        row_number() over (
            partition by history.run_id, history.finding_id
            order by history.built_at desc
            rows between unbounded preceding and current row
        ) as recency
    from {{ this }} as history
    where history.run_id in (select run_id from built_runs)
),

previous as (
    -- each finding's latest row before this build
    select * from earlier_rows where recency = 1
),
{% else %}
previous as (
    -- the first build of the history: nothing seen before
    {{ no_rows(state.keys() | list + carried.keys() | list, dict(state, **carried)) }}
),
{% endif %}

seen_now as (
    select
        current_findings.*,
        case
            when previous.finding_id is null then 'new'
            when previous.status = 'resolved' then 'regressed'
            else 'still_open'
        end as status,
        previous.status as previous_status,
        previous.severity as previous_severity,
        coalesce(previous.first_seen_at, {{ built_at }}) as first_seen_at,
        case
            when previous.finding_id is null or previous.status = 'resolved' then {{ built_at }}
            else previous.opened_at
        end as opened_at
    from current_findings
    left join previous
        on current_findings.run_id = previous.run_id
        and current_findings.finding_id = previous.finding_id
),

gone_now as (
    -- open at the run's previous build, absent from this one
    select
        previous.run_id,
        previous.finding_id{% for column in carried %},
        previous.{{ column }}{% endfor %},
        'resolved' as status,
        previous.status as previous_status,
        previous.severity as previous_severity,
        previous.first_seen_at,
        previous.opened_at
    from previous
    left join current_findings
        on previous.run_id = current_findings.run_id
        and previous.finding_id = current_findings.finding_id
    where previous.status <> 'resolved'
        and current_findings.finding_id is null
),

final as (
    select
        {{ sql_literal(invocation_id) }} as invocation_id,
        {{ built_at }} as built_at,
        changes.*
    from (
        select * from seen_now
        union all
        select * from gone_now
    ) as changes
)

select * from final
