-- What the report needs to tell each run's story, one row per run: the validation
-- trajectory's ends, the saved checkpoints against the best evaluation, the size
-- of the validation set and how many evaluation steps were logged more than once.
with

config as (
    select
        run_id,
        run_name,
        data_parallel_workers,
        peak_lr,
        min_lr,
        grad_clip_norm,
        {{ parse_integer(json_text('config_json', '$.eval_examples')) }} as val_examples
    from {{ run_ref('stg_training__config') }}
),

evals as (
    select * from {{ run_ref('int_evals_compared') }}
),

eval_ends as (
    select
        run_id,
        max(case when eval_index = 1 then step end) as first_eval_step,
        max(case when eval_index = 1 then val_loss end) as first_val_loss,
        max(case when is_best then step end) as best_eval_step,
        max(case when is_best then val_loss end) as best_val_loss,
        max(case when eval_index = eval_count then step end) as final_eval_step,
        max(case when eval_index = eval_count then val_loss end) as final_val_loss,
        count(*) as n_evals
    from evals
    group by run_id
),

checkpoints as (
    select distinct run_id, checkpoint_step
    from {{ run_ref('int_events_classified') }}
    where event_kind = 'checkpoint_saved' and checkpoint_step is not null
),

checkpoint_evals as (
    select
        checkpoints.run_id,
        checkpoints.checkpoint_step,
        evals.val_loss,
        row_number() over (
            partition by checkpoints.run_id
            order by checkpoints.checkpoint_step desc
            rows between unbounded preceding and current row
        ) as from_last,
        case when evals.val_loss is not null then row_number() over (
            partition by checkpoints.run_id, evals.val_loss is not null
            order by evals.val_loss, checkpoints.checkpoint_step
            rows between unbounded preceding and current row
        ) end as by_val_loss
    from checkpoints
    left join evals
        on checkpoints.run_id = evals.run_id
        and checkpoints.checkpoint_step = evals.step
),

checkpoint_summary as (
    select
        run_id,
        count(*) as n_checkpoints_saved,
        max(case when from_last = 1 then checkpoint_step end) as last_checkpoint_step,
        max(case when from_last = 1 then val_loss end) as last_checkpoint_val_loss,
        max(case when by_val_loss = 1 then checkpoint_step end) as best_checkpoint_step,
        max(case when by_val_loss = 1 then val_loss end) as best_checkpoint_val_loss
    from checkpoint_evals
    group by run_id
),

repeated_evals as (
    select run_id, count(*) as n_eval_steps_repeated
    from (
        select run_id, step
        from {{ run_ref('stg_training__evals') }}
        where step is not null and not is_exact_duplicate
        group by run_id, step
        having count(*) > 1
    ) as repeated
    group by run_id
),

final as (
    select
        config.run_id,
        1 as run_context_id,
        config.run_name,
        config.val_examples,
        config.data_parallel_workers,
        config.peak_lr,
        config.min_lr,
        config.grad_clip_norm,
        coalesce(eval_ends.n_evals, 0) as n_evals,
        eval_ends.first_eval_step,
        eval_ends.first_val_loss,
        eval_ends.best_eval_step,
        eval_ends.best_val_loss,
        eval_ends.final_eval_step,
        eval_ends.final_val_loss,
        coalesce(checkpoint_summary.n_checkpoints_saved, 0) as n_checkpoints_saved,
        checkpoint_summary.last_checkpoint_step,
        checkpoint_summary.last_checkpoint_val_loss,
        checkpoint_summary.best_checkpoint_step,
        checkpoint_summary.best_checkpoint_val_loss,
        coalesce(repeated_evals.n_eval_steps_repeated, 0) as n_eval_steps_repeated
    from config
    -- the config is the run spine: a run without evaluations or checkpoints keeps its row (counts 0)
    left join eval_ends
        on config.run_id = eval_ends.run_id
    left join checkpoint_summary
        on config.run_id = checkpoint_summary.run_id
    left join repeated_evals
        on config.run_id = repeated_evals.run_id
)

select * from final
