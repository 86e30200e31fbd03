-- Finding: one per loss-spike event (consecutive steps far above the robust
-- baseline). Evidence: onset, peak and its ratio to the baseline, duration,
-- the shard and source it started on, whether grad_norm was at or above the
-- clip limit, and the validation loss around it. A spike that started on a shard
-- judged bad is a symptom of that shard.
-- And one per resume where the loss jumped against the pre-crash trajectory
-- (int_resumes_checked): the training state was not restored. It is a symptom of an
-- LR discontinuity at the same resume when there is one; a spike that starts within
-- the jump's rows is a symptom of the jump.
-- And one per level jump of a per-epoch log (int_epoch_loss_jumps_flagged) not already a spike.
-- A spike or jump whose onset is where a logged term of the loss switched on or off (an importer's
-- objective_change event) is info: from there the loss sums other terms, its level moved by design.
with

spikes as (
    select * from {{ run_ref('int_loss_spikes_flagged') }}
),

bad_shards as (
    select run_id, group_key as shard_id from {{ run_ref('int_shards_scored') }}
    where grouping_level = 'shard' and is_bad
),

totals as (
    select run_id, count(*) as counted_steps from {{ run_ref('int_train_steps_resolved') }} group by run_id
),

evals as (
    select run_id, step, val_loss, best_val_loss_so_far from {{ run_ref('int_evals_compared') }}
),

resume_jumps as (
    select * from {{ run_ref('int_resumes_checked') }} where is_loss_jump
),

many_resumes as (
    -- the runs with resume_interleaved_min_resumes resumes or more: only their rows are counted below
    select run_id, count(*) as n_resumes
    from {{ run_ref('int_resumes_checked') }}
    group by run_id
    having count(*) >= {{ threshold('resume_interleaved_min_resumes') }}
),

logged_rows as (
    -- rows logged per distinct step of those runs: one run's resumes replay a few steps, runs
    -- interleaved or appended in one file log every step several times
    select
        resolved.run_id,
        count(*) as n_rows,
        count(distinct resolved.step) as n_steps
    from {{ run_ref('int_train_rows_resolved') }} as resolved
    inner join many_resumes
        on resolved.run_id = many_resumes.run_id
    where resolved.resolution in ('counted', 'superseded')
    group by resolved.run_id
),

interleaved_runs as (
    -- many resumes over a log holding every step resume_interleaved_min_rows_per_step times or more:
    -- boundaries between runs, not resumes of one
    select many_resumes.run_id, many_resumes.n_resumes, logged_rows.n_rows, logged_rows.n_steps
    from many_resumes
    inner join logged_rows
        on many_resumes.run_id = logged_rows.run_id
    where logged_rows.n_rows >= {{ threshold('resume_interleaved_min_rows_per_step') }} * logged_rows.n_steps
),

objectives as (
    -- what the loss read is: a GAN player's loss rises and falls with the other player's progress; a
    -- reinforcement-learning loss (a value, policy or TD loss) with the returns its policy reaches
    select run_id, is_adversarial_loss, is_reinforcement_loss from {{ run_ref('stg_training__config') }}
),

