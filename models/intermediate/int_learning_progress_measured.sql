-- How much the training loss fell, in one row per run (even a run without steps:
-- the rows come from the run spine): the median loss of the first
-- progress_start_points steps against the last progress_window_share of the
-- counted steps (spikes left out), the relative drop, the change over the last
-- quarter of the run (is it still falling?), the log-to-log scatter of the loss
-- (is the fall larger than the noise?), and the evidence for a loss that is no
-- likelihood (negative values) or that collapsed to exactly zero.
-- Judged against chance (int_runs_referenced): the loss the model was best at (the
-- lowest validation loss after training began, else the end of the training loss) as a
-- share of the chance level; whether validation ever improved meaningfully on its first
-- value (eval_gain_min_share and eval_gain_noise_multiple x the eval-to-eval jitter), or
-- had already gained before the first evaluation (the training loss fell by
-- underfitting_max_drop before it). From these, one learning verdict per run, the first
-- that holds: at chance, near chance, got worse, lost progress (flat or shallow from start to
-- end after holding a far lower level: it learned, then lost it), flat, no validation gain (only
-- with an LR far outside its usual range or a training loss that barely fell), shallow, else learned; and the
-- cause to name for it (a warmup the logged run never left, an LR far outside the range).
{#- the log is too noisy to tell a flat loss from one that fell by underfitting_max_drop (is_noise_bound,
    explained where it is selected); set once, as has_val_gain reads it in the same select -#}
{%- set noise_bound -%}
coalesce(
            {{ threshold('no_learning_scatter_factor') }} * sqrt(pi() / 2) * loss_scatter
                * sqrt(1.0 / start_points + 1.0 / end_points)
            > greatest({{ threshold('underfitting_max_drop') }} * abs(start_loss), abs(level_change)),
            false
        )
{%- endset %}
with

runs as (
    -- the run spine: one row per run
    select run_id from {{ run_ref('stg_training__config') }}
),

all_points as (
    select run_id, step, loss from {{ run_ref('int_train_steps_resolved') }} where loss is not null
),

baselined as (
    -- every logged loss with its spike flag, read once: the spikes are left out of the levels below,
    -- and counted after the best stretch (later_spikes)
    select run_id, step, loss, is_loss_spike
    from {{ run_ref('int_loss_baselines_computed') }}
    where loss is not null
),

scored as (
    select run_id, step, loss, is_loss_spike
    from baselined
    where not is_loss_spike
),

row_kinds as (
    -- how many first rows make the start: an epoch's mean is already an average over many batches
    select
        run_id,
        case when rows_are = 'epoch' then {{ threshold('progress_start_epochs') }}
            else {{ threshold('progress_start_points') }} end as start_points
    from {{ run_ref('stg_training__config') }}
),

positioned as (
    select
        scored.*,
        coalesce(row_kinds.start_points, {{ threshold('progress_start_points') }}) as start_points,
        row_number() over (partition by scored.run_id order by scored.step) as position,
        count(*) over (partition by scored.run_id) as n_steps,
        abs(scored.loss - {{ previous_value('scored.loss', 'scored.step', 'scored.run_id') }}) as step_change
    from scored
    left join row_kinds
        on scored.run_id = row_kinds.run_id
),

sized as (
    -- how many last rows make the end: progress_window_share of the run, at least 3
    select
        *,
        greatest(3, ceiling(n_steps * {{ threshold('progress_window_share') }})) as end_points
    from positioned
),

windows as (
    select
        run_id,
        max(n_steps) as n_steps,
        max(start_points) as start_points,
        max(end_points) as end_points,
        min(step) as first_step,
        max(step) as last_step,
        percentile_cont(0.5) within group (order by case
            when position <= start_points then loss end)
            as start_loss,
        percentile_cont(0.5) within group (order by case
            when position > n_steps - end_points then loss end)
            as end_loss,
        percentile_cont(0.5) within group (order by case
            when position > 0.75 * n_steps - end_points
                and position <= 0.75 * n_steps then loss end)
            as three_quarter_loss,
        -- the median absolute change between consecutive logs over 0.6745 * sqrt(2): the standard
        -- deviation of one logged loss around its level if the noise is independent
        percentile_cont(0.5) within group (order by step_change) / (0.6745 * sqrt(2.0)) as loss_scatter,
        -- the range of the second half's losses: zero when the loss froze (is_frozen)
        max(case when position > n_steps / 2.0 then loss end) as late_max_loss,
        min(case when position > n_steps / 2.0 then loss end) as late_min_loss
    from sized
    group by run_id
),

