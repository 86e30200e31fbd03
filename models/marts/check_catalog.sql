-- Every finding category, one row each, with the metadata its check folder declares on its
-- anomaly test (config.meta of the no_findings_above_info test in
-- models/checks/<check>/_<check>__models.yml): rendered from the parsed project when dbt
-- executes, so a new check's folder is its catalog row. The costing, coverage and fleet
-- models and the report read the categories here.
{{ config(materialized='table') }}
{%- set columns = check_catalog_columns() %}
{%- set entries = check_catalog_entries() %}
with

catalog as (
    {%- if entries | length == 0 %}
    {{ no_rows(columns.keys() | list, columns) }}
    {%- endif %}
    {%- for entry in entries %}
    select
        {%- for column, sql_type in columns.items() %}
        {{ catalog_literal(entry[column], sql_type) }} as {{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    {{ 'union all' if not loop.last }}
    {%- endfor %}
)

select * from catalog
