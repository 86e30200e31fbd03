-- One row per finding with what it cost, kept in three ledgers that are never
-- put on one scale: `model` findings in nats of final validation loss (one figure,
-- a low-high interval whose half-width is never below the run's noise floor, the
-- estimator that produced it, the evidence in words and the one-change rerun that
-- would confirm it), `compute` findings in seconds and share of the run's wall time,
-- `records` findings at no cost. Estimators (docs/costing.md):
--   overfit_exact   final minus best validation loss (measured, exact)
--   schedule_law    a loss-curve law fitted to the run (int_cost_law_fitted), at the
--                   final evaluation under the logged vs the configured schedule
--   shard_law       the same law with the bad shard's train-loss excess as two terms
--                   (what persists, what is fresh): the excess's share left at the end
--   lost_steps_law  the same law with the LR area of lost updates given back
--   lr_basin_prior  LR above the configured peak: a loss share per squared doubling
--                   (vars lr_basin_share_*) x the mean squared doublings logged
--   anneal_prior    no LR cooldown: a loss share (vars anneal_prior_share_*) x the
--                   share of the cooldown skipped (also a schedule finding the law
--                   cannot price: the run never shows its loss at other LRs)
--   repeat_overfit  data repetition: the rise of the final validation loss above the
--                   best one since the data began repeating (0 when it kept improving)
--   replay_ab       steps replayed after a resume, original vs replay
--   val_trend       the validation jump after the problem's steps, turned into steps
--                   of progress lost and priced on the run's own curve
--   none            no estimate (evidence only); a symptom is costed in its cause
-- A cost below the run's noise floor (int_cost_noise_floor) is "within noise": its
-- severity is at most low and it ranks after the priced findings.
{%- set z = threshold('cost_interval_z') %}
with

linked as (
    select * from {{ run_ref('int_findings_linked') }}
),

evals as (
    select run_id, step, val_loss, eval_index, eval_count, is_best from {{ run_ref('int_evals_compared') }}
    where val_loss is not null
),

runs as (
    -- the run spine: one row per run, so a per-run aggregate has a row even when the run has no input
    select run_id from {{ run_ref('stg_training__config') }}
),

evals_lagged as (
    select
        run_id,
        step,
        val_loss,
        {{ previous_value('step', 'step', 'run_id') }} as previous_step,
        {{ previous_value('val_loss', 'step', 'run_id') }} as previous_val_loss
    from evals
),

run_end_by_run as (
    select
        run_id,
        min(step) as first_eval_step,
        max(case when eval_index = eval_count then step end) as end_step,
        max(case when eval_index = eval_count then val_loss end) as final_val_loss,
        max(case when is_best then val_loss end) as best_val_loss
    from evals
    group by run_id
),

run_end as (
    -- one row per run (all NULL for a run without evaluations)
    select
        runs.run_id,
        run_end_by_run.first_eval_step,
        run_end_by_run.end_step,
        run_end_by_run.final_val_loss,
        run_end_by_run.best_val_loss
    from runs
    left join run_end_by_run
        on runs.run_id = run_end_by_run.run_id
),

wall_clock_by_run as (
    select run_id, {{ stable_sum('step_time_sec') }} as wall_clock_sec
    from {{ run_ref('int_train_rows_resolved') }}
    where is_counted or is_superseded
    group by run_id
),

window_time_by_run as (
    -- a logged step time that is the mean over a window of steps (step_time_is_interval_mean)
    -- stands for window_steps steps: the time of the other steps of each window
    select run_id, {{ stable_sum('(window_steps - 1) * step_time_sec') }} as window_extra_sec
    from {{ run_ref('int_step_times_profiled') }}
    where window_steps > 1
    group by run_id
),

wall_clock as (
    select
        runs.run_id,
        wall_clock_by_run.wall_clock_sec + coalesce(window_time_by_run.window_extra_sec, 0) as wall_clock_sec
    from runs
    left join wall_clock_by_run
        on runs.run_id = wall_clock_by_run.run_id
    left join window_time_by_run
        on runs.run_id = window_time_by_run.run_id
),

lr_excess_by_run as (
    -- mean doublings of the logged LR above the rebuilt schedule, over the steps that have both
    select
        run_id,
        {{ stable_avg('greatest(0.0, ln(lr_ratio) / ln(2.0))') }} as mean_doublings,
        {{ stable_avg('power(greatest(0.0, ln(lr_ratio) / ln(2.0)), 2)') }} as mean_squared_doublings,
        max(lr_ratio) as max_lr_ratio,
        count(*) as compared_steps
    from {{ run_ref('int_learning_rates_compared') }}
    where lr_ratio > 0
    group by run_id
),

