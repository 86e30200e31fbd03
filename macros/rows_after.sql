{#- For each anchor row (a spike event, an epoch jump): how many rows of `later` follow it within
    `window` positions, and how many of those have `value` above `level` (did the series come
    back, or stay up?). A select, grouped by the anchor's `keys`; rows match within the run.
    anchors: the CTE of anchors; later: the CTE of the series; position: the series' ordinal column
    (a logged row, an epoch's place); anchor_position: the anchor's last position (an expression
    on anchors); level: an expression on anchors. -#}
{% macro rows_after_above(anchors, keys, later, position, anchor_position, window, value, level, count_name, above_name) -%}
    select
        {%- for key in keys %}
        {{ anchors }}.{{ key }},
        {%- endfor %}
        count(later_row.{{ position }}) as {{ count_name }},
        sum(case when later_row.{{ value }} > {{ level }} then 1 else 0 end) as {{ above_name }}
    from {{ anchors }}
    left join {{ later }} as later_row
        on {{ anchors }}.run_id = later_row.run_id
        and later_row.{{ position }} > {{ anchor_position }}
        and later_row.{{ position }} <= {{ anchor_position }} + {{ window }}
    group by {% for key in keys %}{{ anchors }}.{{ key }}{{ ', ' if not loop.last }}{% endfor %}
{%- endmacro %}


{#- For each anchor row (a spike's onset, an epoch jump): the first text of the `events` logged at
    it, after the logged row before it (`previous_step`, NULL at the log's first row) and at or
    before it (`step`): what changed between the two rows changed at the anchor. A select, grouped
    by the anchor's `keys`; anchors without such an event are left out. anchors: the CTE of
    anchors; events: a CTE of (run_id, step, event_text). -#}
{% macro events_at_row(anchors, keys, step, previous_step, events, text_name) -%}
    select
        {%- for key in keys %}
        {{ anchors }}.{{ key }},
        {%- endfor %}
        min({{ events }}.event_text) as {{ text_name }}
    from {{ anchors }}
    inner join {{ events }}
        on {{ anchors }}.run_id = {{ events }}.run_id
        and {{ events }}.step <= {{ anchors }}.{{ step }}
        and ({{ anchors }}.{{ previous_step }} is null or {{ events }}.step > {{ anchors }}.{{ previous_step }})
    group by {% for key in keys %}{{ anchors }}.{{ key }}{{ ', ' if not loop.last }}{% endfor %}
{%- endmacro %}
