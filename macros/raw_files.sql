{#-
  Where the raw rows come from. Without `run_dir` they are the dbt seeds (the
  team's sample run); with `--vars '{run_dir: /path}'` they are the five files in
  that folder, found by suffix. Either way every column arrives as text with its
  1-based position in the file (`file_row_number`), so staging is the same SQL.
-#}

{% macro run_file_spec(kind) %}
  {% set specs = {
    'train': {'suffix': 'train_log.csv', 'columns': ['step', 'shard_id', 'loss', 'grad_norm', 'learning_rate', 'step_time_sec']},
    'eval': {'suffix': 'eval_log.csv', 'columns': ['step', 'val_loss', 'val_accuracy']},
    'shards': {'suffix': 'shard_info.csv', 'columns': ['shard_id', 'n_examples', 'source']},
    'events': {'suffix': 'run_events.csv', 'columns': ['step', 'event']},
    'config': {'suffix': 'run_config.json', 'columns': []},
  } %}
  {% if kind not in specs %}
    {{ exceptions.raise_compiler_error("unknown run file kind '" ~ kind ~ "'; expected one of " ~ specs.keys() | list) }}
  {% endif %}
  {{ return(specs[kind]) }}
{% endmacro %}

{% macro run_dir() %}
  {% set dir = var('run_dir', none) %}
  {{ return(dir | string | trim if dir not in (none, '') else none) }}
{% endmacro %}

{#- the one file in run_dir ending in the kind's suffix; a clear error when none or several -#}
{% macro run_file_path(kind) %}
  {% set spec = run_file_spec(kind) %}
  {% set dir = run_dir() %}
  {% if dir is none %}
    {% set path = 'seeds/' ~ var('seed_prefix') ~ spec.suffix %}
  {% else %}
    {% set path = dir.rstrip('/') ~ '/*' ~ spec.suffix %}
  {% endif %}
  {% if not execute %}{{ return(path) }}{% endif %}
  {% set found = run_query(adapter.dispatch('list_files', 'run_diagnosis')(path)) %}
  {% set files = found.columns[0].values() | list %}
  {% if files | length == 0 %}
    {{ exceptions.raise_compiler_error("run_diagnosis: missing run file: no file matching '" ~ path ~ "' (every run folder needs *train_log.csv, *eval_log.csv, *shard_info.csv, *run_events.csv and *run_config.json)") }}
  {% elif files | length > 1 %}
    {{ exceptions.raise_compiler_error("run_diagnosis: several files match '" ~ path ~ "': " ~ files | join(', ') ~ ". Keep one run per folder.") }}
  {% endif %}
  {{ return(files[0]) }}
{% endmacro %}

{#- one text row per raw CSV row, with its position in the file -#}
{% macro raw_run_file(kind) %}
  {% set spec = run_file_spec(kind) %}
  {% if run_dir() is none %}
    {%- set seed = ref(var('seed_prefix') ~ spec.suffix.replace('.csv', '')) -%}
    select
      {% for column in spec.columns %}cast({{ column }} as {{ dbt.type_string() }}) as {{ column }},
      {% endfor %}row_number() over () as file_row_number
    from {{ seed }}
  {% else %}
    {% set path = run_file_path(kind) %}
    {% set header = check_csv_header(path, spec.columns) if execute else {} %}
    {{ adapter.dispatch('read_csv_as_text', 'run_diagnosis')(path, spec.columns, header) }}
  {% endif %}
{% endmacro %}

{#- stop the build with the file name when a CSV is empty or lacks a column;
    returns expected column -> the header's own spelling (case and spaces may differ) -#}
{% macro check_csv_header(path, columns) %}
  {% set header = run_query(adapter.dispatch('csv_header', 'run_diagnosis')(path)) %}
  {% set actual = header.columns[0].values() | list %}
  {% set found = actual | map('lower') | map('trim') | list %}
  {% if found | length == 0 %}
    {{ exceptions.raise_compiler_error("run_diagnosis: " ~ path ~ " is empty: expected a header line with columns " ~ columns | join(',')) }}
  {% endif %}
  {% set missing = columns | reject('in', found) | list %}
  {% if missing %}
    {{ exceptions.raise_compiler_error("run_diagnosis: " ~ path ~ " row 1 (header): missing column(s) " ~ missing | join(', ') ~ "; found " ~ found | join(', ') ~ "; expected " ~ columns | join(', ')) }}
  {% endif %}
  {% set mapping = {} %}
  {% for column in columns %}{% do mapping.update({column: actual[found.index(column)]}) %}{% endfor %}
  {{ return(mapping) }}
{% endmacro %}

{#- ===== engine-specific pieces: DuckDB here; other engines add their own ===== -#}

{% macro default__list_files(pattern) %}
  select file from glob({{ sql_literal(pattern) }}) order by file
{% endmacro %}

{% macro default__csv_header(path) %}
  {#- a zero-byte file has no header; DuckDB would otherwise invent one column -#}
  select column_name
  from (describe select * from read_csv({{ sql_literal(path) }}, all_varchar = true, header = true))
  where (select size from read_blob({{ sql_literal(path) }})) > 0
{% endmacro %}

{% macro default__read_csv_as_text(path, columns, header) %}
  select
    {% for column in columns %}cast({{ adapter.quote(header.get(column, column)) }} as {{ dbt.type_string() }}) as {{ column }},
    {% endfor %}row_number() over () as file_row_number
  from read_csv({{ sql_literal(path) }}, all_varchar = true, header = true)
{% endmacro %}

{#- the whole config file as one text value -#}
{% macro raw_run_config() %}
  {% set path = run_file_path('config') %}
  {{ adapter.dispatch('read_text_file', 'run_diagnosis')(path) }}
{% endmacro %}

{% macro default__read_text_file(path) %}
  select content as config_json, filename as config_path from read_text({{ sql_literal(path) }})
{% endmacro %}

{#- a JSON field as text ('$.a.b' path); NULL when absent or null -#}
{% macro json_text(document, json_path) %}
  {{ return(adapter.dispatch('json_text', 'run_diagnosis')(document, json_path)) }}
{% endmacro %}
{% macro default__json_text(document, json_path) %}
  json_extract_string({{ document }}, {{ sql_literal(json_path) }})
{% endmacro %}
{% macro spark__json_text(document, json_path) %}
  get_json_object({{ document }}, {{ sql_literal(json_path) }})
{% endmacro %}

{#- true when the key is present (even as null) -#}
{% macro json_has_key(document, json_path) %}
  {{ return(adapter.dispatch('json_has_key', 'run_diagnosis')(document, json_path)) }}
{% endmacro %}
{% macro default__json_has_key(document, json_path) %}
  json_exists({{ document }}, {{ sql_literal(json_path) }})
{% endmacro %}
