#!/usr/bin/env bash
# Command 1: build the environment, diagnose the team's sample run (the seeds)
# and write the ranked report to reports/ (report.md, report.html, findings.json).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$REPO"
dbt build --selector ci --profiles-dir . "$@"  # every test, as the committed diagnosis counts them
python scripts/report.py --out reports
cp reports/report.md analyses/sample_run_diagnosis.md
echo "diagnosis: reports/report.md, reports/report.html, reports/findings.json" >&2
