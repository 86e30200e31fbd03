{#- The one catalogue of the defects a raw row can carry and still be used (read as missing,
    normalised, placed by its step, kept as logged): per file kind, in the order the audit
    lists them, the defect's name, its condition over the staged row (staging's is_* flags;
    for train rows also `known_shards`, the shard table) and what was done. The rules that
    set the flags live in staging; `int_raw_row_defects` turns them into one row per raw row
    per defect with this catalogue, and `int_raw_rows_audited` reads its reasons from there.
    Rows set aside (no usable step, duplicates, superseded attempts) are audited there with
    the reason that decided it. -#}
{% macro raw_row_defects(file_kind) %}
  {%- set catalogue = {
    'train': [
      ('loss_missing', 'is_loss_missing', 'loss empty: read as missing'),
      ('loss_non_numeric', 'is_loss_non_numeric', 'loss not a number: read as missing'),
      ('loss_non_finite', 'is_loss_non_finite', 'loss non-finite (nan/inf): read as missing, counted as a NaN step'),
      ('grad_norm_missing', 'is_grad_norm_missing', 'grad_norm empty: read as missing'),
      ('grad_norm_non_numeric', 'is_grad_norm_non_numeric', 'grad_norm not a number: read as missing'),
      ('grad_norm_non_finite', 'is_grad_norm_non_finite', 'grad_norm non-finite: read as missing'),
      ('grad_norm_negative', 'is_grad_norm_negative', 'grad_norm negative: impossible for a norm, kept as logged'),
      ('learning_rate_negative', 'is_learning_rate_negative', 'learning_rate negative: kept as logged'),
      ('learning_rate_missing', 'is_learning_rate_missing', 'learning_rate empty: read as missing'),
      ('learning_rate_unreadable', 'is_learning_rate_non_numeric or is_learning_rate_non_finite', 'learning_rate unreadable: read as missing'),
      ('step_time_sec_missing', 'is_step_time_sec_missing', 'step_time_sec empty: left out of timing checks'),
      ('step_time_sec_unreadable', 'is_step_time_sec_non_numeric or is_step_time_sec_non_finite', 'step_time_sec unreadable: left out of timing checks'),
      ('step_time_non_positive', 'is_step_time_non_positive', 'step_time_sec zero or negative: left out of timing checks'),
      ('shard_id_missing', 'is_shard_id_missing', 'shard_id empty: step not attributed to a shard'),
      ('shard_id_unknown', 'is_shard_id_unknown', 'shard_id not in shard_info: source unknown'),
      ('out_of_step_order', 'is_out_of_order_in_attempt', 'logged out of step order: placed by its step number'),
    ],
    'eval': [
      ('accuracy_percent', 'is_accuracy_percent', 'val_accuracy logged in percent: divided by 100'),
      ('accuracy_out_of_range', 'is_accuracy_out_of_range', 'val_accuracy outside 0..100: read as missing'),
      ('val_accuracy_unreadable', 'is_val_accuracy_non_numeric or is_val_accuracy_non_finite', 'val_accuracy unreadable: read as missing'),
      ('step_repeated', 'is_step_repeated', 'step evaluated more than once: this later row is used'),
      ('out_of_file_order', 'is_out_of_file_order', 'logged out of step order: placed by its step number'),
    ],
    'shards': [
      ('source_label_variant', 'is_source_label_variant', 'source label differs only in case/spaces: normalised'),
      ('conflicting_duplicate', 'is_conflicting_duplicate', 'a later row contradicts this one: this first row is used'),
      ('n_examples_unreadable', 'is_n_examples_missing or is_n_examples_invalid', 'n_examples unreadable: read as missing'),
      ('n_examples_non_positive', 'is_n_examples_non_positive', 'n_examples zero or negative: kept as logged'),
      ('source_missing', 'is_source_missing', 'source empty'),
    ],
  } -%}
  {{ return(catalogue[file_kind]) }}
{% endmacro %}
