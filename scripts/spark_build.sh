#!/usr/bin/env bash
# Build the project on Spark (dbt-spark, session mode: pyspark in this process; Java 17).
#
#   scripts/spark_build.sh [dbt build arguments...]     e.g. -s staging
#
# Creates .venv-spark (bootstrap.sh: requirements.txt; then requirements-spark.txt) the first time
# (RUN_DIAGNOSIS_SPARK_VENV to move it), then runs `dbt build --target spark --full-refresh`
# in the project folder with its own target and log paths (target/spark, logs/spark).
# The run folder is RUN_DIAGNOSIS_RUN_DIR as for DuckDB (unset: the sample seeds).
# Tables land as parquet in RUN_DIAGNOSIS_SPARK_WAREHOUSE (default .dbt_state/spark-warehouse),
# <warehouse>/run_diagnosis.db/<model>/, readable by DuckDB's read_parquet.
# --full-refresh: the incremental run batches are DuckDB-only, a Spark build rebuilds every run.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v java >/dev/null 2>&1; then
  echo "spark_build: java not found: Spark needs Java 17 (e.g. apt-get install openjdk-17-jre-headless)" >&2
  exit 2
fi
# requirements.txt as for DuckDB (bootstrap.sh), in a venv of its own, then the Spark packages
export RUN_DIAGNOSIS_VENV="${RUN_DIAGNOSIS_SPARK_VENV:-$REPO/.venv-spark}"
PYTHON="${PYTHON:-python3.11}" source "$REPO/scripts/bootstrap.sh"
VENV="$RUN_DIAGNOSIS_VENV"
spark_stamp="$VENV/.requirements-spark.sha1"
spark_want="$(sha1sum "$REPO/requirements-spark.txt" | cut -c1-40)"
if [ "$(cat "$spark_stamp" 2>/dev/null)" != "$spark_want" ]; then
  echo "spark_build: installing requirements-spark.txt" >&2
  "$VENV/bin/python" -m pip install --quiet -r "$REPO/requirements-spark.txt"
  echo "$spark_want" > "$spark_stamp"
fi
cd "$REPO"
export RUN_DIAGNOSIS_SPARK_WAREHOUSE="${RUN_DIAGNOSIS_SPARK_WAREHOUSE:-$REPO/.dbt_state/spark-warehouse}"
mkdir -p "$RUN_DIAGNOSIS_SPARK_WAREHOUSE"
# Spark is chatty on stderr (log4j); keep it out of dbt's output
export PYSPARK_SUBMIT_ARGS="${PYSPARK_SUBMIT_ARGS:---conf spark.ui.showConsoleProgress=false pyspark-shell}"
exec "$VENV/bin/dbt" build --profiles-dir "$REPO" --target spark --full-refresh \
  --target-path "${RUN_DIAGNOSIS_SPARK_TARGET_PATH:-target/spark}" \
  --log-path "${RUN_DIAGNOSIS_SPARK_LOG_PATH:-logs/spark}" "$@"
