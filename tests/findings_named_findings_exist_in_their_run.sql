-- Every finding_id another mart row names is a finding of the SAME run: a
-- finding's caused_by, and run_summary's fix_first, runner_up and compute_top.
-- (finding_ids repeat across runs, so a plain relationships test would pass on
-- an id borrowed from another run.) Returns one row per dangling reference.
-- Structural: an error means a join lost its run_id, not that the run is bad.
{{ config(severity='error', tags=['invariant']) }}

with

findings as (
    select run_id, finding_id from {{ ref('findings') }}
),

{%- set references = [
    ('findings', 'caused_by'),
    ('run_summary', 'fix_first_finding_id'),
    ('run_summary', 'runner_up_finding_id'),
    ('run_summary', 'compute_top_finding_id'),
] %}

named as (
    {%- for model, column in references %}
    select
        run_id,
        '{{ model }}.{{ column }}' as named_in,
        {{ column }} as finding_id
    from {{ ref(model) }}
    where {{ column }} is not null
    {% if not loop.last %}union all{% endif %}
    {%- endfor %}
),

dangling as (
    select named.*
    from named
    left join findings
        on named.run_id = findings.run_id
        and named.finding_id = findings.finding_id
    where findings.finding_id is null
)

select * from dangling
