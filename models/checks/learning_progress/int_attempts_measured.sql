-- The launches of a log that holds several (its step counter went back and the run was logged
-- again: int_train_rows_resolved's attempts), one row per run and attempt, with how far the
-- attempt's training loss fell. The run's learning verdicts (int_learning_progress_measured) read
-- the counted rows only, so an attempt a later one replaced from the run's first step on (the
-- launch abandoned and the run started anew, appended to the same log) is judged here alone: did
-- it learn anything before it was abandoned? A GAN player's loss (or an actor's and critic's) is not
-- judged: staying level is what a player's loss does while the game goes on.
with

rows_resolved as (
    select run_id, file_row_number, step, attempt_number, is_superseded, loss
    from {{ run_ref('int_train_rows_resolved') }}
    where attempt_number is not null
),

run_spans as (
    select run_id, min(step) as run_first_step, max(attempt_number) as attempts
    from rows_resolved
    group by run_id
),

config as (
    select run_id, rows_are, is_adversarial_loss, is_term_loss, is_reinforcement_loss
    from {{ run_ref('stg_training__config') }}
),

losses as (
    select
        run_id,
        attempt_number,
        step,
        is_superseded,
        loss,
        row_number() over (partition by run_id, attempt_number order by file_row_number) as position,
        count(*) over (partition by run_id, attempt_number) as attempt_losses
    from rows_resolved
    where loss is not null
),

measured as (
    -- the start: the mean of the attempt's first progress_start_points losses; the end: the mean of
    -- its last progress_window_share of them (at least progress_start_points), as the run's own
    -- learning verdict measures them
    select
        run_id,
        attempt_number,
        min(step) as first_step,
        max(step) as last_step,
        count(*) as logged_losses,
        sum(case when is_superseded then 0 else 1 end) as counted_losses,
        {{ stable_avg('case when position <= ' ~ threshold('progress_start_points') ~ ' then loss end') }} as start_loss,
        {{ stable_avg(
            'case when attempt_losses - position < greatest(' ~ threshold('progress_start_points') ~ ', '
            ~ threshold('progress_window_share') ~ ' * attempt_losses) then loss end'
        ) }} as end_loss,
        min(loss) as best_loss
    from losses
    group by run_id, attempt_number
),

classified as (
    select
        measured.*,
        run_spans.attempts,
        sum(measured.logged_losses) over (partition by measured.run_id) as log_losses,
        {{ safe_divide('measured.start_loss - measured.end_loss', 'measured.start_loss') }} as relative_drop,
        (measured.counted_losses = 0 and measured.first_step <= run_spans.run_first_step) as is_abandoned_launch,
        -- a loss whose course is a weak sign of learning, as for the run's own verdicts: one term of a
        -- sum whose total is not logged, or a reinforcement-learning loss (its targets move with the policy)
        coalesce(config.is_term_loss or config.is_reinforcement_loss, false) as is_weak_loss,
        coalesce(config.is_adversarial_loss, false) as is_adversarial_loss,
        config.rows_are
    from measured
    inner join run_spans
        on measured.run_id = run_spans.run_id
    left join config
        on measured.run_id = config.run_id
),

final as (
    select
        run_id,
        attempt_number,
        attempts,
        first_step,
        last_step,
        logged_losses,
        log_losses,
        start_loss,
        end_loss,
        best_loss,
        relative_drop,
        is_abandoned_launch,
        is_weak_loss,
        coalesce(
            is_abandoned_launch
            and not is_adversarial_loss
            and logged_losses >= {{ threshold('progress_min_points') }}
            and (rows_are = 'epoch' or last_step >= {{ threshold('progress_early_steps') }})
            and start_loss > {{ threshold('loss_signal_min_abs') }}
            and start_loss - end_loss < {{ threshold('no_learning_max_drop') }} * start_loss
            and best_loss > (1 - {{ threshold('underfitting_max_drop') }}) * start_loss,
            false
        ) as is_never_learned
    from classified
)

select * from final
