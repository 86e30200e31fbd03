-- Finding: the config disagrees with what the logs show (total steps, decay
-- length, eval and checkpoint intervals, shard count, impossible values), one row per
-- disagreement; or declares required fields unknown so checks cannot run, one row for
-- all of them (config_mismatch:unknown_fields: an imported log lacks several at once).
{%- set required = [] %}
{%- for name, path, type, is_required in config_fields() if is_required %}{% do required.append(name) %}{% endfor %}
{#- a required field the config declares unknown: null, and not an impossible value read as null -#}
{%- set unknown = {} %}
{%- for name in required %}{% do unknown.update({name: "config." ~ name ~ " is null and ',' || config.impossible_fields || ',' not like '%," ~ name ~ ",%'"}) %}{% endfor %}
with

config as (
    select * from {{ run_ref('stg_training__config') }}
),

train_steps as (
    select
        run_id,
        max(step) as last_train_step,
        count(*) as counted_steps,
        percentile_cont(0.5) within group (order by step - previous_step) as logging_interval
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

last_eval as (
    select run_id, max(step) as last_eval_step
    from {{ run_ref('int_evals_resolved') }}
    group by run_id
),

last_run_end as (
    select run_id, max(step) as run_end_step
    from {{ run_ref('int_events_classified') }}
    where event_kind = 'run_end'
    group by run_id
),

steps as (
    -- where the run ended: the last train line, the last evaluation or a run-end event, whichever is
    -- latest (a log that writes every N steps can end up to N - 1 steps before the true end);
    -- one row per run (the run spine), as the whole-log aggregate it replaces
    select
        config.run_id,
        greatest(
            train_steps.last_train_step,
            coalesce(last_eval.last_eval_step, train_steps.last_train_step),
            coalesce(last_run_end.run_end_step, train_steps.last_train_step)
        ) as last_step,
        coalesce(train_steps.counted_steps, 0) as counted_steps,
        coalesce(train_steps.logging_interval, 1) as logging_interval
    from config
    left join train_steps
        on config.run_id = train_steps.run_id
    left join last_eval
        on config.run_id = last_eval.run_id
    left join last_run_end
        on config.run_id = last_run_end.run_id
),

eval_gaps as (
    select
        run_id,
        percentile_cont(0.5) within group (order by step - previous_step) as median_gap,
        count(*) as gaps
    from (
        select run_id, step, {{ previous_value('step', 'step', 'run_id') }} as previous_step
        from {{ run_ref('int_evals_resolved') }}
    ) as eval_steps
    where previous_step is not null
    group by run_id
),

checkpoints as (
    select
        saved.run_id,
        count(*) as checkpoint_events,
        percentile_cont(0.5) within group (order by checkpoint_step - previous_checkpoint) as median_gap,
        sum(case when config.checkpoint_interval > 0 and mod(checkpoint_step, config.checkpoint_interval) <> 0 then 1 else 0 end)
            as off_interval
    from (
        select run_id, checkpoint_step, {{ previous_value('checkpoint_step', 'checkpoint_step', 'run_id') }} as previous_checkpoint
        from {{ run_ref('int_events_classified') }}
        where event_kind = 'checkpoint_saved'
    ) as saved
    inner join config
        on saved.run_id = config.run_id
    group by saved.run_id
),

shard_table as (
    select run_id, count(*) as shard_count from {{ run_ref('int_shards_resolved') }} group by run_id
),

unknown_required as (
    select
        run_id,
        substring(unknown_list, 1, length(unknown_list) - 2) as unknown_fields,
        n_unknown
    from (
        select
            run_id,
            {% for name in required -%}
            case when {{ unknown[name] }} then '{{ name }}, ' else '' end{% if not loop.last %} || {% endif %}
            {% endfor %} as unknown_list,
            {% for name in required -%}
            case when {{ unknown[name] }} then 1 else 0 end{% if not loop.last %} + {% endif %}
            {% endfor %} as n_unknown
        from config
    ) as listed
),

checks as (
    select
        config.run_id,
        'total_steps' as field_name,
        'low' as severity,
        'The config says total_steps ' || {{ fmt_int('config.total_steps') }} || ' but the log goes on to step '
            || {{ fmt_int('steps.last_step') }} || '.' as title,
        cast(config.total_steps as {{ type_double() }}) as config_value,
        cast(steps.last_step as {{ type_double() }}) as observed_value,
        'Update total_steps in the config (the schedule and epoch checks use the config value).' as recommendation
    from config
    inner join steps
        on config.run_id = steps.run_id
    -- a log that ends before total_steps is not a config problem: run_ended_early says how it ended
    where config.total_steps is not null
        and steps.last_step - config.total_steps >= greatest(steps.logging_interval, 1)

    union all

    select
        config.run_id,
        'decay_steps',
        'medium',
        'The LR decays over ' || {{ fmt_int('config.decay_steps') }} || ' steps but the run is '
            || {{ fmt_int('coalesce(config.total_steps, steps.last_step)') }} || ' steps long'
            || case when config.decay_steps > coalesce(config.total_steps, steps.last_step)
                then ': it never reaches min_lr.' else ': it sits at min_lr for the rest.' end,
        cast(config.decay_steps as {{ type_double() }}),
        cast(coalesce(config.total_steps, steps.last_step) as {{ type_double() }}),
        'Set decay_steps to the run length unless a constant tail is intended.'
    from config
    inner join steps
        on config.run_id = steps.run_id
    where config.decay_steps is not null
        and abs(config.decay_steps - coalesce(config.total_steps, steps.last_step)) > {{ threshold('decay_length_tolerance') }} * coalesce(config.total_steps, steps.last_step)

    union all

    select
        config.run_id,
        'warmup_steps',
        'high',
        'warmup_steps ' || {{ fmt_int('config.warmup_steps') }} || ' is not shorter than decay_steps '
            || {{ fmt_int('config.decay_steps') }} || ': the schedule never decays.',
        cast(config.warmup_steps as {{ type_double() }}),
        cast(config.decay_steps as {{ type_double() }}),
        'Fix warmup_steps / decay_steps.'
    from config
    where config.warmup_steps >= config.decay_steps

    union all

    select
        config.run_id,
        'min_lr',
        'high',
        'min_lr ' || {{ fmt('config.min_lr', 8) }} || ' is above peak_lr ' || {{ fmt('config.peak_lr', 8) }} || '.',
        config.min_lr,
        config.peak_lr,
        'Fix min_lr / peak_lr.'
    from config
    where config.min_lr > config.peak_lr

    union all

    select
        config.run_id,
        'eval_interval',
        'low',
        'The config says eval_interval ' || {{ fmt_int('config.eval_interval') }} || ' but evaluations came every '
            || {{ fmt('eval_gaps.median_gap', 1) }} || ' steps.',
        cast(config.eval_interval as {{ type_double() }}),
        eval_gaps.median_gap,
        'Align the evaluation schedule with the config (or update the config).'
    from config
    inner join eval_gaps
        on config.run_id = eval_gaps.run_id
    where config.eval_interval is not null and eval_gaps.gaps >= 2 and eval_gaps.median_gap <> config.eval_interval

    union all

    select
        config.run_id,
        'checkpoint_interval',
        'low',
        'The config says checkpoint_interval ' || {{ fmt_int('config.checkpoint_interval') }}
            || ' but checkpoints were saved every ' || {{ fmt('checkpoints.median_gap', 1) }} || ' steps ('
            || {{ fmt_int('checkpoints.off_interval') }} || ' off the interval).',
        cast(config.checkpoint_interval as {{ type_double() }}),
        checkpoints.median_gap,
        'Align the checkpoint schedule with the config; a resume can only go back to a saved step.'
    from config
    inner join checkpoints
        on config.run_id = checkpoints.run_id
    where config.checkpoint_interval is not null and checkpoints.checkpoint_events >= 2
        and (checkpoints.median_gap <> config.checkpoint_interval or checkpoints.off_interval > 0)

    union all

    select
        config.run_id,
        'n_shards',
        'low',
        'The config says n_shards ' || {{ fmt_int('config.n_shards') }} || ' but shard_info lists '
            || {{ fmt_int('shard_table.shard_count') }} || ' shards.',
        cast(config.n_shards as {{ type_double() }}),
        cast(shard_table.shard_count as {{ type_double() }}),
        'Check which shards the data loader really read.'
    from config
    inner join shard_table
        on config.run_id = shard_table.run_id
    where config.n_shards is not null and shard_table.shard_count > 0 and shard_table.shard_count <> config.n_shards

    union all

    select
        config.run_id,
        'impossible_values',
        'medium',
        'The config holds impossible values (' || config.impossible_values || '): the checks that need '
            || replace(config.impossible_fields, ',', ', ') || ' could not run.',
        cast(null as {{ type_double() }}),
        cast(null as {{ type_double() }}),
        'Fix the config: a non-finite value or one at or below zero cannot be what the run used (check_coverage lists the checks it stopped).'
    from config
    where config.impossible_fields <> ''

    union all

    -- the required fields the config declares unknown (null), in one row: one sentence names them all
    select
        run_id,
        'unknown_fields',
        'info',
        'The config lacks ' || unknown_fields || ', so the checks that need '
            || case when n_unknown = 1 then 'it' else 'them' end || ' could not run.',
        cast(null as {{ type_double() }}),
        cast(n_unknown as {{ type_double() }}),
        'Add ' || unknown_fields || ' to the run config (for imported logs: pass '
            || case when n_unknown = 1 then 'it' else 'them' end
            || ' with the training arguments) to enable those checks.'
    from unknown_required
    where n_unknown > 0
),

final as (
    select
        checks.run_id,
        'config_mismatch:' || checks.field_name as finding_id,
        'config_mismatch' as category,
        checks.severity,
        checks.title,
        case when checks.field_name = 'unknown_fields'
            then 'required fields the config declares unknown (null): ' || {{ fmt_int('checks.observed_value') }}
            else 'field ' || checks.field_name || ': config value ' || {{ fmt('checks.config_value', 8) }} || ', observed in the logs '
                || {{ fmt('checks.observed_value', 8) }} || case when checks.field_name = 'impossible_values' then ' (impossible: '
                    || config.impossible_values || ')' else '' end
        end || ' (config file ' || config.config_file_name || ')' as evidence,
        cast(null as {{ dbt.type_bigint() }}) as first_step,
        cast(null as {{ dbt.type_bigint() }}) as last_step,
        cast(0 as {{ dbt.type_bigint() }}) as steps_affected,
        checks.observed_value,
        checks.config_value as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(null as {{ type_double() }}) as estimated_cost,
        'none' as cost_unit,
        'a configuration disagreement has no direct cost; it invalidates the checks that rely on the field' as cost_method,
        case checks.severity when 'high' then 0.3 when 'medium' then 0.1 when 'low' then 0.02 else 0 end as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        checks.recommendation
    from checks
    inner join config
        on checks.run_id = config.run_id
)

select * from final
