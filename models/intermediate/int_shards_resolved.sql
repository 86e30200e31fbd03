-- One row per shard id: the first row's values, the normalised source label, and
-- whether the shard table repeated or contradicted itself about it.
with

shard_rows as (
    select * from {{ run_ref('stg_training__shards') }}
    where shard_id is not null
),

ranked as (
    select
        *,
        row_number() over (partition by run_id, shard_id order by file_row_number) as copy_rank,
        count(*) over (partition by run_id, shard_id) as rows_for_shard
    from shard_rows
),

final as (
    select
        run_id,
        shard_id,
        n_examples,
        source,
        rows_for_shard,
        is_conflicting_duplicate as has_conflicting_rows,
        file_row_number
    from ranked
    where copy_rank = 1
)

select * from final
