-- The run's loss curve as the loss-curve law reads it: one row per evaluation with the
-- validation loss and what the learning rate did up to it. The counted training steps
-- are split into buckets, each ending at an evaluation (the steps after the previous
-- evaluation up to this one); per bucket the LR area (sum of LR x the steps each logged
-- row stands for) and the mean LR over the bucket (the LR the evaluation "remembers":
-- the loss answers the LR with a lag, and the bucket is that lag at the resolution the
-- eval log has). Three LR sequences side by side: the effective one (a step whose loss or
-- gradient was not finite made no update: LR 0), the logged one, and the configured
-- schedule rebuilt for each step (int_learning_rates_compared; the logged LR where the
-- config gives none). Cumulative areas are the S1 of the Multi-Power Law / Tissue et al.
-- Also the loss-spike steps in each bucket (int_loss_baselines_computed): the noise floor
-- leaves out evaluations a spike may have moved.
with

evals as (
    select run_id, step, val_loss, eval_index, eval_count
    from {{ run_ref('int_evals_compared') }}
    where val_loss is not null
),

config as (
    select run_id, warmup_steps from {{ run_ref('stg_training__config') }}
),

steps as (
    select
        resolved.run_id,
        resolved.step,
        -- the steps this row stands for (a log written every N steps stands for N)
        greatest(1, resolved.step - coalesce(resolved.previous_step, 0)) as steps_represented,
        resolved.learning_rate,
        case when resolved.is_loss_non_finite or resolved.is_grad_norm_non_finite then 0.0
            else resolved.learning_rate end as effective_learning_rate,
        coalesce(resolved.expected_learning_rate, resolved.learning_rate) as configured_learning_rate,
        case when resolved.is_loss_spike then 1 else 0 end as is_spike
    -- the step, its rebuilt LR and its spike flag: one row of the wide model, no join
    from {{ run_ref('int_train_steps_measured') }} as resolved
),

stream as (
    -- train rows and evaluations in one ordered stream: an evaluation at step s comes after
    -- the training step s (it measures the weights after that update)
    select run_id, step, 0 as is_eval, cast(null as {{ dbt.type_bigint() }}) as eval_step, steps_represented,
        learning_rate, effective_learning_rate, configured_learning_rate, is_spike
    from steps
    union all
    select run_id, step, 1 as is_eval, step as eval_step, 0 as steps_represented,
        cast(null as {{ type_double() }}), cast(null as {{ type_double() }}), cast(null as {{ type_double() }}), 0 as is_spike
    from evals
),

bucketed as (
    select
        stream.*,
        -- the first evaluation at or after the row: the running minimum read from the end of the
        -- stream (the same rows as `current row and unbounded following` in step order; DuckDB
        -- computes a frame that ends at the current row in one pass, the open-ended one in 3.4 s
        -- instead of 0.6 s at 1M steps)
        min(eval_step) over (
            partition by run_id order by step desc, is_eval desc rows between unbounded preceding and current row
        ) as bucket_step
    from stream
),

buckets as (
    select
        run_id,
        bucket_step,
        min(step) as bucket_first_step,
        sum(steps_represented) as bucket_steps,
        sum(case when learning_rate is null then 1 else 0 end) as rows_without_lr,
        {{ stable_sum('effective_learning_rate * steps_represented') }} as area_effective,
        {{ stable_sum('learning_rate * steps_represented') }} as area_logged,
        {{ stable_sum('configured_learning_rate * steps_represented') }} as area_configured,
        sum(is_spike) as spike_steps
    from bucketed
    where is_eval = 0 and bucket_step is not null
    group by run_id, bucket_step
),

joined as (
    select
        evals.run_id,
        evals.step,
        evals.val_loss,
        evals.eval_index,
        evals.eval_count,
        (evals.eval_index = evals.eval_count) as is_final,
        buckets.bucket_first_step,
        coalesce(buckets.bucket_steps, 0) as bucket_steps,
        coalesce(buckets.rows_without_lr, 0) as rows_without_lr,
        coalesce(buckets.area_effective, 0) as area_effective,
        coalesce(buckets.area_logged, 0) as area_logged,
        coalesce(buckets.area_configured, 0) as area_configured,
        coalesce(buckets.spike_steps, 0) as spike_steps,
        config.warmup_steps
    from evals
    inner join config
        on evals.run_id = config.run_id
    left join buckets
        on evals.run_id = buckets.run_id
        and evals.step = buckets.bucket_step
),

cumulated as (
    select
        joined.*,
        sum(area_effective) over (partition by run_id order by step rows between unbounded preceding and current row) as s1_effective,
        sum(area_logged) over (partition by run_id order by step rows between unbounded preceding and current row) as s1_logged,
        sum(area_configured) over (partition by run_id order by step rows between unbounded preceding and current row) as s1_configured,
        sum(rows_without_lr) over (partition by run_id order by step rows between unbounded preceding and current row) as rows_without_lr_so_far,
        sum(bucket_steps) over (partition by run_id order by step rows between unbounded preceding and current row) as steps_so_far
    from joined
),

final as (
    select
        run_id,
        step,
        val_loss,
        eval_index,
        eval_count,
        is_final,
        bucket_first_step,
        bucket_steps,
        spike_steps,
        steps_so_far,
        s1_effective,
        s1_logged,
        s1_configured,
        {{ safe_divide('area_effective', 'bucket_steps') }} as lr_mean_effective,
        {{ safe_divide('area_logged', 'bucket_steps') }} as lr_mean_logged,
        {{ safe_divide('area_configured', 'bucket_steps') }} as lr_mean_configured,
        -- a point the law can be fitted on: its whole bucket is past the warmup (the law describes
        -- the curve after it) and training steps lie behind it
        (bucket_first_step > coalesce(warmup_steps, 0) and bucket_steps > 0) as is_fit_point,
        -- every step up to here logged its LR, so the LR areas are complete
        (rows_without_lr_so_far = 0 and s1_effective > 0) as has_lr_record
    from cumulated
)

select * from final
