-- Which checks could run on each run's data (one row per run and check), and why
-- not where they could not (a format without grad_norm, a config without peak_lr,
-- no evaluations, ...). A check that cannot run says so here instead of silently
-- passing. The config is the run spine: a run without rows in a file counts 0 there.
with

config as (
    select * from {{ run_ref('stg_training__config') }}
),

available_by_run as (
    select
        run_id,
        count(*) as counted_steps,
        count(loss) as with_loss,
        -- losses that carry a learning signal: beyond loss_signal_min_abs of zero
        count(case when abs(loss) > {{ threshold('loss_signal_min_abs') }} then 1 end) as with_signal_loss,
        count(grad_norm) as with_grad_norm,
        count(learning_rate) as with_learning_rate,
        count(step_time_sec) as with_step_time,
        count(shard_id) as with_shard_id
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

available as (
    select
        config.run_id,
        coalesce(available_by_run.counted_steps, 0) as counted_steps,
        coalesce(available_by_run.with_loss, 0) as with_loss,
        coalesce(available_by_run.with_signal_loss, 0) as with_signal_loss,
        coalesce(available_by_run.with_grad_norm, 0) as with_grad_norm,
        -- every gradient norm exactly 0 (int_learning_progress_measured): with every loss 0 too, nothing
        -- was trained, which learning_progress judges (no RL objective: that has a gradient)
        coalesce(progress.is_zero_gradient, false) as is_zero_gradient,
        coalesce(available_by_run.with_learning_rate, 0) as with_learning_rate,
        coalesce(available_by_run.with_step_time, 0) as with_step_time,
        coalesce(available_by_run.with_shard_id, 0) as with_shard_id
    from config
    left join available_by_run
        on config.run_id = available_by_run.run_id
    left join {{ run_ref('int_learning_progress_measured') }} as progress
        on config.run_id = progress.run_id
),

eval_counts as (
    select run_id, count(*) as n_rows from {{ run_ref('int_evals_resolved') }} group by run_id
),

shard_counts as (
    select run_id, count(*) as n_rows from {{ run_ref('int_shards_resolved') }} group by run_id
),

event_counts as (
    select run_id, count(*) as n_rows from {{ run_ref('int_events_classified') }} group by run_id
),

other_files as (
    select
        config.run_id,
        coalesce(eval_counts.n_rows, 0) as evals,
        coalesce(shard_counts.n_rows, 0) as shards,
        coalesce(event_counts.n_rows, 0) as events
    from config
    left join eval_counts
        on config.run_id = eval_counts.run_id
    left join shard_counts
        on config.run_id = shard_counts.run_id
    left join event_counts
        on config.run_id = event_counts.run_id
),

categories as (
    select category, requires from {{ ref('check_catalog') }}
),

{#- every need of macros/check_requirements.sql tested on every run: one row per run, need and
    reason (the need's `part`-th), its text when the need is not met -#}
needs_unmet as (
    {%- for requirement, parts in check_requirements().items() %}
    {%- set requirement_loop = loop %}
    {%- for condition, text in parts %}
    select
        config.run_id,
        {{ sql_literal(requirement) }} as requirement,
        {{ loop.index }} as part,
        case when {{ condition }} then {{ sql_literal(text) }} end as reason
    from config
    inner join available
        on config.run_id = available.run_id
    inner join other_files
        on config.run_id = other_files.run_id
    {{ 'union all' if not (loop.last and requirement_loop.last) }}
    {%- endfor %}
    {%- endfor %}
),

{#- each category's unmet needs, in the order its check lists them (meta.requires: the catalog's
    comma-joined requires) -#}
category_needs_unmet as (
    select
        config.run_id,
        categories.category,
        needs_unmet.reason,
        position(',' || needs_unmet.requirement || ',' in ',' || categories.requires || ',') as requirement_position,
        needs_unmet.part
    from categories
    -- every check for every run: the catalog's categories times the run spine
    cross join config
    left join needs_unmet
        on config.run_id = needs_unmet.run_id
        and needs_unmet.reason is not null
        and ',' || categories.requires || ',' like '%,' || needs_unmet.requirement || ',%'
),

reasons as (
    select
        run_id,
        category,
        nullif({{ dbt.listagg('reason', "'; '", 'order by requirement_position, part') }}, '') as reason
    from category_needs_unmet
    group by run_id, category
),

final as (
    select
        run_id,
        category,
        (reason is null) as could_run,
        reason
    from reasons
)

select * from final
