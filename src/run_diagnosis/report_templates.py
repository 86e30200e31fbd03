"""The render stage: the report's Jinja2 templates (package data under templates/) and the two
environments that render them.

- Markdown (`*.md.j2`): no escaping by default; the templates escape data text with the `md`
  filter (report_markdown.esc) and code spans with `code`. Block tags take their whole line
  (trim_blocks, lstrip_blocks), so the templates read like the Markdown they write.
- HTML (`*.html.j2`): autoescape on. Every value goes through `html.escape` (the report's
  escaping, quotes included); markup built by a macro passes as it is. The templates are written one
  element a line and rendered as one line (`Compact`): a line break the page needs is `{{ "\\n" }}`.

Rendering is deterministic: the same content gives the same bytes.
"""

from __future__ import annotations

import functools
import html
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from jinja2.ext import Extension
from markupsafe import Markup

TEMPLATES = Path(__file__).resolve().parent / "templates"
_LINE_BREAK = re.compile(r"\n[ \t]*")


class Compact(Extension):
    """Joins the lines of an HTML template: each line break and the next line's indentation are
    dropped before the template is parsed (the data is never touched)."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return _LINE_BREAK.sub("", source) if name and name.endswith(".html.j2") else source


def html_escaped(value: Any) -> Any:
    """Every value printed into HTML: markup from a macro as it is, anything else html.escape'd."""
    return value if hasattr(value, "__html__") else Markup(html.escape(str(value), quote=True))


@functools.cache
def environment(kind: str) -> Environment:
    """The templates' environment for "markdown" or "html" (one of each, built once)."""
    options: dict[str, Any] = (
        {"autoescape": True, "finalize": html_escaped, "extensions": [Compact]}
        if kind == "html"
        else {"autoescape": False, "trim_blocks": True, "lstrip_blocks": True, "keep_trailing_newline": True}
    )
    templates = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined, **options)
    templates.filters.update(one_line=one_line, pipes=pipes)
    return templates


def one_line(text: Any) -> str:
    """Text with every run of whitespace (line breaks included) made one space."""
    return " ".join(str(text).split())


def pipes(text: Any) -> str:
    """A Markdown table cell: its pipes escaped, so the row keeps its columns."""
    return str(text).replace("|", "\\|")


def read_asset(name: str) -> str:
    """A file of templates/ that is not a template (the report's CSS), as it is."""
    return (TEMPLATES / name).read_text(encoding="utf-8")
