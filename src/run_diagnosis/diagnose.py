"""Diagnose one training run from its logs, end to end.

    run-diagnosis diagnose SOURCE [SOURCE ...] --out DIR [--format FMT] [--map MAP] [--keep-going]
        [--alert-json FILE] [--alert-webhook URL] [--alert-format generic|slack] [--alert-min-severity S]

1. checks SOURCE's canonical files, if it has any (run_diagnosis.validate_run), then reads SOURCE
   (a file or a folder, in any format the importers know) as a run;
2. writes it as the five canonical files into DIR/run/ and checks them (encoding, headers,
   config depth and types, at least one train row): a file that cannot be used is exit 2,
   named, before the build;
3. builds the dbt project on them into DIR/diagnosis.duckdb (dbt's target and logs in DIR/dbt/);
4. writes the ranked report into DIR: report.md, report.html, findings.json;
5. with --alert-json / --alert-webhook: sends the findings this build opened, at or above
   --alert-min-severity, each once (run_diagnosis.alerts; the history is kept in the DuckDB file,
   so diagnosing the same SOURCE into the same DIR again compares with the previous build).

A SOURCE holding several runs (Lightning version_N/ folders side by side, W&B run folders,
a W&B chart export naming several runs) is written run by run into DIR/warehouse/<run>/ and
built once, all runs together (every model carries run_id); each run's report goes to
DIR/runs/<run>/, with DIR/index.md and DIR/index.html ranking the runs by their worst
finding (run_diagnosis.multi_run).

Progress goes to stderr; stdout gets the report's paths and the fix-first finding.

One diagnosis at a time writes DIR: it holds DIR/.diagnose.lock while it runs, so a second one
into the same DIR is refused naming the first (or waits, --wait SECONDS). A diagnosis that
fails leaves no report in DIR: the reports of an earlier diagnosis there are removed when it
starts, and each report's files are written under temporary names and renamed together.

Exit status (docs/reliability.md):
  0  the diagnosis was made, whatever it found;
  1  the build or the report failed: no report (the message says which model or step), or an
     alert could not be delivered (the report is written);
  2  the input could not be read (the message says what was expected and found), or DIR cannot
     be used: full, not writable, or in use by another diagnosis (named);
  3  the report was written, but a structural test of the tool failed on this input: a defect
     of run_diagnosis, named at the top of the report (and of the fleet page, which marks the
     runs concerned as quarantined); read the findings it guards with care and report it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from run_diagnosis import alerts, importers, multi_run
from run_diagnosis.cli import prog
from run_diagnosis.dbt_runner import BuildRefused, BuildResult, DbtBuildError, build_run, failure_message
from run_diagnosis.importers import canonical_files, generic_log, metric_names
from run_diagnosis.importers.canonical import FILE_SUFFIXES, RunData, write_run
from run_diagnosis.project import project_dir
from run_diagnosis.safe_io import Busy, exclusive, folder_problem
from run_diagnosis.tool_defects import ToolDefect, read_tool_defects
from run_diagnosis.validate_run import RunValidationError, carry_cut_off_row, validate_run, validate_source

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_TOOL_DEFECT = 0, 1, 2, 3
STEPS = 4
LOCK_FILE = ".diagnose.lock"  # in DIR: held while a diagnosis writes there
# what a diagnosis writes into DIR beside run/, warehouse/ and the database: an earlier
# diagnosis's copies are removed first, so a failed diagnosis never leaves a report behind
REPORT_FILES = ("report.md", "report.html", "findings.json", "index.md", "index.html")
TITLE_CHARS = 200  # a finding title can list hundreds of steps: the closing line keeps the start
RUN_SUBDIR, DBT_SUBDIR, DB_FILE, WAREHOUSE_SUBDIR = "run", "dbt", "diagnosis.duckdb", "warehouse"


@dataclass(frozen=True)
class AlertOptions:
    """Where the alerts of a build go (alerts.add_arguments); no channel: none are sent."""

    json_file: Path | None = None
    webhooks: tuple[str, ...] = ()
    fmt: str | None = None
    min_severity: str = alerts.DEFAULT_MIN_SEVERITY


class BadInput(Exception):
    """SOURCE or --out cannot be used; the message says why (exit status 2)."""


class Failed(Exception):
    """The build or the report failed (exit status 1)."""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def step(number: int, message: str) -> None:
    say(f"[{number}/{STEPS}] {message}")


def detail(message: str) -> None:
    say(f"      {message}")


def formats_help() -> str:
    """One line per importer in the registry, in sniffing order."""
    lines = [f"  {m.FORMAT:<24} {m.DESCRIPTION}" for m in importers.importers()]
    return "formats (auto-detected in this order unless --format is given):\n" + "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog("diagnose"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Diagnose a language-model training run from its logs: convert SOURCE to the canonical "
            "run files, build the dbt diagnosis on them and write the ranked report."
        ),
        epilog=(
            f"{formats_help()}\n\n"
            "output in DIR: run/ (the canonical files), diagnosis.duckdb (the marts), dbt/ (dbt's "
            "target and logs), report.md, report.html, findings.json (ranked, rank 1 = fix first).\n"
            "exit status: 0 diagnosis made (whatever it found); 1 build or report failed (no report); "
            "2 input unreadable or of an unknown format, or DIR full, not writable or in use by another "
            "diagnosis; 3 report written, but a structural test of the tool failed (a defect of "
            "run_diagnosis, named at the top of the report); an alert that could not be delivered is 1."
        ),
    )
    parser.add_argument(
        "sources",
        type=Path,
        nargs="+",
        metavar="SOURCE",
        help="log file or folder of the run; several SOURCEs (or one holding several runs) are "
        "built together, one report per run and a fleet page",
    )
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="folder to write everything to"
    )
    parser.add_argument(
        "--format",
        choices=[m.FORMAT for m in importers.importers()],
        metavar="FMT",
        help="read SOURCE in this format instead of detecting it (see the list below)",
    )
    parser.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="when another diagnosis is writing DIR, wait up to this long for it (default: refuse at once)",
    )
    parser.add_argument(
        "--map",
        metavar="MAP",
        help="read SOURCE with the generic reader and say which logged names are which fields, e.g. "
        "step=iter,loss=train/CrossEntropyLoss,lr=optim/lr (the same as 'field: name' lines in "
        "<log>.map.yaml beside the log); see docs/generic-reader.md",
    )
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="when the dbt build fails, still write the report from what was built (exit status 1)",
    )
    alerts.add_arguments(parser)
    return parser.parse_args(argv)


def choose_importer(source: Path, fmt: str | None) -> ModuleType:
    try:
        return importers.by_format(fmt) if fmt else importers.detect(source)
    except importers.RunImportError as error:
        raise BadInput(str(error)) from error
    except OSError as error:
        raise BadInput(f"{source}: cannot be read: {error.strerror or error}") from error


def checked(check: Any, path: Path) -> None:
    """Run a validate_run check; an unusable file is BadInput (exit 2) before any build."""
    try:
        check(path)
    except RunValidationError as error:
        raise BadInput(str(error)) from error
    except OSError as error:
        raise BadInput(f"{path}: cannot be read: {error.strerror or error}") from error


def parse_mapping(text: str | None, fmt: str | None) -> dict[str, str] | None:
    """--map as field -> name; BadInput for an unknown field or a format other than generic."""
    if text is None:
        return None
    if fmt not in (None, generic_log.FORMAT):
        raise BadInput(
            f"--map names the columns of a log for the generic reader; it cannot be used with --format {fmt}"
        )
    try:
        return metric_names.parse_map(text)
    except ValueError as error:
        raise BadInput(f"--map: {error}") from error


def read_source(source: Path, fmt: str | None, mapping: dict[str, str] | None = None) -> RunData:
    checked(validate_source, source)
    inner = importers.unwrapped(source)
    if inner != source:
        detail(f"{source} holds only the folder {inner.relative_to(source)}: reading that")
        source = inner
    folder, console = source, importers.wandb_console(source) if fmt is None and mapping is None else None
    source = console or source
    module = choose_importer(source, generic_log.FORMAT if mapping is not None else fmt)
    step(1, f"reading {source} as {module.FORMAT}")
    try:
        if mapping is not None:
            run = generic_log.load(source, mapping)
        elif module is canonical_files:  # its CSVs are copied as they are, not read (write_canonical)
            run = canonical_files.load(source, by_reference=True)
        else:
            run = module.load(source)
    except importers.NoLossError as error:
        run = history_without_loss(source, fmt, mapping, error)
    except importers.RunImportError as error:
        if fmt is not None or mapping is not None:  # the reader the user chose: its error stands
            raise BadInput(str(error)) from error
        try:
            run = importers.generic_instead(module, source, error)
        except importers.RunImportError as first:
            raise BadInput(str(first)) from first
    except OSError as error:
        raise BadInput(f"{source}: cannot be read as {module.FORMAT}: {error.strerror or error}") from error
    if console is not None:
        run.notes.insert(0, importers.wandb_console_note(folder, module))
    detail(read_summary(run))
    for note in run.notes:
        detail(f"note: {note}")
    return run


def history_without_loss(
    source: Path, fmt: str | None, mapping: dict[str, str] | None, error: importers.RunImportError
) -> RunData:
    """A W&B run whose .wandb history logged no loss is read from its console output, with a
    note; any other run without a loss is refused with the importer's message."""
    console = importers.wandb_history_console(source) if fmt is None and mapping is None else None
    if console is None:
        raise BadInput(str(error)) from error
    detail(f"no loss in the .wandb history: reading {console}")
    try:
        return importers.load_console(source, console, importers.wandb_history_console_note)
    except importers.RunImportError as fallback_error:
        raise BadInput(f"{error}; and its console output: {fallback_error}") from fallback_error


