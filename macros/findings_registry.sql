{#- The one list of detector models: the findings mart unions them. The categories each
    emits, and their metadata, are declared on its anomaly tests in its check folder
    (config.meta, read by check_catalog_entries()). A new check adds its folder and one line
    here. tests/findings_registry_agrees_with_checks.sql fails when this list, the
    int_findings__ models and the anomaly tests disagree. -#}
{% macro finding_detectors() %}
  {{ return([
    'int_findings__step_sequence',
    'int_findings__run_restart',
    'int_findings__lr_above_peak',
    'int_findings__lr_schedule_mismatch',
    'int_findings__schedule_sanity',
    'int_findings__grad_clip_violation',
    'int_findings__loss_spikes',
    'int_findings__grad_norm_spikes',
    'int_findings__nan_loss',
    'int_findings__bad_data_shard',
    'int_findings__data_repetition',
    'int_findings__overfitting',
    'int_findings__eval_contamination',
    'int_findings__slow_steps',
    'int_findings__config_mismatch',
    'int_findings__log_quality',
    'int_findings__learning_progress',
    'int_findings__initial_loss_too_high',
    'int_findings__baseline_divergence',
    'int_findings__run_ended_early',
  ]) }}
{% endmacro %}

{#- the columns every detector emits, in the order the mart unions them (run_id first:
    finding_id is unique within a run, the key is run_id, finding_id) -#}
{% macro finding_columns() %}
  {{ return([
    'run_id', 'finding_id', 'category', 'severity', 'title', 'evidence', 'first_step', 'last_step', 'steps_affected',
    'observed_value', 'expected_value', 'threshold_value', 'threshold_name', 'estimated_cost', 'cost_unit', 'cost_method', 'impact_score',
    'caused_by', 'recommendation',
  ]) }}
{% endmacro %}

{#- severity as a number for ordering: critical 5 ... info 1 -#}
{% macro severity_rank(column) %}
    case {{ column }} when 'critical' then 5 when 'high' then 4 when 'medium' then 3 when 'low' then 2 else 1 end
{% endmacro %}

{#- a severity rank (5..1) back to its name -#}
{% macro severity_name(rank_expression) %}
    case {{ rank_expression }} when 5 then 'critical' when 4 then 'high' when 3 then 'medium' when 2 then 'low' else 'info' end
{% endmacro %}

{#- the lower of two severities (names in, name out) -#}
{% macro severity_min(first, second) %}
    {{ severity_name('least(' ~ severity_rank('(' ~ first ~ ')') ~ ', ' ~ severity_rank('(' ~ second ~ ')') ~ ')') }}
{% endmacro %}

{#- the severity band of a cost given as a share of the final validation loss (vars cost_band_*) -#}
{% macro cost_band(share_expression) %}
    case
        when {{ share_expression }} >= {{ threshold('cost_band_critical') }} then 'critical'
        when {{ share_expression }} >= {{ threshold('cost_band_high') }} then 'high'
        when {{ share_expression }} >= {{ threshold('cost_band_medium') }} then 'medium'
        when {{ share_expression }} >= {{ threshold('cost_band_low') }} then 'low'
        else 'info'
    end
{% endmacro %}

{#- the cost columns of a finding about log rows (log_quality, step_sequence): the rows affected,
    and as impact their share of the run's raw rows -#}
{% macro log_rows_cost(affected, raw_rows, method) %}
        cast({{ affected }} as {{ type_double() }}) as estimated_cost,
        'rows' as cost_unit,
        {{ sql_literal(method) }} as cost_method,
        least(1.0, {{ safe_divide(affected, raw_rows) }}) as impact_score
{%- endmacro %}

{#- literal rows as a select (a union of one-row selects), typed text; an empty list gives
    an empty select with the same columns. Used by tests/findings_registry_agrees_with_checks.sql
    to compare the registry with the graph. -#}
{% macro text_rows(columns, rows) %}
  {%- if rows | length == 0 -%}
    {{ no_rows(columns) }}
  {%- else -%}
    {%- for row in rows %}
    select {% for column in columns %}cast('{{ row[loop.index0] }}' as {{ dbt.type_string() }}) as {{ column }}{% if not loop.last %}, {% endif %}{% endfor %}
    {% if not loop.last %}union all{% endif %}
    {%- endfor -%}
  {%- endif -%}
{% endmacro %}
