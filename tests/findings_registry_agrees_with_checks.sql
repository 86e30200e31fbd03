-- The registry of detectors (finding_detectors() in macros/findings_registry.sql), the check
-- folders (models/checks/<check>/, models/checks/checks.md), the anomaly tests (tests with
-- meta.category, each carrying its category's metadata: check_catalog_entries()) and the
-- thresholds (config.meta.thresholds, read with threshold()) must agree; one row per
-- disagreement with what is wrong:
--   - an int_findings__ model missing from the registry, or not in its check folder
--     (models/checks/<check>/int_findings__<check>.sql);
--   - a registry entry that no anomaly test reports (no category; one that is no model stops dbt's parse);
--   - an anomaly test on a detector the registry does not list;
--   - a category declared by more than one anomaly test;
--   - an anomaly test whose metadata is incomplete (description, harm_weight, impact_kind,
--     default_severity) or names a value outside its vocabulary (impact_kind, default_severity,
--     report_group, requires: the names of macros/check_requirements.sql, cost_estimators:
--     the estimators costing implements);
--   - a threshold('...') a model or test reads that no model declares, one declared by more
--     than one model, one declared without a value and a reason, or one a check folder reads
--     from another check's folder (a threshold several checks share is declared on a shared model).
-- Structural: an error means the project is broken (a category that can never
-- fire, a finding no test reports), not that the run is bad.
-- tests/python/test_registry.py plants each disagreement and shows this test fails.
{{ config(severity='error', tags=['project_invariant']) }}

{%- set registry_rows = [] -%}
{%- for model in finding_detectors() -%}{%- do registry_rows.append([model]) -%}{%- endfor -%}
{#- what a category's metadata must hold, and the values its vocabularies allow -#}
{%- set required_meta = ['description', 'harm_weight', 'impact_kind', 'default_severity'] -%}
{%- set vocabularies = {
    'impact_kind': (['model', 'compute', 'config', 'logging'], 'one of: model compute config logging'),
    'default_severity': (['critical', 'high', 'medium', 'low', 'info'], 'one of: critical high medium low info'),
    'report_group': (['glitch', 'compute', 'instability'], 'one of: glitch compute instability'),
    'requires': (check_requirements().keys() | list, 'a name of check_requirements() in macros/check_requirements.sql'),
    'cost_estimators': (cost_estimator_names(), 'a name of cost_estimator_names() in macros/check_catalog.sql'),
} -%}
{%- set test_rows = [] -%}
{%- set meta_problems = [] -%}
{%- for entry in check_catalog_entries() -%}
  {%- do test_rows.append([entry.test_name, entry.category, entry.detector_model]) -%}
  {%- for field in required_meta if entry[field] is none or entry[field] | string | trim == '' -%}
    {%- do meta_problems.append([entry.category, 'anomaly test ' ~ entry.test_name ~ ' lacks meta.' ~ field]) -%}
  {%- endfor -%}
  {%- if entry.harm_weight is not none and entry.harm_weight is not number -%}
    {%- do meta_problems.append([entry.category, 'anomaly test ' ~ entry.test_name ~ ' has a meta.harm_weight that is no number']) -%}
  {%- endif -%}
  {%- for field, vocabulary in vocabularies.items() -%}
    {%- for value in ((entry[field] | string).split(',') if entry[field] else []) if value not in vocabulary[0] -%}
      {%- do meta_problems.append([entry.category, 'anomaly test ' ~ entry.test_name ~ ' has meta.' ~ field ~ ' ' ~ value ~ ' (' ~ vocabulary[1] ~ ')']) -%}
    {%- endfor -%}
  {%- endfor -%}
{%- endfor -%}
{%- set model_rows = [] -%}
{%- set threshold_read_rows = [] -%}
{%- set threshold_rows = [] -%}
{%- if execute -%}
  {%- for node in graph.nodes.values() -%}
    {%- set path_parts = node.original_file_path.split('/') -%}
    {%- set check_folder = path_parts[2] if node.resource_type == 'model' and path_parts[:2] == ['models', 'checks'] else '' -%}
    {#- every threshold('<name>') a model's or test's SQL reads (a name, not this comment's '<name>') -#}
    {%- for read in node.raw_code.split("threshold('")[1:] if read.split("'")[0].replace('_', '').isalnum() -%}
      {%- set read_threshold = [node.name, check_folder, read.split("'")[0]] -%}
      {%- if read_threshold not in threshold_read_rows -%}{%- do threshold_read_rows.append(read_threshold) -%}{%- endif -%}
    {%- endfor -%}
    {%- if node.resource_type == 'model' -%}
      {%- for name, declared in (node.config.meta.get('thresholds') or {}).items() -%}
        {%- set complete = declared is mapping and 'value' in declared and (declared.get('reason') or '') | trim != '' -%}
        {%- do threshold_rows.append([name, node.name, check_folder, 'complete' if complete else 'incomplete']) -%}
      {%- endfor -%}
    {%- endif -%}
    {%- if node.resource_type == 'model' and node.name.startswith('int_findings__') -%}
      {%- do model_rows.append([node.name, check_folder]) -%}
    {%- endif -%}
  {%- endfor -%}
{%- endif %}

with

registered as (
    {{ text_rows(['detector_model'], registry_rows) }}
),

metadata_problems as (
    {{ text_rows(['category', 'problem'], meta_problems) }}
),

detector_models as (
    {{ text_rows(['detector_model', 'check_folder'], model_rows) }}
),

thresholds_read as (
    {{ text_rows(['reader', 'check_folder', 'threshold_name'], threshold_read_rows) }}
),

thresholds_declared as (
    {{ text_rows(['threshold_name', 'owner', 'check_folder', 'declaration'], threshold_rows) }}
),

anomaly_tests as (
    {{ text_rows(['test_name', 'category', 'detector_model'], test_rows) }}
),

{#- each check: the rows, the list each row must appear in (on the key columns), the category and the problem -#}
{%- set checks = [
    ('detector_models', 'registered', ['detector_model'], 'cast(null as ' ~ dbt.type_string() ~ ')',
        "'model ' || detector_model || ' is not in finding_detectors()'"),
    ('registered', 'anomaly_tests', ['detector_model'], 'cast(null as ' ~ dbt.type_string() ~ ')',
        "'finding_detectors() lists ' || detector_model || ', on which no anomaly test declares a category (meta.category)'"),
    ('anomaly_tests', 'registered', ['detector_model'], 'category',
        "'anomaly test ' || test_name || ' is on ' || detector_model || ', which is not in finding_detectors()'"),
    ('thresholds_read', 'thresholds_declared', ['threshold_name'], 'cast(null as ' ~ dbt.type_string() ~ ')',
        "reader || ' reads threshold ' || threshold_name || ', which no model declares (config.meta.thresholds)'"),
] %}

disagreements as (
    {%- for rows, listed, keys, category, problem in checks %}
    select {{ category }} as category, {{ problem }} as problem
    from {{ rows }}
    where not exists (
        select 1 from {{ listed }}
        where {% for key in keys %}{{ listed }}.{{ key }} = {{ rows }}.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
    )
    union all
    {%- endfor %}

    select category, problem from metadata_problems

    union all

    {#- a name declared more than once: (rows, name column, category, what it is, declarers, their column, what to do) #}
    {%- set declared_once = [
        ('anomaly_tests', 'category', 'category', 'category', 'anomaly tests', 'test_name', 'one test a category'),
        ('thresholds_declared', 'threshold_name', 'cast(null as ' ~ dbt.type_string() ~ ')', 'threshold', 'models', 'owner', 'declare it once'),
    ] %}
    {%- for rows, name, category, kind, declarers, declarer, advice in declared_once %}
    select {{ category }} as category,
        '{{ kind }} ' || {{ name }} || ' is declared by ' || cast(count(*) as {{ dbt.type_string() }})
            || ' {{ declarers }} (' || min({{ declarer }}) || ', ' || max({{ declarer }}) || '): {{ advice }}' as problem
    from {{ rows }}
    group by {{ name }}
    having count(*) > 1

    union all
    {%- endfor %}

    select cast(null as {{ dbt.type_string() }}) as category,
        'model ' || detector_model || ' is not in its check folder (models/checks/<check>/int_findings__<check>.sql)' as problem
    from detector_models
    where detector_model <> 'int_findings__' || check_folder

    union all

    select cast(null as {{ dbt.type_string() }}) as category,
        'model ' || owner || ' declares threshold ' || threshold_name || ' without a value and a reason' as problem
    from thresholds_declared
    where declaration = 'incomplete'

    union all

    select distinct cast(null as {{ dbt.type_string() }}) as category,
        'check ' || thresholds_read.check_folder || ' reads threshold ' || thresholds_read.threshold_name || ' of check '
            || thresholds_declared.check_folder || ' (declare a shared threshold on a shared model)' as problem
    from thresholds_read
    inner join thresholds_declared
        on thresholds_read.threshold_name = thresholds_declared.threshold_name
    where thresholds_read.check_folder <> '' and thresholds_declared.check_folder <> ''
        and thresholds_read.check_folder <> thresholds_declared.check_folder
)

select * from disagreements
