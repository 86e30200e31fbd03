-- Finding: the start of the training loss is above the cross-entropy of a uniform
-- guess (the chance level of int_runs_referenced: ln of the vocabulary or of the class
-- count, from the config or matched by name; else the largest vocabulary in common use,
-- initial_loss_max_vocab_size) while the run's loss is otherwise on a per-token
-- cross-entropy scale (its median above 0 and below that ceiling; or exactly 0, a loss zeroed
-- after the start, which stays low: it cannot confirm the scale). The start is the first
-- initial_loss_start_points logged losses (a per-batch loss is noisy; a fresh or a
-- pretrained model is at or under the ceiling on every one of them). A freshly initialised
-- model starts at about the ceiling, a pretrained one far below it; far above it, the
-- initial logits are mis-scaled (init, a missing final norm or logit scaling, a new head)
-- or the loss is mis-reduced (summed instead of averaged, or over several outputs).
-- Medium only on strong evidence, and only with the ceiling known (a vocabulary or class
-- count from the config or matched by name): the start well above it (initial_loss_medium_ratio),
-- at least two logged losses above it, and the run's median clearly per-token; or, for a
-- pretrained language model (the median of its first losses far below ln V, but the highest of
-- them above it), any start above it. Low otherwise, with the reason.

with

referenced as (
    -- one row per run: the run spine, with its chance level
    select run_id, chance_loss, chance_basis, chance_confidence, chance_detail, is_classifier_head
    from {{ run_ref('int_runs_referenced') }}
),

ceilings as (
    select
        run_id,
        -- a level known from the config or matched by name; a level inferred from the first loss is no ceiling
        coalesce(chance_confidence in ('high', 'medium'), false) as is_ceiling_known,
        -- unknown: the largest label set in common use for a classifier's head, else the largest vocabulary
        case when chance_confidence in ('high', 'medium') then chance_loss
            when is_classifier_head then ln(cast({{ threshold('initial_loss_max_classes') }} as {{ type_double() }}))
            else ln(cast({{ threshold('initial_loss_max_vocab_size') }} as {{ type_double() }})) end as chance_loss,
        coalesce(is_classifier_head, false) as is_classifier_head,
        case when chance_confidence in ('high', 'medium') then chance_detail end as ceiling_detail,
        -- a level over a vocabulary: a language model's output layer, which pretraining trains (a new
        -- classification head is not: its first losses scatter around ln k whatever the backbone)
        coalesce(chance_basis in ('vocab_size', 'tokenizer_name', 'model_name'), false) as is_vocabulary_level
    from referenced
),

losses as (
    select
        resolved.run_id,
        resolved.step,
        resolved.loss,
        ceilings.is_ceiling_known,
        ceilings.chance_loss,
        ceilings.ceiling_detail,
        ceilings.is_vocabulary_level,
        ceilings.is_classifier_head,
        row_number() over (partition by resolved.run_id order by resolved.step) as position,
        -- how many logged losses so far were at or under the ceiling: 0 on the abnormal start
        sum(case when resolved.loss <= ceilings.chance_loss then 1 else 0 end) over (
            partition by resolved.run_id order by resolved.step rows between unbounded preceding and current row
        ) as points_under_so_far
    from {{ run_ref('int_train_steps_resolved') }} as resolved
    inner join ceilings
        on resolved.run_id = ceilings.run_id
    where resolved.loss is not null and not coalesce(resolved.is_loss_non_finite, false)
),

measured as (
    -- (the ceiling columns are the same on every row of a run)
    select
        run_id,
        max(case when is_ceiling_known then 1 else 0 end) = 1 as is_ceiling_known,
        max(chance_loss) as chance_loss,
        max(ceiling_detail) as ceiling_detail,
        max(case when is_vocabulary_level then 1 else 0 end) = 1 as is_vocabulary_level,
        max(case when is_classifier_head then 1 else 0 end) = 1 as is_classifier_head,
        count(*) as n_losses,
        min(case when position = 1 then step end) as first_step,
        max(case when position = 1 then loss end) as first_loss,
        max(case when position = 2 then loss end) as second_loss,
        -- the start: the highest of the first initial_loss_start_points losses, and their median
        max(case when position <= {{ threshold('initial_loss_start_points') }} then loss end) as start_loss,
        percentile_cont(0.5) within group (order by case when position <= {{ threshold('initial_loss_start_points') }} then loss end)
            as start_median_loss,
        -- logged losses above the ceiling: those among the start, and the stretch from the first on before
        -- the loss first comes under it
        sum(case when (position <= {{ threshold('initial_loss_start_points') }} and loss > chance_loss)
            or (position > {{ threshold('initial_loss_start_points') }} and points_under_so_far = 0) then 1 else 0 end) as points_above,
        max(case when (position <= {{ threshold('initial_loss_start_points') }} and loss > chance_loss)
            or points_under_so_far = 0 then step end) as last_step_above,
        min(case when position > {{ threshold('initial_loss_start_points') }} and loss <= chance_loss then step end) as first_step_under,
        percentile_cont(0.5) within group (order by loss) as median_loss
    from losses
    group by run_id
),

pretrained as (
    select
        *,
        -- a pretrained language model: its first training losses (their median) far below ln V, as
        -- int_runs_referenced's fine_tune regime (fine_tune_max_start_share), while the highest of them is
        -- judged: one log above ln V among losses at the pretrained level is a broken start
        is_ceiling_known and is_vocabulary_level
            and start_median_loss <= {{ threshold('fine_tune_max_start_share') }} * chance_loss as is_pretrained_start
    from measured
),

