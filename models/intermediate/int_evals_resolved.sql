-- One row per evaluation step that counts. When a step was evaluated twice (a
-- replay after a resume re-runs the evaluation), the later row in the file wins:
-- it was measured on the weights the run kept.
with

eval_rows as (
    select * from {{ run_ref('stg_training__evals') }}
    -- a row whose val_loss is unreadable, or a placeholder 0, cannot stand for its step; an
    -- earlier readable row can
    where step is not null and not is_exact_duplicate and val_loss is not null and not is_val_loss_placeholder
),

ranked as (
    select
        *,
        row_number() over (partition by run_id, step order by file_row_number desc) as recency_rank,
        count(*) over (partition by run_id, step) as rows_for_step
    from eval_rows
),

final as (
    select
        run_id,
        step,
        eval_row_id,
        val_loss,
        val_accuracy,
        val_accuracy_logged,
        is_accuracy_percent,
        val_map50,
        val_auc,
        rows_for_step,
        is_val_loss_non_finite
    from ranked
    where recency_rank = 1
)

select * from final
