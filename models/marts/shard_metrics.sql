-- Loss by shard and by source against the spike-free baseline, for the report.
with

scored as (
    select * from {{ run_ref('int_shards_scored') }}
),

final as (
    select
        run_id,
        shard_group_id,
        grouping_level,
        group_key,
        source,
        n_steps,
        first_step,
        last_step,
        mean_log_residual as mean_loss_residual,
        mean_relative_excess,
        n_spikes,
        share_of_steps,
        share_of_all_spikes,
        is_bad
    from scored
)

select * from final
