-- Loss spikes grouped into events: consecutive spike steps of the log (a gap of one clean
-- logged step does not split an event; counted in logged rows, so a log written every 10th
-- step groups as a per-step log does) form one event, described by its onset step,
-- peak, duration, the shard and source it started on, whether grad_norm was at
-- or above the clip limit at the onset, and the loss it cost above the baseline.
-- A spike step must also exceed its baseline by spike_min_absolute_excess in
-- absolute loss: a large ratio on a near-zero loss is noise, not a spike.
with

scored as (
    -- the loss baseline and the clip state of every counted step: one table (the wide model)
    select
        run_id, step, shard_id, loss, loss_baseline, robust_z, is_loss_spike,
        spike_threshold_loss, spike_threshold_name, is_at_or_above_clip, ratio_to_clip,
        -- the row's place in the log: events are grouped by logged rows, not step numbers
        row_number() over (partition by run_id order by step) as log_row,
        -- the logged step before it: what changed between the two rows happened at this one
        lag(step) over (partition by run_id order by step) as previous_step
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
        scored.log_row,
        {{ previous_value('scored.log_row', 'scored.step', 'scored.run_id') }} as previous_spike_row
    from scored
    where scored.is_loss_spike
        and scored.loss - scored.loss_baseline >= {{ threshold('spike_min_absolute_excess') }}
),

event_starts as (
    select
        *,
        case when previous_spike_row is null or log_row - previous_spike_row > 2 then 1 else 0 end as is_event_start
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
        max(log_row) as last_row,
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
        onset_baseline_row.previous_step as onset_previous_step,
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

settled as (
    -- the spike_settle_rows logged losses after the event: did the loss come back under the bar
    -- its onset cleared, or stay above it (a new level: the baseline caught up with the loss, the
    -- loss did not come down to the baseline)?
    {{ rows_after_above('onsets', ['run_id', 'spike_event_number'], 'scored', 'log_row', 'onsets.last_row',
        threshold('spike_settle_rows'), 'loss', 'onsets.onset_threshold_loss', 'settle_rows', 'settle_rows_above') }}
),

final as (
    select
        onsets.*,
        settled.settle_rows,
        settled.settle_rows_above,
        case
            when onsets.onset_threshold_loss is null then 'came_back'
            when settled.settle_rows = 0 then 'log_end'
            when 2 * settled.settle_rows_above > settled.settle_rows then 'new_level'
            else 'came_back'
        end as after_event
    from onsets
    inner join settled
        on onsets.run_id = settled.run_id
        and onsets.spike_event_number = settled.spike_event_number
)

select * from final
