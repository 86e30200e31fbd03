#!/usr/bin/env bash
# Command 2: build the environment and run every test: lint, dbt build on the
# sample run (data tests, unit tests, structural tests), then pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$REPO"
# the HTML report is checked in headless Chromium (Debian's package); install it when we can
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
   && [ -z "${RUN_DIAGNOSIS_SKIP_BROWSER:-}" ]; then
  echo "test: installing chromium for the browser check" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "test: chromium could not be installed; the browser test will be skipped" >&2
fi
ruff check src scripts tests/python benchmarks
ruff format --check src scripts tests/python benchmarks
# the `ci` selector (selectors.yml): every node, the hygiene and unit tests included;
# a plain `dbt build` runs the default `diagnosis` selector only. The tests that read the
# sample (test_sample_run, test_diagnose) reuse this build: RUN_DIAGNOSIS_TEST_SAMPLE names
# its folder (database, target, logs, console output; tests/python/sample_build.py)
sample="$REPO/.dbt_state/test_sample"
mkdir -p "$sample"
RUN_DIAGNOSIS_DB="$sample/run_diagnosis.duckdb" \
  dbt build --selector ci --profiles-dir . --target-path "$sample/target" --log-path "$sample/logs" \
  | tee "$sample/output.txt"
# two workers, each test file on one worker (a file's fixtures build once per file), the
# slowest files first (tests/python/slowest_first.py); each worker parses the dbt project
# once and reuses the manifest for its builds
RUN_DIAGNOSIS_TEST_SAMPLE="$sample" python -m pytest tests/python -q \
  -n "${RUN_DIAGNOSIS_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
