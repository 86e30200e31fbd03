-- Every claim the report's story makes about the run's course, decided here with its threshold
-- (vars under "what the report says", docs/report.md): the report renders these, it does not
-- judge. One row per run (the config is the run spine).
--   * how the log ends (int_run_ends_measured): said first, before any judgement;
--   * the validation trend: `val_trend` is not_evaluated, one_evaluation, did_not_improve,
--     stopped_improving (the best evaluation lies well before the last one), plateaued
--     ("almost no net progress": most of the fall came early and the rest is small), or
--     still_improving;
--   * the largest dip: a validation loss clearly above the best so far, and whether accuracy
--     collapsed with it;
--   * the restarts: how many, and how many after a logged crash (a stop without one is not a crash);
--   * where the loss spikes are: the shard holding most of the counted spike steps, and whether
--     that is most of them (story_spike_shard_min_share, at least story_spike_shard_min_steps);
--   * the step time the logs add up to: the counted rows', the replayed rows' (superseded rows of
--     another attempt than the one that counts for their step: work redone after a resume; a
--     duplicate of the counted attempt is not) and the counted rows with no time logged.
with

config as (
    select run_id from {{ run_ref('stg_training__config') }}
),

ends as (
    select * from {{ run_ref('int_run_ends_measured') }}
),

evals as (
    select run_id, step, val_loss, val_accuracy, best_val_loss_so_far, is_best, eval_index, eval_count
    from {{ run_ref('int_evals_compared') }}
),

eval_ends as (
    select
        run_id,
        max(eval_count) as n_evals,
        max(case when eval_index = 1 then step end) as first_eval_step,
        max(case when eval_index = 1 then val_loss end) as first_val_loss,
        max(case when is_best then step end) as best_eval_step,
        max(case when is_best then val_loss end) as best_val_loss,
        max(case when eval_index = eval_count then step end) as final_eval_step,
        max(case when eval_index = eval_count then val_loss end) as final_val_loss,
        max(case when eval_index = eval_count then val_accuracy end) as final_val_accuracy
    from evals
    group by run_id
),

plateau_steps as (
    -- the first evaluation by which story_plateau_drop_share of the net fall had happened
    select evals.run_id, min(evals.step) as plateau_step
    from evals
    inner join eval_ends
        on evals.run_id = eval_ends.run_id
    where eval_ends.first_val_loss > eval_ends.final_val_loss
        and eval_ends.first_val_loss - evals.val_loss
            >= {{ threshold('story_plateau_drop_share') }} * (eval_ends.first_val_loss - eval_ends.final_val_loss)
    group by evals.run_id
),

plateau as (
    select plateau_steps.run_id, plateau_steps.plateau_step, evals.val_loss as plateau_val_loss,
        evals.val_accuracy as plateau_val_accuracy
    from plateau_steps
    inner join evals
        on plateau_steps.run_id = evals.run_id
        and plateau_steps.plateau_step = evals.step
),

evals_with_before as (
    select
        run_id,
        step,
        val_loss,
        val_accuracy,
        {{ previous_value('best_val_loss_so_far', 'step', 'run_id') }} as best_before,
        {{ previous_value('step', 'step', 'run_id') }} as previous_eval_step,
        {{ previous_value('val_accuracy', 'step', 'run_id') }} as previous_val_accuracy
    from evals
),

dips as (
    -- the largest rise above the best so far, when it exceeds story_dip_min_rise of that best
    select
        run_id,
        step as dip_step,
        val_loss as dip_val_loss,
        best_before as dip_best_before,
        previous_eval_step as dip_previous_eval_step,
        val_accuracy as dip_val_accuracy,
        previous_val_accuracy as dip_previous_val_accuracy,
        row_number() over (
            partition by run_id
            order by val_loss - best_before desc, step
            rows between unbounded preceding and current row
        ) as dip_rank
    from evals_with_before
    where best_before is not null
        and val_loss - best_before > {{ threshold('story_dip_min_rise') }} * best_before
),

restarts as (
    select
        run_id,
        count(*) as n_restarts,
        cast(sum(case when crash_event_text is not null then 1 else 0 end) as {{ dbt.type_bigint() }}) as n_crash_restarts
    from {{ run_ref('int_restarts_detected') }}
    group by run_id
),

