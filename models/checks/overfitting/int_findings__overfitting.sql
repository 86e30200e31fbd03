-- Finding: validation loss reached its minimum and then rose while training
-- loss kept falling. Evidence: the held-out minimum (step, value: the
-- checkpoint to keep), the final value, the gap, the training loss trend.
-- A rise under overfit_min_relative_rise is reported as low only when it is
-- sustained (the last evaluations all above the minimum by more than the eval
-- curve's own noise) while training loss does not rise (the same tolerance).
-- The measurements and the firing rule: int_validation_rises_measured.
-- And overfitting:accuracy_gap, always low, for a run whose evaluations log an accuracy and no
-- loss: the held-out accuracy far below the training accuracy the training loss guarantees
-- (measured and decided in int_accuracy_gaps_measured).
with

rises as (
    select * from {{ run_ref('int_validation_rises_measured') }}
    where is_overfitting
),

objectives as (
    select
        run_id,
        is_term_loss,
        total_steps,
        {{ json_text('config_json', '$.early_stopping') }} as early_stopping_script
    from {{ run_ref('stg_training__config') }}
),

assessed as (
    -- a validation loss read from one term of a sum whose total is not logged (loss_objective = term:
    -- YOLO's val/box_loss beside its class and DFL terms) trades off against the other terms: its
    -- rise is not the held-out objective's
    select
        rises.*,
        coalesce(objectives.is_term_loss, false) as is_term_loss,
        objectives.early_stopping_script,
        -- a script beside the log stops its run early on a plateau, and the log ends before its planned
        -- length (or none is known): the rise is the one early stopping watched for, and it ended the run
        coalesce(objectives.early_stopping_script is not null
            and (objectives.total_steps is null or rises.final_step < objectives.total_steps), false) as is_early_stopped
    from rises
    left join objectives
        on rises.run_id = objectives.run_id
),

accuracy_gaps as (
    select * from {{ run_ref('int_accuracy_gaps_measured') }}
    where is_accuracy_gap
),

accuracy_gap_findings as (
    select
        run_id,
        'overfitting:accuracy_gap' as finding_id,
        'overfitting' as category,
        'low' as severity,
        'Held-out accuracy ' || {{ fmt_pct('val_accuracy') }} || ' at step ' || {{ fmt_int('step') }}
            || ' is ' || {{ fmt_pct('accuracy_gap') }} || ' below the ' || {{ fmt_pct('train_accuracy_bound') }}
            || ' the training loss guarantees on the training data: the model fits its training examples far better than held-out ones.'
            as title,
        'training loss (median of the last ' || {{ threshold('overfit_accuracy_gap_train_points') }} || ' logged values up to the evaluation) ' || {{ fmt('train_loss_smoothed', 4) }}
            || ': a wrongly classified example has p(correct) <= 1/2 and adds at least ln 2 to the mean cross-entropy, so the training accuracy is at least 1 - '
            || {{ fmt('train_loss_smoothed', 4) }} || ' / ln 2 = ' || {{ fmt_pct('train_accuracy_bound') }}
            || '; held-out accuracy ' || {{ fmt_pct('val_accuracy') }} || ' (the last evaluation; no held-out loss is logged, so accuracy is the only held-out signal)'
            || '; gap at least ' || {{ fmt_pct('accuracy_gap') }} || ' (overfit_accuracy_gap_min ' || {{ fmt_pct(threshold('overfit_accuracy_gap_min')) }} || ')'
            || '; low: the training accuracy is bounded, not measured, and a loss that is not a per-example cross-entropy breaks the bound'
            as evidence,
        step as first_step,
        step as last_step,
        cast(null as {{ dbt.type_bigint() }}) as steps_affected,
        val_accuracy as observed_value,
        train_accuracy_bound as expected_value,
        train_accuracy_bound - {{ threshold('overfit_accuracy_gap_min') }} as threshold_value,
        'overfit_accuracy_gap_min' as threshold_name,
        accuracy_gap as estimated_cost,
        'accuracy_gap' as cost_unit,
        'the training accuracy the training loss guarantees (1 - loss / ln 2) minus the held-out accuracy, at the last evaluation' as cost_method,
        least(1.0, accuracy_gap) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Log the validation loss beside the accuracy (it shows when held-out fit turned); meanwhile compare the training and validation accuracy per epoch, '
            || 'and for the large run add regularisation, more unique data or early stopping on validation accuracy.' as recommendation
    from accuracy_gaps
),

final as (
    select
        run_id,
        'overfitting:' || {{ fmt_int('best_step') }} as finding_id,
        'overfitting' as category,
        case
            when is_sustained_mild_rise then 'low'
            when is_term_loss then 'low'
            -- early stopping caught it: the run ended on this rise, and its callback keeps the best checkpoint
            when is_early_stopped then 'low'
            -- a rise of the level within the eval series' own noise, or in a validation series that is not on
            -- the training loss's scale (another quantity or set): low
            when not is_rise_beyond_noise or is_scale_mismatched then 'low'
            -- a dip below a plateau that validation returned to: low
            when is_dip_from_plateau then 'low'
            -- a step between two evaluations, not a drift: low
            when is_step_rise then 'low'
            -- never shown to have improved first: at most medium
            when is_without_val_gain and level_relative_rise >= {{ threshold('overfit_medium_relative_rise') }} then 'medium'
            -- a late drift that gives back only a sliver of what training gained is mild: at most medium
            when coalesce(share_of_gain_given_back, 1) < {{ threshold('overfit_mild_gain_share') }}
                and level_relative_rise >= {{ threshold('overfit_medium_relative_rise') }} then 'medium'
            when level_relative_rise >= {{ threshold('overfit_high_relative_rise') }} then 'high'
            when level_relative_rise >= {{ threshold('overfit_medium_relative_rise') }} then 'medium'
            else 'low'
        end as severity,
        'Validation loss bottomed at ' || {{ fmt('best_val_loss', 4) }} || ' at step ' || {{ fmt_int('best_step') }}
            || ' and ended ' || {{ fmt_pct('relative_rise') }} || ' higher (' || {{ fmt('final_val_loss', 4) }}
            || ' at step ' || {{ fmt_int('final_step') }} || ') '
            || case
                when train_at_final is null or train_at_best is null then 'with no training loss to compare'
                when train_at_final < train_at_best then 'while training loss kept falling'
                else 'while training loss stayed level'
            end || ': keep the step '
            || {{ fmt_int('best_step') }} || ' checkpoint.' as title,
        'held-out minimum: val_loss ' || {{ fmt('best_val_loss', 4) }} || ' at step ' || {{ fmt_int('best_step') }}
            || '; final val_loss ' || {{ fmt('final_val_loss', 4) }} || ' at step ' || {{ fmt_int('final_step') }}
            || ' (+' || {{ fmt('final_val_loss - best_val_loss', 4) }} || ', ' || {{ fmt_pct('relative_rise') }} || '); '
            || {{ fmt_int('evals_after_best') }} || ' evaluations after the minimum, worst ' || {{ fmt('worst_after_best', 4) }}
            || coalesce('; gave back ' || {{ fmt_pct('share_of_gain_given_back') }} || ' of the held-out gain since the first evaluation'
                || case when share_of_gain_given_back < {{ threshold('overfit_mild_gain_share') }} then ' (a mild late drift)' else '' end, '')
            || '; training loss (trailing median) ' || {{ fmt('train_at_best', 4) }} || ' at the minimum -> '
            || {{ fmt('train_at_final', 4) }} || ' at the end'
            || '; levels (medians): validation ' || {{ fmt('val_level_at_best', 4) }} || ' over the ' || {{ fmt_int('best_window_evals') }}
            || ' evaluations around the minimum -> ' || {{ fmt('val_level_at_end', 4) }} || ' over the last ' || {{ fmt_int('end_window_evals') }}
            || ' (' || {{ fmt_pct('level_relative_rise') }} || ', ' || {{ fmt(safe_divide('val_level_at_end - val_level_at_best', 'level_rise_standard_error'), 1) }}
            || ' standard errors of the eval noise), training ' || {{ fmt('train_level_at_best', 4) }} || ' -> ' || {{ fmt('train_level_at_end', 4) }}
            || case when is_sustained_mild_rise then ''
                when not is_rise_beyond_noise then '; low: the rise of the level is within ' || {{ threshold('overfit_rise_n_sigmas') }}
                    || ' standard errors of the eval-to-eval noise (a minimum picked out of noisy evaluations is a lucky low)'
                when is_scale_mismatched then '; low: the training loss is ' || {{ fmt('train_to_val_ratio', 1) }}
                    || 'x the validation loss, so the validation series is not on its scale (another quantity or another set)'
                when is_dip_from_plateau then '; low: a dip, not a rise after a minimum: validation held '
                    || {{ fmt('val_level_earlier', 4) }} || ' then ' || {{ fmt('val_level_before_best', 4) }} || ' over the '
                    || {{ fmt_int('2 * end_window_evals') }} || ' evaluations before the minimum (a plateau) and ended back at it'
                    || ' (an eval-set or data change, or a lucky stretch: check what changed at step ' || {{ fmt_int('best_step') }} || ')'
                when is_step_rise then '; low: a step, not a drift: ' || {{ fmt('largest_eval_rise', 4) }}
                    || ' of the level''s rise of ' || {{ fmt('val_level_at_end - val_level_at_best', 4) }}
                    || ' came between two consecutive evaluations and held at the next, and validation did not go on rising after it'
                    || ' (memorisation widens the gap a little at every evaluation; a jump is an event: check whether the eval set or the data changed after step '
                    || {{ fmt_int('best_step') }} || ')'
                else '' end
            || case when is_sustained_mild_rise
                then '; under the ' || {{ fmt_pct(threshold('overfit_min_relative_rise')) }} || ' floor, so low: reported because it is sustained, the last '
                    || {{ fmt_int(threshold('overfit_sustained_min_evals')) }} || ' evaluations all at least '
                    || {{ fmt('lowest_of_last_evals - best_val_loss', 4) }} || ' above the minimum, '
                    || {{ fmt(safe_divide('lowest_of_last_evals - best_val_loss', 'eval_noise'), 1) }}
                    || 'x the eval-to-eval noise ' || {{ fmt('eval_noise', 4) }}
                else '' end
            || case when is_term_loss and not is_sustained_mild_rise
                then '; low: the validation loss read is one term of a sum whose total is not logged (config loss_objective = term): '
                    || 'terms trade off, so its rise need not be the held-out objective''s'
                else '' end
            || case when is_early_stopped and not is_sustained_mild_rise and not is_term_loss
                then '; low: ' || early_stopping_script || ' beside the log stops the run early on a plateau, and the run ended '
                    || {{ fmt_int('evals_after_best') }} || ' evaluations after the minimum: early stopping caught this rise'
                else '' end
            || case when is_without_val_gain
                then '; validation never improved meaningfully on its first evaluation (step ' || {{ fmt_int('first_eval_step') }}
                    || ') and the training loss had not yet fallen by then: at most medium, the best checkpoint may predate the evaluations'
                else '' end as evidence,
        best_step as first_step,
        final_step as last_step,
        last_step - best_step as steps_affected,
        final_val_loss as observed_value,
        best_val_loss as expected_value,
        -- the rise floor; a sustained mild rise is reported under it, from its own bar (the eval noise multiple)
        case when is_sustained_mild_rise
            then best_val_loss + greatest({{ threshold('overfit_sustained_noise_multiple') }} * eval_noise,
                {{ threshold('overfit_sustained_min_relative_rise') }} * best_val_loss)
            else best_val_loss * (1 + {{ threshold('overfit_min_relative_rise') }}) end as threshold_value,
        case when is_sustained_mild_rise then 'overfit_sustained_noise_multiple' else 'overfit_min_relative_rise' end
            as threshold_name,
        final_val_loss - best_val_loss as estimated_cost,
        'val_loss' as cost_unit,
        'final validation loss minus the held-out minimum: what training past the minimum cost' as cost_method,
        least(1.0, relative_rise / 0.05) * {{ safe_divide('last_step - best_step', 'last_step') }} as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Keep the checkpoint nearest step ' || {{ fmt_int('best_step') }}
            || '; for the large run add early stopping on validation loss, more unique data or fewer epochs.' as recommendation
    from assessed
    union all
    select * from accuracy_gap_findings
)

select * from final
