-- Validation loss after its minimum, per run with evaluations: the held-out minimum
-- (step, value), the final value and the relative rise, the eval-to-eval noise, the
-- lowest of the last evaluations, whether the rise is a sustained mild one (under
-- overfit_min_relative_rise but beyond the eval noise), and whether the overfitting
-- check fires (is_overfitting; int_findings__overfitting reports those runs). The
-- sustained rise's share of its bar is what check_margins reads.
-- The severity is graded on levels, not points: the median validation (and training) loss
-- over a window around the minimum against the median over the last evaluations, the rise
-- against the standard error of that difference from the eval noise (is_rise_beyond_noise),
-- and whether validation is on the training loss's scale at all (is_scale_mismatched).
-- A minimum that is a dip below a plateau the validation loss held before it, and ended
-- back at, is no rise after a minimum (is_dip_from_plateau: low); nor is a rise that came in
-- one step between two evaluations (is_step_rise: low).
with

evals as (
    select * from {{ run_ref('int_evals_compared') }}
),

best as (
    select
        run_id,
        step as best_step,
        val_loss as best_val_loss,
        train_loss_smoothed as train_at_best,
        eval_index as best_index,
        eval_count
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
    -- the evaluations from the minimum on (the minimum included), each with the one before and the one after
    select
        evals.run_id,
        evals.val_loss,
        evals.eval_index,
        evals.eval_count,
        evals.step > best.best_step as is_after_best,
        {{ previous_value('evals.val_loss', 'evals.step', 'evals.run_id') }} as previous_val_loss,
        {{ next_value('evals.val_loss', 'evals.step', 'evals.run_id') }} as next_val_loss
    from evals
    inner join best
        on evals.run_id = best.run_id
        and evals.step >= best.best_step
),

held_rises as (
    -- each evaluation's change from the one before, and the rise into it that the next one kept: from the
    -- evaluation before it to the lower of it and the next (null at the last evaluation: nothing shows
    -- whether it held). A level that shifted at one interval keeps its rise; one noisy evaluation above
    -- its neighbours does not
    select
        *,
        val_loss - previous_val_loss as eval_rise,
        case when next_val_loss is not null
            then least(val_loss, next_val_loss) - previous_val_loss end as held_rise
    from from_best
),

