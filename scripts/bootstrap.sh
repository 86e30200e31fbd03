#!/usr/bin/env bash
# Create (or update) the project's virtual environment from requirements.txt, with the
# project's package (src/run_diagnosis) installed editable into it and its command,
# `run-diagnosis`, on PATH. pyproject.toml declares the package's dependencies as ranges;
# requirements.txt is the lock (exact versions, inside those ranges), installed first, and the
# package goes in with --no-deps so nothing but the lock decides a version (docs/packaging.md).
# Sourced by the other scripts; needs only python3.11 on the machine.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${RUN_DIAGNOSIS_VENV:-$REPO/.venv}"
PYTHON="${PYTHON:-python3}"
stamp="$VENV/.requirements.sha1"
UV_VERSION=0.13.9  # the installer (not a dependency of the project)
# what the venv was made from: the pinned requirements and the package's pyproject.toml
want="$(cat "$REPO/requirements.txt" "$REPO/pyproject.toml" | sha1sum | cut -c1-40)"
if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing requirements.txt and the run_diagnosis package (editable)" >&2
  # uv resolves and installs the pinned requirements in parallel (about 4x faster than pip
  # on a fresh venv here: 20 s against 85 s, the same packages); pip is the fallback when uv
  # cannot be installed. --compile-bytecode writes the .pyc files at install time, as pip
  # does: this environment sets PYTHONDONTWRITEBYTECODE, so without them every process
  # compiles what it imports (dbt, pandas and DuckDB: 4.9 s instead of 2.0 s)
  if "$VENV/bin/python" -m pip install --quiet "uv==$UV_VERSION" 2>/dev/null; then
    install=("$VENV/bin/uv" pip install --quiet --compile-bytecode --python "$VENV/bin/python")
  else
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    install=("$VENV/bin/python" -m pip install --quiet)
  fi
  "${install[@]}" -r "$REPO/requirements.txt"
  "${install[@]}" --no-deps -e "$REPO"
  echo "$want" > "$stamp"
fi
export PATH="$VENV/bin:$PATH"
mkdir -p "$REPO/.dbt_state"
