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
        coalesce(available_by_run.with_grad_norm, 0) as with_grad_norm,
        coalesce(available_by_run.with_learning_rate, 0) as with_learning_rate,
        coalesce(available_by_run.with_step_time, 0) as with_step_time,
        coalesce(available_by_run.with_shard_id, 0) as with_shard_id
    from config
    left join available_by_run
        on config.run_id = available_by_run.run_id
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
    select category from {{ ref('finding_categories') }}
),

{#- a per-epoch log (the generic reader's rows_are = 'epoch'): checks built on one row a step cannot run -#}
{%- set per_epoch_rows = ("coalesce(config.rows_are, 'step') = 'epoch'", 'rows are epochs, not steps (a per-epoch log): the check needs one row a step') %}

reasons as (
    select
        config.run_id,
        categories.category,
        case categories.category
            when 'lr_above_peak' then {{ reason_list([
                ('available.with_learning_rate = 0', 'no learning_rate in the log')] + config_field_reasons('peak_lr')) }}
            when 'lr_schedule_mismatch' then {{ reason_list([
                ('available.with_learning_rate = 0', 'no learning_rate in the log'), per_epoch_rows] + config_field_reasons('peak_lr') + [
                ('config.schedule_type is null', 'schedule type unknown in the config'),
                ('config.schedule_type is not null and not ' ~ is_supported_schedule('config.schedule_type'), 'schedule type not rebuilt (supported: cosine, linear, constant, with warmup)'),
                ('config.decay_steps is null and config.schedule_type not like \'%constant%\' and \',\' || config.impossible_fields || \',\' not like \'%,decay_steps,%\'', 'decay_steps unknown in the config'),
                ('\',\' || config.impossible_fields || \',\' like \'%,decay_steps,%\'', 'decay_steps impossible in the config (see config_mismatch:impossible_values)')]) }}
            when 'grad_clip_violation' then {{ reason_list([
                ('available.with_grad_norm = 0', 'no grad_norm in the log')] + config_field_reasons('grad_clip_norm') + [
                ('config.grad_norm_measured = \'before_clipping\'', 'grad_norm is logged before clipping by this tool: a violation cannot be seen (steps above the limit were clipped)')]) }}
            when 'grad_norm_spikes' then {{ reason_list([('available.with_grad_norm < 3', 'fewer than 3 grad_norm values in the log')]) }}
            when 'loss_spikes' then {{ reason_list([
                ('available.with_loss < ' ~ threshold('spike_min_periods') ~ ' + 1', 'too few loss values to build a baseline')]) }}
            when 'bad_data_shard' then {{ reason_list([
                ('available.with_shard_id = 0', 'no shard_id in the log'),
                ('other_files.shards = 0', 'no shard table')]) }}
            when 'data_repetition' then {{ reason_list([
                ('available.with_shard_id = 0 and coalesce(config.steps_per_epoch, 0) = 0', 'no shard_id in the log and no steps_per_epoch in the config')]) }}
            when 'overfitting' then {{ reason_list([('other_files.evals < 3', 'fewer than 3 evaluations')]) }}
            when 'eval_contamination' then {{ reason_list([
                ('other_files.evals < 3 and other_files.shards = 0', 'fewer than 3 evaluations and no shard table'),
                ('available.with_loss < ' ~ threshold('contamination_min_train_losses'), 'fewer than ' ~ threshold('contamination_min_train_losses') ~ ' training losses: validation below training cannot be judged (a held-out source name is still checked)')]) }}
            when 'slow_steps' then {{ reason_list([('available.with_step_time = 0', 'no step_time_sec in the log'), per_epoch_rows]) }}
            when 'step_sequence' then {{ reason_list([per_epoch_rows]) }}
            when 'run_restart' then {{ reason_list([]) if false else 'cast(null as ' ~ dbt.type_string() ~ ')' }}
            {#- a partial copy or a crash at the end is always seen (an early stop needs total_steps) #}
            when 'run_ended_early' then {{ 'cast(null as ' ~ dbt.type_string() ~ ')' }}
            when 'nan_loss' then {{ reason_list([('available.with_loss = 0', 'no loss in the log')]) }}
            when 'no_learning' then {{ reason_list([('available.with_loss < 10', 'fewer than 10 loss values')]) }}
            when 'underfitting' then {{ reason_list([('available.with_loss < 10', 'fewer than 10 loss values')]) }}
            when 'initial_loss_too_high' then {{ reason_list([
                ('available.with_loss < ' ~ threshold('initial_loss_min_points'), 'fewer than ' ~ threshold('initial_loss_min_points') ~ ' loss values')]) }}
            {%- set baseline_reasons = [
                ('config.baseline_run_id is null', 'no baseline run named in the config (baseline_run_id)'),
                ('config.baseline_run_id = config.run_id', 'the config names the run itself as its baseline')] %}
            when 'baseline_divergence' then {{ reason_list(baseline_reasons) }}
            when 'baseline_slowdown' then {{ reason_list(baseline_reasons) }}
        end as reason
    from categories
    -- every check for every run: the seed's categories times the run spine
    cross join config
    inner join available
        on config.run_id = available.run_id
    inner join other_files
        on config.run_id = other_files.run_id
),

final as (
    select
        run_id,
        category,
        (reason is null) as could_run,
        case when reason like '%; ' then substring(reason, 1, length(reason) - 2) else reason end as reason
    from reasons
)

select * from final
