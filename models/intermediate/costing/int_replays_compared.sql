-- Natural experiments: after a crash and resume, the steps from the checkpoint
-- to the crash were trained twice from the same weights. The original attempt
-- (A, superseded) against the replay (B, counted) is a direct A/B test of
-- whatever differed between the two attempts (clipping, data order, scheduler
-- state). One row per restart: the steps compared, the mean training-loss gap
-- B - A over all of them and over the last replay_tail_steps, and how often
-- clipping held in one attempt and not in the other.
with

restarts as (
    select run_id, resume_step, attempt_number, crashed_after_step from {{ run_ref('int_restarts_detected') }}
),

rows_resolved as (
    select run_id, step, attempt_number, is_counted, is_superseded, loss, grad_norm
    from {{ run_ref('int_train_rows_resolved') }}
),

config as (
    select run_id, grad_clip_norm from {{ run_ref('stg_training__config') }}
),

paired as (
    select
        restarts.run_id,
        restarts.resume_step,
        original.step,
        original.loss as loss_original,
        replay.loss as loss_replay,
        replay.loss - original.loss as loss_delta,
        (original.grad_norm <= config.grad_clip_norm * (1 + {{ var('clip_tolerance') }})) as is_clipped_original,
        (replay.grad_norm <= config.grad_clip_norm * (1 + {{ var('clip_tolerance') }})) as is_clipped_replay
    from restarts
    inner join rows_resolved as original
        on original.run_id = restarts.run_id
        and original.is_superseded
        and original.attempt_number = restarts.attempt_number - 1
        and original.step between restarts.resume_step and restarts.crashed_after_step
    inner join rows_resolved as replay
        on replay.run_id = original.run_id
        and replay.is_counted
        and replay.step = original.step
    inner join config
        on config.run_id = restarts.run_id
    where original.loss is not null and replay.loss is not null
),

ordered as (
    select
        paired.*,
        row_number() over (
            partition by run_id, resume_step order by step desc rows between unbounded preceding and current row
        ) as from_end
    from paired
),

final as (
    select
        run_id,
        resume_step as replay_id,
        resume_step,
        min(step) as first_compared_step,
        max(step) as last_compared_step,
        count(*) as compared_steps,
        {{ stable_avg('loss_delta') }} as mean_loss_delta,
        {{ stable_avg('case when from_end <= ' ~ var('replay_tail_steps') ~ ' then loss_delta end') }} as tail_loss_delta,
        {{ stable_avg(safe_divide('loss_delta', 'loss_original')) }} as mean_relative_loss_delta,
        sum(case when is_clipped_original and not is_clipped_replay then 1 else 0 end) as steps_clipped_only_in_original,
        sum(case when is_clipped_replay and not is_clipped_original then 1 else 0 end) as steps_clipped_only_in_replay
    from ordered
    group by run_id, resume_step
)

select * from final
