-- Loss spikes grouped into events: consecutive spike steps (a gap of one clean
-- step does not split an event) form one event, described by its onset step,
-- peak, duration, the shard and source it started on, whether grad_norm was at
-- or above the clip limit at the onset, and the loss it cost above the baseline.
-- A spike step must also exceed its baseline by spike_min_absolute_excess in
-- absolute loss: a large ratio on a near-zero loss is noise, not a spike.
with

scored as (
    -- the loss baseline and the clip state of every counted step: one table (the wide model)
    select
        run_id, step, shard_id, loss, loss_baseline, robust_z, is_loss_spike,
        spike_threshold_loss, spike_threshold_name, is_at_or_above_clip, ratio_to_clip
    from {{ run_ref('int_train_steps_measured') }}
),

shards as (
    select run_id, shard_id, source from {{ run_ref('int_shards_resolved') }}
),

spike_steps as (
    select
        scored.run_id,
        scored.step,
        scored.shard_id,
        scored.loss,
        scored.loss_baseline,
        scored.robust_z,
        scored.loss - scored.loss_baseline as loss_excess,
        {{ previous_value('scored.step', 'scored.step', 'scored.run_id') }} as previous_spike_step
    from scored
    where scored.is_loss_spike
        and scored.loss - scored.loss_baseline >= {{ threshold('spike_min_absolute_excess') }}
),

event_starts as (
    select
        *,
        case when previous_spike_step is null or step - previous_spike_step > 2 then 1 else 0 end as is_event_start
    from spike_steps
),

numbered as (
    select
        *,
        sum(is_event_start) over (
            partition by run_id order by step rows between unbounded preceding and current row
        ) as spike_event_number
    from event_starts
),

events as (
    select
        run_id,
        spike_event_number,
        min(step) as onset_step,
        max(step) as last_step,
        count(*) as spike_steps,
        max(loss) as peak_loss,
        max(loss / loss_baseline) as peak_ratio,
        max(robust_z) as peak_robust_z,
        {{ stable_sum('loss_excess') }} as loss_excess_sum
    from numbered
    group by run_id, spike_event_number
),

onsets as (
    select
        events.*,
        onset_row.shard_id as onset_shard_id,
        onset_row.loss_baseline as onset_baseline,
        onset_baseline_row.spike_threshold_loss as onset_threshold_loss,
        onset_baseline_row.spike_threshold_name as onset_threshold_name,
        shards.source as onset_source,
        onset_baseline_row.is_at_or_above_clip as is_grad_at_clip_at_onset,
        onset_baseline_row.ratio_to_clip as grad_ratio_to_clip_at_onset
    from events
    inner join numbered as onset_row
        on events.run_id = onset_row.run_id
        and events.onset_step = onset_row.step
    inner join scored as onset_baseline_row
        on events.run_id = onset_baseline_row.run_id
        and events.onset_step = onset_baseline_row.step
    left join shards
        on onset_row.run_id = shards.run_id
        and onset_row.shard_id = shards.shard_id
),

final as (
    select * from onsets
)

select * from final
