-- One row per run whose logged learning rate decays from a peak: where the schedule it follows
-- would end. A decaying schedule is written for a planned length: a cosine falls from the peak
-- as 0.5 (1 + cos(pi x)), a linear decay as 1 - x, x the share of the decay done. From the
-- peak's step and the share of the peak left at the last logged step, each shape gives the
-- step where the LR would reach 0; the shape is trusted only when it also matches the LR logged
-- in between (the schedule_fit_tolerance share of the peak, at the schedule_fit_quantile of the
-- decay rows: a schedule with a floor (min_lr) or steps misfits and projects nothing). A run
-- whose config gives no length can so still be seen to stop before its schedule did.
with

steps as (
    select run_id, step, learning_rate
    from {{ run_ref('int_train_steps_resolved') }}
    where learning_rate > 0
),

peaks as (
    select run_id, max(learning_rate) as peak_lr, max(step) as last_step
    from steps
    group by run_id
),

peak_steps as (
    -- where the decay starts: the last step at the peak (the warmup's end, or a constant stretch's)
    select steps.run_id, max(steps.step) as peak_step
    from steps
    inner join peaks
        on steps.run_id = peaks.run_id
    where steps.learning_rate >= peaks.peak_lr * (1 - {{ threshold('schedule_peak_tolerance') }})
    group by steps.run_id
),

ends as (
    select
        peaks.run_id,
        peaks.peak_lr,
        peak_steps.peak_step,
        peaks.last_step,
        steps.learning_rate / peaks.peak_lr as last_share
    from peaks
    inner join peak_steps
        on peaks.run_id = peak_steps.run_id
    inner join steps
        on peaks.run_id = steps.run_id
        and peaks.last_step = steps.step
    where peaks.last_step > peak_steps.peak_step
),

shapes as (
    -- per shape, the decay's length (last step - peak step) over the share of it done by the
    -- last step: cosine acos(2 r - 1) / pi done, linear 1 - r done
    select
        run_id,
        peak_lr,
        peak_step,
        last_step,
        last_share,
        acos(2 * last_share - 1) / pi() as cosine_done,
        1 - last_share as linear_done
    from ends
    where last_share < 1 - {{ threshold('schedule_fit_tolerance') }}
),

decay_rows as (
    select
        shapes.run_id,
        (steps.step - shapes.peak_step) / cast(shapes.last_step - shapes.peak_step as {{ type_double() }}) as progress,
        steps.learning_rate / shapes.peak_lr as share,
        shapes.cosine_done,
        shapes.linear_done
    from shapes
    inner join steps
        on shapes.run_id = steps.run_id
        and steps.step > shapes.peak_step
),

misfits as (
    select
        run_id,
        count(*) as decay_rows,
        percentile_cont({{ threshold('schedule_fit_quantile') }}) within group (
            order by abs(share - 0.5 * (1 + cos(pi() * progress * cosine_done)))
        ) as cosine_misfit,
        percentile_cont({{ threshold('schedule_fit_quantile') }}) within group (
            order by abs(share - (1 - progress * linear_done))
        ) as linear_misfit
    from decay_rows
    group by run_id
),

final as (
    select
        shapes.run_id,
        shapes.peak_lr,
        shapes.peak_step,
        shapes.last_step,
        shapes.last_share,
        misfits.decay_rows,
        misfits.cosine_misfit,
        misfits.linear_misfit,
        case
            when misfits.decay_rows < {{ threshold('schedule_fit_min_rows') }} then null
            when misfits.cosine_misfit <= {{ threshold('schedule_fit_tolerance') }}
                and misfits.cosine_misfit <= misfits.linear_misfit then 'cosine'
            when misfits.linear_misfit <= {{ threshold('schedule_fit_tolerance') }} then 'linear'
        end as schedule_shape,
        case
            when misfits.decay_rows < {{ threshold('schedule_fit_min_rows') }} then null
            when misfits.cosine_misfit <= {{ threshold('schedule_fit_tolerance') }}
                and misfits.cosine_misfit <= misfits.linear_misfit and shapes.cosine_done > 0
                then shapes.peak_step + (shapes.last_step - shapes.peak_step) / shapes.cosine_done
            when misfits.linear_misfit <= {{ threshold('schedule_fit_tolerance') }} and shapes.linear_done > 0
                then shapes.peak_step + (shapes.last_step - shapes.peak_step) / shapes.linear_done
        end as projected_end_step
    from shapes
    inner join misfits
        on shapes.run_id = misfits.run_id
)

select * from final
