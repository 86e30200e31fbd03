-- One row per raw shard-table row. Source labels are normalised (trim, lower
-- case); rows that repeat a shard id are flagged, and so are repeats that disagree.
with

source as (
    {{ raw_run_file('shards') }}
),

parsed as (
    select
        run_id,
        file_row_number as shard_row_id,
        file_row_number,
        {{ raw_columns(['shard_id', 'n_examples', 'source']) }}
        {{ identifier_column('shard_id') }},
        {{ integer_column('n_examples') }},
        lower({{ clean_text('source') }}) as source,
        ({{ clean_text('source') }} is null) as is_source_missing
    from source
),

flagged as (
    select
        *,
        (source_raw <> lower(trim(source_raw))) as is_source_label_variant,
        (n_examples <= 0) as is_n_examples_non_positive,
        (row_number() over (partition by run_id, shard_id order by file_row_number) > 1) as is_duplicate_shard_row,
        (
            min(n_examples) over (partition by run_id, shard_id) <> max(n_examples) over (partition by run_id, shard_id)
            or min(source) over (partition by run_id, shard_id) <> max(source) over (partition by run_id, shard_id)
        ) as is_conflicting_duplicate
    from parsed
),

final as (
    select
        *,
        (
            is_shard_id_missing or is_n_examples_missing or is_n_examples_invalid or is_source_missing
            or coalesce(is_source_label_variant, false) or coalesce(is_n_examples_non_positive, false)
            or is_duplicate_shard_row or coalesce(is_conflicting_duplicate, false)
        ) as has_defect
    from flagged
)

select * from final
