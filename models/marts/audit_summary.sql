-- What was done with the raw rows, per run, file, outcome and reason, with each
-- file's raw row count: the counts of a run's file add up to raw_rows.
with

audited as (
    select * from {{ run_ref('int_raw_rows_audited') }}
),

grouped as (
    select
        run_id,
        file_kind,
        outcome,
        coalesce(reason, 'as logged') as reason,
        count(*) as n_rows,
        min(step) as first_step,
        max(step) as last_step
    from audited
    group by run_id, file_kind, outcome, coalesce(reason, 'as logged')
),

file_totals as (
    select run_id, file_kind, count(*) as raw_rows from audited group by run_id, file_kind
),

final as (
    select
        grouped.run_id,
        grouped.file_kind || ':' || grouped.outcome || ':' || grouped.reason as audit_group_id,
        grouped.file_kind,
        grouped.outcome,
        grouped.reason,
        grouped.n_rows,
        grouped.first_step,
        grouped.last_step,
        file_totals.raw_rows
    from grouped
    inner join file_totals
        on grouped.run_id = file_totals.run_id
        and grouped.file_kind = file_totals.file_kind
)

select * from final
