-- Each counted evaluation beside the training loss around it (median of the
-- train_smoothing_window steps up to the evaluation step), the best validation
-- loss so far, and whether it is the held-out minimum of the run.
with

evals as (
    select * from {{ ref('int_evals_resolved') }}
),

train_smoothed as (
    select
        step,
        {{ rolling_median('loss', 'step', var('train_smoothing_window') - 1, include_current_row=true) }}
            as train_loss_smoothed
    from {{ ref('int_train_steps_resolved') }}
),

train_at_eval as (
    -- the last training step at or before each evaluation
    select
        evals.step,
        max(train_smoothed.step) as train_step
    from evals
    inner join train_smoothed
        on train_smoothed.step <= evals.step
        and train_smoothed.step > evals.step - {{ var('train_smoothing_window') }}
    group by evals.step
),

joined as (
    select
        evals.*,
        train_smoothed.train_loss_smoothed,
        min(evals.val_loss) over (order by evals.step rows between unbounded preceding and current row)
            as best_val_loss_so_far,
        row_number() over (order by evals.val_loss, evals.step) as val_loss_rank,
        row_number() over (order by evals.step) as eval_index,
        count(*) over () as eval_count
    from evals
    left join train_at_eval
        on evals.step = train_at_eval.step
    left join train_smoothed
        on train_at_eval.train_step = train_smoothed.step
),

final as (
    select
        step,
        eval_row_id,
        val_loss,
        val_accuracy,
        train_loss_smoothed,
        {{ safe_divide('train_loss_smoothed', 'val_loss') }} as train_to_val_ratio,
        best_val_loss_so_far,
        (val_loss_rank = 1) as is_best,
        eval_index,
        eval_count
    from joined
)

select * from final
