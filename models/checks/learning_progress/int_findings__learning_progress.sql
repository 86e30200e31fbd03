-- Findings no_learning (loss flat from the start, collapsed to exactly zero,
-- settled flat at ln 2, a validation loss never below ln 2, or validation accuracy stuck at a chance rate) and underfitting (loss falls a little
-- and flattens high). Flat means the fall from the first steps to the end of the
-- run is within the log-to-log scatter (no_learning_scatter_factor x it) or below
-- no_learning_max_drop: high, since a slow but real trend can hide in noisy short
-- runs. A loss that jumps to exactly 0 and stays there is critical: nothing is
-- trained (labels masked, loss zeroed). A loss with negative values (a GAN critic,
-- a reward) is no likelihood: its relative drop means nothing; only a rise above its start is
-- reported, low (no_learning:loss_rose). A run that learned and then stopped (its last evaluations
-- repeat one value to the last digit: no_learning:stopped) is medium: it cost the updates after it.
-- So is a run that learned before its first evaluation, then moved neither loss for most of the run
-- (no_learning:stalled: validation never beat its first value, the training loss flat after it).
-- A run flat from start to end that held a far lower level in between learned, then lost it
-- (no_learning:lost_progress): low when a loss spike after it is the jump, medium for a divergence.
-- A detector whose training box loss is exactly 0 on every row had no labelled box to learn from
-- (no_learning:no_training_targets, medium); its detection score, and one measured on a validation
-- that no labelled box reached, are not judged. A run most of whose steps log a loss and a gradient
-- norm both exactly 0 moved nothing on them (no_learning:zero_updates, medium: a GRPO policy collapsed).
{#- a run no other verdict already calls at chance, and whose loss was not zeroed -#}
{%- set no_other_chance_verdict -%}
learning_verdict not in ('at_chance', 'near_chance', 'flat', 'frozen') and zero_loss_steps = 0
{%- endset %}
{#- the findings a log too early to judge keeps at their severity: what they say was wrong whatever came next -#}
{%- set judged_any_time = "('no_learning:zero_loss', 'no_learning:detection_score', 'underfitting:detection_score', 'no_learning:no_training_targets', 'no_learning:zero_updates')" %}
{#- the training loss ended flat at ln 2 (a two-class model predicting the class prior) -#}
{%- set training_settled_at_ln_2 -%}
abs(end_loss - ln(2.0)) <= {{ threshold('chance_loss_tolerance') }}
        and abs(last_quarter_relative_drop) < {{ threshold('progress_tail_max_drop') }}
{%- endset %}
with

progress as (
    select * from {{ run_ref('int_learning_progress_measured') }}
),

attempts as (
    select * from {{ run_ref('int_attempts_measured') }}
),

accuracy as (
    select
        run_id,
        count(*) as accuracy_evals,
        min(val_accuracy) as min_accuracy,
        max(val_accuracy) as max_accuracy,
        min(step) as first_step,
        max(step) as last_step
    from {{ run_ref('int_evals_compared') }}
    where val_accuracy is not null
    group by run_id
),

chance_levels as (
    -- the chance rate of a balanced k-class task, k = 2 .. chance_max_classes
    {% for k in range(2, threshold('chance_max_classes') + 1) %}
    select {{ k }} as n_classes, cast(1.0 / {{ k }} as {{ type_double() }}) as chance_rate
    {% if not loop.last %}union all{% endif %}
    {% endfor %}
),

stuck_accuracy as (
    select
        accuracy.*,
        chance_levels.n_classes,
        chance_levels.chance_rate
    from accuracy
    inner join chance_levels
        on accuracy.min_accuracy >= chance_levels.chance_rate - {{ threshold('chance_accuracy_tolerance') }}
        and accuracy.max_accuracy <= chance_levels.chance_rate + {{ threshold('chance_accuracy_tolerance') }}
    where accuracy.accuracy_evals >= 1
),

ranking_scores as (
    -- the validation ROC AUC over the run: 0.5 is a ranking at random, at any class balance
    select
        run_id,
        count(*) as auc_evals,
        min(val_auc) as min_auc,
        max(val_auc) as max_auc,
        min(step) as first_step,
        max(step) as last_step
    from {{ run_ref('int_evals_compared') }}
    where val_auc is not null
    group by run_id
),

largest_chance_class as (
    select run_id, max(n_classes) as max_n_classes from stuck_accuracy group by run_id
),

detection_scores as (
    -- a detector's validation mAP at IoU 0.5 over the run: its best, where, and the last
    select
        run_id,
        count(*) as map_evals,
        max(val_map50) as best_map50,
        min(step) as first_step,
        max(step) as last_step,
        max(case when eval_index = eval_count then val_map50 end) as last_map50
    from {{ run_ref('int_evals_compared') }}
    where val_map50 is not null
    group by run_id
),

target_terms as (
    -- the splits no labelled box reached (a box-regression loss term exactly 0 on every row while
    -- another term is not: the importer's train_zero_loss_terms and val_zero_loss_terms)
    select run_id, train_zero_loss_terms, val_zero_loss_terms from {{ run_ref('stg_training__config') }}
),

verdicts as (
    -- one learning verdict per run, with its finding id and severity (int_learning_progress_measured):
    -- the findings below word it
    select
        *,
        verdict_finding_id as finding_id,
        case when learning_verdict in ('at_chance', 'flat', 'frozen', 'stopped', 'stalled', 'no_val_gain', 'got_worse', 'rose', 'lost_progress') then 'no_learning' else 'underfitting' end
            as category,
        verdict_severity as severity,
        case when chance_loss is null then '; chance level (a uniform guess) unknown: no vocabulary or class count'
            else '; chance level (a uniform guess) ' || {{ fmt('chance_loss', 4) }} || ' nats = ' || chance_detail
                || ' (' || chance_confidence || ' confidence); the run looks ' || replace(regime, '_', ' ')
        end as chance_evidence,
        case learning_cause
            when 'schedule_sanity:warmup_covers_run' then '; the logged run (to step ' || {{ fmt_int('last_step') }}
                || ') never left its configured warmup: the LR never reached its peak (the likely cause)'
            when 'schedule_sanity:lr_far_above_usual' then '; the LR is far above the range usual for this kind of run (the likely cause, see schedule_sanity)'
            when 'schedule_sanity:lr_far_below_usual' then '; the LR is far below the range usual for this kind of run (the likely cause, see schedule_sanity)'
            else ''
        end as cause_evidence
    from progress
    where learning_verdict in ('at_chance', 'near_chance', 'flat', 'frozen', 'stopped', 'stalled', 'no_val_gain', 'got_worse', 'shallow', 'rose', 'lost_progress')
),

trend_findings as (
    select
        run_id,
        finding_id,
        category,
        severity,
        case learning_verdict
            when 'at_chance' then 'The ' || judged_loss_kind || ' loss is still at the level of a uniform guess: '
                || {{ fmt('judged_loss', 4) }} || ' at best against ' || {{ fmt('chance_loss', 4) }} || ' ('
                || {{ fmt_pct('judged_share_of_chance') }} || ' of it): '
                -- a training loss that left the near-chance band fit its training data: what it did not
                -- learn is anything that holds on held-out data
                || case when judged_loss_kind = 'validation'
                        and end_loss < (1 - {{ threshold('chance_underfitting_share') }}) * chance_loss
                    then 'nothing that holds on held-out data was learned, while the training loss fell to '
                        || {{ fmt('end_loss', 4) }} || ' (' || {{ fmt_pct(safe_divide('end_loss', 'chance_loss')) }}
                        || ' of it): the model fit its training data only.'
                    else 'nothing was learned.' end
            when 'near_chance' then 'The ' || judged_loss_kind || ' loss ended barely below the level of a uniform guess: '
                || {{ fmt('judged_loss', 4) }} || ' at best against ' || {{ fmt('chance_loss', 4) }} || ' ('
                || {{ fmt_pct('judged_share_of_chance') }} || ' of it).'
            when 'frozen' then 'Training loss froze: the last ' || {{ fmt_int('n_steps - floor(n_steps / 2.0)') }}
                || ' logged values are all ' || {{ fmt('late_max_loss', 6) }}
                || ', identical where batches differ: the parameters stopped moving or the output no longer depends on the input.'
            when 'stopped' then 'Learning stopped at step ' || {{ fmt_int('repeated_from_step') }} || ': the last '
                || {{ fmt_int('repeated_evals') }} || ' evaluations are all ' || {{ fmt('repeated_val_loss', 6) }}
                || ', to the last digit, so the ' || {{ fmt_pct('stopped_share', 0) }} || ' of the run after it changed nothing.'
            when 'stalled' then 'Learning stalled by the first evaluation (step ' || {{ fmt_int('first_eval_step') }} || '): validation loss '
                || {{ fmt('first_val_loss', 4) }} || ' then, ' || {{ fmt('best_val_loss', 4) }} || ' at best after, and the training loss flat from '
                || {{ fmt('train_level_after_first', 4) }} || ' to ' || {{ fmt('end_loss', 4) }} || ': the '
                || {{ fmt_pct('stalled_share', 0) }} || ' of the run after it moved neither.'
            when 'flat' then case when level_change < -{{ threshold('no_learning_scatter_factor') }} * loss_scatter
                then 'Training loss ended above where it started, beyond its noise: '
                else 'Training loss did not move beyond its noise: ' end
                || {{ fmt('start_loss', 4) }} || ' at the start, '
                || {{ fmt('end_loss', 4) }} || ' at the end (' || {{ fmt_pct('relative_drop') }} || ').'
            when 'got_worse' then 'The run got worse after its first evaluation: validation loss ' || {{ fmt('first_val_loss', 4) }}
                || ' at step ' || {{ fmt_int('first_eval_step') }} || ' (its best), ' || {{ fmt('val_level_after_first', 4) }}
                || ' (median) after it, while the training loss rose too (' || {{ fmt('train_at_first_eval', 4) }} || ' -> '
                || {{ fmt('train_level_after_first', 4) }} || '): training undid what the model knew.'
            when 'lost_progress' then 'Training loss fell to ' || {{ fmt('best_stretch_loss', 4) }} || ' (a stretch ending at step '
                || {{ fmt_int('best_stretch_step') }} || '), then went back to ' || {{ fmt('end_loss', 4) }} || ' by the end, against '
                || {{ fmt('start_loss', 4) }} || ' at the start: the run learned, then lost it'
                || case when spikes_after_best > 0 then ' (a loss jump from step ' || {{ fmt_int('first_spike_after_best') }} || ', see loss_spikes).'
                    else '.' end
            when 'rose' then 'Training loss ended above where it started: ' || {{ fmt('start_loss', 4) }} || ' at the start, '
                || {{ fmt('end_loss', 4) }} || ' at the end; the run made its objective worse, if lower is better.'
            when 'no_val_gain' then 'Validation loss never improved on its first value ' || {{ fmt('first_val_loss', 4) }}
                || ' (step ' || {{ fmt_int('first_eval_step') }} || '; best ' || {{ fmt('best_val_loss', 4) }}
                || case when val_gain >= val_gain_threshold
                    then ', a dip the later evaluations did not hold: their median ' || {{ fmt('val_level_after_first', 4) }}
                    else '' end
                || '): the run did not learn anything that generalises.'
            else 'Training loss fell only ' || {{ fmt_pct('relative_drop') }} || ' (' || {{ fmt('start_loss', 4) }} || ' -> '
                || {{ fmt('end_loss', 4) }} || ') and flattened.'
        end as title,
        case when start_points = 1 then 'loss of the first logged row ' else 'median loss of the first '
            || {{ fmt_int('start_points') }} || ' logged rows ' end || {{ fmt('start_loss', 4) }}
            || case when is_carried_relaunch then ' (of the first attempt in the log: the counter went back to the start but the loss carried on from '
                || {{ fmt('counted_start_loss', 4) }} || ', a relaunch that kept its weights)' else '' end
            || '; median of the last ' || {{ fmt_pct(threshold('progress_window_share'), 0) }} || ' of the run ' || {{ fmt('end_loss', 4) }}
            || '; fall ' || {{ fmt('level_change', 4) }} || ' vs log-to-log scatter ' || {{ fmt('loss_scatter', 4) }}
            || case when learning_verdict = 'rose' then '' else '; relative drop ' || {{ fmt_pct('relative_drop') }}
                || '; change over the last quarter ' || {{ fmt_pct('last_quarter_relative_drop') }} end || ' over ' || {{ fmt_int('n_steps') }} || ' logged steps (spike steps left out)'
            || case when n_evals > 0 then '; validation: first ' || {{ fmt('first_val_loss', 4) }} || ' (step ' || {{ fmt_int('first_eval_step') }}
                || '), best ' || {{ fmt('best_val_loss', 4) }} || ' over ' || {{ fmt_int('n_evals') }} || ' evaluations'
                || case when learning_verdict = 'got_worse' then '; after it, medians over the later evaluations: validation '
                    || {{ fmt('val_level_after_first', 4) }} || ' (' || {{ fmt_pct(safe_divide('val_level_after_first - first_val_loss', 'first_val_loss')) }}
                    || ' above the first, beyond the bar ' || {{ fmt('val_gain_threshold', 4) }} || '), training (trailing medians) '
                    || {{ fmt('train_level_after_first', 4) }} || ' against ' || {{ fmt('train_at_first_eval', 4) }} || ' at the first evaluation ('
                    || {{ fmt_pct(safe_divide('train_level_after_first - train_at_first_eval', 'train_at_first_eval')) }}
                    || '): not overfitting, which needs the training loss to keep falling' else '' end
                || case when learning_verdict = 'no_val_gain' then ' (a gain of ' || {{ fmt('val_gain', 4) }} || ', under '
                    || {{ fmt('val_gain_threshold', 4) }} || ': ' || {{ fmt_pct(threshold('eval_gain_min_share'), 0) }} || ' of the first value or '
                    || {{ threshold('eval_gain_noise_multiple') }} || 'x the eval-to-eval jitter ' || {{ fmt('eval_noise', 4) }} || ')' else '' end
                else '' end
            || chance_evidence
            || case when learning_verdict in ('at_chance', 'near_chance') then '; the ' || judged_loss_kind || ' loss judged: '
                || {{ fmt('judged_loss', 4) }} || ', ' || {{ fmt_pct('judged_share_of_chance') }} || ' of the chance level (no learning within '
                || {{ fmt_pct(threshold('chance_no_learning_share'), 0) }} || ' of it, underfitting within ' || {{ fmt_pct(threshold('chance_underfitting_share'), 0) }} || ')'
                || case when chance_confidence <> 'high' then '; the vocabulary is matched by name, not read from the config, so one step less severe' else '' end
                else '' end
            || case when learning_verdict = 'lost_progress' then '; the lowest median over a whole stretch of '
                || {{ fmt_int('end_points') }} || ' rows (the end window''s size) ' || {{ fmt('best_stretch_loss', 4) }} || ', ending at step '
                || {{ fmt_int('best_stretch_step') }} || ' (' || {{ fmt_pct(safe_divide('start_loss - best_stretch_loss', 'start_loss')) }}
                || ' below the start): a model that cannot learn never holds such a level, so the end above it is a jump or a divergence'
                || case when spikes_after_best > 0 then '; ' || {{ fmt_int('spikes_after_best') }} || ' loss spike(s) after it, the first at step '
                    || {{ fmt_int('first_spike_after_best') }} || ': low here, as loss_spikes reports the jump with its cost'
                    when lowered_by is null then '; no loss spike after it explains the rise: a divergence, medium'
                    else '; no loss spike after it explains the rise' end
                else '' end
            || case when learning_verdict = 'rose' then '; the loss takes negative values, so it is no likelihood and has no chance level: '
                || 'low, as for some objectives (a GAN critic) a rise is how training goes' else '' end
            || case when learning_verdict = 'stopped' then '; validation loss ' || {{ fmt('repeated_val_loss', 6) }} || ' at each of the last '
                || {{ fmt_int('repeated_evals') }} || ' evaluations (steps ' || {{ fmt_int('repeated_from_step') }} || ' to ' || {{ fmt_int('last_logged_step') }}
                || ', ' || {{ fmt_pct('stopped_share', 0) }} || ' of the logged run; at least ' || {{ threshold('frozen_eval_min_evals') }}
                || ' repeats of a value with ' || {{ threshold('frozen_eval_min_significant_digits') }} || '+ significant digits, over at least '
                || {{ fmt_pct(threshold('frozen_eval_min_share'), 0) }} || ' of the run): one validation set through weights that change gives another number each time'
                else '' end
            || case when learning_verdict = 'stalled' then '; validation gained ' || {{ fmt_pct(safe_divide('first_val_loss - best_val_loss', 'first_val_loss')) }}
                || ' on its first value at best (under ' || {{ fmt_pct(threshold('eval_gain_min_share'), 0) }} || '), the training loss (trailing medians) moved '
                || {{ fmt_pct(safe_divide('train_level_after_first - end_loss', 'train_level_after_first')) }} || ' from its level after the first evaluation to the end (under '
                || {{ fmt_pct(threshold('progress_tail_max_drop'), 0) }} || '), over the ' || {{ fmt_pct('stalled_share', 0) }}
                || ' of the logged run after a first evaluation at most ' || {{ fmt_pct(threshold('stall_first_eval_max_share'), 0) }}
                || ' into it; the fall before it says the run could learn, not that it went on'
                else '' end
            || cause_evidence
            || case when learning_verdict in ('flat', 'shallow', 'no_val_gain', 'stalled') and is_pretrained_start and learning_cause is null
                then '; low: the run started at ' || {{ fmt_pct(safe_divide('start_loss', 'chance_loss')) }}
                    || ' of the uniform-guess level, a pretrained model with little left to learn, not one that cannot learn'
                else '' end
            as evidence,
        case when learning_verdict = 'stopped' then repeated_from_step
            when learning_verdict = 'stalled' then first_eval_step else first_step end as first_step,
        case when learning_verdict in ('stopped', 'stalled') then last_logged_step else last_step end as last_step,
        n_steps as steps_affected,
        case when learning_verdict in ('at_chance', 'near_chance') then judged_loss
            when learning_verdict = 'stopped' then repeated_val_loss
            when learning_verdict in ('no_val_gain', 'stalled') then best_val_loss
            when learning_verdict = 'got_worse' then val_level_after_first else end_loss end as observed_value,
        case when learning_verdict in ('at_chance', 'near_chance') then chance_loss
            when learning_verdict in ('no_val_gain', 'got_worse', 'stalled') then first_val_loss
            when learning_verdict = 'lost_progress' then best_stretch_loss else start_loss end as expected_value,
            cast(null as {{ type_double() }}) as threshold_value,
            cast(null as {{ dbt.type_string() }}) as threshold_name,
        case when learning_verdict = 'stopped' then stopped_share
            when learning_verdict = 'stalled' then stalled_share
            when learning_verdict = 'lost_progress' then end_loss - best_stretch_loss else relative_drop end as estimated_cost,
        case when learning_verdict in ('stopped', 'stalled') then 'share_of_updates'
            when learning_verdict = 'lost_progress' then 'nats' else 'relative_loss_drop' end as cost_unit,
        case when learning_verdict = 'stopped' then 'the share of the logged steps after the evaluations stopped changing: updates that changed nothing'
            when learning_verdict = 'stalled' then 'the share of the logged steps after the first evaluation, over which neither loss moved: updates that bought nothing'
            when learning_verdict = 'lost_progress' then 'the median training loss of the end of the run minus that of the best whole stretch: what the run lost of what it had learned (training loss, not validation)'
            else 'relative drop of the median training loss from the first steps to the end of the run' end as cost_method,
        case when learning_verdict = 'stopped' then stopped_share when learning_verdict = 'stalled' then stalled_share when category = 'no_learning' then 0.9 else 0.5 end as impact_score,
        learning_cause as caused_by,
        case
            when learning_cause = 'schedule_sanity:warmup_covers_run'
                then 'Shorten the warmup to a few percent of the run so the LR reaches its peak, then check the loss falls well below the uniform-guess level.'
            when learning_cause = 'schedule_sanity:lr_far_above_usual'
                then 'Lower the LR into the usual range for this model and optimizer (see schedule_sanity) and rerun a short stretch: the loss should fall from the first evaluations.'
            when learning_cause = 'schedule_sanity:lr_far_below_usual'
                then 'Raise the LR into the usual range for this model and optimizer (see schedule_sanity) and rerun a short stretch: the loss should fall from the first evaluations.'
            when learning_verdict = 'stopped'
                then 'Find what stopped the updates at that step: an LR decayed or cut to zero (a StepLR or plateau scheduler), an optimizer no longer stepping (skipped steps after an overflow), parameters frozen by a callback; stop the run where learning stops, or fix the schedule and rerun from that checkpoint.'
            when learning_verdict = 'stalled'
                then 'The run reached a plateau early and stayed on it: try a lower LR (a step too large to descend further keeps a loss level), a schedule that decays, or more capacity; check the loss level against a trivial baseline (the frequencies of the targets), and stop a run that no longer moves instead of spending its compute.'
            when learning_verdict = 'lost_progress'
                then 'Keep a checkpoint from before the rise (the best stretch). Find what changed there: a loss jump (see loss_spikes: LR, a bad batch, a resume), a schedule step, new data; lower the LR or clip gradients and rerun from that checkpoint.'
            when learning_verdict = 'got_worse'
                then 'Keep the checkpoint of the first evaluation. Lower the peak LR (a pretrained model knocked off its optimum gets worse as the warmup raises the LR) or check what changed after it (a resume, the data); rerun a short stretch and confirm both losses fall from the first evaluation on.'
            when category = 'no_learning'
                then 'Check the pipeline before anything else: gradients reaching the parameters, the optimizer stepping, labels not masked out, LR neither zero nor too high; try to overfit a handful of examples.'
            else 'More capacity or a higher LR; do not just add epochs. Compare with a run known to learn.'
        end as recommendation
    from verdicts
),

zero_findings as (
    select
        run_id,
        'no_learning:zero_loss' as finding_id,
        'no_learning' as category,
        -- 0 from the first log with no gradient norm logged: nothing was trained, or the logger wrote 0
        -- for a loss it never measured (a placeholder): medium either way
        case when loss_before_zero is null and not is_zero_gradient then 'medium' else 'critical' end as severity,
        case when loss_before_zero is null and not is_zero_gradient
            then 'Training loss is exactly 0 on every log (' || {{ fmt_int('zero_loss_steps') }} || ' of '
                || {{ fmt_int('logged_steps') }} || '): a loss of 0 has no gradient, so nothing was trained (a task with'
                || ' nothing to learn: one class, a target the input gives away), unless the logger wrote 0 for a loss it never measured.'
            when loss_before_zero is null
            then 'Training loss and gradient norm are exactly 0 from the first log (' || {{ fmt_int('zero_loss_steps') }} || ' of '
                || {{ fmt_int('logged_steps') }} || ' logs): no gradient reached the parameters, nothing is being trained.'
            else 'Training loss collapsed to exactly 0 at step ' || {{ fmt_int('first_zero_step') }} || ' (from '
                || {{ fmt('loss_before_zero', 4) }} || ') and stayed there on ' || {{ fmt_int('zero_loss_steps') }} || ' of '
                || {{ fmt_int('logged_steps') }} || ' logs: nothing is being trained.' end as title,
        'logged losses exactly 0: ' || {{ fmt_int('zero_loss_steps') }} || ' of ' || {{ fmt_int('logged_steps') }}
            || ', first at step ' || {{ fmt_int('first_zero_step') }}
            || case when loss_before_zero is null and not is_zero_gradient
                then '; no gradient norm logged; the loss is a plain one (not a reinforcement-learning objective, which can report 0 at its sampling policy and still have a gradient)'
                when loss_before_zero is null
                then '; every logged gradient norm is exactly 0 as well (an RL objective that reports 0 at its sampling policy still has a gradient; a loss whose labels are all masked has none)'
                else '; last non-zero loss before it ' || {{ fmt('loss_before_zero', 4) }}
                    || ' (a converging loss shrinks gradually; a jump to exactly 0 means the loss is masked or zeroed)' end
            as evidence,
        first_zero_step as first_step,
        last_step,
        zero_loss_steps as steps_affected,
        cast(0 as {{ type_double() }}) as observed_value,
        loss_before_zero as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(1 as {{ type_double() }}) as estimated_cost,
        'relative_loss_drop' as cost_unit,
        'every update after the collapse trains nothing' as cost_method,
        1.0 as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when loss_before_zero is null and not is_zero_gradient
            then 'Check what the logged loss is: the classes the data loader found (one class makes a cross-entropy 0), a target the input gives away, or a logger writing 0 where the loss was never computed; rerun a few steps and print the loss and gradient norm.'
            else 'Check the labels and the chat template: if every label is masked (-100) the loss is 0; check for a loss zeroed by overflow or a wrong loss reduction. Rerun a few steps and print the number of unmasked label tokens.'
        end as recommendation
    from progress
    where {{ safe_divide('zero_loss_steps', 'logged_steps') }} >= {{ threshold('zero_loss_min_share') }}
        and (
            loss_before_zero >= {{ threshold('zero_loss_min_jump_from') }}
            -- zero from the first log: nothing to jump from, but no gradient either (not an RL objective)
            or (loss_before_zero is null and is_zero_gradient)
            -- zero on every log, no gradient norm logged: a plain loss (an RL objective reports 0 at its
            -- sampling policy; a GAN player's or one term of a sum can be 0 while the rest trains)
            or (loss_before_zero is null and logged_grad_norms = 0 and zero_loss_steps = logged_steps
                and not (is_reinforcement_loss or is_adversarial_loss or is_term_loss))
        )
),

chance_findings as (
    select
        stuck_accuracy.run_id,
        'no_learning:chance_accuracy' as finding_id,
        'no_learning' as category,
        case when accuracy_evals >= 2 then 'high' else 'medium' end as severity,
        'Validation accuracy stayed at ' || {{ fmt('max_accuracy', 3) }} || ', the chance rate of a ' || {{ fmt_int('n_classes') }}
            || '-class task, on ' || {{ fmt_int('accuracy_evals') }} || ' evaluation(s): the model predicts one class.' as title,
        'val_accuracy between ' || {{ fmt('min_accuracy', 4) }} || ' and ' || {{ fmt('max_accuracy', 4) }} || ' on '
            || {{ fmt_int('accuracy_evals') }} || ' evaluation(s) (steps ' || {{ fmt_int('first_step') }} || '-' || {{ fmt_int('last_step') }}
            || '), within ' || {{ threshold('chance_accuracy_tolerance') }} || ' of 1/' || {{ fmt_int('n_classes') }}
            || case when accuracy_evals < 2 then '; a single evaluation cannot show whether it ever moved, so medium' else '' end
            as evidence,
        first_step,
        last_step,
        accuracy_evals as steps_affected,
        max_accuracy as observed_value,
        chance_rate as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(1 as {{ type_double() }}) as estimated_cost,
        'relative_loss_drop' as cost_unit,
        'a model at the chance rate has learned nothing usable' as cost_method,
        0.9 as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Check that labels reach the loss and are not all one class; lower the LR if the loss sits at ln(number of classes); try to overfit a handful of examples.'
            as recommendation
    from stuck_accuracy
    -- a 2-class match also fits 1/k for no other k; keep the largest matching k only once
    inner join largest_chance_class
        on stuck_accuracy.run_id = largest_chance_class.run_id
        and stuck_accuracy.n_classes = largest_chance_class.max_n_classes
),

chance_auc_findings as (
    -- a validation ROC AUC never above chance_auc_tolerance over 0.5 on chance_auc_min_evals or more
    -- evaluations: the model ranks held-out examples no better than at random. Unlike accuracy, whose
    -- chance rate depends on the class count and balance, an AUC of 0.5 is chance for any task it is
    -- computed on (a binary label, or the mean over a multi-label head's labels)
    select
        run_id,
        'no_learning:chance_auc' as finding_id,
        'no_learning' as category,
        'medium' as severity,
        'Validation ROC AUC never rose above ' || {{ fmt('max_auc', 3) }} || ' on ' || {{ fmt_int('auc_evals') }}
            || ' evaluations: the model ranks held-out examples no better than at random (0.5).' as title,
        'val_auc between ' || {{ fmt('min_auc', 4) }} || ' and ' || {{ fmt('max_auc', 4) }} || ' on '
            || {{ fmt_int('auc_evals') }} || ' evaluations (steps ' || {{ fmt_int('first_step') }} || '-' || {{ fmt_int('last_step') }}
            || '), never above 0.5 + ' || {{ threshold('chance_auc_tolerance') }}
            || ' (an AUC of 0.5 is chance at any class balance)' as evidence,
        first_step,
        last_step,
        auc_evals as steps_affected,
        max_auc as observed_value,
        cast(0.5 as {{ type_double() }}) as expected_value,
        cast({{ threshold('chance_auc_tolerance') }} as {{ type_double() }}) as threshold_value,
        'chance_auc_tolerance' as threshold_name,
        cast(1 as {{ type_double() }}) as estimated_cost,
        'relative_loss_drop' as cost_unit,
        'a model that ranks at random has learned nothing usable' as cost_method,
        0.9 as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Check that labels reach the loss and match the inputs (a shuffled or misaligned label file ranks at random); check the metric is fed probabilities for the positive class; try to overfit a handful of examples.'
            as recommendation
    from ranking_scores
    where auc_evals >= {{ threshold('chance_auc_min_evals') }}
        and max_auc <= 0.5 + {{ threshold('chance_auc_tolerance') }}
),

detection_judged as (
    -- underfitting, not no learning, when the training loss still fell over the run's last quarter
    -- beyond its noise (the flat verdict's rule: no_learning_scatter_factor x the log-to-log scatter):
    -- a detector still learning when the run ended, too short or too slow to find objects yet
    select
        detection_scores.*,
        progress.three_quarter_loss,
        progress.end_loss,
        progress.loss_scatter,
        case
            when progress.three_quarter_loss - progress.end_loss > {{ threshold('no_learning_scatter_factor') }} * progress.loss_scatter
                then 'underfitting'
            else 'no_learning'
        end as category
    from detection_scores
    left join progress
        on detection_scores.run_id = progress.run_id
    left join target_terms
        on detection_scores.run_id = target_terms.run_id
    where detection_scores.best_map50 < {{ threshold('detection_map50_floor') }}
        and detection_scores.map_evals >= {{ threshold('detection_min_evals_low') }}
        -- an mAP measured against no labelled box says nothing of the detector (log_quality reports the
        -- validation that compared nothing), and a detector no labelled box reached in training is
        -- target_findings' verdict
        and target_terms.val_zero_loss_terms is null
        and target_terms.train_zero_loss_terms is null
),

detection_findings as (
    -- random boxes almost never overlap an object by half (IoU 0.5), so a detector that has learned
    -- nothing scores an mAP50 of about 0, and one that has learned anything finds some objects: a best
    -- mAP50 under detection_map50_floor over detection_min_evals evaluations or more is a detector that
    -- found nothing on validation (nothing learned, or validation labels that do not match the training
    -- classes; underfitting when it was still learning: detection_judged); medium, low over fewer
    -- evaluations (a detector from scratch can still be at 0 early on)
    select
        run_id,
        category || ':detection_score' as finding_id,
        category,
        case when map_evals >= {{ threshold('detection_min_evals') }} then 'medium' else 'low' end as severity,
        case when category = 'underfitting'
            then 'The detector had found next to nothing on validation when the run ended, its loss still falling: its mAP at IoU 0.5 never went above '
            else 'The detector found next to nothing on validation: its mAP at IoU 0.5 never went above ' end
            || {{ fmt('best_map50', 3) }} || ' over ' || {{ fmt_int('map_evals') }} || ' evaluations.' as title,
        'validation mAP50 best ' || {{ fmt('best_map50', 4) }} || ', last ' || {{ fmt('last_map50', 4) }} || ' over '
            || {{ fmt_int('map_evals') }} || ' evaluations (steps ' || {{ fmt_int('first_step') }} || '-' || {{ fmt_int('last_step') }}
            || '), under ' || {{ threshold('detection_map50_floor') }} || ' throughout: random boxes score about 0,'
            || ' a detector that learned anything finds some objects at IoU 0.5'
            || coalesce('; training loss over the last quarter ' || {{ fmt('three_quarter_loss', 4) }} || ' -> ' || {{ fmt('end_loss', 4) }}
                || ' against a log-to-log scatter of ' || {{ fmt('loss_scatter', 4) }}
                || case when category = 'underfitting' then ': still falling beyond its noise, a detector still learning when the run ended'
                    else ': no fall beyond its noise' end, '')
            || case when map_evals < {{ threshold('detection_min_evals') }} then '; fewer than '
                || {{ threshold('detection_min_evals') }} || ' evaluations (a detector from scratch can still be at 0 early on), so low'
                else '' end as evidence,
        first_step,
        last_step,
        map_evals as steps_affected,
        best_map50 as observed_value,
        cast(null as {{ type_double() }}) as expected_value,
        cast({{ threshold('detection_map50_floor') }} as {{ type_double() }}) as threshold_value,
        'detection_map50_floor' as threshold_name,
        cast(1 as {{ type_double() }}) as estimated_cost,
        'share_of_updates' as cost_unit,
        'every update of a run whose detector finds nothing on validation bought no usable model' as cost_method,
        case when category = 'underfitting' then 0.5 else 0.9 end as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when category = 'underfitting'
            then 'Train longer (a detector from scratch needs tens of epochs before it finds objects) or start from pretrained weights; check the LR and warmup, and that the validation labels use the training classes.'
            else 'Check that the validation labels use the training classes (data.yaml names and ids) and that boxes are in the format the trainer reads; look at a few predictions on training images: if they are empty there too, check the LR, the warmup and the image size, and try to overfit a handful of images.'
        end as recommendation
    from detection_judged
),

chance_loss_findings as (
    -- a classifier that learned only the class prior ends at ln 2 (two balanced classes) and stays
    -- there; an LM ending flat within the tolerance of ln 2 is a coincidence, hence medium
    select
        run_id,
        'no_learning:chance_loss' as finding_id,
        'no_learning' as category,
        'medium' as severity,
        'Training loss settled at ' || {{ fmt('end_loss', 4) }} || ', ln 2 (' || {{ fmt('ln(2.0)', 4) }}
            || '): a two-class model predicting the class prior, i.e. at chance.' as title,
        'median of the last ' || {{ fmt_pct(threshold('progress_window_share'), 0) }} || ' of the run ' || {{ fmt('end_loss', 4) }}
            || ' within ' || {{ threshold('chance_loss_tolerance') }} || ' of ln 2; change over the last quarter '
            || {{ fmt_pct('last_quarter_relative_drop') }} || ' (flat); start ' || {{ fmt('start_loss', 4) }}
            || '; a language model can end near 0.693 by coincidence, so medium' as evidence,
        first_step,
        last_step,
        n_steps as steps_affected,
        end_loss as observed_value,
        ln(2.0) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(1 as {{ type_double() }}) as estimated_cost,
        'relative_loss_drop' as cost_unit,
        'a model at the chance rate has learned nothing usable' as cost_method,
        0.7 as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Check the accuracy: if it sits at the majority rate, lower the LR or change the optimizer; check that labels reach the loss.'
            as recommendation
    from progress
    where {{ no_other_chance_verdict }} and {{ training_settled_at_ln_2 }}
),

chance_val_loss_findings as (
    -- the validation loss of a two-class model that never beat a coin flip: its first evaluation near ln 2
    -- and its best at it (every evaluation at or above it, within the tolerance), whatever the training loss did (a model
    -- that fits its training set but predicts the class prior on held-out data learned nothing usable);
    -- medium, as for the training loss: another task can sit near 0.693 by coincidence
    select
        run_id,
        'no_learning:chance_val_loss' as finding_id,
        'no_learning' as category,
        'medium' as severity,
        'Validation loss never went below ' || {{ fmt('best_val_loss', 4) }} || ', ln 2 (' || {{ fmt('ln(2.0)', 4) }}
            || '), on ' || {{ fmt_int('n_evals') }} || ' evaluations: a two-class model at chance on held-out data.' as title,
        'best validation loss ' || {{ fmt('best_val_loss', 4) }} || ' within ' || {{ threshold('chance_loss_tolerance') }}
            || ' of ln 2 over ' || {{ fmt_int('n_evals') }} || ' evaluations (first ' || {{ fmt('first_val_loss', 4) }}
            || '); training loss ' || {{ fmt('start_loss', 4) }} || ' at the start, ' || {{ fmt('end_loss', 4) }}
            || ' at the end; a loss of another task can sit near 0.693 by coincidence, so medium' as evidence,
        first_step,
        last_step,
        n_evals as steps_affected,
        best_val_loss as observed_value,
        ln(2.0) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(1 as {{ type_double() }}) as estimated_cost,
        'relative_loss_drop' as cost_unit,
        'a model at the chance rate on held-out data has learned nothing usable' as cost_method,
        0.7 as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Check that labels and inputs line up in the validation set, that the features carry signal (a shuffled-label run should do as well), and lower the LR.'
            as recommendation
    from progress
    where {{ no_other_chance_verdict }}
        and n_evals >= {{ threshold('chance_val_min_evals') }}
        and abs(best_val_loss - ln(2.0)) <= {{ threshold('chance_loss_tolerance') }}
        -- at a coin flip from its first evaluation: a loss that came down to ln 2 from far above it learned
        and first_val_loss <= (1 + {{ threshold('chance_val_start_share') }}) * ln(2.0)
        -- the training loss settled at ln 2 too: no_learning:chance_loss says it
        and not ({{ training_settled_at_ln_2 }})
        -- a uniform guess the run's config or names put elsewhere (a vocabulary, more than two classes): a
        -- loss near 0.693 is then a coincidence of scale, not a coin flip (a summarizer over 40,030 tokens)
        and not coalesce(chance_confidence in ('high', 'medium')
            and abs(chance_loss - ln(2.0)) > {{ threshold('chance_loss_tolerance') }}, false)
),

still_findings as (
    -- most of the run's steps moved nothing: their loss and gradient norm are both exactly 0 on at least
    -- zero_update_min_share of the steps with a logged gradient norm (a run zero_findings already reports
    -- is left to it). A batch whose loss carries no learning signal has no gradient: a GRPO group whose
    -- completions all got one reward has advantages of 0 (a policy that gives one answer: collapsed), a
    -- batch whose labels are all masked. Medium: what it cost is the updates, counted
    select
        run_id,
        'no_learning:zero_updates' as finding_id,
        'no_learning' as category,
        'medium' as severity,
        'Most updates moved nothing: on ' || {{ fmt_int('still_steps') }} || ' of ' || {{ fmt_int('logged_grad_norms') }}
            || ' logged steps (' || {{ fmt_pct(safe_divide('still_steps', 'logged_grad_norms'), 0) }} || '), from step '
            || {{ fmt_int('first_still_step') }} || ', the loss and the gradient norm are both exactly 0.' as title,
        'steps with loss = 0 and grad_norm = 0: ' || {{ fmt_int('still_steps') }} || ' of ' || {{ fmt_int('logged_grad_norms') }}
            || ' with a logged gradient norm (at least ' || {{ fmt_pct(threshold('zero_update_min_share'), 0) }} || '), the first at step '
            || {{ fmt_int('first_still_step') }} || ': a batch with no learning signal has no gradient, so those updates changed no'
            || ' parameter (a GRPO group whose sampled answers all got one reward has advantages of 0: the policy collapsed to one'
            || ' answer; a batch whose labels are all masked)' as evidence,
        first_still_step as first_step,
        last_step,
        still_steps as steps_affected,
        cast(0 as {{ type_double() }}) as observed_value,
        cast(null as {{ type_double() }}) as expected_value,
        cast({{ threshold('zero_update_min_share') }} as {{ type_double() }}) as threshold_value,
        'zero_update_min_share' as threshold_name,
        {{ safe_divide('still_steps', 'logged_grad_norms') }} as estimated_cost,
        'share_of_updates' as cost_unit,
        'the share of the logged steps whose loss and gradient norm are both exactly 0: updates that moved nothing' as cost_method,
        {{ safe_divide('still_steps', 'logged_grad_norms') }} as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'For an RL fine-tune (GRPO): check that rewards vary within each group (the share of groups with one reward), raise the sampling temperature or the group size, or make the reward finer; otherwise check that the labels are not all masked (-100) on those batches.'
            as recommendation
    from progress
    where logged_grad_norms >= {{ threshold('progress_min_points') }}
        and still_steps >= {{ threshold('zero_update_min_share') }} * logged_grad_norms
        and run_id not in (select run_id from zero_findings)
),

target_findings as (
    -- a detector no labelled box reached in training: its box-regression loss term(s) exactly 0 on every
    -- training row while its other terms are not (the importer's train_zero_loss_terms). A box term is
    -- computed over the predictions matched to labelled boxes, so the detector never had a box to learn
    -- to find, whatever its class or objectness terms did: no learning, medium (a box gain set to 0 in
    -- the trainer's settings would log the same zeros: the recommendation says to check both)
    select
        target_terms.run_id,
        'no_learning:no_training_targets' as finding_id,
        'no_learning' as category,
        'medium' as severity,
        'No labelled box reached the training loss: its box term is exactly 0 on all ' || {{ fmt_int('progress.logged_steps') }}
            || ' logged rows, so the detector had nothing to learn to find.' as title,
        'training box-regression term(s) ' || target_terms.train_zero_loss_terms || ' exactly 0 on every row while the other'
            || ' training loss terms are not: a box term is computed over predictions matched to labelled boxes, so none reached'
            || ' the loss (training labels missing, rejected by the loader, or removed by a class filter)'
            || coalesce('; detector mAP50 best ' || {{ fmt('detection_scores.best_map50', 4) }} || ' over '
                || {{ fmt_int('detection_scores.map_evals') }} || ' evaluations', '')
            || case when target_terms.val_zero_loss_terms is not null then '; validation has no labelled box either (log_quality)' else '' end
            as evidence,
        progress.first_step,
        progress.last_step,
        progress.logged_steps as steps_affected,
        cast(0 as {{ type_double() }}) as observed_value,
        cast(null as {{ type_double() }}) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(1 as {{ type_double() }}) as estimated_cost,
        'share_of_updates' as cost_unit,
        'no update of a run whose training had no labelled box taught the detector to find one' as cost_method,
        0.9 as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Check the training labels: the label files the data config points to exist beside the images, hold boxes in the trainer''s format, and survive any class filter (classes=...); check the box loss gain is not 0; look at one training batch with its boxes drawn before rerunning.'
            as recommendation
    from target_terms
    inner join progress
        on target_terms.run_id = progress.run_id
    left join detection_scores
        on target_terms.run_id = detection_scores.run_id
    where target_terms.train_zero_loss_terms is not null
        and progress.logged_steps > 0
),

abandoned_findings as (
    -- a launch the log holds whole and a later launch replaced from the run's first step on (the run
    -- abandoned and started anew in the same log), whose loss never fell: its mean over its last
    -- progress_window_share within no_learning_max_drop of its first losses', and no loss
    -- underfitting_max_drop below them. The run's own verdicts read the last launch only, so this
    -- one is told here. Medium (low for one term of a sum or an RL loss): that launch's updates taught nothing, and whatever made it fail
    -- (a setting, the code, the data) may be in the launch that replaced it unless it was changed;
    -- costed as the share of the log's training rows it took
    select
        attempts.run_id,
        'no_learning:abandoned_launch_' || {{ fmt_int('attempts.attempt_number') }} as finding_id,
        'no_learning' as category,
        case when attempts.is_weak_loss then 'low' else 'medium' end as severity,
        'Launch ' || {{ fmt_int('attempts.attempt_number') }} || ' of ' || {{ fmt_int('attempts.attempts') }}
            || ' in this log never learned: its loss went from ' || {{ fmt('attempts.start_loss', 4) }} || ' to '
            || {{ fmt('attempts.end_loss', 4) }} || ' over ' || {{ fmt_int('attempts.logged_losses') }}
            || ' logged losses, and the run was started anew from step ' || {{ fmt_int('attempts.first_step') }} || '.'
            as title,
        'launch ' || {{ fmt_int('attempts.attempt_number') }} || ' (steps ' || {{ fmt_int('attempts.first_step') }} || '-'
            || {{ fmt_int('attempts.last_step') }} || ', every row replaced by a later launch from the run''s first step):'
            || ' mean of its first ' || {{ threshold('progress_start_points') }} || ' losses ' || {{ fmt('attempts.start_loss', 4) }}
            || ', of its last ' || {{ fmt_pct(threshold('progress_window_share'), 0) }} || ' ' || {{ fmt('attempts.end_loss', 4) }}
            || ' (' || {{ fmt_pct('attempts.relative_drop', 1) }} || ' lower, under ' || {{ fmt_pct(threshold('no_learning_max_drop'), 0) }}
            || '), lowest ' || {{ fmt('attempts.best_loss', 4) }} || ' (never ' || {{ fmt_pct(threshold('underfitting_max_drop'), 0) }}
            || ' below its start); the run''s other findings read its last launch, which replaced this one'
            || case when attempts.is_weak_loss then '; low: the loss read is one term of a sum or a reinforcement-learning'
                || ' loss (config loss_objective), whose course is a weak sign of learning' else '' end as evidence,
        attempts.first_step,
        attempts.last_step,
        attempts.logged_losses as steps_affected,
        attempts.relative_drop as observed_value,
        cast(null as {{ type_double() }}) as expected_value,
        cast({{ threshold('no_learning_max_drop') }} as {{ type_double() }}) as threshold_value,
        'no_learning_max_drop' as threshold_name,
        {{ safe_divide('attempts.logged_losses', 'attempts.log_losses') }} as estimated_cost,
        'share_of_updates' as cost_unit,
        'the share of the log''s training rows spent on a launch that learned nothing and was abandoned' as cost_method,
        {{ safe_divide('attempts.logged_losses', 'attempts.log_losses') }} as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Compare that launch''s settings, code and data with the launch that replaced it (learning rate, initialisation,'
            || ' the model''s code, the labels): what changed between them is what made it fail; if nothing did, the'
            || ' later launch may have learned by luck, so rerun it with another seed before trusting it.'
            as recommendation
    from attempts
    where attempts.is_never_learned
),

unioned as (
    select * from trend_findings
    union all
    select * from abandoned_findings
    union all
    select * from chance_loss_findings
    union all
    select * from chance_val_loss_findings
    union all
    select * from zero_findings
    union all
    select * from chance_findings
    union all
    select * from chance_auc_findings
    union all
    select * from detection_findings
    union all
    select * from target_findings
    union all
    select * from still_findings
),

final as (
    -- a log that stops inside its warmup, short of the configured end, or that holds only a run's first
    -- steps with the loss falling beyond its noise, is too early to judge: its verdicts are low at most
    -- (a loss collapsed to exactly zero is wrong at any time; a detector that found nothing on
    -- detection_min_evals evaluations or more found nothing with the updates it had, whatever its LR did:
    -- judged_any_time)
    select
        unioned.run_id,
        unioned.finding_id,
        unioned.category,
        case when (progress.is_too_early or progress.is_early_trend) and unioned.finding_id not in {{ judged_any_time }}
            then {{ severity_min('unioned.severity', "'low'") }} else unioned.severity end as severity,
        unioned.title,
        unioned.evidence
            || case when unioned.finding_id in {{ judged_any_time }} then ''
                when progress.is_too_early
                then '; too early to judge, so low: the log stops at step ' || {{ fmt_int('progress.last_step') }}
                    || ' inside its warmup (the LR never reached its peak), short of the configured end'
                when progress.is_early_trend
                then '; too early to judge, so low: the log holds only the first ' || {{ fmt_int('progress.last_step') }}
                    || ' steps (under ' || {{ threshold('progress_early_steps') }} || ', where common recipes are still warming up)'
                    || ' and its loss still falls beyond its noise, not slowing down'
                when progress.lowered_by = 'term_loss' and unioned.finding_id = progress.verdict_finding_id
                then '; low: the loss read is one term of a sum whose total is not logged (config loss_objective = term);'
                    || ' the terms trade off, so one term''s course is a weak sign of the whole''s'
                when progress.lowered_by = 'reinforcement' and unioned.finding_id = progress.verdict_finding_id
                then '; low: the loss read is a reinforcement-learning loss (config loss_objective = reinforcement: a value,'
                    || ' policy or TD loss); its targets move with the policy (a value loss grows with the returns it'
                    || ' predicts), so its course is a weak sign of whether the agent learns: its return shows that'
                when progress.lowered_by = 'noise_bound' and unioned.finding_id = progress.verdict_finding_id
                then '; low: the log is too noisy to have shown a fall of ' || {{ fmt_pct(threshold('underfitting_max_drop'), 0) }}
                    || ' (log-to-log scatter ' || {{ fmt('progress.loss_scatter', 4) }} || ' against a start of '
                    || {{ fmt('progress.start_loss', 4) }} || ')'
                when progress.lowered_by = 'noisy_gain' and unioned.finding_id = progress.verdict_finding_id
                then '; low: both losses fell (the training loss ' || {{ fmt('progress.level_change', 4) }}
                    || ', beyond its log-to-log scatter ' || {{ fmt('progress.loss_scatter', 4) }}
                    || '; the later evaluations'' median ' || {{ fmt('progress.val_level_after_first', 4) }}
                    || ' below the first ' || {{ fmt('progress.first_val_loss', 4) }} || ' by more than their jitter '
                    || {{ fmt('progress.eval_noise', 4) }} || '), and only that jitter leaves the validation gain'
                    || ' unconfirmed: no evidence that there was none'
                else '' end as evidence,
        unioned.first_step,
        unioned.last_step,
        unioned.steps_affected,
        unioned.observed_value,
        unioned.expected_value,
        unioned.threshold_value,
        unioned.threshold_name,
        unioned.estimated_cost,
        unioned.cost_unit,
        unioned.cost_method,
        unioned.impact_score,
        unioned.caused_by,
        unioned.recommendation
    from unioned
    left join progress
        on unioned.run_id = progress.run_id
)

select * from final
