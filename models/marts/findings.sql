-- One row per problem in the run, with its evidence, its estimated cost and a
-- harm score that ranks it. harm_score = harm_weight (finding_categories seed:
-- model quality 1.0 > compute > logging) x the detector's impact_score (share of
-- the run affected, scaled by how hard it hit), plus, for a root cause, the
-- harm of the symptoms it explains, so a cause always ranks above its symptoms.
with

detected as (
    {% for model in finding_detectors() %}
    select {{ finding_columns() | join(', ') }} from {{ ref(model) }}
    {% if not loop.last %}union all{% endif %}
    {% endfor %}
),

categories as (
    select
        category,
        cast(harm_weight as {{ type_double() }}) as harm_weight,
        impact_kind,
        test_name
    from {{ ref('finding_categories') }}
),

weighted as (
    select
        detected.*,
        categories.harm_weight,
        categories.impact_kind,
        categories.test_name,
        coalesce(detected.impact_score, 0) * coalesce(categories.harm_weight, 1) as own_harm
    from detected
    left join categories
        on detected.category = categories.category
),

linked as (
    -- a cause that was not itself found (its detector did not fire) is dropped
    select
        weighted.*,
        causes.finding_id as valid_cause
    from weighted
    left join weighted as causes
        on weighted.caused_by = causes.finding_id
),

symptom_harm as (
    select valid_cause as finding_id, sum(own_harm) as symptoms_harm, count(*) as symptom_count
    from linked
    where valid_cause is not null
    group by valid_cause
),

scored as (
    select
        linked.finding_id,
        linked.category,
        linked.severity,
        linked.title,
        linked.evidence,
        linked.first_step,
        linked.last_step,
        linked.steps_affected,
        linked.observed_value,
        linked.expected_value,
        linked.estimated_cost,
        linked.cost_unit,
        linked.cost_method,
        linked.impact_kind,
        linked.own_harm,
        coalesce(symptom_harm.symptom_count, 0) as symptom_count,
        linked.own_harm + coalesce(symptom_harm.symptoms_harm, 0) as harm_score,
        linked.valid_cause as caused_by,
        (linked.valid_cause is null) as is_root_cause,
        linked.recommendation,
        linked.test_name
    from linked
    left join symptom_harm
        on linked.finding_id = symptom_harm.finding_id
),

final as (
    select
        *,
        row_number() over (
            order by harm_score desc, case when is_root_cause then 0 else 1 end,
                {{ severity_rank('severity') }} desc, first_step, finding_id
        ) as harm_rank
    from scored
)

select * from final