def read_summary(run: RunData) -> str:
    """What was read, for the progress line: rows of each frame, or the file copied as it is."""
    parts = []
    for kind, frame, rows in (
        ("train", run.train, "train rows"),
        ("eval", run.evals, "evals"),
        ("events", run.events, "events"),
    ):
        copied = run.files.get(kind)
        parts.append(
            f"{copied.name} copied as it is ({copied.stat().st_size:,} bytes)"
            if copied
            else f"{len(frame)} {rows}"
        )
    return ", ".join(parts)


def write_canonical(run: RunData, run_dir: Path, source: Path | None = None) -> Path:
    step(2, f"writing the canonical run files to {run_dir}")
    if any(path.parent.resolve() == run_dir.resolve() for path in run.files.values()):
        run = canonical_files.load(Path(run.source_path))  # the files are replaced below: read them first
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        for suffix in FILE_SUFFIXES.values():  # a stale file with another prefix would be a second match
            for stale in run_dir.glob(f"*{suffix}"):
                stale.unlink()
        write_run(run, run_dir)
        if source is not None and run.source_format == "canonical" and carry_cut_off_row(source, run_dir):
            detail("note: the train log ends mid-row: its last row is set aside")
    except OSError as error:
        raise BadInput(folder_problem(error, run_dir)) from error
    # a copied file was checked where it lies (read_source's validate_source): the same bytes
    checked(partial(validate_run, checked=frozenset(run.files)), run_dir)
    return run_dir


