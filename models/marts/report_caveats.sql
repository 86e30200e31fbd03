-- The caveats under "Double-check before relying on the numbers" that rest on a judgement,
-- decided here with their thresholds (the `caveat_*` thresholds in its YAML, docs/report.md): one row per caveat
-- that applies to a run. The report words each one from its columns; it does not judge.
--   * lr_scaled_by_workers: an lr_above_peak finding whose ratio to the configured peak equals
--     the data-parallel worker count (the check's own rule and tolerance,
--     lr_worker_ratio_tolerance), and whether the last logged LR is the unscaled min_lr
--     (within lr_relative_tolerance): then only the peak was scaled;
--   * grad_norm_after_clipping: at least caveat_at_limit_min_steps counted gradient norms sit
--     within caveat_at_limit_tolerance of the clip limit and none before them is above it: the
--     log records norms after clipping, so the true sizes up to the first norm above are unknown;
--   * val_set_small: the validation set has fewer than caveat_large_val_set examples (with the
--     accuracy's noise: two binomial standard errors at the last evaluation's accuracy);
--     val_set_size_unknown: the config does not give its size. Both only for a run with a
--     validation trajectory (two counted evaluations or more).
with

context as (
    select run_id, data_parallel_workers, min_lr, val_examples from {{ run_ref('run_context') }}
),

lr_findings as (
    select run_id, finding_id, observed_value / expected_value as lr_ratio
    from {{ run_ref('findings') }}
    where category = 'lr_above_peak' and observed_value <> 0 and expected_value <> 0
),

counted_steps as (
    select
        run_id,
        step,
        train_row_id,
        {{ finite_or_null('learning_rate') }} as learning_rate,
        {{ finite_or_null('grad_norm') }} as grad_norm,
        {{ finite_or_null('grad_clip_norm') }} as grad_clip_norm
    from {{ run_ref('step_metrics') }}
    where coalesce(is_counted, true)
),

final_lrs as (
    select
        run_id,
        learning_rate as final_lr,
        row_number() over (
            partition by run_id
            order by step desc, train_row_id desc
            rows between unbounded preceding and current row
        ) as from_last
    from counted_steps
    where learning_rate is not null
),

lr_caveats as (
    select
        lr_findings.run_id,
        lr_findings.finding_id,
        lr_findings.lr_ratio,
        context.data_parallel_workers,
        final_lrs.final_lr,
        coalesce(
            context.min_lr <> 0
            and abs(final_lrs.final_lr / context.min_lr - 1) <= {{ threshold('lr_relative_tolerance') }},
            false
        ) as is_final_lr_min_lr
    from lr_findings
    inner join context
        on lr_findings.run_id = context.run_id
    left join final_lrs
        on lr_findings.run_id = final_lrs.run_id
        and final_lrs.from_last = 1
    where context.data_parallel_workers > 1
        and abs(lr_findings.lr_ratio - context.data_parallel_workers)
            <= {{ threshold('lr_worker_ratio_tolerance') }} * context.data_parallel_workers
),

gradients as (
    select run_id, step, train_row_id, grad_norm, grad_clip_norm
    from counted_steps
    where grad_norm is not null and grad_clip_norm > 0
),

first_above as (
    -- clipping lost (e.g. after a resume): the norms after it say nothing about the log
    select run_id, min(step) as first_step_above
    from gradients
    where grad_norm > grad_clip_norm * (1 + {{ threshold('caveat_at_limit_tolerance') }})
    group by run_id
),

at_limit as (
    select
        gradients.run_id,
        gradients.step,
        gradients.grad_clip_norm,
        first_above.first_step_above,
        row_number() over (
            partition by gradients.run_id
            order by gradients.step, gradients.train_row_id
            rows between unbounded preceding and current row
        ) as from_first
    from gradients
    left join first_above
        on gradients.run_id = first_above.run_id
    where (first_above.first_step_above is null or gradients.step < first_above.first_step_above)
        and abs(gradients.grad_norm - gradients.grad_clip_norm)
            <= {{ threshold('caveat_at_limit_tolerance') }} * gradients.grad_clip_norm
),