stretches as (
    -- the run cut into consecutive stretches of end_points rows (the end window's size), each with its
    -- median loss and last step: a level the run held, not one lucky batch (only whole stretches)
    select
        run_id,
        floor((position - 1) / end_points) as stretch_number,
        max(end_points) as end_points,
        count(*) as stretch_points,
        max(step) as stretch_last_step,
        percentile_cont(0.5) within group (order by loss) as stretch_loss
    from sized
    group by run_id, floor((position - 1) / end_points)
),

ranked_stretches as (
    select
        run_id,
        stretch_loss,
        stretch_last_step,
        row_number() over (partition by run_id order by stretch_loss, stretch_number) as stretch_rank
    from stretches
    where stretch_points = end_points
),

best_stretches as (
    -- the lowest level the run held (its best whole stretch) and where that stretch ends
    select run_id, stretch_loss as best_stretch_loss, stretch_last_step as best_stretch_step
    from ranked_stretches
    where stretch_rank = 1
),

later_spikes as (
    -- loss spikes after the best stretch: a jump that can explain an end above the level the run held
    select
        spikes.run_id,
        count(*) as spikes_after_best,
        min(spikes.step) as first_spike_after_best
    from baselined as spikes
    inner join best_stretches
        on spikes.run_id = best_stretches.run_id
        and spikes.step > best_stretches.best_stretch_step
    where spikes.is_loss_spike
    group by spikes.run_id
),

file_rows as (
    -- every logged loss with its attempt, the rows a later attempt superseded included (a log whose
    -- counter went back, int_train_rows_resolved)
    select run_id, step, attempt_number, file_row_number, is_counted, loss
    from {{ run_ref('int_train_rows_resolved') }}
    where resolution in ('counted', 'superseded') and loss is not null
),

counted_start as (
    -- the attempt the counted rows start in: past the first when a later attempt restarted at (or
    -- before) the log's first step and superseded the whole of the attempts before it
    select
        file_rows.run_id,
        max(file_rows.attempt_number) as counted_start_attempt
    from file_rows
    inner join (
        select run_id, min(step) as first_counted_step from file_rows where is_counted group by run_id
    ) as firsts
        on file_rows.run_id = firsts.run_id
        and file_rows.step = firsts.first_counted_step
    where file_rows.is_counted
    group by file_rows.run_id
),

relaunched_positions as (
    -- the rows of the runs whose counted rows start in a later attempt (most runs have one
    -- attempt: nothing is windowed for them), numbered within their attempt
    select
        file_rows.run_id,
        file_rows.attempt_number,
        file_rows.loss,
        coalesce(row_kinds.start_points, {{ threshold('progress_start_points') }}) as start_points,
        row_number() over (partition by file_rows.run_id, file_rows.attempt_number order by file_rows.file_row_number) as position_in_attempt,
        count(*) over (partition by file_rows.run_id, file_rows.attempt_number) as attempt_rows
    from file_rows
    inner join counted_start
        on file_rows.run_id = counted_start.run_id
        and counted_start.counted_start_attempt > 1
        and file_rows.attempt_number < counted_start.counted_start_attempt
    left join row_kinds
        on file_rows.run_id = row_kinds.run_id
),

attempt_levels as (
    -- each earlier attempt's start and end level: the medians of its first and last start_points losses
    select
        run_id,
        attempt_number,
        percentile_cont(0.5) within group (order by case when position_in_attempt <= start_points then loss end)
            as attempt_start_loss,
        percentile_cont(0.5) within group (order by case when position_in_attempt > attempt_rows - start_points then loss end)
            as attempt_end_loss
    from relaunched_positions
    group by run_id, attempt_number
),

carried as (
    -- the log's own start (its first attempt's first losses) and the level the attempt before the
    -- counted one ended at, for the runs whose counted rows start in a later attempt
    select
        counted_start.run_id,
        first_attempt.attempt_start_loss as log_start_loss,
        before_restart.attempt_end_loss as before_restart_loss
    from counted_start
    inner join attempt_levels as first_attempt
        on counted_start.run_id = first_attempt.run_id
        and first_attempt.attempt_number = 1
    inner join attempt_levels as before_restart
        on counted_start.run_id = before_restart.run_id
        and before_restart.attempt_number = counted_start.counted_start_attempt - 1
),

recurrences as (
    -- each logged loss, whether the same value was logged at an earlier step, and the value scaled
    -- to frozen_repeat_min_significant_digits - 1 digits before the point (as repeated_evals)
    select
        run_id,
        loss,
        row_number() over (partition by run_id, loss order by step) as occurrence,
        case when loss > 0 then loss
            * power(10.0, {{ threshold('frozen_repeat_min_significant_digits') }} - 2 - floor(log10(loss))) end
            as scaled_loss
    from all_points
),

recurring as (
    -- how many logged losses repeat, to every printed digit (frozen_repeat_min_significant_digits or
    -- more), a value logged at an earlier step: the same weights on the same batch
    select
        run_id,
        sum(case when occurrence > 1
            and abs(scaled_loss - round(scaled_loss)) > {{ threshold('printed_digit_tolerance') }}
            then 1 else 0 end) as recurring_points
    from recurrences
    group by run_id
),

zeros as (
    -- exact zeros, and the last non-zero loss logged before the first of them
    select
        run_id,
        sum(case when loss = 0 then 1 else 0 end) as zero_loss_steps,
        min(case when loss = 0 then step end) as first_zero_step,
        min(loss) as min_loss,
        max(abs(loss)) as max_abs_loss,
        count(*) as logged_steps
    from all_points
    group by run_id
),

last_non_zero as (
    -- the last non-zero step before the run's first zero
    select
        all_points.run_id,
        max(all_points.step) as step_before_zero
    from all_points
    inner join zeros
        on all_points.run_id = zeros.run_id
    where all_points.step < zeros.first_zero_step and all_points.loss <> 0
    group by all_points.run_id
),

