-- For every counted step: the logged grad_norm (the gradient used in the update,
-- after clipping) against grad_clip_norm. Above the limit means clipping was not
-- applied; at the limit means the step was clipped. Stretches of violations are
-- numbered so a finding can say when they started and what came just before.
-- Tools that log the norm before clipping (HF Trainer, Lightning, Megatron, llm.c:
-- importers set grad_norm_measured = 'before_clipping') cannot show a violation:
-- above the limit then only means the step was clipped.
with

steps as (
    select run_id, step, attempt_number, is_attempt_start, grad_norm
    from {{ run_ref('int_train_steps_resolved') }}
),

config as (
    select
        run_id,
        grad_clip_norm,
        grad_norm_measured
    from {{ run_ref('stg_training__config') }}
),

compared as (
    select
        steps.*,
        config.grad_clip_norm,
        {{ is_clip_violation('steps.grad_norm', 'config.grad_clip_norm', 'config.grad_norm_measured') }} as is_clip_violation,
        (steps.grad_norm >= config.grad_clip_norm * (1 - {{ threshold('clip_saturation_band') }})) as is_at_or_above_clip,
        {{ safe_divide('steps.grad_norm', 'config.grad_clip_norm') }} as ratio_to_clip
    from steps
    inner join config
        on steps.run_id = config.run_id
),

islands as (
    select
        *,
        row_number() over (partition by run_id order by step)
            - row_number() over (partition by run_id, coalesce(is_clip_violation, false) order by step) as island_key
    from compared
),

final as (
    select
        run_id,
        step,
        attempt_number,
        is_attempt_start,
        grad_norm,
        grad_clip_norm,
        ratio_to_clip,
        coalesce(is_clip_violation, false) as is_clip_violation,
        coalesce(is_at_or_above_clip, false) as is_at_or_above_clip,
        case when is_clip_violation then island_key end as violation_stretch_key
    from islands
)

select * from final
