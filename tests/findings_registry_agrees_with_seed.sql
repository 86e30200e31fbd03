-- The category seed (seeds/reference/finding_categories.csv), the registry of
-- detectors (finding_detectors() in macros/findings_registry.sql), the check folders
-- (models/checks/<check>/, models/checks/checks.md), the anomaly tests (tests with
-- meta.category) and the thresholds (config.meta.thresholds, read with threshold()) must agree;
-- one row per disagreement with what is wrong:
--   - a category of the seed that no detector in the registry emits;
--   - a registry category the seed does not list;
--   - an int_findings__ model missing from the registry, or not in its check folder
--     (models/checks/<check>/int_findings__<check>.sql);
--   - an anomaly test whose meta.category the seed does not list, that sits on a
--     detector the registry does not credit with that category, or whose name is not
--     the seed's test_name for that category;
--   - a seed test_name that is no anomaly test of its category;
--   - a threshold('...') a model or test reads that no model declares, one declared by more
--     than one model, one declared without a value and a reason, or one a check folder reads
--     from another check's folder (a threshold several checks share is declared on a shared model).
-- Structural: an error means the project is broken (a category that can never
-- fire, a finding no test reports), not that the run is bad.
-- tests/python/test_registry.py plants each disagreement and shows this test fails.
{{ config(severity='error', tags=['invariant']) }}

{%- set registry_rows = [] -%}
{%- for model, categories in finding_detectors().items() -%}
  {%- for category in categories -%}{%- do registry_rows.append([model, category]) -%}{%- endfor -%}
{%- endfor -%}
{%- set model_rows = [] -%}
{%- set test_rows = [] -%}
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
    {%- elif node.resource_type == 'test' and node.config.meta.get('category') -%}
      {%- set tested = [] -%}
      {#- the detector it sits on (the test also reads the findings mart, for the final severity) -#}
      {%- for dependency in node.depends_on.nodes if dependency.startswith('model.') -%}
        {%- if dependency.split('.')[-1] != 'findings' -%}{%- do tested.append(dependency.split('.')[-1]) -%}{%- endif -%}
      {%- endfor -%}
      {%- do test_rows.append([node.name, node.config.meta.get('category'), tested | first | default('')]) -%}
    {%- endif -%}
  {%- endfor -%}
{%- endif %}

with

categories as (
    select category, test_name from {{ ref('finding_categories') }}
),

registered as (
    {{ text_rows(['detector_model', 'category'], registry_rows) }}
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
    ('categories', 'registered', ['category'], 'category',
        "'category has no detector in finding_detectors()'"),
    ('registered', 'categories', ['category'], 'category',
        "'finding_detectors() lists ' || detector_model || ' for a category the seed does not list'"),
    ('detector_models', 'registered', ['detector_model'], 'cast(null as ' ~ dbt.type_string() ~ ')',
        "'model ' || detector_model || ' is not in finding_detectors()'"),
    ('anomaly_tests', 'categories', ['category'], 'category',
        "'anomaly test ' || test_name || ' names a category the seed does not list'"),
    ('anomaly_tests', 'registered', ['detector_model', 'category'], 'category',
        "'anomaly test ' || test_name || ' is on ' || detector_model || ', which the registry does not credit with this category'"),
    ('categories', 'anomaly_tests', ['test_name', 'category'], 'category',
        "'seed test_name ' || test_name || ' is no anomaly test of this category'"),
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

    select anomaly_tests.category,
        'anomaly test ' || anomaly_tests.test_name || ' is not the seed test_name of its category ('
            || categories.test_name || ')' as problem
    from anomaly_tests
    inner join categories
        on anomaly_tests.category = categories.category
    where anomaly_tests.test_name <> categories.test_name

    union all

    select cast(null as {{ dbt.type_string() }}) as category,
        'model ' || detector_model || ' is not in its check folder (models/checks/<check>/int_findings__<check>.sql)' as problem
    from detector_models
    where detector_model <> 'int_findings__' || check_folder

    union all

    select cast(null as {{ dbt.type_string() }}) as category,
        'threshold ' || threshold_name || ' is declared by ' || cast(count(*) as {{ dbt.type_string() }})
            || ' models (' || min(owner) || ', ' || max(owner) || '): declare it once' as problem
    from thresholds_declared
    group by threshold_name
    having count(*) > 1

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
