-- Validation loss after its minimum, per run with evaluations: the held-out minimum
-- (step, value), the final value and the relative rise, the eval-to-eval noise, the
-- lowest of the last evaluations, whether the rise is a sustained mild one (under
-- overfit_min_relative_rise but beyond the eval noise), and whether the overfitting
-- check fires (is_overfitting; int_findings__overfitting reports those runs). The
-- sustained rise's share of its bar is what check_margins reads.
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
        min(case when eval_index > eval_count - {{ threshold('overfit_sustained_min_evals') }} then val_loss end)
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
            {{ safe_divide('last_eval.final_val_loss - best.best_val_loss', 'best.best_val_loss') }} < {{ threshold('overfit_min_relative_rise') }}
            and after_best.evals_after_best >= {{ threshold('overfit_sustained_min_evals') }}
            and after_best.lowest_of_last_evals - best.best_val_loss >= {{ threshold('overfit_sustained_noise_multiple') }} * after_best.eval_noise
            and after_best.lowest_of_last_evals - best.best_val_loss
                >= {{ threshold('overfit_sustained_min_relative_rise') }} * best.best_val_loss
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
        end as share_of_gain_given_back,
        -- a run that learns nothing is not overfitting (see no_learning): its validation loss rises for another
        -- reason. Overfitting needs validation to have improved meaningfully on chance (not at or near the
        -- chance level) and, with an LR far outside its usual range or a training loss that barely fell,
        -- on its first value (int_learning_progress_measured.learning_verdict)
        coalesce(progress.learning_verdict, 'learned') not in ('at_chance', 'near_chance', 'flat', 'no_val_gain', 'got_worse')
            as is_learning_shown
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
),

final as (
    select
        *,
        coalesce(
            is_learning_shown
            and best_step < final_step
            and (relative_rise >= {{ threshold('overfit_min_relative_rise') }} or is_sustained_mild_rise)
            and evals_after_best >= {{ threshold('overfit_min_evals_after_best') }}
            -- training loss fell or stayed level (within overfit_train_rise_tolerance): if both rise, it is instability
            and coalesce(train_at_final <= train_at_best * (1 + {{ threshold('overfit_train_rise_tolerance') }}), true),
            false
        ) as is_overfitting,
        -- the lowest of the last evaluations above the minimum, as a share of the sustained rule's bar
        -- (the larger of overfit_sustained_noise_multiple x the eval noise and
        -- overfit_sustained_min_relative_rise x the minimum): 1 at the bar
        least(
            {{ safe_divide('lowest_of_last_evals - best_val_loss', threshold('overfit_sustained_noise_multiple') ~ ' * eval_noise') }},
            {{ safe_divide('lowest_of_last_evals - best_val_loss', threshold('overfit_sustained_min_relative_rise') ~ ' * best_val_loss') }}
        ) as sustained_rise_share
    from assessed
)

select * from final
