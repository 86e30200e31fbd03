"""The fleet page of a build holding many runs: every run worst problem first (with how its log
ends: a partial copy or a stopped trial is said beside its worst problem), what keeps going
wrong across runs, and each run against the baseline it names.

Reads the fleet marts (`runs`, `recurring_findings`, `run_comparisons`) of a build's DuckDB
file, opened read-only, and writes DIR/index.md and a self-contained DIR/index.html. A run
whose report was written to DIR/runs/<run_id>/ gets a link to it. Runs that could not be read
(listed by the caller with their reason) come last. Same build, same page (no timestamps).
When structural tests failed (tool_defects), the page opens with them and marks the runs whose
rows broke them as quarantined: their findings may be wrong; the other runs' are not affected.

Usage:
  run-diagnosis fleet --db PATH [--out DIR]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from run_diagnosis.cli import prog
from run_diagnosis.report_data import (
    ReportError,
    ReportNotWritten,
    connect,
    existing_columns,
    query_rows,
    read_dbt_results,
    run_command,
    severity_index,
)
from run_diagnosis.report_templates import environment
from run_diagnosis.safe_io import folder_problem, write_files_atomically
from run_diagnosis.tool_defects import ToolDefect, quarantined_runs

RUNS_SUBDIR = "runs"
FLEET_MARTS = ("runs", "recurring_findings", "run_comparisons")
TITLE_CHARS = 160
HISTORY_STATUSES = ("new", "still_open", "resolved", "regressed")
RUN_COLUMNS = [
    "#",
    "run",
    "worst",
    "log",
    "medium+ of all",
    "fix first",
    "final val loss",
    "since previous build",
    "report",
]


@dataclass(frozen=True)
class Fleet:
    """The fleet marts as plain rows, runs worst first."""

    runs: list[dict[str, Any]]
    recurring: list[dict[str, Any]]
    comparisons: list[dict[str, Any]]
    unreadable: list[tuple[str, str]]  # (run, why) for runs that never reached the build
    defects: list[ToolDefect] = field(default_factory=list)  # failed structural tests of the build
    incomplete: list[str] = field(default_factory=list)  # the build failed: said before the runs

    @property
    def quarantined(self) -> dict[str, list[str]]:
        """run_id -> the failed tests that concern it."""
        return quarantined_runs(self.defects, [str(r["run_id"]) for r in self.runs])


def _rows(con: Any, sql: str) -> list[dict[str, Any]]:
    return query_rows(con, sql)[1]


def read_fleet(
    db_path: Path,
    unreadable: Sequence[tuple[str, str]] = (),
    defects: Sequence[ToolDefect] = (),
    target_path: Path | None = None,
) -> Fleet:
    """The fleet marts of the build at db_path (ReportError when the build lacks them); with the
    build's dbt target folder, whether that build failed (then the page says INCOMPLETE first)."""
    incomplete = read_dbt_results(target_path).incomplete_lines() if target_path is not None else []
    con = connect(db_path)
    try:
        missing = [m for m in FLEET_MARTS if m not in existing_columns(con)]
        if missing:
            why = f" ({' '.join(incomplete[:2])})" if incomplete else ""
            raise ReportError(f"{db_path} lacks the fleet mart(s) {', '.join(missing)}: run dbt build{why}")
        runs = _rows(con, "select * from main.runs order by run_id")
        if "run_story" in existing_columns(con):  # how each log ends: said beside its worst problem
            ends = {
                str(r["run_id"]): r
                for r in _rows(con, "select run_id, end_kind, last_step, total_steps from main.run_story")
            }
            for run in runs:
                run["log_end"] = _log_end(ends.get(str(run["run_id"])))
        recurring = _rows(con, "select * from main.recurring_findings order by runs_hit desc, category")
        comparisons = _rows(con, "select * from main.run_comparisons order by run_id, baseline_run_id")
    finally:
        con.close()
    runs.sort(key=lambda r: (severity_index(r.get("worst_severity")), -_serious(r), str(r["run_id"])))
    return Fleet(runs, recurring, comparisons, list(unreadable), list(defects), incomplete)


