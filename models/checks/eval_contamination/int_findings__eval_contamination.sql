-- Finding: validation data is likely inside training: a training shard whose
-- source names an eval / holdout / test set; the evaluation set the same size
-- as the training set (the run's own eval_samples = train_samples); a dataset
-- file that names the same data for validation as for training (the config's
-- train_data = eval_data: an Ultralytics data YAML whose val is its train); validation
-- loss equal to the training loss logged at the same step on several
-- evaluations; or validation loss persistently below the training loss around it
-- (by contamination_min_gap, in at least contamination_min_share of the
-- evaluations after the first). The last alone is weak evidence (dropout,
-- augmentation and a training loss averaged over a logging window while the model
-- improves all put validation below training), so it is low; high needs one of
-- the strong signals. A train/val ratio beyond loss_scale_mismatch_ratio is a
-- scale problem, reported under log_quality.
with

shards as (
    select * from {{ run_ref('int_shards_scored') }} where grouping_level = 'source'
),

evals as (
    select * from {{ run_ref('int_evals_compared') }}
    where eval_index > 1 and train_loss_smoothed is not null
),

train_points as (
    select run_id, step, loss from {{ run_ref('int_train_steps_resolved') }} where loss is not null
),

train_loss_counts as (
    select run_id, count(loss) as train_losses from {{ run_ref('int_train_steps_resolved') }} group by run_id
),

all_evals as (
    select run_id, step, val_loss, train_loss_smoothed, eval_index, eval_count from {{ run_ref('int_evals_compared') }}
),

exact_matches as (
    -- evaluations whose loss equals the training loss logged at the same step (the same batches), out
    -- of the evaluations that have a training loss at their step
    select
        all_evals.run_id,
        count(*) as paired_evals,
        sum(case when abs(all_evals.val_loss - train_points.loss)
            <= {{ threshold('contamination_exact_tolerance') }} * greatest(abs(all_evals.val_loss), {{ threshold('contamination_exact_tolerance') }})
            then 1 else 0 end) as exact_evals
    from all_evals
    inner join train_points
        on all_evals.run_id = train_points.run_id
        and all_evals.step = train_points.step
    group by all_evals.run_id
),

sample_counts as (
    -- the run spine: one row per run
    select
        run_id,
        {{ parse_integer(json_text('config_json', '$.train_samples')) }} as train_samples,
        {{ parse_integer(json_text('config_json', '$.eval_samples')) }} as eval_samples,
        {{ json_text('config_json', '$.train_data') }} as train_data,
        {{ json_text('config_json', '$.eval_data') }} as eval_data
    from {{ run_ref('stg_training__config') }}
),

last_eval as (
    select run_id, step, val_loss, train_loss_smoothed from all_evals where eval_index = eval_count
),

strong_evidence as (
    select
        sample_counts.run_id,
        coalesce(exact_matches.exact_evals, 0) as exact_evals,
        coalesce(exact_matches.paired_evals, 0) as paired_evals,
        sample_counts.train_samples,
        sample_counts.eval_samples,
        last_eval.step as last_eval_step,
        last_eval.val_loss as last_val_loss,
        last_eval.train_loss_smoothed as last_train_loss,
        coalesce(sample_counts.train_samples = sample_counts.eval_samples, false) as is_same_sample_count,
        sample_counts.train_data,
        coalesce(sample_counts.train_data = sample_counts.eval_data, false) as is_same_data,
        -- evaluated on the training batches, every evaluation scores what training did; a few equal
        -- among many are values printed with few digits that coincide
        coalesce(exact_matches.exact_evals, 0) >= {{ threshold('contamination_exact_min_evals') }}
            and coalesce(exact_matches.exact_evals, 0) >= {{ threshold('contamination_exact_min_share') }} * exact_matches.paired_evals
            as is_exact_match
    from sample_counts
    left join exact_matches
        on sample_counts.run_id = exact_matches.run_id
    left join last_eval
        on sample_counts.run_id = last_eval.run_id
),

named_sources as (
    select
        run_id,
        'eval_contamination:source_' || group_key as finding_id,
        group_key as source,
        n_steps,
        first_step,
        last_step,
        share_of_steps,
        mean_relative_excess
    from shards
    where {% for pattern in (threshold('contamination_source_patterns') if execute else []) %}group_key like '{{ pattern }}'{% if not loop.last %} or {% endif %}{% endfor %}
),

gap_summary as (
    select
        run_id,
        count(*) as evals_compared,
        sum(case when train_to_val_ratio >= 1 / (1 - {{ threshold('contamination_min_gap') }})
            and train_to_val_ratio < {{ threshold('loss_scale_mismatch_ratio') }} then 1 else 0 end) as evals_below_train,
        min(step) as first_step,
        max(step) as last_step,
        {{ stable_avg('1 - 1 / train_to_val_ratio') }} as mean_gap,
        max(train_to_val_ratio) as max_ratio
    from evals
    group by run_id
),

source_findings as (
    select
        run_id,
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
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        share_of_steps as estimated_cost,
        'share_of_updates' as cost_unit,
        'share of training steps drawn from the held-out-named source' as cost_method,
        least(1.0, 0.5 + share_of_steps) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Remove source ' || source || ' from training (or rename it if it is not held-out data) and re-check validation numbers: they may be optimistic.'
            as recommendation
    from named_sources
),

strong_findings as (
    -- the evaluation set is the training set (same size, or the same data named by its dataset file) or
    -- scores exactly what training scored
    select
        run_id,
        'eval_contamination:eval_is_train' as finding_id,
        'eval_contamination' as category,
        -- a dataset file that names the training data for validation too is certain but says nothing of
        -- how far the numbers are off (a demo set such as coco128 does it by design): medium alone
        case when is_exact_match or (is_same_sample_count and coalesce(last_val_loss <= last_train_loss, false)) then 'high'
            else 'medium' end as severity,
        case when is_same_data
            then 'The validation data is the training data (' || train_data
                || '): every validation number of this run scores images or examples it trained on, so none says how it does on held-out data.'
            when is_same_sample_count
            then 'The evaluation set has as many samples as the training set (' || {{ fmt_int('eval_samples') }}
                || '): the run most likely evaluated on its training data, so its validation numbers say nothing about held-out data.'
            else 'Validation loss equalled the training loss at the same step on ' || {{ fmt_int('exact_evals') }}
                || ' evaluations: the evaluation batches are the training batches.'
        end as title,
        case when is_same_data then 'the dataset file names ' || train_data || ' for both training and validation; ' else '' end
            || 'train_samples ' || coalesce({{ fmt_int('train_samples') }}, 'unknown') || ', eval_samples '
            || coalesce({{ fmt_int('eval_samples') }}, 'unknown') || '; evaluations equal to the training loss at the same step (within '
            || {{ threshold('contamination_exact_tolerance') }} || ' relative): ' || {{ fmt_int('exact_evals') }}
            || ' of the ' || {{ fmt_int('paired_evals') }} || ' with a training loss there'
            || coalesce('; last evaluation (step ' || {{ fmt_int('last_eval_step') }} || ') val_loss ' || {{ fmt('last_val_loss', 4) }}
                || ' vs training loss ' || {{ fmt('last_train_loss', 4) }}, '') as evidence,
        last_eval_step as first_step,
        last_eval_step as last_step,
        coalesce(exact_evals, 0) as steps_affected,
        last_val_loss as observed_value,
        last_train_loss as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        cast(1 as {{ type_double() }}) as estimated_cost,
        'val_loss_share' as cost_unit,
        'the whole validation signal is uninformative when the evaluation data is the training data' as cost_method,
        0.9 as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Evaluate on a held-out split (check the eval dataset argument and the split names); until then treat every validation number of this run as a training number.'
            as recommendation
    from strong_evidence
    where is_same_sample_count or is_exact_match or is_same_data
),

gap_findings as (
    -- weak alone: regularisation (dropout, augmentation) and a training loss averaged over
    -- the logging window both put validation below training in healthy runs
    select
        gap_summary.run_id,
        'eval_contamination:val_below_train' as finding_id,
        'eval_contamination' as category,
        'low' as severity,
        'Validation loss sat below the training loss in ' || {{ fmt_int('evals_below_train') }} || ' of '
            || {{ fmt_int('evals_compared') }} || ' evaluations; usual with dropout/augmentation or a window-averaged training loss, a leak only if other evidence agrees.' as title,
        'evaluations after the first with val_loss at least ' || {{ fmt_pct(threshold('contamination_min_gap'), 0) }}
            || ' below the trailing-median training loss: ' || {{ fmt_int('evals_below_train') }} || ' of '
            || {{ fmt_int('evals_compared') }} || '; mean gap ' || {{ fmt_pct('mean_gap') }} || ' (steps '
            || {{ fmt_int('first_step') }} || '-' || {{ fmt_int('last_step') }} || '); no strong sign of leakage '
            || '(eval set the size of the training set, or val equal to train at the same step), so this stays low'
            as evidence,
        gap_summary.first_step,
        gap_summary.last_step,
        evals_below_train as steps_affected,
        mean_gap as observed_value,
        cast(0 as {{ type_double() }}) as expected_value,
        cast(null as {{ type_double() }}) as threshold_value,
        cast(null as {{ dbt.type_string() }}) as threshold_name,
        mean_gap as estimated_cost,
        'val_loss_share' as cost_unit,
        'mean relative gap by which validation loss undercuts training loss' as cost_method,
        least(0.2, mean_gap) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'If the model has no dropout/augmentation and the training loss is not a window average, deduplicate the validation set against the training data (exact and near-duplicates) before trusting validation loss.'
            as recommendation
    from gap_summary
    inner join strong_evidence
        on gap_summary.run_id = strong_evidence.run_id
    left join train_loss_counts
        on gap_summary.run_id = train_loss_counts.run_id
    where evals_compared >= {{ threshold('contamination_min_evals') }}
        -- too few training losses to compare with (a 1-row log): check_coverage says it could not run
        and coalesce(train_loss_counts.train_losses, 0) >= {{ threshold('contamination_min_train_losses') }}
        and not strong_evidence.is_same_sample_count
        and not strong_evidence.is_exact_match
        and {{ safe_divide('evals_below_train', 'evals_compared') }} >= {{ threshold('contamination_min_share') }}
),

final as (
    select * from source_findings
    union all
    select * from strong_findings
    union all
    select * from gap_findings
)

select * from final
