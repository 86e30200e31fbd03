-- The category seed (seeds/reference/finding_categories.csv), the registry of
-- detectors (finding_detectors() in macros/findings_registry.sql), the detector
-- models (models named int_findings__*) and the anomaly tests (tests with
-- meta.category) must agree; one row per disagreement with what is wrong:
--   - a category of the seed that no detector in the registry emits;
--   - a registry category the seed does not list;
--   - an int_findings__ model missing from the registry;
--   - an anomaly test whose meta.category the seed does not list, or that sits
--     on a detector the registry does not credit with that category;
--   - a seed test_name that is no anomaly test of its category.
-- Structural: an error means the project is broken (a category that can never
-- fire, a finding no test reports), not that the run is bad.
-- tests/python/test_registry.py plants each disagreement and shows this test fails.
{{ config(severity='error') }}

{%- set registry_rows = [] -%}
{%- for model, categories in finding_detectors().items() -%}
  {%- for category in categories -%}{%- do registry_rows.append([model, category]) -%}{%- endfor -%}
{%- endfor -%}
{%- set model_rows = [] -%}
{%- set test_rows = [] -%}
{%- if execute -%}
  {%- for node in graph.nodes.values() -%}
    {%- if node.resource_type == 'model' and node.name.startswith('int_findings__') -%}
      {%- do model_rows.append([node.name]) -%}
    {%- elif node.resource_type == 'test' and node.config.meta.get('category') -%}
      {%- set tested = [] -%}
      {%- for dependency in node.depends_on.nodes if dependency.startswith('model.') -%}
        {%- do tested.append(dependency.split('.')[-1]) -%}
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
    {{ text_rows(['detector_model'], model_rows) }}
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
] %}

disagreements as (
    {%- for rows, listed, keys, category, problem in checks %}
    select {{ category }} as category, {{ problem }} as problem
    from {{ rows }}
    where not exists (
        select 1 from {{ listed }}
        where {% for key in keys %}{{ listed }}.{{ key }} = {{ rows }}.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
    )
    {% if not loop.last %}union all{% endif %}
    {%- endfor %}
)

select * from disagreements
