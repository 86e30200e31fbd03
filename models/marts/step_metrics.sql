-- One row per raw train row (counted and superseded), with everything the
-- report plots: loss and its baseline, spikes, logged vs expected LR, grad norm
-- vs the clip limit, step time and slow steps, shard, source and epoch.
with

rows_resolved as (
    select * from {{ run_ref('int_train_rows_resolved') }}
    where step is not null
),

measured as (
    -- the loss baseline, the rebuilt LR, the clip state and the epoch: one table (the wide model)
    select run_id, step, loss_baseline, is_loss_spike, expected_learning_rate, is_clip_violation, epoch_number
    from {{ run_ref('int_train_steps_measured') }}
),

step_times as (
    select run_id, step, is_slow, is_in_slow_stretch, is_stall, is_checkpoint_step from {{ run_ref('int_step_times_profiled') }}
),

shards as (
    select run_id, shard_id, source from {{ run_ref('int_shards_resolved') }}
),

config as (
    select run_id, grad_clip_norm, grad_norm_measured from {{ run_ref('stg_training__config') }}
),

final as (
    select
        rows_resolved.run_id,
        rows_resolved.train_row_id,
        rows_resolved.step,
        rows_resolved.is_counted,
        rows_resolved.resolution,
        rows_resolved.attempt_number,
        rows_resolved.shard_id,
        shards.source,
        rows_resolved.loss,
        case when rows_resolved.is_counted then measured.loss_baseline end as loss_baseline,
        coalesce(rows_resolved.is_counted and measured.is_loss_spike, false) as is_loss_spike,
        rows_resolved.grad_norm,
        config.grad_clip_norm,
        -- counted rows: the flag of int_gradients_checked (the wide model's); superseded rows (not there) by the same rule
        case when rows_resolved.is_counted then coalesce(measured.is_clip_violation, false)
            else {{ is_clip_violation('rows_resolved.grad_norm', 'config.grad_clip_norm', 'config.grad_norm_measured') }}
        end as is_clip_violation,
        rows_resolved.learning_rate,
        measured.expected_learning_rate,
        rows_resolved.step_time_sec,
        coalesce(rows_resolved.is_counted and (step_times.is_in_slow_stretch or step_times.is_stall), false) as is_slow_step,
        coalesce(step_times.is_checkpoint_step, false) as is_checkpoint_step,
        case when rows_resolved.is_counted then measured.epoch_number end as epoch_number
    from rows_resolved
    inner join config
        on rows_resolved.run_id = config.run_id
    left join measured
        on rows_resolved.run_id = measured.run_id
        and rows_resolved.step = measured.step
    left join step_times
        on rows_resolved.run_id = step_times.run_id
        and rows_resolved.step = step_times.step
    left join shards
        on rows_resolved.run_id = shards.run_id
        and rows_resolved.shard_id = shards.shard_id
)

select * from final
