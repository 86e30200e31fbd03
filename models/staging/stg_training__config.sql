-- The run's configuration as one typed row. A required key that is absent stops
-- the build (naming the file and key); a key present as null is a declared
-- unknown, listed in unknown_fields so the checks that need it say they could not run.
-- A value that cannot be true (NaN, Infinity, a clip norm or peak LR <= 0, a negative
-- step count: config_field_bounds) is read as null too, but listed in impossible_fields
-- with the value as written, so config_mismatch reports it instead of it passing as unknown.
{% do check_config_keys(raw_run_config()) %}
{%- set required = [] %}
{%- for name, path, type, is_required in config_fields() if is_required %}{% do required.append(name) %}{% endfor %}
{%- set bounds = config_field_bounds() %}

with

source as (
    {{ raw_run_config() }}
),

parsed as (
    select
        run_id,
        config_path,
        config_file_name,
        config_json,
        {%- for name, path, type, is_required in config_fields() if type in ('double', 'integer') %}
        {{ parse_double(json_text('config_json', path)) }} as {{ name }}_parsed,
        {{ json_text('config_json', path) }} as {{ name }}_text,
        {%- endfor %}
        {{ json_text('config_json', '$.provenance.notes') }} as import_notes,
        {{ json_text('config_json', '$.provenance.layout') }} as inferred_layout
    from source
),

checked as (
    select
        *,
        {%- for name, path, type, is_required in config_fields() if type in ('double', 'integer') %}
        {%- set bound = bounds.get(name) %}
        (
            {{ is_non_finite(name ~ '_parsed') }}
            {%- if bound %} or {{ name }}_parsed {{ '<' if bound[1] else '<=' }} {{ bound[0] }}{% endif %}
        ) as is_{{ name }}_impossible{{ ',' if not loop.last }}
        {%- endfor %}
    from parsed
),

typed as (
    select
        run_id,
        1 as config_id,
        config_path,
        config_file_name,
        config_json,
        {%- for name, path, type, is_required in config_fields() %}
        {%- if type == 'double' %}
        case when is_{{ name }}_impossible then null else {{ name }}_parsed end as {{ name }},
        {%- elif type == 'integer' %}
        case when is_{{ name }}_impossible then null else {{ parse_integer(name ~ '_text') }} end as {{ name }},
        {%- elif type == 'name' %}
        {{ json_text('config_json', path) }} as {{ name }},
        {%- else %}
        lower({{ json_text('config_json', path) }}) as {{ name }},
        {%- endif %}
        {%- endfor %}
        import_notes,
        inferred_layout,
        -- impossible values as written, e.g. 'grad_clip_norm -1; peak_lr NaN'
        {%- set parts = ["''"] %}
        {%- for name, path, type, is_required in config_fields() if type in ('double', 'integer') %}
        {%- do parts.append("case when is_" ~ name ~ "_impossible then '; " ~ name ~ " ' || " ~ name ~ "_text else '' end") %}
        {%- endfor %}
        substring({{ dbt.concat(parts) }}, 3) as impossible_values,
        {%- set parts = ["''"] %}
        {%- for name, path, type, is_required in config_fields() if type in ('double', 'integer') %}
        {%- do parts.append("case when is_" ~ name ~ "_impossible then '," ~ name ~ "' else '' end") %}
        {%- endfor %}
        substring({{ dbt.concat(parts) }}, 2) as impossible_fields
    from checked
),

final as (
    select
        *,
        -- required fields the file declares unknown (null): the checks needing them cannot run
        {%- set parts = ["''"] %}
        {%- for name in required %}{% do parts.append("case when " ~ name ~ " is null and ',' || impossible_fields || ',' not like '%," ~ name ~ ",%' then '," ~ name ~ "' else '' end") %}{% endfor %}
        substring({{ dbt.concat(parts) }}, 2) as unknown_fields,
        -- what the loss read is, from loss_objective (set by the importers from the logged name): a
        -- GAN player's, one term of a sum whose total is not logged, or a reinforcement-learning loss
        coalesce(loss_objective = 'adversarial', false) as is_adversarial_loss,
        coalesce(loss_objective = 'term', false) as is_term_loss,
        coalesce(loss_objective = 'reinforcement', false) as is_reinforcement_loss
    from typed
)

select * from final
