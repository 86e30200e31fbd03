-- One row per run, the baseline it names and alignment axis (step; tokens seen when both
-- configs give batch_size): where the run departs from its baseline beyond the baseline's
-- own noise (first divergence step, the gap there and at the end), the step-time ratio
-- and the step from which the run is sustainedly slower, LR, grad-norm and validation
-- differences. The rules and thresholds are in int_runs_compared; the findings they
-- yield come from int_findings__baseline_divergence (on the primary axis).
-- A table rebuilt whole on every build (not an increment of the batch's runs):
-- each row reads two runs (a run and its baseline).
{{ config(materialized='table') }}
with

compared as (
    select * from {{ ref('int_runs_compared') }}
)

select * from compared
