"""run_diagnosis.report: the report written from the marts of a dbt build (fixtures in report_fixtures.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from run_diagnosis.report import write_report
from run_diagnosis.report_content import fmt_model_cost
from run_diagnosis.report_data import ReportError
from support import report_fixtures as fx
from support.commands import run_diagnosis
from support.paths import REPO

REPORT = run_diagnosis("report")
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
        assert set(row) == {"run_id", *fx.FINDING_KEYS, "rank"}
    symptom = next(f for f in findings if f["finding_id"] == SYMPTOM["finding_id"])
    assert symptom["caused_by"] == FIX_FIRST["finding_id"] and symptom["is_root_cause"] is False
    assert symptom["harm_score"] == SYMPTOM["harm_score"]


def test_findings_json_of_a_clean_run_is_an_empty_list(clean: dict[str, Path]) -> None:
    assert json.loads(read(clean, "findings")) == []


# --------------------------------------------------------------------------- page one

PAGE_ONE_SECTIONS = (
    "## What happened",
    "## The team's two questions",
    "## The problems, most severe first",
    "## Fix first: ",
    "## Reruns that would confirm it",
    "## Double-check before relying on the numbers",
)
TOOL_WORDS = ("dbt", "mart", "harm", "finding_id", "run_summary", "step_metrics", "`", "checks could run")


def page_one(md: str) -> str:
    return md.split("\n---\n")[0]


def test_page_one_has_the_sections_in_order_fits_a_screen_and_speaks_plain_words(
    problem: dict[str, Path],
) -> None:
    page = page_one(read(problem, "markdown"))
    positions = [page.find(section) for section in PAGE_ONE_SECTIONS]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), positions
    assert len(page.splitlines()) <= 45
    for word in TOOL_WORDS:
        assert word not in page.lower(), word


def test_page_one_tells_the_validation_trajectory_from_the_data(problem: dict[str, Path]) -> None:
    what = page_one(read(problem, "markdown")).split("## What happened")[1].split("##")[0]
    # run_story's verdict (the fixture's row): the best evaluation, step 40, lies a third of the
    # evaluated steps before the last
    assert (
        "Validation loss fell from 5.690 at step 0 to its best 2.610 at step 40, then stopped improving: "
        "2.630 at step 60, the last evaluation, accuracy 0.317 -> 0.450." in what
    )
    assert "It crashed and was resumed once: at step 40 from the checkpoint of step 35." in what
    assert "The best evaluation is at step 40 (val loss 2.610); the last saved checkpoint is step 50" in what
    assert "rose to" not in what  # no dip in this run
    assert len(re.findall(r"[.!?](?:\s|$)", what.strip())) <= 6


def test_a_validation_dip_is_told_with_the_causes_just_before_it(tmp_path: Path) -> None:
    tables = fx.problem_tables()
    tables["eval_metrics"] = [
        (s, 3.2, 0.05, *rest) if s == 30 else (s, v, a, *rest) for s, v, a, *rest in tables["eval_metrics"]
    ]
    # what run_story decides on that curve: the dip at step 30, accuracy down from 0.183 to 0.05
    tables["run_story"] = [
        fx.with_value(
            tables["run_story"][0], "run_story", dip_step=30, dip_val_loss=3.2, dip_best_before=2.63,
            dip_previous_eval_step=20, dip_val_accuracy=0.05, dip_previous_val_accuracy=0.1833,
            dip_accuracy_collapsed=True,
        )
    ]  # fmt: skip
    what = page_one(read(make_report(tmp_path, tables, []), "markdown"))
    assert (
        "Validation loss rose to 3.200 at step 30 (best before 2.630) and accuracy collapsed to about 0.050 "
        "(from 0.183), after loss spikes (steps 25-26)." in what
    )


def test_page_one_answers_the_two_questions(problem: dict[str, Path]) -> None:
    questions = page_one(read(problem, "markdown")).split("## The team's two questions")[1].split("\n## ")[0]
    assert (
        "- **Why is the final validation loss high?** The problems that plausibly cost "
        "validation loss, most severe "
        "first: the restart (steps 36-60) and loss spikes (steps 25-26)." in questions
    )
    assert (
        "- **Why does the training loss look unstable?** Because of loss spikes (steps 25-26)." in questions
    )


def test_page_one_names_the_fix_first_against_the_runner_up_and_the_reruns(problem: dict[str, Path]) -> None:
    page = page_one(read(problem, "markdown"))
    assert f"## Fix first: {FIX_FIRST['title']}" in page
    assert "- Why it beats the runner-up, loss spikes (steps 25-26): it is rated high against high" in page
    assert "It also explains 1 other finding: fixing it should clear it too." in page
    assert f"- What to do: {FIX_FIRST['recommendation']}" in page
    reruns = page.split("## Reruns that would confirm it")[1].split("##")[0]
    assert reruns.count("\n- ") == 2  # fix first and runner-up; the low glitch needs no rerun
    assert "resume a short run from a checkpoint and compare the replayed steps" in reruns


def test_page_one_caveats_come_from_the_data_not_from_the_tool(problem: dict[str, Path]) -> None:
    caveats = page_one(read(problem, "markdown")).split("## Double-check before relying on the numbers")[1]
    assert "each one is a hypothesis until its rerun confirms it" in caveats
    assert "The validation set is 512 examples: accuracy differences under about 0.044" in caveats
    assert (
        "The best evaluation (step 40, val loss 2.610) is not a saved checkpoint: the last "
        "save in the events "
        "is step 50 (val loss 2.615 there, the best of the saved ones)." in caveats
    )
    assert "The step times of the 60 counted steps add up to" in caveats
    assert "5 replayed steps" in caveats and "wall time is longer" in caveats
    assert "gradient norms" not in caveats  # grad norms are below the limit: nothing logged after clipping


def test_the_importers_not_understood_names_are_one_caveat_line() -> None:
    from types import SimpleNamespace

    from run_diagnosis.importers.metric_names import assign
    from run_diagnosis.report_story import import_caveat

    notes = [
        "columns used: loss <- 'train/wiki_loss'",
        # two training losses equally plausible (two evaluation sets would be one series instead)
        *assign(["step", "train/wiki_loss", "train/web_loss", "zorp", "blip"]).notes(),
    ]
    line = import_caveat(SimpleNamespace(summary={"import_notes": json.dumps(notes)}))
    assert line == (
        "The importer did not understand the logged names zorp, blip, so they were not used and chose "
        "between equally plausible columns for loss (the choice may be wrong); name them with an alias "
        "file or --map."
    )
    assert import_caveat(SimpleNamespace(summary={"import_notes": json.dumps(["columns used: x"])})) is None
    assert import_caveat(SimpleNamespace(summary={"import_notes": None})) is None


def test_caveats_flag_clipped_grad_norms_and_a_repeated_evaluation(tmp_path: Path) -> None:
    tables = fx.problem_tables()
    tables["step_metrics"] = [(*r[:9], 1.0 if r[1] <= 30 else r[9], *r[10:]) for r in tables["step_metrics"]]
    tables["eval_metrics"] = [*tables["eval_metrics"], (20, 2.9, 0.1, False, False, None)]
    # what report_caveats decides on those norms (its unit test holds the rule): 30 at the limit
    tables["report_caveats"] = [
        *tables["report_caveats"],
        fx.as_row(
            "report_caveats", caveat_id="grad_norm_after_clipping", caveat="grad_norm_after_clipping",
            n_steps=30, first_step=1, last_step=30, limit_value=1.0,
        ),
    ]  # fmt: skip
    caveats = page_one(read(make_report(tmp_path, tables, []), "markdown")).split("## Double-check")[1]
    assert (
        "logged gradient norms (steps 1-30) sit exactly at the clipping limit 1 and none in the run is "
        "above it: the log records norms after clipping, so the true gradient sizes in the run are unknown."
        in caveats
    )
    assert (
        "Step 20 was evaluated more than once (val loss 2.900 and 2.630); the report keeps 2.630, and the "
        "step-20 numbers change by 0.270 with the other row." in caveats
    )


def test_without_run_context_events_and_caveats_the_report_still_writes(tmp_path: Path) -> None:
    optional = ("run_context", "run_events", "report_caveats")
    md = read(make_report(tmp_path, fx.problem_tables(), [], skip=optional), "markdown")
    assert "## Fix first:" in md
    assert "saved checkpoint" not in page_one(md) and "validation set is" not in md


# --------------------------------------------------------------------------- with the cost ledgers


@pytest.fixture(scope="module")
def costed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("costed")
    tables, ddl = fx.with_costs(fx.problem_tables())
    db = fx.build_db(root / "run.duckdb", tables, ddl=ddl)
    return write_report(
        db, fx.write_target(root / "target", fx.TESTS_PROBLEM), root / "reports", progress=None
    )


def test_with_cost_columns_page_one_shows_both_ledgers(costed: dict[str, Path]) -> None:
    page = page_one(read(costed, "markdown"))
    model = page.split("## Model quality: what costs validation loss")[1].split("##")[0]
    assert model.strip().splitlines() == [
        f"1. {FIX_FIRST['title']} (0.050 (0.020 to 0.080) of final validation loss, 1.9%)",
        f"2. {RUNNER_UP['title']} (0.030 (0.010 to 0.060) of final validation loss, 1.1%)",
    ]  # the schedule mismatch is a symptom of the restart, in the same ledger: told under it, not again
    compute = page.split("## Compute: what costs time")[1].split("##")[0]
    assert compute.strip() == (
        "1. Steps 41-44 ran 10x slower than usual. (2.4 s, 16.5% of the 14.2 s of step time logged over all "
        "attempts)"
    )
    assert "## The problems, most severe first" not in page
    assert len(page.splitlines()) <= 45


def test_with_cost_columns_fix_first_argues_in_validation_loss_and_says_when_ranges_overlap(
    costed: dict[str, Path],
) -> None:
    page = page_one(read(costed, "markdown"))
    assert (
        "- It costs about 0.050 (0.020 to 0.080) of final validation loss, 1.9% (final "
        "validation loss 2.630)." in page
    )
    assert "that one costs 0.030 (0.010 to 0.060) of final validation loss, 1.1%." in page
    assert "The two ranges overlap, so the order between them is not settled: both must be fixed." in page
    assert "resume from step 35 with the scheduler state restored; val loss at step 60 should drop" in page
    assert (
        "- **Why is the final validation loss high?** Mostly the restart (steps 36-60), "
        "about 0.050; loss spikes (steps 25-26), about 0.030 (of the final 2.630)." in page
    )


def test_findings_json_carries_the_cost_columns(costed: dict[str, Path]) -> None:
    findings = json.loads(read(costed, "findings"))
    assert {"ledger", "val_loss_cost", "confirm_rerun", "ledger_rank"} <= set(findings[0])


# --------------------------------------------------------------------------- page two and appendix


def test_symptoms_sit_under_their_causes_and_glitches_are_one_table(problem: dict[str, Path]) -> None:
    md = read(problem, "markdown")
    two = md.split("## Causes and their symptoms")[1].split("## Appendix")[0]
    causes = re.split(r"^### \d+\. ", two, flags=re.M)[1:]
    assert [c.splitlines()[0] for c in causes] == [
        f"{FIX_FIRST['title']} (high; steps 36-60)",
        f"{RUNNER_UP['title']} (high; steps 25-26)",
    ]
    restart = next(c for c in causes if c.startswith(FIX_FIRST["title"]))
    assert "- **Symptoms it explains (1):**" in restart and SYMPTOM["title"] in restart
    assert (
        "- **Confirm the fix worked:**" in restart
        and "- **Fix:**" in restart
        and "- **Estimate:**" in restart
    )
    assert "steps 36-40 logged twice (5 rows superseded) · learning rate after the restart" in restart
    spikes = next(c for c in causes if c.startswith(RUNNER_UP["title"]))
    assert SYMPTOM["title"] not in spikes
    glitches = two.split("## Log and record glitches")[1]
    assert "| Glitch | Steps | Rows | What to do |" in glitches
    assert (
        "| One train-log row is an exact duplicate. | step 10 | 1 | Deduplicate on (step, "
        "attempt) when logging. |" in glitches
    )
    assert not any(c.startswith("One train-log row") for c in causes)


def test_severity_never_rises_down_a_list(problem: dict[str, Path]) -> None:
    from run_diagnosis.report_data import severity_index

    md = read(problem, "markdown")
    severities = re.findall(r"^### \d+\. .* \((\w+); [^)]*\)$", md, flags=re.M)
    appendix = re.findall(r"^\| \d+ \| (\w+) \|", md, flags=re.M)
    for listed in (severities, appendix):
        assert listed and [severity_index(s) for s in listed] == sorted(severity_index(s) for s in listed)


def test_labels_say_what_the_numbers_are(problem: dict[str, Path]) -> None:
    md = read(problem, "markdown")
    assert "| Best evaluation | step 40, val loss 2.610 |" in md
    assert "| Last saved checkpoint | step 50, val loss 2.615 |" in md
    assert "| Summed step time (counted steps) |" in md
    assert "Wall clock" not in md and "Best checkpoint" not in md


def test_split_evidence_keeps_quoted_text_and_percentages_keep_one_decimal() -> None:
    from run_diagnosis.report_content import fmt_pct, split_evidence

    evidence = (
        'crash: step 137 "worker exited (timeout on rank 5); job terminated"; resumed from step 100 (a; b)'
    )
    assert split_evidence(evidence) == [
        'crash: step 137 "worker exited (timeout on rank 5); job terminated"',
        "resumed from step 100 (a; b)",
    ]
    assert fmt_pct(16 / 19) == "84.2%" and fmt_pct(0.5) == "50.0%"


def test_the_whole_markdown_report_stays_short(problem: dict[str, Path], costed: dict[str, Path]) -> None:
    for paths in (problem, costed):
        assert len(read(paths, "markdown").splitlines()) <= 150


def test_the_report_is_deterministic(tmp_path: Path) -> None:
    db = fx.build_db(tmp_path / "run.duckdb", fx.problem_tables())
    target = fx.write_target(tmp_path / "target", fx.TESTS_PROBLEM)
    first = write_report(db, target, tmp_path / "a", progress=None)
    second = write_report(db, target, tmp_path / "b", progress=None)
    for kind in ("markdown", "findings"):
        assert first[kind].read_bytes() == second[kind].read_bytes()
    strip = lambda p: re.sub(r"<footer>.*?</footer>", "", p.read_text())  # noqa: E731
    assert strip(first["html"]) == strip(second["html"])
    md = read(first, "markdown")
    assert not re.search(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}", md) and str(tmp_path) not in md


def test_appendix_lists_broken_dbt_nodes_and_page_one_warns(tmp_path: Path) -> None:
    broken = (
        ("model.run_diagnosis.stg_training__evals", "error", "Conversion Error:\n  could not cast 'x'"),
        ("unit_test.run_diagnosis.findings.test_ranking", "fail", "actual differs"),
        ("model.run_diagnosis.findings", "success", None),
    )
    root = tmp_path / "run"
    root.mkdir()
    fx.write_target(root / "target", fx.TESTS_PROBLEM, other_nodes=broken)
    md = read(
        write_report(
            fx.build_db(root / "db.duckdb", fx.problem_tables()), root / "target", root / "out", None
        ),
        "markdown",
    )
    checks = md.split("### Checks")[1]
    assert "- model model.run\\_diagnosis" not in checks  # underscores are not escaped
    assert (
        "- model model.run_diagnosis.stg_training__evals error in the last build: Conversion Error: could"
        in checks
    )
    assert "- unit_test unit_test.run_diagnosis.findings.test_ranking fail in the last build" in checks
    assert "run_diagnosis.findings success" not in checks
    assert "- dbt tests that failed or warned: 3: `assert_lr_matches_schedule`" in checks
    first = page_one(md).split("## What happened")[0]  # said before the story
    assert "## This diagnosis is INCOMPLETE" in first
    assert "Did not build: model stg_training__evals (error): Conversion Error: could not cast 'x'" in first
    assert "Did not build: unit_test test_ranking (fail): actual differs" in first
    assert "The last build failed (2 nodes did not build): the diagnosis is incomplete" in page_one(md)


def test_rows_that_do_not_add_up_and_tables_that_disagree_reach_the_appendix(tmp_path: Path) -> None:
    tables = fx.problem_tables()
    tables["audit_summary"] = [r for r in tables["audit_summary"] if r[2] != "exact duplicate row"]
    tables["run_summary"] = [fx.with_value(tables["run_summary"][0], "run_summary", n_findings=7)]
    md = read(make_report(tmp_path, tables, fx.TESTS_PROBLEM), "markdown")
    assert "train: 60 kept + 5 set aside = 65, but the file has 66 raw rows: does NOT add up" in md
    assert "- Disagreement: run_summary.n_findings is 7 but findings has 4 rows." in md
    assert "The tables behind this report disagree in 1 place (appendix)." in page_one(md)


def test_clean_run_says_nothing_is_wrong_above_low(clean: dict[str, Path]) -> None:
    for kind in ("markdown", "html"):
        text = read(clean, kind)
        assert "Nothing serious found: no finding above low severity." in text
        assert "4 of 16 checks could not run because: no shard ids in the log (bad_data_shard); " in text
        assert "; no evaluations in the log (eval_contamination, overfitting);" in text
        assert "Fix first" not in text
        assert "30 counted of 30 train rows logged" in text
        assert "The run logged no evaluations, so its validation trajectory is unknown." in text
        assert "It is not flagged as unstable" in text
    assert "Validation loss: not logged (no evaluations)." in read(clean, "html")
    md = read(clean, "markdown")
    assert "| Best evaluation | not logged (no evaluations) |" in md
    assert "- Check not run: `grad_clip_violation`: no grad_norm in the log" in md


def test_a_low_finding_alone_is_still_nothing_above_low(tmp_path: Path) -> None:
    tables = fx.clean_tables()
    low = fx.PROBLEM_FINDINGS[3]
    tables["findings"] = [fx.as_row("findings", **{**low, "harm_rank": 1})]
    md = read(make_report(tmp_path, tables, []), "markdown")
    assert "**Nothing serious found: no finding above low severity." in md
    assert "Fix first" not in md  # a low note is never the one to fix first
    assert f"| {low['title']} | step 10 | 1 |" in md


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
            r'<img id="([^"]+)" alt="([^"]+)" src="data:image/svg\+xml;base64,[A-Za-z0-9+/=]{200,}">', fig
        )
        assert img, fig[:200]
        ids.append(img.group(1))
        assert "<figcaption><strong>" in fig
    assert ids == ["plot-loss", "plot-eval", "plot-lr", "plot-grad", "plot-shards", "plot-step-time"]
    assert "The purple band marks the steps of the problem to fix first." in figures[0]
    assert "Dashed lines: checkpoints saved (from the events); the last one is step 50." in figures[1]
    zooms = re.findall(r'<figure class="zoom"><img id="(zoom-[^"]+)"', page)
    assert zooms == ["zoom-run-restart-040", "zoom-loss-spikes-025"]  # with their causes, page two order


def test_html_links_caused_by_to_the_root_cause_and_every_anchor_resolves(problem: dict[str, Path]) -> None:
    page = read(problem, "html")
    details = page.split('<details class="finding" id="finding-lr-schedule-mismatch-036">')[1].split(
        "</details>"
    )[0]
    assert '<dt>Caused by</dt><dd><a href="#finding-run-restart-040">#1 “' in details
    ids = set(re.findall(r'\sid="([^"]+)"', page))
    targets = set(re.findall(r'href="#([^"]+)"', page))
    assert targets and targets <= ids
    assert {"page-one", "plots", "causes", "glitches", "appendix", "dbt-tests", "fix-first"} <= ids


def test_html_puts_page_one_first_prints_well_and_dates_only_the_footer(problem: dict[str, Path]) -> None:
    page = read(problem, "html")
    assert page.index('id="page-one"') < page.index('id="plots"') < page.index('id="causes"')
    assert "@media print" in page
    assert re.search(r"<footer>Written \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC from the marts in", page)
    assert len(re.findall(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", page)) == 1


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
        con.execute("alter table main.findings drop column caused_by")
    with pytest.raises(ReportError, match=r"findings lacks caused_by"):
        write_report(db, tmp_path, tmp_path / "out", progress=None)


# --------------------------------------------------------------------------- CLI


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "RUN_DIAGNOSIS_DB"} | (env or {})
    return subprocess.run(
        [*REPORT, *args],
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
def test_reports_render_in_headless_chromium(
    problem: dict[str, Path], clean: dict[str, Path], tmp_path: Path
) -> None:
    from support.report_browser import browser_installed, check_pages

    if not browser_installed(CHROMIUM):
        pytest.skip(f"needs {CHROMIUM}")

    # a page that must fail every check, to prove the checks can fail
    control = tmp_path / "control.html"
    control.write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
        '<img id="broken" alt="broken" src="data:image/svg+xml;base64,AAAA">'
        '<script>console.error("control error")</script></body></html>'
    )
    checked_problem, checked_clean, checked_control = check_pages([problem["html"], clean["html"], control])

    assert checked_control.console_errors == ["console.error: control error"]
    assert [img["id"] for img in checked_control.broken_images] == ["broken"]

    # the six plots of the run, and a zoom on each of the problem run's two causes with steps
    for checked, n_images in ((checked_problem, 8), (checked_clean, 3)):
        assert checked.console_errors == []
        assert checked.external_requests == []
        assert len(checked.images) == n_images
        assert checked.broken_images == []
        assert all(img["naturalWidth"] > 300 and img["naturalHeight"] > 100 for img in checked.images)
    assert checked_problem.title == "Run diagnosis: fixture-60"


# --------------------------------------------------------------------------- page one in the docs


def test_the_docs_show_page_one_of_the_committed_sample_diagnosis() -> None:
    from report_readme import page_one as readme_page_one
    from report_readme import with_page_one

    document = (REPO / "docs" / "report-contents.md").read_text(encoding="utf-8")
    sample = (REPO / "analyses" / "sample_run_diagnosis.md").read_text(encoding="utf-8")
    assert with_page_one(document, sample) == document, (
        "page one in docs/report-contents.md is stale: run bash scripts/diagnose_sample.sh"
    )
    block = readme_page_one(sample)
    assert block.startswith("### What happened") and "\n### Fix first: " in block
    assert "## Causes and their symptoms" not in block


# --------------------------------------------------------------------------- several runs


def test_an_index_lists_several_runs_with_their_fix_first(tmp_path: Path) -> None:
    from run_diagnosis.report_index import write_index

    for name, tables in (("b-problem", fx.problem_tables()), ("a-clean", fx.clean_tables())):
        root = tmp_path / "runs" / name
        root.mkdir(parents=True)
        write_report(fx.build_db(root / "run.duckdb", tables), root / "no-target", root, progress=None)
    paths = write_index(tmp_path / "runs")
    md = paths["markdown"].read_text()
    rows = [line for line in md.splitlines() if line.startswith("| ") and "report.md" in line]
    assert rows == [
        "| imported-clean | none | 0 of 0 | nothing above low severity | [report](a-clean/report.md) |",
        f"| fixture-60 | high | 3 of 4 | {FIX_FIRST['title']} | [report](b-problem/report.md) |",
    ]
    assert "## fixture-60\n\nThe run fixture-60 logged 60 steps of 60 configured." in md
    assert 'href="b-problem/report.html"' in paths["html"].read_text()
    assert write_index(tmp_path / "runs") and paths["markdown"].read_text() == md  # deterministic


def test_an_index_without_reports_is_a_clear_error(tmp_path: Path) -> None:
    from run_diagnosis.report_index import main

    assert main([str(tmp_path)]) == 1


def test_causes_are_named_plainly_in_running_text() -> None:
    from run_diagnosis.report_story import short

    shard = {
        "finding_id": "bad_data_shard:8",
        "category": "bad_data_shard",
        "first_step": 89,
        "last_step": 112,
        # its category's row of check_catalog (report_data attaches it; the words are the check folder's)
        "catalog": {"plain_name": "the bad data in shard {key}"},
    }
    assert short({**shard, "title": "Shard 8 is bad data: its loss ran 96.0% above"}) == (
        "the bad data in shard 8 (steps 89-112)"
    )
    no_key = {**shard, "finding_id": "bad_data_shard", "title": "Shard 8 is bad data: its loss ran high"}
    assert short(no_key) == "Shard 8 is bad data"
    unknown = {
        "finding_id": "x:1",
        "category": "new_check",
        "title": "Something odd; more detail",
        "catalog": {},
    }
    assert short(unknown) == "Something odd"


def test_a_cost_within_noise_is_not_written_as_a_measurement() -> None:
    priced = {
        "val_loss_cost": 0.12,
        "val_loss_cost_low": 0.05,
        "val_loss_cost_high": 0.2,
        "val_loss_cost_share": 0.04,
    }
    assert fmt_model_cost(priced) == "0.120 (0.050 to 0.200) of final validation loss, 4.0%"
    noisy = {
        **priced,
        "val_loss_cost": 0.01,
        "val_loss_cost_low": -0.03,
        "cost_within_noise": True,
        "noise_floor": 0.04,
    }
    assert (
        fmt_model_cost(noisy) == "within noise (-0.030 to 0.200 of final validation loss; noise floor 0.040)"
    )
    assert "0.010" not in fmt_model_cost(noisy)
