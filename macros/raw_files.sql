{#-
  Where the raw rows come from. Without a run folder they are the dbt seeds (the
  team's sample run); with the environment variable RUN_DIAGNOSIS_RUN_DIR=/path
  they are the five files in that folder, found by suffix. Either way every column
  arrives as text with its 1-based position in the file (`file_row_number`), so
  staging is the same SQL.

  The folder is data, never code or a pattern: it is read with env_var() (a --vars
  value would be rendered as Jinja, so `{{ 7*7 }}` in a folder name would run), it
  reaches SQL only through sql_literal(), and glob metacharacters in it are escaped
  before DuckDB sees it (DuckDB globs every path it reads, `[x]` included).
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
  {% if var('run_dir', '') not in (none, '') %}
    {{ exceptions.raise_compiler_error("run_diagnosis: the run_dir var is no longer read: a folder name passed in --vars is rendered as Jinja (code could run from a path). Set the environment variable RUN_DIAGNOSIS_RUN_DIR=/path/to/run instead.") }}
  {% endif %}
  {% set dir = env_var('RUN_DIAGNOSIS_RUN_DIR', '') %}
  {{ return(dir.rstrip('/') if dir.strip() != '' else none) }}
{% endmacro %}

{#- a path as a glob pattern matching only itself: [ ] * ? each wrapped in a character class -#}
{% macro glob_literal(path) %}
  {% set escaped = [] %}
  {% for char in path %}{% do escaped.append('[' ~ char ~ ']' if char in '[]*?' else char) %}{% endfor %}
  {{ return(escaped | join('')) }}
{% endmacro %}

{#- the one file in run_dir ending in the kind's suffix; a clear error when none or several -#}
{% macro run_file_path(kind) %}
  {% set spec = run_file_spec(kind) %}
  {% set dir = run_dir() %}
  {% if dir is none %}
    {% set path = 'seeds/' ~ var('seed_prefix') ~ spec.suffix %}
  {% else %}
    {% set path = glob_literal(dir) ~ '/*' ~ spec.suffix %}
  {% endif %}
  {% if not execute %}{{ return(path) }}{% endif %}
  {% set found = run_query(adapter.dispatch('list_files', 'run_diagnosis')(path)) %}
  {% set files = found.columns[0].values() | list %}
  {% if files | length == 0 %}
    {{ exceptions.raise_compiler_error("run_diagnosis: missing run file: no file ending in " ~ spec.suffix ~ " in '" ~ dir ~ "' (every run folder needs *train_log.csv, *eval_log.csv, *shard_info.csv, *run_events.csv and *run_config.json)") }}
  {% elif files | length > 1 %}
    {{ exceptions.raise_compiler_error("run_diagnosis: several files end in " ~ spec.suffix ~ " in '" ~ dir ~ "': " ~ files | join(', ') ~ ". Keep one run per folder.") }}
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
    {#- the exact name, escaped: DuckDB's readers glob their path argument too -#}
    {{ adapter.dispatch('read_csv_as_text', 'run_diagnosis')(glob_literal(path), spec.columns, header) }}
  {% endif %}
{% endmacro %}

{#- one row: whether the file's last line lacks a line end (the writer was cut off mid-row) -#}
{% macro raw_file_ends_mid_line(kind) %}
  {% if run_dir() is none %}
    select false as ends_mid_line
  {% else %}
    {{ adapter.dispatch('file_ends_mid_line', 'run_diagnosis')(glob_literal(run_file_path(kind))) }}
  {% endif %}
{% endmacro %}

{% macro default__file_ends_mid_line(path) %}
  select coalesce(length(content) > 0 and right(content, 1) not in (chr(10), chr(13)), false) as ends_mid_line
  from read_text({{ sql_literal(path) }})
{% endmacro %}

{#- stop the build with the file name when a CSV is empty or lacks a column;
    returns expected column -> the header's own spelling (case and spaces may differ) -#}
{% macro check_csv_header(path, columns) %}
  {% set header = run_query(adapter.dispatch('csv_header', 'run_diagnosis')(glob_literal(path))) %}
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
  from (describe select * from read_csv({{ sql_literal(path) }}, all_varchar = true, header = true, delim = ',', null_padding = true))
  where (select size from read_blob({{ sql_literal(path) }})) > 0
{% endmacro %}

{% macro default__read_csv_as_text(path, columns, header) %}
  select
    {% for column in columns %}cast({{ adapter.quote(header.get(column, column)) }} as {{ dbt.type_string() }}) as {{ column }},
    {% endfor %}row_number() over () as file_row_number
  from read_csv({{ sql_literal(path) }}, all_varchar = true, header = true, delim = ',', null_padding = true)
{% endmacro %}

{#- the whole config file as one text value -#}
{% macro raw_run_config() %}
  {% set path = run_file_path('config') %}
  {{ adapter.dispatch('read_text_file', 'run_diagnosis')(glob_literal(path)) }}
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
