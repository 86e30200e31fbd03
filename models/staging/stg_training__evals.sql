-- One row per raw eval-log row. Accuracy logged in percent (a value above 1) is
-- converted to a share and flagged; the logged value is kept beside it; the same for a
-- detector's mAP at IoU 0.5 (val_map50) and a ROC AUC (val_auc), optional columns. A validation loss of
-- exactly 0 beside the run's real ones is flagged as a placeholder.
with

source as (
    {{ raw_run_file('eval') }}
),

parsed as (
    select
        run_id,
        file_row_number as eval_row_id,
        file_row_number,
        {{ raw_columns(['step', 'val_loss', 'val_accuracy', 'val_map50', 'val_auc']) }}
        {{ integer_column('step') }},
        {{ numeric_column('val_loss') }},
        ({{ clean_text('val_accuracy') }} is null) as is_val_accuracy_missing,
        {{ logged_share_column('val_accuracy') }},
        {{ logged_share_column('val_map50') }},
        {{ logged_share_column('val_auc') }},
        {{ is_exact_duplicate(['step', 'val_loss', 'val_accuracy', 'val_map50', 'val_auc']) }} as is_exact_duplicate
    from source
),

flagged as (
    select
        *,
        -- the defect rules beyond the column recipes: macros/raw_row_defects.sql
        {{- raw_row_defect_flags('eval') }},
        -- a share is at most 1; (1, 100] can only be percent (rules in the catalogue)
        {{ share_value('eval', 'val_accuracy', 'accuracy') }} as val_accuracy,
        {{ share_value('eval', 'val_map50', 'map') }} as val_map50,
        {{ share_value('eval', 'val_auc', 'auc') }} as val_auc,
        -- a loss of exactly 0 where the run's other evaluations log losses of at least
        -- val_loss_placeholder_min_positive (or none above 0): no measurement (a logger writing 0
        -- when no validation ran, as YOLO's results.csv with val=False), set aside
        (val_loss = 0 and coalesce(
            min(case when val_loss > 0 then val_loss end) over (partition by run_id)
                >= {{ threshold('val_loss_placeholder_min_positive') }},
            true)) as is_val_loss_placeholder
    from parsed
),

final as (
    select
        *,
        -- a defect of the catalogue, or what sets the row aside
        {{ has_defect('eval', ['is_step_missing', 'is_step_invalid', 'is_val_loss_missing', 'is_val_loss_non_numeric',
            'is_val_loss_non_finite', 'is_exact_duplicate', 'is_val_loss_placeholder']) }} as has_defect
    from flagged
)

select * from final
