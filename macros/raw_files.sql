{#-
  Where the raw rows come from. Without a run folder they are the dbt seeds (the
  team's sample run, run_id `seed_run_id`); with the environment variable
  RUN_DIAGNOSIS_RUN_DIR=/path they are the five files in that folder, found by suffix
  (one run, named after the folder), or in each of its sub-folders (a warehouse of
  runs, each named after its sub-folder). Either way every column arrives as text with
  its run and its 1-based position in its file (`run_id`, `file_row_number`), so
  staging is the same SQL for one run or many.

  The folder is data, never code or a pattern: it is read with env_var() (a --vars
  value would be rendered as Jinja, so `{{ 7*7 }}` in a folder name would run), it
  reaches SQL only through sql_literal(), and glob metacharacters in it are escaped
  before DuckDB sees it (DuckDB globs every path it reads, `[x]` included).
-#}

{% macro run_file_spec(kind) %}
  {% set specs = {
    'train': {'suffix': 'train_log.csv', 'columns': ['step', 'shard_id', 'loss', 'grad_norm', 'learning_rate', 'step_time_sec']},
    'eval': {'suffix': 'eval_log.csv', 'columns': ['step', 'val_loss', 'val_accuracy'], 'optional': ['val_map50', 'val_auc']},
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

{#- the files matching a glob pattern, sorted -#}
{% macro matching_files(pattern) %}
  {% set found = run_query(adapter.dispatch('list_files', 'run_diagnosis')(pattern)) %}
  {{ return(found.columns[0].values() | list) }}
{% endmacro %}

{#- true when a file name in paths ends with suffix -#}
{% macro any_ends_with(paths, suffix) %}
  {% for path in paths if path_name(path).endswith(suffix) %}{{ return(true) }}{% endfor %}
  {{ return(false) }}
{% endmacro %}

{#- the folder part and the last name of a path -#}
{% macro path_parent(path) %}{{ return(path.rsplit('/', 1)[0] if '/' in path else '.') }}{% endmacro %}
{% macro path_name(path) %}{{ return(path.rstrip('/').rsplit('/', 1)[-1]) }}{% endmacro %}

{#-
  The runs to build, as a list of {run_id, dir, files}: the seeds (one run, `seed_run_id`)
  without a run folder; the folder itself when it holds a *train_log.csv (one run, named after
  the folder); else every sub-folder holding a *train_log.csv (many runs, each named after its
  folder). One directory listing for all the runs (a warehouse may hold thousands).
-#}
{% macro run_sources() %}
  {% set dir = run_dir() %}
  {% if dir is none %}
    {{ return([{'run_id': var('seed_run_id'), 'dir': none, 'files': []}]) }}
  {% endif %}
  {% if not execute %}
    {{ return([{'run_id': path_name(dir), 'dir': dir, 'files': []}]) }}
  {% endif %}
  {% set suffix = run_file_spec('train').suffix %}
  {% set own = matching_files(glob_literal(dir) ~ '/*') %}
  {% if any_ends_with(own, suffix) %}
    {{ return([{'run_id': path_name(dir), 'dir': dir, 'files': own}]) }}
  {% endif %}
  {% set by_folder = {} %}
  {% for path in matching_files(glob_literal(dir) ~ '/*/*') %}
    {% set folder = path_parent(path) %}
    {% if folder not in by_folder %}{% do by_folder.update({folder: []}) %}{% endif %}
    {% do by_folder[folder].append(path) %}
  {% endfor %}
  {% set runs = [] %}
  {% for folder in by_folder | sort if any_ends_with(by_folder[folder], suffix) %}
    {% do runs.append({'run_id': path_name(folder), 'dir': folder, 'files': by_folder[folder]}) %}
  {% endfor %}
  {% if runs | length == 0 %}
    {{ exceptions.raise_compiler_error("run_diagnosis: no run in '" ~ dir ~ "': expected a file ending in " ~ suffix ~ " in the folder (one run) or in its sub-folders (one run each), beside *eval_log.csv, *shard_info.csv, *run_events.csv and *run_config.json") }}
  {% endif %}
  {{ return(runs) }}
{% endmacro %}

{#- the one file of a run's folder ending in the kind's suffix; a clear error when none or several -#}
{% macro run_file_path(kind, run) %}
  {% set spec = run_file_spec(kind) %}
  {% if run.dir is none %}
    {{ return('seeds/' ~ var('seed_prefix') ~ spec.suffix) }}
  {% endif %}
  {% if not execute %}{{ return(glob_literal(run.dir) ~ '/*' ~ spec.suffix) }}{% endif %}
  {% set files = [] %}
  {% for path in run.files if path_name(path).endswith(spec.suffix) %}{% do files.append(path) %}{% endfor %}
  {% if files | length == 0 %}
    {{ exceptions.raise_compiler_error("run_diagnosis: missing run file: no file ending in " ~ spec.suffix ~ " in '" ~ run.dir ~ "' (every run folder needs *train_log.csv, *eval_log.csv, *shard_info.csv, *run_events.csv and *run_config.json)") }}
  {% elif files | length > 1 %}
    {{ exceptions.raise_compiler_error("run_diagnosis: several files end in " ~ spec.suffix ~ " in '" ~ run.dir ~ "': " ~ files | join(', ') ~ ". Keep one run per folder.") }}
  {% endif %}
  {{ return(files[0]) }}
{% endmacro %}

{#- (run, path) for every run's file of one kind that this invocation builds (every run, or
    the incremental batch: see incremental_runs.sql) -#}
{% macro run_files(kind) %}
  {% set batch = batch_run_ids() %}
  {% set found = [] %}
  {% for run in run_sources() if batch is none or run.run_id in batch %}{% do found.append((run, run_file_path(kind, run))) %}{% endfor %}
  {{ return(found) }}
{% endmacro %}

{#- no row, with the named columns: text, or the type `types` gives a column (a reader with no
    file to read: an increment with no new or changed run; an empty list of literal rows) -#}
{% macro no_rows(columns, types={}) %}
  select {% for column in columns %}cast(null as {{ types.get(column, dbt.type_string()) }}) as {{ column }}{{ ', ' if not loop.last }}{% endfor %}
  where 1 = 0
{% endmacro %}

{#- one text row per raw CSV row of every run, with the run and the row's 1-based position in its file;
    an optional column (spec.optional) a file does not have is null -#}
{% macro raw_run_file(kind) %}
  {% set spec = run_file_spec(kind) %}
  {% set optional = spec.get('optional', []) %}
  {% set columns = spec.columns + optional %}
  {% set files = run_files(kind) %}
  {% set headers = check_csv_headers(files | map(attribute=1) | list, spec.columns, optional) if execute and run_dir() is not none and files else {} %}
  {% if not files %}{{ no_rows(['run_id'] + columns + ['file_row_number'], {'file_row_number': dbt.type_bigint()}) }}{% endif %}
  {% for run, path in files %}
    {% if not loop.first %}union all{% endif %}
    {% if run.dir is none %}
    select {{ sql_literal(run.run_id) }} as run_id, seed_file.*
    from ({{ adapter.dispatch('read_seed_as_text', 'run_diagnosis')(ref(var('seed_prefix') ~ spec.suffix.replace('.csv', '')), path, spec.columns, optional) }}) as seed_file
    {% else %}
    {#- the exact name, escaped: DuckDB's readers glob their path argument too -#}
    select {{ sql_literal(run.run_id) }} as run_id, run_file.*
    from ({{ adapter.dispatch('read_csv_as_text', 'run_diagnosis')(glob_literal(path), columns, headers.get(path, {})) }}) as run_file
    {% endif %}
  {% endfor %}
{% endmacro %}

{#- one row per run: whether its file's last line lacks a line end (the writer was cut off mid-row) -#}
{% macro raw_file_ends_mid_line(kind) %}
  {% set files = run_files(kind) %}
  {% if not files %}{{ no_rows(['run_id', 'ends_mid_line'], {'ends_mid_line': dbt.type_boolean()}) }}{% endif %}
  {% for run, path in files %}
    {% if not loop.first %}union all{% endif %}
    select {{ sql_literal(run.run_id) }} as run_id, run_file_end.ends_mid_line
    from (
      {%- if run.dir is none %}select false as ends_mid_line
      {%- else %}{{ adapter.dispatch('file_ends_mid_line', 'run_diagnosis')(glob_literal(path)) }}{% endif -%}
    ) as run_file_end
  {% endfor %}
{% endmacro %}

{% macro default__file_ends_mid_line(path) %}
  select coalesce(length(content) > 0 and right(content, 1) not in (chr(10), chr(13)), false) as ends_mid_line
  from read_text({{ sql_literal(path) }})
{% endmacro %}

{#- stop the build with the file name when a CSV is empty or lacks a column; one query for all
    the files of a kind; returns path -> (expected column -> the header's own spelling), with those
    of the optional columns the header has -#}
{% macro check_csv_headers(paths, columns, optional=[]) %}
  {% set parts = [] %}
  {% for path in paths %}
    {% do parts.append('select ' ~ loop.index ~ ' as file_index, header.* from (' ~ adapter.dispatch('csv_header', 'run_diagnosis')(glob_literal(path)) ~ ') as header') %}
  {% endfor %}
  {% set found_rows = run_query(parts | join(' union all ')) %}
  {% set mappings = {} %}
  {% for path in paths %}
    {% set file_index = loop.index %}
    {% set actual = [] %}
    {% for row in found_rows.rows if row[0] == file_index %}{% do actual.append(row[1]) %}{% endfor %}
    {% set found = actual | map('lower') | map('trim') | list %}
    {% if found | length == 0 %}
      {{ exceptions.raise_compiler_error("run_diagnosis: " ~ path ~ " is empty: expected a header line with columns " ~ columns | join(',')) }}
    {% endif %}
    {% set missing = columns | reject('in', found) | list %}
    {% if missing %}
      {{ exceptions.raise_compiler_error("run_diagnosis: " ~ path ~ " row 1 (header): missing column(s) " ~ missing | join(', ') ~ "; found " ~ found | join(', ') ~ "; expected " ~ columns | join(', ')) }}
    {% endif %}
    {% set mapping = {} %}
    {% for column in columns + optional if column in found %}{% do mapping.update({column: actual[found.index(column)]}) %}{% endfor %}
    {% do mappings.update({path: mapping}) %}
  {% endfor %}
  {{ return(mappings) }}
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

{#- a seed's rows as text in file order (DuckDB keeps a seed's insertion order; an engine
    that stores seeds as unordered parts reads the seed's CSV file instead); an optional column
    the seed does not have is null -#}
{% macro default__read_seed_as_text(seed, path, columns, optional=[]) %}
  {% set present = adapter.get_columns_in_relation(seed) | map(attribute='name') | map('lower') | list if execute else [] %}
  select
    {% for column in columns %}cast({{ column }} as {{ dbt.type_string() }}) as {{ column }},
    {% endfor %}{% for column in optional %}{% if column in present %}cast({{ column }} as {{ dbt.type_string() }}){% else %}cast(null as {{ dbt.type_string() }}){% endif %} as {{ column }},
    {% endfor %}row_number() over () as file_row_number
  from {{ seed }}
{% endmacro %}

{#- header: expected column -> the header's spelling (check_csv_headers); a column it lacks, an optional
    one (a missing required column stopped the build there), is null; none at parse time -#}
{% macro default__read_csv_as_text(path, columns, header) %}
  select
    {% for column in columns %}{% if column in header or not header %}cast({{ adapter.quote(header.get(column, column)) }} as {{ dbt.type_string() }}){% else %}cast(null as {{ dbt.type_string() }}){% endif %} as {{ column }},
    {% endfor %}row_number() over () as file_row_number
  from read_csv({{ sql_literal(path) }}, all_varchar = true, header = true, delim = ',', null_padding = true)
{% endmacro %}

{#- every run's config file as one text value, with the run, the path and the file's name (the
    findings name the file, not the path: the same run in another folder gives the same findings) -#}
{% macro raw_run_config() %}
  {% set files = run_files('config') %}
  {% if not files %}{{ no_rows(['run_id', 'config_json', 'config_path', 'config_file_name']) }}{% endif %}
  {% for run, path in files %}
    {% if not loop.first %}union all{% endif %}
    select {{ sql_literal(run.run_id) }} as run_id, config_file.config_json, config_file.config_path,
      {{ sql_literal(path_name(path)) }} as config_file_name
    from ({{ adapter.dispatch('read_text_file', 'run_diagnosis')(glob_literal(path)) }}) as config_file
  {% endfor %}
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