spike_steps as (
    select run_id, step, train_row_id, shard_id, source
    from {{ run_ref('step_metrics') }}
    where coalesce(is_counted, true) and coalesce(is_loss_spike, false)
),

spike_totals as (
    select run_id, count(*) as n_spike_steps
    from spike_steps
    group by run_id
),

spike_shards as (
    -- the shard with the most spike steps (ties: the lowest shard id)
    select
        run_id,
        shard_id,
        count(*) as n_steps,
        row_number() over (
            partition by run_id
            order by count(*) desc, shard_id
            rows between unbounded preceding and current row
        ) as shard_rank
    from spike_steps
    where shard_id is not null
    group by run_id, shard_id
),

spike_sources as (
    -- the source of each shard's first spike step
    select
        run_id,
        shard_id,
        source,
        row_number() over (
            partition by run_id, shard_id
            order by step, train_row_id
            rows between unbounded preceding and current row
        ) as from_first
    from spike_steps
    where shard_id is not null
),

spike_shard as (
    select
        spike_shards.run_id,
        spike_shards.shard_id as spike_shard_id,
        spike_sources.source as spike_shard_source,
        spike_shards.n_steps as spike_shard_steps
    from spike_shards
    left join spike_sources
        on spike_shards.run_id = spike_sources.run_id
        and spike_shards.shard_id = spike_sources.shard_id
        and spike_sources.from_first = 1
    where spike_shards.shard_rank = 1
),

step_rows as (
    select run_id, train_row_id, step, is_counted, attempt_number, step_time_sec
    from {{ run_ref('step_metrics') }}
),

superseded_rows as (
    -- the rows that do not count (a few: replays and duplicates)
    select run_id, train_row_id, step, attempt_number
    from step_rows
    where not is_counted
),

counted_attempts as (
    -- the attempt whose row counts for each of their steps (the last counted row of the step)
    select
        step_rows.run_id,
        step_rows.step,
        step_rows.attempt_number,
        row_number() over (
            partition by step_rows.run_id, step_rows.step
            order by step_rows.train_row_id desc
            rows between unbounded preceding and current row
        ) as from_last
    from step_rows
    inner join (select distinct run_id, step from superseded_rows) as superseded_steps
        on step_rows.run_id = superseded_steps.run_id
        and step_rows.step = superseded_steps.step
    where step_rows.is_counted
),

replayed_rows as (
    -- superseded rows of another attempt than the counted one: work redone after a resume (a
    -- duplicate of the counted attempt is not)
    select superseded_rows.run_id, superseded_rows.train_row_id
    from superseded_rows
    inner join counted_attempts
        on superseded_rows.run_id = counted_attempts.run_id
        and superseded_rows.step = counted_attempts.step
        and counted_attempts.from_last = 1
    where superseded_rows.attempt_number <> counted_attempts.attempt_number
),

step_rows_replayed as (
    select
        step_rows.run_id,
        step_rows.is_counted,
        step_rows.step_time_sec,
        replayed_rows.train_row_id is not null as is_replayed
    from step_rows
    left join replayed_rows
        on step_rows.run_id = replayed_rows.run_id
        and step_rows.train_row_id = replayed_rows.train_row_id
),

step_times as (
    select
        run_id,
        cast(sum(case when step_time_sec is not null then 1 else 0 end) as {{ dbt.type_bigint() }}) as n_timed_rows,
        cast(sum(case when is_counted then 1 else 0 end) as {{ dbt.type_bigint() }}) as n_counted_rows,
        sum(case when is_counted then step_time_sec end) as counted_step_time_sec,
        cast(sum(case when is_replayed then 1 else 0 end) as {{ dbt.type_bigint() }}) as n_replayed_rows,
        sum(case when is_replayed then step_time_sec end) as replayed_step_time_sec,
        cast(sum(case when is_counted and step_time_sec is null then 1 else 0 end) as {{ dbt.type_bigint() }})
            as n_untimed_counted_rows,
        percentile_cont(0.5) within group (order by case when is_counted then step_time_sec end)
            as median_step_time_sec
    from step_rows_replayed
    group by run_id
),

