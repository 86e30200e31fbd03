{#-
  on-run-end: print the run's problem list in plain words, one line per failing
  anomaly test (tests with meta.category), worst severity first, with its count
  and first step, then the titles of the findings it failed on (read back from
  the stored failures), as dbt-project-evaluator prints its issues.
  When several runs are built together (the run spine stg_training__config holds
  more than one run_id), a test gets one line per run it failed on, and each line
  names its run; a single run prints exactly as before.
-#}
{% macro print_problem_list(results) %}
  {% if not execute %}{{ return('') }}{% endif %}
  {% set several_runs = problem_list_run_count() > 1 %}
  {% set lines = [] %}
  {% for result in results
       if result.node.resource_type == 'test'
       and result.status in ('warn', 'fail')
       and result.node.config.meta.get('category') %}
    {% set node = result.node %}
    {% set category = node.config.meta.get('category') %}
    {% if node.relation_name %}
      {% set stored = run_query('select *, ' ~ severity_rank('severity') ~ ' as problem_list_severity_rank from '
          ~ node.relation_name ~ ' order by first_step nulls last') %}
      {% set by_run = {} %}
      {% set run_order = [] %}
      {% for row in stored.rows %}
        {% set run = row['run_id'] if several_runs and 'run_id' in stored.column_names else none %}
        {% if run not in by_run %}{% do by_run.update({run: []}) %}{% do run_order.append(run) %}{% endif %}
        {% do by_run[run].append(row) %}
      {% endfor %}
      {% if not run_order %}
        {% do lines.append((0, node.name, category, none, result.failures, 'n/a', [])) %}
      {% endif %}
      {% for run in run_order %}
        {% set rows = by_run[run] %}
        {% set steps = rows | map(attribute='first_step') | reject('none') | list %}
        {% do lines.append((
            rows | map(attribute='problem_list_severity_rank') | max,
            node.name, category, run,
            result.failures if run is none else rows | length,
            steps | min if steps else 'n/a',
            rows | map(attribute='title') | list)) %}
      {% endfor %}
    {% else %}
      {% do lines.append((0, node.name, category, none, result.failures, 'n/a', [])) %}
    {% endif %}
  {% endfor %}
  {% set lines = lines | sort(attribute='0', reverse=true) %}
  {% if lines %}
    {{ print('') }}
    {{ print('run_diagnosis: ' ~ lines | length ~ ' problem(s) found in '
        ~ ('these runs' if several_runs else 'this run') ~ ' (failing anomaly tests):') }}
    {% for worst, name, category, run, failures, first_step, titles in lines %}
      {{ print('  - ' ~ name ~ ' [' ~ category ~ ']' ~ (' in run ' ~ run if run is not none else '')
          ~ ': ' ~ failures ~ ' finding(s), first at step ' ~ first_step) }}
      {% for title in titles %}{{ print('      ' ~ title) }}{% endfor %}
    {% endfor %}
    {{ print('Ranked report: python scripts/report.py (reports/report.md, report.html, findings.json)') }}
  {% elif results | selectattr('node.resource_type', 'equalto', 'test') | list | length > 0 %}
    {{ print('run_diagnosis: no anomaly test failed: nothing above info severity in '
        ~ ('these runs.' if several_runs else 'this run.')) }}
  {% endif %}
{% endmacro %}

{#- how many runs the database holds: the rows of the run spine (stg_training__config, one
    per run); 1 when it is not built or has no run_id yet -#}
{% macro problem_list_run_count() %}
  {% set spine = graph.nodes.get('model.' ~ project_name ~ '.stg_training__config') %}
  {% if spine is none %}{{ return(1) }}{% endif %}
  {% set relation = adapter.get_relation(database=spine.database, schema=spine.schema, identifier=spine.alias) %}
  {% if relation is none %}{{ return(1) }}{% endif %}
  {% set column_names = adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list %}
  {% if 'run_id' not in column_names %}{{ return(1) }}{% endif %}
  {% set counted = run_query('select count(distinct run_id) as n_runs from ' ~ relation) %}
  {{ return(counted.columns[0].values()[0] | int) }}
{% endmacro %}
