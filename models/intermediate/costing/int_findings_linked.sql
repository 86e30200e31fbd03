-- Every detector's findings in one shape, with the ledger each belongs to and
-- its symptom -> cause link checked: a cause the run did not produce is dropped
-- (the finding is then a root cause), and a symptom's cause is followed up to
-- the root, so a cause carries all its symptoms.
with

{#- run_id first, whether or not the registry's column list names it -#}
{%- set detector_columns = ['run_id'] + (finding_columns() | reject('equalto', 'run_id') | list) %}

detected as (
    {% for model in finding_detectors() %}
    select {{ detector_columns | join(', ') }} from {{ run_ref(model) }}
    {% if not loop.last %}union all{% endif %}
    {% endfor %}
),

categories as (
    select
        category,
        cast(harm_weight as {{ type_double() }}) as harm_weight,
        impact_kind,
        test_name,
        cost_estimators
    from {{ ref('check_catalog') }}
),

with_category as (
    select
        detected.*,
        categories.harm_weight,
        categories.impact_kind,
        categories.test_name,
        categories.cost_estimators,
        case categories.impact_kind
            when 'model' then 'model'
            when 'compute' then 'compute'
            else 'records'
        end as ledger
    from detected
    left join categories
        on detected.category = categories.category
),

direct as (
    -- the named cause, when the run produced it
    select with_category.*, causes.finding_id as direct_cause, causes.caused_by as cause_of_cause
    from with_category
    left join with_category as causes
        on with_category.run_id = causes.run_id
        and with_category.caused_by = causes.finding_id
),

final as (
    -- two levels are all the detectors produce (spike -> shard, row -> restart); a cause
    -- of a cause that exists is followed once, so the root carries the symptom
    select
        direct.run_id,
        direct.finding_id,
        direct.category,
        direct.severity as detector_severity,
        direct.title,
        direct.evidence,
        direct.first_step,
        direct.last_step,
        direct.steps_affected,
        direct.observed_value,
        direct.expected_value,
        direct.threshold_value,
        direct.threshold_name,
        direct.estimated_cost,
        direct.cost_unit,
        direct.cost_method,
        direct.impact_score,
        direct.harm_weight,
        direct.impact_kind,
        direct.test_name,
        direct.cost_estimators,
        direct.ledger,
        direct.recommendation,
        direct.direct_cause as caused_by,
        coalesce(roots.finding_id, direct.direct_cause) as root_cause
    from direct
    left join with_category as roots
        on direct.run_id = roots.run_id
        and direct.cause_of_cause = roots.finding_id
)

select * from final