before_zero as (
    select
        all_points.run_id,
        max(all_points.loss) as loss_before_zero
    from all_points
    inner join last_non_zero
        on all_points.run_id = last_non_zero.run_id
        and all_points.step = last_non_zero.step_before_zero
    group by all_points.run_id
),

gradients as (
    -- logged gradient norms, and how many are exactly 0 (no gradient reached the parameters); the steps
    -- whose loss is exactly 0 as well (a step with no learning signal moved nothing), and the first
    select
        run_id,
        count(grad_norm) as logged_grad_norms,
        sum(case when grad_norm = 0 then 1 else 0 end) as zero_grad_norms,
        sum(case when grad_norm = 0 and loss = 0 then 1 else 0 end) as still_steps,
        min(case when grad_norm = 0 and loss = 0 then step end) as first_still_step
    from {{ run_ref('int_train_steps_resolved') }}
    where grad_norm is not null
    group by run_id
),

referenced as (
    select * from {{ run_ref('int_runs_referenced') }}
),

evals as (
    select run_id, step, val_loss, val_accuracy, eval_index, train_loss_smoothed
    from {{ run_ref('int_evals_compared') }}
    where val_loss is not null
),

eval_changes as (
    select
        run_id,
        step,
        val_loss,
        val_accuracy,
        eval_index,
        train_loss_smoothed,
        abs(val_loss - {{ previous_value('val_loss', 'step', 'run_id') }}) as eval_change
    from evals
),

eval_summary as (
    select
        eval_changes.run_id,
        count(*) as n_evals,
        max(case when eval_changes.eval_index = 1 then eval_changes.val_loss end) as first_val_loss,
        max(case when eval_changes.eval_index = 1 then eval_changes.step end) as first_eval_step,
        max(case when eval_changes.eval_index = 1 then eval_changes.train_loss_smoothed end) as train_at_first_eval,
        min(eval_changes.val_loss) as best_val_loss,
        -- the best evaluation of a trained model: after the first logged training step
        min(case when eval_changes.step > coalesce(referenced.first_train_step, -1) then eval_changes.val_loss end)
            as best_trained_val_loss,
        percentile_cont(0.5) within group (order by eval_changes.eval_change) as eval_noise,
        -- the levels after the first evaluation (medians): did the run get worse than it was then?
        percentile_cont(0.5) within group (order by case when eval_changes.eval_index > 1 then eval_changes.val_loss end)
            as val_level_after_first,
        percentile_cont(0.5) within group (order by case when eval_changes.eval_index > 1 then eval_changes.train_loss_smoothed end)
            as train_level_after_first,
        -- the first evaluation of the final stretch of repeats: the last one that differs from the one before
        max(case when not coalesce(eval_changes.eval_change <= {{ threshold('frozen_loss_tolerance') }} * abs(eval_changes.val_loss), false)
            then eval_changes.eval_index end) as repeated_from_index,
        max(eval_changes.step) as last_eval_step
    from eval_changes
    left join referenced
        on eval_changes.run_id = referenced.run_id
    group by eval_changes.run_id
),

repeated_evals as (
    -- the final stretch of evaluations that all repeat one value: where it starts, the value and how
    -- many evaluations it holds
    select
        eval_changes.run_id,
        eval_changes.step as repeated_from_step,
        eval_changes.val_loss as repeated_val_loss,
        eval_summary.n_evals - eval_summary.repeated_from_index + 1 as repeated_evals,
        -- the value scaled to frozen_eval_min_significant_digits - 1 digits before the point
        case when eval_changes.val_loss > 0 then eval_changes.val_loss
            * power(10.0, {{ threshold('frozen_eval_min_significant_digits') }} - 2 - floor(log10(eval_changes.val_loss))) end
            as scaled_val_loss
    from eval_changes
    inner join eval_summary
        on eval_changes.run_id = eval_summary.run_id
        and eval_changes.eval_index = eval_summary.repeated_from_index
),

repeated_accuracy as (
    -- the lowest validation accuracy over the final stretch of repeated evaluations
    select
        eval_changes.run_id,
        min(eval_changes.val_accuracy) as min_accuracy
    from eval_changes
    inner join eval_summary
        on eval_changes.run_id = eval_summary.run_id
        and eval_changes.eval_index >= eval_summary.repeated_from_index
    group by eval_changes.run_id
),

repeated_digits as (
    -- whether the repeated value carries frozen_eval_min_significant_digits: it lies farther than
    -- frozen_loss_tolerance (relative) from its rounding to one digit less (a value printed with
    -- fewer digits can repeat by rounding alone); and whether those evaluations were saturated: every
    -- one of them classified the whole validation set right (accuracy 1), where the outputs can sit at
    -- a floor of their own (probabilities rounded to 1) and a value that repeats no longer shows that
    -- the weights stopped changing
    select
        repeated_evals.*,
        coalesce(abs(scaled_val_loss - round(scaled_val_loss)) > {{ threshold('frozen_loss_tolerance') }} * scaled_val_loss, false)
            as has_enough_digits,
        coalesce(repeated_accuracy.min_accuracy >= 1, false) as is_eval_saturated
    from repeated_evals
    left join repeated_accuracy
        on repeated_evals.run_id = repeated_accuracy.run_id
),

