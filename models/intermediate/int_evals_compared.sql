-- Each counted evaluation beside the training loss around it (median of the
-- logged losses of the train_smoothing_window steps up to the last train step at or
-- before the evaluation), the best validation
-- loss so far, and whether it is the held-out minimum of the run.
with

evals as (
    select * from {{ run_ref('int_evals_resolved') }}
),

train_steps as (
    select run_id, step from {{ run_ref('int_train_steps_resolved') }}
),

train_losses as (
    -- read again rather than shared with train_steps: a second scan is cheaper than holding the log
    select run_id, step, loss from {{ run_ref('int_train_steps_resolved') }}
),

stream as (
    -- evaluations and train steps in one ordered stream, so each evaluation finds the last
    -- train step at or before it with a window (no range join over the whole log)
    select run_id, step, 0 as is_eval, step as train_step from train_steps
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

window_offsets as (
    -- 0 .. train_smoothing_window - 1: the steps of the smoothing window, counted back
    {%- for step_offset in range(threshold('train_smoothing_window')) %}
    select {{ step_offset }} as step_offset{% if not loop.last %} union all{% endif %}
    {%- endfor %}
),

eval_windows as (
    -- the steps (not rows) up to the evaluation's train step: on a log written every 100 steps
    -- this is the row itself (already an interval mean), never losses from hundreds of steps
    -- before. Only these few steps per evaluation are read back (an equality join), instead of
    -- a windowed median over every train step of the run.
    select
        train_at_eval.run_id,
        train_at_eval.step,
        train_at_eval.train_step - window_offsets.step_offset as window_step
    from train_at_eval
    cross join window_offsets
    where train_at_eval.train_step is not null
),

train_smoothed as (
    select
        eval_windows.run_id,
        eval_windows.step,
        percentile_cont(0.5) within group (order by train_losses.loss) as train_loss_smoothed
    from eval_windows
    inner join train_losses
        on eval_windows.run_id = train_losses.run_id
        and eval_windows.window_step = train_losses.step
    group by eval_windows.run_id, eval_windows.step
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
    left join train_smoothed
        on evals.run_id = train_smoothed.run_id
        and evals.step = train_smoothed.step
),

final as (
    select
        run_id,
        step,
        eval_row_id,
        val_loss,
        val_accuracy,
        val_map50,
        val_auc,
        train_loss_smoothed,
        {{ safe_divide('train_loss_smoothed', 'val_loss') }} as train_to_val_ratio,
        best_val_loss_so_far,
        (val_loss_rank = 1) as is_best,
        eval_index,
        eval_count
    from joined
)

select * from final
