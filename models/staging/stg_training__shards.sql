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
        -- the defect rules beyond the column recipes: macros/raw_row_defects.sql
        {{- raw_row_defect_flags('shards') }},
        (row_number() over (partition by run_id, shard_id order by file_row_number) > 1) as is_duplicate_shard_row
    from parsed
),

final as (
    select
        *,
        -- a defect of the catalogue, or what sets the row aside
        {{ has_defect('shards', ['is_shard_id_missing', 'is_duplicate_shard_row']) }} as has_defect
    from flagged
)

select * from final
