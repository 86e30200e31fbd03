-- The run's configuration as one typed row. A required key that is absent stops
-- the build (naming the file and key); a key present as null is a declared
-- unknown, listed in unknown_fields so the checks that need it say they could not run.
{% do check_config_keys(raw_run_config()) %}
{%- set required = [] %}
{%- for name, path, type, is_required in config_fields() if is_required %}{% do required.append(name) %}{% endfor %}

with

source as (
    {{ raw_run_config() }}
),

typed as (
    select
        1 as config_id,
        config_path,
        config_json,
        {%- for name, path, type, is_required in config_fields() %}
        {%- if type == 'double' %}
        {{ finite_or_null(parse_double(json_text('config_json', path))) }} as {{ name }},
        {%- elif type == 'integer' %}
        {{ parse_integer(json_text('config_json', path)) }} as {{ name }},
        {%- else %}
        lower({{ json_text('config_json', path) }}) as {{ name }},
        {%- endif %}
        {%- endfor %}
        {{ json_text('config_json', '$.provenance.notes') }} as import_notes
    from source
),

final as (
    select
        *,
        -- required fields the file declares unknown (null): the checks needing them cannot run
        {%- set parts = ["''"] %}
        {%- for name in required %}{% do parts.append("case when " ~ name ~ " is null then '," ~ name ~ "' else '' end") %}{% endfor %}
        substring({{ dbt.concat(parts) }}, 2) as unknown_fields
    from typed
)

select * from final
