-- For every counted step: the logged grad_norm (the gradient used in the update,
-- after clipping) against grad_clip_norm. Above the limit means clipping was not
-- applied; at the limit means the step was clipped. Stretches of violations are
-- numbered so a finding can say when they started and what came just before.
-- Tools that log the norm before clipping (HF Trainer, Lightning, Megatron, llm.c:
-- importers set grad_norm_measured = 'before_clipping') cannot show a violation:
-- above the limit then only means the step was clipped.
-- Computed in int_train_steps_measured (the wide per-step model); this view is its columns
-- of the clip state.
-- A view: a projection of a table, read by each reader as that table's columns. It reads the
-- whole model (ref, not run_ref): its readers keep only their batch's runs.
{{ config(materialized='view') }}
with

measured as (
    select
        run_id,
        step,
        attempt_number,
        is_attempt_start,
        grad_norm,
        grad_clip_norm,
        ratio_to_clip,
        is_clip_violation,
        is_at_or_above_clip,
        violation_stretch_key
    from {{ ref('int_train_steps_measured') }}
)

select * from measured
