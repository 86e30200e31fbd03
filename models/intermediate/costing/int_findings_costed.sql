-- One row per finding with what it cost, kept in three ledgers that are never
-- put on one scale: `model` findings in nats of final validation loss (a
-- low-mid-high range, the estimator that produced it, the evidence in words and
-- the one-change rerun that would confirm it), `compute` findings in seconds
-- and share of the run's wall time, `records` findings at no cost. Estimators
-- (see the README, "How findings are costed"):
--   overfit_exact  final minus best validation loss (measured, exact)
--   val_trend      the validation jump after the problem's steps, turned into
--                  steps of progress lost and priced on the run's own curve
--   lr_prior       LR above the configured schedule: a documented loss share per
--                  doubling (vars lr_prior_*) x the mean doublings logged
--   anneal_prior   no LR cooldown: a documented loss share (vars anneal_prior_*)
--                  x the share of the cooldown skipped
--   replay_ab      steps replayed after a resume, original vs replay
--   none           no estimate (evidence only); a symptom is costed in its cause
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
    -- which estimator each finding gets
    select
        linked.*,
        coalesce(spike_windows.window_first, linked.first_step) as window_first,
        coalesce(spike_windows.window_last, linked.last_step) as window_last,
        finding_replays.replay_id,
        case
            when linked.ledger <> 'model' or linked.caused_by is not null then 'none'
            when linked.category = 'overfitting' then 'overfit_exact'
            when linked.category = 'lr_above_peak' then 'lr_prior'
            when linked.finding_id = 'schedule_sanity:never_anneals' then 'anneal_prior'
            when linked.category = 'grad_clip_violation' and finding_replays.replay_id is not null then 'replay_ab'
            -- val_trend needs an evaluation before the window and one after it
            when linked.category in ('bad_data_shard', 'loss_spikes', 'grad_norm_spikes', 'grad_clip_violation')
                and run_end.first_eval_step < coalesce(spike_windows.window_first, linked.first_step)
                and run_end.end_step > coalesce(spike_windows.window_last, linked.last_step) then 'val_trend'
            else 'none'
        end as cost_estimator
    from linked
    left join run_end
        on linked.run_id = run_end.run_id
    left join spike_windows
        on linked.run_id = spike_windows.run_id
        and linked.finding_id = spike_windows.finding_id
    left join finding_replays
        on linked.run_id = finding_replays.run_id
        and linked.finding_id = finding_replays.finding_id
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
        (trend.val_jump < {{ var('val_trend_min_jump') }} * trend.before_val_loss) as is_jump_noise
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

