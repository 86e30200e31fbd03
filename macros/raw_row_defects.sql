{#- The one catalogue of the defects a raw row can carry and still be used (read as missing,
    normalised, placed by its step, kept as logged). Adding a defect is one line here.
    Per file kind, in the order the audit lists them: (defect, layer, rule, action).
    - layer 'parse': the flag is_<defect> is set by staging's column recipes
      (macros/staging_helpers.sql: missing, not a number, not finite); rule is none.
    - layer 'staging': staging sets the flag is_<defect> to (rule), a condition over the
      parsed row (windows over the run's rows allowed).
    - layer 'resolved': the rule needs more than the raw file (the shard table, the
      attempts): int_raw_row_defects sets is_<defect> to (rule) over its resolved train
      rows (`train_rows`, int_train_rows_resolved, beside `known_shards`).
    Staging sets its flags and `has_defect` from here (raw_row_defect_flags, has_defect);
    int_raw_row_defects sets the resolved layer's flags and turns the catalogue into one row
    per raw row per defect; the audit and log_quality read that model. Rows set aside (no usable step, duplicates, superseded
    attempts) are not defects of a used row: the audit gives the reason that decided it. -#}
{% macro raw_row_defects(file_kind) %}
  {%- set catalogue = {
    'train': [
      ('loss_missing', 'parse', none, 'loss empty: read as missing'),
      ('loss_non_numeric', 'parse', none, 'loss not a number: read as missing'),
      ('loss_non_finite', 'parse', none, 'loss non-finite (nan/inf): read as missing, counted as a NaN step'),
      ('grad_norm_missing', 'parse', none, 'grad_norm empty: read as missing'),
      ('grad_norm_non_numeric', 'parse', none, 'grad_norm not a number: read as missing'),
      ('grad_norm_non_finite', 'parse', none, 'grad_norm non-finite: read as missing'),
      ('grad_norm_negative', 'staging', 'grad_norm < 0', 'grad_norm negative: impossible for a norm, kept as logged'),
      ('learning_rate_negative', 'staging', 'learning_rate < 0', 'learning_rate negative: kept as logged'),
      ('learning_rate_missing', 'parse', none, 'learning_rate empty: read as missing'),
      ('learning_rate_non_numeric', 'parse', none, 'learning_rate unreadable: read as missing'),
      ('learning_rate_non_finite', 'parse', none, 'learning_rate unreadable: read as missing'),
      ('step_time_sec_missing', 'parse', none, 'step_time_sec empty: left out of timing checks'),
      ('step_time_sec_non_numeric', 'parse', none, 'step_time_sec unreadable: left out of timing checks'),
      ('step_time_sec_non_finite', 'parse', none, 'step_time_sec unreadable: left out of timing checks'),
      ('step_time_non_positive', 'staging', 'step_time_sec <= 0', 'step_time_sec zero or negative: left out of timing checks'),
      ('shard_id_missing', 'parse', none, 'shard_id empty: step not attributed to a shard'),
      ('shard_id_unknown', 'resolved', 'known_shards.shard_id is null and train_rows.shard_id is not null',
         'shard_id not in shard_info: source unknown'),
      ('out_of_step_order', 'resolved', 'train_rows.is_out_of_order_in_attempt',
         'logged out of step order: placed by its step number'),
    ],
    'eval': share_defects('val_accuracy', 'accuracy') + share_defects('val_map50', 'map') + share_defects('val_auc', 'auc') + [
      ('step_repeated', 'staging', 'count(*) over (partition by run_id, step) > 1',
        'step evaluated more than once: this later row is used'),
      ('out_of_file_order', 'staging', out_of_file_order() | trim, 'logged out of step order: placed by its step number'),
    ],
    'shards': [
      ('source_label_variant', 'staging', 'source_raw <> lower(trim(source_raw))',
        'source label differs only in case/spaces: normalised'),
      ('conflicting_duplicate', 'staging',
        'min(n_examples) over (partition by run_id, shard_id) <> max(n_examples) over (partition by run_id, shard_id)'
        ~ ' or min(source) over (partition by run_id, shard_id) <> max(source) over (partition by run_id, shard_id)',
        'a later row contradicts this one: this first row is used'),
      ('n_examples_missing', 'parse', none, 'n_examples unreadable: read as missing'),
      ('n_examples_invalid', 'parse', none, 'n_examples unreadable: read as missing'),
      ('n_examples_non_positive', 'staging', 'n_examples <= 0', 'n_examples zero or negative: kept as logged'),
      ('source_missing', 'parse', none, 'source empty'),
    ],
  } -%}
  {{ return(catalogue[file_kind]) }}
{% endmacro %}

{#- the flag columns whose rule lives in the catalogue, for one layer ('staging': the staging
    model; 'resolved': int_raw_row_defects): `(rule) as is_<defect>`, comma-separated (NULL
    where the rule's inputs are NULL, as any comparison) -#}
{% macro raw_row_defect_flags(file_kind, layer='staging') %}
  {%- for defect, defect_layer, rule, action in raw_row_defects(file_kind) if defect_layer == layer %}
        ({{ rule }}) as is_{{ defect }}{{ ',' if not loop.last }}
  {%- endfor %}
{% endmacro %}

{#- staging: true when the row carries any defect of the catalogue that the raw file shows, or
    any of `other_flags` (conditions the catalogue does not list: what sets the row aside, such
    as no step or an exact duplicate; for train rows also out of file order, which the
    catalogue judges per attempt) -#}
{% macro has_defect(file_kind, other_flags) %}
  {%- set flags = other_flags | list -%}
  {%- for defect, layer, rule, action in raw_row_defects(file_kind) if layer != 'resolved' %}
    {%- do flags.append('is_' ~ defect) -%}
  {%- endfor -%}
  ({% for flag in flags %}coalesce({{ flag }}, false){% if not loop.last %} or {% endif %}{% endfor %})
{% endmacro %}

{#- the defects of a share a logger may write in percent (val_accuracy, val_map50, val_auc; staging reads it
    with logged_share_column and share_value): in percent, out of range, unreadable -#}
{% macro share_defects(column, prefix) %}
  {{ return([
    (prefix ~ '_percent', 'staging', column ~ '_logged > 1 and ' ~ column ~ '_logged <= 100',
      column ~ ' logged in percent: divided by 100'),
    (prefix ~ '_out_of_range', 'staging', column ~ '_logged < 0 or ' ~ column ~ '_logged > 100',
      column ~ ' outside 0..100: read as missing'),
    (column ~ '_non_numeric', 'parse', none, column ~ ' unreadable: read as missing'),
    (column ~ '_non_finite', 'parse', none, column ~ ' unreadable: read as missing'),
  ]) }}
{% endmacro %}

{#- one defect's rule, by name (for staging's repairs that follow the rule, e.g. percent accuracy) -#}
{% macro raw_row_defect_rule(file_kind, name) %}
  {%- for defect, layer, rule, action in raw_row_defects(file_kind) if defect == name %}{{ return(rule) }}{% endfor -%}
  {{ exceptions.raise_compiler_error("raw_row_defect_rule: no defect " ~ name ~ " for " ~ file_kind) }}
{% endmacro %}

