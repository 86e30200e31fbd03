{#- no_findings_above_info: the anomaly test of a check (models/checks/<check>/).
    arguments: none (attach to the check's detector, int_findings__<check>).
    fails with the detector's findings whose FINAL severity is above info, read back from the
    findings mart: the severity after costing and the caps (a finding's detector_severity is a
    column of its own), its harm_rank and its costs. So the failing-test count, the stored
    failures, the on-run-end problem list (macros/print_problem_list.sql), the report and
    findings.json all carry the same severity and rank (a detector's medium that the costing
    lowers to info does not fail the test).
    The folder's `where` (dbt_project.yml, data_tests: checks:) narrows the detector's rows
    first (e.g. to one of its two categories); the final severity never exceeds the detector's,
    so a row the `where` drops on the detector's severity can never be above info here. -#}
{% test no_findings_above_info(model) %}

with detected as (

    select run_id, finding_id from {{ model }}

),

ranked as (

    select * from {{ ref('findings') }}

),

findings_above_info as (

    select ranked.*
    from ranked
    inner join detected
        on ranked.run_id = detected.run_id
        and ranked.finding_id = detected.finding_id
    where ranked.severity <> 'info'

)

select * from findings_above_info

{% endtest %}
