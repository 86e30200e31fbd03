-- One row per resume boundary: did the run continue where it stopped? A boundary is
-- where the log starts a new attempt (int_train_rows_resolved: it logs a step again),
-- a restart the events report that the log does not replay (int_restarts_detected), or
-- a resume only the learning rate shows: the LR jumps up by resume_lr_jump_ratio
-- between two logged rows after it had stopped rising (a decaying or constant schedule
-- never does; a warmup ramps), and does not go on rising, at most
-- resume_lr_max_jumps_per_run times in the run (more is a cyclic schedule by design, as
-- is a schedule type naming restarts or cycles).
-- The rows after it (the new attempt, at most resume_window_rows) are compared with the
-- pre-crash trajectory (the earlier attempts, the latest one per step) on four counts:
--   learning rate  the first LR after the resume against the pre-crash LR at the same
--                  step (when the crashed attempt logged it), else the band between the
--                  last pre-crash LR and its linear continuation, within
--                  lr_relative_tolerance; beyond resume_lr_jump_ratio either way it is
--                  a discontinuity, a restarted warmup when it then rises by
--                  resume_warmup_rise_ratio while the pre-crash LR was not rising
--   loss           the median loss after the resume against the pre-crash level (the
--                  crashed attempt's losses at the same steps, else its last rows), in
--                  logs, against resume_loss_jump_min_share and resume_loss_jump_n_sigmas
--                  standard errors from the pre-crash log-to-log scatter
--   data (shards)  the shards read after the resume against those the crashed attempt
--                  read at the same steps (restored), or the pre-crash order at another
--                  offset: earlier (replayed: from the run's start, or a few visits back)
--                  or later (skipped), at least resume_data_min_match_share of the rows
--                  across resume_data_min_shard_changes shard changes
--   steps          the first step after the resume against the checkpoint the events
--                  name: past it by more than step_gap_factor logging intervals (steps
--                  skipped), or before it (steps replayed beyond the checkpoint)
-- A new attempt that starts at the run's first step is a relaunch from scratch
-- (is_fresh_start): there is no state to restore, so none of the four is compared.
-- Only the rows near each boundary are read (resume_window_rows rows, about 3x that in
-- steps at the run's logging density), plus one equality lookup at the run's start.
{%- set window = threshold('resume_window_rows') %}
{%- set tolerance = threshold('lr_relative_tolerance') %}
with

resolved as (
    select run_id, step, attempt_number, file_row_number, is_counted, is_attempt_start, loss, learning_rate, shard_id
    from {{ run_ref('int_train_rows_resolved') }}
    where resolution in ('counted', 'superseded')
),

density as (
    -- logged rows per step over the counted rows: how many steps resume_window_rows rows span
    select
        run_id,
        min(step) as run_first_step,
        {{ safe_divide('count(*)', 'max(step) - min(step) + 1') }} as rows_per_step
    from resolved
    where is_counted
    group by run_id
),

log_starts as (
    select
        run_id,
        step as resume_step,
        attempt_number,
        -- two attempts restarting at the same step: the later one (it counts) is the boundary
        row_number() over (
            partition by run_id, step order by attempt_number desc rows between unbounded preceding and current row
        ) as same_step_rank
    from resolved
    where is_attempt_start
),

restarts as (
    select run_id, resume_step, resumed_from_step, is_seen_in_log from {{ run_ref('int_restarts_detected') }}
),

log_boundaries as (
    -- the checkpoint a restart event names for it (the event's resume step within one step)
    select
        log_starts.run_id,
        log_starts.resume_step,
        log_starts.attempt_number,
        min(restarts.resumed_from_step) as checkpoint_step,
        true as is_seen_in_log
    from log_starts
    left join restarts
        on log_starts.run_id = restarts.run_id
        and restarts.resume_step between log_starts.resume_step - 1 and log_starts.resume_step + 1
    where log_starts.same_step_rank = 1
    group by log_starts.run_id, log_starts.resume_step, log_starts.attempt_number
),

event_boundaries as (
    -- restarts the events report and the log does not replay (the crashed attempt's rows are
    -- missing): the rows before the resume step are the pre-crash trajectory
    select
        restarts.run_id,
        restarts.resume_step,
        cast(null as {{ dbt.type_bigint() }}) as attempt_number,
        min(restarts.resumed_from_step) as checkpoint_step,
        false as is_seen_in_log
    from restarts
    left join log_boundaries
        on restarts.run_id = log_boundaries.run_id
        and log_boundaries.resume_step between restarts.resume_step - 1 and restarts.resume_step + 1
    where not restarts.is_seen_in_log
        and log_boundaries.run_id is null
    group by restarts.run_id, restarts.resume_step
),

lr_rows as (
    -- the counted LR sequence with its neighbours, for the resumes only the LR shows
    select
        steps.run_id,
        steps.step,
        steps.learning_rate,
        {{ previous_value('steps.learning_rate', 'steps.step', 'steps.run_id') }} as previous_lr,
        max(steps.learning_rate) over (
            partition by steps.run_id order by steps.step rows between 2 preceding and 2 preceding
        ) as second_previous_lr,
        max(steps.learning_rate) over (
            partition by steps.run_id order by steps.step rows between 1 following and 1 following
        ) as next_lr
    from {{ run_ref('int_train_steps_resolved') }} as steps
    where steps.learning_rate > 0
),

lr_jumps as (
    select
        lr_rows.run_id,
        lr_rows.step as resume_step,
        count(*) over (partition by lr_rows.run_id) as jumps_in_run
    from lr_rows
    inner join {{ run_ref('stg_training__config') }} as config
        on lr_rows.run_id = config.run_id
    where lr_rows.learning_rate >= {{ threshold('resume_lr_jump_ratio') }} * lr_rows.previous_lr
        -- the LR had stopped rising (past any warmup) and does not go on rising (no new ramp)
        and lr_rows.previous_lr <= lr_rows.second_previous_lr * (1 + {{ tolerance }})
        and coalesce(lr_rows.next_lr, lr_rows.learning_rate) <= lr_rows.learning_rate * (1 + {{ tolerance }})
        and coalesce(lower(config.schedule_type), '') not like '%restart%'
        and coalesce(lower(config.schedule_type), '') not like '%cycl%'
),

lr_boundaries as (
    -- a jump within one step of a boundary the log or the events give is that boundary
    select
        lr_jumps.run_id,
        lr_jumps.resume_step,
        cast(null as {{ dbt.type_bigint() }}) as attempt_number,
        cast(null as {{ dbt.type_bigint() }}) as checkpoint_step,
        false as is_seen_in_log
    from lr_jumps
    left join (
        select run_id, resume_step from log_boundaries
        union all
        select run_id, resume_step from event_boundaries
    ) as known
        on lr_jumps.run_id = known.run_id
        and known.resume_step between lr_jumps.resume_step - 1 and lr_jumps.resume_step + 1
    where known.run_id is null
        and lr_jumps.jumps_in_run <= {{ threshold('resume_lr_max_jumps_per_run') }}
),

boundaries as (
    select
        unioned.*,
        density.run_first_step,
        density.rows_per_step,
        -- the steps resume_window_rows rows span at the run's logging density, with a margin of 3x
        cast(ceiling(3 * {{ window }} / greatest(density.rows_per_step, 1e-9)) as {{ dbt.type_bigint() }}) + 1 as step_span
    from (
        select log_boundaries.*, 'log' as boundary_source from log_boundaries
        union all
        select event_boundaries.*, 'events' as boundary_source from event_boundaries
        union all
        select lr_boundaries.*, 'learning_rate' as boundary_source from lr_boundaries
    ) as unioned
    inner join density
        on unioned.run_id = density.run_id
),

window_rows as (
    -- the rows near each boundary: after it (the new attempt, or the counted rows from the resume
    -- step on) or before it (earlier attempts, or the counted rows before the resume step)
    select
        boundaries.run_id,
        boundaries.resume_step,
        resolved.step,
        resolved.attempt_number,
        resolved.file_row_number,
        resolved.loss,
        resolved.learning_rate,
        resolved.shard_id,
        case
            when boundaries.attempt_number is not null then resolved.attempt_number = boundaries.attempt_number
            else resolved.step >= boundaries.resume_step
        end as is_after
    from boundaries
    inner join resolved
        on boundaries.run_id = resolved.run_id
        and resolved.step between boundaries.resume_step - boundaries.step_span and boundaries.resume_step + boundaries.step_span
    where (boundaries.attempt_number is not null and resolved.attempt_number <= boundaries.attempt_number)
        or (boundaries.attempt_number is null and resolved.is_counted)
),

one_per_step as (
    -- each side keeps one row per step: the latest attempt's (the pre-crash trajectory as it
    -- stood when the run resumed), the last row in the file on ties
    select *
    from (
        select
            *,
            row_number() over (
                partition by run_id, resume_step, is_after, step order by attempt_number desc, file_row_number desc
                rows between unbounded preceding and current row
            ) as step_rank
        from window_rows
    ) as ranked
    where step_rank = 1
),

positioned as (
    select
        *,
        (not is_after and step < resume_step) as is_before,
        (not is_after and step >= resume_step) as is_overlap,
        row_number() over (
            partition by run_id, resume_step, is_after, (step < resume_step) order by step
            rows between unbounded preceding and current row
        ) as position_forward,
        row_number() over (
            partition by run_id, resume_step, is_after, (step < resume_step) order by step desc
            rows between unbounded preceding and current row
        ) as position_backward
    from one_per_step
),

sided as (
    select
        *,
        case when is_after and position_forward <= {{ window }} then position_forward end as after_position,
        case when is_before and position_backward <= {{ window }} then position_backward end as before_position
    from positioned
),

after_window as (
    select
        run_id,
        resume_step,
        min(step) as first_after_step,
        max(step) as last_after_step,
        count(*) as after_rows,
        max(case when after_position = 1 then learning_rate end) as lr_after,
        max(learning_rate) as lr_after_window_max,
        -- the loss right after the resume: the first resume_loss_jump_rows rows (a median: one spike
        -- does not move it; a state that was not restored moves them all)
        max(case when after_position <= {{ threshold('resume_loss_jump_rows') }} then step end) as jump_last_step,
        count(case when after_position <= {{ threshold('resume_loss_jump_rows') }} then loss end) as jump_rows,
        min(case when after_position <= {{ threshold('resume_loss_jump_rows') }} then loss end) as min_loss_after,
        percentile_cont(0.5) within group (order by case when after_position <= {{ threshold('resume_loss_jump_rows') }} then loss end)
            as loss_after
    from sided
    where after_position is not null
    group by run_id, resume_step
),

before_window as (
    select
        run_id,
        resume_step,
        count(*) as before_rows,
        max(case when before_position = 1 then step end) as last_before_step,
        max(case when before_position = 1 then learning_rate end) as lr_last,
        max(case when before_position = 2 then step end) as previous_before_step,
        max(case when before_position = 2 then learning_rate end) as lr_previous,
        min(loss) as min_loss_before,
        percentile_cont(0.5) within group (order by loss) as loss_before
    from sided
    where before_position is not null
    group by run_id, resume_step
),

before_changes as (
    -- the pre-crash log-to-log change of the log loss (the noise a loss jump is judged against)
    select
        run_id,
        resume_step,
        abs(ln(loss) - {{ previous_value('ln(loss)', 'step', 'run_id, resume_step') }}) as log_change
    from sided
    where before_position is not null and loss > 0
),

before_scatter as (
    select
        run_id,
        resume_step,
        percentile_cont(0.5) within group (order by log_change) / (0.6745 * sqrt(2.0)) as log_loss_scatter
    from before_changes
    where log_change is not null
    group by run_id, resume_step
),

overlap as (
    -- the crashed attempt's rows at the steps the after window covers: a same-step comparison
    select
        sided.run_id,
        sided.resume_step,
        count(sided.loss) as overlap_rows,
        max(case when sided.step = after_window.first_after_step then sided.learning_rate end) as lr_same_step,
        min(sided.loss) as min_loss_overlap,
        percentile_cont(0.5) within group (order by sided.loss) as loss_overlap
    from sided
    inner join after_window
        on sided.run_id = after_window.run_id
        and sided.resume_step = after_window.resume_step
        and sided.step between after_window.first_after_step and after_window.jump_last_step
    where sided.is_overlap
    group by sided.run_id, sided.resume_step
),

after_shards as (
    select run_id, resume_step, step, shard_id,
        case when shard_id <> {{ previous_value('shard_id', 'step', 'run_id, resume_step') }} then 1 else 0 end as is_shard_change
    from sided
    where after_position is not null and shard_id is not null
),

before_shards as (
    select run_id, resume_step, step, shard_id
    from sided
    where not is_after and shard_id is not null
),

shard_offsets as (
    -- every offset between an after-window row and a pre-crash row near the boundary: how many
    -- after-window rows the pre-crash trajectory can be compared with at it, and how many of
    -- them read the same shard (an offset beyond what the crashed attempt logged compares nothing)
    select
        after_shards.run_id,
        after_shards.resume_step,
        before_shards.step - after_shards.step as step_offset,
        count(*) as comparable_rows,
        sum(case when before_shards.shard_id = after_shards.shard_id then 1 else 0 end) as matched_rows
    from after_shards
    inner join before_shards
        on after_shards.run_id = before_shards.run_id
        and after_shards.resume_step = before_shards.resume_step
    group by after_shards.run_id, after_shards.resume_step, before_shards.step - after_shards.step
),

best_offsets as (
    -- the offset whose share of matching rows is highest, among those comparing at least half the
    -- after window (fewer rows decide nothing); the smallest offset on ties
    select shard_offsets.run_id, shard_offsets.resume_step, step_offset, comparable_rows, matched_rows
    from (
        select
            shard_offsets.*,
            row_number() over (
                partition by shard_offsets.run_id, shard_offsets.resume_step
                order by {{ safe_divide('matched_rows', 'comparable_rows') }} desc, abs(step_offset), step_offset
                rows between unbounded preceding and current row
            ) as offset_rank
        from shard_offsets
        inner join (
            select run_id, resume_step, count(*) as after_shard_rows from after_shards group by run_id, resume_step
        ) as window_size
            on shard_offsets.run_id = window_size.run_id
            and shard_offsets.resume_step = window_size.resume_step
        where shard_offsets.step_offset <> 0
            and 2 * shard_offsets.comparable_rows >= window_size.after_shard_rows
    ) as shard_offsets
    where offset_rank = 1
),

start_lookup as (
    -- the data loader restarted from the run's start: the after window read the shards the run read
    -- at its first steps (one equality lookup per after-window row)
    select
        after_shards.run_id,
        after_shards.resume_step,
        sum(case when resolved.shard_id = after_shards.shard_id then 1 else 0 end) as start_matched_rows
    from after_shards
    inner join boundaries
        on after_shards.run_id = boundaries.run_id
        and after_shards.resume_step = boundaries.resume_step
    inner join resolved
        on after_shards.run_id = resolved.run_id
        and resolved.step = after_shards.step - (boundaries.resume_step - boundaries.run_first_step)
        and resolved.is_counted
    where boundaries.resume_step - boundaries.run_first_step > boundaries.step_span
    group by after_shards.run_id, after_shards.resume_step
),

same_step_shards as (
    select
        after_shards.run_id,
        after_shards.resume_step,
        count(*) as same_step_rows,
        sum(case when after_shards.shard_id = before_shards.shard_id then 1 else 0 end) as same_step_matches
    from after_shards
    inner join before_shards
        on after_shards.run_id = before_shards.run_id
        and after_shards.resume_step = before_shards.resume_step
        and after_shards.step = before_shards.step
    group by after_shards.run_id, after_shards.resume_step
),

shard_summary as (
    select
        run_id,
        resume_step,
        count(*) as after_shard_rows,
        sum(is_shard_change) as after_shard_changes
    from after_shards
    group by run_id, resume_step
),

joined as (
    select
        boundaries.run_id,
        boundaries.resume_step,
        boundaries.attempt_number,
        boundaries.is_seen_in_log,
        boundaries.boundary_source,
        boundaries.checkpoint_step,
        boundaries.rows_per_step,
        -- the new attempt starts at the run's first step: a relaunch from scratch, not a resume
        boundaries.resume_step <= boundaries.run_first_step as is_fresh_start,
        after_window.first_after_step,
        after_window.jump_last_step,
        after_window.after_rows,
        before_window.before_rows,
        before_window.last_before_step,
        -- learning rate
        after_window.lr_after,
        after_window.lr_after_window_max,
        overlap.lr_same_step,
        before_window.lr_last,
        before_window.lr_previous,
        case
            when overlap.lr_same_step is not null then overlap.lr_same_step
            -- the last pre-crash LR and its linear continuation to the first step after the resume
            else least(before_window.lr_last, greatest(0.0, before_window.lr_last
                + {{ safe_divide('before_window.lr_last - before_window.lr_previous', 'before_window.last_before_step - before_window.previous_before_step') }}
                    * (after_window.first_after_step - before_window.last_before_step)))
        end * (1 - {{ tolerance }}) as lr_expected_low,
        case
            when overlap.lr_same_step is not null then overlap.lr_same_step
            else greatest(before_window.lr_last, before_window.lr_last
                + {{ safe_divide('before_window.lr_last - before_window.lr_previous', 'before_window.last_before_step - before_window.previous_before_step') }}
                    * (after_window.first_after_step - before_window.last_before_step))
        end * (1 + {{ tolerance }}) as lr_expected_high,
        coalesce(before_window.lr_last > before_window.lr_previous * (1 + {{ tolerance }}), false) as is_lr_rising_before,
        case when overlap.lr_same_step is not null then 'the crashed attempt''s LR at the same step'
            else 'the last pre-crash LR and its continuation' end as lr_basis,
        -- loss
        -- the crashed attempt's losses at the same steps when it logged most of them, else its last rows
        case when coalesce(overlap.overlap_rows, 0) * 2 > coalesce(after_window.jump_rows, 0)
            then 'same_steps' else 'last_rows' end as loss_basis,
        after_window.loss_after,
        after_window.jump_rows,
        case when coalesce(overlap.overlap_rows, 0) * 2 > coalesce(after_window.jump_rows, 0)
            then overlap.loss_overlap else before_window.loss_before end as loss_before,
        case when coalesce(overlap.overlap_rows, 0) * 2 > coalesce(after_window.jump_rows, 0)
            then overlap.overlap_rows else before_window.before_rows end as loss_before_rows,
        least(after_window.min_loss_after, coalesce(before_window.min_loss_before, after_window.min_loss_after),
            coalesce(overlap.min_loss_overlap, after_window.min_loss_after)) as min_loss_compared,
        before_scatter.log_loss_scatter,
        -- data
        coalesce(shard_summary.after_shard_rows, 0) as after_shard_rows,
        coalesce(shard_summary.after_shard_changes, 0) as after_shard_changes,
        coalesce(same_step_shards.same_step_rows, 0) as same_step_rows,
        coalesce(same_step_shards.same_step_matches, 0) as same_step_matches,
        best_offsets.step_offset as best_step_offset,
        coalesce(best_offsets.matched_rows, 0) as best_offset_matches,
        coalesce(best_offsets.comparable_rows, 0) as best_offset_comparable_rows,
        coalesce(start_lookup.start_matched_rows, 0) as start_matched_rows,
        boundaries.run_first_step - boundaries.resume_step as start_step_offset
    from boundaries
    left join after_window
        on boundaries.run_id = after_window.run_id
        and boundaries.resume_step = after_window.resume_step
    left join before_window
        on boundaries.run_id = before_window.run_id
        and boundaries.resume_step = before_window.resume_step
    left join before_scatter
        on boundaries.run_id = before_scatter.run_id
        and boundaries.resume_step = before_scatter.resume_step
    left join overlap
        on boundaries.run_id = overlap.run_id
        and boundaries.resume_step = overlap.resume_step
    left join shard_summary
        on boundaries.run_id = shard_summary.run_id
        and boundaries.resume_step = shard_summary.resume_step
    left join same_step_shards
        on boundaries.run_id = same_step_shards.run_id
        and boundaries.resume_step = same_step_shards.resume_step
    left join best_offsets
        on boundaries.run_id = best_offsets.run_id
        and boundaries.resume_step = best_offsets.resume_step
    left join start_lookup
        on boundaries.run_id = start_lookup.run_id
        and boundaries.resume_step = start_lookup.resume_step
),

measured as (
    select
        *,
        case
            when lr_after is null or lr_expected_high is null then null
            when lr_after > lr_expected_high then {{ safe_divide('lr_after', 'lr_expected_high') }}
            when lr_after < lr_expected_low then {{ safe_divide('lr_after', 'lr_expected_low') }}
            else 1.0
        end as lr_ratio,
        -- the loss checks need a likelihood (positive losses) on both sides
        case when min_loss_compared > 0 and loss_before > 0 then ln(loss_after) - ln(loss_before) end as loss_jump,
        -- two medians of n and m noisy rows: a standard error of about 1.25 x scatter x sqrt(1/n + 1/m)
        1.25 * log_loss_scatter * sqrt(1.0 / greatest(jump_rows, 1) + 1.0 / greatest(loss_before_rows, 1)) as loss_jump_standard_error,
        {{ safe_divide('same_step_matches', 'same_step_rows') }} as same_step_match_share,
        (same_step_rows > 0 and 2 * same_step_rows >= after_shard_rows) as is_same_step_comparable,
        -- an offset explains the data order only when it moves it by at least one shard visit (the
        -- after window's rows per visit, in steps): within a visit every small offset matches most rows
        coalesce(abs(best_step_offset) * rows_per_step >= {{ safe_divide('after_shard_rows', 'after_shard_changes + 1') }}, false)
            as is_offset_beyond_visit,
        {{ safe_divide('best_offset_matches', 'best_offset_comparable_rows') }} as best_offset_match_share,
        {{ safe_divide('start_matched_rows', 'after_shard_rows') }} as start_match_share,
        -- steps against the checkpoint the events name (a checkpoint at step c resumes at c + 1, or
        -- logs c again): further than step_gap_factor logging intervals past it, or before it
        case when first_after_step - checkpoint_step - 1 > {{ threshold('step_gap_factor') }} / greatest(rows_per_step, 1e-9)
            then first_after_step - checkpoint_step - 1 else 0 end as steps_skipped,
        case when checkpoint_step - first_after_step > {{ threshold('step_gap_factor') }} / greatest(rows_per_step, 1e-9)
            then checkpoint_step - first_after_step else 0 end as steps_replayed_before_checkpoint
    from joined
),

judged as (
    select
        *,
        case
            -- a relaunch from scratch restarts its schedule, its loss and its data by design
            when lr_ratio is null or is_fresh_start then null
            when lr_ratio < {{ threshold('resume_lr_jump_ratio') }} and lr_ratio > 1.0 / {{ threshold('resume_lr_jump_ratio') }} then 'continuous'
            when lr_ratio < 1 and not is_lr_rising_before
                and lr_after_window_max >= {{ threshold('resume_warmup_rise_ratio') }} * lr_after then 'warmup_restarted'
            when lr_ratio > 1 then 'jumped_up'
            else 'dropped'
        end as lr_change,
        coalesce(
            not is_fresh_start
            and loss_jump >= ln(1 + {{ threshold('resume_loss_jump_min_share') }})
            and loss_jump >= {{ threshold('resume_loss_jump_n_sigmas') }} * coalesce(loss_jump_standard_error, 0),
            false
        ) as is_loss_jump,
        case
            when after_shard_rows = 0 or is_fresh_start then null
            -- the same steps, read by both attempts (at least half the window: one re-logged row decides nothing)
            when is_same_step_comparable and same_step_match_share >= {{ threshold('resume_data_min_match_share') }} then 'restored'
            when after_shard_changes >= {{ threshold('resume_data_min_shard_changes') }}
                and start_match_share >= {{ threshold('resume_data_min_match_share') }} then 'replayed'
            when after_shard_changes >= {{ threshold('resume_data_min_shard_changes') }} and is_offset_beyond_visit
                and best_offset_match_share >= {{ threshold('resume_data_min_match_share') }} and best_step_offset < 0 then 'replayed'
            when is_same_step_comparable and after_shard_changes >= {{ threshold('resume_data_min_shard_changes') }} and is_offset_beyond_visit
                and best_offset_match_share >= {{ threshold('resume_data_min_match_share') }} and best_step_offset > 0 then 'skipped'
            when is_same_step_comparable then 'order_changed'
            else 'not_comparable'
        end as data_order
    from measured
),

final as (
    select
        *,
        coalesce(lr_change in ('jumped_up', 'dropped', 'warmup_restarted'), false) as is_lr_discontinuous,
        -- the offset at which the data after the resume follows the pre-crash order
        case data_order
            when 'replayed' then case when start_match_share >= {{ threshold('resume_data_min_match_share') }} then start_step_offset else best_step_offset end
            when 'skipped' then best_step_offset
        end as data_step_offset,
        -- what happened at this resume, in words (empty: a clean resume)
        substring(
            case when is_fresh_start then '; started over from the run''s first step (nothing to restore)' else '' end
            || case when lr_change in ('jumped_up', 'dropped') then '; LR discontinuous (x' || {{ fmt('lr_ratio', 2) }} || ')'
                when lr_change = 'warmup_restarted' then '; warmup restarted' else '' end
            || case when is_loss_jump then '; loss jumped +' || {{ fmt_pct('exp(loss_jump) - 1') }} else '' end
            || case when data_order = 'replayed' then '; data replayed' when data_order = 'skipped' then '; data skipped'
                when data_order = 'order_changed' then '; data order changed' else '' end
            || case when steps_skipped > 0 then '; ' || {{ fmt_int('steps_skipped') }} || ' steps skipped' else '' end
            || case when steps_replayed_before_checkpoint > 0 then '; restarted ' || {{ fmt_int('steps_replayed_before_checkpoint') }}
                || ' steps before its checkpoint' else '' end,
            3
        ) as defects
    from judged
)

select
    run_id,
    resume_step,
    attempt_number,
    is_seen_in_log,
    boundary_source,
    checkpoint_step,
    is_fresh_start,
    first_after_step,
    last_before_step,
    after_rows,
    before_rows,
    lr_after,
    lr_expected_low,
    lr_expected_high,
    lr_basis,
    lr_ratio,
    lr_after_window_max,
    is_lr_rising_before,
    lr_change,
    is_lr_discontinuous,
    loss_basis,
    jump_rows,
    jump_last_step,
    loss_before_rows,
    loss_before,
    loss_after,
    loss_jump,
    loss_jump_standard_error,
    log_loss_scatter,
    is_loss_jump,
    after_shard_rows,
    after_shard_changes,
    same_step_rows,
    same_step_match_share,
    best_step_offset,
    best_offset_match_share,
    start_match_share,
    data_order,
    data_step_offset,
    steps_skipped,
    steps_replayed_before_checkpoint,
    defects
from final
