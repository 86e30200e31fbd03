-- The audit accounts for every raw row exactly once: for each run and file, the rows of
-- audit_summary add up to the file's raw_rows, and raw_rows equals the rows the
-- staging model of that file holds (staging drops no row). Returns one row per
-- run and file where a count disagrees, with all the counts. Structural: an error means
-- a model lost or invented rows, not that the run is bad.
{{ config(severity='error', tags=['invariant']) }}

with

audited as (
    select
        run_id,
        file_kind,
        sum(n_rows) as audited_rows,
        min(raw_rows) as raw_rows,
        max(raw_rows) as raw_rows_max
    from {{ ref('audit_summary') }}
    group by run_id, file_kind
),

staged as (
    select run_id, 'train' as file_kind, count(*) as staged_rows from {{ ref('stg_training__steps') }} group by run_id
    union all
    select run_id, 'eval' as file_kind, count(*) as staged_rows from {{ ref('stg_training__evals') }} group by run_id
    union all
    select run_id, 'shards' as file_kind, count(*) as staged_rows from {{ ref('stg_training__shards') }} group by run_id
    union all
    select run_id, 'events' as file_kind, count(*) as staged_rows from {{ ref('stg_training__events') }} group by run_id
    union all
    select run_id, 'config' as file_kind, count(*) as staged_rows from {{ ref('stg_training__config') }} group by run_id
),

compared as (
    -- a file with no rows has no audit_summary rows: its counts are 0
    select
        coalesce(staged.run_id, audited.run_id) as run_id,
        coalesce(staged.file_kind, audited.file_kind) as file_kind,
        coalesce(audited.audited_rows, 0) as audited_rows,
        coalesce(audited.raw_rows, 0) as raw_rows,
        coalesce(audited.raw_rows_max, 0) as raw_rows_max,
        coalesce(staged.staged_rows, 0) as staged_rows
    from staged
    full outer join audited
        on staged.run_id = audited.run_id
        and staged.file_kind = audited.file_kind
),

failures as (
    select
        *,
        case
            when raw_rows <> raw_rows_max then 'raw_rows differs between the rows of the file in audit_summary'
            when audited_rows <> raw_rows then 'sum(n_rows) in audit_summary differs from raw_rows'
            when raw_rows <> staged_rows then 'raw_rows differs from the rows of the staging model'
        end as failure_reason
    from compared
)

select * from failures
where failure_reason is not null