joined as (
    select
        config.run_id,
        ends.end_kind,
        ends.first_step,
        ends.last_step,
        ends.total_steps,
        ends.rows_counted,
        ends.logging_interval,
        coalesce(eval_ends.n_evals, 0) as n_evals,
        eval_ends.first_eval_step,
        eval_ends.first_val_loss,
        eval_ends.best_eval_step,
        eval_ends.best_val_loss,
        eval_ends.final_eval_step,
        eval_ends.final_val_loss,
        eval_ends.final_val_accuracy,
        plateau.plateau_step,
        plateau.plateau_val_loss,
        plateau.plateau_val_accuracy,
        {{ safe_divide('plateau.plateau_val_loss - eval_ends.final_val_loss', 'plateau.plateau_val_loss') }}
            as late_fall_share,
        dips.dip_step,
        dips.dip_val_loss,
        dips.dip_best_before,
        dips.dip_previous_eval_step,
        dips.dip_val_accuracy,
        dips.dip_previous_val_accuracy,
        coalesce(restarts.n_restarts, 0) as n_restarts,
        coalesce(restarts.n_crash_restarts, 0) as n_crash_restarts,
        coalesce(spike_totals.n_spike_steps, 0) as n_spike_steps,
        spike_shard.spike_shard_id,
        spike_shard.spike_shard_source,
        spike_shard.spike_shard_steps,
        coalesce(step_times.n_timed_rows, 0) as n_timed_rows,
        coalesce(step_times.n_counted_rows, 0) as n_counted_rows,
        step_times.counted_step_time_sec,
        coalesce(step_times.n_replayed_rows, 0) as n_replayed_rows,
        step_times.replayed_step_time_sec,
        coalesce(step_times.n_untimed_counted_rows, 0) as n_untimed_counted_rows,
        step_times.median_step_time_sec
    from config
    left join ends
        on config.run_id = ends.run_id
    left join eval_ends
        on config.run_id = eval_ends.run_id
    left join plateau
        on config.run_id = plateau.run_id
    left join dips
        on config.run_id = dips.run_id
        and dips.dip_rank = 1
    left join restarts
        on config.run_id = restarts.run_id
    left join spike_totals
        on config.run_id = spike_totals.run_id
    left join spike_shard
        on config.run_id = spike_shard.run_id
    left join step_times
        on config.run_id = step_times.run_id
),

final as (
    select
        run_id,
        end_kind,
        first_step,
        last_step,
        total_steps,
        rows_counted,
        logging_interval,
        -- a log written every N steps: its rows are not the steps trained
        (logging_interval > 1) as is_sparse_log,
        n_evals,
        first_eval_step,
        first_val_loss,
        best_eval_step,
        best_val_loss,
        final_eval_step,
        final_val_loss,
        final_val_accuracy,
        (best_eval_step = final_eval_step) as best_is_last,
        plateau_step,
        plateau_val_loss,
        plateau_val_accuracy,
        late_fall_share,
        case
            when n_evals = 0 then 'not_evaluated'
            when n_evals = 1 then 'one_evaluation'
            when final_val_loss >= first_val_loss then 'did_not_improve'
            when best_eval_step < final_eval_step
                and final_eval_step - best_eval_step
                    >= {{ threshold('story_stopped_min_span_share') }} * (final_eval_step - first_eval_step)
                then 'stopped_improving'
            when plateau_step < final_eval_step
                and final_eval_step - plateau_step
                    >= {{ threshold('story_plateau_min_span_share') }} * (final_eval_step - first_eval_step)
                and late_fall_share < {{ threshold('story_plateau_max_late_fall') }}
                then 'plateaued'
            else 'still_improving'
        end as val_trend,
        dip_step,
        dip_val_loss,
        dip_best_before,
        dip_previous_eval_step,
        dip_val_accuracy,
        dip_previous_val_accuracy,
        coalesce(
            dip_val_accuracy < (1 - {{ threshold('story_accuracy_collapse_share') }}) * dip_previous_val_accuracy,
            false
        ) as dip_accuracy_collapsed,
        n_restarts,
        n_crash_restarts,
        n_spike_steps,
        spike_shard_id,
        spike_shard_source,
        spike_shard_steps,
        coalesce(
            spike_shard_steps >= {{ threshold('story_spike_shard_min_steps') }}
            and spike_shard_steps >= {{ threshold('story_spike_shard_min_share') }} * n_spike_steps,
            false
        ) as is_spikes_on_one_shard,
        n_timed_rows,
        n_counted_rows,
        counted_step_time_sec,
        n_replayed_rows,
        replayed_step_time_sec,
        n_untimed_counted_rows,
        median_step_time_sec
    from joined
)

select * from final