lr_excess as (
    select
        runs.run_id,
        lr_excess_by_run.mean_doublings,
        lr_excess_by_run.mean_squared_doublings,
        lr_excess_by_run.max_lr_ratio,
        coalesce(lr_excess_by_run.compared_steps, 0) as compared_steps
    from runs
    left join lr_excess_by_run
        on runs.run_id = lr_excess_by_run.run_id
),

replays as (
    select * from {{ run_ref('int_replays_compared') }}
),

spike_windows as (
    -- a bad shard is judged on its spikes: its val_trend window runs from its first to its last
    -- spike, so a normal-looking visit (in warmup, say) does not move the window
    select
        baselines.run_id,
        'bad_data_shard:' || baselines.shard_id as finding_id,
        min(baselines.step) as window_first,
        max(baselines.step) as window_last
    from {{ run_ref('int_loss_baselines_computed') }} as baselines
    where baselines.is_loss_spike
    group by baselines.run_id, baselines.shard_id
    union all
    select
        baselines.run_id,
        'bad_data_shard:source_' || shards.source as finding_id,
        min(baselines.step) as window_first,
        max(baselines.step) as window_last
    from {{ run_ref('int_loss_baselines_computed') }} as baselines
    inner join {{ run_ref('int_shards_resolved') }} as shards
        on baselines.run_id = shards.run_id
        and baselines.shard_id = shards.shard_id
    where baselines.is_loss_spike
    group by baselines.run_id, shards.source
),

noise as (
    select run_id, eval_sigma, noise_floor, jitter_points from {{ run_ref('int_cost_noise_floor') }}
),

law as (
    select * from {{ run_ref('int_cost_law_fitted') }}
),

curve_end as (
    -- the LR over the last evaluation interval, logged and configured, and the LR areas
    select run_id, lr_mean_logged, lr_mean_configured, s1_effective, s1_logged, s1_configured
    from {{ run_ref('int_cost_curve_points') }}
    where is_final
),

schedule as (
    select run_id, peak_lr, min_lr from {{ run_ref('stg_training__config') }}
),

overfit_runs as (
    -- (a rise of the validation loss: overfitting:accuracy_gap is in accuracy, with no held-out loss to price)
    select distinct run_id from linked where {{ declares_estimator('cost_estimators', 'overfit_exact') }} and cost_unit = 'val_loss'
),

train_set_evals as (
    -- runs whose evaluation is (or overlaps) the training data, by the eval_contamination detector at
    -- medium or above: memorised repeats only improve such an evaluation, so it cannot price what
    -- repeating the data cost (repeat_overfit needs a held-out evaluation)
    select run_id, min(finding_id) as contamination_finding_id
    from linked
    where category = 'eval_contamination'
        and {{ severity_rank('detector_severity') }} >= {{ severity_rank("'medium'") }}
    group by run_id
),

repeat_window as (
    -- data_repetition: the best validation loss at or after the first repeated step
    select
        linked.run_id,
        linked.finding_id,
        min(evals.val_loss) as best_since_repeat,
        min(evals.step) as first_eval_since_repeat
    from linked
    inner join evals
        on linked.run_id = evals.run_id
        and evals.step >= linked.first_step
    where linked.finding_id = 'data_repetition:run'
    group by linked.run_id, linked.finding_id
),

repeat_best as (
    select
        repeat_window.*,
        min(evals.step) as best_step_since_repeat
    from repeat_window
    inner join evals
        on repeat_window.run_id = evals.run_id
        and evals.step >= repeat_window.first_eval_since_repeat
        and evals.val_loss = repeat_window.best_since_repeat
    group by repeat_window.run_id, repeat_window.finding_id, repeat_window.best_since_repeat, repeat_window.first_eval_since_repeat
),

finding_replays as (
    -- the replay a finding's first step falls in, one per finding: when replays overlap (a run
    -- resumed again before its first replay was over, or a log written twice), the latest resume
    select linked.run_id, linked.finding_id, max(replays.replay_id) as replay_id
    from linked
    inner join replays
        on linked.run_id = replays.run_id
        and linked.first_step between replays.first_compared_step and replays.last_compared_step
    group by linked.run_id, linked.finding_id
),

