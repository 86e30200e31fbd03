-- Each counted evaluation beside the training loss around it (median of the
-- logged losses of the train_smoothing_window steps up to the last train step at or
-- before the evaluation), the best validation
-- loss so far, and whether it is the held-out minimum of the run.
with

evals as (
    select * from {{ run_ref('int_evals_resolved') }}
),

train_smoothed as (
    select
        run_id,
        step,
        -- the steps (not rows) up to the evaluation: on a log written every 100 steps this is the
        -- row itself (already an interval mean), never losses from hundreds of steps before
        {{ median_over_range('loss', 'step', var('train_smoothing_window') - 1, partition_by='run_id') }} as train_loss_smoothed
    from {{ run_ref('int_train_steps_resolved') }}
),

stream as (
    -- evaluations and train steps in one ordered stream, so each evaluation finds the last
    -- train step at or before it with a window (no range join over the whole log)
    select run_id, step, 0 as is_eval, step as train_step from train_smoothed
    union all
    select run_id, step, 1 as is_eval, cast(null as {{ dbt.type_bigint() }}) as train_step from evals
),

train_at_eval as (
    select run_id, step, train_step
    from (
        select
            run_id,
            step,
            is_eval,
            max(train_step) over (
                partition by run_id order by step, is_eval rows between unbounded preceding and current row
            ) as train_step
        from stream
    ) as carried
    where is_eval = 1
),

joined as (
    select
        evals.*,
        train_smoothed.train_loss_smoothed,
        min(evals.val_loss) over (
            partition by evals.run_id order by evals.step rows between unbounded preceding and current row
        ) as best_val_loss_so_far,
        row_number() over (partition by evals.run_id order by evals.val_loss, evals.step) as val_loss_rank,
        row_number() over (partition by evals.run_id order by evals.step) as eval_index,
        count(*) over (partition by evals.run_id) as eval_count
    from evals
    left join train_at_eval
        on evals.run_id = train_at_eval.run_id
        and evals.step = train_at_eval.step
    left join train_smoothed
        on train_at_eval.run_id = train_smoothed.run_id
        and train_at_eval.train_step = train_smoothed.step
),

final as (
    select
        run_id,
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
