-- The rows of step_metrics the report's step plots draw, a bounded number per run instead of every
-- logged step (issue 22: the report reads aggregates; nothing in Python holds the whole log).
--   * a run of at most report_plot_all_rows_max rows keeps every row: its plots are the same as
--     plots of step_metrics;
--   * a longer run is cut into report_plot_pixel_columns stretches of steps (one pixel column of
--     the plot each) and keeps, per stretch, the first and last counted row, the rows holding the
--     lowest and highest value of each plotted series, over the counted rows the lines are drawn
--     through (M4 downsampling, Jugel et al. 2014: a line through these rows covers the same
--     pixels as a line through all of them; a gap narrower than a pixel column is not drawn);
--   * every root finding with a step range gets the same per-pixel-column envelope of the series
--     its zoom draws (check_catalog.zoom_metric, the loss otherwise) over the window the zoom
--     shows (report_zoom_min_pad_share), so a zoom on a long run keeps its detail;
--   * every row the plots draw as a point is kept whatever the run's length: superseded rows,
--     loss spikes, clip violations, slow steps and step-time outliers;
--   * a run with more than report_step_time_long_run_rows timed counted rows is a barcode as a
--     line: its step time is drawn as the median of each of report_step_time_windows equal
--     stretches of steps (step_time_window_median, at the stretch's middle row) and the rows above
--     report_step_time_outlier_factor times it as points (is_step_time_outlier).
-- run_rows_logged and run_rows_counted count every row of step_metrics (the report's check
-- against run_summary).
{%- set series = ['loss', 'loss_baseline', 'learning_rate', 'expected_learning_rate', 'learning_rate_ratio',
    'grad_norm', 'grad_clip_norm', 'step_time_sec'] %}
{%- set zoomed = ['loss', 'learning_rate', 'grad_norm', 'step_time_sec'] %}
with

steps as (
    select
        run_id,
        train_row_id,
        step,
        is_counted,
        attempt_number,
        shard_id,
        source,
        loss,
        loss_baseline,
        is_loss_spike,
        grad_norm,
        grad_clip_norm,
        is_clip_violation,
        learning_rate,
        expected_learning_rate,
        step_time_sec,
        is_slow_step,
        epoch_number,
        -- the plot labels the logged LR's peak ratio to the schedule: its highest value is kept too
        case when expected_learning_rate > 0 then {{ safe_divide('learning_rate', 'expected_learning_rate') }} end
            as learning_rate_ratio
    from {{ run_ref('step_metrics') }}
),

run_sizes as (
    select
        run_id,
        count(*) as run_rows_logged,
        cast(sum(case when is_counted then 1 else 0 end) as {{ dbt.type_bigint() }}) as run_rows_counted,
        cast(sum(case when is_counted and step_time_sec is not null then 1 else 0 end) as {{ dbt.type_bigint() }})
            as run_rows_timed,
        min(step) as run_first_step,
        max(step) as run_last_step
    from steps
    group by run_id
),

step_time_stretches as (
    -- a long run's steps per stretch of its step-time line: report_step_time_windows stretches,
    -- of at least report_step_time_window_min_rows steps
    select
        run_id,
        run_first_step,
        greatest(
            {{ threshold('report_step_time_window_min_rows') }},
            {{ safe_divide('run_last_step - run_first_step + 1', threshold('report_step_time_windows')) }}
        ) as stretch_steps
    from run_sizes
    where run_rows_timed > {{ threshold('report_step_time_long_run_rows') }}
),

timed_rows as (
    -- the timed counted rows of a long run, with their stretch
    select
        steps.run_id,
        steps.train_row_id,
        steps.step,
        steps.step_time_sec,
        steps.is_slow_step,
        step_time_stretches.stretch_steps,
        cast(floor({{ safe_divide('steps.step - step_time_stretches.run_first_step', 'step_time_stretches.stretch_steps') }})
            as {{ dbt.type_bigint() }}) as step_time_window,
        -- the stretch's middle step
        step_time_stretches.run_first_step + (
            floor({{ safe_divide('steps.step - step_time_stretches.run_first_step', 'step_time_stretches.stretch_steps') }}) + 0.5
        ) * step_time_stretches.stretch_steps as window_middle_step
    from steps
    inner join step_time_stretches
        on steps.run_id = step_time_stretches.run_id
    where steps.is_counted
        and steps.step_time_sec is not null
),

step_time_windows as (
    select
        run_id,
        step_time_window,
        percentile_cont(0.5) within group (order by step_time_sec) as window_median,
        -- the row its median is drawn at: the first at or after the middle step (else the last)
        coalesce(min(case when step >= window_middle_step then step end), max(step)) as window_middle_row_step
    from timed_rows
    group by run_id, step_time_window
),

timed_rows_windowed as (
    select
        timed_rows.run_id,
        timed_rows.train_row_id,
        timed_rows.stretch_steps as step_time_window_steps,
        step_time_windows.window_median as step_time_window_median,
        timed_rows.step = step_time_windows.window_middle_row_step as is_step_time_window_middle,
        not timed_rows.is_slow_step
            and timed_rows.step_time_sec > {{ threshold('report_step_time_outlier_factor') }} * step_time_windows.window_median
            as is_step_time_outlier
    from timed_rows
    inner join step_time_windows
        on timed_rows.run_id = step_time_windows.run_id
        and timed_rows.step_time_window = step_time_windows.step_time_window
),

long_runs as (
    select
        run_id,
        run_first_step,
        run_last_step,
        -- one pixel column's steps
        {{ safe_divide('run_last_step - run_first_step + 1', threshold('report_plot_pixel_columns')) }} as column_steps
    from run_sizes
    where run_rows_logged > {{ threshold('report_plot_all_rows_max') }}
),

root_findings as (
    select findings.run_id, findings.category, findings.first_step, findings.last_step
    from {{ run_ref('findings') }} as findings
    left join {{ run_ref('findings') }} as causes
        on findings.run_id = causes.run_id
        and findings.caused_by = causes.finding_id
    where findings.first_step is not null
        and findings.last_step is not null
        and (causes.finding_id is null or findings.caused_by = findings.finding_id)
),

zoom_pads as (
    -- the steps a finding's zoom shows (report_plots.zoom_window): its steps with as much again
    -- either side, at least report_zoom_min_pad_share of the run
    select
        root_findings.run_id,
        long_runs.run_first_step,
        long_runs.run_last_step,
        long_runs.column_steps,
        coalesce(catalog.zoom_metric, 'loss') as zoom_metric,
        root_findings.first_step,
        root_findings.last_step,
        greatest(
            root_findings.last_step - root_findings.first_step,
            {{ threshold('report_zoom_min_pad_share') }} * (long_runs.run_last_step - long_runs.run_first_step),
            1
        ) as pad_steps
    from root_findings
    inner join long_runs
        on root_findings.run_id = long_runs.run_id
    left join {{ ref('check_catalog') }} as catalog
        on root_findings.category = catalog.category
),

zoom_windows as (
    -- ... one pixel column of the run wider either side (the report pads by the rows it reads, a little more)
    select
        run_id,
        run_first_step,
        run_last_step,
        zoom_metric,
        first_step - pad_steps - column_steps as window_first_step,
        last_step + pad_steps + column_steps as window_last_step
    from zoom_pads
),

plot_windows as (
    -- the stretches cut into pixel columns: the whole run (every series), and each zoom (its series)
    select run_id, 'run' as zoom_metric, run_first_step as window_first_step, run_last_step as window_last_step
    from long_runs
    union all
    select run_id, zoom_metric, window_first_step, window_last_step
    from zoom_windows
    where zoom_metric in ('{{ zoomed | join("', '") }}')
        -- a zoom on the whole run is the run's plot again
        and (window_first_step > run_first_step or window_last_step < run_last_step)
),

windowed_rows as (
    -- every counted row of a long run in each window it falls in, with its pixel column there
    select
        steps.run_id,
        steps.train_row_id,
        steps.step,
        plot_windows.zoom_metric,
        plot_windows.window_first_step,
        cast(floor({{ safe_divide('(steps.step - plot_windows.window_first_step) * ' ~ threshold('report_plot_pixel_columns'),
            'plot_windows.window_last_step - plot_windows.window_first_step + 1') }}) as {{ dbt.type_bigint() }})
            as pixel_column,
        {%- for column in series %}
        case when plot_windows.zoom_metric in ('run', '{{ column }}') then steps.{{ column }} end as {{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    from steps
    inner join plot_windows
        on steps.run_id = plot_windows.run_id
        and steps.step >= plot_windows.window_first_step
        and steps.step <= plot_windows.window_last_step
    where steps.is_counted
),

column_envelopes as (
    -- per pixel column: its first and last step, and each series' lowest and highest value
    select
        run_id,
        zoom_metric,
        window_first_step,
        pixel_column,
        min(step) as first_step,
        max(step) as last_step,
        {%- for column in series %}
        min({{ column }}) as min_{{ column }},
        max({{ column }}) as max_{{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    from windowed_rows
    group by run_id, zoom_metric, window_first_step, pixel_column
),

column_rows as (
    -- the row holding each of them (the first such row on ties)
    select
        windowed_rows.run_id,
        windowed_rows.zoom_metric,
        windowed_rows.window_first_step,
        windowed_rows.pixel_column,
        min(case when windowed_rows.step = column_envelopes.first_step then windowed_rows.train_row_id end) as first_row_id,
        min(case when windowed_rows.step = column_envelopes.last_step then windowed_rows.train_row_id end) as last_row_id,
        {%- for column in series %}
        min(case when windowed_rows.{{ column }} = column_envelopes.min_{{ column }} then windowed_rows.train_row_id end)
            as min_{{ column }}_row_id,
        min(case when windowed_rows.{{ column }} = column_envelopes.max_{{ column }} then windowed_rows.train_row_id end)
            as max_{{ column }}_row_id{{ ',' if not loop.last }}
        {%- endfor %}
    from windowed_rows
    inner join column_envelopes
        on windowed_rows.run_id = column_envelopes.run_id
        and windowed_rows.zoom_metric = column_envelopes.zoom_metric
        and windowed_rows.window_first_step = column_envelopes.window_first_step
        and windowed_rows.pixel_column = column_envelopes.pixel_column
    group by windowed_rows.run_id, windowed_rows.zoom_metric, windowed_rows.window_first_step, windowed_rows.pixel_column
),

row_roles as (
    -- the rows column_rows names, one number each (first, last, then lowest and highest of each series)
    {%- for role in range(2 + 2 * series | length) %}
    select {{ role }} as row_role{{ ' union all' if not loop.last }}
    {%- endfor %}
),

kept_envelope_rows as (
    -- the rows named in column_rows, unpivoted through row_roles (column_rows is computed once)
    select distinct run_id, train_row_id
    from (
        select
            column_rows.run_id,
            case row_roles.row_role
                when 0 then column_rows.first_row_id
                when 1 then column_rows.last_row_id
                {%- for column in series %}
                when {{ 2 + 2 * loop.index0 }} then column_rows.min_{{ column }}_row_id
                when {{ 3 + 2 * loop.index0 }} then column_rows.max_{{ column }}_row_id
                {%- endfor %}
            end as train_row_id
        from column_rows
        cross join row_roles
    ) as named_rows
    where train_row_id is not null
),

kept_rows as (
    -- every row of a short run; of a long run, the envelope, the stretches' middle rows and
    -- every row drawn as a point
    select steps.run_id, steps.train_row_id
    from steps
    left join long_runs
        on steps.run_id = long_runs.run_id
    where long_runs.run_id is null
        or not steps.is_counted
        or steps.is_loss_spike
        or steps.is_clip_violation
        or steps.is_slow_step
    union
    select run_id, train_row_id
    from kept_envelope_rows
    union
    select run_id, train_row_id
    from timed_rows_windowed
    where is_step_time_outlier or is_step_time_window_middle
),

final as (
    select
        steps.run_id,
        steps.train_row_id,
        steps.step,
        steps.is_counted,
        steps.attempt_number,
        steps.shard_id,
        steps.source,
        steps.loss,
        steps.loss_baseline,
        steps.is_loss_spike,
        steps.grad_norm,
        steps.grad_clip_norm,
        steps.is_clip_violation,
        steps.learning_rate,
        steps.expected_learning_rate,
        steps.step_time_sec,
        steps.is_slow_step,
        steps.epoch_number,
        timed_rows_windowed.step_time_window_median,
        timed_rows_windowed.step_time_window_steps,
        coalesce(timed_rows_windowed.is_step_time_window_middle, false) as is_step_time_window_middle,
        coalesce(timed_rows_windowed.is_step_time_outlier, false) as is_step_time_outlier,
        long_runs.run_id is not null as is_downsampled,
        run_sizes.run_rows_logged,
        run_sizes.run_rows_counted
    from kept_rows
    inner join steps
        on kept_rows.run_id = steps.run_id
        and kept_rows.train_row_id = steps.train_row_id
    inner join run_sizes
        on kept_rows.run_id = run_sizes.run_id
    left join long_runs
        on kept_rows.run_id = long_runs.run_id
    left join timed_rows_windowed
        on kept_rows.run_id = timed_rows_windowed.run_id
        and kept_rows.train_row_id = timed_rows_windowed.train_row_id
)

select * from final
