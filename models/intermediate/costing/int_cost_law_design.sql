-- The design of the loss-curve fits (int_cost_law_grid): one row per (run, finding the law
-- can price, grid point, fitted evaluation) with the law's regressors at that evaluation and
-- their contrast at the final evaluation (with the fault minus without it). The law, its
-- counterfactuals and its grid are described in int_cost_law_fitted.
{%- set alphas = (threshold('law_alphas') if execute else []) %}
{%- set shift_shares = (threshold('law_shift_shares') if execute else []) %}
{%- set min_span = threshold('law_min_lr_span') %}
with

linked as (
    select run_id, finding_id, category, cost_estimators from {{ run_ref('int_findings_linked') }}
    where ledger = 'model' and caused_by is null
        -- the findings whose category declares a loss-law estimator (cost_estimators, check_catalog)
        and ({{ declares_estimator('cost_estimators', 'schedule_law') }}
            or {{ declares_estimator('cost_estimators', 'lost_steps_law') }}
            or {{ declares_estimator('cost_estimators', 'shard_law') }})
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
        case
            when {{ declares_estimator('linked.cost_estimators', 'schedule_law') }} then 'configured'
            when {{ declares_estimator('linked.cost_estimators', 'lost_steps_law') }} then 'restored'
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
        -- the first evaluation at or after the row: the running minimum read from the end of the
        -- stream (the same rows as `current row and unbounded following` in step order; DuckDB
        -- computes a frame that ends at the current row in one pass, the open-ended one in 3.4 s
        -- instead of 0.6 s at 1M steps)
        min(eval_step) over (
            partition by run_id, finding_id order by step desc, is_eval desc rows between unbounded preceding and current row
        ) as bucket_step
    from shard_stream
),

shard_buckets as (
    select run_id, finding_id, bucket_step as step, {{ stable_sum('excess') }} as excess_new
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
        priceable.uses_lr,
        priceable.lr_span,
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

final as (
    select
        design.run_id,
        design.finding_id,
        design.fit_kind,
        design.has_lr_term,
        design.uses_lr,
        design.lr_span,
        design.alpha,
        design.shift_share,
        design.y,
        design.progress,
        design.lr,
        design.excess_new,
        design.progress_contrast,
        design.lr_final - design.lr_final_counterfactual as lr_contrast,
        design.excess_new_final as excess_new_contrast,
        design.area_final,
        design.excess_total_final
    from design
)

select * from final
