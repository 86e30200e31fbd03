-- Finding: the logs themselves are unreliable. One row per kind of defect
-- (accuracy logged in percent, an evaluation logged twice with different values,
-- missing or unreadable values, placeholder validation losses of 0, shard ids the shard table does not know, label
-- variants, repeated shard rows, duplicate events, unrecognised events, a log every record of
-- which was written several times over (an importer's log_written_several_times event), training
-- and validation loss on different scales, a validation that no labelled box reached), with counts and
-- what was done.
with

train_rows as (
    select * from {{ run_ref('stg_training__steps') }}
),

counted as (
    select * from {{ run_ref('int_train_rows_resolved') }} where is_counted
),

counted_extent as (
    -- the rows read, their first and last step (a log written several times over: each record once)
    select run_id, min(step) as first_step, max(step) as last_step, count(*) as counted_rows
    from counted
    group by run_id
),

known_shards as (
    select run_id, shard_id from {{ run_ref('int_shards_resolved') }}
),

known_shard_counts as (
    select run_id, count(*) as known_shards from known_shards group by run_id
),

eval_rows as (
    select * from {{ run_ref('stg_training__evals') }}
),

shard_rows as (
    select * from {{ run_ref('stg_training__shards') }}
),

event_rows as (
    select * from {{ run_ref('stg_training__events') }}
),

event_kinds as (
    select * from {{ run_ref('int_events_classified') }}
),

evals_compared as (
    select * from {{ run_ref('int_evals_compared') }} where eval_index > 1
),

totals as (
    select run_id, count(*) as raw_rows from train_rows group by run_id
),

eval_totals as (
    select
        run_id,
        count(*) as raw_rows,
        min(case when val_loss > 0 then val_loss end) as lowest_real_loss,
        max(case when val_loss > 0 then val_loss end) as highest_real_loss,
        sum(case when val_loss > 0 then 1 else 0 end) as real_losses
    from eval_rows
    group by run_id
),

restarts as (
    select run_id, resume_step, crashed_after_step from {{ run_ref('int_restarts_detected') }} where is_seen_in_log
),

untargeted_validation as (
    -- validation that no labelled box reached: its box-regression loss term(s) exactly 0 at every
    -- evaluation while another of its terms is not (the importer's val_zero_loss_terms), with the
    -- detector's mAP over those evaluations
    select
        config.run_id,
        config.val_zero_loss_terms,
        count(eval_rows.step) as evaluations,
        min(eval_rows.step) as first_step,
        max(eval_rows.step) as last_step,
        max(eval_rows.val_map50) as best_map50
    from {{ run_ref('stg_training__config') }} as config
    inner join eval_rows
        on config.run_id = eval_rows.run_id
    where config.val_zero_loss_terms is not null
    group by config.run_id, config.val_zero_loss_terms
),

row_defects as (
    select run_id, file_kind, file_row_number, defect from {{ run_ref('int_raw_row_defects') }}
),

{#- the rows carrying one defect of the catalogue (macros/raw_row_defects.sql): (CTE, rows, file, defect) -#}
{%- set defect_rows = [
    ('evals_in_percent', 'eval_rows', 'eval', 'accuracy_percent'),
    ('evals_step_repeated', 'eval_rows', 'eval', 'step_repeated'),
    ('unknown_shard_rows', 'train_rows', 'train', 'shard_id_unknown'),
    ('counted_with_non_positive_time', 'counted', 'train', 'step_time_non_positive'),
    ('shard_rows_with_label_variant', 'shard_rows', 'shards', 'source_label_variant'),
] %}
{%- for name, rows, file_kind, defect in defect_rows %}

{{ name }} as (
    select {{ rows }}.*
    from {{ rows }}
    inner join row_defects
        on {{ rows }}.run_id = row_defects.run_id
        and {{ rows }}.file_row_number = row_defects.file_row_number
    where row_defects.file_kind = '{{ file_kind }}' and row_defects.defect = '{{ defect }}'
),
{%- endfor %}

{%- set gap_columns = ['loss', 'grad_norm', 'learning_rate', 'step_time_sec', 'shard_id'] %}

row_gaps as (
    -- per train row with a defect, 1 where a value is missing (empty) or a gap (empty or not a number)
    select
        run_id,
        file_row_number,
        {%- for column in gap_columns %}
        max(case when defect = '{{ column }}_missing' then 1 else 0 end) as {{ column }}_missing,
        max(case when defect in ('{{ column }}_missing', '{{ column }}_non_numeric') then 1 else 0 end) as {{ column }}_gap
            {{- ',' if not loop.last }}
        {%- endfor %}
    from row_defects
    where file_kind = 'train'
    group by run_id, file_row_number
),

counted_gaps as (
    select
        counted.run_id,
        counted.step,
        -- formats that derive step time from elapsed-time deltas cannot time the first logged step
        (counted.step > counted_extent.first_step) as is_after_first_step,
        {%- for column in gap_columns %}
        coalesce(row_gaps.{{ column }}_missing, 0) as {{ column }}_missing,
        coalesce(row_gaps.{{ column }}_gap, 0) as {{ column }}_gap{{ ',' if not loop.last }}
        {%- endfor %}
    from counted
    inner join counted_extent
        on counted.run_id = counted_extent.run_id
    left join row_gaps
        on counted.run_id = row_gaps.run_id
        and counted.file_row_number = row_gaps.file_row_number
),

issues as (
    select
        run_id,
        'accuracy_percent' as issue_key,
        'low' as severity,
        {{ fmt_int('count(*)') }} || ' evaluation(s) logged val_accuracy in percent instead of a share (steps '
            || {{ dbt.listagg(fmt_int('step'), "', '", "order by step") }} || ').' as title,
        'values ' || {{ dbt.listagg(fmt('val_accuracy_logged', 4), "', '", "order by step, val_accuracy_logged") }}
            || ' are above 1, so they can only be percent: divided by 100; the rest of the file logs shares' as evidence,
        min(step) as first_step,
        max(step) as last_step,
        count(*) as affected,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Log val_accuracy in one unit (a share 0..1) everywhere.' as recommendation
    from evals_in_percent
    group by run_id
    having count(*) > 0

    union all

    select
        eval_rows.run_id,
        'eval_step_repeated',
        'medium',
        {{ fmt_int('count(distinct eval_rows.step)') }} || ' evaluation step(s) were logged more than once with different values (step '
            || {{ dbt.listagg(fmt_int('eval_rows.step') ~ " || ': val_loss ' || " ~ fmt('eval_rows.val_loss', 4), "', '", "order by eval_rows.file_row_number") }}
            || ').',
        'rows for the same step disagree; the later row in the file is used (measured on the weights the run kept)'
            || case when max(restarts.resume_step) is not null then '; the step lies in the range replayed after the resume at step '
                || {{ fmt_int('max(restarts.resume_step)') }} || ', so the first value was measured on discarded weights' else '' end,
        min(eval_rows.step),
        max(eval_rows.step),
        count(*),
        case when max(restarts.resume_step) is not null then 'run_restart:' || {{ fmt_int('max(restarts.resume_step)') }} end,
        'Mark evaluations with the attempt that produced them, or drop the crashed attempt''s rows when resuming.'
    from evals_step_repeated as eval_rows
    left join restarts
        on eval_rows.run_id = restarts.run_id
        and eval_rows.step between restarts.resume_step - 1 and restarts.crashed_after_step
    -- an exact copy is set aside, not a second evaluation
    where not eval_rows.is_exact_duplicate
    group by eval_rows.run_id
    having count(*) > 0

    union all

    select
        eval_rows.run_id,
        'val_loss_placeholders',
        case when count(*) >= {{ threshold('log_defect_medium_share') }} * max(eval_totals.raw_rows) then 'medium' else 'low' end,
        {{ fmt_int('count(*)') }} || ' of ' || {{ fmt_int('max(eval_totals.raw_rows)') }}
            || ' evaluation(s) logged a validation loss of exactly 0 (steps ' || {{ fmt_int('min(eval_rows.step)') }}
            || '-' || {{ fmt_int('max(eval_rows.step)') }} || '): placeholders, not measurements.',
        case when max(eval_totals.real_losses) > 0
            then 'the run''s other ' || {{ fmt_int('max(eval_totals.real_losses)') }} || ' validation losses lie between '
                || {{ fmt('max(eval_totals.lowest_real_loss)', 4) }} || ' and ' || {{ fmt('max(eval_totals.highest_real_loss)', 4) }}
                || ' (a real curve reaches 0 through values below ' || {{ threshold('val_loss_placeholder_min_positive') }} || ')'
            else 'no evaluation logged a positive loss'
        end || ': a logger writes 0 when no validation ran; the rows are set aside, and the validation checks use the real evaluations only',
        min(eval_rows.step),
        max(eval_rows.step),
        count(*),
        cast(null as {{ dbt.type_string() }}),
        'Run validation on the epochs you want judged (or log nothing there): a 0 reads as a perfect model.'
    from eval_rows
    inner join eval_totals
        on eval_rows.run_id = eval_totals.run_id
    where eval_rows.is_val_loss_placeholder
    group by eval_rows.run_id
    having count(*) > 0

    union all

    select
        unknown_shard_rows.run_id,
        'unknown_shard_ids',
        'low',
        {{ fmt_int('count(*)') }} || ' train row(s) name shard ids that shard_info does not list ('
            || {{ dbt.listagg("'shard ' || unknown_shard_rows.shard_id || ' at step ' || " ~ fmt_int('unknown_shard_rows.step'), "', '", "order by unknown_shard_rows.file_row_number") }} || ').',
        'rows with a shard id missing from shard_info: their source is unknown; '
            || {{ fmt_int('sum(case when counted.train_row_id is null then 1 else 0 end)') }}
            || ' of them are not counted (superseded or set aside) and do not affect the results',
        min(unknown_shard_rows.step),
        max(unknown_shard_rows.step),
        count(*),
        cast(null as {{ dbt.type_string() }}),
        'Check the data loader''s shard index against shard_info; a shard id outside the table can mean a wrong mapping.'
    from unknown_shard_rows
    -- only runs whose shard table lists shards
    inner join known_shard_counts
        on unknown_shard_rows.run_id = known_shard_counts.run_id
    left join counted
        on unknown_shard_rows.run_id = counted.run_id
        and unknown_shard_rows.train_row_id = counted.train_row_id
    where known_shard_counts.known_shards > 0
    group by unknown_shard_rows.run_id
    having count(*) > 0

    {% for column in gap_columns %}
    union all

    select
        run_id,
        'missing_{{ column }}',
        case when sum({{ column }}_missing) >= {{ threshold('log_defect_medium_share') }} * count(*) then 'medium' else 'low' end,
        {{ fmt_int('sum(' ~ column ~ '_gap)') }} || ' counted step(s) have no readable {{ column }} (e.g. step '
            || {{ fmt_int('min(case when ' ~ column ~ '_gap = 1 then step end)') }} || ').',
        'empty or unreadable {{ column }} values are read as missing and left out of the checks that need them; '
            || 'the rest of the run logs it, so these are gaps, not a format limit',
        min(case when {{ column }}_gap = 1 then step end),
        max(case when {{ column }}_gap = 1 then step end),
        sum({{ column }}_gap),
        cast(null as {{ dbt.type_string() }}),
        'Find why the logger wrote no {{ column }} on those steps.'
    from counted_gaps
    {%- if column == 'step_time_sec' %}
    where is_after_first_step
    {%- endif %}
    group by run_id
    having sum({{ column }}_gap) > 0 and sum({{ column }}_missing) < count(*)
    {% endfor %}

    union all

    select
        train_rows.run_id,
        'train_rows_set_aside',
        case when count(*) >= {{ threshold('log_defect_medium_share') }} * max(totals.raw_rows) then 'medium' else 'low' end,
        {{ fmt_int('count(*)') }} || ' train row(s) were set aside because their step cannot be trusted ('
            || min(set_aside_reason) || case when count(distinct set_aside_reason) > 1 then '; and other reasons' else '' end || ').',
        'file rows ' || {{ fmt_int('min(file_row_number)') }} || '-' || {{ fmt_int('max(file_row_number)') }}
            || ' of the train log; reasons (row counts per reason are in audit_summary): ' || min(set_aside_reason)
            || case when count(distinct set_aside_reason) > 1 then ' ... ' || max(set_aside_reason) else '' end,
        cast(null as {{ dbt.type_bigint() }}), cast(null as {{ dbt.type_bigint() }}), count(*),
        cast(null as {{ dbt.type_string() }}),
        'Fix the logger''s step counter (or the file) and rerun the diagnosis; the set-aside rows are not in any check.'
    from train_rows
    inner join totals
        on train_rows.run_id = totals.run_id
    where set_aside_reason is not null
    group by train_rows.run_id
    having count(*) > 0

    union all

    select
        run_id,
        'non_positive_step_time',
        'low',
        {{ fmt_int('count(*)') }} || ' counted step(s) logged a zero or negative step_time_sec.',
        'step times <= 0 are impossible: left out of the timing checks',
        min(step), max(step), count(*),
        cast(null as {{ dbt.type_string() }}),
        'Check the step timer (clock source, asynchronous CUDA timing).'
    from counted_with_non_positive_time
    group by run_id
    having count(*) > 0

    union all

    select
        run_id,
        'source_label_variants',
        'low',
        {{ fmt_int('count(*)') }} || ' shard row(s) spell their source differently (case or spaces): '
            || {{ dbt.listagg("'\"' || source_raw || '\" -> ' || source", "', '", "order by file_row_number") }} || '.',
        'labels normalised (trimmed, lower case) so per-source numbers group correctly',
        cast(null as {{ dbt.type_bigint() }}), cast(null as {{ dbt.type_bigint() }}), count(*),
        cast(null as {{ dbt.type_string() }}),
        'Write source labels from one controlled list.'
    from shard_rows_with_label_variant
    group by run_id
    having count(*) > 0

    union all

    select
        run_id,
        'duplicate_shard_rows',
        case when max(case when is_conflicting_duplicate then 1 else 0 end) = 1 then 'medium' else 'low' end,
        {{ fmt_int('count(*)') }} || ' shard_info row(s) repeat a shard id ('
            || {{ dbt.listagg("'shard ' || shard_id", "', '", "order by file_row_number") }} || ')'
            || case when max(case when is_conflicting_duplicate then 1 else 0 end) = 1 then ' with contradicting values.' else ', with the same values once normalised.' end,
        'the first row per shard is used; later rows set aside',
        cast(null as {{ dbt.type_bigint() }}), cast(null as {{ dbt.type_bigint() }}), count(*),
        cast(null as {{ dbt.type_string() }}),
        'Keep one row per shard in shard_info.'
    from shard_rows
    where is_duplicate_shard_row
    group by run_id
    having count(*) > 0

    union all

    select
        run_id,
        'duplicate_events',
        'low',
        {{ fmt_int('count(*)') }} || ' event row(s) are exact duplicates.',
        'counted once',
        min(step), max(step), count(*),
        cast(null as {{ dbt.type_string() }}),
        'Make the event logger write each event once.'
    from event_rows
    where is_exact_duplicate
    group by run_id
    having count(*) > 0

    union all

    select
        event_kinds.run_id,
        'written_several_times',
        'low',
        'Every record of the log was written several times over: several processes (one per GPU) each write every line.',
        min(event_kinds.event_text),
        min(event_kinds.step), max(counted_extent.last_step), max(counted_extent.counted_rows),
        cast(null as {{ dbt.type_string() }}),
        'Log from the main process only (if trainer.is_global_zero, accelerator.is_main_process, rank 0); the copies were read once, so nothing here is counted twice.'
    from event_kinds
    inner join counted_extent
        on event_kinds.run_id = counted_extent.run_id
    where event_kinds.event_kind = 'log_written_several_times'
    group by event_kinds.run_id

    union all

    select
        run_id,
        'unrecognised_events',
        'info',
        {{ fmt_int('count(*)') }} || ' event(s) match no pattern in event_patterns and were read as kind other.',
        'events: ' || {{ dbt.listagg("'step ' || " ~ fmt_int('step') ~ " || ': ' || event_text", "'; '", "order by step, event_text") }},
        min(step), max(step), count(*),
        cast(null as {{ dbt.type_string() }}),
        'If one of them is a crash, restart or checkpoint, add a line to seeds/reference/event_patterns.csv.'
    from event_kinds
    where event_kind = 'other'
    group by run_id
    having count(*) > 0

    union all

    select
        run_id,
        'validation_without_targets',
        'medium',
        'Validation compared no labelled object: its box loss is exactly 0 at all ' || {{ fmt_int('evaluations') }} || ' evaluations'
            || case when best_map50 = 0 then ', and its mAP is 0 at every one.' else '.' end,
        'validation box-regression term(s) ' || val_zero_loss_terms || ' exactly 0 on every row while the split''s other loss terms are not:'
            || ' a box term is computed over predictions matched to labelled boxes, so it is 0 only where none reached the loss'
            || ' (a validation set without labels, labels the loader rejects, or a class filter that leaves none)'
            || coalesce('; best validation mAP50 ' || {{ fmt('best_map50', 4) }}, '')
            || '; the validation loss and mAP measure nothing here, so the detection-score verdict is not given',
        first_step, last_step, evaluations,
        cast(null as {{ dbt.type_string() }}),
        'Check the validation labels: the folder the data config names for val holds one label file per image in the trainer''s format (YOLO: labels/ beside images/, normalised boxes); until then, judge the detector on a labelled split.'
    from untargeted_validation

    union all

    select
        run_id,
        'loss_scale_mismatch',
        'medium',
        'Training loss is ' || {{ fmt('percentile_cont(0.5) within group (order by train_to_val_ratio)', 1) }}
            || 'x the validation loss: the two are not on the same scale.',
        'median train/val ratio over ' || {{ fmt_int('count(*)') }} || ' evaluations '
            || {{ fmt('percentile_cont(0.5) within group (order by train_to_val_ratio)', 2) }}
            || ' (threshold ' || {{ threshold('loss_scale_mismatch_ratio') }}
            || '): the training loss is probably not normalised (summed over gradient accumulation or tokens); comparisons between them are meaningless',
        min(step), max(step), count(*),
        cast(null as {{ dbt.type_string() }}),
        'Log the training loss averaged the same way as the validation loss.'
    from evals_compared
    group by run_id
    having count(*) >= 2
        and percentile_cont(0.5) within group (order by train_to_val_ratio) >= {{ threshold('loss_scale_mismatch_ratio') }}
),

scale_ratio as (
    select run_id, percentile_cont(0.5) within group (order by train_to_val_ratio) as median_ratio
    from evals_compared
    group by run_id
),

final as (
    select
        issues.run_id,
        'log_quality:' || issues.issue_key as finding_id,
        'log_quality' as category,
        severity,
        title,
        evidence,
        first_step,
        last_step,
        affected as steps_affected,
        case when issue_key = 'loss_scale_mismatch' then scale_ratio.median_ratio
            else cast(affected as {{ type_double() }}) end as observed_value,
        case when issue_key = 'loss_scale_mismatch' then {{ threshold('loss_scale_mismatch_ratio') }}
            else cast(0 as {{ type_double() }}) end as expected_value,
            cast(null as {{ type_double() }}) as threshold_value,
            cast(null as {{ dbt.type_string() }}) as threshold_name,
        {{ log_rows_cost('affected', 'totals.raw_rows', 'count of rows affected; what was done with each is in audit_summary') }},
        caused_by,
        recommendation
    from issues
    left join scale_ratio
        on issues.run_id = scale_ratio.run_id
    left join totals
        on issues.run_id = totals.run_id
)

select * from final
