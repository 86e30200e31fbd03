-- Every defect of every raw row that the build still uses (read as missing, normalised,
-- placed by its step, kept as logged): one row per raw row per defect, named and with what
-- was done, from the one catalogue in macros/raw_row_defects.sql (staging's flags, and the
-- rules that need the shard table or the attempts). int_raw_rows_audited and log_quality
-- read the defects from here.
with

known_shards as (
    select run_id, shard_id from {{ run_ref('int_shards_resolved') }}
),

train_rows as (
    select
        train_rows.*,
        -- the flags of the defects that need the shard table or the attempts
        {{- raw_row_defect_flags('train', 'resolved') }}
    from {{ run_ref('int_train_rows_resolved') }} as train_rows
    left join known_shards
        on train_rows.run_id = known_shards.run_id
        and train_rows.shard_id = known_shards.shard_id
),

eval_rows as (
    select * from {{ run_ref('stg_training__evals') }}
),

shard_rows as (
    select *, cast(null as {{ dbt.type_bigint() }}) as step from {{ run_ref('stg_training__shards') }}
),

{#- each file's rows once, joined to its catalogue on the defect's condition -#}
{%- set files = [('train', 'train_rows'), ('eval', 'eval_rows'), ('shards', 'shard_rows')] %}
{%- for file_kind, rows in files %}

{{ file_kind }}_catalogue as (
    {%- for defect, layer, rule, action in raw_row_defects(file_kind) %}
    select '{{ defect }}' as defect, {{ loop.index }} as defect_rank, '{{ action }}' as action
    {% if not loop.last %}union all{% endif %}
    {%- endfor %}
),

{{ file_kind }}_defects as (
    select
        {{ rows }}.run_id,
        '{{ file_kind }}' as file_kind,
        {{ rows }}.file_row_number,
        {{ rows }}.step,
        catalogue.defect,
        catalogue.defect_rank,
        catalogue.action
    from {{ rows }}
    inner join {{ file_kind }}_catalogue as catalogue
        on case catalogue.defect
            {%- for defect, layer, rule, action in raw_row_defects(file_kind) %}
            when '{{ defect }}' then is_{{ defect }}
            {%- endfor %}
            else false
        end
),
{%- endfor %}

final as (
    {%- for file_kind, rows in files %}
    select
        run_id,
        file_kind || ':' || cast(file_row_number as {{ dbt.type_string() }}) || ':' || defect as defect_id,
        file_kind,
        file_row_number,
        step,
        defect,
        defect_rank,
        action
    from {{ file_kind }}_defects
    {% if not loop.last %}union all{% endif %}
    {%- endfor %}
)

select * from final
