-- Every detector emits well-formed rows: a finding_id that is not null and
-- unique within the detector and run, and a severity among the five levels. One test
-- over all detectors (the list in macros/findings_registry.sql) instead of three
-- copies on each; returns one row per offending finding with the reason.
-- Structural: an error means a detector is broken, not that the run is bad.
{{ config(severity='error') }}

with

detected as (
    {% for model in finding_detectors() %}
    select run_id, '{{ model }}' as detector, finding_id, severity from {{ ref(model) }}
    {% if not loop.last %}union all{% endif %}
    {% endfor %}
),

id_counts as (
    select run_id, detector, finding_id, count(*) as n_rows
    from detected
    group by run_id, detector, finding_id
),

offending as (
    select run_id, detector, finding_id, cast(null as {{ dbt.type_string() }}) as severity, 'finding_id is null' as reason
    from id_counts
    where finding_id is null
    union all
    select run_id, detector, finding_id, cast(null as {{ dbt.type_string() }}) as severity, 'finding_id repeats' as reason
    from id_counts
    where finding_id is not null and n_rows > 1
    union all
    select run_id, detector, finding_id, severity, 'severity not critical, high, medium, low or info' as reason
    from detected
    where severity is null or severity not in ('critical', 'high', 'medium', 'low', 'info')
)

select * from offending
