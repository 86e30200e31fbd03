-- One row per evaluation row: the counted ones with the held-out minimum
-- marked and the training loss around them, and the ones set aside.
with

eval_rows as (
    select * from {{ run_ref('stg_training__evals') }}
    where step is not null
),

compared as (
    select * from {{ run_ref('int_evals_compared') }}
),

final as (
    select
        eval_rows.run_id,
        eval_rows.eval_row_id,
        eval_rows.step,
        eval_rows.val_loss,
        eval_rows.val_accuracy,
        (compared.eval_row_id is not null) as is_counted,
        coalesce(compared.is_best, false) as is_best,
        compared.train_loss_smoothed
    from eval_rows
    left join compared
        on eval_rows.run_id = compared.run_id
        and eval_rows.eval_row_id = compared.eval_row_id
)

select * from final