def _log_end(story: dict[str, Any] | None) -> str:
    """How a run's log ends, in a few words ('' when it is complete or unknown)."""
    if story is None:
        return ""
    kind, last, total = story.get("end_kind"), story.get("last_step"), story.get("total_steps")
    if kind == "partial_copy":
        return f"partial copy, to step {last}"
    if kind == "crash":
        return f"died at step {last}" + (f" of {total}" if total else "") + ", not resumed"
    if kind == "stopped_early":
        return f"stopped at step {last} of {total} (pruned, early-stopped or interrupted)"
    if kind == "schedule_unfinished":
        return f"stopped at step {last} with its learning rate still decaying"
    return ""


def _serious(run: dict[str, Any]) -> int:
    return sum(int(run.get(f"n_{s}") or 0) for s in ("critical", "high", "medium"))


def _short(text: Any) -> str:
    value = " ".join(str(text or "").split())
    return value if len(value) <= TITLE_CHARS else value[: TITLE_CHARS - 1].rstrip() + "…"


def _num(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{float(value):.{digits}g}"


def _fix_first(run: dict[str, Any]) -> str:
    if not run.get("fix_first_finding_id"):
        return "nothing above info"
    return f"[{run.get('fix_first_severity')}] {_short(run.get('fix_first_title'))}"


def _comparison_text(row: dict[str, Any]) -> str:
    parts = []
    if row.get("divergence_step") is not None:
        parts.append(
            f"loss departs from the baseline at step {row['divergence_step']} "
            f"(+{_num(row.get('divergence_loss_delta'))} nats, noise {_num(row.get('divergence_noise'))})"
        )
    if row.get("slowdown_step") is not None:
        ratio = row.get("slowdown_ratio")
        slower = f"{(float(ratio) - 1) * 100:.0f}% slower per step" if ratio is not None else "slower"
        parts.append(f"{slower} from step {row['slowdown_step']}")
    if row.get("lr_first_differing_step") is not None:
        parts.append(f"LR differs from step {row['lr_first_differing_step']}")
    return "; ".join(parts) or "within the baseline's noise"


def _report_link(out: Path, run_id: str, name: str) -> str | None:
    path = out / RUNS_SUBDIR / run_id / name
    return path.relative_to(out).as_posix() if path.is_file() else None


def _since_previous(run: dict[str, Any]) -> str:
    """What changed at the run's latest build (fleet mart `runs`, from run_builds)."""
    number = run.get("build_number")
    if number is None:
        return "n/a"
    counts = {s: int(run.get(f"n_{s}_since_previous_build") or 0) for s in HISTORY_STATUSES}
    if int(number) == 1:
        return f"first build: {counts['new']} new"
    changed = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items() if n and s != "still_open")
    return f"build {number}: {changed or 'no change'}; {counts['still_open']} still open"


def _worst(fleet: Fleet, run: dict[str, Any]) -> str:
    worst = str(run.get("worst_severity") or "none")
    if str(run["run_id"]) in fleet.quarantined:
        return f"{worst} (quarantined: a defect of the tool)"
    return worst


def defect_lines(fleet: Fleet) -> list[str]:
    """The failed structural tests, each with the runs it concerns (empty when none failed)."""
    lines = []
    for defect in fleet.defects:
        runs = "every run" if defect.run_ids is None else ", ".join(defect.run_ids) or "no run"
        lines.append(f"{defect.sentence()}: quarantined {runs}.")
    if lines:
        lines.append(
            "These are defects of run_diagnosis, not problems of the runs: every run was still diagnosed, "
            "but the findings of a quarantined run may be duplicated, mis-ranked or missing (its report "
            "says which check failed); the other runs are not affected."
        )
    return lines


