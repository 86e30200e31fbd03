{#-
  on-run-end: print the run's problem list in plain words, at the end of `dbt build`.

  1. A build in which a node failed never reads as healthy: when a seed, model or test
     errored (or was skipped because something upstream failed), the list starts with
     "run_diagnosis: the build FAILED: the diagnosis is INCOMPLETE", names the nodes that did
     not build with the first line of dbt's message, and counts the checks that never ran;
     it never says "nothing above info" then (dbt's exit code is 1).
  2. The problems: one entry per finding above info severity, read back from the stored
     failures of the anomaly tests (tests with meta.category; tests/generic/
     no_findings_above_info.sql stores the findings mart's rows), worst first by harm_rank:
     the rank, the final severity and the cost exactly as the report and findings.json give
     them, then the title. With several runs built together (the run spine
     stg_training__config holds more than one run_id) the runs are listed worst first, each
     with its findings, at most problem_list_max_per_run (var) a run.
  dbt prints its own summary of the warned tests after the on-run-end hooks ("Warning in
  test ..."): those events are fired outside warn_error_options, so a project cannot silence
  them; `dbt build --quiet` prints only this list and the errors.
-#}
{% macro print_problem_list(results) %}
  {% if not execute %}{{ return('') }}{% endif %}
  {% set several_runs = problem_list_run_count() > 1 %}
  {% set broken = problem_list_broken_nodes(results) %}
  {% set rows = [] %}
  {% set tests_fired = [] %}
  {% set tests_unread = [] %}
  {% for result in results
       if result.node.resource_type == 'test'
       and result.status in ('warn', 'fail')
       and result.node.config.meta.get('category') %}
    {% do tests_fired.append(result.node.name) %}
    {% set stored = problem_list_stored_rows(result.node) %}
    {% if stored is none %}
      {% do tests_unread.append(result.node.name ~ ' (' ~ result.failures ~ ' finding(s); its failures are not stored)') %}
    {% else %}
      {% for row in stored %}{% do rows.append(row) %}{% endfor %}
    {% endif %}
  {% endfor %}
  {% if broken.failed %}
    {{ print('') }}
    {{ print('run_diagnosis: the build FAILED: the diagnosis is INCOMPLETE. Do not read this run as healthy.') }}
    {% for name, kind, message in broken.failed %}
      {{ print('  - ' ~ kind ~ ' ' ~ name ~ (' could not run: ' if kind in ('test', 'unit_test') else ' did not build: ') ~ message) }}
    {% endfor %}
    {% if broken.skipped %}
      {{ print('  - skipped because of it: ' ~ broken.skipped | join(', ')) }}
    {% endif %}
    {% if broken.checks_not_run %}
      {{ print('  - ' ~ broken.checks_not_run | length ~ ' anomaly test(s) did not run, so their problems are unknown: '
          ~ broken.checks_not_run | join(', ')) }}
    {% endif %}
    {{ print('  Fix the error above and rebuild; until then no finding (or its absence) can be trusted.') }}
  {% endif %}
  {% if rows or tests_unread %}
    {{ print('') }}
    {{ print('run_diagnosis: ' ~ rows | length ~ ' problem(s) above info severity in '
        ~ ('these runs' if several_runs else 'this run')
        ~ ', worst first (rank and severity as in the report and findings.json):') }}
    {% set max_per_run = threshold('problem_list_max_per_run') | int %}
    {% for run in problem_list_runs(rows) %}
      {% if several_runs %}{{ print('  run ' ~ run.run_id ~ ' (' ~ run.rows | length ~ ', worst ' ~ run.worst ~ '):') }}{% endif %}
      {% for row in run.rows[:max_per_run] %}
        {{ print(problem_list_entry(row)) }}
      {% endfor %}
      {% if run.rows | length > max_per_run %}
        {{ print('                ... and ' ~ (run.rows | length - max_per_run) ~ ' more of lower rank (report.md lists them all)') }}
      {% endif %}
    {% endfor %}
    {% for line in tests_unread %}{{ print('  - ' ~ line) }}{% endfor %}
    {{ print('The ' ~ tests_fired | length ~ ' anomaly test(s) behind this list also warn in dbt' ~ "'" ~ 's own summary '
        ~ 'after it (dbt build --quiet prints only this list and the errors). Ranked report: run-diagnosis report '
        ~ '(reports/report.md, report.html, findings.json)') }}
  {% elif not broken.failed and results | selectattr('node.resource_type', 'equalto', 'test') | list | length > 0 %}
    {{ print('run_diagnosis: no anomaly test failed: nothing above info severity in '
        ~ ('these runs.' if several_runs else 'this run.')) }}
  {% endif %}
{% endmacro %}

{#- the nodes of this invocation that did not build: failed (error, runtime error; a unit test
    that failed means the SQL is wrong) with the first line of dbt's message, the ones skipped
    because of them, and the anomaly tests among those (their checks never ran) -#}
{% macro problem_list_broken_nodes(results) %}
  {% set failed, skipped, checks_not_run = [], [], [] %}
  {% for result in results %}
    {% set node = result.node %}
    {% set is_check = node.resource_type == 'test' and node.config.meta.get('category') %}
    {% if result.status in ('error', 'runtime error') or (node.resource_type == 'unit_test' and result.status == 'fail') %}
      {#- the first line of dbt's message that says what went wrong (not "Runtime Error in model x (path)") -#}
      {% set lines = (result.message or 'no message') | string | trim %}
      {% set lines = lines.split('\n') | map('trim') | reject('equalto', '') | list %}
      {% set telling = [] %}
      {% for line in lines if ' Error in ' ~ node.resource_type ~ ' ' not in line %}{% do telling.append(line) %}{% endfor %}
      {% set first_line = (telling or lines or ['no message'])[0][:240] %}
      {% do failed.append((node.name, node.resource_type, first_line)) %}
      {% if is_check %}{% do checks_not_run.append(node.name) %}{% endif %}
    {% elif result.status == 'skipped' %}
      {% do skipped.append(node.name) %}
      {% if is_check %}{% do checks_not_run.append(node.name) %}{% endif %}
    {% endif %}
  {% endfor %}
  {% set shown = skipped[:8] + (['and ' ~ (skipped | length - 8) ~ ' more'] if skipped | length > 8 else []) %}
  {{ return({'failed': failed, 'skipped': shown if skipped else [], 'checks_not_run': checks_not_run}) }}
{% endmacro %}

{#- the stored failures of an anomaly test as dicts (the findings mart's columns), or none when
    the test stores none -#}
{% macro problem_list_stored_rows(node) %}
  {% if not node.relation_name %}{{ return(none) }}{% endif %}
  {% set stored = run_query('select * from ' ~ node.relation_name) %}
  {% set rows = [] %}
  {% for row in stored.rows %}
    {% set values = {'test_name': node.name} %}
    {% for column in stored.column_names %}{% do values.update({column: row[column]}) %}{% endfor %}
    {% do rows.append(values) %}
  {% endfor %}
  {{ return(rows) }}
{% endmacro %}

{#- the rows grouped by run: runs worst first (then by run_id), each run's rows by harm_rank
    (severity never rises down the ranking, so a run's first row carries its worst severity) -#}
{% macro problem_list_runs(rows) %}
  {% set severities = ['critical', 'high', 'medium', 'low', 'info'] %}
  {% set by_run = {} %}
  {% for row in rows %}
    {% set run = row.get('run_id') or '' %}
    {% if run not in by_run %}{% do by_run.update({run: []}) %}{% endif %}
    {% do by_run[run].append(row) %}
  {% endfor %}
  {% set runs = [] %}
  {% for run, run_rows in by_run.items() %}
    {% set ranked = run_rows | sort(attribute='harm_rank') %}
    {% set worst = (ranked[0].get('severity') or 'info') | lower %}
    {% set order = severities.index(worst) if worst in severities else severities | length %}
    {% do runs.append({'run_id': run, 'rows': ranked, 'worst': worst, 'order': order ~ '|' ~ run}) %}
  {% endfor %}
  {{ return(runs | sort(attribute='order')) }}
{% endmacro %}

{#- one finding in two lines: rank, severity, id, steps and cost; then its title -#}
{% macro problem_list_entry(row) %}
  {% set first, last = row.get('first_step'), row.get('last_step') %}
  {% set steps = '' if first is none and last is none
      else ', step ' ~ (first if first is not none else last) if first == last or first is none or last is none
      else ', steps ' ~ first ~ '-' ~ last %}
  {% set cost = problem_list_cost(row) %}
  {% set title = (row.get('title') or '') | string %}
  {% set title = title if title | length <= 200 else title[:199] ~ '...' %}
  {{ return('  %-4s %-8s ' | format('#' ~ row.get('harm_rank'), row.get('severity') | string | upper) ~ row.get('finding_id')
      ~ steps ~ (': ' ~ cost if cost else '') ~ '\n                ' ~ title) }}
{% endmacro %}

{#- the finding's cost as the report words it: nats of final validation loss (range, share of the
    final loss) for the model ledger, seconds (share, of how many seconds) for compute -#}
{% macro problem_list_cost(row) %}
  {% set loss, low, high = row.get('val_loss_cost'), row.get('val_loss_cost_low'), row.get('val_loss_cost_high') %}
  {% set share = row.get('val_loss_cost_share') %}
  {% set seconds, compute_share = row.get('compute_seconds_lost'), row.get('compute_share_lost') %}
  {% if loss is not none %}
    {% set text = 'costs ' ~ '%.3f' | format(loss | float) %}
    {% if low is not none and high is not none %}{% set text = text ~ ' (' ~ '%.3f' | format(low | float) ~ ' to ' ~ '%.3f' | format(high | float) ~ ')' %}{% endif %}
    {% set text = text ~ ' of final validation loss' %}
    {% if share is not none %}{% set text = text ~ ' (' ~ '%.1f' | format(100 * share | float) ~ '% of it)' %}{% endif %}
    {{ return(text) }}
  {% elif seconds is not none %}
    {% set text = 'costs ' ~ '%.1f' | format(seconds | float) ~ ' s' %}
    {% if compute_share is not none and compute_share | float > 0 %}
      {% set text = text ~ ' (' ~ '%.1f' | format(100 * compute_share | float) ~ '% of the '
          ~ '%.1f' | format(seconds | float / compute_share | float) ~ ' s of step time logged over all attempts)' %}
    {% endif %}
    {{ return(text) }}
  {% elif row.get('caused_by') %}
    {{ return('a symptom of ' ~ row.get('caused_by')) }}
  {% endif %}
  {{ return('') }}
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
