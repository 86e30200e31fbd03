-- the smallest model: one row, so the build time is dbt's own start-up, parse and run
select 1 as one
