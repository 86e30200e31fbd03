-- What a finding cost, read from the run's own loss curve: a schedule-aware loss-curve law
-- fitted to the run's evaluations, then evaluated at the final evaluation with and without
-- the fault. One row per (run, finding) the law can price.
--
-- The law (after Tissue et al. 2024, "Scaling law with learning rate annealing", and the
-- Multi-Power Law, Luo et al. 2025):
--     val_loss(t) = L0 + A * (S1(t) - shift(t))^(-alpha) + B * lr(t) [+ E * Xnew(t)]
-- S1 the LR area up to the evaluation (the progress term; a step that made no update adds
-- none), lr the mean logged LR over the steps since the previous evaluation (the level the
-- loss sits at above the valley floor at that LR: Tissue's annealing term -C*S2 is this up to
-- a constant, since S2 accumulates the LR decrease). For a bad shard, the progress its data erased: shift(t) = share * S1(T) *
-- X(t) / X(T), X the shard's train-loss excess over the spike-free baseline summed over its
-- steps so far (the excess on the affected steps), so the run had to redo that progress
-- (what persists: worth little once the curve is flat), and Xnew the excess since the
-- previous evaluation (the fresh damage an evaluation right after a visit still shows). For
-- a fixed alpha and share the law is linear in L0, A, B, E: ordinary least squares
-- (macros/least_squares.sql) over the grid of var law_alphas (and var law_shift_shares for a
-- shard), the best pair by the residual sum of squares.
--
-- The counterfactual per finding (fit_kind):
--   configured  a schedule finding (lr_schedule_mismatch): the configured schedule's S1 and lr
--   restored   lost updates (nan_loss): the skipped steps' LR area given back (only when the
--              run trained on normally before its final evaluation: it recovered)
--   shard      bad data (bad_data_shard): no progress erased, no fresh damage
-- cost = (regressors at the final evaluation - their counterfactual values) . coefficients,
-- with its standard error from the fit, and the spread of the cost over the grid points
-- whose fit is as good within the same confidence (n ln(SSE / SSE_min) <= cost_interval_z^2:
-- the profile likelihood's set at cost_interval_z standard errors). The LR term is kept only when the run shows its loss at LRs at least
-- law_min_lr_span apart over the fitted points; without it B is not identifiable (a flat
-- LR is collinear with L0) and a configured-schedule counterfactual cannot be priced here.
-- A run without a logged LR on every step is fitted on steps instead of LR area (shard only).
{%- set alphas = var('law_alphas') %}
{%- set shift_shares = var('law_shift_shares') %}
{%- set min_span = var('law_min_lr_span') %}
with

linked as (
    select run_id, finding_id, category from {{ run_ref('int_findings_linked') }}
    where ledger = 'model' and caused_by is null
        and category in ('lr_schedule_mismatch', 'nan_loss', 'bad_data_shard')
),

points as (
    select * from {{ run_ref('int_cost_curve_points') }}
),

run_shape as (
    -- per run: the fitted points and whether they show the loss at different LRs
    select
        run_id,
        sum(case when is_fit_point then 1 else 0 end) as fit_points,
        min(case when is_fit_point then lr_mean_logged end) as lowest_lr,
        max(case when is_fit_point then lr_mean_logged end) as highest_lr,
        min(case when is_fit_point then (case when has_lr_record then 1 else 0 end) end) as fit_points_have_lr
    from points
    group by run_id
),

final_point as (
    select * from points where is_final
),

lost_updates as (
    -- the last step whose update was lost (non-finite loss or gradient)
    select run_id, max(step) as last_lost_step
    from {{ run_ref('int_train_steps_resolved') }}
    where is_loss_non_finite or is_grad_norm_non_finite
    group by run_id
),

candidates as (
    select
        linked.run_id,
        linked.finding_id,
        case linked.category
            when 'lr_schedule_mismatch' then 'configured'
            when 'nan_loss' then 'restored'
            else 'shard'
        end as fit_kind,
        (run_shape.fit_points_have_lr = 1 and final_point.has_lr_record) as uses_lr,
        (run_shape.fit_points_have_lr = 1 and final_point.has_lr_record
            and run_shape.highest_lr >= {{ min_span }} * run_shape.lowest_lr and run_shape.highest_lr > 0) as has_lr_term,
        {{ safe_divide('run_shape.highest_lr', 'run_shape.lowest_lr') }} as lr_span,
        -- lost updates are skipped ones only when the run trained on normally before its final
        -- evaluation; a run still non-finite in its last interval did not recover
        (lost_updates.last_lost_step < final_point.bucket_first_step) as recovered_before_final
    from linked
    inner join run_shape
        on linked.run_id = run_shape.run_id
    inner join final_point
        on linked.run_id = final_point.run_id
    left join lost_updates
        on linked.run_id = lost_updates.run_id
),

priceable as (
    -- a schedule counterfactual needs the LR term; lost updates need the LR areas
    select * from candidates
    where (fit_kind = 'configured' and has_lr_term)
        or (fit_kind = 'restored' and uses_lr and recovered_before_final)
        or fit_kind = 'shard'
),

alpha_grid as (
    {%- for alpha in alphas %}
    select cast({{ alpha }} as {{ type_double() }}) as alpha{{ ' union all' if not loop.last }}
    {%- endfor %}
),

shift_grid as (
    {%- for share in shift_shares %}
    select cast({{ share }} as {{ type_double() }}) as shift_share{{ ' union all' if not loop.last }}
    {%- endfor %}
),

shard_steps as (
    -- the train-loss excess of every step a bad-shard finding names (its shard, or its source)
    select
        candidates.run_id,
        candidates.finding_id,
        baselines.step,
        greatest(0.0, baselines.loss - baselines.loss_baseline) as excess
    from {{ run_ref('int_loss_baselines_computed') }} as baselines
    left join {{ run_ref('int_shards_resolved') }} as shards
        on baselines.run_id = shards.run_id
        and baselines.shard_id = shards.shard_id
    inner join candidates
        on baselines.run_id = candidates.run_id
        and candidates.fit_kind = 'shard'
        and (candidates.finding_id = 'bad_data_shard:' || baselines.shard_id
            or candidates.finding_id = 'bad_data_shard:source_' || shards.source)
    where baselines.loss is not null and baselines.loss_baseline is not null
),

shard_stream as (
    -- the excess steps and the evaluations in one ordered stream, to give each step the
    -- evaluation it lands in (the first at or after it)
    select run_id, finding_id, step, 0 as is_eval, cast(null as {{ dbt.type_bigint() }}) as eval_step, excess
    from shard_steps
    union all
    select candidates.run_id, candidates.finding_id, points.step, 1 as is_eval, points.step as eval_step,
        cast(0 as {{ type_double() }}) as excess
    from candidates
    inner join points
        on candidates.run_id = points.run_id
    where candidates.fit_kind = 'shard'
),

shard_bucketed as (
    select
        shard_stream.*,
        min(eval_step) over (
            partition by run_id, finding_id order by step, is_eval rows between current row and unbounded following
        ) as bucket_step
    from shard_stream
),

shard_buckets as (
    select run_id, finding_id, bucket_step as step, sum(excess) as excess_new
    from shard_bucketed
    where bucket_step is not null
    group by run_id, finding_id, bucket_step
),

exposure as (
    select
        run_id,
        finding_id,
        step,
        excess_new,
        sum(excess_new) over (
            partition by run_id, finding_id order by step rows between unbounded preceding and current row
        ) as excess_total
    from shard_buckets
),

design_points as (
    -- every priceable finding with its run's fitted points and its final point's counterfactual
    select
        priceable.run_id,
        priceable.finding_id,
        priceable.fit_kind,
        priceable.has_lr_term,
        points.val_loss as y,
        case when priceable.uses_lr then points.s1_effective else points.steps_so_far end as area,
        points.lr_mean_logged as lr,
        coalesce(exposure.excess_total, 0) as excess_total,
        coalesce(exposure.excess_new, 0) as excess_new,
        case when priceable.uses_lr then final_point.s1_effective else final_point.steps_so_far end as area_final,
        case priceable.fit_kind
            when 'configured' then final_point.s1_configured
            when 'restored' then final_point.s1_logged
            else case when priceable.uses_lr then final_point.s1_effective else final_point.steps_so_far end
        end as area_final_counterfactual,
        final_point.lr_mean_logged as lr_final,
        case priceable.fit_kind
            when 'configured' then final_point.lr_mean_configured
            else final_point.lr_mean_logged
        end as lr_final_counterfactual,
        coalesce(final_exposure.excess_total, 0) as excess_total_final,
        coalesce(final_exposure.excess_new, 0) as excess_new_final
    from priceable
    inner join points
        on priceable.run_id = points.run_id
        and points.is_fit_point
    inner join final_point
        on priceable.run_id = final_point.run_id
    left join exposure
        on priceable.run_id = exposure.run_id
        and priceable.finding_id = exposure.finding_id
        and points.step = exposure.step
    left join exposure as final_exposure
        on priceable.run_id = final_exposure.run_id
        and priceable.finding_id = final_exposure.finding_id
        and final_point.step = final_exposure.step
    where points.val_loss is not null
),

shifted as (
    -- the progress the shard erased by each point (0 for the other kinds: only share 0 applies)
    select
        design_points.*,
        shift_grid.shift_share,
        area - shift_grid.shift_share * area_final * coalesce({{ safe_divide('excess_total', 'excess_total_final') }}, 0) as shifted_area,
        area_final - shift_grid.shift_share * area_final as shifted_area_final
    from design_points
    cross join shift_grid
    where shift_grid.shift_share = 0 or (design_points.fit_kind = 'shard' and design_points.excess_total_final > 0)
),

valid_shifts as (
    -- a share that would erase more progress than a point had made is no candidate
    select run_id, finding_id, shift_share
    from shifted
    group by run_id, finding_id, shift_share
    having min(shifted_area) > 0 and min(shifted_area_final) > 0 and min(area_final_counterfactual) > 0
),

design as (
    select
        shifted.*,
        alpha_grid.alpha,
        power(shifted.shifted_area, -alpha_grid.alpha) as progress,
        power(shifted.shifted_area_final, -alpha_grid.alpha) - power(shifted.area_final_counterfactual, -alpha_grid.alpha) as progress_contrast
    from shifted
    inner join valid_shifts
        on shifted.run_id = valid_shifts.run_id
        and shifted.finding_id = valid_shifts.finding_id
        and shifted.shift_share = valid_shifts.shift_share
    cross join alpha_grid
),

{#- the four shapes of the law: with or without the LR term, with or without the shard exposure;
    each solved with its own number of coefficients -#}
{%- set shapes = [
    {'name': 'fit_lr', 'where': "fit_kind <> 'shard' and has_lr_term", 'x': ['progress', 'lr'],
     'c': ['progress_contrast', 'lr_final - lr_final_counterfactual']},
    {'name': 'fit_plain', 'where': "fit_kind <> 'shard' and not has_lr_term", 'x': ['progress'],
     'c': ['progress_contrast']},
    {'name': 'fit_shard_lr', 'where': "fit_kind = 'shard' and has_lr_term", 'x': ['progress', 'lr', 'excess_new'],
     'c': ['progress_contrast', 'lr_final - lr_final_counterfactual', 'excess_new_final']},
    {'name': 'fit_shard', 'where': "fit_kind = 'shard' and not has_lr_term", 'x': ['progress', 'excess_new'],
     'c': ['progress_contrast', 'excess_new_final']},
] %}
{%- set terms = ['progress', 'lr', 'excess_new'] %}
{%- set keys = ['run_id', 'finding_id', 'alpha', 'shift_share'] %}

{% for shape in shapes %}
{{ shape.name }}_design as (
    select
        run_id, finding_id, alpha, shift_share, y,
        cast(1 as {{ type_double() }}) as x1, cast(0 as {{ type_double() }}) as c1
        {%- for x in shape.x %},
        {{ x }} as x{{ loop.index + 1 }}, {{ shape.c[loop.index0] }} as c{{ loop.index + 1 }}
        {%- endfor %}
    from design
    where {{ shape.where }}
),

{{ least_squares_ctes(shape.name, shape.name ~ '_design', keys, shape.x | length + 1) }},

{{ shape.name }}_coefficients as (
    -- one shape for all: the coefficient of each term (0 where the shape lacks it) and the
    -- term's share of the cost (coefficient x contrast)
    select
        solved.run_id, solved.finding_id, solved.alpha, solved.shift_share, solved.n,
        {{ shape.x | length + 1 }} as n_params,
        solved.cz,
        solved.b1 as b_level,
        {%- for term in terms %}
        {%- if term in shape.x %}
        {%- set i = shape.x.index(term) + 2 %}
        solved.b{{ i }} as b_{{ term }},
        solved.bc{{ i }} as cost_{{ term }}{{ ',' if not loop.last }}
        {%- else %}
        cast(0 as {{ type_double() }}) as b_{{ term }},
        cast(0 as {{ type_double() }}) as cost_{{ term }}{{ ',' if not loop.last }}
        {%- endif %}
        {%- endfor %}
    from {{ shape.name }} as solved
    where solved.n >= {{ shape.x | length + 1 }} + {{ var('law_min_extra_points') }}
        {%- for i in range(1, shape.x | length + 2) %}
        and solved.b{{ i }} is not null
        {%- endfor %}
),
{% endfor %}

coefficients as (
    {%- for shape in shapes %}
    select * from {{ shape.name }}_coefficients{{ ' union all' if not loop.last }}
    {%- endfor %}
),

residuals as (
    select
        coefficients.run_id,
        coefficients.finding_id,
        coefficients.alpha,
        coefficients.shift_share,
        sum(power(design.y - (coefficients.b_level + coefficients.b_progress * design.progress
            + coefficients.b_lr * coalesce(design.lr, 0) + coefficients.b_excess_new * design.excess_new), 2)) as sse
    from coefficients
    inner join design
        on coefficients.run_id = design.run_id
        and coefficients.finding_id = design.finding_id
        and coefficients.alpha = design.alpha
        and coefficients.shift_share = design.shift_share
    group by coefficients.run_id, coefficients.finding_id, coefficients.alpha, coefficients.shift_share
),

scored as (
    select
        coefficients.*,
        residuals.sse,
        coefficients.cost_progress + coefficients.cost_lr + coefficients.cost_excess_new as cost,
        row_number() over (
            partition by coefficients.run_id, coefficients.finding_id
            order by residuals.sse, coefficients.shift_share, coefficients.alpha
            rows between unbounded preceding and current row
        ) as fit_rank,
        min(residuals.sse) over (
            partition by coefficients.run_id, coefficients.finding_id
            rows between unbounded preceding and unbounded following
        ) as sse_min
    from coefficients
    inner join residuals
        on coefficients.run_id = residuals.run_id
        and coefficients.finding_id = residuals.finding_id
        and coefficients.alpha = residuals.alpha
        and coefficients.shift_share = residuals.shift_share
),

design_final as (
    select run_id, finding_id, max(area_final) as area_final, max(excess_total_final) as excess_total_final
    from design_points
    group by run_id, finding_id
),

alpha_spread as (
    -- the costs over the grid points (alpha, shift share) whose fit is about as good as the best one
    select
        run_id,
        finding_id,
        min(cost) as cost_alpha_low,
        max(cost) as cost_alpha_high,
        count(*) as alphas_about_as_good
    from scored
    where sse <= sse_min * exp({{ var('cost_interval_z') }} * {{ var('cost_interval_z') }} / n)
    group by run_id, finding_id
),

final as (
    select
        scored.run_id,
        scored.finding_id,
        candidates.fit_kind,
        candidates.has_lr_term,
        candidates.uses_lr,
        candidates.lr_span,
        scored.alpha,
        scored.n as fit_points,
        scored.n_params,
        sqrt(scored.sse / scored.n) as fit_rmse,
        scored.b_level,
        scored.b_progress,
        scored.b_lr,
        scored.b_excess_new,
        scored.cost,
        scored.cost_progress,
        scored.cost_lr,
        scored.cost_excess_new,
        sqrt(greatest(0.0, {{ safe_divide('scored.sse', 'scored.n - scored.n_params') }} * scored.cz)) as cost_se,
        alpha_spread.cost_alpha_low,
        alpha_spread.cost_alpha_high,
        alpha_spread.alphas_about_as_good,
        scored.shift_share,
        scored.shift_share * design_final.area_final as progress_erased,
        design_final.excess_total_final as shard_excess,
        design_final.area_final as lr_area
    from scored
    inner join candidates
        on scored.run_id = candidates.run_id
        and scored.finding_id = candidates.finding_id
    inner join alpha_spread
        on scored.run_id = alpha_spread.run_id
        and scored.finding_id = alpha_spread.finding_id
    inner join design_final
        on scored.run_id = design_final.run_id
        and scored.finding_id = design_final.finding_id
    where scored.fit_rank = 1
)

select * from final
