-- One row per problem in each run, with its evidence, what it cost (see
-- int_findings_costed: model ledger in nats of final validation loss, compute
-- ledger in seconds, records ledger at no cost) and its rank. The overall rank
-- orders by severity (derived from the cost), then ledger (model, compute,
-- records), root causes before symptoms, a priced cost before one within the
-- run's noise floor, then cost: severity never rises down
-- the ranking, a symptom never outranks its cause, and a by-design note never
-- outranks a material problem. harm_score (the older harm_weight x share of
-- the run score, plus the symptoms' own harm) is kept for readers of it.
with

costed as (
    select * from {{ run_ref('int_findings_costed') }}
),

harmed as (
    select
        costed.*,
        coalesce(costed.impact_score, 0) * coalesce(costed.harm_weight, 1) as own_harm
    from costed
),

symptom_harm as (
    select run_id, caused_by as finding_id, {{ stable_sum('own_harm') }} as symptoms_harm, count(*) as symptom_count
    from harmed
    where caused_by is not null
    group by run_id, caused_by
),

scored as (
    select
        harmed.run_id,
        harmed.finding_id,
        harmed.category,
        harmed.severity,
        harmed.detector_severity,
        harmed.ledger,
        harmed.title,
        harmed.evidence,
        harmed.first_step,
        harmed.last_step,
        harmed.steps_affected,
        harmed.observed_value,
        harmed.expected_value,
        harmed.threshold_value,
        harmed.threshold_name,
        harmed.val_loss_cost,
        harmed.val_loss_cost_low,
        harmed.val_loss_cost_high,
        harmed.val_loss_cost_share,
        case when harmed.ledger = 'model' then harmed.noise_floor end as noise_floor,
        coalesce(harmed.cost_within_noise, false) as cost_within_noise,
        -- an estimator whose inputs are missing (no evaluations, no schedule to compare with) gave no cost
        case when harmed.val_loss_cost is null then 'none' else harmed.cost_estimator end as cost_estimator,
        case when harmed.val_loss_cost is null and harmed.cost_estimator <> 'none'
            then 'No estimate: the ' || harmed.cost_estimator || ' estimator lacks its inputs in these logs (evaluations or a schedule to compare with); severity is the detector''s.'
            else harmed.cost_evidence end as cost_evidence,
        harmed.confirm_rerun,
        harmed.compute_seconds_lost,
        harmed.compute_share_lost,
        harmed.estimated_cost,
        harmed.cost_unit,
        harmed.cost_method,
        harmed.impact_kind,
        harmed.own_harm,
        coalesce(symptom_harm.symptom_count, 0) as symptom_count,
        harmed.own_harm + coalesce(symptom_harm.symptoms_harm, 0) as harm_score,
        harmed.caused_by,
        (harmed.caused_by is null) as is_root_cause,
        harmed.recommendation,
        harmed.test_name,
        {{ severity_rank('harmed.severity') }} as severity_order,
        case harmed.ledger when 'model' then 1 when 'compute' then 2 else 3 end as ledger_order
    from harmed
    left join symptom_harm
        on harmed.run_id = symptom_harm.run_id
        and harmed.finding_id = symptom_harm.finding_id
),

{#- within a severity: root causes first, a priced cost before one within noise, then the cost,
    then the older harm score as a tie-breaker; a finding not tied to steps (first_step NULL) after
    those that are, on every engine -#}
{%- set cost_order -%}
    case when is_root_cause then 0 else 1 end, case when cost_within_noise then 1 else 0 end,
    coalesce(val_loss_cost, -1) desc, coalesce(compute_seconds_lost, -1) desc,
    harm_score desc, first_step nulls last, finding_id
{%- endset %}

final as (
    select
        run_id, finding_id, category, severity, detector_severity, ledger, title, evidence, first_step, last_step, steps_affected,
        observed_value, expected_value, threshold_value, threshold_name, val_loss_cost, val_loss_cost_low, val_loss_cost_high, val_loss_cost_share,
        noise_floor, cost_within_noise, cost_estimator, cost_evidence, confirm_rerun, compute_seconds_lost, compute_share_lost,
        estimated_cost, cost_unit, cost_method, impact_kind, own_harm, symptom_count, harm_score, caused_by, is_root_cause,
        recommendation, test_name,
        row_number() over (
            partition by run_id
            order by severity_order desc, ledger_order, {{ cost_order }}
            rows between unbounded preceding and current row
        ) as harm_rank,
        row_number() over (
            partition by run_id, ledger order by severity_order desc, {{ cost_order }}
            rows between unbounded preceding and current row
        ) as ledger_rank
    from scored
)

select * from final
