{#-
  Spark variants of the engine-specific readers (raw_files.sql, incremental_runs.sql).

  Spark SQL has no glob() or read_csv() table function, and a CSV or text read gives no
  row position. Every file is therefore read whole with the `binaryFile` source (one row
  per file: path, content) and split into lines with posexplode, so a row's number comes
  from its place in the file, never from the read order (a seed is read from its CSV file
  for the same reason: Spark stores a seed as unordered parquet parts). Each line is parsed
  with from_csv (quotes as DuckDB: "a,b" is one field, "" inside quotes is a quote); blank
  lines are skipped and short rows padded with NULLs, as DuckDB's read_csv(null_padding).

  Paths arrive glob-escaped (glob_literal: `[x]` for [ ] * ?); Hadoop's globbing reads
  that form too, and spark_unglob() gives back the path as written. Limits: a file is read
  as one value (up to 2 GB, spark.sql.sources.binaryFile.maxLength); a quoted field with a
  line break is split at it; names starting with `_` or `.` are hidden from Spark's
  listing; `{` `}` `,` in a folder name are Hadoop glob syntax.
-#}

{#- a glob path as Spark's `binaryFile`.`path` table (backticks doubled) -#}
{% macro spark_binary_file(path) %}binaryFile.`{{ path | replace('`', '``') }}`{% endmacro %}

{#- the path as written, from its glob_literal() form -#}
{% macro spark_unglob(path) %}
  {{ return(modules.re.sub('\\[([\\[\\]*?])\\]', '\\1', path)) }}
{% endmacro %}

{#- a glob component (glob_literal escapes, `*`, `?`) as a Java regex for one path component -#}
{% macro spark_glob_regex(component) %}
  {% set parts = [] %}
  {% for token in modules.re.findall('\\[[\\[\\]*?]\\]|.', component) %}
    {% if token == '*' %}{% do parts.append('[^/]*')
    %}{% elif token == '?' %}{% do parts.append('[^/]')
    %}{% else %}{% do parts.append(modules.re.escape(spark_unglob(token))) %}{% endif %}
  {% endfor %}
  {{ return(parts | join('')) }}
{% endmacro %}

{#- true when a path component holds a glob character outside glob_literal's escapes -#}
{% macro spark_is_glob(component) %}
  {{ return(modules.re.sub('\\[[\\[\\]*?]\\]', '', component) | select('in', '*?[') | list | length > 0) }}
{% endmacro %}

{#-
  The files matching a pattern, sorted, as written (relative when the pattern is). Spark
  fails on a glob that matches nothing, so the folder before the first glob component is
  listed (it must exist; listing gives no row for an empty folder) and the files are kept
  by a regex of the rest of the pattern, anchored at that folder.
-#}
{% macro spark__list_files(pattern) %}
  {% set components = pattern.split('/') %}
  {% set glob_indexes = [components | length - 1] %}
  {% for component in components %}{% if spark_is_glob(component) %}{% do glob_indexes.append(loop.index0) %}{% endif %}{% endfor %}
  {% set first_glob = [glob_indexes | min] %}
  {% set base = components[:first_glob[0]] | join('/') %}
  {% set rest = components[first_glob[0]:] %}
  {% set rest_regex = [] %}
  {% for component in rest %}{% do rest_regex.append(spark_glob_regex(component)) %}{% endfor %}
  {% set anchor = modules.re.escape('/' ~ spark_unglob(components[first_glob[0] - 1]) ~ '/') if first_glob[0] > 0 and base not in ('', '.') else '' %}
  {% set listed = (base if base != '' else ('/' if pattern.startswith('/') else '.')) ~ ('/' ~ rest[:-1] | join('/') if rest | length > 1 else '') %}
  select concat({{ sql_literal(spark_unglob(base) ~ '/' if base != '' else ('/' if pattern.startswith('/') else '')) }},
      regexp_extract(path, {{ sql_literal(anchor ~ '(' ~ rest_regex | join('/') ~ ')$') }}, 1)) as file
  from {{ spark_binary_file(listed) }}
  where path rlike {{ sql_literal(anchor ~ rest_regex | join('/') ~ '$') }}
  order by file
{% endmacro %}

{#- every line of a file with its 1-based line number (line end, LF or CRLF, removed; a UTF-8
    byte order mark before line 1 dropped, as DuckDB's read_csv does) -#}
{% macro spark_file_lines(path) %}
  select
    line_number,
    case when right(line_text, 1) = chr(13) then substring(line_text, 1, length(line_text) - 1) else line_text end as line_text
  from (
    select
      cast(file_line.line_index as {{ dbt.type_bigint() }}) + 1 as line_number,
      case when file_line.line_index = 0 and startswith(file_line.line_text, decode(unhex('EFBBBF'), 'UTF-8'))
        then substring(file_line.line_text, 2) else file_line.line_text end as line_text
    from {{ spark_binary_file(path) }}
    lateral view posexplode(split(cast(content as {{ dbt.type_string() }}), chr(10))) file_line as line_index, line_text
  ) as file_lines
{% endmacro %}

{#- the non-blank lines of a file, numbered 1.. (the header is line 1) -#}
{% macro spark_csv_lines(path) %}
  select row_number() over (order by line_number) as csv_line_number, line_text
  from ({{ spark_file_lines(path) }}) as file_lines
  where line_text <> ''
{% endmacro %}

{#- the header's column names, in order (none for an empty file) -#}
{% macro spark__csv_header(path) %}
  select
    regexp_replace(trim(header_field.name), '^"|"$', '') as column_name,
    header_field.position as column_position
  from ({{ spark_csv_lines(path) }}) as csv_lines
  lateral view posexplode(split(line_text, ',')) header_field as position, name
  where csv_lines.csv_line_number = 1
{% endmacro %}

{#- a CSV file's rows as text; file_row_number counts the data rows (blank lines skipped) -#}
{% macro spark__read_csv_as_text(path, columns, header) %}
  {% set names = [] %}
  {% if execute %}
    {% set found = run_query('select column_name from (' ~ spark__csv_header(path) ~ ') as header order by column_position') %}
    {% for name in found.columns[0].values() %}{% do names.append(name) %}{% endfor %}
  {% endif %}
  {% set lowered = names | map('lower') | map('trim') | list %}
  {% set schema = [] %}
  {% for name in names %}{% do schema.append('c' ~ loop.index0 ~ ' string') %}{% endfor %}
  select
    {% for column in columns %}
    {%- set spelled = header.get(column, column) %}
    {%- set position = names.index(spelled) if spelled in names else (lowered.index(column) if column in lowered else none) %}
    {%- if position is none %}cast(null as {{ dbt.type_string() }}){% else %}csv_row.fields.c{{ position }}{% endif %} as {{ column }},
    {% endfor %}cast(csv_row.csv_line_number - 1 as {{ dbt.type_bigint() }}) as file_row_number
  from (
    select
      csv_line_number,
      {% if schema %}from_csv(line_text, {{ sql_literal(schema | join(', ')) }}, map('escape', '"')){% else %}cast(null as struct<c0: string>){% endif %} as fields
    from ({{ spark_csv_lines(path) }}) as csv_lines
    where csv_line_number > 1
  ) as csv_row
{% endmacro %}

{#- a seed's rows in file order: read from the seed's CSV file (path relative to the project,
    the working directory of the dbt process), not from the seed table (unordered parquet parts) -#}
{% macro spark__read_seed_as_text(seed, path, columns, optional=[]) %}
  {{ return(spark__read_csv_as_text(glob_literal(path), columns + optional, {})) }}
{% endmacro %}

{% macro spark__read_text_file(path) %}
  select cast(content as {{ dbt.type_string() }}) as config_json, {{ sql_literal(spark_unglob(path)) }} as config_path
  from {{ spark_binary_file(path) }}
{% endmacro %}

{% macro spark__file_ends_mid_line(path) %}
  select coalesce(length(content) > 0 and right(cast(content as {{ dbt.type_string() }}), 1) not in (chr(10), chr(13)), false) as ends_mid_line
  from {{ spark_binary_file(path) }}
{% endmacro %}

{#- true when the key is present (even as null): the key is among its parent object's keys -#}
{% macro spark__json_has_key(document, json_path) %}
  {%- set parent, key = json_path.rsplit('.', 1) -%}
  coalesce(array_contains(json_object_keys(
    {%- if parent == '$' %}{{ document }}{% else %}get_json_object({{ document }}, {{ sql_literal(parent) }}){% endif -%}
  ), {{ sql_literal(key) }}), false)
{%- endmacro %}

{#- md5 of the files' md5s in path order (incremental_runs.sql; used only where incremental runs are on) -#}
{% macro spark__file_fingerprints(run_id, paths) %}
  select {{ sql_literal(run_id) }} as run_id,
    md5(array_join(transform(array_sort(collect_list(named_struct('path', path, 'digest', md5(content)))), file -> file.digest), ',')) as fingerprint
  from (
    {% for path in paths %}{% if not loop.first %}union all {% endif %}select path, content from {{ spark_binary_file(glob_literal(path)) }}
    {% endfor %}
  ) as run_file
{% endmacro %}

{#-
  dbt.listagg on Spark: dbt-spark's version drops the order_by_clause (with a warning), so a
  list of steps came out in whatever order the rows were read. This one sorts the collected
  values by the clause's keys (asc/desc; NULLs last as on DuckDB unless `nulls first`) before
  joining them; NULL values are skipped like string_agg's. A root-project macro named
  spark__listagg takes precedence over the adapter's.
-#}
{% macro spark__listagg(measure, delimiter_text, order_by_clause, limit_num) -%}
  {%- set keys = [] -%}
  {%- if order_by_clause -%}
    {%- set state = namespace(depth=0, current='') -%}
    {%- set clause = modules.re.sub('(?i)^\\s*order\\s+by\\s+', '', order_by_clause) -%}
    {%- for char in clause -%}
      {%- if char == ',' and state.depth == 0 -%}{% do keys.append(state.current) %}{% set state.current = '' -%}
      {%- else -%}
        {%- if char == '(' %}{% set state.depth = state.depth + 1 %}{% elif char == ')' %}{% set state.depth = state.depth - 1 %}{% endif -%}
        {%- set state.current = state.current ~ char -%}
      {%- endif -%}
    {%- endfor -%}
    {%- do keys.append(state.current) -%}
  {%- endif -%}
  {%- set parsed = [] -%}
  {%- for key in keys -%}
    {%- set match = modules.re.match('(?is)^\\s*(.*?)(\\s+(asc|desc))?(\\s+nulls\\s+(first|last))?\\s*$', key) -%}
    {%- do parsed.append((match.group(1), (match.group(3) or 'asc') | lower == 'desc', (match.group(5) or 'last') | lower == 'first')) -%}
  {%- endfor -%}
  {%- set state = namespace(comparison='0') -%}
  {%- for expression, is_desc, nulls_first in parsed | reverse -%}
    {%- set k = 'k' ~ (parsed | length - loop.index) -%}
    {%- set state.comparison = 'case when left_item.' ~ k ~ ' <=> right_item.' ~ k ~ ' then ' ~ state.comparison
      ~ ' when left_item.' ~ k ~ ' is null then ' ~ ('-1' if nulls_first else '1')
      ~ ' when right_item.' ~ k ~ ' is null then ' ~ ('1' if nulls_first else '-1')
      ~ ' when left_item.' ~ k ~ ' < right_item.' ~ k ~ ' then ' ~ ('1' if is_desc else '-1')
      ~ ' else ' ~ ('-1' if is_desc else '1') ~ ' end' -%}
  {%- endfor -%}
  {%- set items -%}
    collect_list(named_struct({% for expression, is_desc, nulls_first in parsed %}'k{{ loop.index0 }}', {{ expression }}, {% endfor %}'listed', {{ measure }}))
  {%- endset -%}
  {%- set sorted -%}
    {%- if parsed %}array_sort({{ items }}, (left_item, right_item) -> {{ state.comparison }}){% else %}{{ items }}{% endif -%}
  {%- endset -%}
  {%- set values %}transform({{ sorted }}, listed_item -> listed_item.listed){% endset -%}
  array_join({% if limit_num %}slice({{ values }}, 1, {{ limit_num }}){% else %}{{ values }}{% endif %}, {{ delimiter_text }})
{%- endmacro %}
