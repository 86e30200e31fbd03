-- Severity and rank never disagree: no finding is more severe than one ranked
-- above it. Returns the offending pairs (a finding and the one just above it).
with

ranked as (
    select
        finding_id,
        harm_rank,
        severity,
        {{ severity_rank('severity') }} as severity_order,
        lag({{ severity_rank('severity') }}) over (order by harm_rank rows between 1 preceding and current row) as severity_order_above,
        lag(finding_id) over (order by harm_rank rows between 1 preceding and current row) as finding_above
    from {{ ref('findings') }}
)

select * from ranked
where severity_order > severity_order_above
