-- Severity and rank never disagree: no finding is more severe than one ranked
-- above it in the same run. Returns the offending pairs (a finding and the one
-- just above it).
{{ config(tags=['invariant']) }}
with

ranked as (
    select
        run_id,
        finding_id,
        harm_rank,
        severity,
        {{ severity_rank('severity') }} as severity_order,
        {{ previous_value(severity_rank('severity'), 'harm_rank', 'run_id') }} as severity_order_above,
        {{ previous_value('finding_id', 'harm_rank', 'run_id') }} as finding_above
    from {{ ref('findings') }}
)

select * from ranked
where severity_order > severity_order_above
