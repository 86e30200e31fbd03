"""An index of several run reports: one line per run, worst problem and fix first, with links.

Looks for report folders (a folder holding findings.json and report.md) below DIR and
writes DIR/index.md and DIR/index.html. The runs are listed by folder name, so the same
reports give the same index (no timestamps).

Usage:
  run-diagnosis index DIR
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from run_diagnosis.cli import prog
from run_diagnosis.report_data import run_command, severity_index
from run_diagnosis.report_templates import environment

REPORT_FILES = ("findings.json", "report.md")
WHAT_HAPPENED = "## What happened"
FIX_FIRST = "## Fix first: "


@dataclass(frozen=True)
class RunEntry:
    """One run of the index, read from its report folder."""

    folder: str
    run_name: str
    n_findings: int
    n_above_low: int
    worst: str
    fix_first: str
    story: str


def report_folders(root: Path) -> list[Path]:
    """Folders below root (root included) holding a report, in path order."""
    found = {
        p.parent for p in root.rglob("findings.json") if all((p.parent / f).is_file() for f in REPORT_FILES)
    }
    return sorted(found)


def section_text(markdown: str, heading: str) -> str:
    """The first paragraph after a heading of report.md, or ''."""
    if heading not in markdown:
        return ""
    rest = markdown.split(heading, 1)[1]
    paragraphs = [p.strip() for p in rest.split("\n\n") if p.strip()]
    return paragraphs[0] if paragraphs else ""


def read_entry(root: Path, folder: Path) -> RunEntry:
    findings = json.loads((folder / "findings.json").read_text(encoding="utf-8"))
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    title = markdown.splitlines()[0] if markdown else ""
    severities = [str(f.get("severity") or "info").lower() for f in findings]
    fix = next((line for line in markdown.splitlines() if line.startswith(FIX_FIRST)), "")
    return RunEntry(
        folder=folder.relative_to(root).as_posix() or ".",
        run_name=title.removeprefix("# Run diagnosis: ") or folder.name,
        n_findings=len(findings),
        n_above_low=sum(severity_index(s) <= 2 for s in severities),
        worst=min(severities, key=severity_index) if severities else "none",
        fix_first=fix.removeprefix(FIX_FIRST) or "nothing above low severity",
        story=section_text(markdown, WHAT_HAPPENED),
    )


def link(entry: RunEntry, name: str) -> str:
    return name if entry.folder == "." else f"{entry.folder}/{name}"


def render_index_markdown(entries: list[RunEntry]) -> str:
    """index.md from templates/index.md.j2."""
    text = environment("markdown").get_template("index.md.j2").render(entries=entries, link=link)
    return text.rstrip() + "\n"


def render_index_html(entries: list[RunEntry]) -> str:
    """index.html from templates/index.html.j2 (autoescaped)."""
    return environment("html").get_template("index.html.j2").render(entries=entries, link=link)


def write_index(root: Path) -> dict[str, Path]:
    """Write root/index.md and root/index.html; raises ValueError when no report is found."""
    folders = report_folders(root)
    if not folders:
        raise ValueError(f"no report folder (findings.json and report.md) below {root}")
    entries = [read_entry(root, f) for f in folders]
    paths = {"markdown": root / "index.md", "html": root / "index.html"}
    paths["markdown"].write_text(render_index_markdown(entries), encoding="utf-8")
    paths["html"].write_text(render_index_html(entries), encoding="utf-8")
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("index"), description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="folder holding one report folder per run")
    args = parser.parse_args(argv)
    return run_command("report_index", lambda: write_index(args.folder), errors=(OSError, ValueError))
