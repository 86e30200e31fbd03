-- The validation losses of each run checked for NaN/inf, one row per run with staged evaluations:
-- how many were logged (duplicates aside), how many are non-finite and where, the last evaluation's
-- step, and whether every counted training loss is finite. A non-finite validation loss beside finite
-- training losses is the model's outputs overflowing on held-out data (an fp16/AMP evaluation, a
-- short-lived collapse): is_flagged. With a non-finite training loss the run finding of
-- int_findings__nan_loss says it. Read by int_findings__nan_loss (nan_loss:eval) and check_margins.
with

evals as (
    -- the staged rows: int_evals_resolved keeps only readable losses, and a NaN is none
    select run_id, step, is_val_loss_non_finite
    from {{ run_ref('stg_training__evals') }}
    where step is not null and not is_exact_duplicate
),

training_losses as (
    select run_id, sum(case when is_loss_non_finite then 1 else 0 end) as non_finite_loss_steps
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

checked as (
    select
        evals.run_id,
        count(*) as evals_logged,
        sum(case when evals.is_val_loss_non_finite then 1 else 0 end) as non_finite_evals,
        min(case when evals.is_val_loss_non_finite then evals.step end) as first_non_finite_step,
        max(case when evals.is_val_loss_non_finite then evals.step end) as last_non_finite_step,
        max(evals.step) as final_eval_step,
        max(coalesce(training_losses.non_finite_loss_steps, 0)) = 0 as is_training_loss_finite
    from evals
    left join training_losses
        on evals.run_id = training_losses.run_id
    group by evals.run_id
),

final as (
    select
        *,
        non_finite_evals > 0 and is_training_loss_finite as is_flagged
    from checked
)

select * from final