lr_ranges as (
    select run_id, is_far_above, is_far_below from {{ run_ref('int_learning_rates_ranged') }}
),

config as (
    select run_id, warmup_steps, total_steps, is_adversarial_loss, is_term_loss, is_reinforcement_loss, rows_are from {{ run_ref('stg_training__config') }}
),

lr_extent as (
    select run_id, max(step_index) as last_index, max(learning_rate) as max_lr
    from {{ run_ref('int_train_steps_resolved') }}
    where learning_rate is not null
    group by run_id
),

lr_end as (
    -- the logged LR at the last counted step and three quarters into the log (by step_index, an
    -- equality lookup, no sort): still rising at the end means the log stops inside the warmup
    select
        lr_extent.run_id,
        max(case when steps.step_index = lr_extent.last_index then steps.learning_rate end) as end_lr,
        max(case when steps.step_index < lr_extent.last_index then steps.learning_rate end) as three_quarter_lr,
        max(lr_extent.max_lr) as max_lr
    from lr_extent
    inner join {{ run_ref('int_train_steps_resolved') }} as steps
        on lr_extent.run_id = steps.run_id
        and steps.step_index in (lr_extent.last_index, greatest(1, cast(floor(0.75 * lr_extent.last_index) as {{ dbt.type_bigint() }})))
    group by lr_extent.run_id
),