estimated as (
    select
        assigned.*,
        run_end.final_val_loss,
        case assigned.cost_estimator
            when 'overfit_exact' then assigned.estimated_cost
            when 'lr_prior' then run_end.final_val_loss * {{ var('lr_prior_share_per_doubling_low') }} * lr_excess.mean_doublings
            when 'anneal_prior' then run_end.final_val_loss * {{ var('anneal_prior_share_low') }} * assigned.estimated_cost
            when 'replay_ab' then 0.0
            when 'val_trend' then trend_costs.cost_low
        end as val_loss_cost_low,
        case assigned.cost_estimator
            when 'overfit_exact' then assigned.estimated_cost
            when 'lr_prior' then run_end.final_val_loss * {{ var('lr_prior_share_per_doubling_mid') }} * lr_excess.mean_doublings
            when 'anneal_prior' then run_end.final_val_loss * {{ var('anneal_prior_share_mid') }} * assigned.estimated_cost
            when 'replay_ab' then greatest(0.0, replays.tail_loss_delta) * {{ var('replay_gap_persistence') }}
            when 'val_trend' then (trend_costs.cost_low + trend_costs.cost_high) / 2
        end as val_loss_cost,
        case assigned.cost_estimator
            when 'overfit_exact' then assigned.estimated_cost
            when 'lr_prior' then run_end.final_val_loss * {{ var('lr_prior_share_per_doubling_high') }} * lr_excess.mean_doublings
            when 'anneal_prior' then run_end.final_val_loss * {{ var('anneal_prior_share_high') }} * assigned.estimated_cost
            when 'replay_ab' then greatest(0.0, replays.tail_loss_delta)
            when 'val_trend' then trend_costs.cost_high
        end as val_loss_cost_high,
        case assigned.cost_estimator
            when 'overfit_exact' then 'Measured: final val_loss ' || {{ fmt('run_end.final_val_loss', 4) }} || ' minus the held-out minimum '
                || {{ fmt('run_end.best_val_loss', 4) }} || '. Exact for this run (no range); keeping the best checkpoint recovers it.'
            when 'lr_prior' then 'Prior (Wortsman et al. 2023, small-scale proxies): final loss rises about '
                || {{ fmt_pct(var('lr_prior_share_per_doubling_low'), 0) }} || '-' || {{ fmt_pct(var('lr_prior_share_per_doubling_high'), 0) }}
                || ' (mid ' || {{ fmt_pct(var('lr_prior_share_per_doubling_mid'), 0) }} || ') per doubling of the LR beyond the optimum; the logged LR ran '
                || {{ fmt('lr_excess.mean_doublings', 2) }} || ' doublings above the configured schedule on average over '
                || {{ fmt_int('lr_excess.compared_steps') }} || ' steps (max ' || {{ fmt('lr_excess.max_lr_ratio', 2) }} || 'x); x final val_loss '
                || {{ fmt('run_end.final_val_loss', 4) }} || '. Uncertain within the range: assumes the configured LR is near the optimum, and a model '
                || 'this far above it can also diverge (then the cost is larger).'
            when 'anneal_prior' then 'Prior (Hagele et al. 2024; Hu et al. 2024, WSD cooldown): a full LR cooldown lowers final loss by about '
                || {{ fmt_pct(var('anneal_prior_share_low'), 0) }} || '-' || {{ fmt_pct(var('anneal_prior_share_high'), 0) }} || ' (mid '
                || {{ fmt_pct(var('anneal_prior_share_mid'), 1) }} || '); this run skipped ' || {{ fmt_pct('assigned.estimated_cost') }}
                || ' of its cooldown; x final val_loss ' || {{ fmt('run_end.final_val_loss', 4) }}
                || '. Uncertain within the range: the gain depends on the run''s length and noise level.'
            when 'replay_ab' then 'Natural experiment: steps ' || {{ fmt_int('replays.first_compared_step') }} || '-' || {{ fmt_int('replays.last_compared_step') }}
                || ' ran twice from the checkpoint before the resume at step ' || {{ fmt_int('replays.resume_step') }} || ' ('
                || {{ fmt_int('replays.compared_steps') }} || ' steps compared; clipping held on ' || {{ fmt_int('replays.steps_clipped_only_in_original') }}
                || ' steps of the original attempt that the replay left unclipped). Training loss replay - original: mean '
                || {{ fmt('replays.mean_loss_delta', 4) }} || ', over the last ' || {{ fmt_int(var('replay_tail_steps')) }} || ' replayed steps '
                || {{ fmt('replays.tail_loss_delta', 4) }} || '. The end-of-replay gap is the high end (no recovery); mid assumes '
                || {{ fmt_pct(var('replay_gap_persistence'), 0) }} || ' of it survives to the end (replay_gap_persistence), low that it washes out. '
                || 'The A/B measures everything that differed between the attempts, not clipping alone.'
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
                when assigned.ledger = 'model' then 'No estimate: the logs do not show this finding''s effect on validation loss; severity is the detector''s.'
                when assigned.ledger = 'compute' then 'Compute only: costs time, not model quality.'
                else 'Record-keeping only: no cost to the model or compute.'
            end
        end as cost_evidence,
        case assigned.cost_estimator
            when 'overfit_exact' then 'None needed: the held-out minimum is measured; confirm by evaluating the best checkpoint.'
            when 'lr_prior' then 'Rerun with only the LR fixed to the configured schedule (same seed, data order) and compare final val_loss.'
            when 'anneal_prior' then 'Rerun with only the decay length set to the run (or a cooldown over the last 20% of steps) and compare final val_loss.'
            when 'replay_ab' then 'Resume from the same checkpoint with the original setting restored (e.g. clipping on) to the end of the run; compare final val_loss.'
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
),

root_severity as (
    -- the severity of root findings: model findings with a cost take the cost band, capped by the
    -- detector's evidence; compute findings at most medium; records at most low (config at most medium)
    select
        estimated.*,
        {{ safe_divide('val_loss_cost', 'final_val_loss') }} as val_loss_cost_share,
        {{ safe_divide('compute_seconds_lost', 'wall_clock_sec') }} as compute_share_lost,
        case
            when ledger = 'model' and val_loss_cost is not null
                then {{ severity_min(cost_band(safe_divide('val_loss_cost', 'final_val_loss')), 'detector_severity') }}
            when ledger = 'compute' then {{ severity_min('detector_severity', "'medium'") }}
            -- a config that cannot be right (impossible values, a key the checks need) stops checks
            -- from running: it may stay medium; other record-keeping glitches at most low
            when ledger = 'records' and impact_kind = 'config'
                then {{ severity_min('detector_severity', "'" ~ var('config_severity_cap') ~ "'") }}
            when ledger = 'records' then {{ severity_min('detector_severity', "'" ~ var('records_severity_cap') ~ "'") }}
            else detector_severity
        end as own_severity
    from estimated
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
