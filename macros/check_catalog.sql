{#- The finding categories, read from the check folders: every anomaly test
    (no_findings_above_info with config.meta.category) carries its category's metadata in
    its config.meta (models/checks/checks.md 'A category's metadata'). One dict a category,
    sorted by category; empty at parse time (the graph is read when dbt executes).
    check_catalog (models/marts/) is this list as a table; the registry test
    (tests/findings_registry_agrees_with_checks.sql) checks every entry is complete. -#}
{% macro check_catalog_entries() %}
  {%- set entries = [] -%}
  {%- if execute -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'test' and node.config.meta.get('category') -%}
      {%- set meta = node.config.meta -%}
      {%- set tested = [] -%}
      {#- the detector it sits on (the test also reads the findings mart, for the final severity) -#}
      {%- for dependency in (node.depends_on.get('nodes') or []) if dependency.startswith('model.') -%}
        {%- if dependency.split('.')[-1] != 'findings' -%}{%- do tested.append(dependency.split('.')[-1]) -%}{%- endif -%}
      {%- endfor -%}
      {%- set path_parts = node.original_file_path.split('/') -%}
      {%- do entries.append({
        'category': meta.get('category'),
        'check_folder': path_parts[2] if path_parts[:2] == ['models', 'checks'] else '',
        'detector_model': tested | first | default(''),
        'test_name': node.name,
        'description': meta.get('description'),
        'harm_weight': meta.get('harm_weight'),
        'impact_kind': meta.get('impact_kind'),
        'default_severity': meta.get('default_severity'),
        'report_group': meta.get('report_group'),
        'plain_name': meta.get('plain_name'),
        'confirm': meta.get('confirm'),
        'zoom_metric': meta.get('zoom_metric'),
        'requires': (meta.get('requires') or []) | join(','),
        'cost_estimators': (meta.get('cost_estimators') or []) | join(','),
      }) -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(entries | sort(attribute='category')) }}
{% endmacro %}

{#- the catalog's columns and their types (check_catalog, the registry test) -#}
{% macro check_catalog_columns() %}
  {{ return({
    'category': dbt.type_string(), 'check_folder': dbt.type_string(), 'detector_model': dbt.type_string(),
    'test_name': dbt.type_string(), 'description': dbt.type_string(), 'harm_weight': type_double(),
    'impact_kind': dbt.type_string(), 'default_severity': dbt.type_string(), 'report_group': dbt.type_string(),
    'plain_name': dbt.type_string(), 'confirm': dbt.type_string(), 'zoom_metric': dbt.type_string(),
    'requires': dbt.type_string(), 'cost_estimators': dbt.type_string(),
  }) }}
{% endmacro %}

{#- a value as a typed SQL literal (null when missing) -#}
{% macro catalog_literal(value, sql_type) -%}
  {%- if value is none or value == '' -%}cast(null as {{ sql_type }})
  {%- else -%}cast({{ sql_literal(value | string) }} as {{ sql_type }})
  {%- endif -%}
{%- endmacro %}

{#- the estimators models/intermediate/costing/ implements (costing.md), in the order
    int_findings_costed tries them: the names a category's meta.cost_estimators may use -#}
{% macro cost_estimator_names() %}
  {{ return(['overfit_exact', 'lr_basin_prior', 'anneal_prior', 'schedule_law', 'lost_steps_law', 'shard_law',
             'replay_ab', 'repeat_overfit', 'val_trend']) }}
{% endmacro %}

{#- whether a comma-joined list of estimator names (check_catalog.cost_estimators) holds one -#}
{% macro declares_estimator(list_column, estimator) -%}
    (',' || coalesce({{ list_column }}, '') || ',' like '%,{{ estimator }},%')
{%- endmacro %}
