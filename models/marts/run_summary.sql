-- The run's numbers once cleaned, in one row: steps logged and counted, the
-- held-out minimum (the checkpoint to keep), final validation and training loss,
-- wall-clock, and the fix-first finding with its runner-up.
with

config as (
    select run_name, source_format, total_steps from {{ ref('stg_training__config') }}
),

raw_rows as (
    select count(*) as steps_logged from {{ ref('stg_training__steps') }}
),

counted as (
    select
        count(*) as steps_counted,
        min(step) as first_step,
        max(step) as last_step,
        sum(step_time_sec) as wall_clock_sec
    from {{ ref('int_train_steps_resolved') }}
),

final_train as (
    select percentile_cont(0.5) within group (order by loss) as final_train_loss
    from (
        select loss, row_number() over (order by step desc) as from_end
        from {{ ref('int_train_steps_resolved') }}
        where loss is not null
    ) as tail
    where from_end <= {{ var('train_smoothing_window') }}
),

evals as (
    select
        max(case when is_best then step end) as best_eval_step,
        max(case when is_best then val_loss end) as best_val_loss,
        max(case when is_best then val_accuracy end) as best_val_accuracy,
        max(case when eval_index = eval_count then step end) as final_eval_step,
        max(case when eval_index = eval_count then val_loss end) as final_val_loss,
        max(case when eval_index = eval_count then val_accuracy end) as final_val_accuracy
    from {{ ref('int_evals_compared') }}
),

findings as (
    select
        count(*) as n_findings,
        sum(case when severity in ('critical', 'high', 'medium') then 1 else 0 end) as n_findings_above_low,
        max(case when root_rank = 1 then finding_id end) as fix_first_finding_id,
        max(case when root_rank = 2 then finding_id end) as runner_up_finding_id
    from (
        select
            finding_id,
            severity,
            case when is_root_cause and severity <> 'info'
                then row_number() over (partition by is_root_cause and severity <> 'info' order by harm_rank) end as root_rank
        from {{ ref('findings') }}
    ) as ranked
),

final as (
    select
        1 as summary_id,
        config.run_name,
        config.source_format,
        raw_rows.steps_logged,
        counted.steps_counted,
        counted.first_step,
        counted.last_step,
        config.total_steps as total_steps_config,
        evals.best_eval_step,
        evals.best_val_loss,
        evals.best_val_accuracy,
        evals.final_eval_step,
        evals.final_val_loss,
        evals.final_val_accuracy,
        final_train.final_train_loss,
        counted.wall_clock_sec,
        findings.n_findings,
        coalesce(findings.n_findings_above_low, 0) as n_findings_above_low,
        findings.fix_first_finding_id,
        findings.runner_up_finding_id
    from config
    cross join raw_rows
    cross join counted
    cross join final_train
    cross join evals
    cross join findings
)

select * from final
