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
with

grid as (
    select * from {{ run_ref('int_cost_law_grid') }}
),

findings as (
    -- per priced finding: what the design knows about it
    select
        run_id,
        finding_id,
        max(fit_kind) as fit_kind,
        max(case when has_lr_term then 1 else 0 end) = 1 as has_lr_term,
        max(case when uses_lr then 1 else 0 end) = 1 as uses_lr,
        max(lr_span) as lr_span,
        max(area_final) as area_final,
        max(excess_total_final) as excess_total_final
    from {{ run_ref('int_cost_law_design') }}
    group by run_id, finding_id
),

scored as (
    select
        grid.*,
        row_number() over (
            partition by run_id, finding_id order by sse, shift_share, alpha
            rows between unbounded preceding and current row
        ) as fit_rank,
        min(sse) over (
            partition by run_id, finding_id rows between unbounded preceding and unbounded following
        ) as sse_min
    from grid
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
    where sse <= sse_min * exp({{ threshold('cost_interval_z') }} * {{ threshold('cost_interval_z') }} / n)
    group by run_id, finding_id
),

final as (
    select
        scored.run_id,
        scored.finding_id,
        findings.fit_kind,
        findings.has_lr_term,
        findings.uses_lr,
        findings.lr_span,
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
        scored.shift_share * findings.area_final as progress_erased,
        findings.excess_total_final as shard_excess,
        findings.area_final as lr_area
    from scored
    inner join findings
        on scored.run_id = findings.run_id
        and scored.finding_id = findings.finding_id
    inner join alpha_spread
        on scored.run_id = alpha_spread.run_id
        and scored.finding_id = alpha_spread.finding_id
    where scored.fit_rank = 1
)

select * from final
