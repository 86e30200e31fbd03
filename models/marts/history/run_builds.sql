-- One row per run each time a build diagnoses it (the batch: a new or changed run; every
-- run on a full build): when, the how-many-th build of that run it is, and what changed
-- since its previous build, counted from findings_history. Append-only like
-- findings_history (meta keeps_history): a run still training gets a row per build as its
-- log grows. The fleet mart `runs` shows each run's latest row.
{{ config(
    materialized=('incremental' if target.type == 'duckdb' else 'table'),
    full_refresh=false,
    on_schema_change='append_new_columns',
    meta={'keeps_history': true},
) }}

with

built_runs as (
    select run_id from {{ run_ref('run_summary') }}
),

this_build as (
    select *
    from {{ ref('findings_history') }}
    where invocation_id = {{ sql_literal(invocation_id) }}
),

status_counts as (
    select
        run_id,
        {%- for status in ['new', 'still_open', 'resolved', 'regressed'] %}
        cast(sum(case when status = '{{ status }}' then 1 else 0 end) as {{ dbt.type_bigint() }}) as n_{{ status }},
        {%- endfor %}
        cast(sum(case when status <> 'resolved' then 1 else 0 end) as {{ dbt.type_bigint() }}) as n_open
    from this_build
    group by run_id
),

{% if is_incremental() %}
earlier_builds as (
    select run_id, count(*) as n_builds
    from {{ this }}
    where run_id in (select run_id from built_runs)
    group by run_id
),
{% else %}
earlier_builds as (
    {{ no_rows(['run_id', 'n_builds'], {'n_builds': dbt.type_bigint()}) }}
),
{% endif %}

final as (
    select
        {{ sql_literal(invocation_id) }} as invocation_id,
        cast({{ sql_literal(run_started_at.strftime('%Y-%m-%d %H:%M:%S.%f')) }} as {{ dbt.type_timestamp() }}) as built_at,
        built_runs.run_id,
        cast(coalesce(earlier_builds.n_builds, 0) + 1 as {{ dbt.type_bigint() }}) as build_number,
        {%- for status in ['new', 'still_open', 'resolved', 'regressed', 'open'] %}
        coalesce(status_counts.n_{{ status }}, 0) as n_{{ status }}{{ ',' if not loop.last }}
        {%- endfor %}
    from built_runs
    left join status_counts
        on built_runs.run_id = status_counts.run_id
    left join earlier_builds
        on built_runs.run_id = earlier_builds.run_id
)

select * from final