objective_changes as (
    -- the steps where a logged term of the training loss switched on or off: from there the loss is
    -- another sum (a second stage's term, an auxiliary loss a schedule turns on at an epoch)
    select run_id, step, event_text from {{ run_ref('int_events_classified') }}
    where event_kind = 'objective_change'
),

spike_objective_changes as (
    -- a change at the spike's onset row: after the row before it, at or before the onset
    {{ events_at_row('spikes', ['run_id', 'spike_event_number'], 'onset_step', 'onset_previous_step',
        'objective_changes', 'objective_change_text') }}
),

next_onsets as (
    select
        run_id,
        spike_event_number,
        onset_step,
        last_step,
        min(onset_step) over (partition by run_id order by onset_step rows between 1 following and unbounded following) as next_onset_step
    from spikes
),

val_impact as (
    -- validation loss from the onset until the next spike (or 20 steps after this one ends),
    -- against the best validation loss before the onset
    select
        next_onsets.run_id,
        next_onsets.spike_event_number,
        min(case when evals.step < next_onsets.onset_step then evals.val_loss end) as best_val_before,
        max(case when evals.step >= next_onsets.onset_step then evals.val_loss end) as worst_val_after
    from next_onsets
    left join evals
        on next_onsets.run_id = evals.run_id
        and evals.step < coalesce(next_onsets.next_onset_step, next_onsets.last_step + 20 + 1)
    group by next_onsets.run_id, next_onsets.spike_event_number
),

final as (
    select
        spikes.run_id,
        'loss_spikes:' || {{ fmt_int('spikes.onset_step') }} as finding_id,
        'loss_spikes' as category,
        -- one log point is a one-batch blip (or one noisy window average): low at most; so are two
        -- neighbouring points of a dense log (two noisy batches in a row), unless they span many steps
        case
            -- the loss's terms changed at the onset: another objective from there, not a spike
            when spike_objective_changes.objective_change_text is not null then 'info'
            -- a GAN player's loss (a discriminator's, a generator's) moves with the balance of the two
            -- players: a discriminator's loss leaps when its generator catches up, by design: low at most
            when coalesce(objectives.is_adversarial_loss, false) then 'low'
            -- a value or TD loss jumps when the policy reaches new returns (new states, larger targets): low at most
            when coalesce(objectives.is_reinforcement_loss, false) then 'low'
            when spikes.spike_steps < {{ threshold('spike_min_points_for_medium') }} then 'low'
            when spikes.spike_steps < {{ threshold('spike_min_points_for_high') }}
                and spikes.last_step - spikes.onset_step + 1 < {{ threshold('spike_min_steps_for_medium') }} then 'low'
            -- a loss that moved to a new level and stayed: a divergence, or a changed objective or stage
            -- the log cannot tell apart from one: medium at most
            when spikes.after_event = 'new_level' then 'medium'
            when spikes.peak_ratio >= {{ threshold('spike_high_ratio') }}
                and spikes.spike_steps >= {{ threshold('spike_min_points_for_high') }} then 'high'
            else 'medium'
        end as severity,
        'Training loss spiked to ' || {{ fmt('spikes.peak_loss', 3) }} || ' (' || {{ fmt('spikes.peak_ratio', 2) }}
            || 'x its baseline ' || {{ fmt('spikes.onset_baseline', 3) }} || ') at step ' || {{ fmt_int('spikes.onset_step') }}
            -- the shard only when the log names one (a log without shard ids says nothing of it)
            || coalesce(' on shard ' || spikes.onset_shard_id || coalesce(' (' || spikes.onset_source || ')', ''), '')
            || case spikes.after_event
                when 'new_level' then ' and did not come back: high for ' || {{ fmt_int('spikes.spike_steps') }}
                    || case when spikes.spike_steps = 1 then ' logged step, then ' else ' logged steps, then ' end
                    || {{ fmt_int('spikes.settle_rows_above') }} || ' of the next ' || {{ fmt_int('spikes.settle_rows') }}
                    || ' still above ' || {{ fmt('spikes.onset_threshold_loss', 3) }} || ' (a new level).'
                when 'log_end' then ' and was still high when the log ended (' || {{ fmt_int('spikes.spike_steps') }}
                    || case when spikes.spike_steps = 1 then ' logged step).' else ' logged steps).' end
                else ' and stayed high for ' || {{ fmt_int('spikes.spike_steps') }}
                    || case when spikes.spike_steps = 1 then ' logged step.' else ' logged steps.' end
            end
            || case when spike_objective_changes.objective_change_text is not null
                then ' A logged term of the loss switched on or off there: another objective, not a spike.' else '' end as title,
        'onset step ' || {{ fmt_int('spikes.onset_step') }} || ', last spike step ' || {{ fmt_int('spikes.last_step') }}
            || '; peak loss ' || {{ fmt('spikes.peak_loss', 4) }} || ' vs baseline ' || {{ fmt('spikes.onset_baseline', 4) }}
            || ' (median of the previous ' || {{ threshold('spike_window') }} || ' non-spike steps), robust z '
            || {{ fmt('spikes.peak_robust_z', 1) }}
            || coalesce('; shard ' || spikes.onset_shard_id || coalesce(', source ' || spikes.onset_source, ''), '; no shard id in the log')
            || '; grad_norm at onset ' || case when spikes.is_grad_at_clip_at_onset then 'at or above the clip limit ('
                || {{ fmt('spikes.grad_ratio_to_clip_at_onset', 2) }} || 'x)' else 'below the clip limit' end
            || '; loss above baseline summed over the spike: ' || {{ fmt('spikes.loss_excess_sum', 2) }}
            || case spikes.after_event
                when 'new_level' then '; after it ' || {{ fmt_int('spikes.settle_rows_above') }} || ' of the next '
                    || {{ fmt_int('spikes.settle_rows') }} || ' logged losses stay above the onset''s bar '
                    || {{ fmt('spikes.onset_threshold_loss', 4) }} || ': the baseline caught up with the loss, the loss did not come down'
                when 'log_end' then '; the log ends inside the spike'
                else '' end
            || case when coalesce(objectives.is_adversarial_loss, false)
                then '; the loss is a GAN player''s: its level follows the balance of the two players (low at most)'
                when coalesce(objectives.is_reinforcement_loss, false)
                then '; the loss is a reinforcement-learning loss (a value, policy or TD loss): it jumps when the policy reaches new returns (low at most)'
                else '' end
            || coalesce('; at its onset ' || spike_objective_changes.objective_change_text || ' (info)', '')
            || case when val_impact.worst_val_after is not null and val_impact.best_val_before is not null
                then '; validation loss rose to ' || {{ fmt('val_impact.worst_val_after', 4) }} || ' (best before the spike '
                    || {{ fmt('val_impact.best_val_before', 4) }} || ', +' || {{ fmt('val_impact.worst_val_after - val_impact.best_val_before', 4) }} || ')'
                else '' end as evidence,
        spikes.onset_step as first_step,
        spikes.last_step,
        spikes.spike_steps as steps_affected,
        spikes.peak_loss as observed_value,
        spikes.onset_baseline as expected_value,
        -- the loss the onset step had to exceed: the highest of its three bars (int_loss_baselines_computed)
        spikes.onset_threshold_loss as threshold_value,
        spikes.onset_threshold_name as threshold_name,
        spikes.loss_excess_sum as estimated_cost,
        'loss_excess' as cost_unit,
        'sum over the spike steps of (loss - spike-free baseline): training loss paid above the run''s own recent level; harm also weighs the validation-loss rise after the onset'
            as cost_method,
        -- the larger of: share of steps spiking x log peak ratio, and the relative damage to validation loss
        greatest(
            {{ safe_divide('spikes.spike_steps', 'totals.counted_steps') }} * least(1.0, ln(spikes.peak_ratio)),
            coalesce(least(1.0, greatest(0, {{ safe_divide('val_impact.worst_val_after - val_impact.best_val_before', 'val_impact.best_val_before') }})), 0)
        ) as impact_score,
        case
            -- a shard's spikes end when its batches do: a loss that stayed at a new level after the
            -- event outlived the shard it started on, so the shard is not its cause
            when bad_shards.shard_id is not null and spikes.after_event <> 'new_level' then 'bad_data_shard:' || bad_shards.shard_id
            when resume_jumps.resume_step is not null then 'loss_spikes:resume_' || {{ fmt_int('resume_jumps.resume_step') }}
        end as caused_by,
        case when spike_objective_changes.objective_change_text is not null
            then 'Nothing to fix if the term was meant to switch there: the loss sums other terms from step ' || {{ fmt_int('spikes.onset_step') }}
                || '; compare losses within one objective (the terms logged on their own) rather than across the switch.'
            when bad_shards.shard_id is not null and spikes.after_event <> 'new_level'
            then 'Fix or drop shard ' || bad_shards.shard_id || ' (see bad_data_shard); the spike follows its batches.'
            when spikes.after_event = 'new_level'
            then 'The loss moved to a new level at step ' || {{ fmt_int('spikes.onset_step') }} || ' and stayed there: check what changed at that step '
                || '(a new training stage or loss term, a data-mix switch, a resumed checkpoint); if nothing did, the run diverged: '
                || 'restart from a checkpoint before it with a lower LR or more warmup.'
            else 'Inspect the batches at steps ' || {{ fmt_int('spikes.onset_step - 1') }} || '-' || {{ fmt_int('spikes.onset_step') }}
                || ' (outlier length, corrupted text, duplicated blocks); if the data is fine, lower the LR or add warmup.'
        end as recommendation
    from spikes
    left join totals
        on spikes.run_id = totals.run_id
    left join bad_shards
        on spikes.run_id = bad_shards.run_id
        and spikes.onset_shard_id = bad_shards.shard_id
    left join val_impact
        on spikes.run_id = val_impact.run_id
        and spikes.spike_event_number = val_impact.spike_event_number
    left join resume_jumps
        on spikes.run_id = resume_jumps.run_id
        and spikes.onset_step between resume_jumps.resume_step and resume_jumps.jump_last_step
    left join objectives
        on spikes.run_id = objectives.run_id
    left join spike_objective_changes
        on spikes.run_id = spike_objective_changes.run_id
        and spikes.spike_event_number = spike_objective_changes.spike_event_number
),

resume_findings as (
    select
        resume_jumps.run_id,
        'loss_spikes:resume_' || {{ fmt_int('resume_step') }} as finding_id,
        'loss_spikes' as category,
        case when interleaved_runs.run_id is null then 'medium' else 'low' end as severity,
        'Training loss jumped ' || {{ fmt_pct('exp(loss_jump) - 1') }}
            || case when boundary_source = 'learning_rate' then ' when the LR schedule restarted at step ' else ' when the run resumed at step ' end
            || {{ fmt_int('resume_step') }}
            || ' (' || {{ fmt('loss_after', 3) }} || ' against ' || {{ fmt('loss_before', 3) }} || ' before)'
            || case when interleaved_runs.run_id is null then ': the resume did not restore the training state'
                else ', where the log moves to another of the runs it holds' end
            || case when is_lr_discontinuous then ' (the LR changed at the same step).' else '.' end as title,
        'median loss of the first ' || {{ fmt_int('jump_rows') }} || ' rows after the resume ' || {{ fmt('loss_after', 4) }}
            || ' against ' || case when loss_basis = 'same_steps' then 'the crashed attempt''s losses at the same steps '
                else 'the median of the last ' || {{ fmt_int('loss_before_rows') }} || ' pre-crash rows ' end || {{ fmt('loss_before', 4) }}
            || ': +' || {{ fmt_pct('exp(loss_jump) - 1') }} || ', ' || {{ fmt(safe_divide('loss_jump', 'loss_jump_standard_error'), 1) }}
            || ' standard errors of the pre-crash scatter (a jump from ' || {{ fmt_pct(threshold('resume_loss_jump_min_share'), 0) }} || ' and '
            || {{ threshold('resume_loss_jump_n_sigmas') }} || ' standard errors); at this resume: ' || defects
            || case when interleaved_runs.run_id is not null then '; low: the log holds '
                || {{ fmt_int('interleaved_runs.n_resumes') }} || ' resumes and logs its '
                || {{ fmt_int('interleaved_runs.n_steps') }} || ' steps ' || {{ fmt('interleaved_runs.n_rows * 1.0 / interleaved_runs.n_steps', 1) }}
                || ' times each: several runs interleaved or appended in one file, so the loss moves to another run''s level here'
                else '' end as evidence,
        resume_step as first_step,
        jump_last_step as last_step,
        jump_rows as steps_affected,
        loss_after as observed_value,
        loss_before as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        (loss_after - loss_before) * jump_rows as estimated_cost,
        'loss_excess' as cost_unit,
        'the jump (median after minus the pre-crash level) times the rows it was measured on' as cost_method,
        least(1.0, loss_jump) as impact_score,
        case when is_lr_discontinuous
            then 'lr_schedule_mismatch:resume_' || {{ fmt_int('resume_step') }} end as caused_by,
        'Check what the resume restores: the optimizer state (Adam moments), the weights, the LR scheduler and the data position; '
            || 'resume a short run from a checkpoint and compare its first losses with the crashed attempt''s.' as recommendation
    from resume_jumps
    left join interleaved_runs
        on resume_jumps.run_id = interleaved_runs.run_id
),

epoch_jumps as (
    select * from {{ run_ref('int_epoch_loss_jumps_flagged') }}
),

epoch_objective_changes as (
    -- a loss term switched on or off at the jump: after the epoch before it, at or before it
    {{ events_at_row('epoch_jumps', ['run_id', 'step'], 'step', 'previous_step', 'objective_changes', 'objective_change_text') }}
),

epoch_jump_findings as (
    -- a per-epoch log's level jump (int_epoch_loss_jumps_flagged) the spike events above did not
    -- already report at its step: medium when the LR is logged and not rising at it (no warm
    -- restart) and the loss stayed up (epoch_jump_kept_share of the jump) for epoch_jump_persist_epochs of the
    -- epochs after it (a state lost or a data switch, not one odd epoch), low otherwise
    select
        epoch_jumps.run_id,
        'loss_spikes:epoch_' || {{ fmt_int('epoch_jumps.step') }} as finding_id,
        'loss_spikes' as category,
        case when epoch_objective_changes.objective_change_text is not null then 'info'
            when epoch_jumps.learning_rate is not null
                and epoch_jumps.epochs_still_above >= {{ threshold('epoch_jump_persist_epochs') }} then 'medium'
            else 'low' end as severity,
        'The epoch-mean training loss jumped ' || {{ fmt_pct('epoch_jumps.rise') }} || ' at epoch ' || {{ fmt_int('epoch_jumps.step') }}
            || ' (' || {{ fmt('epoch_jumps.loss', 4) }} || ' after ' || {{ fmt('epoch_jumps.previous_loss', 4) }} || ') and kept ' || {{ fmt_pct(threshold('epoch_jump_kept_share'), 0) }} || ' of the jump or more for '
            || {{ fmt_int('epoch_jumps.epochs_still_above') }} || ' of the ' || {{ fmt_int('epoch_jumps.epochs_after') }} || ' epochs after it.' as title,
        'one row an epoch: its mean loss over the whole dataset, which one batch from a harder source cannot move; rise against the previous epoch '
            || {{ fmt_pct('epoch_jumps.rise') }} || ' (a jump from ' || {{ fmt_pct(threshold('epoch_jump_min_rise'), 0) }} || ' and '
            || {{ threshold('epoch_jump_noise_multiple') }} || 'x the largest epoch-to-epoch rise of the ' || {{ threshold('epoch_jump_noise_window') }}
            || ' epochs before it, ' || {{ fmt_pct('greatest(coalesce(epoch_jumps.largest_recent_rise, 0), 0)') }} || '); level before it '
            || {{ fmt('epoch_jumps.level_before', 4) }} || ' (' || {{ fmt_pct('epoch_jumps.loss / epoch_jumps.level_before - 1') }} || ' above it; the median of the '
            || {{ threshold('epoch_jump_window') }} || ' epochs before it past the first epochs, else the previous epoch); learning rate '
            || coalesce({{ fmt('epoch_jumps.previous_learning_rate', 8) }} || ' -> ' || {{ fmt('epoch_jumps.learning_rate', 8) }}
                || ' (not rising: no warm restart or warmup)', 'not logged (a warm restart cannot be ruled out, so low)')
            || '; still up (' || {{ fmt_pct(threshold('epoch_jump_kept_share'), 0) }} || ' of the jump above that level or more) on ' || {{ fmt_int('epoch_jumps.epochs_still_above') }} || ' of the next '
            || {{ fmt_int('epoch_jumps.epochs_after') }} || ' epochs'
            || coalesce('; at the jump ' || epoch_objective_changes.objective_change_text || ' (info)', '') as evidence,
        epoch_jumps.step as first_step,
        epoch_jumps.step as last_step,
        1 as steps_affected,
        epoch_jumps.loss as observed_value,
        epoch_jumps.level_before as expected_value,
        epoch_jumps.level_before * (1 + {{ threshold('epoch_jump_min_rise') }}) as threshold_value,
        'epoch_jump_min_rise' as threshold_name,
        epoch_jumps.loss - epoch_jumps.level_before as estimated_cost,
        'loss_excess' as cost_unit,
        'the jump of the epoch mean over its level before it' as cost_method,
        least(1.0, ln(1 + epoch_jumps.rise)) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        case when epoch_objective_changes.objective_change_text is not null
            then 'Nothing to fix if the term was meant to switch there: the loss sums other terms from epoch ' || {{ fmt_int('epoch_jumps.step') }}
                || '; compare losses within one objective rather than across the switch.'
            else 'Find what changed at epoch ' || {{ fmt_int('epoch_jumps.step') }} || ': a resume from a checkpoint that lost part of the state '
            || '(optimizer moments, loss scaler, data order), an augmentation or data switch; rerun from the checkpoint before it and compare.'
        end as recommendation
    from epoch_jumps
    left join epoch_objective_changes
        on epoch_jumps.run_id = epoch_objective_changes.run_id
        and epoch_jumps.step = epoch_objective_changes.step
    left join final
        on epoch_jumps.run_id = final.run_id
        and epoch_jumps.step = final.first_step
    where final.finding_id is null
),

unioned as (
    select * from final
    union all
    select * from resume_findings
    union all
    select * from epoch_jump_findings
)

select * from unioned
