-- Natural experiments: after a crash and resume, the steps from the checkpoint
-- to the crash were trained twice from the same weights. The original attempt
-- (A, superseded) against the replay (B, counted) is a direct A/B test of
-- whatever differed between the two attempts (clipping, data order, scheduler
-- state). One row per restart: the steps compared, the mean training-loss gap
-- B - A over all of them and over the last replay_tail_steps, how often
-- clipping held in one attempt and not in the other, how many steps read another
-- shard in the replay (a data loader that did not resume where it left off), and,
-- when an evaluation inside the replayed range ran in both attempts, the
-- validation loss of each (the last such evaluation).
with

restarts as (
    select run_id, resume_step, attempt_number, crashed_after_step from {{ run_ref('int_restarts_detected') }}
),

rows_resolved as (
    select run_id, step, attempt_number, is_counted, is_superseded, loss, grad_norm, shard_id
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
        original.shard_id as shard_original,
        replay.shard_id as shard_replay,
        (original.grad_norm <= config.grad_clip_norm * (1 + {{ threshold('clip_tolerance') }})) as is_clipped_original,
        (replay.grad_norm <= config.grad_clip_norm * (1 + {{ threshold('clip_tolerance') }})) as is_clipped_replay
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

compared as (
    select
        run_id,
        resume_step,
        min(step) as first_compared_step,
        max(step) as last_compared_step,
        count(*) as compared_steps,
        {{ stable_avg('loss_delta') }} as mean_loss_delta,
        {{ stable_avg('case when from_end <= ' ~ threshold('replay_tail_steps') ~ ' then loss_delta end') }} as tail_loss_delta,
        {{ stable_avg(safe_divide('loss_delta', 'loss_original')) }} as mean_relative_loss_delta,
        sum(case when is_clipped_original and not is_clipped_replay then 1 else 0 end) as steps_clipped_only_in_original,
        sum(case when is_clipped_replay and not is_clipped_original then 1 else 0 end) as steps_clipped_only_in_replay,
        sum(case when shard_original is not null and shard_replay is not null then 1 else 0 end) as shard_compared_steps,
        sum(case when shard_original <> shard_replay then 1 else 0 end) as steps_with_other_shard
    from ordered
    group by run_id, resume_step
),

eval_rows as (
    -- evaluations logged inside a replayed range: the first row in the file was measured in the
    -- original attempt, the last one in the replay
    select
        restarts.run_id,
        restarts.resume_step,
        evals.step,
        evals.val_loss,
        row_number() over (
            partition by restarts.run_id, restarts.resume_step, evals.step order by evals.file_row_number
            rows between unbounded preceding and current row
        ) as from_first,
        row_number() over (
            partition by restarts.run_id, restarts.resume_step, evals.step order by evals.file_row_number desc
            rows between unbounded preceding and current row
        ) as from_last,
        count(*) over (
            partition by restarts.run_id, restarts.resume_step, evals.step
            rows between unbounded preceding and unbounded following
        ) as rows_for_step
    from restarts
    inner join {{ run_ref('stg_training__evals') }} as evals
        on evals.run_id = restarts.run_id
        and evals.step between restarts.resume_step and restarts.crashed_after_step
    where evals.val_loss is not null and not evals.is_exact_duplicate
),

eval_pairs as (
    select
        run_id,
        resume_step,
        step,
        max(case when from_first = 1 then val_loss end) as eval_loss_original,
        max(case when from_last = 1 then val_loss end) as eval_loss_replay,
        row_number() over (
            partition by run_id, resume_step order by step desc rows between unbounded preceding and current row
        ) as from_latest
    from eval_rows
    where rows_for_step >= 2
    group by run_id, resume_step, step
),

final as (
    select
        compared.run_id,
        compared.resume_step as replay_id,
        compared.resume_step,
        compared.first_compared_step,
        compared.last_compared_step,
        compared.compared_steps,
        compared.mean_loss_delta,
        compared.tail_loss_delta,
        compared.mean_relative_loss_delta,
        compared.steps_clipped_only_in_original,
        compared.steps_clipped_only_in_replay,
        compared.shard_compared_steps,
        compared.steps_with_other_shard,
        eval_pairs.step as replayed_eval_step,
        eval_pairs.eval_loss_original,
        eval_pairs.eval_loss_replay
    from compared
    left join eval_pairs
        on compared.run_id = eval_pairs.run_id
        and compared.resume_step = eval_pairs.resume_step
        and eval_pairs.from_latest = 1
)

select * from final
