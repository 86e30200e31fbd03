-- Every per-step measurement of a counted step on one row: the step sequence that counts
-- (int_train_steps_resolved, a table), the LR the config's schedule gives
-- (int_learning_rates_compared), grad_norm against the clip limit (int_gradients_checked), the
-- epoch (int_epochs_assigned) and the robust spike-free loss baseline
-- (int_loss_baselines_computed, a table). The first and the last are tables of their own, each
-- one query (DuckDB frees one concern's window state before the next; Spark plans three small
-- queries instead of one that inlines the step sequence at each reader); this model computes
-- the row-wise LR and clip columns and the epochs, and joins the baseline. The other three
-- models are views of it, each its columns: the detectors and marts read the view of their
-- concern, or this model when they need several (no join of 1M-row tables on (run_id, step)).
{%- set tolerance = threshold('lr_relative_tolerance') %}
with

resolved as (
    select * from {{ run_ref('int_train_steps_resolved') }}
),

config as (
    -- one row per run: the run spine
    select
        run_id, schedule_type, peak_lr, min_lr, warmup_steps, decay_steps,
        grad_clip_norm, grad_norm_measured, steps_per_epoch, batch_size
    from {{ run_ref('stg_training__config') }}
),

shard_sizes as (
    select run_id, shard_id, n_examples from {{ run_ref('int_shards_resolved') }}
),

baselines as (
    select * from {{ run_ref('int_loss_baselines_computed') }}
),

-- the learning rate against the schedule (int_learning_rates_compared) ----------------------

logged_peak_by_run as (
    select run_id, max(learning_rate) as logged_peak_lr
    from resolved
    group by run_id
),

