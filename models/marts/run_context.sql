-- What the report needs to tell the run's story in one row: the validation
-- trajectory's ends, the saved checkpoints against the best evaluation, the size
-- of the validation set and how many evaluation steps were logged more than once.
with

config as (
    select
        run_name,
        data_parallel_workers,
        peak_lr,
        min_lr,
        grad_clip_norm,
        {{ parse_integer(json_text('config_json', '$.eval_examples')) }} as val_examples
    from {{ ref('stg_training__config') }}
),

evals as (
    select * from {{ ref('int_evals_compared') }}
),

eval_ends as (
    select
        max(case when eval_index = 1 then step end) as first_eval_step,
        max(case when eval_index = 1 then val_loss end) as first_val_loss,
        max(case when is_best then step end) as best_eval_step,
        max(case when is_best then val_loss end) as best_val_loss,
        max(case when eval_index = eval_count then step end) as final_eval_step,
        max(case when eval_index = eval_count then val_loss end) as final_val_loss,
        count(*) as n_evals
    from evals
),

checkpoints as (
    select distinct checkpoint_step
    from {{ ref('int_events_classified') }}
    where event_kind = 'checkpoint_saved' and checkpoint_step is not null
),

checkpoint_evals as (
    select
        checkpoints.checkpoint_step,
        evals.val_loss,
        row_number() over (
            order by checkpoints.checkpoint_step desc
            rows between unbounded preceding and current row
        ) as from_last,
        case when evals.val_loss is not null then row_number() over (
            partition by evals.val_loss is not null
            order by evals.val_loss, checkpoints.checkpoint_step
            rows between unbounded preceding and current row
        ) end as by_val_loss
    from checkpoints
    left join evals
        on checkpoints.checkpoint_step = evals.step
),

checkpoint_summary as (
    select
        count(*) as n_checkpoints_saved,
        max(case when from_last = 1 then checkpoint_step end) as last_checkpoint_step,
        max(case when from_last = 1 then val_loss end) as last_checkpoint_val_loss,
        max(case when by_val_loss = 1 then checkpoint_step end) as best_checkpoint_step,
        max(case when by_val_loss = 1 then val_loss end) as best_checkpoint_val_loss
    from checkpoint_evals
),

repeated_evals as (
    select count(*) as n_eval_steps_repeated
    from (
        select step
        from {{ ref('stg_training__evals') }}
        where step is not null and not is_exact_duplicate
        group by step
        having count(*) > 1
    ) as repeated
),

final as (
    select
        1 as run_context_id,
        config.run_name,
        config.val_examples,
        config.data_parallel_workers,
        config.peak_lr,
        config.min_lr,
        config.grad_clip_norm,
        eval_ends.n_evals,
        eval_ends.first_eval_step,
        eval_ends.first_val_loss,
        eval_ends.best_eval_step,
        eval_ends.best_val_loss,
        eval_ends.final_eval_step,
        eval_ends.final_val_loss,
        checkpoint_summary.n_checkpoints_saved,
        checkpoint_summary.last_checkpoint_step,
        checkpoint_summary.last_checkpoint_val_loss,
        checkpoint_summary.best_checkpoint_step,
        checkpoint_summary.best_checkpoint_val_loss,
        repeated_evals.n_eval_steps_repeated
    from config
    cross join eval_ends
    cross join checkpoint_summary
    cross join repeated_evals
)

select * from final