def build(run_dir: Path, out: Path, keep_going: bool) -> BuildResult:
    db_path = out / DB_FILE
    step(3, f"building the diagnosis (dbt) into {db_path}")
    try:
        # complete: a failed structural test costs no report (its skipped models are built anyway)
        result = build_run(run_dir, db_path, out / DBT_SUBDIR, progress=detail, check=False, complete=True)
    except BuildRefused as error:
        raise BadInput(str(error)) from error
    except DbtBuildError as error:
        raise Failed(str(error)) from error
    if not result.marts_complete:
        if not keep_going:
            raise Failed(failure_message(result))
        say("dbt build failed; --keep-going: writing the report from what was built")
        for line in result.errors:
            detail(line)
    return result


def defects_of(result: BuildResult) -> list[ToolDefect]:
    """The structural tests that failed in a completed build, said on stderr (exit status 3)."""
    if result.ok or not result.completed:
        return []
    defects = read_tool_defects(result.target_path, result.db_path)
    for defect in defects:
        runs = "" if defect.run_ids is None else f" (rows of run {', '.join(defect.run_ids)})"
        say(f"diagnose: defect of this tool: {defect.sentence()}{runs}")
    if defects:
        say("diagnose: the report was written anyway and names the failed test(s) at its top (exit status 3)")
    return defects


