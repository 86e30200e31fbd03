-- Finding: validation loss reached its minimum and then rose while training
-- loss kept falling. Evidence: the held-out minimum (step, value: the
-- checkpoint to keep), the final value, the gap, the training loss trend.
-- A rise under overfit_min_relative_rise is reported as low only when it is
-- sustained (the last evaluations all above the minimum by more than the eval
-- curve's own noise) while training loss does not rise (the same tolerance).
with

evals as (
    select * from {{ run_ref('int_evals_compared') }}
),

best as (
    select run_id, step as best_step, val_loss as best_val_loss, train_loss_smoothed as train_at_best
    from evals where is_best
),

first_eval as (
    select run_id, val_loss as first_val_loss
    from evals
    where eval_index = 1
),

last_eval as (
    select run_id, step as final_step, val_loss as final_val_loss, train_loss_smoothed as train_at_final
    from evals
    where eval_index = eval_count
),

from_best as (
    -- the evaluations from the minimum on (the minimum included), each with its change from the one before
    select
        evals.run_id,
        evals.val_loss,
        evals.eval_index,
        evals.eval_count,
        evals.step > best.best_step as is_after_best,
        abs(evals.val_loss - {{ previous_value('evals.val_loss', 'evals.step', 'evals.run_id') }}) as eval_change
    from evals
    inner join best
        on evals.run_id = best.run_id
        and evals.step >= best.best_step
),

after_best as (
    -- one row per run with a best evaluation (0 evaluations after it when the minimum is the last):
    -- what came after the minimum, the eval-to-eval noise from the minimum on, and the lowest of
    -- the last evaluations
    select
        run_id,
        sum(case when is_after_best then 1 else 0 end) as evals_after_best,
        max(case when is_after_best then val_loss end) as worst_after_best,
        percentile_cont(0.5) within group (order by eval_change) as eval_noise,
        min(case when eval_index > eval_count - {{ var('overfit_sustained_min_evals') }} then val_loss end)
            as lowest_of_last_evals
    from from_best
    group by run_id
),

totals as (
    select run_id, max(step) as last_step, count(*) as counted_steps
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

progress as (
    select run_id, learning_verdict, has_val_gain, first_eval_step from {{ run_ref('int_learning_progress_measured') }}
),

assessed as (
    select
        best.run_id,
        best.best_step,
        best.best_val_loss,
        best.train_at_best,
        last_eval.final_step,
        last_eval.final_val_loss,
        last_eval.train_at_final,
        after_best.evals_after_best,
        after_best.worst_after_best,
        after_best.eval_noise,
        after_best.lowest_of_last_evals,
        -- a rise under the overfit_min_relative_rise floor that is sustained beyond the eval noise
        (
            {{ safe_divide('last_eval.final_val_loss - best.best_val_loss', 'best.best_val_loss') }} < {{ var('overfit_min_relative_rise') }}
            and after_best.evals_after_best >= {{ var('overfit_sustained_min_evals') }}
            and after_best.lowest_of_last_evals - best.best_val_loss >= {{ var('overfit_sustained_noise_multiple') }} * after_best.eval_noise
            and after_best.lowest_of_last_evals - best.best_val_loss
                >= {{ var('overfit_sustained_min_relative_rise') }} * best.best_val_loss
        ) as is_sustained_mild_rise,
        totals.last_step,
        coalesce(totals.counted_steps, 0) as counted_steps,
        -- validation never improved meaningfully on its first value (nor before it): the rise may be
        -- from the first evaluation on, but that validation ever improved is not shown
        coalesce(not progress.has_val_gain, false) as is_without_val_gain,
        progress.first_eval_step,
        {{ safe_divide('last_eval.final_val_loss - best.best_val_loss', 'best.best_val_loss') }} as relative_rise,
        -- the share of the held-out gain (first evaluation -> minimum) given back by the end; null when
        -- the first evaluation is the minimum (nothing was gained, so the whole rise is loss)
        case when first_eval.first_val_loss > best.best_val_loss
            then {{ safe_divide('last_eval.final_val_loss - best.best_val_loss', 'first_eval.first_val_loss - best.best_val_loss') }}
        end as share_of_gain_given_back
    from best
    inner join first_eval
        on best.run_id = first_eval.run_id
    inner join last_eval
        on best.run_id = last_eval.run_id
    inner join after_best
        on best.run_id = after_best.run_id
    -- a run with no counted train steps keeps its row (the whole-log aggregate gave one)
    left join totals
        on best.run_id = totals.run_id
    left join progress
        on best.run_id = progress.run_id
    -- a run that learns nothing is not overfitting (see no_learning): its validation loss rises for another
    -- reason. Overfitting needs validation to have improved meaningfully on chance (not at or near the
    -- chance level) and, with an LR far outside its usual range or a training loss that barely fell,
    -- on its first value (int_learning_progress_measured.learning_verdict)
    where coalesce(progress.learning_verdict, 'learned') not in ('at_chance', 'near_chance', 'flat', 'no_val_gain')
),

final as (
    select
        run_id,
        'overfitting:' || {{ fmt_int('best_step') }} as finding_id,
        'overfitting' as category,
        case
            when is_sustained_mild_rise then 'low'
            -- never shown to have improved first: at most medium
            when is_without_val_gain and relative_rise >= {{ var('overfit_medium_relative_rise') }} then 'medium'
            -- a late drift that gives back only a sliver of what training gained is mild: at most medium
            when coalesce(share_of_gain_given_back, 1) < {{ var('overfit_mild_gain_share') }}
                and relative_rise >= {{ var('overfit_medium_relative_rise') }} then 'medium'
            when relative_rise >= {{ var('overfit_high_relative_rise') }} then 'high'
            when relative_rise >= {{ var('overfit_medium_relative_rise') }} then 'medium'
            else 'low'
        end as severity,
        'Validation loss bottomed at ' || {{ fmt('best_val_loss', 4) }} || ' at step ' || {{ fmt_int('best_step') }}
            || ' and ended ' || {{ fmt_pct('relative_rise') }} || ' higher (' || {{ fmt('final_val_loss', 4) }}
            || ' at step ' || {{ fmt_int('final_step') }} || ') while training loss '
            || case when train_at_final < train_at_best then 'kept falling' else 'stayed level' end || ': keep the step '
            || {{ fmt_int('best_step') }} || ' checkpoint.' as title,
        'held-out minimum: val_loss ' || {{ fmt('best_val_loss', 4) }} || ' at step ' || {{ fmt_int('best_step') }}
            || '; final val_loss ' || {{ fmt('final_val_loss', 4) }} || ' at step ' || {{ fmt_int('final_step') }}
            || ' (+' || {{ fmt('final_val_loss - best_val_loss', 4) }} || ', ' || {{ fmt_pct('relative_rise') }} || '); '
            || {{ fmt_int('evals_after_best') }} || ' evaluations after the minimum, worst ' || {{ fmt('worst_after_best', 4) }}
            || coalesce('; gave back ' || {{ fmt_pct('share_of_gain_given_back') }} || ' of the held-out gain since the first evaluation'
                || case when share_of_gain_given_back < {{ var('overfit_mild_gain_share') }} then ' (a mild late drift)' else '' end, '')
            || '; training loss (trailing median) ' || {{ fmt('train_at_best', 4) }} || ' at the minimum -> '
            || {{ fmt('train_at_final', 4) }} || ' at the end'
            || case when is_sustained_mild_rise
                then '; under the ' || {{ fmt_pct(var('overfit_min_relative_rise')) }} || ' floor, so low: reported because it is sustained, the last '
                    || {{ fmt_int(var('overfit_sustained_min_evals')) }} || ' evaluations all at least '
                    || {{ fmt('lowest_of_last_evals - best_val_loss', 4) }} || ' above the minimum, '
                    || {{ fmt(safe_divide('lowest_of_last_evals - best_val_loss', 'eval_noise'), 1) }}
                    || 'x the eval-to-eval noise ' || {{ fmt('eval_noise', 4) }}
                else '' end
            || case when is_without_val_gain
                then '; validation never improved meaningfully on its first evaluation (step ' || {{ fmt_int('first_eval_step') }}
                    || ') and the training loss had not yet fallen by then: at most medium, the best checkpoint may predate the evaluations'
                else '' end as evidence,
        best_step as first_step,
        final_step as last_step,
        last_step - best_step as steps_affected,
        final_val_loss as observed_value,
        best_val_loss as expected_value,
        final_val_loss - best_val_loss as estimated_cost,
        'val_loss' as cost_unit,
        'final validation loss minus the held-out minimum: what training past the minimum cost' as cost_method,
        least(1.0, relative_rise / 0.05) * {{ safe_divide('last_step - best_step', 'last_step') }} as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Keep the checkpoint nearest step ' || {{ fmt_int('best_step') }}
            || '; for the large run add early stopping on validation loss, more unique data or fewer epochs.' as recommendation
    from assessed
    where best_step < final_step
        and (relative_rise >= {{ var('overfit_min_relative_rise') }} or is_sustained_mild_rise)
        and evals_after_best >= {{ var('overfit_min_evals_after_best') }}
        -- training loss fell or stayed level (within overfit_train_rise_tolerance): if both rise, it is instability
        and coalesce(train_at_final <= train_at_best * (1 + {{ var('overfit_train_rise_tolerance') }}), true)
)

select * from final