starts as (
    select
        pretrained.*,
        {{ safe_divide('start_loss', 'chance_loss') }} as first_ratio
    from pretrained
    where n_losses >= {{ threshold('initial_loss_min_points') }}
        -- a fresh model starts a little above the ceiling (init noise): initial_loss_min_ratio; a pretrained one
        -- far below it, so for it any start above the ceiling is a broken one
        and (start_loss >= {{ threshold('initial_loss_min_ratio') }} * chance_loss
            or (is_pretrained_start and start_loss > chance_loss))
        -- the rest of the run is a per-token cross-entropy: under the ceiling, and above 0; or exactly 0
        -- (a loss zeroed after the start: every label masked, an overflow): no per-token loss is 0, so
        -- such a run cannot confirm the scale and stays low, but no working loss starts above the ceiling
        and median_loss >= 0
        and median_loss < chance_loss
),

assessed as (
    select
        *,
        is_ceiling_known and median_loss > 0 and (
            (
                first_ratio >= {{ threshold('initial_loss_medium_ratio') }}
                and points_above >= {{ threshold('initial_loss_medium_min_points_above') }}
                and median_loss <= {{ threshold('initial_loss_medium_max_median_share') }} * chance_loss
            )
            or is_pretrained_start
        ) as is_strong
    from starts
),

final as (
    select
        run_id,
        'initial_loss_too_high:start' as finding_id,
        'initial_loss_too_high' as category,
        case when is_strong then 'medium' else 'low' end as severity,
        'The start of the training loss ' || {{ fmt('start_loss', 2) }} || ' (the highest of the first '
            || {{ threshold('initial_loss_start_points') }} || ' logged losses) is '
            || {{ fmt('first_ratio', 2) }} || 'x the loss of a uniform guess'
            || case when is_ceiling_known then ' (' || {{ fmt('chance_loss', 2) }} || ')'
                when is_classifier_head then ' over the largest label set in common use (ln ' || {{ fmt_int(threshold('initial_loss_max_classes')) }} || ' = '
                    || {{ fmt('chance_loss', 2) }} || ')'
                else ' over the largest vocabulary in common use (ln ' || {{ fmt_int(threshold('initial_loss_max_vocab_size')) }} || ' = '
                    || {{ fmt('chance_loss', 2) }} || ')' end
            || ': the initial logits are mis-scaled or the loss is mis-reduced.' as title,
        'first logged losses ' || {{ fmt('first_loss', 4) }} || coalesce(', ' || {{ fmt('second_loss', 4) }}, '')
            || ' (step ' || {{ fmt_int('first_step') }} || ' on)'
            || '; ' || {{ fmt_int('points_above') }} || ' logged loss(es) at the start above the ceiling'
            || coalesce(', under it from step ' || {{ fmt_int('first_step_under') }}, '')
            || '; ceiling ' || {{ fmt('chance_loss', 3) }} || ' nats = '
            || coalesce(ceiling_detail, case when is_classifier_head
                then 'ln(' || {{ fmt_int(threshold('initial_loss_max_classes')) }}
                    || ') (a classifier''s head, by its config; the largest label set in common use: no class count is known)'
                else 'ln(' || {{ fmt_int(threshold('initial_loss_max_vocab_size')) }}
                    || ') (the largest vocabulary in common use; no vocabulary or class count is known)' end)
            || '; run median loss ' || {{ fmt('median_loss', 4) }}
            || case when median_loss > 0 then ', above 0 and under the ceiling' else ' (the losses after the start are 0)' end
            || case when is_pretrained_start then '; the run''s first losses are otherwise far below the ceiling (a pretrained model), which no fresh start would be, so any start above it is a broken one' else '' end
            || case when is_strong then ''
                else '; low: ' || case
                    when median_loss = 0
                        then 'the run''s median loss is 0, which no per-token cross-entropy reaches, so the loss''s scale cannot be confirmed (no_learning says what the zeros mean)'
                    when not is_ceiling_known and is_classifier_head
                        then 'the class count is not known, so the ceiling is only the largest label set in common use, and a loss summed over several outputs (tokens, labels) would explain the start too'
                    when not is_ceiling_known
                        then 'the vocabulary is not known, so the ceiling is only the largest in common use, and a loss summed over several outputs (draft positions, heads) would explain the start too'
                    when first_ratio < {{ threshold('initial_loss_medium_ratio') }}
                        then 'the start is less than ' || {{ threshold('initial_loss_medium_ratio') }} || 'x the ceiling'
                    when points_above < {{ threshold('initial_loss_medium_min_points_above') }}
                        then 'only ' || {{ fmt_int('points_above') }} || ' logged loss above the ceiling'
                    else 'the run''s median loss is over ' || {{ fmt_pct(threshold('initial_loss_medium_max_median_share')) }}
                        || ' of the ceiling, so the loss may not be per-token (a summed or unnormalised loss)'
                end end as evidence,
        first_step,
        coalesce(last_step_above, first_step) as last_step,
        points_above as steps_affected,
        start_loss as observed_value,
        chance_loss as expected_value,
        {{ threshold('initial_loss_min_ratio') }} * chance_loss as threshold_value,
        'initial_loss_min_ratio' as threshold_name,
        start_loss - chance_loss as estimated_cost,
        'nats' as cost_unit,
        'the start (highest of the first logged losses) minus the loss of a uniform guess' as cost_method,
        least(1.0, {{ safe_divide('start_loss - chance_loss', 'chance_loss') }}) as impact_score,
        cast(null as {{ dbt.type_string() }}) as caused_by,
        'Check the loss at step 0 before training: it should be near ln(vocabulary size). If higher, look at the '
            || 'output head''s initialisation and scaling (logit scale, tied embeddings, a missing final norm) and at the '
            || 'loss reduction (mean over tokens, not a sum; normalised by gradient accumulation).' as recommendation
    from assessed
)

select * from final
