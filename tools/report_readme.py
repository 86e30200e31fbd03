"""Copy page one of a report.md into a Markdown document, between two marker lines.

The document is docs/report-contents.md ("Page one of the sample's report"). The block is
rewritten only when page one changed, so an unchanged diagnosis leaves the document (a tracked
file) untouched. Headings are demoted by one level so page one sits under the document's own
section.

Usage:
  python tools/report_readme.py REPORT_MD docs/report-contents.md
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

START = "<!-- sample page one: start (written by scripts/diagnose_sample.sh) -->"
END = "<!-- sample page one: end -->"
PAGE_BREAK = "\n---\n"


def page_one(report: str) -> str:
    """Page one of a report.md (everything before the first page break), headings demoted by one level."""
    first = report.split(PAGE_BREAK, 1)[0]
    lines = first.strip().splitlines()[1:]  # the report's title stays out: the document has its own
    return "\n".join("#" + line if line.startswith("#") else line for line in lines).strip()


def replace_between(readme: str, start: str, end: str, body: str) -> str:
    """The document with the text between the marker lines `start` and `end` replaced by `body`
    (a block a command writes: a number in it comes from that command, never by hand)."""
    if start not in readme or end not in readme:
        raise ValueError(f"the document has no {start!r} ... {end!r} block")
    head, rest = readme.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body.strip()}\n{end}{tail}"


def with_page_one(readme: str, report: str) -> str:
    """The document with the block between the markers replaced by the report's page one."""
    return replace_between(readme, START, END, page_one(report))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="report_readme.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="report.md to take page one from")
    parser.add_argument(
        "readme", type=Path, help="the document holding the marker lines (docs/report-contents.md)"
    )
    args = parser.parse_args(argv)
    try:
        readme = args.readme.read_text(encoding="utf-8")
        updated = with_page_one(readme, args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"report_readme: error: {exc}", file=sys.stderr)
        return 1
    if updated != readme:
        args.readme.write_text(updated, encoding="utf-8")
        print(f"report_readme: page one updated in {args.readme}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