def _run_cells(fleet: Fleet) -> list[list[str]]:
    return [
        [
            str(number),
            str(r["run_id"]),
            _worst(fleet, r),
            str(r.get("log_end") or ""),
            f"{_serious(r)} of {r.get('n_findings') or 0}",
            _fix_first(r),
            _num(r.get("final_val_loss"), 4),
            _since_previous(r),
        ]
        for number, r in enumerate(fleet.runs, start=1)
    ]


def _unreadable_cells(fleet: Fleet) -> list[list[str]]:
    first = len(fleet.runs) + 1
    return [
        [str(number), name, "unreadable", "no log read", "", _short(why), "", ""]
        for number, (name, why) in enumerate(fleet.unreadable, start=first)
    ]


def _recurring_cells(fleet: Fleet) -> list[list[str]]:
    return [
        [
            str(r["category"]),
            f"{r['runs_hit']} of {r['n_runs']}",
            str(r.get("worst_severity")),
            _short(r.get("run_ids_hit")),
            _short(r.get("hyperparameter_ranges") or ""),
        ]
        for r in fleet.recurring
    ]


def _page(fleet: Fleet) -> dict[str, Any]:
    """What both templates of the page show (the cells as text; the templates escape them)."""
    return {
        "fleet": fleet,
        "title": f"{len(fleet.runs) + len(fleet.unreadable)} runs, worst problem first",
        "defects": defect_lines(fleet),
        "recurring": _recurring_cells(fleet),
        "comparisons": [
            [str(r["run_id"]), str(r["baseline_run_id"]), _comparison_text(r)] for r in fleet.comparisons
        ],
    }


def render_markdown(fleet: Fleet, out: Path) -> str:
    """index.md from templates/fleet.md.j2; a run whose report is under out/runs/ gets a link."""
    runs = []
    for cells, run in zip(_run_cells(fleet), fleet.runs, strict=True):
        link = _report_link(out, str(run["run_id"]), "report.md")
        runs.append([*cells, f"[report]({link})" if link else ""])
    runs += [[*cells, ""] for cells in _unreadable_cells(fleet)]
    template = environment("markdown").get_template("fleet.md.j2")
    return template.render(**_page(fleet), run_columns=RUN_COLUMNS, runs=runs)


def render_html(fleet: Fleet, out: Path) -> str:
    """index.html from templates/fleet.html.j2 (autoescaped)."""
    links = [_report_link(out, str(run["run_id"]), "report.html") for run in fleet.runs]
    return (
        environment("html")
        .get_template("fleet.html.j2")
        .render(
            **_page(fleet),
            run_columns=[*RUN_COLUMNS[:-1], ""],
            runs=_run_cells(fleet) + _unreadable_cells(fleet),
            links=links,
        )
    )


def write_fleet(
    db_path: Path,
    out: Path,
    unreadable: Sequence[tuple[str, str]] = (),
    defects: Sequence[ToolDefect] = (),
    target_path: Path | None = None,
) -> dict[str, Path]:
    """Write out/index.md and out/index.html from the fleet marts of the build at db_path (and,
    from the build's target folder, whether it failed): both or neither, ReportNotWritten when
    out is full or not writable."""
    fleet = read_fleet(db_path, unreadable, defects, target_path)
    paths = {"markdown": out / "index.md", "html": out / "index.html"}
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_files_atomically(
            {paths["markdown"]: render_markdown(fleet, out), paths["html"]: render_html(fleet, out)}
        )
    except OSError as error:
        raise ReportNotWritten(f"the fleet page was not written: {folder_problem(error, out)}") from error
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("fleet"), description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="DuckDB file of a build (one run or many)")
    parser.add_argument("--out", type=Path, default=Path("reports"), help="folder for index.md / index.html")
    parser.add_argument(
        "--target-path",
        type=Path,
        default=Path("target"),
        help="dbt target folder of the build (default: target): a failed build makes the page say "
        "INCOMPLETE and the exit status 1",
    )
    args = parser.parse_args(argv)
    status = run_command("report_fleet", lambda: write_fleet(args.db, args.out, (), (), args.target_path))
    if status:
        return status
    incomplete = read_dbt_results(args.target_path).incomplete_lines()
    return 1 if incomplete else 0
