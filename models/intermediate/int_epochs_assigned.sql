-- Which pass over the data each counted step belongs to. With shard ids, a
-- shard's k-th visit (a run of consecutive steps on it) belongs to epoch k: one
-- pass over all shards is one epoch, whatever order they were shuffled in. A
-- run of steps longer than one pass over the shard (ceil(n_examples /
-- batch_size) steps) is two visits back to back (the shuffle put the shard last
-- in one epoch and first in the next).
-- Without shard ids, the config's steps_per_epoch (written by importers from the
-- framework's own epoch counter) numbers the epochs.
-- Computed in int_train_steps_measured (the wide per-step model); this view is its columns
-- of the epoch.
-- A view: a projection of a table, read by each reader as that table's columns. It reads the
-- whole model (ref, not run_ref): its readers keep only their batch's runs.
{{ config(materialized='view') }}
with

measured as (
    select
        run_id,
        step,
        shard_id,
        visit_number,
        shard_visit_occurrence,
        epoch_number,
        epoch_basis,
        is_epoch_start,
        epoch_first_step,
        epoch_last_step
    from {{ ref('int_train_steps_measured') }}
)

select * from measured
