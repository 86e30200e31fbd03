"""Compile each of dbt's Jinja sources once per process, not once per node per build.

dbt renders every node's SQL (and every hook, test and materialization macro call) from its Jinja
source at each build: dbt_common's ``get_template`` makes a new environment and compiles the
source into Python bytecode every time, with no cache. In one process (``run-diagnosis
diagnose`` of several runs, a fleet, the test suite's many builds on one parsed manifest) the same
sources come back build after build, and their compilation was about a tenth of a build's CPU (a
py-spy profile of the test suite: ``Environment.compile`` 7% of all its samples; a build of a
small run on a parsed manifest took 9% less CPU with this cache, docs/performance.md).

Jinja's ``Environment.compile`` is a pure function of the source and of the environment's class
and options (its extensions, filters and syntax); dbt builds every environment of one class with
the same ones (``get_environment``: only ``undefined`` differs, which the generated code looks up
at render time, not at compile time). So the bytecode is cached per class, source, name, file name
and ``defer_init``. Only dbt's two environment classes are patched, only within this process, and
``raw`` output (Python source) is never cached. The cache holds at most MAX_SOURCES entries (a
project has about two thousand sources), dropped whole when full.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import CodeType
from typing import Any

MAX_SOURCES = 20_000

_CACHE: dict[tuple[type, str, str | None, str | None, bool], CodeType] = {}
_INSTALL_LOCK = threading.Lock()
_installed = False


def install() -> None:
    """Patch dbt's Jinja environments' compile with the cached one (idempotent)."""
    global _installed
    with _INSTALL_LOCK:
        if _installed:
            return
        import jinja2
        from dbt_common.clients import jinja as dbt_jinja

        original: Callable[..., Any] = jinja2.Environment.compile

        def compile_cached(
            self: jinja2.Environment,
            source: Any,
            name: str | None = None,
            filename: str | None = None,
            raw: bool = False,
            defer_init: bool = False,
        ) -> Any:
            if raw or not isinstance(source, str):
                return original(self, source, name, filename, raw, defer_init)
            key = (type(self), source, name, filename, defer_init)
            code = _CACHE.get(key)
            if code is None:
                code = original(self, source, name, filename, raw, defer_init)
                if len(_CACHE) >= MAX_SOURCES:
                    _CACHE.clear()
                _CACHE[key] = code
            return code

        for environment in (dbt_jinja.MacroFuzzEnvironment, dbt_jinja.NativeSandboxEnvironment):
            environment.compile = compile_cached  # type: ignore[method-assign]
        _installed = True


def cached_sources() -> int:
    """How many compiled sources the cache holds (for tests)."""
    return len(_CACHE)
