-- Level jumps of a per-epoch training loss (config rows_are = 'epoch': each row is an epoch's
-- mean). An epoch mean averages the whole dataset, so the per-step spike floor (1.5x: a batch
-- from a harder source) is far too high for it; a jump here is one epoch's mean above the
-- previous epoch's by epoch_jump_min_rise or more, and as far above the level of the series before
-- it (the median of the epoch_jump_window epochs before it, past the first epochs: a rise out of
-- one low epoch back to where the series was is noise, not a jump), epoch_jump_noise_multiple times the largest
-- epoch-to-epoch rise of the epoch_jump_noise_window epochs before it (a noisy per-epoch series
-- moves up and down routinely), past the first epoch_jump_window epochs (before them only a mean
-- grown by epoch_jump_early_min_rise with the LR logged: no warmup explains it), with the learning rate not
-- rising at it at all (a warm restart or a warmup raises the loss by design), and no resume in the
-- epoch_jump_window epochs up to it (the resume check judges those); a loss with negative values
-- has no ratio scale and is not judged. One row per jump, with how many of the epoch_jump_window
-- epochs after it kept epoch_jump_kept_share of the jump above the level before it (level_before):
-- on a flat, noisy series half the epochs lie above its median by chance, so merely above the old
-- level says nothing; a new level keeps a good part of the jump.
{%- set window = threshold('epoch_jump_window') %}
with

epoch_runs as (
    select run_id from {{ run_ref('stg_training__config') }}
    where rows_are = 'epoch'
),

epochs as (
    select
        steps.run_id,
        steps.step,
        steps.loss,
        steps.learning_rate,
        steps.is_attempt_start
    from {{ run_ref('int_train_steps_resolved') }} as steps
    inner join epoch_runs
        on steps.run_id = epoch_runs.run_id
    where steps.loss is not null
),

epoch_changes as (
    select
        run_id,
        step,
        loss,
        learning_rate,
        lag(loss) over (partition by run_id order by step) as previous_loss,
        lag(step) over (partition by run_id order by step) as previous_step,
        lag(learning_rate) over (partition by run_id order by step) as previous_learning_rate,
        -- the level before it: the median of the window epochs before (one low epoch does not set it)
        {{ rolling_median('loss', ['step'], window, partition_by='run_id') }} as median_before,
        row_number() over (partition by run_id order by step) as epoch_position,
        -- a resume in the epoch_jump_window epochs up to this one: a jump there is the resume's
        -- (int_resumes_checked judges it against the pre-crash trajectory)
        max(case when is_attempt_start then 1 else 0 end) over (
            partition by run_id order by step rows between {{ window }} preceding and current row
        ) as is_after_resume_flag,
        -- a loss that takes negative values (a reward, a bound) has no ratio scale: no rise is judged
        min(loss) over (partition by run_id) as run_min_loss
    from epochs
),

epoch_rises as (
    select
        *,
        case when run_min_loss > 0 then loss / previous_loss - 1 end as rise,
        -- the level a jump is measured against (and the later epochs stay above): past the first
        -- epochs the median before it; in them (the loss still falls fast) the previous epoch
        case when epoch_position > {{ window }} + 1 then median_before else previous_loss end as level_before
    from epoch_changes
),

recent_rises as (
    select
        *,
        max(rise) over (
            partition by run_id order by step rows between {{ threshold('epoch_jump_noise_window') }} preceding and 1 preceding
        ) as largest_recent_rise
    from epoch_rises
),

jumps as (
    select
        run_id,
        step,
        previous_step,
        epoch_position,
        loss,
        previous_loss,
        level_before,
        rise,
        largest_recent_rise,
        learning_rate,
        previous_learning_rate
    from recent_rises
    where is_after_resume_flag = 0
        and rise >= {{ threshold('epoch_jump_min_rise') }}
        and loss >= level_before * (1 + {{ threshold('epoch_jump_min_rise') }})
        and rise >= {{ threshold('epoch_jump_noise_multiple') }} * greatest(coalesce(largest_recent_rise, 0), 0)
        and coalesce(learning_rate <= previous_learning_rate * (1 + {{ threshold('epoch_jump_lr_rise_tolerance') }}), true)
        and (
            epoch_position > {{ window }} + 1
            -- in the first epochs, only a mean that grew by epoch_jump_early_min_rise, with the LR logged
            -- and not rising at it (no warmup explains it): a whole dataset's mean loss does not double by noise
            or (epoch_position > 1
                and rise >= {{ threshold('epoch_jump_early_min_rise') }}
                and learning_rate is not null and previous_learning_rate is not null)
        )
),

after_jumps as (
    -- the window epochs after each jump: how many kept epoch_jump_kept_share of it above the level before it
    {{ rows_after_above('jumps', ['run_id', 'step'], 'epoch_changes', 'epoch_position', 'jumps.epoch_position',
        window, 'loss', 'jumps.level_before + ' ~ threshold('epoch_jump_kept_share') ~ ' * (jumps.loss - jumps.level_before)',
        'epochs_after', 'epochs_still_above') }}
),

final as (
    select
        jumps.run_id,
        jumps.step,
        jumps.previous_step,
        jumps.loss,
        jumps.previous_loss,
        jumps.level_before,
        jumps.rise,
        jumps.largest_recent_rise,
        jumps.learning_rate,
        jumps.previous_learning_rate,
        coalesce(after_jumps.epochs_after, 0) as epochs_after,
        coalesce(after_jumps.epochs_still_above, 0) as epochs_still_above
    from jumps
    left join after_jumps
        on jumps.run_id = after_jumps.run_id
        and jumps.step = after_jumps.step
)

select * from final
