{#-
  Incremental builds, one run at a time (issue 14). Every run's rows depend only on that
  run's files (every model is partitioned by run_id), so a run is the unit of work:

  * on-run-start (`start_run_batch`): fingerprint every run's five files (an md5 of their
    bytes, plus its baseline run's, since a run is compared with it, plus the checksums of the
    project's models, tests and seeds, so a new version of a check rebuilds every run)
    and write the runs whose fingerprint is new or changed into the table `run_batch`;
  * every model is incremental (`append`) with a pre-hook (`delete_batch_runs`) that deletes
    the batch's runs from it; staging reads only the batch's run files, and every model reads
    its upstream models through `run_ref`, which keeps only the batch's runs;
  * a run whose folder is gone is deleted from every model at the start;
  * on-run-end (`record_built_runs`): when no model failed, the batch's fingerprints go into
    `built_runs`, so the next build skips them. A failed build records nothing: the next build
    redoes its batch. The batch's runs leave `built_runs` at the start, before any of their
    rows is deleted, so a build killed halfway (SIGKILL, a full disk) leaves them to be rebuilt
    even if their files then go back to what was recorded before.

  * while a build whose data tests failed is completed (RUN_DIAGNOSIS_COMPLETING=1: the models
    the failed tests skipped are built by a second invocation), the batch is kept as it is;

  * when the project itself changed since the last complete build (a new version of a model
    or test: `project_checksum()` differs from the one kept in `built_project`, or a database
    written before this bookkeeping existed), every model table is dropped first, so a model
    whose columns changed is created afresh instead of failing to append (`reset_if_project_changed`).

  * the history models (config meta `keeps_history: true`, models/marts/history/) are the
    exception: they only ever append. Their pre-hook deletes nothing, a gone run keeps its
    history, a project change does not drop them and `--full-refresh` leaves them
    (`full_refresh: false`): every build adds what it found for the runs it built.

  A run that was built before and has not changed is neither read nor rewritten: adding one
  run to a warehouse of N processes that run's rows only. New steps of a run still training
  change its files, so that run (all of it) is rebuilt. `dbt build --full-refresh`, or
  RUN_DIAGNOSIS_INCREMENTAL=0, rebuilds every run; so does an engine without
  `file_fingerprints` (Spark builds every model as a table). A changed threshold var is not
  part of the fingerprint: rebuild with --full-refresh after changing one.
-#}

{#- true when this invocation builds only the batch (DuckDB, not --full-refresh, not switched off) -#}
{% macro incremental_runs_enabled() %}
  {{ return(
    target.type == 'duckdb'
    and not flags.FULL_REFRESH
    and env_var('RUN_DIAGNOSIS_INCREMENTAL', '1') != '0'
  ) }}
{% endmacro %}

{% macro run_batch_relation() %}
  {{ return(api.Relation.create(database=target.database, schema=target.schema, identifier='run_batch')) }}
{% endmacro %}

{% macro built_runs_relation() %}
  {{ return(api.Relation.create(database=target.database, schema=target.schema, identifier='built_runs')) }}
{% endmacro %}

{#- the project's models, tests and seeds, as one text: a changed check changes every fingerprint
    (dbt's graph has no macro checksums: after changing only a macro, build with --full-refresh) -#}
{% macro project_checksum() %}
  {% set parts = [] %}
  {% for node in graph.nodes.values() if node.package_name == project_name %}
    {% do parts.append(node.unique_id ~ ':' ~ (node.checksum.checksum if node.checksum else '')) %}
  {% endfor %}
  {{ return(local_md5(parts | sort | join(','))) }}
{% endmacro %}

{#- select run_id, fingerprint, baseline_run_id: one row per run of `runs` (run_sources()), from its five files -#}
{% macro run_fingerprints_sql(runs) %}
  {% set parts = [] %}
  {% for run in runs %}
    {% if run.dir is none %}
      {#- the seeds: their checksums are part of project_checksum() -#}
      {% do parts.append('select ' ~ sql_literal(run.run_id) ~ ' as run_id, ' ~ sql_literal('seeds') ~ ' as fingerprint, cast(null as varchar) as baseline_run_id') %}
    {% else %}
      {% set paths = [] %}
      {% for kind in ['train', 'eval', 'shards', 'events', 'config'] %}{% do paths.append(run_file_path(kind, run)) %}{% endfor %}
      {% do parts.append(adapter.dispatch('file_fingerprints', 'run_diagnosis')(run.run_id, paths)) %}
    {% endif %}
  {% endfor %}
  {{ return(parts | join('\nunion all\n')) }}
{% endmacro %}

{#- one row: the run, an md5 of its files' bytes, and the baseline its config names (the last
    path is the config) -#}
{% macro default__file_fingerprints(run_id, paths) %}
  select
    {{ sql_literal(run_id) }} as run_id,
    md5(string_agg(md5(content), ',' order by filename)) as fingerprint,
    max(case when filename = {{ sql_literal(paths[-1]) }} then try(json_extract_string(decode(content), '$.baseline_run_id')) end) as baseline_run_id
  from read_blob([{% for path in paths %}{{ sql_literal(glob_literal(path)) }}{{ ',' if not loop.last }}{% endfor %}])
{% endmacro %}

{#- on-run-start: the runs to build in this invocation -#}
{% macro start_run_batch() %}
  {% if not execute %}{{ return('') }}{% endif %}
  {#- completing a build whose data tests failed (dbt_runner.build_run(complete=True) builds the
      models they skipped): the same batch, and no start over, since that build recorded nothing -#}
  {% if env_var('RUN_DIAGNOSIS_COMPLETING', '0') == '1' %}{{ return('') }}{% endif %}
  {#- (also when batches are switched off: their pre-hook appends to the tables too) -#}
  {% set checksum = project_checksum() %}
  {% if target.type == 'duckdb' and not flags.FULL_REFRESH %}{% do reset_if_project_changed(checksum) %}{% endif %}
  {% if not incremental_runs_enabled() %}{{ return('') }}{% endif %}
  {% set runs = run_sources() %}{#- one directory listing for the whole hook -#}
  {% set built = adapter.get_relation(database=target.database, schema=target.schema, identifier='built_runs') %}
  {% do run_query('create schema if not exists ' ~ target.schema) %}
  {% do run_query(
    'create or replace table ' ~ run_batch_relation() ~ ' as '
    ~ 'with current_runs as (' ~ run_fingerprints_sql(runs) ~ '), '
    ~ 'coded as (select current_runs.run_id, md5(current_runs.fingerprint || coalesce(baseline.fingerprint, ' ~ "''" ~ ') || ' ~ sql_literal(checksum) ~ ') as fingerprint '
    ~ 'from current_runs left join current_runs as baseline on baseline.run_id = current_runs.baseline_run_id) '
    ~ 'select coded.run_id, coded.fingerprint from coded'
    ~ ((' where not exists (select 1 from ' ~ built ~ ' as built where built.run_id = coded.run_id and built.fingerprint = coded.fingerprint)') if built else '')
  ) %}
  {% set current = runs | map(attribute='run_id') | map('string') | list %}
  {% set literals = [] %}
  {% for run_id in current %}{% do literals.append(sql_literal(run_id)) %}{% endfor %}
  {#- before any row is touched, the batch's runs (and the runs that are gone) are no longer
      recorded as built: a build killed from here on leaves them to be rebuilt, even when their
      files go back to what was recorded before (a killed build may have deleted or appended
      some of their rows) -#}
  {% if built %}
    {% do run_query('delete from ' ~ built ~ ' where run_id in (select run_id from ' ~ run_batch_relation() ~ ') or run_id not in (' ~ literals | join(', ') ~ ')') %}
  {% endif %}
  {#- a run folder that is gone takes its rows with it -#}
  {% for node in graph.nodes.values() if node.resource_type == 'model' and node.package_name == project_name and node.config.materialized == 'incremental' and not keeps_history(node) %}
    {% set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) %}
    {% if relation and relation.type == 'table' %}
      {% do run_query('delete from ' ~ relation ~ ' where run_id not in (' ~ literals | join(', ') ~ ')') %}
    {% endif %}
  {% endfor %}
  {% set counts = run_query('select count(*) from ' ~ run_batch_relation()) %}
  {{ log('run_diagnosis: incremental build: ' ~ counts.columns[0].values()[0] ~ ' of ' ~ runs | length ~ ' run(s) new or changed', info=true) }}
  {{ return('') }}
{% endmacro %}

{% macro built_project_relation() %}
  {{ return(api.Relation.create(database=target.database, schema=target.schema, identifier='built_project')) }}
{% endmacro %}

{#- the project's model tables in this database (the relation cache, filled before the hooks run),
    the history models aside -#}
{% macro project_model_relations() %}
  {% set found = [] %}
  {% for node in graph.nodes.values() if node.resource_type == 'model' and node.package_name == project_name and not keeps_history(node) %}
    {% set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) %}
    {% if relation %}{% do found.append(relation) %}{% endif %}
  {% endfor %}
  {{ return(found) }}
{% endmacro %}

{#- on-run-start: a database built by another version of the project starts over. Its tables
    may lack columns this version writes (or run_id itself, before issue 14), and appending to
    them would fail; every run is rebuilt anyway, since the fingerprints hold the project's
    checksum. adapter.drop_relation keeps dbt's relation cache right, so each model is then
    created as a new table. -#}
{% macro reset_if_project_changed(checksum) %}
  {% set existing = project_model_relations() %}
  {% if existing | length == 0 %}{{ return('') }}{% endif %}
  {% set kept = adapter.get_relation(database=target.database, schema=target.schema, identifier='built_project') %}
  {% set stored = run_query('select max(checksum) from ' ~ kept).columns[0].values()[0] if kept else none %}
  {% if stored == checksum %}{{ return('') }}{% endif %}
  {{ log('run_diagnosis: the database was built by another version of the project: rebuilding every model', info=true) }}
  {% for relation in existing %}{% do adapter.drop_relation(relation) %}{% endfor %}
  {% for name in ['built_runs', 'built_project'] %}
    {% set relation = adapter.get_relation(database=target.database, schema=target.schema, identifier=name) %}
    {% if relation %}{% do adapter.drop_relation(relation) %}{% endif %}
  {% endfor %}
  {{ return('') }}
{% endmacro %}

{#- on-run-end: remember what this build built, unless a model failed -#}
{% macro record_built_runs(results) %}
  {% if not execute or not incremental_runs_enabled() %}{{ return('') }}{% endif %}
  {#- only a build of every model, none failed, brings the runs up to date -#}
  {% set built_models = results | selectattr('node.resource_type', 'equalto', 'model') | selectattr('status', 'equalto', 'success') | list %}
  {% set all_models = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model') | selectattr('package_name', 'equalto', project_name) | list %}
  {#- (run_batch was written by this invocation's on-run-start: the relation cache does not know it) -#}
  {% if built_models | length < all_models | length %}{{ return('') }}{% endif %}
  {% do run_query('create table if not exists ' ~ built_runs_relation() ~ ' (run_id varchar, fingerprint varchar)') %}
  {% do run_query('delete from ' ~ built_runs_relation() ~ ' where run_id in (select run_id from ' ~ run_batch_relation() ~ ')') %}
  {% do run_query('insert into ' ~ built_runs_relation() ~ ' select run_id, fingerprint from ' ~ run_batch_relation()) %}
  {% do run_query('create or replace table ' ~ built_project_relation() ~ ' as select ' ~ sql_literal(project_checksum()) ~ ' as checksum') %}
  {{ return('') }}
{% endmacro %}

{#- a history model (config meta keeps_history): appended to on every build, never deleted from -#}
{% macro keeps_history(node) %}
  {{ return((node.config.get('meta') or {}).get('keeps_history', false)) }}
{% endmacro %}

{#- the model is being built as an increment (its table exists, batches on) -#}
{% macro building_increment() %}
  {#- a unit test (no relation of its own) is never an increment -#}
  {% if this is none or model.resource_type != 'model' %}{{ return(false) }}{% endif %}
  {{ return(incremental_runs_enabled() and is_incremental()) }}
{% endmacro %}

{#- pre-hook of every model: drop the batch's runs before their new rows are appended -#}
{% macro delete_batch_runs() %}
  {% if execute and this is not none and model.resource_type == 'model' and keeps_history(model) %}
    {#- a history model appends what this build found; it never deletes -#}
  {% elif execute and building_increment() %}
    delete from {{ this }} where run_id in (select run_id from {{ run_batch_relation() }})
  {% elif execute and this is not none and model.resource_type == 'model' and is_incremental() %}
    {#- batches switched off (RUN_DIAGNOSIS_INCREMENTAL=0) on a table built before: every run is rebuilt -#}
    delete from {{ this }}
  {% endif %}
{% endmacro %}

{#- an upstream model, limited to the batch's runs when this model is built as an increment -#}
{% macro run_ref(model_name) %}
  {% set upstream = ref(model_name) %}
  {% if building_increment() %}
    {{ return('(select * from ' ~ upstream ~ ' where run_id in (select run_id from ' ~ run_batch_relation() ~ '))') }}
  {% endif %}
  {{ return(upstream) }}
{% endmacro %}

{#- the run_ids staging reads in this invocation (None: every run) -#}
{% macro batch_run_ids() %}
  {% if not execute or not building_increment() %}{{ return(none) }}{% endif %}
  {% set found = run_query('select run_id from ' ~ run_batch_relation()) %}
  {{ return(found.columns[0].values() | list) }}
{% endmacro %}
