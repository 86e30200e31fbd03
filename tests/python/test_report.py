"""scripts/report.py: the report written from the marts of a dbt build (fixtures in report_fixtures.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import report_fixtures as fx
from report import write_report
from report_data import ReportError

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "report.py"
CHROMIUM = Path("/usr/bin/chromium")
FIX_FIRST, RUNNER_UP, SYMPTOM = fx.PROBLEM_FINDINGS[0], fx.PROBLEM_FINDINGS[1], fx.PROBLEM_FINDINGS[2]


def make_report(
    root: Path, tables: dict, tests: list | None = None, skip: tuple[str, ...] = ()
) -> dict[str, Path]:
    root.mkdir(parents=True, exist_ok=True)
    db = fx.build_db(root / "run.duckdb", tables, skip=skip)
    target = fx.write_target(root / "target", tests) if tests is not None else root / "no-target"
    return write_report(db, target, root / "reports", progress=None)


@pytest.fixture(scope="module")
def problem(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tables = fx.problem_tables()
    tables["findings"] = list(reversed(tables["findings"]))  # the order must come from harm_rank
    return make_report(tmp_path_factory.mktemp("problem"), tables, fx.TESTS_PROBLEM)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_report(tmp_path_factory.mktemp("clean"), fx.clean_tables(), tests=None)


def read(paths: dict[str, Path], kind: str) -> str:
    return paths[kind].read_text(encoding="utf-8")


# --------------------------------------------------------------------------- findings.json


def test_writes_the_three_files(problem: dict[str, Path]) -> None:
    assert {p.name for p in problem.values()} == {"report.md", "report.html", "findings.json"}
    assert all(p.stat().st_size > 0 for p in problem.values())


def test_findings_json_is_ranked_by_harm_rank_with_every_column(problem: dict[str, Path]) -> None:
    findings = json.loads(read(problem, "findings"))
    assert isinstance(findings, list)
    assert [f["rank"] for f in findings] == list(range(1, len(fx.PROBLEM_FINDINGS) + 1))
    expected_order = [f["finding_id"] for f in sorted(fx.PROBLEM_FINDINGS, key=lambda f: f["harm_rank"])]
    assert [f["finding_id"] for f in findings] == expected_order
    assert [f["harm_rank"] for f in findings] == sorted(f["harm_rank"] for f in findings)
    for row in findings:
        assert set(row) == {*fx.FINDING_KEYS, "rank"}
    symptom = next(f for f in findings if f["finding_id"] == SYMPTOM["finding_id"])
    assert symptom["caused_by"] == FIX_FIRST["finding_id"] and symptom["is_root_cause"] is False
    assert symptom["harm_score"] == SYMPTOM["harm_score"]


def test_findings_json_of_a_clean_run_is_an_empty_list(clean: dict[str, Path]) -> None:
    assert json.loads(read(clean, "findings")) == []


# --------------------------------------------------------------------------- report.md


def test_markdown_names_the_fix_first_finding_and_argues_against_the_runner_up(
    problem: dict[str, Path],
) -> None:
    md = read(problem, "markdown")
    assert f"### Fix first: {FIX_FIRST['title']}" in md
    assert f"beats the runner-up, #2 “{RUNNER_UP['title']}”" in md
    # the numbers of both: harm score, cost with unit, steps affected, caused_by chain
    assert f"Harm score 3.2 against 2.4 for the runner-up ({RUNNER_UP['finding_id']}), 1.3x as much" in md
    assert "Estimated cost 5 steps (replayed steps x 1 (work redone)); runner-up 0.031 val_loss" in md
    assert "It affects 25 steps (steps 36-60); the runner-up 2 (steps 25-26)." in md
    assert f"It explains 1 other finding (#3 “{SYMPTOM['title']}” ({SYMPTOM['finding_id']}))" in md
    assert "The runner-up explains 0 other findings." in md


def test_markdown_summary_lists_top_findings_with_severity_and_the_clean_numbers(
    problem: dict[str, Path],
) -> None:
    md = read(problem, "markdown")
    summary = md.split("## Findings in fix order")[0]
    for finding in fx.PROBLEM_FINDINGS[:3]:
        assert f"**{finding['severity'].upper()}**: {finding['title']}" in summary
    assert fx.PROBLEM_FINDINGS[3]["title"] not in summary  # low severity stays out of the summary list
    assert "| Steps | 60 counted of 66 train rows logged (6 superseded or duplicate rows not counted)" in md
    assert "| Best checkpoint | step 40, val loss 2.61 |" in md
    assert "| Final validation loss | 2.63 at step 60 (+0.02 against the best) |" in md
    assert "| Final training loss | 2.41 (median of the last steps) |" in md


def test_markdown_details_every_finding_in_rank_order(problem: dict[str, Path]) -> None:
    md = read(problem, "markdown")
    headings = re.findall(r"^### (\d+)\. \[(\w+)\] (.+)$", md, flags=re.M)
    assert [(int(r), s.lower(), t) for r, s, t in headings] == [
        (f["harm_rank"], f["severity"], f["title"]) for f in fx.PROBLEM_FINDINGS
    ]
    assert f"- **Caused by:** #1 “{FIX_FIRST['title']}” ({FIX_FIRST['finding_id']})" in md
    assert "- **Estimated cost:** 0.2 share_of_updates, estimated by: share of steps more than 10% off" in md
    assert "  - steps 36-40 logged twice (5 rows superseded)" in md  # evidence split into facts
    assert f"- **Recommendation:** {SYMPTOM['recommendation']}" in md
    # data cannot inject HTML into the Markdown: every < from the data is escaped
    assert "\\<script>alert('x')\\</script>" in md
    assert not re.search(r"(?<!\\)<script", md)


def test_markdown_lists_the_dbt_tests_that_failed_with_category(problem: dict[str, Path]) -> None:
    md = read(problem, "markdown")
    assert "dbt tests that failed: 3 of 4 (1 fail, 2 warn)." in md
    section = md.split("## dbt tests that failed")[1].split("## Double-check")[0]
    assert (
        "| `assert_lr_matches_schedule` | fail | 25 | `lr_schedule_mismatch` | `lr_schedule_mismatch-036` |"
        in section
    )
    assert "| `assert_no_run_restarts` | warn | 1 | `run_restart` | `run_restart-040` |" in section
    assert "unique_findings_finding_id" not in section  # a passing test is not a problem


def test_markdown_double_check_reconciles_rows_coverage_and_log_findings(problem: dict[str, Path]) -> None:
    md = read(problem, "markdown")
    section = md.split("## Double-check before relying on the numbers")[1]
    assert "- train: 60 kept + 6 set aside = 66 of 66 raw rows: adds up" in section
    assert "| train | set_aside | superseded by the replay after the restart | 5 |" in section
    assert "15 of 16 checks ran. Not run:\n- `data_repetition`: the run is shorter than one epoch" in section
    assert "(log_quality-010), low: row 11 repeats step 10 exactly" in section
    assert "The marts agree with each other." in section


def test_double_check_flags_rows_that_do_not_add_up_and_marts_that_disagree(tmp_path: Path) -> None:
    tables = fx.problem_tables()
    tables["audit_summary"] = [r for r in tables["audit_summary"] if r[2] != "exact duplicate row"]
    # fix_first_finding_id disagrees with harm_rank
    summary = fx.with_value(
        tables["run_summary"][0], "run_summary", fix_first_finding_id=RUNNER_UP["finding_id"]
    )
    tables["run_summary"] = [summary]
    md = read(make_report(tmp_path, tables, fx.TESTS_PROBLEM), "markdown")
    assert (
        "train: 60 kept + 5 set aside = 65, but the file has 66 raw rows: "
        "does NOT add up (1 rows unaccounted)" in md
    )
    assert "run_summary.fix_first_finding_id is loss_spikes-025 but harm_rank 1 is run_restart-040" in md
    assert f"### Fix first: {FIX_FIRST['title']}" in md


def test_double_check_lists_broken_dbt_nodes(tmp_path: Path) -> None:
    broken = (
        ("model.run_diagnosis.stg_training__evals", "error", "Conversion Error:\n  could not cast 'x'"),
        ("unit_test.run_diagnosis.findings.test_ranking", "fail", "actual differs"),
        ("model.run_diagnosis.findings", "success", None),
    )
    tables = fx.problem_tables()
    root = tmp_path / "run"
    root.mkdir()
    fx.write_target(root / "target", fx.TESTS_PROBLEM, other_nodes=broken)
    md = read(
        write_report(fx.build_db(root / "db.duckdb", tables), root / "target", root / "out", None), "markdown"
    )
    section = md.split("### The dbt build")[1].split("###")[0]
    assert (
        "- model model.run_diagnosis.stg_training__evals error in the last build: Conversion Error: could"
        in section
    )
    assert "- unit_test unit_test.run_diagnosis.findings.test_ranking fail in the last build" in section
    assert "run_diagnosis.findings success" not in section
    assert "- Marts downstream of a broken node may be from an older build." in section


def test_clean_run_says_nothing_is_wrong_above_low_and_still_gives_the_numbers(
    clean: dict[str, Path],
) -> None:
    for kind in ("markdown", "html"):
        text = read(clean, kind)
        assert "Nothing wrong above low severity" in text
        assert "Fix first" not in text
        assert "30 counted of 30 train rows logged" in text
        assert "Validation loss: not logged (no evaluations)." in text
        assert "Gradient norm: not logged (no grad_norm in the log)." in text
        assert "run_results.json not found: the dbt test results are not in this report" in text
    md = read(clean, "markdown")
    assert "| Best checkpoint | not logged (no evaluations) |" in md
    assert "- `grad_clip_violation`: no grad_norm in the log" in md


def test_a_low_finding_alone_is_still_nothing_above_low(tmp_path: Path) -> None:
    tables = fx.clean_tables()
    low = fx.PROBLEM_FINDINGS[3]
    tables["findings"] = [fx.as_row("findings", **{**low, "harm_rank": 1})]
    md = read(make_report(tmp_path, tables, []), "markdown")
    assert "**Nothing wrong above low severity.**" in md
    assert f"### 1. [LOW] {low['title']}" in md


# --------------------------------------------------------------------------- report.html


def test_html_is_self_contained(problem: dict[str, Path], clean: dict[str, Path]) -> None:
    for paths in (problem, clean):
        page = read(paths, "html")
        assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, flags=re.I)
        assert not re.search(r"https?://", page)
        assert not re.search(r"@import|url\(", page)
        assert "<script" not in page.lower()


def test_html_escapes_text_from_the_data(problem: dict[str, Path]) -> None:
    page = read(problem, "html")
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quoted&quot;" in page
    assert "<script>alert" not in page


def test_html_plots_are_inline_figures_with_id_alt_and_caption(problem: dict[str, Path]) -> None:
    page = read(problem, "html")
    figures = re.findall(r"<figure>(.*?)</figure>", page, flags=re.S)
    assert len(figures) == 6
    ids = []
    for fig in figures:
        img = re.search(
            r'<img id="([^"]+)" alt="([^"]+)" src="data:image/png;base64,[A-Za-z0-9+/=]{200,}">', fig
        )
        assert img, fig[:200]
        ids.append(img.group(1))
        assert "<figcaption><strong>" in fig
    assert ids == ["plot-loss", "plot-lr", "plot-grad", "plot-shards", "plot-eval", "plot-step-time"]


def test_html_links_caused_by_to_the_root_cause_and_every_anchor_resolves(problem: dict[str, Path]) -> None:
    page = read(problem, "html")
    article = page.split('<article class="finding" id="finding-lr-schedule-mismatch-036">')[1].split(
        "</article>"
    )[0]
    assert '<dt>Caused by</dt><dd><a href="#finding-run-restart-040">#1 “' in article
    ids = set(re.findall(r'\sid="([^"]+)"', page))
    targets = set(re.findall(r'href="#([^"]+)"', page))
    assert targets and targets <= ids
    assert {"summary", "plots", "findings", "dbt-tests", "double-check", "fix-first"} <= ids


# --------------------------------------------------------------------------- errors


def test_no_build_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.duckdb"
    with pytest.raises(ReportError, match=r"no build found at .*nope\.duckdb: run dbt build first"):
        write_report(missing, tmp_path, tmp_path / "out", progress=None)
    assert not (tmp_path / "out").exists()


def test_a_missing_mart_is_named(tmp_path: Path) -> None:
    db = fx.build_db(tmp_path / "run.duckdb", fx.problem_tables(), skip=("eval_metrics", "check_coverage"))
    with pytest.raises(ReportError, match=r"marts missing from .*: eval_metrics, check_coverage"):
        write_report(db, tmp_path, tmp_path / "out", progress=None)


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    db = fx.build_db(tmp_path / "run.duckdb", fx.problem_tables())
    import duckdb

    with duckdb.connect(str(db)) as con:
        con.execute("alter table main.findings drop column cost_method")
    with pytest.raises(ReportError, match=r"findings lacks cost_method"):
        write_report(db, tmp_path, tmp_path / "out", progress=None)


# --------------------------------------------------------------------------- CLI


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "RUN_DIAGNOSIS_DB"} | (env or {})
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_help_explains_the_options(tmp_path: Path) -> None:
    result = run_cli("--help", cwd=tmp_path)
    assert result.returncode == 0
    for text in (
        "--db",
        "--target-path",
        "--out",
        "RUN_DIAGNOSIS_DB",
        ".dbt_state/run_diagnosis.duckdb",
        "findings.json",
    ):
        assert text in result.stdout


def test_cli_writes_the_report_with_progress_on_stderr(tmp_path: Path) -> None:
    db = fx.build_db(tmp_path / "build.duckdb", fx.problem_tables())
    fx.write_target(tmp_path / "tgt", fx.TESTS_PROBLEM)
    result = run_cli("--target-path", "tgt", "--out", "out", cwd=tmp_path, env={"RUN_DIAGNOSIS_DB": str(db)})
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(f"report: reading marts from {db}")
    for name in ("report.md", "report.html", "findings.json"):
        assert f"report: wrote out/{name}" in result.stderr
        assert (tmp_path / "out" / name).is_file()
    assert "report: drawing plots" in result.stderr
    assert (
        json.loads((tmp_path / "out" / "findings.json").read_text())[0]["finding_id"]
        == FIX_FIRST["finding_id"]
    )


def test_cli_without_a_build_fails_with_the_message(tmp_path: Path) -> None:
    result = run_cli(cwd=tmp_path)
    assert result.returncode == 1
    assert (
        "report: error: no build found at .dbt_state/run_diagnosis.duckdb: run dbt build first"
        in result.stderr
    )
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------- in a browser


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")
def test_reports_render_in_headless_chromium(
    problem: dict[str, Path], clean: dict[str, Path], tmp_path: Path
) -> None:
    from report_browser import check_pages

    # a page that must fail every check, to prove the checks can fail
    control = tmp_path / "control.html"
    control.write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
        '<img id="broken" alt="broken" src="data:image/png;base64,AAAA">'
        '<script>console.error("control error")</script></body></html>'
    )
    checked_problem, checked_clean, checked_control = check_pages([problem["html"], clean["html"], control])

    assert checked_control.console_errors == ["console.error: control error"]
    assert [img["id"] for img in checked_control.broken_images] == ["broken"]

    for checked, n_images in ((checked_problem, 6), (checked_clean, 3)):
        assert checked.console_errors == []
        assert checked.external_requests == []
        assert len(checked.images) == n_images
        assert checked.broken_images == []
        assert all(img["naturalWidth"] > 300 and img["naturalHeight"] > 100 for img in checked.images)
    assert checked_problem.title == "Run diagnosis: fixture-60"
