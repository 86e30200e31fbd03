{#- The one way SQL reads a threshold (models/checks/checks.md, "Thresholds").

    A threshold is declared once, beside the model that owns it: in the YAML of a check's
    detector (models/checks/<check>/), or of the intermediate, staging or mart model that uses
    it when several checks share it, as
        config: {meta: {thresholds: {<name>: {value: <value>, reason: "<why this value>"}}}}
    threshold('<name>') returns, in this order:
    - the value passed with --vars (`dbt build --vars '{spike_n_mads: 3}'`) or by a unit test's
      `overrides: vars:`: a run-time override always wins (a unit test must pin every threshold its
      model reads there: dbt compiles a unit test without the project's graph);
    - the declared value, looked up in the graph (the models' config.meta.thresholds);
    - while dbt parses (execute is false, the graph is not built yet) 2: the SQL rendered then is
      thrown away (only refs and configs are kept), so a small positive number will do (a window of 2
      rows, less one, is still a window); a list-valued threshold is read as `threshold(name) if execute else []`.
    An unknown name, or one declared more than once, is a compilation error naming it.
    tests/findings_registry_agrees_with_checks.sql checks every name read is declared exactly once,
    with a reason. -#}
{% macro threshold(name) %}
  {%- set override = var(name, none) -%}
  {%- if override is not none -%}{{ return(override) }}{%- endif -%}
  {%- if not execute -%}{{ return(2) }}{%- endif -%}
  {%- if graph.nodes is not defined -%}
    {#- a unit test compiles its model without the project's graph -#}
    {{ exceptions.raise_compiler_error("threshold('" ~ name ~ "') in a unit test: pin its value in the test's overrides: vars (a unit test has no graph to look declared thresholds up in)") }}
  {%- endif -%}
  {#- name -> the values declared for it, built once per parsed project and kept in the graph (the
      one object every node of a dbt invocation shares; it belongs to that parse, so its
      declarations are the graph's own): this runs a few hundred times per build, and one
      pass over every node each time would add seconds -#}
  {%- set declared_by_name = graph.get('run_diagnosis_declared_thresholds') -%}
  {%- if declared_by_name is none -%}
    {%- set declared_by_name = {} -%}
    {%- for thresholds in graph.nodes.values() | map(attribute='config.meta.thresholds') | select('mapping') -%}
      {%- for declared_name, spec in thresholds.items() -%}
        {%- do declared_by_name.setdefault(declared_name, []).append(spec) -%}
      {%- endfor -%}
    {%- endfor -%}
    {%- do graph.update({'run_diagnosis_declared_thresholds': declared_by_name}) -%}
  {%- endif -%}
  {%- set declared = declared_by_name.get(name, []) -%}
  {%- if declared | length != 1 -%}
    {{ exceptions.raise_compiler_error(
        "threshold('" ~ name ~ "') is " ~ ("declared " ~ (declared | length) ~ " times" if declared else "not declared")
        ~ ": declare it once, as config.meta.thresholds." ~ name ~ " {value, reason} in the YAML of the model that owns it"
        ~ " (models/checks/checks.md)") }}
  {%- endif -%}
  {{ return(declared[0]['value']) }}
{% endmacro %}
