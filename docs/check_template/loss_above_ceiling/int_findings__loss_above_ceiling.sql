-- Detector (a worked example of a check, docs/adding-a-check.md): one finding per run whose
-- training loss went above loss_ceiling_nats, a value no mean cross-entropy reaches (a loss
-- summed over tokens instead of averaged, or logged in the wrong unit). The finding shape is
-- finding_columns() (macros/findings_registry.sql); the threshold is declared in the YAML.
with

steps as (
    select run_id, step, loss
    from {{ run_ref('int_train_steps_resolved') }}
    where loss is not null
),

above as (
    select
        run_id,
        min(step) as first_step,
        max(step) as last_step,
        count(*) as steps_affected,
        max(loss) as highest_loss
    from steps
    where loss > {{ threshold('loss_ceiling_nats') }}
    group by run_id
),

final as (
    select
        run_id,
        'loss_above_ceiling:run' as finding_id,
        'loss_above_ceiling' as category,
        'high' as severity,
        'Training loss above ' || {{ fmt(threshold('loss_ceiling_nats')) }} || ' nats: not a mean cross-entropy' as title,
        {{ fmt_int('steps_affected') }} || ' steps logged a loss above the ceiling, up to ' || {{ fmt('highest_loss') }} as evidence,
        first_step,
        last_step,
        steps_affected,
        cast(highest_loss as {{ type_double() }}) as observed_value,
        cast({{ threshold('loss_ceiling_nats') }} as {{ type_double() }}) as expected_value,
        cast({{ threshold('loss_ceiling_nats') }} as {{ type_double() }}) as threshold_value,
        'loss_ceiling_nats' as threshold_name,
        cast(null as {{ type_double() }}) as estimated_cost,
        cast(null as {{ dbt.type_string() }}) as cost_unit,
        cast(null as {{ dbt.type_string() }}) as cost_method,
        cast(1.0 as {{ type_double() }}) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Check how the loss is reduced (a mean over tokens, not a sum) and logged (nats per token).' as recommendation
    from above
)

select * from final