{#- a relaunch that carried its weights on: its first losses lie nearer the level the attempt before
    it ended at than the log's first losses (NULL without a relaunch) #}
{%- set carried_relaunch -%}
abs(windows.start_loss - carried.before_restart_loss) < abs(windows.start_loss - carried.log_start_loss)
{%- endset %}
{#- the start the learning verdict measures from: the log's first losses for such a relaunch, else
    the counted rows' first losses #}
{%- set learning_start -%}
(case when {{ carried_relaunch }} then carried.log_start_loss else windows.start_loss end)
{%- endset %}

joined as (
    select
        runs.run_id,
        1 as progress_id,
        windows.n_steps,
        windows.first_step,
        windows.last_step,
        windows.start_points,
        windows.end_points,
        -- the counter went back to the start but the loss did not: the relaunch carried the weights
        -- on (its first losses lie nearer where the attempt before it ended than where the log
        -- started: a Keras fit() called again on a CSVLogger in append mode), so the run learned from
        -- the log's first losses, not from the relaunch's
        coalesce({{ carried_relaunch }}, false) as is_carried_relaunch,
        windows.start_loss as counted_start_loss,
        {{ learning_start }} as start_loss,
        windows.end_loss,
        windows.three_quarter_loss,
        1 - {{ safe_divide('windows.end_loss', learning_start) }} as relative_drop,
        1 - {{ safe_divide('windows.end_loss', 'windows.three_quarter_loss') }} as last_quarter_relative_drop,
        windows.loss_scatter,
        best_stretches.best_stretch_loss,
        best_stretches.best_stretch_step,
        coalesce(later_spikes.spikes_after_best, 0) as spikes_after_best,
        later_spikes.first_spike_after_best,
        windows.late_max_loss,
        windows.late_min_loss,
        {{ learning_start }} - windows.end_loss as level_change,
        coalesce(zeros.logged_steps, 0) as logged_steps,
        coalesce(recurring.recurring_points, 0) as recurring_points,
        coalesce(zeros.zero_loss_steps, 0) as zero_loss_steps,
        zeros.max_abs_loss,
        zeros.first_zero_step,
        before_zero.loss_before_zero,
        coalesce(zeros.min_loss < 0, false) as has_negative_loss,
        -- every logged gradient norm (progress_min_points or more) is exactly 0: the updates moved nothing
        coalesce(gradients.logged_grad_norms >= {{ threshold('progress_min_points') }}
            and gradients.zero_grad_norms = gradients.logged_grad_norms, false) as is_zero_gradient,
        coalesce(gradients.logged_grad_norms, 0) as logged_grad_norms,
        coalesce(gradients.still_steps, 0) as still_steps,
        gradients.first_still_step,
        referenced.chance_loss,
        referenced.chance_basis,
        referenced.chance_confidence,
        referenced.chance_detail,
        referenced.regime,
        coalesce(eval_summary.n_evals, 0) as n_evals,
        eval_summary.first_eval_step,
        eval_summary.first_val_loss,
        eval_summary.best_val_loss,
        eval_summary.eval_noise,
        eval_summary.train_at_first_eval,
        eval_summary.val_level_after_first,
        eval_summary.train_level_after_first,
        repeated_digits.repeated_from_step,
        repeated_digits.repeated_val_loss,
        coalesce(repeated_digits.repeated_evals, 0) as repeated_evals,
        coalesce(repeated_digits.has_enough_digits, false) as has_enough_digits,
        coalesce(repeated_digits.is_eval_saturated, false) as is_eval_saturated,
        greatest(coalesce(windows.last_step, eval_summary.last_eval_step), coalesce(eval_summary.last_eval_step, windows.last_step))
            as last_logged_step,
        case when eval_summary.best_trained_val_loss is not null then 'validation'
            when windows.end_loss is not null then 'training' end as judged_loss_kind,
        coalesce(eval_summary.best_trained_val_loss, windows.end_loss) as judged_loss,
        eval_summary.first_val_loss - eval_summary.best_val_loss as val_gain,
        greatest(
            {{ threshold('eval_gain_min_share') }} * eval_summary.first_val_loss,
            {{ threshold('eval_gain_noise_multiple') }} * coalesce(eval_summary.eval_noise, 0)
        ) as val_gain_threshold,
        coalesce(lr_ranges.is_far_above, false) as is_lr_far_above,
        coalesce(lr_ranges.is_far_below, false) as is_lr_far_below,
        -- the logged run never left its warmup: the configured warmup reaches its last step, or the
        -- logged LR is still rising at the end (its maximum, above the LR a quarter of the log earlier)
        coalesce(config.warmup_steps >= windows.last_step, false)
            or coalesce(lr_end.end_lr >= lr_end.max_lr
                and lr_end.end_lr > lr_end.three_quarter_lr * (1 + {{ threshold('lr_relative_tolerance') }}), false)
            as is_within_warmup,
        -- the run as configured never leaves its warmup (a schedule that cannot work), as opposed to a
        -- log that stops early inside the warmup of a longer run
        coalesce(config.warmup_steps >= coalesce(config.total_steps, windows.last_step), false) as is_warmup_over_configured_run,
        coalesce(config.is_adversarial_loss, false) as is_adversarial_loss,
        -- the loss read is one term of a sum whose total is not logged (YOLO's box_loss, a VAE's recon)
        coalesce(config.is_term_loss, false) as is_term_loss,
        coalesce(config.is_reinforcement_loss, false) as is_reinforcement_loss,
        -- too early to judge: the log stops inside the warmup well before the configured end
        -- (early_end_medium_share, as config_mismatch: a log that did not reach its end)
        coalesce(windows.last_step < {{ threshold('early_end_medium_share') }} * config.total_steps, false) as is_log_short_of_configured_end,
        -- the log holds only a run's first optimizer steps (progress_early_steps; rows are steps, not
        -- epochs), and no configured end says the run was meant to stop there
        coalesce(config.rows_are, 'step') <> 'epoch'
            and windows.last_step < {{ threshold('progress_early_steps') }}
            and coalesce(windows.last_step < {{ threshold('early_end_medium_share') }} * config.total_steps, true)
            as is_first_steps_log
    from runs
    left join windows
        on runs.run_id = windows.run_id
    left join best_stretches
        on runs.run_id = best_stretches.run_id
    left join later_spikes
        on runs.run_id = later_spikes.run_id
    left join zeros
        on runs.run_id = zeros.run_id
    left join recurring
        on runs.run_id = recurring.run_id
    left join gradients
        on runs.run_id = gradients.run_id
    left join before_zero
        on runs.run_id = before_zero.run_id
    left join referenced
        on runs.run_id = referenced.run_id
    left join eval_summary
        on runs.run_id = eval_summary.run_id
    left join repeated_digits
        on runs.run_id = repeated_digits.run_id
    left join lr_ranges
        on runs.run_id = lr_ranges.run_id
    left join config
        on runs.run_id = config.run_id
    left join lr_end
        on runs.run_id = lr_end.run_id
    left join carried
        on runs.run_id = carried.run_id
),

flagged as (
    select
        *,
        {{ safe_divide('judged_loss', 'chance_loss') }} as judged_share_of_chance,
        -- a chance level known from the config or matched by name (an inferred one is the first
        -- loss itself: the relative-drop rules already judge against it)
        (chance_confidence in ('high', 'medium') and not has_negative_loss
            and judged_loss >= (1 - {{ threshold('chance_no_learning_share') }}) * chance_loss) as is_at_chance,
        (chance_confidence in ('high', 'medium') and not has_negative_loss
            and judged_loss >= (1 - {{ threshold('chance_underfitting_share') }}) * chance_loss) as is_near_chance,
        -- the loss did not change at all over the second half of the log (to float32's precision) at a
        -- level where batch noise dwarfs the rounding: the parameters stopped moving, or the output no
        -- longer depends on the input (a frozen model, a dead network, a collapse to a constant)
        -- or the losses recur: at least frozen_repeat_min_share of the logged losses repeat, to every one of
        -- seven or more printed digits, a value logged at an earlier step (the same batches through the same
        -- weights each epoch: an optimizer that does not step, an unshuffled loader)
        ((late_max_loss - late_min_loss <= {{ threshold('frozen_loss_tolerance') }} * abs(late_max_loss)
            and late_min_loss >= {{ threshold('frozen_loss_min_level') }})
            or (recurring_points > 0 and recurring_points >= {{ threshold('frozen_repeat_min_share') }} * logged_steps))
            as is_frozen,
        -- the evaluations stopped changing: the last frozen_eval_min_evals or more repeat one value (to
        -- frozen_loss_tolerance, a value with frozen_eval_min_significant_digits), from a point at least
        -- frozen_eval_min_share of the logged run before its end: one validation set through weights that
        -- change gives another number each time, so the updates after it changed nothing (an LR decayed
        -- to zero, an optimizer no longer stepping, frozen parameters)
        {{ safe_divide('last_logged_step - repeated_from_step', 'last_logged_step') }} as stopped_share,
        coalesce(
            repeated_evals >= {{ threshold('frozen_eval_min_evals') }}
            and has_enough_digits
            and not is_eval_saturated
            and last_logged_step - repeated_from_step >= {{ threshold('frozen_eval_min_share') }} * last_logged_step,
            false
        ) as is_eval_frozen,
        -- it learned, then stalled: from a first evaluation taken early (at most stall_first_eval_max_share
        -- into the logged run), no evaluation beat it by eval_gain_min_share and the later ones did not get
        -- worse beyond the gain bar (validation rising is overfitting's), while the training loss fell by
        -- less than progress_tail_max_drop from its level after that evaluation (the median of the later
        -- evaluations' smoothed training losses) to the end: most of the run moved neither loss. A run
        -- still learning moves its training loss by more over three quarters of its updates at a fixed
        -- learning rate; a fall made before the first evaluation says it could learn, not that it went on
        {{ safe_divide('last_logged_step - first_eval_step', 'last_logged_step') }} as stalled_share,
        coalesce(
            n_evals >= {{ threshold('frozen_eval_min_evals') }}
            and first_eval_step - first_step <= {{ threshold('stall_first_eval_max_share') }} * (last_logged_step - first_step)
            and first_val_loss - best_val_loss < {{ threshold('eval_gain_min_share') }} * abs(first_val_loss)
            and val_level_after_first - first_val_loss < val_gain_threshold
            and train_level_after_first - end_loss < {{ threshold('progress_tail_max_drop') }} * abs(train_level_after_first)
            and end_loss - train_level_after_first < {{ threshold('progress_tail_max_drop') }} * abs(train_level_after_first),
            false
        ) as is_stalled,
        -- flat: a fall under no_learning_max_drop, or one within the log-to-log noise that is also
        -- under underfitting_max_drop (a fall of a tenth or more hidden in noisy single-batch logs is
        -- no evidence of no learning: a weak signal, not a high finding)
        (relative_drop < {{ threshold('no_learning_max_drop') }}
            or (level_change <= {{ threshold('no_learning_scatter_factor') }} * loss_scatter
                and relative_drop < {{ threshold('underfitting_max_drop') }})) as is_flat,
        (relative_drop < {{ threshold('underfitting_max_drop') }}
            and abs(last_quarter_relative_drop) < {{ threshold('progress_tail_max_drop') }}) as is_shallow,
        -- the log is too noisy to tell a flat loss from one that fell by underfitting_max_drop: such a fall
        -- is within no_learning_scatter_factor standard errors of the measured fall (a difference of two
        -- medians of independent noise of sd loss_scatter: sqrt(pi / 2) * loss_scatter * sqrt(1 / start_points
        -- + 1 / end_points)); single-batch logs of a weighted multi-term loss scatter by a quarter of their level
        -- (and the fall measured is itself within that band: a change beyond it was measured)
        {{ noise_bound }} as is_noise_bound,
        -- validation improved meaningfully: on its first value, or before the first evaluation
        -- (the training loss had already fallen by underfitting_max_drop when it was taken)
        -- (a small dip the later evaluations did not hold is none where the training loss is too noisy to
        -- show a fall: validation then settled at or above its first value, and nothing shows learning)
        case when n_evals >= {{ threshold('eval_gain_min_evals') }} then
            (
                val_gain > 0 and val_gain >= val_gain_threshold
                and not coalesce(
                    {{ noise_bound }}
                    and val_gain < {{ threshold('underfitting_max_drop') }} * first_val_loss
                    and val_level_after_first >= first_val_loss,
                    false
                )
            )
            or coalesce(train_at_first_eval <= (1 - {{ threshold('underfitting_max_drop') }}) * start_loss, false)
        end as has_val_gain,
        -- the run got worse after its first evaluation: validation never beat its first value (not even by
        -- eval_gain_min_share: a gain hidden under a noise bar that a steady trend inflates is still a gain),
        -- and both the validation and the training loss then settled above their levels at it (medians of
        -- the later evaluations; validation by the gain bar): training undid what the model knew (an LR too
        -- high for it, a broken resume), which is no overfitting (the training loss rose too) and no learning
        coalesce(
            n_evals >= {{ threshold('eval_gain_min_evals') }}
            and coalesce(val_gain, 0) < {{ threshold('eval_gain_min_share') }} * first_val_loss
            and val_level_after_first - first_val_loss >= val_gain_threshold
            and train_level_after_first >= (1 + {{ threshold('underfitting_max_drop') }}) * train_at_first_eval,
            false
        ) as is_got_worse,
        -- a loss with negative values (a negative log-likelihood of a density, a contrastive bound) has no
        -- relative drop; what still reads is its direction: it ended above where it started, by more
        -- than the log-to-log noise and by underfitting_max_drop of its size; not a GAN player's loss,
        -- whose level follows the balance of the two players (a critic's rises toward 0 as its
        -- generator improves)
        coalesce(
            has_negative_loss
            and not is_adversarial_loss
            and end_loss - start_loss > {{ threshold('no_learning_scatter_factor') }} * loss_scatter
            and end_loss - start_loss >= {{ threshold('underfitting_max_drop') }} * abs(start_loss),
            false
        ) as is_signed_rise,
        -- it learned, then lost it: a whole stretch of the run held a level underfitting_max_drop or more
        -- below the start and beyond its noise (a model that cannot learn never holds one), and the end lies
        -- above that level beyond its noise; an end back near the start is then a jump or a divergence
        -- after learning (loss_spikes finds a jump), not a run that never learned
        coalesce(
            best_stretch_loss <= (1 - {{ threshold('underfitting_max_drop') }}) * start_loss
            and start_loss - best_stretch_loss > {{ threshold('no_learning_scatter_factor') }} * loss_scatter
            and end_loss - best_stretch_loss > {{ threshold('no_learning_scatter_factor') }} * loss_scatter,
            false
        ) as is_lost_progress,
        -- too early to judge whether it learns: the log stops inside its warmup, short of the configured end
        (is_within_warmup and not is_warmup_over_configured_run and is_log_short_of_configured_end) as is_too_early,
        -- too early as well: a log of the first steps only, whose loss falls beyond its noise and has
        -- not slowed down (its last quarter, from the window at three quarters of the log as for
        -- last_quarter_relative_drop, fell at least a quarter of the whole fall): a start, not a
        -- plateau, however small its relative drop so far
        coalesce(
            is_first_steps_log
            and level_change > {{ threshold('no_learning_scatter_factor') }} * loss_scatter
            and three_quarter_loss - end_loss >= (1 - 0.75) * level_change,
            false
        ) as is_early_trend,
        -- the model started far below the uniform guess (a vocabulary or class count from the config or
        -- matched by name, and a start at most fine_tune_max_start_share of it): it was pretrained
        coalesce(regime = 'fine_tune' and chance_confidence in ('high', 'medium'), false) as is_pretrained_start
    from joined
),

judged as (
    select
        *,
        case
            when n_steps is null or n_steps < {{ threshold('progress_min_points') }} or zero_loss_steps > 0 then null
            -- every loss within loss_signal_min_abs of zero: no learning signal to judge (check_coverage says so)
            when max_abs_loss <= {{ threshold('loss_signal_min_abs') }} then null
            when has_negative_loss then case when is_signed_rise then 'rose' end
            when is_at_chance then 'at_chance'
            -- frozen whatever the regime: a continued or pretrained run's loss still changes from batch to batch
            when is_frozen then 'frozen'
            when is_near_chance then 'near_chance'
            when is_got_worse then 'got_worse'
            -- flat or shallow from start to end, but it held a far lower level in between: it learned, then lost it
            when is_lost_progress and (is_flat or is_shallow) then 'lost_progress'
            -- a validation loss that improved meaningfully outweighs a training loss too noisy to show it
            -- flat or shallow since the start says nothing when the log continues an earlier run
            when is_flat and not coalesce(has_val_gain, false) and coalesce(regime, '') <> 'continuation' then 'flat'
            -- (or whose fall is within its noise: a log too noisy to show a fall of underfitting_max_drop
            -- leaves validation as the only evidence, and it shows none; a weak signal, see weighed)
            when not has_val_gain and (
                is_lr_far_above or is_lr_far_below
                or (relative_drop < {{ threshold('underfitting_max_drop') }} and coalesce(regime, '') <> 'continuation')
                or (is_noise_bound and coalesce(regime, '') <> 'continuation')
            ) then 'no_val_gain'
            -- shallow is judged on validation too: a validation loss that fell by underfitting_max_drop or more
            -- did not flatten high
            when is_shallow and coalesce({{ safe_divide('val_gain', 'first_val_loss') }}, 0) < {{ threshold('underfitting_max_drop') }}
                and coalesce(regime, '') <> 'continuation' then 'shallow'
            -- it learned, then stopped: the evaluations repeat one value to the last digit
            when is_eval_frozen then 'stopped'
            -- it learned before its first evaluation, then neither loss moved for most of the run
            when is_stalled and coalesce(regime, '') <> 'continuation' then 'stalled'
            else 'learned'
        end as learning_verdict,
        -- the cause a failure to learn is linked to (the findings layer drops one the run did not produce)
        case
            -- a log that stops early inside its warmup names no cause: it is too early to judge
            when is_too_early or is_early_trend then null
            when is_within_warmup then 'schedule_sanity:warmup_covers_run'
            when is_lr_far_above then 'schedule_sanity:lr_far_above_usual'
            when is_lr_far_below then 'schedule_sanity:lr_far_below_usual'
        end as learning_cause
    from flagged
),

weighed as (
    -- why a failure-to-learn verdict is a weak signal, when it is (its severity is then low and the
    -- learning_progress check says why):
    select
        *,
        case
            -- flat, shallow, no gain or worse on one term of a sum whose total is not logged: terms trade off
            -- (YOLO's box term rises through its warmup while the class term falls; a VAE's KL rises as its
            -- reconstruction falls), so one term's course is a weak signal of the whole's
            when learning_verdict in ('flat', 'shallow', 'no_val_gain', 'got_worse', 'lost_progress', 'stalled') and is_term_loss then 'term_loss'
            -- any verdict on a reinforcement-learning loss (a value, policy or TD loss): its targets move with
            -- the policy (a value loss grows as the returns it predicts grow), so its course is a weak signal of
            -- whether the agent learns; the return shows that
            when learning_verdict in ('flat', 'shallow', 'no_val_gain', 'got_worse', 'rose', 'lost_progress', 'stalled') and is_reinforcement_loss then 'reinforcement'
            -- flat or shallow in a log too noisy to have shown a fall of underfitting_max_drop: not shown to
            -- learn is no evidence that it did not
            when learning_verdict in ('flat', 'shallow') and is_noise_bound then 'noise_bound'
            -- no validation gain where only the training loss's noise hides whether it fell (it fell by
            -- underfitting_max_drop or more, within its noise): validation is then the only evidence
            when learning_verdict = 'no_val_gain' and is_noise_bound and not (is_lr_far_above or is_lr_far_below)
                and relative_drop >= {{ threshold('underfitting_max_drop') }} then 'noise_bound'
            -- no validation gain above the bar, where both losses fell: the training loss beyond its noise, and
            -- the later evaluations' median below the first by more than the eval-to-eval jitter (under pure
            -- noise about one run in six) and by eval_gain_min_share of it at least, the best of them under
            -- only the bar's multiple of that jitter (a noisy validation set): a gain the jitter cannot
            -- confirm is no evidence that there was none
            when learning_verdict = 'no_val_gain' and not (is_lr_far_above or is_lr_far_below)
                and coalesce(first_val_loss - val_level_after_first > greatest(eval_noise,
                        {{ threshold('eval_gain_min_share') }} * first_val_loss)
                    and level_change > {{ threshold('no_learning_scatter_factor') }} * loss_scatter, false) then 'noisy_gain'
        end as lowered_by
    from judged
),

final as (
    -- the finding a failure to learn is reported as, and its severity: the learning_progress check
    -- words it, and schedule_sanity raises the cause it names (learning_cause) to at least that severity
    select
        *,
        case learning_verdict
            when 'at_chance' then 'no_learning:chance_level'
            when 'near_chance' then 'underfitting:near_chance'
            when 'flat' then 'no_learning:run'
            when 'frozen' then 'no_learning:frozen'
            when 'stopped' then 'no_learning:stopped'
            when 'stalled' then 'no_learning:stalled'
            when 'no_val_gain' then 'no_learning:no_val_gain'
            when 'got_worse' then 'no_learning:got_worse'
            when 'shallow' then 'underfitting:run'
            when 'rose' then 'no_learning:loss_rose'
            when 'lost_progress' then 'no_learning:lost_progress'
        end as verdict_finding_id,
        case
            when learning_verdict is null or learning_verdict = 'learned' then null
            -- too early to judge: low at most
            when is_too_early or is_early_trend then 'low'
            -- a loss with negative values rising: whether lower is better depends on the objective (a GAN
            -- critic's rises as its generator improves), so a weak signal
            when learning_verdict = 'rose' then 'low'
            -- it learned, then lost it: low when a loss spike after its best stretch is the jump (loss_spikes
            -- reports it, with its cost) or when the loss is a weak signal (lowered_by: one term of a sum, an
            -- RL loss), medium for a divergence no spike explains (the final weights are worse than the
            -- run's best, by more than its noise)
            when learning_verdict = 'lost_progress' then
                case when spikes_after_best > 0 or lowered_by is not null then 'low' else 'medium' end
            -- a chance level matched by name (a family's variants differ by up to 13% in ln V): one step lower
            when learning_verdict = 'at_chance' then case when chance_confidence = 'high' then 'high' else 'medium' end
            when learning_verdict = 'near_chance' then 'medium'
            when learning_verdict = 'frozen' then 'high'
            -- what it cost is compute (the updates after it), not a loss the run had: medium
            when learning_verdict = 'stopped' then 'medium'
            -- a pretrained start far below the uniform guess that stays flat or moves little (validation
            -- included) has little left to learn (the format learned in its first steps, a continued stage):
            -- a note, not a failure, unless an LR far outside its range or a warmup the run never left explains it
            when learning_verdict in ('flat', 'shallow', 'no_val_gain', 'stalled') and is_pretrained_start and learning_cause is null then 'low'
            -- a verdict that rests on a weak signal (lowered_by): low
            when lowered_by is not null then 'low'
            when learning_verdict = 'flat' then 'high'
            -- validation never improved on its first value: high when an LR far outside its usual range
            -- explains it, medium when the training loss barely fell either
            when learning_verdict = 'no_val_gain' then case when is_lr_far_above or is_lr_far_below then 'high' else 'medium' end
            -- worse than at its first evaluation on both losses: medium, high when an LR far outside its range explains it
            when learning_verdict = 'got_worse' then case when is_lr_far_above or is_lr_far_below then 'high' else 'medium' end
            -- it learned, then stalled: what it cost is the updates after the first evaluation, and the run
            -- did learn before it: medium
            when learning_verdict = 'stalled' then 'medium'
            else 'medium'
        end as verdict_severity
    from weighed
)

select * from final
