-- Finding: validation data is likely inside training: a training shard whose
-- source names an eval / holdout / test set, or validation loss persistently
-- below the training loss around it (by contamination_min_gap, in at least
-- contamination_min_share of the evaluations after the first). A train/val ratio
-- beyond loss_scale_mismatch_ratio is a scale problem, reported under log_quality.
with

shards as (
    select * from {{ ref('int_shards_scored') }} where grouping_level = 'source'
),

evals as (
    select * from {{ ref('int_evals_compared') }}
    where eval_index > 1 and train_loss_smoothed is not null
),

named_sources as (
    select
        'eval_contamination:source_' || group_key as finding_id,
        group_key as source,
        n_steps,
        first_step,
        last_step,
        share_of_steps,
        mean_relative_excess
    from shards
    where {% for pattern in var('contamination_source_patterns') %}group_key like '{{ pattern }}'{% if not loop.last %} or {% endif %}{% endfor %}
),

gap_summary as (
    select
        count(*) as evals_compared,
        sum(case when train_to_val_ratio >= 1 / (1 - {{ var('contamination_min_gap') }})
            and train_to_val_ratio < {{ var('loss_scale_mismatch_ratio') }} then 1 else 0 end) as evals_below_train,
        min(step) as first_step,
        max(step) as last_step,
        avg(1 - 1 / train_to_val_ratio) as mean_gap,
        max(train_to_val_ratio) as max_ratio
    from evals
),

source_findings as (
    select
        finding_id,
        'eval_contamination' as category,
        'high' as severity,
        'Training data includes source ' || source || ', whose name says it is evaluation/held-out data.' as title,
        'source ' || source || ' (name matches a held-out pattern) fed ' || {{ fmt_int('n_steps') }} || ' training steps ('
            || {{ fmt_pct('share_of_steps') }} || '), steps ' || {{ fmt_int('first_step') }} || '-' || {{ fmt_int('last_step') }}
            || '; its batches ran ' || {{ fmt_pct('mean_relative_excess') }} || ' relative to the loss baseline' as evidence,
        first_step,
        last_step,
        n_steps as steps_affected,
        share_of_steps as observed_value,
        cast(0 as {{ type_double() }}) as expected_value,
        share_of_steps as estimated_cost,
        'share_of_updates' as cost_unit,
        'share of training steps drawn from the held-out-named source' as cost_method,
        least(1.0, 0.5 + share_of_steps) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Remove source ' || source || ' from training (or rename it if it is not held-out data) and re-check validation numbers: they may be optimistic.'
            as recommendation
    from named_sources
),

gap_findings as (
    select
        'eval_contamination:val_below_train' as finding_id,
        'eval_contamination' as category,
        'high' as severity,
        'Validation loss sat below the training loss in ' || {{ fmt_int('evals_below_train') }} || ' of '
            || {{ fmt_int('evals_compared') }} || ' evaluations: validation data may be in the training set.' as title,
        'evaluations after the first with val_loss at least ' || {{ fmt_pct(var('contamination_min_gap'), 0) }}
            || ' below the trailing-median training loss: ' || {{ fmt_int('evals_below_train') }} || ' of '
            || {{ fmt_int('evals_compared') }} || '; mean gap ' || {{ fmt_pct('mean_gap') }} || ' (steps '
            || {{ fmt_int('first_step') }} || '-' || {{ fmt_int('last_step') }} || ')' as evidence,
        first_step,
        last_step,
        evals_below_train as steps_affected,
        mean_gap as observed_value,
        cast(0 as {{ type_double() }}) as expected_value,
        mean_gap as estimated_cost,
        'val_loss_share' as cost_unit,
        'mean relative gap by which validation loss undercuts training loss' as cost_method,
        least(1.0, 0.5 + mean_gap) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Deduplicate the validation set against the training data (exact and near-duplicates) before trusting validation loss.'
            as recommendation
    from gap_summary
    where evals_compared >= 3
        -- too few training losses to compare with (a 1-row log): check_coverage says it could not run
        and (select count(loss) from {{ ref('int_train_steps_resolved') }}) >= {{ var('contamination_min_train_losses') }}
        and {{ safe_divide('evals_below_train', 'evals_compared') }} >= {{ var('contamination_min_share') }}
),

final as (
    select * from source_findings
    union all
    select * from gap_findings
)

select * from final
