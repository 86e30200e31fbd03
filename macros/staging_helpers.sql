{#- Column recipes shared by the staging models. -#}

{#- a numeric text column: the finite value plus one flag per way it can be wrong -#}
{% macro numeric_column(column) %}
    {{ finite_or_null(parse_double(column)) }} as {{ column }},
    ({{ clean_text(column) }} is null) as is_{{ column }}_missing,
    ({{ clean_text(column) }} is not null and {{ parse_double(column) }} is null) as is_{{ column }}_non_numeric,
    {{ is_non_finite(parse_double(column)) }} as is_{{ column }}_non_finite
{% endmacro %}

{#- a share a logger may write in percent (val_accuracy, val_map50): the logged value, parsed but not
    converted (<column>_logged), and the flags of why it is null; share_value turns it into the share -#}
{% macro logged_share_column(column) %}
    {{ finite_or_null(parse_double(column)) }} as {{ column }}_logged,
    ({{ clean_text(column) }} is not null and {{ parse_double(column) }} is null) as is_{{ column }}_non_numeric,
    {{ is_non_finite(parse_double(column)) }} as is_{{ column }}_non_finite
{% endmacro %}

{#- the share of a logged_share_column: null out of range, divided by 100 in percent (a share is at
    most 1; (1, 100] can only be percent): the catalogue's rules of share_defects(column, prefix) -#}
{% macro share_value(file_kind, column, prefix) %}
    case
        when ({{ raw_row_defect_rule(file_kind, prefix ~ '_out_of_range') }}) then null
        when ({{ raw_row_defect_rule(file_kind, prefix ~ '_percent') }}) then {{ column }}_logged / 100.0
        else {{ column }}_logged
    end
{% endmacro %}

{#- the same flags for an integer column (step, n_examples) -#}
{% macro integer_column(column) %}
    {{ parse_integer(column) }} as {{ column }},
    ({{ clean_text(column) }} is null) as is_{{ column }}_missing,
    ({{ clean_text(column) }} is not null and {{ parse_integer(column) }} is null) as is_{{ column }}_invalid
{% endmacro %}

{#- an identifier such as a shard id: integers in canonical form ('08', '8.0' -> '8'), else trimmed lower-case text -#}
{% macro identifier_column(column) %}
    case
      when {{ parse_integer(column) }} is not null then cast({{ parse_integer(column) }} as {{ dbt.type_string() }})
      else lower({{ clean_text(column) }})
    end as {{ column }},
    ({{ clean_text(column) }} is null) as is_{{ column }}_missing
{% endmacro %}

{#- the raw text beside the parsed value -#}
{% macro raw_columns(columns) %}
  {%- for column in columns %}
    {{ column }} as {{ column }}_raw,
  {%- endfor %}
{% endmacro %}

{#- true on the second and later copies of a row identical in every raw column -#}
{% macro is_exact_duplicate(columns, order_by='file_row_number') %}
    (row_number() over (partition by run_id, {{ columns | join(', ') }} order by {{ order_by }}) > 1)
{% endmacro %}

{#- lower than a step already logged above it in the file (a swap, or a replay after a resume);
    NULL on the first row and when the step is NULL -#}
{% macro out_of_file_order(step='step') -%}
    {{ step }} < max({{ step }}) over (partition by run_id order by file_row_number rows between unbounded preceding and 1 preceding)
{%- endmacro %}

{#- the config keys the checks need: (column, JSON path, type); absent key = error, null = declared unknown -#}
{% macro config_fields() %}
  {{ return([
    ('schedule_type', '$.lr_schedule.type', 'text', true),
    ('peak_lr', '$.lr_schedule.peak_lr', 'double', true),
    ('min_lr', '$.lr_schedule.min_lr', 'double', true),
    ('warmup_steps', '$.lr_schedule.warmup_steps', 'integer', true),
    ('decay_steps', '$.lr_schedule.decay_steps', 'integer', true),
    ('grad_clip_norm', '$.grad_clip_norm', 'double', true),
    ('total_steps', '$.total_steps', 'integer', true),
    ('run_name', '$.run_name', 'text', false),
    ('batch_size', '$.batch_size', 'integer', false),
    ('eval_interval', '$.eval_interval', 'integer', false),
    ('checkpoint_interval', '$.checkpoint_interval', 'integer', false),
    ('data_parallel_workers', '$.data_parallel_workers', 'integer', false),
    ('n_shards', '$.data.n_shards', 'integer', false),
    ('shuffle_shards_each_epoch', '$.data.shuffle_shards_each_epoch', 'text', false),
    ('precision', '$.precision', 'text', false),
    ('steps_per_epoch', '$.steps_per_epoch', 'integer', false),
    ('grad_norm_measured', '$.grad_norm_measured', 'text', false),
    ('step_time_is_interval_mean', '$.step_time_is_interval_mean', 'text', false),
    ('rows_are', '$.rows_are', 'text', false),
    ('loss_objective', '$.loss_objective', 'text', false),
    ('train_zero_loss_terms', '$.train_zero_loss_terms', 'text', false),
    ('val_zero_loss_terms', '$.val_zero_loss_terms', 'text', false),
    ('vocab_size', '$.vocab_size', 'integer', false),
    ('source_format', '$.provenance.source_format', 'text', false),
    ('baseline_run_id', '$.baseline_run_id', 'name', false),
    ('num_classes', '$.num_classes', 'integer', false),
    ('num_classes_basis', '$.num_classes_basis', 'text', false),
    ('output_head', '$.output_head', 'text', false),
    ('model_name', '$.model_name', 'text', false),
    ('tokenizer_name', '$.tokenizer_name', 'text', false),
    ('optimizer_name', '$.optimizer.name', 'text', false),
  ]) }}
{% endmacro %}

{#- the smallest possible value of a numeric config key: (bound, inclusive); a value below it, or a
    non-finite one (NaN, Infinity), is impossible: the field is listed in impossible_fields and read as null -#}
{% macro config_field_bounds() %}
  {{ return({
    'peak_lr': (0, false), 'min_lr': (0, true), 'warmup_steps': (0, true), 'decay_steps': (0, false),
    'grad_clip_norm': (0, false), 'total_steps': (0, false), 'batch_size': (0, false),
    'eval_interval': (0, false), 'checkpoint_interval': (0, false), 'data_parallel_workers': (0, false),
    'n_shards': (0, false), 'steps_per_epoch': (0, false), 'vocab_size': (0, false), 'num_classes': (0, false),
  }) }}
{% endmacro %}

{#- check_coverage reasons for a config field a check needs: declared unknown, or impossible -#}
{% macro config_field_reasons(name) %}
  {% set listed = "',' || config.impossible_fields || ','" %}
  {{ return([
    ('config.' ~ name ~ ' is null and ' ~ listed ~ " not like '%," ~ name ~ ",%'", name ~ ' unknown in the config'),
    (listed ~ " like '%," ~ name ~ ",%'", name ~ ' impossible in the config (see config_mismatch:impossible_values)'),
  ]) }}
{% endmacro %}

{#- stop the build, naming the file and key, when a required config key is absent or not a number -#}
{% macro check_config_keys(source_sql) %}
  {% if not execute %}{{ return('') }}{% endif %}
  {% set checks = [] %}
  {% for name, path, type, required in config_fields() %}
    {% if required %}
      {% do checks.append("case when not " ~ json_has_key('config_json', path) ~ " then 'missing required key " ~ path[2:] ~ "'"
        ~ (" when " ~ json_text('config_json', path) ~ " is not null and " ~ parse_double(json_text('config_json', path)) ~ " is null then 'key " ~ path[2:] ~ " is not a number'" if type in ('double', 'integer') else '')
        ~ " end") %}
    {% endif %}
  {% endfor %}
  {% set query_parts = [] %}
  {% for check in checks %}{% do query_parts.append("select " ~ check ~ " as problem, config_path from (" ~ source_sql ~ ") as config_file") %}{% endfor %}
  {% set found = run_query(query_parts | join(' union all ')) %}
  {#- the problems of the first config file that has any (several runs: each file named on its own) -#}
  {% set problems = [] %}
  {% for row in found.rows if row[0] is not none %}
    {% if problems | length == 0 or problems[0][1] == row[1] %}{% do problems.append((row[0], row[1])) %}{% endif %}
  {% endfor %}
  {% if problems %}
    {{ exceptions.raise_compiler_error("run_diagnosis: " ~ problems[0][1] ~ ": " ~ problems | map(attribute=0) | join('; ') ~ ". Write null for a value the run does not know; the checks that need it will say they could not run.") }}
  {% endif %}
{% endmacro %}
