"""Write the closing report of a run diagnosis from the marts of the last dbt build.

Reads the marts (findings, run_summary, step_metrics, eval_metrics, shard_metrics,
audit_summary, check_coverage) from the build's DuckDB file, opened read-only, and the
failing dbt tests from the target folder, then writes to the output folder:

  report.md      the report for people, in Markdown (no images)
  report.html    the same, self-contained: inline CSS and plots, no JS, no network
  findings.json  the ranked findings: every `findings` column plus `rank` (1 = fix first)
  margins.json   how close each main threshold check came to firing: every `check_margins` row
                 (written when the build has that mart; docs/margins.md)

Usage:
  run-diagnosis report [--db PATH] [--target-path DIR] [--out DIR] [--run-id RUN]

Other scripts call `write_report(db_path, target_path, out_dir)`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from run_diagnosis.cli import prog
from run_diagnosis.report_content import build_double_check, build_findings_view
from run_diagnosis.report_data import (
    ReportData,
    ReportNotWritten,
    load_report_data,
    read_dbt_results,
    run_command,
)
from run_diagnosis.report_html import render_html
from run_diagnosis.report_markdown import render_markdown
from run_diagnosis.report_plots import make_plots
from run_diagnosis.report_story import build_page_one
from run_diagnosis.safe_io import folder_problem, write_files_atomically

DEFAULT_DB = ".dbt_state/run_diagnosis.duckdb"
DB_ENV_VAR = "RUN_DIAGNOSIS_DB"
DEFAULT_TARGET = "target"
DEFAULT_OUT = "reports"

Progress = Callable[[str], None]


def stderr_progress(message: str) -> None:
    print(f"report: {message}", file=sys.stderr, flush=True)


def stable(value: Any) -> Any:
    """A float to 12 significant digits: parallel float sums differ in the last bits from run
    to run, and the same input must give byte-identical findings.json."""
    return float(f"{value:.12g}") if isinstance(value, float) else value


def findings_json(data: ReportData) -> list[dict[str, Any]]:
    """The ranked findings: `rank` then every column of the findings mart, in mart order; in a run
    quarantined by a failed structural test, each finding also names the tests (`tool_defects`)."""
    defects = {"tool_defects": [d.test_name for d in data.tool_defects]} if data.tool_defects else {}
    return [
        {"rank": f["rank"], **{c: stable(f.get(c)) for c in data.findings_columns}, **defects}
        for f in data.findings
    ]


def margins_json(data: ReportData) -> list[dict[str, Any]]:
    """Every check_margins row of the run (how close each main threshold check came), in mart order."""
    return [{column: stable(value) for column, value in row.items()} for row in data.margins]


def write_report(
    db_path: Path,
    target_path: Path,
    out_dir: Path,
    progress: Progress | None = stderr_progress,
    run_id: str | None = None,
    with_history: bool = True,
) -> dict[str, Path]:
    """Write report.md, report.html, findings.json (and margins.json) into out_dir.

    Returns {"markdown": ..., "html": ..., "findings": ...} paths, and "margins" when written.
    Raises ReportError when there is no build at db_path, a mart is missing (the message names
    it), or the build holds several runs and `run_id` names none of them.
    """
    say = progress or (lambda _message: None)
    db_path, target_path, out_dir = Path(db_path), Path(target_path), Path(out_dir)
    say(f"reading marts from {db_path} and dbt results from {target_path}")
    data = load_report_data(db_path, target_path, run_id, with_history)
    say(
        f"read {len(data.findings)} findings, {len(data.step_points)} step rows to plot, "
        f"{len(data.eval_metrics)} evals, {len(data.dbt.failed_tests)} failing dbt tests"
    )
    for note in data.dbt.notes:
        say(f"note: {note}")
    check = build_double_check(data)
    page = build_page_one(data, check.consistency)
    view = build_findings_view(data)  # every finding and failing test, for both renderers
    say("drawing plots")
    plots = make_plots(data, page)
    missing = [p.plot_id for p in plots if p.image_base64 is None]
    say(
        f"drew {len(plots) - len(missing)} plots"
        + (f" ({', '.join(missing)}: not logged)" if missing else "")
    )
    names = {"markdown": "report.md", "html": "report.html", "findings": "findings.json"}
    paths = {kind: out_dir / name for kind, name in names.items()}
    texts = {
        paths["markdown"]: render_markdown(data, page, view, check, plots),
        paths["html"]: render_html(data, page, view, check, plots),
        paths["findings"]: json.dumps(findings_json(data), indent=2, allow_nan=False) + "\n",
    }
    if data.margins:  # a build without check_margins (older, or an import's) writes no margins.json
        paths["margins"] = out_dir / "margins.json"
        texts[paths["margins"]] = json.dumps(margins_json(data), indent=2, allow_nan=False) + "\n"
    try:  # all or none: a reader never sees half a report, or parts of two
        out_dir.mkdir(parents=True, exist_ok=True)
        write_files_atomically(texts)
    except OSError as error:
        raise ReportNotWritten(f"the report was not written: {folder_problem(error, out_dir)}") from error
    for path in paths.values():
        say(f"wrote {path}")
    return paths


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog("report"),
        description=(
            "Write the run-diagnosis report (report.md, self-contained report.html, findings.json) "
            "from the marts of the last dbt build. Run `dbt build` first."
        ),
        epilog=(
            "findings.json is a JSON list of the findings in fix order: every column of the findings "
            "mart plus `rank` (1 = fix first). Progress goes to stderr; exit status 1 means no usable "
            "build (the message says what is missing), or a report written from a build that failed "
            "(it says INCOMPLETE at the top)."
        ),
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=Path(os.environ.get(DB_ENV_VAR) or DEFAULT_DB),
        help=f"DuckDB file of the dbt build, opened read-only (default: ${DB_ENV_VAR} or {DEFAULT_DB})",
    )
    parser.add_argument(
        "--target-path",
        type=Path,
        default=Path(DEFAULT_TARGET),
        help=(
            "dbt target folder holding run_results.json and manifest.json, for the failing tests "
            f"(default: {DEFAULT_TARGET}; if missing, the report says so)"
        ),
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(DEFAULT_OUT),
        help=f"folder to write the report to (default: {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--run-id",
        metavar="RUN",
        help="the run to report on when the build holds several (its run folder's name)",
    )
    parser.add_argument(
        "--no-history",
        action="store_true",
        help="leave out what changed since the run's previous build (the report of a fresh build)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Exit 0: the report was written from a complete build; 1: no usable build, or the report
    was written but the last build failed (the report says INCOMPLETE at the top)."""
    args = parse_args(argv)
    status = run_command(
        "report",
        lambda: write_report(
            args.db, args.target_path, args.out, run_id=args.run_id, with_history=not args.no_history
        ),
    )
    return status or incomplete_status("report", Path(args.target_path))


def incomplete_status(prog: str, target_path: Path) -> int:
    """1 (after saying why on stderr) when the last build in target_path failed, else 0."""
    lines = read_dbt_results(target_path).incomplete_lines()
    for line in lines:
        print(f"{prog}: {line}", file=sys.stderr)
    return 1 if lines else 0
