-- One row per run: its peak learning rate against the range usual for how it was
-- trained (from scratch or fine-tuned, int_runs_referenced.regime) and its optimizer
-- family (seed usual_learning_rates). The peak is the larger of the configured peak_lr
-- and the logged maximum (what the run was set to reach, or did reach). Far outside means
-- lr_usual_far_factor x beyond an edge of the range: final loss against log(LR) is flat
-- within a few x of the optimum, so only an order of magnitude beyond the usual range is
-- a confident cause of a run that does not learn. The optimizer family is the config's
-- (optimizer.name); when the config names none and the run is a language model (its chance
-- level is a vocabulary), the Adam family is assumed, as for nearly every published
-- transformer recipe, and said so.
with

config as (
    -- one row per run: the run spine
    select run_id, peak_lr, optimizer_name from {{ run_ref('stg_training__config') }}
),

logged as (
    select run_id, max(learning_rate) as logged_peak_lr
    from {{ run_ref('int_train_steps_resolved') }}
    where learning_rate > 0
    group by run_id
),

referenced as (
    select run_id, regime, chance_basis from {{ run_ref('int_runs_referenced') }}
),

judged as (
    select
        config.run_id,
        config.peak_lr,
        logged.logged_peak_lr,
        greatest(coalesce(config.peak_lr, logged.logged_peak_lr), coalesce(logged.logged_peak_lr, config.peak_lr)) as judged_lr,
        case
            when config.peak_lr is null then 'the logged peak'
            when logged.logged_peak_lr > config.peak_lr then 'the logged peak (above the configured peak_lr)'
            else 'the configured peak_lr'
        end as lr_basis,
        referenced.regime,
        case
            when lower(config.optimizer_name) like '%sgd%' or lower(config.optimizer_name) like '%momentum%' then 'sgd'
            when lower(config.optimizer_name) like '%adam%' or lower(config.optimizer_name) like '%adafactor%' then 'adam'
            when config.optimizer_name is null
                and referenced.chance_basis in ('vocab_size', 'tokenizer_name', 'model_name', 'first_loss') then 'adam'
            else 'unknown'
        end as optimizer_family,
        case
            when config.optimizer_name is not null then 'optimizer ' || config.optimizer_name || ' (config)'
            when referenced.chance_basis in ('vocab_size', 'tokenizer_name', 'model_name', 'first_loss')
                then 'Adam family assumed (the config names no optimizer; transformer language models are trained with Adam-family optimizers)'
            else 'the config names no optimizer'
        end as optimizer_basis
    from config
    left join logged
        on config.run_id = logged.run_id
    left join referenced
        on config.run_id = referenced.run_id
),

ranged as (
    select
        judged.*,
        usual.lr_low,
        usual.lr_high,
        usual.source as range_source
    from judged
    left join {{ ref('usual_learning_rates') }} as usual
        -- a continuation of an earlier run, or an unknown start: the union of the two regimes' ranges
        on usual.regime = case when judged.regime in ('from_scratch', 'fine_tune') then judged.regime else 'unknown' end
        and usual.optimizer_family = judged.optimizer_family
),

final as (
    select
        run_id,
        1 as lr_range_id,
        judged_lr,
        lr_basis,
        peak_lr,
        logged_peak_lr,
        regime,
        optimizer_family,
        optimizer_basis,
        lr_low,
        lr_high,
        range_source,
        case
            when judged_lr > lr_high then {{ safe_divide('judged_lr', 'lr_high') }}
            when judged_lr < lr_low then {{ safe_divide('judged_lr', 'lr_low') }}
            when judged_lr is not null and lr_high is not null then 1.0
        end as ratio_beyond_range,
        coalesce(judged_lr >= {{ threshold('lr_usual_far_factor') }} * lr_high, false) as is_far_above,
        coalesce(judged_lr * {{ threshold('lr_usual_far_factor') }} <= lr_low, false) as is_far_below
    from ranged
)

select * from final