def report(result: BuildResult, out: Path, run_id: str | None = None) -> dict[str, Path]:
    from run_diagnosis.report import (
        write_report,  # pandas and friends: only once there is something to report
    )
    from run_diagnosis.report_data import ReportError, ReportNotWritten

    step(4, f"writing the report to {out}")
    try:
        return write_report(
            result.db_path,
            result.target_path,
            out,
            progress=lambda m: detail(f"report: {m}"),
            run_id=run_id,
        )
    except ReportNotWritten as error:
        raise BadInput(str(error)) from error
    except ReportError as error:
        raise Failed(f"report failed: {error}") from error


def fix_first_line(findings_path: Path) -> str:
    """The rank-1 finding, in one line, from findings.json."""
    from run_diagnosis.report_data import ABOVE_LOW

    findings: list[dict[str, Any]] = json.loads(findings_path.read_text(encoding="utf-8"))
    if not findings:
        return "fix first: nothing: no finding in this run's logs"
    first = min(findings, key=lambda f: f.get("rank") or len(findings) + 1)
    if str(first.get("severity")) not in ABOVE_LOW:  # a low or info note is never "fix first"
        notes = f"{len(findings)} lower note{'s' if len(findings) != 1 else ''} in the report"
        return f"fix first: nothing serious found (no finding above low severity; {notes})"
    title = str(first.get("title") or "")
    title = title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1].rstrip() + "…"
    where = f", from step {first['first_step']}" if first.get("first_step") is not None else ""
    return f"fix first: [{first.get('severity')}] {title} ({first.get('finding_id')}{where})"


def send_alerts(result: BuildResult, options: AlertOptions, reports: dict[str, str]) -> None:
    """Send the findings this build opened to the channels asked for (none: nothing to do)."""
    channels = alerts.channels_from(options.json_file, options.webhooks, options.fmt)
    if not channels:
        return
    say(f"alerts: findings at or above {options.min_severity} not sent before")
    try:
        sent = alerts.send(result.db_path, channels, options.min_severity, reports)
    except alerts.AlertError as error:
        raise Failed(f"alerts: {error}") from error
    for key, count in sent.items():
        detail(f"{count} alert(s) sent: {key}")


def several_sources(
    sources: Sequence[Path], fmt: str | None, mapping: dict[str, str] | None = None
) -> list[multi_run.RunSource]:
    """The runs of several SOURCEs: a SOURCE holding several runs gives each of them."""
    runs: list[multi_run.RunSource] = []
    for source in sources:
        if not source.exists():
            raise BadInput(f"{source}: no such file or folder")
        found = [] if fmt or mapping is not None else multi_run.find_runs(source)
        runs += found or [
            multi_run.RunSource(
                name=source.stem if source.is_file() else source.name,
                describe=str(source),
                load=partial(read_source, source, fmt, mapping),
            )
        ]
    return runs


def fleet_page(
    result: BuildResult, out: Path, unreadable: list[tuple[str, str]], defects: list[ToolDefect]
) -> dict[str, Path]:
    from run_diagnosis.report_data import ReportError, ReportNotWritten
    from run_diagnosis.report_fleet import write_fleet

    try:
        return write_fleet(result.db_path, out, unreadable, defects, result.target_path)
    except ReportNotWritten as error:
        raise BadInput(str(error)) from error
    except ReportError as error:
        raise Failed(f"fleet page failed: {error}") from error


def exit_status(result: BuildResult, defects: list[ToolDefect]) -> int:
    """0 a clean build; 3 a build completed past failed structural tests; 1 otherwise."""
    if result.ok:
        return EXIT_OK
    return EXIT_TOOL_DEFECT if result.completed and defects else EXIT_FAILED


