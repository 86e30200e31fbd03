-- Findings no_learning (loss flat from the start) and underfitting (loss falls
-- a little and flattens high), from the median loss of the first steps vs the
-- last share of the run and the change over the last quarter.
with

progress as (
    select * from {{ ref('int_learning_progress_measured') }}
),

final as (
    select
        case when relative_drop < {{ var('no_learning_max_drop') }} then 'no_learning:run' else 'underfitting:run' end
            as finding_id,
        case when relative_drop < {{ var('no_learning_max_drop') }} then 'no_learning' else 'underfitting' end as category,
        case when relative_drop < {{ var('no_learning_max_drop') }} then 'critical' else 'medium' end as severity,
        case when relative_drop < {{ var('no_learning_max_drop') }}
            then 'Training loss did not move: ' || {{ fmt('start_loss', 4) }} || ' at the start, ' || {{ fmt('end_loss', 4) }}
                || ' at the end (' || {{ fmt_pct('relative_drop') }} || ').'
            else 'Training loss fell only ' || {{ fmt_pct('relative_drop') }} || ' (' || {{ fmt('start_loss', 4) }} || ' -> '
                || {{ fmt('end_loss', 4) }} || ') and flattened.'
        end as title,
        'median loss of the first ' || {{ var('progress_start_points') }} || ' steps ' || {{ fmt('start_loss', 4) }}
            || '; median of the last ' || {{ fmt_pct(var('progress_window_share'), 0) }} || ' of the run ' || {{ fmt('end_loss', 4) }}
            || '; relative drop ' || {{ fmt_pct('relative_drop') }} || '; change over the last quarter '
            || {{ fmt_pct('last_quarter_relative_drop') }} || ' (spike steps left out)' as evidence,
        first_step,
        last_step,
        n_steps as steps_affected,
        end_loss as observed_value,
        start_loss as expected_value,
        relative_drop as estimated_cost,
        'relative_loss_drop' as cost_unit,
        'relative drop of the median training loss from the first steps to the end of the run' as cost_method,
        case when relative_drop < {{ var('no_learning_max_drop') }} then 1.0 else 0.5 end as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when relative_drop < {{ var('no_learning_max_drop') }}
            then 'Check the pipeline before anything else: gradients reaching the parameters, the optimizer stepping, labels not masked out, LR not zero; try to overfit a handful of examples.'
            else 'More capacity or a higher LR; do not just add epochs. Compare with a run known to learn.'
        end as recommendation
    from progress
    where n_steps >= 10
        and (
            relative_drop < {{ var('no_learning_max_drop') }}
            or (relative_drop < {{ var('underfitting_max_drop') }} and abs(last_quarter_relative_drop) < 0.01)
        )
)

select * from final
