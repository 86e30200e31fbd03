-- check_margins.has_fired agrees with the findings mart: a statistic group (the rows of a
-- run sharing finding_id_pattern) fired exactly when the run has a finding whose id matches
-- the pattern (any severity: a by-design note, e.g. rows replayed after an explained
-- restart, is a firing too). Returns one row per disagreement.
-- Structural: an error means the margins read a measurement the detector does not decide on.
{{ config(severity='error', tags=['invariant']) }}

with

margins as (
    select
        run_id,
        finding_id_pattern,
        max(case when has_fired then 1 else 0 end) as fired_flag
    from {{ ref('check_margins') }}
    group by run_id, finding_id_pattern
),

matched as (
    select
        margins.run_id,
        margins.finding_id_pattern,
        margins.fired_flag,
        max(case when findings.finding_id is not null then 1 else 0 end) as found_flag
    from margins
    left join {{ ref('findings') }} as findings
        on margins.run_id = findings.run_id
        and findings.finding_id like margins.finding_id_pattern
    group by margins.run_id, margins.finding_id_pattern, margins.fired_flag
),

disagreements as (
    select * from matched where fired_flag <> found_flag
)

select * from disagreements