assigned as (
    -- which estimator each finding gets: the first, in this order, that its category declares
    -- (cost_estimators in its check's YAML, check_catalog) and whose inputs the run has
    select
        linked.*,
        coalesce(spike_windows.window_first, linked.first_step) as window_first,
        coalesce(spike_windows.window_last, linked.last_step) as window_last,
        finding_replays.replay_id,
        case
            when linked.ledger <> 'model' or linked.caused_by is not null then 'none'
            when {{ declares_estimator('linked.cost_estimators', 'overfit_exact') }} and linked.cost_unit = 'val_loss' then 'overfit_exact'
            when {{ declares_estimator('linked.cost_estimators', 'lr_basin_prior') }} then 'lr_basin_prior'
            when {{ declares_estimator('linked.cost_estimators', 'anneal_prior') }} and linked.finding_id = 'schedule_sanity:never_anneals' then 'anneal_prior'
            when {{ declares_estimator('linked.cost_estimators', 'schedule_law') }} and law.fit_kind = 'configured' then 'schedule_law'
            -- a schedule finding the law cannot price (the run never shows its loss at other LRs):
            -- priced by how much of the cooldown its LR at the end skipped, when it declares both
            when {{ declares_estimator('linked.cost_estimators', 'schedule_law') }} and {{ declares_estimator('linked.cost_estimators', 'anneal_prior') }} and curve_end.lr_mean_logged is not null
                and schedule.peak_lr > coalesce(schedule.min_lr, 0) then 'anneal_prior'
            when {{ declares_estimator('linked.cost_estimators', 'lost_steps_law') }} and law.fit_kind = 'restored' then 'lost_steps_law'
            when {{ declares_estimator('linked.cost_estimators', 'shard_law') }} and law.fit_kind = 'shard' then 'shard_law'
            -- a data_repetition finding is itself a replay: its replayed steps' evaluation against the original
            when {{ declares_estimator('linked.cost_estimators', 'replay_ab') }} and linked.category = 'data_repetition' and linked.finding_id <> 'data_repetition:run'
                and replays.replayed_eval_step is not null then 'replay_ab'
            when {{ declares_estimator('linked.cost_estimators', 'repeat_overfit') }} and linked.finding_id = 'data_repetition:run' and overfit_runs.run_id is null
                and repeat_best.best_since_repeat is not null and train_set_evals.run_id is null then 'repeat_overfit'
            -- another finding inside a replayed stretch: the replay is its A/B
            when {{ declares_estimator('linked.cost_estimators', 'replay_ab') }} and linked.category <> 'data_repetition' and finding_replays.replay_id is not null then 'replay_ab'
            -- val_trend needs an evaluation before the window and one after it
            when {{ declares_estimator('linked.cost_estimators', 'val_trend') }}
                and run_end.first_eval_step < coalesce(spike_windows.window_first, linked.first_step)
                and run_end.end_step > coalesce(spike_windows.window_last, linked.last_step) then 'val_trend'
            else 'none'
        end as cost_estimator,
        -- the share of the cooldown a schedule finding's LR at the end skipped (anneal_prior)
        case
            when linked.finding_id = 'schedule_sanity:never_anneals' then linked.estimated_cost
            when linked.category = 'lr_schedule_mismatch' then greatest(0.0, least(1.0,
                {{ safe_divide('curve_end.lr_mean_logged - curve_end.lr_mean_configured', 'schedule.peak_lr - coalesce(schedule.min_lr, 0)') }}))
        end as cooldown_skipped_share
    from linked
    left join run_end
        on linked.run_id = run_end.run_id
    left join spike_windows
        on linked.run_id = spike_windows.run_id
        and linked.finding_id = spike_windows.finding_id
    left join finding_replays
        on linked.run_id = finding_replays.run_id
        and linked.finding_id = finding_replays.finding_id
    left join replays
        on finding_replays.run_id = replays.run_id
        and finding_replays.replay_id = replays.replay_id
    left join law
        on linked.run_id = law.run_id
        and linked.finding_id = law.finding_id
    left join curve_end
        on linked.run_id = curve_end.run_id
    left join schedule
        on linked.run_id = schedule.run_id
    left join overfit_runs
        on linked.run_id = overfit_runs.run_id
    left join train_set_evals
        on linked.run_id = train_set_evals.run_id
    left join repeat_best
        on linked.run_id = repeat_best.run_id
        and linked.finding_id = repeat_best.finding_id
),

trend_anchor as (
    -- val_trend: the last evaluation before the window (level before, and the interval before it for the slope)
    select assigned.run_id, assigned.finding_id, max(evals.step) as before_step
    from assigned
    inner join evals
        on evals.run_id = assigned.run_id
        and evals.step < assigned.window_first
    where assigned.cost_estimator = 'val_trend'
    group by assigned.run_id, assigned.finding_id
),

trend_before as (
    select
        trend_anchor.run_id,
        trend_anchor.finding_id,
        trend_anchor.before_step,
        evals_lagged.val_loss as before_val_loss,
        greatest(0.0, {{ safe_divide('evals_lagged.previous_val_loss - evals_lagged.val_loss', 'trend_anchor.before_step - evals_lagged.previous_step') }})
            as slope_before
    from trend_anchor
    inner join evals_lagged
        on trend_anchor.run_id = evals_lagged.run_id
        and trend_anchor.before_step = evals_lagged.step
),

trend_after as (
    select
        trend_before.run_id,
        trend_before.finding_id,
        max(case when evals.step >= assigned.window_first then evals.val_loss end) as peak_val_loss,
        min(case when evals.step > assigned.window_last and evals.val_loss <= trend_before.before_val_loss then evals.step end)
            as recovered_eval_step
    from trend_before
    inner join assigned
        on trend_before.run_id = assigned.run_id
        and trend_before.finding_id = assigned.finding_id
    inner join evals
        on evals.run_id = trend_before.run_id
    group by trend_before.run_id, trend_before.finding_id
),

trend as (
    select
        trend_before.*,
        trend_after.peak_val_loss,
        trend_after.peak_val_loss - trend_before.before_val_loss as val_jump,
        -- the step the curve came back to its level before the problem, interpolated between evaluations
        recovered.previous_step + (recovered.step - recovered.previous_step) * least(1.0, greatest(0.0,
            {{ safe_divide('recovered.previous_val_loss - trend_before.before_val_loss', 'recovered.previous_val_loss - recovered.val_loss') }}
        )) as recovered_step
    from trend_before
    inner join trend_after
        on trend_before.run_id = trend_after.run_id
        and trend_before.finding_id = trend_after.finding_id
    left join evals_lagged as recovered
        on trend_after.run_id = recovered.run_id
        and trend_after.recovered_eval_step = recovered.step
),

trend_priced as (
    select
        trend.*,
        run_end.end_step,
        run_end.final_val_loss,
        trend.recovered_step - trend.before_step as steps_lost,
        greatest(0.0, {{ safe_divide('trend.before_val_loss - run_end.final_val_loss', 'run_end.end_step - trend.recovered_step') }})
            as slope_after,
        (trend.val_jump < {{ threshold('val_trend_min_jump') }} * trend.before_val_loss) as is_jump_noise
    from trend
    inner join run_end
        on trend.run_id = run_end.run_id
),

trend_costs as (
    select
        trend_priced.*,
        case
            when is_jump_noise then 0.0
            when recovered_step is null then greatest(0.0, final_val_loss - before_val_loss)
            else steps_lost * least(coalesce(slope_after, slope_before), slope_before)
        end as cost_low,
        case
            when is_jump_noise then 0.0
            when recovered_step is null then greatest(0.0, final_val_loss - before_val_loss) + (end_step - before_step) * slope_before
            else steps_lost * greatest(coalesce(slope_after, slope_before), slope_before)
        end as cost_high
    from trend_priced
),

replay_gap as (
    -- replay_ab's gap: a changed data order is judged on the evaluation both attempts ran
    -- (their training losses are on different batches); anything else on the training loss
    -- over the last replayed steps (the same batches, so a clean A/B), where it is not below 0
    select
        assigned.run_id,
        assigned.finding_id,
        (assigned.category = 'data_repetition') as is_eval_gap,
        case when assigned.category = 'data_repetition' then replays.eval_loss_replay - replays.eval_loss_original
            else greatest(0.0, replays.tail_loss_delta) end as gap
    from assigned
    inner join replays
        on assigned.run_id = replays.run_id
        and assigned.replay_id = replays.replay_id
    where assigned.cost_estimator = 'replay_ab'
),

estimated as (
    select
        assigned.*,
        run_end.final_val_loss,
        run_end.end_step,
        noise.noise_floor,
        noise.eval_sigma,
        -- the method's own range (before the noise floor widens it)
        case assigned.cost_estimator
            when 'overfit_exact' then assigned.estimated_cost
            when 'lr_basin_prior' then run_end.final_val_loss * {{ threshold('lr_basin_share_low') }} * lr_excess.mean_squared_doublings
            when 'anneal_prior' then run_end.final_val_loss * {{ threshold('anneal_prior_share_low') }} * assigned.cooldown_skipped_share
            when 'replay_ab' then least(0.0, replay_gap.gap)
            when 'val_trend' then trend_costs.cost_low
            when 'repeat_overfit' then greatest(0.0, run_end.final_val_loss - repeat_best.best_since_repeat)
            else least(law.cost - {{ z }} * law.cost_se, law.cost_alpha_low)
        end as method_low,
        case assigned.cost_estimator
            when 'overfit_exact' then assigned.estimated_cost
            when 'lr_basin_prior' then run_end.final_val_loss * {{ threshold('lr_basin_share_mid') }} * lr_excess.mean_squared_doublings
            when 'anneal_prior' then run_end.final_val_loss * {{ threshold('anneal_prior_share_mid') }} * assigned.cooldown_skipped_share
            when 'replay_ab' then replay_gap.gap * {{ threshold('replay_gap_persistence') }}
            when 'val_trend' then (trend_costs.cost_low + trend_costs.cost_high) / 2
            when 'repeat_overfit' then greatest(0.0, run_end.final_val_loss - repeat_best.best_since_repeat)
            else law.cost
        end as val_loss_cost,
        case assigned.cost_estimator
            when 'overfit_exact' then assigned.estimated_cost
            when 'lr_basin_prior' then run_end.final_val_loss * {{ threshold('lr_basin_share_high') }} * lr_excess.mean_squared_doublings
            when 'anneal_prior' then run_end.final_val_loss * {{ threshold('anneal_prior_share_high') }} * assigned.cooldown_skipped_share
            when 'replay_ab' then greatest(0.0, replay_gap.gap)
            when 'val_trend' then trend_costs.cost_high
            when 'repeat_overfit' then greatest(0.0, run_end.final_val_loss - repeat_best.best_since_repeat)
            else greatest(law.cost + {{ z }} * law.cost_se, law.cost_alpha_high)
        end as method_high,
        case assigned.cost_estimator
            when 'overfit_exact' then 'Measured: final val_loss ' || {{ fmt('run_end.final_val_loss', 4) }} || ' minus the held-out minimum '
                || {{ fmt('run_end.best_val_loss', 4) }} || '. Exact for this run (no range); keeping the best checkpoint recovers it.'
            when 'schedule_law' then 'Loss-curve law fitted to this run''s ' || {{ fmt_int('law.fit_points') }}
                || ' evaluations after warmup (val_loss = L0 + A*S1^-' || {{ fmt('law.alpha', 2) }}
                || ' + B*lr, S1 the LR area so far, lr the mean LR since the previous evaluation; after Tissue et al. 2024 and the Multi-Power Law, Luo et al. 2025; rmse '
                || {{ fmt('law.fit_rmse', 4) }} || '), read at the final evaluation under the logged and the configured schedule: LR area '
                || {{ fmt('curve_end.s1_effective', 4) }} || ' vs ' || {{ fmt('curve_end.s1_configured', 4) }} || ' (' || {{ fmt('law.cost_progress', 4) }}
                || ' from progress), last LR ' || {{ fmt('curve_end.lr_mean_logged', 6) }} || ' vs ' || {{ fmt('curve_end.lr_mean_configured', 6) }}
                || ' (' || {{ fmt('law.cost_lr', 4) }} || ' from the LR level, B = ' || {{ fmt('law.b_lr', 1) }}
                || ' nats per unit LR). Uncertain: +/-' || {{ fmt(z ~ ' * law.cost_se', 4) }} || ' from the fit (' || {{ fmt_int('law.alphas_about_as_good') }}
                || ' exponents fit about as well: ' || {{ fmt('law.cost_alpha_low', 4) }} || ' to ' || {{ fmt('law.cost_alpha_high', 4) }}
                || '); the law holds at a fixed peak LR, which a schedule finding keeps.'
            when 'shard_law' then 'Loss-curve law fitted to this run''s ' || {{ fmt_int('law.fit_points') }}
                || ' evaluations after warmup, with the progress the shard''s data erased as a shift of the LR area (val_loss = L0 + A*(S1 - shift)^-'
                || {{ fmt('law.alpha', 2) }} || case when law.has_lr_term then ' + B*lr' else '' end
                || ' + E*Xnew; the shift grows with the shard''s train-loss excess over the spike-free baseline, '
                || {{ fmt('law.shard_excess', 1) }} || ' nats over its steps; Xnew the excess since the previous evaluation; rmse '
                || {{ fmt('law.fit_rmse', 4) }} || '): the best fit has the shard erase ' || {{ fmt_pct('law.shift_share', 0) }}
                || ' of the run''s progress, which the run then had to redo: ' || {{ fmt('law.cost_progress', 4) }} || ' at the end'
                || case when law.cost_excess_new <> 0 then ', plus ' || {{ fmt('law.cost_excess_new', 4) }} || ' of fresh damage from its steps just before the final evaluation' else '' end
                || '. Uncertain: +/-' || {{ fmt(z ~ ' * law.cost_se', 4) }} || ' from the fit, ' || {{ fmt('law.cost_alpha_low', 4) }} || ' to '
                || {{ fmt('law.cost_alpha_high', 4) }} || ' over the fits about as good; other problems in the same steps are not separated.'
            when 'lost_steps_law' then 'Loss-curve law fitted to this run''s ' || {{ fmt_int('law.fit_points') }}
                || ' evaluations after warmup (val_loss = L0 + A*S1^-' || {{ fmt('law.alpha', 2) }}
                || case when law.has_lr_term then ' + B*lr' else '' end || ', S1 the LR area so far; rmse ' || {{ fmt('law.fit_rmse', 4) }}
                || '): the updates lost to non-finite losses or gradients held ' || {{ fmt('curve_end.s1_logged - curve_end.s1_effective', 6) }}
                || ' of LR area (' || {{ fmt_pct(safe_divide('curve_end.s1_logged - curve_end.s1_effective', 'curve_end.s1_logged'), 2) }}
                || ' of the run''s); given back, the law puts the final val_loss ' || {{ fmt('law.cost', 4) }}
                || ' lower. Uncertain: +/-' || {{ fmt(z ~ ' * law.cost_se', 4) }} || ' from the fit; assumes the lost updates were skipped, not applied with bad values.'
            when 'lr_basin_prior' then 'Prior: final loss is roughly a parabola in log LR around its optimum (the U-shaped LR sensitivity of Wortsman et al. 2023): '
                || {{ fmt_pct(threshold('lr_basin_share_mid'), 2) }} || ' of final val_loss (range ' || {{ fmt_pct(threshold('lr_basin_share_low'), 2) }} || '-'
                || {{ fmt_pct(threshold('lr_basin_share_high'), 2) }} || ') per squared doubling, x the mean squared doublings the logged LR ran above the configured schedule ('
                || {{ fmt('lr_excess.mean_squared_doublings', 2) }} || ' over ' || {{ fmt_int('lr_excess.compared_steps') }} || ' steps, max '
                || {{ fmt('lr_excess.max_lr_ratio', 2) }} || 'x), x final val_loss ' || {{ fmt('run_end.final_val_loss', 4) }}
                || '. A loss-curve law fitted to one run cannot price a scaled peak (it reads more LR area as more progress), so the curvature is a prior, tuned on small calibration runs; '
                || 'low end 0: if the configured LR was below this model''s optimum, a larger one cost nothing.'
            when 'anneal_prior' then 'Prior (Hagele et al. 2024; Hu et al. 2024, WSD cooldown): a full LR cooldown lowers final loss by about '
                || {{ fmt_pct(threshold('anneal_prior_share_low'), 0) }} || '-' || {{ fmt_pct(threshold('anneal_prior_share_high'), 0) }} || ' (mid '
                || {{ fmt_pct(threshold('anneal_prior_share_mid'), 1) }} || '); this run skipped ' || {{ fmt_pct('assigned.cooldown_skipped_share') }}
                || ' of its cooldown'
                || case when assigned.category = 'lr_schedule_mismatch'
                    then ' (mean LR over the last evaluation interval ' || {{ fmt('curve_end.lr_mean_logged', 6) }} || ' against '
                        || {{ fmt('curve_end.lr_mean_configured', 6) }} || ' configured; the run never shows its loss at other LRs, so a loss-curve law cannot price it)'
                    else '' end
                || '; x final val_loss ' || {{ fmt('run_end.final_val_loss', 4) }}
                || '. Uncertain within the range: the gain depends on the run''s length and noise level.'
            when 'replay_ab' then case
                when replay_gap.is_eval_gap then 'Natural experiment: the evaluation at step ' || {{ fmt_int('replays.replayed_eval_step') }}
                    || ' ran in both attempts (first on the weights before the crash, then after the resume at step ' || {{ fmt_int('replays.resume_step') }}
                    || '): val_loss ' || {{ fmt('replays.eval_loss_original', 4) }} || ' then ' || {{ fmt('replays.eval_loss_replay', 4) }}
                    || ' (replay - original ' || {{ fmt('replays.eval_loss_replay - replays.eval_loss_original', 4) }} || '). Mid assumes '
                    || {{ fmt_pct(threshold('replay_gap_persistence'), 0) }} || ' of that gap survives to the end (replay_gap_persistence); the range runs from none of it to all of it. '
                    || 'The A/B measures everything that differed between the attempts.'
                else 'Natural experiment: steps ' || {{ fmt_int('replays.first_compared_step') }} || '-' || {{ fmt_int('replays.last_compared_step') }}
                || ' ran twice from the checkpoint before the resume at step ' || {{ fmt_int('replays.resume_step') }} || ' ('
                || {{ fmt_int('replays.compared_steps') }} || ' steps compared; clipping held on ' || {{ fmt_int('replays.steps_clipped_only_in_original') }}
                || ' steps of the original attempt that the replay left unclipped). Training loss replay - original: mean '
                || {{ fmt('replays.mean_loss_delta', 4) }} || ', over the last ' || {{ fmt_int(threshold('replay_tail_steps')) }} || ' replayed steps '
                || {{ fmt('replays.tail_loss_delta', 4) }} || '. The end-of-replay gap is the high end (no recovery); mid assumes '
                || {{ fmt_pct(threshold('replay_gap_persistence'), 0) }} || ' of it survives to the end (replay_gap_persistence), low that it washes out. '
                || 'The A/B measures everything that differed between the attempts, not clipping alone.'
                end
            when 'repeat_overfit' then 'From the eval log: since the data began repeating at step ' || {{ fmt_int('assigned.first_step') }}
                || ' the best val_loss is ' || {{ fmt('repeat_best.best_since_repeat', 4) }} || ' (step ' || {{ fmt_int('repeat_best.best_step_since_repeat') }}
                || '), the final ' || {{ fmt('run_end.final_val_loss', 4) }}
                || case when run_end.final_val_loss > repeat_best.best_since_repeat then ': the repetition shows as that rise.'
                    else ': the validation loss kept improving through the repeated epochs, so the repetition shows no cost.' end
                || ' A run on fresh data could still be better; the run cannot show that.'
            when 'val_trend' then 'From the run''s eval log: val_loss ' || {{ fmt('trend_costs.before_val_loss', 4) }} || ' at step '
                || {{ fmt_int('trend_costs.before_step') }} || ' before the problem (steps ' || {{ fmt_int('assigned.window_first') }} || '-'
                || {{ fmt_int('assigned.window_last') }} || '), peak after it ' || {{ fmt('trend_costs.peak_val_loss', 4) }}
                || ' (' || case when trend_costs.val_jump >= 0 then '+' else '' end || {{ fmt('trend_costs.val_jump', 4) }} || ')'
                || case
                    when trend_costs.is_jump_noise then ': no validation jump beyond eval noise (val_trend_min_jump), so no lasting cost is visible'
                    when trend_costs.recovered_step is null then ': never back to that level by the end (final ' || {{ fmt('run_end.final_val_loss', 4) }}
                        || '); low = what remains at the end, high adds the progress the curve was making before (' || {{ fmt('trend_costs.slope_before', 5) }} || '/step)'
                    else ': back to that level at step ~' || {{ fmt_int('trend_costs.recovered_step') }} || ', so ~' || {{ fmt_int('trend_costs.steps_lost') }}
                        || ' steps of progress lost; priced at the curve''s slope after recovery (' || {{ fmt('trend_costs.slope_after', 5) }}
                        || '/step) and before the problem (' || {{ fmt('trend_costs.slope_before', 5) }} || '/step)'
                end
                || '. Uncertain: linear extrapolation of the run''s own curve; other problems in the same steps are not separated.'
            when 'none' then case
                when assigned.caused_by is not null then 'Counted in the estimate of its cause ' || assigned.root_cause || '.'
                when assigned.finding_id = 'data_repetition:run' and train_set_evals.run_id is not null
                    then 'No estimate: the evaluation is the training data (' || train_set_evals.contamination_finding_id
                        || '), which memorised repeats only improve, so it cannot show what the repetition cost; severity is the detector''s.'
                when assigned.finding_id = 'data_repetition:run' and overfit_runs.run_id is not null
                    then 'Counted in the overfitting finding: the rise of the validation loss is what the repetition shows.'
                when assigned.ledger = 'model' then 'No estimate: the logs do not show this finding''s effect on validation loss; severity is the detector''s.'
                when assigned.ledger = 'compute' then 'Compute only: costs time, not model quality.'
                else 'Record-keeping only: no cost to the model or compute.'
            end
        end as method_evidence,
        case assigned.cost_estimator
            when 'overfit_exact' then 'None needed: the held-out minimum is measured; confirm by evaluating the best checkpoint.'
            when 'lr_basin_prior' then 'Rerun with only the LR fixed to the configured schedule (same seed, data order) and compare final val_loss.'
            when 'schedule_law' then 'Rerun with only the LR fixed to the configured schedule (same seed, data order) and compare final val_loss.'
            when 'anneal_prior' then 'Rerun with only the schedule set to decay over the run (or a cooldown over the last 20% of steps) and compare final val_loss.'
            when 'lost_steps_law' then 'Rerun with the overflow avoided (e.g. bf16 or a lower initial loss scale), same seed and data order, and compare final val_loss.'
            when 'replay_ab' then 'Resume from the same checkpoint with the original setting restored (e.g. clipping on, the loader state restored) to the end of the run; compare final val_loss.'
            when 'repeat_overfit' then 'Rerun on enough unique data for one pass (same steps and schedule) and compare final val_loss.'
            when 'shard_law' then 'Rerun with only this data removed (e.g. the shard filtered), same seed and schedule, and compare final val_loss.'
            when 'val_trend' then 'Rerun from the checkpoint before step ' || {{ fmt_int('trend_costs.before_step') }}
                || ' with only this problem removed'
                || case when assigned.category = 'bad_data_shard' then ' (the shard filtered out)' else '' end
                || ' and compare final val_loss.'
        end as confirm_rerun,
        case when assigned.ledger = 'compute' and assigned.cost_unit = 'seconds' then assigned.estimated_cost end as compute_seconds_lost,
        wall_clock.wall_clock_sec
    from assigned
    left join run_end
        on assigned.run_id = run_end.run_id
    left join lr_excess
        on assigned.run_id = lr_excess.run_id
    left join wall_clock
        on assigned.run_id = wall_clock.run_id
    left join replays
        on assigned.run_id = replays.run_id
        and assigned.replay_id = replays.replay_id
    left join trend_costs
        on assigned.run_id = trend_costs.run_id
        and assigned.finding_id = trend_costs.finding_id
    left join replay_gap
        on assigned.run_id = replay_gap.run_id
        and assigned.finding_id = replay_gap.finding_id
    left join law
        on assigned.run_id = law.run_id
        and assigned.finding_id = law.finding_id
    left join noise
        on assigned.run_id = noise.run_id
    left join curve_end
        on assigned.run_id = curve_end.run_id
    left join repeat_best
        on assigned.run_id = repeat_best.run_id
        and assigned.finding_id = repeat_best.finding_id
    left join overfit_runs
        on assigned.run_id = overfit_runs.run_id
    left join train_set_evals
        on assigned.run_id = train_set_evals.run_id
),

intervals as (
    -- one figure and one interval per finding: the method's range widened by the noise floor
    -- in quadrature (the estimate's own uncertainty and the noise of two final evaluations
    -- add); an exact measurement keeps its point. Below the floor: within noise.
    select
        estimated.*,
        case
            when val_loss_cost is null then null
            when cost_estimator = 'overfit_exact' or noise_floor is null then least(method_low, val_loss_cost)
            else val_loss_cost - sqrt(power(greatest(0.0, val_loss_cost - method_low), 2) + power(noise_floor, 2))
        end as val_loss_cost_low,
        case
            when val_loss_cost is null then null
            when cost_estimator = 'overfit_exact' or noise_floor is null then greatest(method_high, val_loss_cost)
            else val_loss_cost + sqrt(power(greatest(0.0, method_high - val_loss_cost), 2) + power(noise_floor, 2))
        end as val_loss_cost_high,
        -- overfit_exact is no estimate but a measurement (re-evaluating the best checkpoint gives it
        -- back), and its detector already asked that the rise clear the eval noise
        coalesce(val_loss_cost < noise_floor and cost_estimator <> 'overfit_exact', false) as cost_within_noise
    from estimated
),

noted as (
    select
        intervals.*,
        case
            when cost_within_noise then method_evidence || ' Within noise: below this run''s noise floor of ' || {{ fmt('noise_floor', 4) }}
                || ' (the noise of a difference of two final evaluations: the eval-to-eval jitter ' || {{ fmt('eval_sigma', 4) }}
                || ' x sqrt(2) x noise_floor_z ' || {{ fmt(threshold('noise_floor_z'), 1) }} || '), so the run cannot tell this cost from none.'
            when val_loss_cost is not null and noise_floor is not null then method_evidence || ' Noise floor ' || {{ fmt('noise_floor', 4) }}
                || ' (eval-to-eval jitter ' || {{ fmt('eval_sigma', 4) }} || '), included in the range.'
            when val_loss_cost is not null then method_evidence || ' No noise floor: too few evaluations after the warmup to measure their jitter.'
            else method_evidence
        end as cost_evidence
    from intervals
),

root_severity as (
    -- the severity of root findings: model findings with a cost take the cost band, capped by the
    -- detector's evidence; compute findings at most medium; records at most low (config at most medium)
    select
        noted.*,
        {{ safe_divide('val_loss_cost', 'final_val_loss') }} as val_loss_cost_share,
        {{ safe_divide('compute_seconds_lost', 'wall_clock_sec') }} as compute_share_lost,
        case
            -- a cost the run cannot tell from noise is low (at most the detector's), whatever its band:
            -- not a measured harm, nor a measured absence of one
            when ledger = 'model' and val_loss_cost is not null and cost_within_noise
                then {{ severity_min('detector_severity', "'low'") }}
            when ledger = 'model' and val_loss_cost is not null
                then {{ severity_min(cost_band(safe_divide('val_loss_cost', 'final_val_loss')), 'detector_severity') }}
            when ledger = 'compute' then {{ severity_min('detector_severity', "'medium'") }}
            -- a config that cannot be right (impossible values, a key the checks need) stops checks
            -- from running: it may stay medium; other record-keeping glitches at most low
            when ledger = 'records' and impact_kind = 'config'
                then {{ severity_min('detector_severity', "'" ~ threshold('config_severity_cap') ~ "'") }}
            when ledger = 'records' then {{ severity_min('detector_severity', "'" ~ threshold('records_severity_cap') ~ "'") }}
            else detector_severity
        end as own_severity
    from noted
),

final as (
    -- a symptom is never more severe than its root cause
    select
        root_severity.*,
        case when root_severity.root_cause is null then root_severity.own_severity
            else {{ severity_min('root_severity.own_severity', 'roots.own_severity') }}
        end as severity
    from root_severity
    left join root_severity as roots
        on root_severity.run_id = roots.run_id
        and root_severity.root_cause = roots.finding_id
)

select * from final
