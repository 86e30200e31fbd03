-- One row per run of the build: its final and best numbers, how bad its worst finding
-- is, how many findings of each severity it has, the finding to fix first (from
-- run_summary, with its category, title and cost), the baseline it names, and what changed
-- at its latest build (run_builds: how many findings are new, still open, resolved, regressed).
-- A table rebuilt whole on every build (not an increment of the batch's runs):
-- is_baseline_in_build reads the other runs.
{{ config(materialized='table') }}
with

config as (
    -- the run spine: one row per run
    select run_id, run_name, source_format, baseline_run_id from {{ ref('stg_training__config') }}
),

summary as (
    select * from {{ ref('run_summary') }}
),

findings as (
    select * from {{ ref('findings') }}
),

latest_build as (
    -- each run's latest row of the build history
    select *
    from (
        select
            run_builds.*,
            row_number() over (
                partition by run_builds.run_id order by run_builds.built_at desc
                rows between unbounded preceding and current row
            ) as recency
        from {{ ref('run_builds') }} as run_builds
    ) as ordered
    where recency = 1
),

severity_counts as (
    select
        run_id,
        max({{ severity_rank('severity') }}) as worst_severity_rank,
        count(*) as n_findings,
        {%- for severity in ['critical', 'high', 'medium', 'low', 'info'] %}
        cast(sum(case when severity = '{{ severity }}' then 1 else 0 end) as {{ dbt.type_bigint() }}) as n_{{ severity }}{{ ',' if not loop.last }}
        {%- endfor %}
    from findings
    group by run_id
),

final as (
    select
        config.run_id,
        config.run_name,
        config.source_format,
        summary.steps_counted,
        summary.last_step,
        summary.wall_clock_sec,
        summary.final_eval_step,
        summary.final_val_loss,
        summary.best_eval_step,
        summary.best_val_loss,
        summary.final_train_loss,
        case when severity_counts.worst_severity_rank is not null
            then {{ severity_name('severity_counts.worst_severity_rank') }} end as worst_severity,
        coalesce(severity_counts.n_findings, 0) as n_findings,
        {%- for severity in ['critical', 'high', 'medium', 'low', 'info'] %}
        coalesce(severity_counts.n_{{ severity }}, 0) as n_{{ severity }},
        {%- endfor %}
        summary.fix_first_finding_id,
        fix_first.category as fix_first_category,
        fix_first.severity as fix_first_severity,
        fix_first.title as fix_first_title,
        fix_first.ledger as fix_first_ledger,
        fix_first.val_loss_cost as fix_first_val_loss_cost,
        fix_first.compute_seconds_lost as fix_first_compute_seconds_lost,
        config.baseline_run_id,
        (baselines.run_id is not null) as is_baseline_in_build,
        latest_build.build_number,
        {%- for status in ['new', 'still_open', 'resolved', 'regressed'] %}
        latest_build.n_{{ status }} as n_{{ status }}_since_previous_build{{ ',' if not loop.last }}
        {%- endfor %}
    from config
    left join summary
        on config.run_id = summary.run_id
    left join severity_counts
        on config.run_id = severity_counts.run_id
    left join findings as fix_first
        on summary.run_id = fix_first.run_id
        and summary.fix_first_finding_id = fix_first.finding_id
    left join latest_build
        on config.run_id = latest_build.run_id
    left join config as baselines
        on config.baseline_run_id = baselines.run_id
        and config.baseline_run_id <> config.run_id
)

select * from final
