{#- What a check needs from a run's data, by name: each name maps to the (condition, reason)
    pairs check_coverage tests for it (the condition holds when the need is not met). A check
    lists the names it needs in its anomaly test's config.meta.requires (in the order its
    reasons are written: check_catalog.requires); check_coverage joins the reasons of the unmet
    ones, in that order. The conditions
    read check_coverage's columns: available.with_<column> (counted step rows with the column),
    available.is_zero_gradient,
    available.counted_steps, other_files.evals / shards / events (rows), config.<field>. -#}
{% macro check_requirements() %}
  {%- set listed_impossible = "',' || config.impossible_fields || ','" -%}
  {{ return({
    'loss': [('available.with_loss = 0', 'no loss in the log')],
    'loss_10': [('available.with_loss < 10', 'fewer than 10 loss values')],
    'loss_signal': [
        ('available.with_loss > 0 and available.with_signal_loss = 0 and not available.is_zero_gradient', 'every logged loss is 0 (to ' ~ threshold('loss_signal_min_abs') ~ '): a loss that carries no learning signal, as an RL objective (GRPO, PPO) reports at its sampling policy; its reward, which this tool does not read, is the signal')],
    'loss_baseline': [
        ('available.with_loss < ' ~ threshold('spike_min_periods') ~ ' + 1', 'too few loss values to build a baseline')],
    'loss_initial': [
        ('available.with_loss < ' ~ threshold('initial_loss_min_points'), 'fewer than ' ~ threshold('initial_loss_min_points') ~ ' loss values')],
    'loss_contamination': [
        ('available.with_loss < ' ~ threshold('contamination_min_train_losses'), 'fewer than ' ~ threshold('contamination_min_train_losses') ~ ' training losses: validation below training cannot be judged (a held-out source name is still checked)')],
    'learning_rate': [('available.with_learning_rate = 0', 'no learning_rate in the log')],
    'grad_norm': [('available.with_grad_norm = 0', 'no grad_norm in the log')],
    'grad_norm_3': [('available.with_grad_norm < 3', 'fewer than 3 grad_norm values in the log')],
    'grad_norm_after_clipping': [
        ('config.grad_norm_measured = \'before_clipping\'', 'grad_norm is logged before clipping by this tool: a violation cannot be seen (steps above the limit were clipped)')],
    'step_time': [('available.with_step_time = 0', 'no step_time_sec in the log')],
    'step_rows': [
        ("coalesce(config.rows_are, 'step') = 'epoch'", 'rows are epochs, not steps (a per-epoch log): the check needs one row a step')],
    'shard_id': [('available.with_shard_id = 0', 'no shard_id in the log')],
    'shard_table': [('other_files.shards = 0', 'no shard table')],
    'shard_id_or_steps_per_epoch': [
        ('available.with_shard_id = 0 and coalesce(config.steps_per_epoch, 0) = 0', 'no shard_id in the log and no steps_per_epoch in the config')],
    'evals_3': [('other_files.evals < 3', 'fewer than 3 evaluations')],
    'evals_3_or_shard_table': [
        ('other_files.evals < 3 and other_files.shards = 0', 'fewer than 3 evaluations and no shard table')],
    'config.peak_lr': config_field_reasons('peak_lr'),
    'config.grad_clip_norm': config_field_reasons('grad_clip_norm'),
    'config.schedule': [
        ('config.schedule_type is null', 'schedule type unknown in the config'),
        ('config.schedule_type is not null and not ' ~ is_supported_schedule('config.schedule_type'), 'schedule type not rebuilt (supported: cosine, linear, constant, with warmup)'),
        ('config.decay_steps is null and config.schedule_type not like \'%constant%\' and ' ~ listed_impossible ~ ' not like \'%,decay_steps,%\'', 'decay_steps unknown in the config'),
        (listed_impossible ~ ' like \'%,decay_steps,%\'', 'decay_steps impossible in the config (see config_mismatch:impossible_values)')],
    'baseline_run': [
        ('config.baseline_run_id is null', 'no baseline run named in the config (baseline_run_id)'),
        ('config.baseline_run_id = config.run_id', 'the config names the run itself as its baseline')],
  }) }}
{% endmacro %}
