-- Finding: the first logged training loss is above the cross-entropy of a uniform
-- guess (ln of the vocabulary size: the config's vocab_size, else the largest
-- vocabulary in common use, initial_loss_max_vocab_size) while the run's loss is
-- otherwise on a per-token cross-entropy scale (its median above 0 and below that
-- ceiling). A freshly initialised or pretrained model starts at or below the ceiling;
-- far above it, the initial logits are mis-scaled (init, a missing final norm or
-- logit scaling, a wrong head) or the loss is mis-reduced (summed instead of averaged).
-- Medium only when the evidence is strong: the first loss well above the ceiling, at
-- least two logged losses above it from the start, and the run's median clearly on
-- the per-token scale; low otherwise, with the reason. Evidence: the first losses, the
-- ceiling and where it comes from, the run's median, the step the loss came under it.
with

config as (
    -- one row per run: the run spine
    select run_id, vocab_size from {{ run_ref('stg_training__config') }}
),

ceilings as (
    select
        run_id,
        vocab_size,
        ln(cast(coalesce(vocab_size, {{ threshold('initial_loss_max_vocab_size') }}) as {{ type_double() }})) as chance_loss
    from config
),

losses as (
    select
        resolved.run_id,
        resolved.step,
        resolved.loss,
        ceilings.vocab_size,
        ceilings.chance_loss,
        row_number() over (partition by resolved.run_id order by resolved.step) as position,
        -- how many logged losses so far were at or under the ceiling: 0 on the abnormal start
        sum(case when resolved.loss <= ceilings.chance_loss then 1 else 0 end) over (
            partition by resolved.run_id order by resolved.step rows between unbounded preceding and current row
        ) as points_under_so_far
    from {{ run_ref('int_train_steps_resolved') }} as resolved
    inner join ceilings
        on resolved.run_id = ceilings.run_id
    where resolved.loss is not null and not coalesce(resolved.is_loss_non_finite, false)
),

measured as (
    -- (vocab_size and chance_loss are the same on every row of a run)
    select
        run_id,
        max(vocab_size) as vocab_size,
        max(chance_loss) as chance_loss,
        count(*) as n_losses,
        min(case when position = 1 then step end) as first_step,
        max(case when position = 1 then loss end) as first_loss,
        max(case when position = 2 then loss end) as second_loss,
        sum(case when points_under_so_far = 0 then 1 else 0 end) as points_above,
        max(case when points_under_so_far = 0 then step end) as last_step_above,
        min(case when points_under_so_far > 0 then step end) as first_step_under,
        percentile_cont(0.5) within group (order by loss) as median_loss
    from losses
    group by run_id
),

starts as (
    select
        measured.*,
        {{ safe_divide('first_loss', 'chance_loss') }} as first_ratio
    from measured
    where n_losses >= {{ threshold('initial_loss_min_points') }}
        and first_loss >= {{ threshold('initial_loss_min_ratio') }} * chance_loss
        -- the rest of the run is a per-token cross-entropy: above 0, under the ceiling
        and median_loss > 0
        and median_loss < chance_loss
),

assessed as (
    select
        *,
        (
            first_ratio >= {{ threshold('initial_loss_medium_ratio') }}
            and points_above >= {{ threshold('initial_loss_medium_min_points_above') }}
            and median_loss <= {{ threshold('initial_loss_medium_max_median_share') }} * chance_loss
        ) as is_strong
    from starts
),

final as (
    select
        run_id,
        'initial_loss_too_high:start' as finding_id,
        'initial_loss_too_high' as category,
        case when is_strong then 'medium' else 'low' end as severity,
        'The first logged loss ' || {{ fmt('first_loss', 2) }} || ' (step ' || {{ fmt_int('first_step') }} || ') is '
            || {{ fmt('first_ratio', 2) }} || 'x the loss of a uniform guess, ln(' || {{ fmt_int('coalesce(vocab_size, ' ~ threshold('initial_loss_max_vocab_size') ~ ')') }}
            || ') = ' || {{ fmt('chance_loss', 2) }} || ': the initial logits are mis-scaled or the loss is mis-reduced.' as title,
        'first logged losses ' || {{ fmt('first_loss', 4) }} || coalesce(', ' || {{ fmt('second_loss', 4) }}, '')
            || '; ' || {{ fmt_int('points_above') }} || ' logged loss(es) from the start above the ceiling'
            || coalesce(', under it from step ' || {{ fmt_int('first_step_under') }}, '')
            || '; ceiling ' || {{ fmt('chance_loss', 3) }} || ' nats = ln('
            || case when vocab_size is not null then 'vocab_size ' || {{ fmt_int('vocab_size') }} || ' from the config)'
                else {{ fmt_int(threshold('initial_loss_max_vocab_size')) }} || ') (the largest vocabulary in common use; the config has no vocab_size)' end
            || '; run median loss ' || {{ fmt('median_loss', 4) }} || ', above 0 and under the ceiling'
            || case when is_strong then ''
                else '; low: ' || case
                    when first_ratio < {{ threshold('initial_loss_medium_ratio') }}
                        then 'the first loss is less than ' || {{ threshold('initial_loss_medium_ratio') }} || 'x the ceiling'
                    when points_above < {{ threshold('initial_loss_medium_min_points_above') }}
                        then 'only ' || {{ fmt_int('points_above') }} || ' logged loss above the ceiling'
                    else 'the run''s median loss is over ' || {{ fmt_pct(threshold('initial_loss_medium_max_median_share')) }}
                        || ' of the ceiling, so the loss may not be per-token (a summed or unnormalised loss)'
                end end as evidence,
        first_step,
        coalesce(last_step_above, first_step) as last_step,
        points_above as steps_affected,
        first_loss as observed_value,
        chance_loss as expected_value,
        {{ threshold('initial_loss_min_ratio') }} * chance_loss as threshold_value,
        'initial_loss_min_ratio' as threshold_name,
        first_loss - chance_loss as estimated_cost,
        'nats' as cost_unit,
        'first logged loss minus the loss of a uniform guess over the vocabulary' as cost_method,
        least(1.0, {{ safe_divide('first_loss - chance_loss', 'chance_loss') }}) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Check the loss at step 0 before training: it should be near ln(vocabulary size). If higher, look at the '
            || 'output head''s initialisation and scaling (logit scale, tied embeddings, a missing final norm) and at the '
            || 'loss reduction (mean over tokens, not a sum; normalised by gradient accumulation).' as recommendation
    from assessed
)

select * from final
