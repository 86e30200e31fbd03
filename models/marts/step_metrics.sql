-- One row per raw train row (counted and superseded), with everything the
-- report plots: loss and its baseline, spikes, logged vs expected LR, grad norm
-- vs the clip limit, step time and slow steps, shard, source and epoch.
with

rows_resolved as (
    select * from {{ ref('int_train_rows_resolved') }}
    where step is not null
),

baselines as (
    select step, loss_baseline, is_loss_spike from {{ ref('int_loss_baselines_computed') }}
),

learning_rates as (
    select step, expected_learning_rate from {{ ref('int_learning_rates_compared') }}
),

gradients as (
    select step, is_clip_violation from {{ ref('int_gradients_checked') }}
),

step_times as (
    select step, is_slow, is_in_slow_stretch, is_stall, is_checkpoint_step from {{ ref('int_step_times_profiled') }}
),

epochs as (
    select step, epoch_number from {{ ref('int_epochs_assigned') }}
),

shards as (
    select shard_id, source from {{ ref('int_shards_resolved') }}
),

config as (
    select grad_clip_norm, grad_norm_measured from {{ ref('stg_training__config') }}
),

final as (
    select
        rows_resolved.train_row_id,
        rows_resolved.step,
        rows_resolved.is_counted,
        rows_resolved.resolution,
        rows_resolved.attempt_number,
        rows_resolved.shard_id,
        shards.source,
        rows_resolved.loss,
        case when rows_resolved.is_counted then baselines.loss_baseline end as loss_baseline,
        coalesce(rows_resolved.is_counted and baselines.is_loss_spike, false) as is_loss_spike,
        rows_resolved.grad_norm,
        config.grad_clip_norm,
        -- counted rows: the flag of int_gradients_checked; superseded rows (not there) by the same rule
        case when rows_resolved.is_counted then coalesce(gradients.is_clip_violation, false)
            else {{ is_clip_violation('rows_resolved.grad_norm', 'config.grad_clip_norm', 'config.grad_norm_measured') }}
        end as is_clip_violation,
        rows_resolved.learning_rate,
        learning_rates.expected_learning_rate,
        rows_resolved.step_time_sec,
        coalesce(rows_resolved.is_counted and (step_times.is_in_slow_stretch or step_times.is_stall), false) as is_slow_step,
        coalesce(step_times.is_checkpoint_step, false) as is_checkpoint_step,
        case when rows_resolved.is_counted then epochs.epoch_number end as epoch_number
    from rows_resolved
    cross join config
    left join baselines
        on rows_resolved.step = baselines.step
    left join learning_rates
        on rows_resolved.step = learning_rates.step
    left join gradients
        on rows_resolved.step = gradients.step
    left join step_times
        on rows_resolved.step = step_times.step
    left join epochs
        on rows_resolved.step = epochs.step
    left join shards
        on rows_resolved.shard_id = shards.shard_id
)

select * from final
