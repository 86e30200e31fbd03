-- The accuracy gap of a run whose evaluations log an accuracy but no loss (accuracy is its only
-- held-out signal; int_evals_resolved keeps the loss-bearing evaluations, int_raw_rows_audited names
-- these): at the last such evaluation, the held-out accuracy against the training accuracy the
-- training loss guarantees. An example the model gets wrong has p(correct) <= 1/2, so it adds at
-- least ln 2 to the mean cross-entropy: the training error is at most L / ln 2 and the training
-- accuracy at least 1 - L / ln 2 (a bound: dropout, augmentation or label smoothing raise L and
-- only lower it). One row per run that has such an evaluation; is_accuracy_gap when the gap is at
-- least overfit_accuracy_gap_min (int_findings__overfitting reports it, check_margins shows how close).
with

accuracy_only_evals as (
    -- evaluations that logged an accuracy and no loss (int_evals_resolved keeps the loss-bearing
    -- ones; int_raw_rows_audited names these), numbered from the last; the later row of a step wins
    select
        run_id,
        step,
        val_accuracy,
        row_number() over (partition by run_id order by step desc, file_row_number desc) as position_from_end
    from {{ run_ref('stg_training__evals') }}
    where step is not null
        and not is_exact_duplicate
        and is_val_loss_missing
        and val_accuracy between 0 and 1
),

eval_losses as (
    select run_id, count(*) as val_loss_evals
    from {{ run_ref('int_evals_resolved') }}
    group by run_id
),

train_losses as (
    select run_id, step, loss
    from {{ run_ref('int_train_steps_resolved') }}
    where loss is not null and not coalesce(is_loss_non_finite, false)
),

train_loss_floors as (
    -- a cross-entropy is never negative
    select run_id, min(loss) as min_train_loss
    from train_losses
    group by run_id
),

last_accuracy_evals as (
    select run_id, step, val_accuracy
    from accuracy_only_evals
    where position_from_end = 1
),

train_near_last_eval as (
    -- the training loss at the evaluation: the median of the last overfit_accuracy_gap_train_points
    -- logged losses up to its step (one per epoch in an epoch log, the last few batches in a step log)
    select run_id, percentile_cont(0.5) within group (order by loss) as train_loss_smoothed
    from (
        select
            train_losses.run_id,
            train_losses.loss,
            row_number() over (partition by train_losses.run_id order by train_losses.step desc) as position_from_eval
        from train_losses
        inner join last_accuracy_evals
            on train_losses.run_id = last_accuracy_evals.run_id
            and train_losses.step <= last_accuracy_evals.step
    ) as before_eval
    where position_from_eval <= {{ threshold('overfit_accuracy_gap_train_points') }}
    group by run_id
),

accuracy_evals as (
    select last_accuracy_evals.*, train_near_last_eval.train_loss_smoothed
    from last_accuracy_evals
    inner join train_near_last_eval
        on last_accuracy_evals.run_id = train_near_last_eval.run_id
),

objectives as (
    select run_id, is_adversarial_loss from {{ run_ref('stg_training__config') }}
),

final as (
    select
        accuracy_evals.run_id,
        accuracy_evals.step,
        accuracy_evals.val_accuracy,
        accuracy_evals.train_loss_smoothed,
        1 - accuracy_evals.train_loss_smoothed / ln(2.0) as train_accuracy_bound,
        1 - accuracy_evals.train_loss_smoothed / ln(2.0) - accuracy_evals.val_accuracy as accuracy_gap,
        1 - accuracy_evals.train_loss_smoothed / ln(2.0) - accuracy_evals.val_accuracy
            >= {{ threshold('overfit_accuracy_gap_min') }} as is_accuracy_gap
    from accuracy_evals
    left join eval_losses
        on accuracy_evals.run_id = eval_losses.run_id
    inner join train_loss_floors
        on accuracy_evals.run_id = train_loss_floors.run_id
    inner join objectives
        on accuracy_evals.run_id = objectives.run_id
    where eval_losses.run_id is null
        -- an accuracy at step 0 is the log's first record (a W&B summary of a run stopped after its
        -- first wandb.log call): nothing says the model has passed over its training data yet, and a
        -- gap that memorisation would need passes to open is more likely a loss normalised
        -- differently from the accuracy (per token against per sequence)
        and accuracy_evals.step > 0
        and train_loss_floors.min_train_loss >= 0
        and not coalesce(objectives.is_adversarial_loss, false)
)

select * from final
