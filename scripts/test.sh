#!/usr/bin/env bash
# Command 2: build the environment and run every test: lint, type check, dbt build on the
# sample run (data tests, unit tests, structural tests), then pytest.
set -euo pipefail
# the HTML report is checked in headless Chromium (Debian's package); install it when we can. The
# install (about a minute on a fresh machine: apt's index and Chromium's packages) runs in the
# background beside the venv's creation and the tests; the browser test waits for its status file
# (RUN_DIAGNOSIS_BROWSER_INSTALL: "ok" or "failed") before it looks for the browser
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
browser_install=""
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
   && [ -z "${RUN_DIAGNOSIS_SKIP_BROWSER:-}" ]; then
  mkdir -p "$here/.dbt_state"
  export RUN_DIAGNOSIS_BROWSER_INSTALL="$here/.dbt_state/browser_install.status"
  rm -f "$RUN_DIAGNOSIS_BROWSER_INSTALL"
  echo "test: installing chromium in the background for the browser check" >&2
  (
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
         > "$here/.dbt_state/browser_install.log" 2>&1; then
      echo ok > "$RUN_DIAGNOSIS_BROWSER_INSTALL.tmp"
    else
      echo failed > "$RUN_DIAGNOSIS_BROWSER_INSTALL.tmp"
      echo "test: chromium could not be installed (.dbt_state/browser_install.log); the browser test will be skipped" >&2
    fi
    mv "$RUN_DIAGNOSIS_BROWSER_INSTALL.tmp" "$RUN_DIAGNOSIS_BROWSER_INSTALL"
  ) &
  browser_install=$!
fi
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$REPO"
ruff check src tools scripts tests/python benchmarks corpus
ruff format --check src tools scripts tests/python benchmarks corpus
# the type check of the package (pyproject.toml [tool.mypy]: every function annotated, every body
# checked). On a fresh clone (no cache in .dbt_state/mypy) it takes about 18 s of CPU, 47 s wall on
# a loaded machine; with the cache under a second. It runs in the background beside the sample
# build and pytest, and its result is printed and counted at the end.
types="$REPO/.dbt_state/mypy_output.txt"
mypy > "$types" 2>&1 &
typecheck=$!
# the README's first recipe, `bash scripts/diagnose_sample.sh` (the `ci` selector, selectors.yml:
# every node, the hygiene and unit tests included; a plain `dbt build` runs the default `diagnosis`
# selector only), run once in a fresh copy of the tree (tests/python/support/fresh_copy.py: the files
# a clone would hold, uncommitted changes included, nothing ignored) as the README test runs it.
# Its build serves three test files: test_readme_commands runs the README's other recipes in the same
# copy afterwards (RUN_DIAGNOSIS_TEST_CLONE), test_sample_run and test_diagnose read the sample's
# database and target, copied into RUN_DIAGNOSIS_TEST_SAMPLE with the console output and the exit
# code (tests/python/support/sample_build.py). It runs in the background while pytest starts on the
# other files (dbt keeps about one core busy) and its output, the sample's problem list, is printed
# after pytest's.
sample="$REPO/.dbt_state/test_sample"
clone="$REPO/.dbt_state/test_clone"
rm -rf "$sample" "$clone"
mkdir -p "$sample"
python tests/python/support/fresh_copy.py "$clone"
(
  code=0
  cd "$clone"
  env -u RUN_DIAGNOSIS_DB -u RUN_DIAGNOSIS_RUN_DIR RUN_DIAGNOSIS_VENV="$REPO/.venv" \
    PYTHONPATH="$clone/src" RUN_DIAGNOSIS_SKIP_BROWSER=1 \
    bash -e -c "bash scripts/diagnose_sample.sh" > "$sample/output.txt" 2>&1 || code=$?
  # the build as the sample's tests read it, before the README's later recipes rewrite target/
  cp -R "$clone/target" "$sample/target" 2>/dev/null || true
  cp "$clone/.dbt_state/run_diagnosis.duckdb" "$sample/run_diagnosis.duckdb" 2>/dev/null || true
  echo "$code" > "$sample/exit_code.tmp" && mv "$sample/exit_code.tmp" "$sample/exit_code"
) &
build=$!
# two workers, each test file on one worker (a file's fixtures build once per file), the
# slowest files first (tests/python/support/slowest_first.py); each worker parses the dbt project
# once and reuses the manifest for its builds
status=0
RUN_DIAGNOSIS_TEST_SAMPLE="$sample" RUN_DIAGNOSIS_TEST_CLONE="$clone" python -m pytest tests/python -q \
  -n "${RUN_DIAGNOSIS_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@" || status=$?
wait "$build"
echo "--- bash scripts/diagnose_sample.sh (dbt build --selector ci on the sample; exit code $(cat "$sample/exit_code")) ---"
cat "$sample/output.txt"
[ "$(cat "$sample/exit_code")" = 0 ] || status=1
types_status=0
wait "$typecheck" || types_status=$?
echo "--- mypy (exit code $types_status) ---"
cat "$types"
[ "$types_status" = 0 ] || status=1
[ -z "$browser_install" ] || wait "$browser_install" || true
exit "$status"
