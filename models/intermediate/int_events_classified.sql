-- Each system event with a kind (run_start, run_end, checkpoint_saved, crash,
-- restart, loss_scale_overflow, log_cut_off, epochs_unfinished, log_written_several_times, objective_change, other) from the event_patterns seed, and the step
-- the text names (the checkpoint a restart resumed from, the step a checkpoint holds).
with

events as (
    select * from {{ run_ref('stg_training__events') }}
    where not is_exact_duplicate
),

patterns as (
    select
        cast(pattern_id as {{ dbt.type_bigint() }}) as pattern_id,
        event_kind,
        lower(match_pattern) as match_pattern,
        lower(step_marker) as step_marker,
        cast(priority as {{ dbt.type_bigint() }}) as priority
    from {{ ref('event_patterns') }}
),

matches as (
    select
        events.run_id,
        events.event_row_id,
        patterns.pattern_id,
        patterns.event_kind,
        patterns.step_marker,
        row_number() over (
            partition by events.run_id, events.event_row_id order by patterns.priority, patterns.pattern_id
        ) as match_rank
    from events
    inner join patterns
        on events.event_text_lower like patterns.match_pattern
),

best_match as (
    select * from matches where match_rank = 1
),

classified as (
    select
        events.run_id,
        events.event_row_id,
        events.step,
        events.event_text,
        best_match.event_kind as matched_kind,
        best_match.pattern_id,
        {{ number_after('events.event_text_lower', 'best_match.step_marker') }} as named_step
    from events
    left join best_match
        on events.run_id = best_match.run_id
        and events.event_row_id = best_match.event_row_id
),

kinded as (
    select
        run_id,
        event_row_id,
        step,
        event_text,
        case
            -- a "resume" from a checkpoint taken before any update (iteration 0) loads the initial
            -- or pretrained weights: the run starting, not a crash-and-resume
            when matched_kind = 'restart' and named_step <= 0 then 'run_start'
            else coalesce(matched_kind, 'other')
        end as event_kind,
        pattern_id,
        named_step
    from classified
),

final as (
    select
        *,
        case when event_kind = 'restart' then named_step end as resumed_from_step,
        case when event_kind = 'checkpoint_saved' then coalesce(named_step, step) end as checkpoint_step
    from kinded
)

select * from final
