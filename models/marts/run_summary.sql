-- The run's numbers once cleaned, one row per run: steps logged and counted, the
-- held-out minimum (the checkpoint to keep), final validation and training loss,
-- wall-clock, the fix-first finding with its runner-up (from the model ledger
-- unless nothing there is above low) and whether their cost ranges overlap, the
-- top of the compute ledger, and whether the model ledger is clean.
-- The config is the run spine: every per-run aggregate is left-joined to it, so a
-- run without rows in a file still has its row here.
with

config as (
    select run_id, run_name, source_format, total_steps, import_notes, inferred_layout from {{ run_ref('stg_training__config') }}
),

raw_rows as (
    select run_id, count(*) as steps_logged
    from {{ run_ref('stg_training__steps') }}
    group by run_id
),

counted as (
    select
        run_id,
        count(*) as steps_counted,
        min(step) as first_step,
        max(step) as last_step,
        {{ stable_sum('step_time_sec') }} as wall_clock_sec
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

final_train as (
    select run_id, percentile_cont(0.5) within group (order by loss) as final_train_loss
    from (
        select run_id, loss, row_number() over (partition by run_id order by step desc rows between unbounded preceding and current row) as from_end
        from {{ run_ref('int_train_steps_resolved') }}
        where loss is not null
    ) as tail
    where from_end <= {{ threshold('train_smoothing_window') }}
    group by run_id
),

evals as (
    select
        run_id,
        max(case when is_best then step end) as best_eval_step,
        max(case when is_best then val_loss end) as best_val_loss,
        max(case when is_best then val_accuracy end) as best_val_accuracy,
        max(case when eval_index = eval_count then step end) as final_eval_step,
        max(case when eval_index = eval_count then val_loss end) as final_val_loss,
        max(case when eval_index = eval_count then val_accuracy end) as final_val_accuracy
    from {{ run_ref('int_evals_compared') }}
    group by run_id
),

findings as (
    select
        run_id,
        count(*) as n_findings,
        sum(case when severity in ('critical', 'high', 'medium') then 1 else 0 end) as n_findings_above_low,
        sum(case when ledger = 'model' and severity in ('critical', 'high', 'medium') then 1 else 0 end) as n_model_findings_above_low,
        max(case when ledger = 'compute' and ledger_rank = 1 then finding_id end) as compute_top_finding_id
    from {{ run_ref('findings') }}
    group by run_id
),

candidates as (
    -- fix-first comes from the model ledger unless nothing there is material (above low);
    -- then from the whole ranking. Root causes above info only.
    select
        findings_ranked.run_id,
        findings_ranked.finding_id,
        findings_ranked.val_loss_cost_low,
        findings_ranked.val_loss_cost_high,
        row_number() over (
            partition by findings_ranked.run_id
            order by case when findings_ranked.ledger = 'model' and findings.n_model_findings_above_low > 0 then 0 else 1 end,
                findings_ranked.harm_rank
            rows between unbounded preceding and current row
        ) as fix_order
    from {{ run_ref('findings') }} as findings_ranked
    inner join findings
        on findings.run_id = findings_ranked.run_id
    where findings_ranked.is_root_cause and findings_ranked.severity <> 'info'
),

fix_first as (
    select
        run_id,
        max(case when fix_order = 1 then finding_id end) as fix_first_finding_id,
        max(case when fix_order = 2 then finding_id end) as runner_up_finding_id,
        -- the two cost ranges overlap: the order between them is not settled by the estimates
        case
            when max(case when fix_order = 2 then val_loss_cost_low end) is null
                or max(case when fix_order = 1 then val_loss_cost_low end) is null then cast(null as boolean)
            else max(case when fix_order = 1 then val_loss_cost_low end) <= max(case when fix_order = 2 then val_loss_cost_high end)
                and max(case when fix_order = 2 then val_loss_cost_low end) <= max(case when fix_order = 1 then val_loss_cost_high end)
        end as fix_first_ranges_overlap
    from candidates
    group by run_id
),

final as (
    select
        config.run_id,
        1 as summary_id,
        config.run_name,
        config.source_format,
        config.import_notes,
        config.inferred_layout,
        coalesce(raw_rows.steps_logged, 0) as steps_logged,
        coalesce(counted.steps_counted, 0) as steps_counted,
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
        coalesce(findings.n_findings, 0) as n_findings,
        coalesce(findings.n_findings_above_low, 0) as n_findings_above_low,
        fix_first.fix_first_finding_id,
        fix_first.runner_up_finding_id,
        fix_first.fix_first_ranges_overlap,
        findings.compute_top_finding_id,
        (coalesce(findings.n_model_findings_above_low, 0) = 0) as model_ledger_is_clean
    from config
    left join raw_rows
        on config.run_id = raw_rows.run_id
    left join counted
        on config.run_id = counted.run_id
    left join final_train
        on config.run_id = final_train.run_id
    left join evals
        on config.run_id = evals.run_id
    left join findings
        on config.run_id = findings.run_id
    left join fix_first
        on config.run_id = fix_first.run_id
)

select * from final