rebuilt as (
    select
        resolved.*,
        config.peak_lr,
        config.min_lr,
        config.grad_clip_norm,
        logged_peak_by_run.logged_peak_lr,
        {{ scheduled_lr('resolved.step', 'config.schedule_type', 'config.peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_learning_rate,
        {{ scheduled_lr('resolved.step - 1', 'config.schedule_type', 'config.peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_previous,
        {{ scheduled_lr('resolved.step + 1', 'config.schedule_type', 'config.peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_next,
        {{ scheduled_lr('resolved.step', 'config.schedule_type', 'logged_peak_by_run.logged_peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_at_logged_peak,
        {{ scheduled_lr('resolved.step - 1', 'config.schedule_type', 'logged_peak_by_run.logged_peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_at_logged_peak_previous,
        {{ scheduled_lr('resolved.step + 1', 'config.schedule_type', 'logged_peak_by_run.logged_peak_lr', 'config.min_lr', 'config.warmup_steps', 'config.decay_steps') }}
            as expected_at_logged_peak_next,
        -- the clip state (int_gradients_checked; the violation flag is set on the narrow stream below)
        (resolved.grad_norm >= config.grad_clip_norm * (1 - {{ threshold('clip_saturation_band') }})) as is_at_or_above_clip_raw,
        {{ safe_divide('resolved.grad_norm', 'config.grad_clip_norm') }} as ratio_to_clip
    from resolved
    left join config
        on resolved.run_id = config.run_id
    left join logged_peak_by_run
        on resolved.run_id = logged_peak_by_run.run_id
),

banded as (
    select
        *,
        least(expected_previous, expected_learning_rate, coalesce(expected_next, expected_learning_rate))
            * (1 - {{ tolerance }}) as expected_low,
        greatest(expected_previous, expected_learning_rate, coalesce(expected_next, expected_learning_rate))
            * (1 + {{ tolerance }}) as expected_high,
        least(expected_at_logged_peak_previous, expected_at_logged_peak, coalesce(expected_at_logged_peak_next, expected_at_logged_peak))
            * (1 - {{ tolerance }}) as logged_peak_low,
        greatest(expected_at_logged_peak_previous, expected_at_logged_peak, coalesce(expected_at_logged_peak_next, expected_at_logged_peak))
            * (1 + {{ tolerance }}) as logged_peak_high
    from rebuilt
),

-- the clip stretches and the shard runs, on a narrow stream -------------------------------
-- Every window below reads only the columns it needs (a window sorts every column it carries:
-- on the whole row, the epoch's four windows took 8.8 s at 1M steps and spilled, instead of
-- about 2 s); the wide row (banded, all row-wise) is joined to them once, in `final`.

clip_flagged as (
    select
        resolved.run_id,
        resolved.step,
        resolved.step_index,
        resolved.shard_id,
        resolved.is_shard_change,
        config.steps_per_epoch,
        config.batch_size,
        {{ is_clip_violation('resolved.grad_norm', 'config.grad_clip_norm', 'config.grad_norm_measured') }} as is_clip_violation_raw
    from resolved
    left join config
        on resolved.run_id = config.run_id
),

stretched as (
    select
        run_id,
        step,
        shard_id,
        steps_per_epoch,
        batch_size,
        is_clip_violation_raw,
        -- gaps and islands of clip violations (step_index is the row number in step order)
        step_index - row_number() over (
            partition by run_id, coalesce(is_clip_violation_raw, false) order by step
        ) as island_key,
        -- a run of consecutive steps on one shard (int_epochs_assigned)
        sum(case when is_shard_change then 1 else 0 end) over (
            partition by run_id order by step rows between unbounded preceding and current row
        ) as run_number
    from clip_flagged
),

-- the epoch (int_epochs_assigned) -----------------------------------------------------------

shard_coverage as (
    select
        config.run_id,
        coalesce(shard_counts.steps_with_shard, 0) as steps_with_shard,
        coalesce(shard_counts.steps_total, 0) as steps_total
    from config
    left join (
        select run_id, count(shard_id) as steps_with_shard, count(*) as steps_total
        from resolved
        group by run_id
    ) as shard_counts
        on config.run_id = shard_counts.run_id
),

runs_split as (
    select
        stretched.*,
        row_number() over (partition by stretched.run_id, stretched.run_number order by stretched.step) as position_in_run,
        cast(ceiling({{ safe_divide('shard_sizes.n_examples', 'stretched.batch_size') }}) as {{ dbt.type_bigint() }})
            as steps_per_visit
    from stretched
    left join shard_sizes
        on stretched.run_id = shard_sizes.run_id
        and stretched.shard_id = shard_sizes.shard_id
),

visits as (
    select
        *,
        run_number * 1000000
            + coalesce(cast(floor({{ safe_divide('position_in_run - 1', 'steps_per_visit') }}) as {{ dbt.type_bigint() }}), 0)
            as visit_number
    from runs_split
),

visit_occurrence as (
    select
        *,
        row_number() over (partition by run_id, shard_id order by visit_first_step) as occurrence
    from (
        select
            run_id,
            shard_id,
            visit_number,
            min(step) as visit_first_step
        from visits
        where shard_id is not null
        group by run_id, shard_id, visit_number
    ) as visit_starts
),

assigned as (
    select
        visits.run_id,
        visits.step,
        visits.is_clip_violation_raw,
        visits.island_key,
        visits.visit_number,
        visit_occurrence.occurrence as shard_visit_occurrence,
        case
            when shard_coverage.steps_with_shard = shard_coverage.steps_total then visit_occurrence.occurrence
            when visits.steps_per_epoch > 0
                then cast(floor({{ safe_divide('greatest(visits.step, 1) - 1', 'visits.steps_per_epoch') }}) as {{ dbt.type_bigint() }}) + 1
        end as epoch_number,
        case
            when shard_coverage.steps_with_shard = shard_coverage.steps_total then 'shard_visits'
            when visits.steps_per_epoch > 0 then 'config_steps_per_epoch'
            else 'unknown'
        end as epoch_basis
    from visits
    left join visit_occurrence
        on visits.run_id = visit_occurrence.run_id
        and visits.visit_number = visit_occurrence.visit_number
        and visits.shard_id = visit_occurrence.shard_id
    left join shard_coverage
        on visits.run_id = shard_coverage.run_id
),

epoch_sequenced as (
    select
        *,
        (epoch_number > coalesce({{ previous_value('epoch_number', 'step', 'run_id') }}, epoch_number)) as is_epoch_start
    from assigned
),

epoch_spans as (
    -- an aggregate joined back (one row per epoch; the steps of no known epoch together, as a
    -- window partition would hold them: epoch numbers start at 1, so -1 stands for none)
    select
        run_id,
        coalesce(epoch_number, -1) as epoch_key,
        min(step) as epoch_first_step,
        max(step) as epoch_last_step
    from epoch_sequenced
    group by run_id, coalesce(epoch_number, -1)
),

final as (
    select
        -- the step sequence
        banded.run_id,
        banded.step,
        banded.train_row_id,
        banded.file_row_number,
        banded.attempt_number,
        banded.is_attempt_start,
        banded.shard_id,
        banded.loss,
        banded.grad_norm,
        banded.learning_rate,
        banded.step_time_sec,
        banded.is_loss_non_finite,
        banded.is_grad_norm_non_finite,
        banded.previous_step,
        banded.previous_shard_id,
        banded.step_index,
        banded.steps_missing_before,
        banded.is_shard_change,
        -- the learning rate
        banded.expected_learning_rate,
        banded.expected_at_logged_peak,
        banded.peak_lr,
        banded.logged_peak_lr,
        {{ safe_divide('banded.learning_rate', 'banded.expected_learning_rate') }} as lr_ratio,
        {{ safe_divide('banded.learning_rate', 'banded.peak_lr') }} as ratio_to_peak,
        (banded.learning_rate > banded.peak_lr * (1 + {{ tolerance }})) as is_above_peak,
        case
            when banded.learning_rate is null or banded.expected_learning_rate is null then null
            else (banded.learning_rate < banded.expected_low or banded.learning_rate > banded.expected_high)
        end as is_lr_mismatch,
        case
            when banded.learning_rate is null or banded.expected_at_logged_peak is null then null
            else (banded.learning_rate < banded.logged_peak_low or banded.learning_rate > banded.logged_peak_high)
        end as is_mismatch_at_logged_peak,
        -- the clip state
        banded.grad_clip_norm,
        banded.ratio_to_clip,
        coalesce(epoch_sequenced.is_clip_violation_raw, false) as is_clip_violation,
        coalesce(banded.is_at_or_above_clip_raw, false) as is_at_or_above_clip,
        case when epoch_sequenced.is_clip_violation_raw then epoch_sequenced.island_key end as violation_stretch_key,
        -- the epoch
        epoch_sequenced.visit_number,
        epoch_sequenced.shard_visit_occurrence,
        epoch_sequenced.epoch_number,
        epoch_sequenced.epoch_basis,
        epoch_sequenced.is_epoch_start,
        epoch_spans.epoch_first_step,
        epoch_spans.epoch_last_step,
        -- the loss baseline
        baselines.log_loss,
        baselines.log_baseline,
        baselines.log_mad,
        baselines.baseline_points,
        baselines.loss_baseline,
        baselines.log_residual,
        baselines.robust_z,
        baselines.is_loss_spike,
        baselines.was_flagged_by_earlier_pass,
        baselines.spike_threshold_loss,
        baselines.spike_threshold_name
    from banded
    left join epoch_sequenced
        on banded.run_id = epoch_sequenced.run_id
        and banded.step = epoch_sequenced.step
    left join epoch_spans
        on banded.run_id = epoch_spans.run_id
        and coalesce(epoch_sequenced.epoch_number, -1) = epoch_spans.epoch_key
    left join baselines
        on banded.run_id = baselines.run_id
        and banded.step = baselines.step
)

select * from final
