-- For a sweep: one row per finding category and numeric config field that varies
-- across the runs of the build (peak_lr, batch_size, warmup_steps, grad_clip_norm,
-- ...): the field's range among the runs the category hits (a finding above info)
-- and among the others, and whether the two ranges are apart (the category goes
-- with high, or with low, values of the field).
-- A table rebuilt whole on every build (not an increment of the batch's runs):
-- every row aggregates across runs.
{{ config(materialized='table') }}
{%- set fields = [] %}
{%- for name, path, type, is_required in config_fields() if type in ('double', 'integer') %}{% do fields.append(name) %}{% endfor %}
with

config_values as (
    -- the numeric config fields, one row per run and field with a value
    {%- for field in fields %}
    select run_id, '{{ field }}' as field_name, cast({{ field }} as {{ type_double() }}) as field_value
    from {{ ref('stg_training__config') }}
    where {{ field }} is not null
    {% if not loop.last %}union all{% endif %}
    {%- endfor %}
),

varying_fields as (
    select field_name
    from config_values
    group by field_name
    having count(distinct field_value) > 1
),

hits as (
    select distinct run_id, category
    from {{ ref('findings') }}
    where severity <> 'info'
),

categories as (
    select distinct category from hits
),

ranges as (
    select
        categories.category,
        config_values.field_name,
        count(hits.run_id) as runs_hit_with_value,
        min(case when hits.run_id is not null then config_values.field_value end) as min_value_hit,
        max(case when hits.run_id is not null then config_values.field_value end) as max_value_hit,
        percentile_cont(0.5) within group (order by case when hits.run_id is not null then config_values.field_value end)
            as median_value_hit,
        count(config_values.run_id) - count(hits.run_id) as runs_not_hit_with_value,
        min(case when hits.run_id is null then config_values.field_value end) as min_value_not_hit,
        max(case when hits.run_id is null then config_values.field_value end) as max_value_not_hit,
        percentile_cont(0.5) within group (order by case when hits.run_id is null then config_values.field_value end)
            as median_value_not_hit
    from categories
    cross join config_values
    inner join varying_fields
        on config_values.field_name = varying_fields.field_name
    left join hits
        on categories.category = hits.category
        and config_values.run_id = hits.run_id
    group by categories.category, config_values.field_name
),

final as (
    select
        category,
        field_name,
        runs_hit_with_value,
        min_value_hit,
        max_value_hit,
        median_value_hit,
        runs_not_hit_with_value,
        min_value_not_hit,
        max_value_not_hit,
        median_value_not_hit,
        case
            when runs_hit_with_value = 0 or runs_not_hit_with_value = 0 then cast(null as {{ dbt.type_string() }})
            when min_value_hit > max_value_not_hit then 'higher'
            when max_value_hit < min_value_not_hit then 'lower'
            else 'overlapping'
        end as hit_range_position
    from ranges
)

select * from final