clip_caveats as (
    select
        run_id,
        count(*) as n_steps,
        min(step) as first_step,
        max(step) as last_step,
        max(case when from_first = 1 then grad_clip_norm end) as limit_value,
        max(first_step_above) as first_step_above
    from at_limit
    group by run_id
    having count(*) >= {{ threshold('caveat_at_limit_min_steps') }}
),

trajectory as (
    select
        run_id,
        {{ finite_or_null('val_accuracy') }} as val_accuracy,
        count(*) over (
            partition by run_id
            rows between unbounded preceding and unbounded following
        ) as n_points,
        row_number() over (
            partition by run_id
            order by step desc
            rows between unbounded preceding and current row
        ) as from_last
    from {{ run_ref('eval_metrics') }}
    where coalesce(is_counted, true) and step is not null and {{ finite_or_null('val_loss') }} is not null
),

val_caveats as (
    select
        context.run_id,
        case when coalesce(context.val_examples, 0) = 0 then 'val_set_size_unknown' else 'val_set_small' end
            as caveat,
        context.val_examples,
        last_eval.val_accuracy,
        case
            when context.val_examples > 0 and last_eval.val_accuracy > 0 and last_eval.val_accuracy < 1
                then 2 * sqrt(last_eval.val_accuracy * (1 - last_eval.val_accuracy) / context.val_examples)
        end as accuracy_two_standard_errors
    from context
    inner join trajectory as last_eval
        on context.run_id = last_eval.run_id
        and last_eval.from_last = 1
        and last_eval.n_points >= 2
    where coalesce(context.val_examples, 0) < {{ threshold('caveat_large_val_set') }}
),

final as (
    select
        run_id,
        'lr_scaled_by_workers:' || finding_id as caveat_id,
        'lr_scaled_by_workers' as caveat,
        finding_id,
        lr_ratio,
        data_parallel_workers,
        final_lr,
        is_final_lr_min_lr,
        cast(null as {{ dbt.type_bigint() }}) as n_steps,
        cast(null as {{ dbt.type_bigint() }}) as first_step,
        cast(null as {{ dbt.type_bigint() }}) as last_step,
        cast(null as {{ type_double() }}) as limit_value,
        cast(null as {{ dbt.type_bigint() }}) as first_step_above,
        cast(null as {{ dbt.type_bigint() }}) as val_examples,
        cast(null as {{ type_double() }}) as val_accuracy,
        cast(null as {{ type_double() }}) as accuracy_two_standard_errors
    from lr_caveats

    union all

    select
        run_id,
        'grad_norm_after_clipping' as caveat_id,
        'grad_norm_after_clipping' as caveat,
        cast(null as {{ dbt.type_string() }}) as finding_id,
        cast(null as {{ type_double() }}) as lr_ratio,
        cast(null as {{ dbt.type_bigint() }}) as data_parallel_workers,
        cast(null as {{ type_double() }}) as final_lr,
        cast(null as {{ dbt.type_boolean() }}) as is_final_lr_min_lr,
        n_steps,
        first_step,
        last_step,
        limit_value,
        first_step_above,
        cast(null as {{ dbt.type_bigint() }}) as val_examples,
        cast(null as {{ type_double() }}) as val_accuracy,
        cast(null as {{ type_double() }}) as accuracy_two_standard_errors
    from clip_caveats

    union all

    select
        run_id,
        caveat as caveat_id,
        caveat,
        cast(null as {{ dbt.type_string() }}) as finding_id,
        cast(null as {{ type_double() }}) as lr_ratio,
        cast(null as {{ dbt.type_bigint() }}) as data_parallel_workers,
        cast(null as {{ type_double() }}) as final_lr,
        cast(null as {{ dbt.type_boolean() }}) as is_final_lr_min_lr,
        cast(null as {{ dbt.type_bigint() }}) as n_steps,
        cast(null as {{ dbt.type_bigint() }}) as first_step,
        cast(null as {{ dbt.type_bigint() }}) as last_step,
        cast(null as {{ type_double() }}) as limit_value,
        cast(null as {{ dbt.type_bigint() }}) as first_step_above,
        val_examples,
        val_accuracy,
        accuracy_two_standard_errors
    from val_caveats
)

select * from final
