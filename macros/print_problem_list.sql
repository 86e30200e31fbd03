{#-
  on-run-end: print the run's problem list in plain words, one line per failing
  anomaly test (tests with meta.category), worst severity first, with its count
  and first step, then the titles of the findings it failed on (read back from
  the stored failures), as dbt-project-evaluator prints its issues.
-#}
{% macro print_problem_list(results) %}
  {% if not execute %}{{ return('') }}{% endif %}
  {% set lines = [] %}
  {% for result in results
       if result.node.resource_type == 'test'
       and result.status in ('warn', 'fail')
       and result.node.config.meta.get('category') %}
    {% set node = result.node %}
    {% set first_step = 'n/a' %}
    {% set titles = [] %}
    {% set worst = [0] %}
    {% if node.relation_name %}
      {% set stored = run_query('select first_step, title, ' ~ severity_rank('severity') ~ ' as severity_rank from '
          ~ node.relation_name ~ ' order by first_step') %}
      {% set steps = stored.columns[0].values() | reject('none') | list %}
      {% if steps %}{% set first_step = steps | min %}{% endif %}
      {% set titles = stored.columns[1].values() | list %}
      {% do worst.append(stored.columns[2].values() | max) %}
    {% endif %}
    {% do lines.append((worst | max, node.name, node.config.meta.get('category'), result.failures, first_step, titles)) %}
  {% endfor %}
  {% set lines = lines | sort(attribute='0', reverse=true) %}
  {% if lines %}
    {{ print('') }}
    {{ print('run_diagnosis: ' ~ lines | length ~ ' problem(s) found in this run (failing anomaly tests):') }}
    {% for worst, name, category, failures, first_step, titles in lines %}
      {{ print('  - ' ~ name ~ ' [' ~ category ~ ']: ' ~ failures ~ ' finding(s), first at step ' ~ first_step) }}
      {% for title in titles %}{{ print('      ' ~ title) }}{% endfor %}
    {% endfor %}
    {{ print('Ranked report: python scripts/report.py (reports/report.md, report.html, findings.json)') }}
  {% elif results | selectattr('node.resource_type', 'equalto', 'test') | list | length > 0 %}
    {{ print('run_diagnosis: no anomaly test failed: nothing above info severity in this run.') }}
  {% endif %}
{% endmacro %}