after_best as (
    -- one row per run with a best evaluation (0 evaluations after it when the minimum is the last):
    -- what came after the minimum, the eval-to-eval noise from the minimum on, and the lowest of
    -- the last evaluations
    select
        run_id,
        sum(case when is_after_best then 1 else 0 end) as evals_after_best,
        max(case when is_after_best then val_loss end) as worst_after_best,
        percentile_cont(0.5) within group (order by abs(eval_rise)) as eval_noise,
        -- the largest rise from one evaluation to the next after the minimum that the evaluation after
        -- it kept (a step, or a drift's part; not one noisy evaluation)
        max(case when is_after_best then held_rise end) as largest_eval_rise,
        min(case when eval_index > eval_count - {{ threshold('overfit_sustained_min_evals') }} then val_loss end)
            as lowest_of_last_evals
    from held_rises
    group by run_id
),

windows as (
    -- the levels are medians over windows of evaluations, not single points: a minimum picked out of many
    -- noisy evaluations is a lucky low, and one last evaluation is as noisy. The end window holds the last
    -- overfit_level_share of the evaluations (at least overfit_level_min_evals, at most those after the
    -- minimum); the window around the minimum the same number centred on it
    select
        best.*,
        after_best.evals_after_best,
        least(
            greatest({{ threshold('overfit_level_min_evals') }}, cast(ceiling({{ threshold('overfit_level_share') }} * best.eval_count) as {{ dbt.type_bigint() }})),
            greatest(after_best.evals_after_best, 1)
        ) as end_window_evals
    from best
    inner join after_best
        on best.run_id = after_best.run_id
),

windowed as (
    -- each evaluation of a run with a minimum, placed in the windows: around the minimum (centred, half
    -- the end window's size either side, at least one) and at the end
    select
        windows.run_id,
        windows.end_window_evals,
        evals.val_loss,
        evals.train_loss_smoothed,
        evals.train_to_val_ratio,
        abs(evals.eval_index - windows.best_index) <= greatest(1, floor(windows.end_window_evals / 2)) as is_around_best,
        evals.eval_index > windows.eval_count - windows.end_window_evals as is_at_end,
        -- the two windows of the same size before the one around the minimum: where validation stood
        -- before it, and before that (a plateau when the two agree)
        floor((windows.best_index - greatest(1, floor(windows.end_window_evals / 2)) - 1 - evals.eval_index) * 1.0
            / windows.end_window_evals) as windows_before_best
    from windows
    inner join evals
        on windows.run_id = evals.run_id
),

levels as (
    select
        run_id,
        max(end_window_evals) as end_window_evals,
        sum(case when is_around_best then 1 else 0 end) as best_window_evals,
        percentile_cont(0.5) within group (order by case when is_around_best then val_loss end) as val_level_at_best,
        percentile_cont(0.5) within group (order by case when is_at_end then val_loss end) as val_level_at_end,
        percentile_cont(0.5) within group (order by case when is_around_best then train_loss_smoothed end) as train_level_at_best,
        percentile_cont(0.5) within group (order by case when is_at_end then train_loss_smoothed end) as train_level_at_end,
        sum(case when windows_before_best = 0 then 1 else 0 end) as before_window_evals,
        sum(case when windows_before_best = 1 then 1 else 0 end) as earlier_window_evals,
        percentile_cont(0.5) within group (order by case when windows_before_best = 0 then val_loss end) as val_level_before_best,
        percentile_cont(0.5) within group (order by case when windows_before_best = 1 then val_loss end) as val_level_earlier,
        -- the median train/val ratio: far above 1 the two are not the same quantity (log_quality's loss_scale_mismatch)
        percentile_cont(0.5) within group (order by train_to_val_ratio) as train_to_val_ratio
    from windowed
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
        levels.best_window_evals,
        levels.end_window_evals,
        levels.val_level_at_best,
        levels.val_level_at_end,
        levels.train_level_at_best,
        levels.train_level_at_end,
        levels.train_to_val_ratio,
        levels.before_window_evals,
        levels.earlier_window_evals,
        levels.val_level_before_best,
        levels.val_level_earlier,
        -- one eval's scatter, from the eval-to-eval noise (a median absolute change is 0.6745 x sqrt(2) of it)
        after_best.eval_noise / (0.6745 * sqrt(2.0)) as eval_scatter,
        after_best.largest_eval_rise,
        -- the rise of the level: the median of the last evaluations over the median around the minimum
        {{ safe_divide('levels.val_level_at_end - levels.val_level_at_best', 'levels.val_level_at_best') }} as level_relative_rise,
        -- its standard error: two medians of n and m evaluations, each evaluation scattered by the eval-to-eval
        -- noise over 0.6745 x sqrt(2) (a median absolute change is that share of one value's spread), a median
        -- 1.25x as uncertain as a mean (as the resume loss-jump rule)
        1.25 * after_best.eval_noise / (0.6745 * sqrt(2.0))
            * sqrt(1.0 / levels.best_window_evals + 1.0 / levels.end_window_evals) as level_rise_standard_error,
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
        coalesce(progress.learning_verdict, 'learned') not in ('at_chance', 'near_chance', 'flat', 'frozen', 'no_val_gain', 'got_worse', 'rose')
            as is_learning_shown
    from best
    inner join first_eval
        on best.run_id = first_eval.run_id
    inner join last_eval
        on best.run_id = last_eval.run_id
    inner join after_best
        on best.run_id = after_best.run_id
    inner join levels
        on best.run_id = levels.run_id
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
            -- training loss fell or stayed level (within overfit_train_rise_tolerance), level against level:
            -- if both rise, it is instability or drift, not overfitting
            and coalesce(train_level_at_end <= train_level_at_best * (1 + {{ threshold('overfit_train_rise_tolerance') }}), true),
            false
        ) as is_overfitting,
        -- the rise of the level beyond the eval noise (overfit_rise_n_sigmas standard errors): only then medium or high
        coalesce(val_level_at_end - val_level_at_best
            >= {{ threshold('overfit_rise_n_sigmas') }} * level_rise_standard_error, false) as is_rise_beyond_noise,
        -- a dip, not a rise after a minimum: validation had held a plateau (the two windows before the one
        -- around the minimum agree within overfit_rise_n_sigmas standard errors) and ends back at that
        -- plateau's level (not above it by as many): the minimum was a transient low (an eval-set or data
        -- change, a lucky stretch), and what training past it cost is not shown
        coalesce(
            before_window_evals >= end_window_evals
            and earlier_window_evals >= end_window_evals
            and abs(val_level_before_best - val_level_earlier) <= {{ threshold('overfit_rise_n_sigmas') }}
                * 1.25 * eval_scatter * sqrt(1.0 / before_window_evals + 1.0 / earlier_window_evals)
            and val_level_at_end - val_level_before_best <= {{ threshold('overfit_rise_n_sigmas') }}
                * 1.25 * eval_scatter * sqrt(1.0 / before_window_evals + 1.0 / end_window_evals),
            false
        ) as is_dip_from_plateau,
        -- a step, not a drift: most of the level's rise (overfit_step_rise_share) came between two
        -- consecutive evaluations, with at least overfit_step_min_evals_after after the minimum to show
        -- that it did not go on rising evaluation by evaluation. Memorisation grows the gap with the
        -- steps trained, a little at every evaluation; a jump in one interval is an event (the eval set
        -- or the data changed, a bad update), whatever the minimum before it
        coalesce(
            evals_after_best >= {{ threshold('overfit_step_min_evals_after') }}
            and val_level_at_end > val_level_at_best
            and largest_eval_rise >= {{ threshold('overfit_step_rise_share') }} * (val_level_at_end - val_level_at_best)
            and largest_eval_rise >= {{ threshold('overfit_rise_n_sigmas') }} * eval_scatter,
            false
        ) as is_step_rise,
        -- validation and training are not on one scale (the training loss several times the validation loss):
        -- the validation series measures another quantity or another set, so a rise in it is at most low
        coalesce(train_to_val_ratio >= {{ threshold('loss_scale_mismatch_ratio') }}, false) as is_scale_mismatched,
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
