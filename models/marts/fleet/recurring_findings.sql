-- One row per finding category that hits at least one run of the build (a finding
-- above info): how many runs and which, the share of the runs, the worst severity,
-- and for a sweep the hyperparameters that go with it (recurring_finding_hyperparameters:
-- the fields whose range in the runs hit lies apart from the range in the others).
-- A table rebuilt whole on every build (not an increment of the batch's runs):
-- every row aggregates across runs.
{{ config(materialized='table') }}
with

run_count as (
    select count(*) as n_runs from {{ ref('stg_training__config') }}
),

categories as (
    select category, impact_kind from {{ ref('check_catalog') }}
),

hits as (
    select
        run_id,
        category,
        count(*) as n_findings,
        max({{ severity_rank('severity') }}) as worst_severity_rank
    from {{ ref('findings') }}
    where severity <> 'info'
    group by run_id, category
),

by_category as (
    select
        category,
        count(*) as runs_hit,
        cast(sum(n_findings) as {{ dbt.type_bigint() }}) as n_findings,
        max(worst_severity_rank) as worst_severity_rank,
        {{ dbt.listagg('run_id', "', '", 'order by run_id') }} as run_ids_hit
    from hits
    group by category
),

hyperparameters as (
    select
        category,
        count(*) as n_fields_compared,
        cast(sum(case when hit_range_position in ('higher', 'lower') then 1 else 0 end) as {{ dbt.type_bigint() }}) as n_fields_apart,
        {{ dbt.listagg(
            "field_name || ' median ' || " ~ fmt('median_value_hit', 6) ~ " || ' (' || " ~ fmt('min_value_hit', 6)
            ~ " || '..' || " ~ fmt('max_value_hit', 6) ~ " || ') in the runs hit vs ' || " ~ fmt('median_value_not_hit', 6)
            ~ " || ' (' || " ~ fmt('min_value_not_hit', 6) ~ " || '..' || " ~ fmt('max_value_not_hit', 6)
            ~ " || ') in the others, ranges ' || hit_range_position",
            "'; '", 'order by field_name') }} as hyperparameter_ranges
    from {{ ref('recurring_finding_hyperparameters') }}
    where hit_range_position is not null
    group by category
),

final as (
    select
        by_category.category,
        categories.impact_kind,
        by_category.runs_hit,
        run_count.n_runs,
        {{ safe_divide('by_category.runs_hit', 'run_count.n_runs') }} as share_of_runs,
        {{ severity_name('by_category.worst_severity_rank') }} as worst_severity,
        by_category.n_findings,
        by_category.run_ids_hit,
        coalesce(hyperparameters.n_fields_compared, 0) as n_hyperparameters_compared,
        coalesce(hyperparameters.n_fields_apart, 0) as n_hyperparameters_apart,
        hyperparameters.hyperparameter_ranges
    from by_category
    cross join run_count
    left join categories
        on by_category.category = categories.category
    left join hyperparameters
        on by_category.category = hyperparameters.category
)

select * from final
