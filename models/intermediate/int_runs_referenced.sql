-- One row per run: the loss a uniform guess would score (the chance level), where it
-- comes from and how sure it is, the run's own start (its first losses and first
-- evaluations) and what that start says about the run: trained from scratch (it starts
-- near the chance level) or fine-tuned (it starts far below it).
--
-- The chance level, first source that applies:
--   num_classes   ln(classes) from the config (high): a count the config states (num_classes,
--                 or a label map beside a classification head: num_classes_basis = stated)
--                 at any start; a bare label map (num_labels/id2label, in every Hugging Face
--                 config) only when the run's start is consistent with it: a fresh k-class
--                 head starts near ln k, so a start above reference_class_max_start_ratio x
--                 ln k means the map describes something else (a language model's config)
--   vocab_size    ln(vocabulary) from the config (high)
--   tokenizer or model name   ln(vocabulary) of the family the seed tokenizer_vocab_sizes
--                 matches (medium: a family's variants differ, by up to 13% in ln V)
--                 (neither for a classifier, output_head = classifier: its new head predicts
--                 classes, not the tokens of the backbone the vocabulary and names describe)
--   start_at_ln_classes   ln k when the run's start lies within reference_start_class_tolerance
--                 of ln k for a small k (2 .. reference_start_max_classes): a fresh k-class head
--                 (medium: the level is exact, the class count inferred from the start)
--   first_eval_uniform   ln k when the first evaluation scores both what a uniform guess over k
--                 classes scores: a loss within reference_start_class_tolerance of ln k (k the
--                 nearest whole number to e^loss) and an accuracy within a factor
--                 reference_uniform_accuracy_ratio of 1/k. A loss alone cannot say k beyond 4 (the
--                 levels crowd); an accuracy near 1/k at the same evaluation says it independently:
--                 predictions that carry information raise the accuracy above e^-loss (medium)
--   first_loss    the first loss itself, when it lies between ln(reference_min_vocab_size)
--                 and ln(initial_loss_max_vocab_size): a randomly initialised language model
--                 starts at about ln V (low: the first logged loss may come after some steps);
--                 not for a classifier, whose fresh head starts near ln(classes)
with

config as (
    -- one row per run: the run spine
    select run_id, vocab_size, num_classes, num_classes_basis, output_head, tokenizer_name, model_name
    from {{ run_ref('stg_training__config') }}
),

losses as (
    -- the first finite losses: only the run's first steps are sorted (step_index is the counted
    -- step's position), not the whole log
    select
        run_id,
        step,
        loss,
        row_number() over (partition by run_id order by step rows between unbounded preceding and current row) as position
    from {{ run_ref('int_train_steps_resolved') }}
    where loss is not null and not coalesce(is_loss_non_finite, false)
        and step_index <= {{ threshold('reference_start_search_rows') }}
),

train_start as (
    select
        run_id,
        min(case when position = 1 then step end) as first_train_step,
        max(case when position = 1 then loss end) as first_train_loss,
        percentile_cont(0.5) within group (order by case when position <= {{ threshold('progress_start_points') }} then loss end)
            as start_loss
    from losses
    where position <= {{ threshold('progress_start_points') }}
    group by run_id
),

extent as (
    -- where the log starts against how often it logs: a log that starts many logging intervals in
    -- (and a tenth of the way) is the continuation of an earlier run, resumed from its checkpoint
    select
        run_id,
        min(step) as first_counted_step,
        max(step) as last_counted_step,
        {{ safe_divide('max(step) - min(step)', 'count(*) - 1') }} as mean_log_interval
    from {{ run_ref('int_train_steps_resolved') }}
    group by run_id
),

evals as (
    select run_id, step, val_loss, val_accuracy, eval_index, eval_count, is_best
    from {{ run_ref('int_evals_compared') }}
    where val_loss is not null
),

eval_start as (
    select
        run_id,
        max(eval_count) as eval_count,
        min(case when eval_index = 1 then step end) as first_eval_step,
        max(case when eval_index = 1 then val_loss end) as first_val_loss,
        max(case when eval_index = 1 then val_accuracy end) as first_val_accuracy,
        max(case when is_best then step end) as best_eval_step,
        max(case when is_best then val_loss end) as best_val_loss
    from evals
    group by run_id
),

named as (
    -- the name the vocabulary is looked up by: the tokenizer's, else the model's
    select
        run_id,
        coalesce(tokenizer_name, model_name) as reference_name,
        case when tokenizer_name is not null then 'tokenizer_name' when model_name is not null then 'model_name' end
            as name_key
    from config
),

name_matches as (
    select
        named.run_id,
        named.reference_name,
        named.name_key,
        vocab_table.vocab_size,
        vocab_table.family,
        vocab_table.source,
        row_number() over (
            partition by named.run_id order by vocab_table.priority, vocab_table.pattern_id
            rows between unbounded preceding and current row
        ) as match_rank
    from named
    inner join {{ ref('tokenizer_vocab_sizes') }} as vocab_table
        on lower(named.reference_name) like vocab_table.match_pattern
),

joined as (
    select
        config.run_id,
        config.vocab_size,
        config.num_classes,
        config.num_classes_basis,
        coalesce(config.output_head = 'classifier', false) as is_classifier_head,
        named.reference_name,
        named.name_key,
        name_matches.vocab_size as name_vocab_size,
        name_matches.family as name_family,
        name_matches.source as name_source,
        train_start.first_train_step,
        train_start.first_train_loss,
        train_start.start_loss,
        coalesce(eval_start.eval_count, 0) as eval_count,
        eval_start.first_eval_step,
        eval_start.first_val_loss,
        eval_start.first_val_accuracy,
        eval_start.best_eval_step,
        eval_start.best_val_loss,
        coalesce(
            extent.first_counted_step >= {{ threshold('continuation_min_log_intervals') }} * extent.mean_log_interval
                and extent.first_counted_step >= {{ threshold('continuation_min_run_share') }} * extent.last_counted_step,
            false
        ) as is_continuation,
        -- the first loss the model was scored at, and the start judged against the chance level: an
        -- evaluation at or before the first train step (the model as initialised) when there is one,
        -- else the first train loss and the median of the first progress_start_points of them
        case when eval_start.first_eval_step <= coalesce(train_start.first_train_step, eval_start.first_eval_step)
            then eval_start.first_val_loss else train_start.first_train_loss end as first_loss,
        case when eval_start.first_eval_step <= coalesce(train_start.first_train_step, eval_start.first_eval_step)
            then eval_start.first_val_loss else train_start.start_loss end as judged_start_loss
    from config
    left join named
        on config.run_id = named.run_id
    left join name_matches
        on config.run_id = name_matches.run_id
        and name_matches.match_rank = 1
    left join train_start
        on config.run_id = train_start.run_id
    left join eval_start
        on config.run_id = eval_start.run_id
    left join extent
        on config.run_id = extent.run_id
),

start_matched as (
    -- the class count a start at ln k says, k = 2 .. reference_start_max_classes: a fresh k-class
    -- head starts at ln k, and these few levels lie far enough apart that a start within
    -- reference_start_class_tolerance of one of them is no coincidence
    select
        *,
        case
            {%- for k in range(2, threshold('reference_start_max_classes') + 1) %}
            when abs(judged_start_loss - ln({{ k }}.0)) <= {{ threshold('reference_start_class_tolerance') }} * ln({{ k }}.0) then {{ k }}
            {%- endfor %}
        end as start_classes,
        -- the class count of a uniform guess scoring the first evaluation's loss: e^loss to the nearest
        -- whole number (a loss above ln(initial_loss_max_vocab_size) is no uniform guess: not rounded)
        case when first_val_loss >= ln(2.0) and first_val_loss <= ln({{ threshold('initial_loss_max_vocab_size') }}.0)
            then round(exp(first_val_loss)) end as eval_uniform_classes
    from joined
),

eval_matched as (
    -- the first evaluation is a uniform guess over eval_uniform_classes when its loss is within
    -- reference_start_class_tolerance of ln k and its accuracy within reference_uniform_accuracy_ratio of 1/k
    select
        *,
        coalesce(
            abs(first_val_loss - ln(eval_uniform_classes)) <= {{ threshold('reference_start_class_tolerance') }} * ln(eval_uniform_classes)
            and first_val_accuracy * eval_uniform_classes >= 1.0 / {{ threshold('reference_uniform_accuracy_ratio') }}
            and first_val_accuracy * eval_uniform_classes <= {{ threshold('reference_uniform_accuracy_ratio') }},
            false
        ) as is_first_eval_uniform
    from start_matched
),

sourced as (
    select
        *,
        case
            when num_classes >= 2
                and (coalesce(num_classes_basis, 'stated') <> 'label_map'
                    or coalesce(judged_start_loss, 0) <= {{ threshold('reference_class_max_start_ratio') }} * ln(cast(num_classes as {{ type_double() }})))
                then 'num_classes'
            when vocab_size >= 2 and not is_classifier_head then 'vocab_size'
            when name_vocab_size is not null and not is_classifier_head then name_key
            when start_classes is not null then 'start_at_ln_classes'
            when is_first_eval_uniform then 'first_eval_uniform'
            when first_loss >= ln({{ threshold('reference_min_vocab_size') }}.0) and not is_classifier_head
                and first_loss <= ln({{ threshold('initial_loss_max_vocab_size') }}.0) then 'first_loss'
        end as chance_basis
    from eval_matched
),

levelled as (
    select
        *,
        case chance_basis
            when 'num_classes' then ln(cast(num_classes as {{ type_double() }}))
            when 'vocab_size' then ln(cast(vocab_size as {{ type_double() }}))
            when 'tokenizer_name' then ln(cast(name_vocab_size as {{ type_double() }}))
            when 'model_name' then ln(cast(name_vocab_size as {{ type_double() }}))
            when 'start_at_ln_classes' then ln(cast(start_classes as {{ type_double() }}))
            when 'first_eval_uniform' then ln(eval_uniform_classes)
            when 'first_loss' then first_loss
        end as chance_loss,
        case chance_basis
            when 'num_classes' then 'high'
            when 'vocab_size' then 'high'
            when 'tokenizer_name' then 'medium'
            when 'model_name' then 'medium'
            -- the level is exact (ln k); only the class count is inferred, from a start within 1% of it
            when 'start_at_ln_classes' then 'medium'
            -- loss and accuracy agree on one k: the level is ln k, the class count inferred
            when 'first_eval_uniform' then 'medium'
            when 'first_loss' then 'low'
        end as chance_confidence,
        case chance_basis
            when 'num_classes' then 'ln(' || {{ fmt_int('num_classes') }} || ' classes), num_classes from the config'
            when 'vocab_size' then 'ln(vocabulary ' || {{ fmt_int('vocab_size') }} || '), vocab_size from the config'
            when 'tokenizer_name' then 'ln(vocabulary ' || {{ fmt_int('name_vocab_size') }} || ') of the ' || name_family
                || ' family, matched by the tokenizer name ''' || reference_name || ''' (' || name_source || ')'
            when 'model_name' then 'ln(vocabulary ' || {{ fmt_int('name_vocab_size') }} || ') of the ' || name_family
                || ' family, matched by the model name ''' || reference_name || ''' (' || name_source || ')'
            when 'start_at_ln_classes' then 'ln(' || {{ fmt_int('start_classes') }} || ' classes): the run starts at '
                || {{ fmt('judged_start_loss', 4) }} || ', within ' || {{ fmt_pct(threshold('reference_start_class_tolerance'), 0) }}
                || ' of ln ' || {{ fmt_int('start_classes') }} || ' (a fresh ' || {{ fmt_int('start_classes') }}
                || '-class head); no class count or vocabulary is known'
            when 'first_eval_uniform' then 'ln(' || {{ fmt_int('eval_uniform_classes') }} || ' classes): the first evaluation scores a loss of '
                || {{ fmt('first_val_loss', 4) }} || ' and an accuracy of ' || {{ fmt('first_val_accuracy', 3) }}
                || ', what a uniform guess over ' || {{ fmt_int('eval_uniform_classes') }} || ' classes scores (ln '
                || {{ fmt_int('eval_uniform_classes') }} || ' = ' || {{ fmt('ln(eval_uniform_classes)', 4) }} || ', 1/'
                || {{ fmt_int('eval_uniform_classes') }} || ' = ' || {{ fmt('1.0 / eval_uniform_classes', 3) }}
                || '); no class count or vocabulary is known'
            when 'first_loss' then 'the first loss ' || {{ fmt('first_loss', 3) }}
                || ', taken as the uniform-guess level: it lies where a freshly initialised language model starts (ln '
                || {{ fmt_int(threshold('reference_min_vocab_size')) }} || ' to ln ' || {{ fmt_int(threshold('initial_loss_max_vocab_size')) }}
                || '); no vocabulary or class count is known'
        end as chance_detail
    from sourced
),

final as (
    select
        run_id,
        1 as reference_id,
        chance_loss,
        chance_basis,
        chance_confidence,
        chance_detail,
        vocab_size,
        num_classes,
        is_classifier_head,
        reference_name,
        name_vocab_size,
        first_train_step,
        first_train_loss,
        start_loss,
        first_loss,
        judged_start_loss,
        {{ safe_divide('judged_start_loss', 'chance_loss') }} as start_share_of_chance,
        case
            -- a log resumed from an earlier run's checkpoint: its start is not the model's start
            when is_continuation then 'continuation'
            when chance_basis = 'first_loss' then 'from_scratch'
            -- a fresh init starts at about the chance level; far above it (initial_loss_min_ratio) the start is
            -- mis-scaled, and says nothing about whether the model was pretrained
            when {{ safe_divide('judged_start_loss', 'chance_loss') }} >= {{ threshold('from_scratch_min_start_share') }}
                and {{ safe_divide('judged_start_loss', 'chance_loss') }} < {{ threshold('initial_loss_min_ratio') }} then 'from_scratch'
            when {{ safe_divide('judged_start_loss', 'chance_loss') }} <= {{ threshold('fine_tune_max_start_share') }} then 'fine_tune'
            else 'unknown'
        end as regime,
        is_continuation,
        eval_count,
        first_eval_step,
        first_val_loss,
        best_eval_step,
        best_val_loss
    from levelled
)

select * from final
