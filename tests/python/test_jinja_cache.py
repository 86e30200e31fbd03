"""The Jinja compile cache (run_diagnosis.jinja_cache): one compilation per source and environment
class in a process, the same output as without it."""

from __future__ import annotations

from dbt_common.clients.jinja import get_template, render_template

from run_diagnosis import jinja_cache


def test_a_source_is_compiled_once_per_environment_class_and_renders_as_before() -> None:
    jinja_cache.install()
    source = "select {{ 1 + 1 }} as two, '{{ name }}' as name"
    first, again = get_template(source, {"name": "a"}), get_template(source, {"name": "b"})
    assert first.root_render_func.__code__ is again.root_render_func.__code__  # compiled once
    assert render_template(first, {"name": "a"}) == "select 2 as two, 'a' as name"
    assert render_template(again, {"name": "b"}) == "select 2 as two, 'b' as name"
    # dbt's native environment (another class, other filters) compiles its own
    native = get_template("{{ 1 + 1 }}", {}, native=True)
    text = get_template("{{ 1 + 1 }}", {})
    assert native.root_render_func.__code__ is not text.root_render_func.__code__
    assert str(render_template(native, {})) == render_template(text, {}) == "2"