def diagnose_several(
    runs: list[multi_run.RunSource], out: Path, keep_going: bool, notify: AlertOptions = AlertOptions()
) -> int:
    """A source holding several runs: all written into out/warehouse/<run>/ and built together
    once; each run's report in out/runs/<run>/, then out/index.*"""
    warehouse = out / WAREHOUSE_SUBDIR
    say(f"{len(runs)} runs found: written into {warehouse} and built together")
    if warehouse.is_dir():  # runs of an earlier diagnosis into the same folder are not this one's
        shutil.rmtree(warehouse)

    def write_one(run: RunData, run_id: str) -> None:
        detail(read_summary(run))
        write_canonical(run, warehouse / run_id)

    outcomes = multi_run.load_runs(runs, out, write_one, say)
    if not any(not o.error for o in outcomes):
        raise BadInput(f"none of the {len(outcomes)} runs could be read: {outcomes[0].error}")
    result = build(warehouse, out, keep_going)
    defects = defects_of(result)
    # the runs that never reached the build; a run whose report fails is in the marts already
    unreadable = [(o.run_id, o.error) for o in outcomes if o.error]
    multi_run.report_runs(outcomes, lambda run_id, run_out: report(result, run_out, run_id), say)
    paths = fleet_page(result, out, unreadable, defects)
    reports = {o.run_id: str(o.out / "report.html") for o in outcomes if not o.error}
    send_alerts(result, notify, reports)
    print(f"index: {paths['html']}")
    print(f"       {paths['markdown']}")
    read = [o for o in outcomes if not o.error]
    print(f"{len(read)} of {len(outcomes)} runs diagnosed")
    return exit_status(result, defects) if read else EXIT_FAILED


def diagnose(
    source: Path,
    out: Path,
    fmt: str | None = None,
    keep_going: bool = False,
    notify: AlertOptions = AlertOptions(),
    mapping: dict[str, str] | None = None,
) -> int:
    """Run the four steps (and send the alerts asked for); returns the exit status (raises
    BadInput / Failed)."""
    runs = [] if fmt or mapping is not None else multi_run.find_runs(source)
    if runs:
        return diagnose_several(runs, out, keep_going, notify)
    # the imported frames are not kept through the build (a 10M-row log is GBs of text in pandas)
    run_dir = write_canonical(read_source(source, fmt, mapping), out / RUN_SUBDIR, source)
    result = build(run_dir, out, keep_going)
    defects = defects_of(result)
    paths = report(result, out)
    send_alerts(result, notify, {run_dir.name: str(paths["html"])})
    print(f"report: {paths['html']}")
    print(f"        {paths['markdown']}")
    print(f"        {paths['findings']}")
    print(fix_first_line(paths["findings"]))
    return exit_status(result, defects)


@contextmanager
def writing_into(out: Path, wait_sec: float) -> Iterator[None]:
    """Hold DIR/.diagnose.lock (another diagnosis into DIR is BadInput naming it) and remove an
    earlier diagnosis's reports, so a failed one leaves none behind."""
    with ExitStack() as stack:
        try:
            out.mkdir(parents=True, exist_ok=True)
            stack.enter_context(exclusive(out / LOCK_FILE, f"the output folder {out}", wait_sec, say))
            for name in REPORT_FILES:
                (out / name).unlink(missing_ok=True)
            shutil.rmtree(out / multi_run.RUNS_SUBDIR, ignore_errors=True)
        except Busy as error:
            raise BadInput(f"{error}. Wait for it (--wait SECONDS) or choose another --out.") from error
        except OSError as error:
            raise BadInput(folder_problem(error, out)) from error
        yield


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    project_dir()  # ProjectNotFound before any log is read, not after (run-diagnosis: exit 2)
    notify = AlertOptions(
        args.alert_json, tuple(args.alert_webhook), args.alert_format, args.alert_min_severity
    )
    try:
        mapping = parse_mapping(args.map, args.format)
        with writing_into(args.out, args.wait):
            if len(args.sources) > 1:
                runs = several_sources(args.sources, args.format, mapping)
                return diagnose_several(runs, args.out, args.keep_going, notify)
            return diagnose(args.sources[0], args.out, args.format, args.keep_going, notify, mapping)
    except BadInput as error:
        say(f"diagnose: error: {error}")
        return EXIT_BAD_INPUT
    except Failed as error:
        say(f"diagnose: error: {error}")
        return EXIT_FAILED
