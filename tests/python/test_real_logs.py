"""Real public training logs: each imports, builds, and gets what SOURCES.md says a person sees.

The logs are read in place from ../shared/real-logs (not ours to redistribute: never copied
into the repo); the module is skipped when they are absent. Each log is imported and built
once: the logs of the selected tests are imported when the module's first test asks for
one and built together in ONE `dbt build` (a folder of run folders, run_id = the log's key;
without the data tests unless RUN_DIAGNOSIS_REAL_LOGS_FULL=1), so dbt's per-build cost is
paid once; each log's diagnosis reads only its own rows (tests/python/support/dbt_session.py). Every test
class checks one log against SOURCES.md; an expectation the current models do not meet is an
`xfail(strict=True)` whose reason says what is produced instead,
so fixing the detector turns it into an XPASS to clean up.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import pytest

from run_diagnosis import importers
from run_diagnosis.dbt_runner import BuildResult, build_run
from run_diagnosis.importers.canonical import RunData, write_run
from run_diagnosis.report_content import build_double_check
from run_diagnosis.report_data import ReportData, load_report_data
from run_diagnosis.report_story import PageOne, build_page_one, run_numbers
from support.dbt_session import DB_NAME, THREADS, run_connection
from support.paths import REAL_LOGS
from support.severity_agreement import ANOMALY_TEST, describe, disagreements

ABOVE_LOW = frozenset({"critical", "high", "medium"})
HIGH_OR_WORSE = frozenset({"critical", "high"})
SEVERITIES = frozenset({"critical", "high", "medium", "low", "info"})
# Left out of the real-log builds: unit tests always (fixed inputs: the same answer for every
# log), data tests other than the anomaly tests unless RUN_DIAGNOSIS_REAL_LOGS_FULL=1 (they are
# half of each build's CPU; the marts these tests read do not depend on them, and the findings'
# keys are checked below). The anomaly tests always run: their stored failures and the problem
# list dbt prints are compared with the findings mart, findings.json and the report.
FULL_BUILD = os.environ.get("RUN_DIAGNOSIS_REAL_LOGS_FULL") == "1"
EXCLUDE = "resource_type:unit_test"
SELECT = None if FULL_BUILD else f"resource_type:seed resource_type:model test_name:{ANOMALY_TEST}"
# RUN_DIAGNOSIS_REAL_LOGS_SUMMARY=file: append every log's findings table to that file
SUMMARY = os.environ.get("RUN_DIAGNOSIS_REAL_LOGS_SUMMARY")
GRAD_NORM_TEXT = re.compile(r"grad(?:ient)?[ _-]?norm", re.IGNORECASE)
# The findings each log had when a restructuring began (tests/golden/real_logs_findings.json):
# a move of code must leave every one unchanged. RUN_DIAGNOSIS_UPDATE_GOLDEN=1 rewrites the
# file, for a change that is meant to change findings (say which and why in the commit).
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "real_logs_findings.json"
UPDATE_GOLDEN = os.environ.get("RUN_DIAGNOSIS_UPDATE_GOLDEN") == "1"
# the finding fields compared, floats to this many significant digits (a reordered float sum
# may move the last bits; a changed rule moves more)
GOLDEN_FIELDS = (
    "finding_id",
    "category",
    "severity",
    "first_step",
    "last_step",
    "steps_affected",
    "estimated_cost",
    "cost_unit",
    "caused_by",
    "harm_rank",
)
GOLDEN_DIGITS = 6

pytestmark = [
    pytest.mark.real_logs,
    pytest.mark.skipif(not REAL_LOGS.is_dir(), reason=f"{REAL_LOGS} is absent: the real logs are not here"),
]

# log key -> path under real-logs (SOURCES.md sections A and B)
LOGS: dict[str, str] = {
    "hf-tinyllama-sft": "hf-tinyllama-sft",
    "hf-jaong-cpt-10epoch": "hf-jaong-cpt-10epoch",
    "hf-whisper-ja-overfit": "hf-whisper-ja-overfit",
    "hf-law-llm-loss-mismatch": "hf-law-llm-loss-mismatch",
    "hf-qwen05b-verifier": "hf-qwen05b-verifier",
    "llamafactory-mistral7b-lora": "llamafactory-mistral7b-lora",
    "llmc-gpt2-124m": "llmc-gpt2-124m/main.log",
    "megatron-deepspeed-with-kernel": (
        "megatron-deepspeed-gpt3-125m/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-with-kernel.log"
    ),
    "megatron-deepspeed-baseline": (
        "megatron-deepspeed-gpt3-125m/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-baseline.log"
    ),
    "megatron-lm-golden-values": "megatron-lm-golden-values",
    "lightning-version_0": "lightning-slm-sweep/version_0",
    "lightning-version_3": "lightning-slm-sweep/version_3",
    "lightning-version_19": "lightning-slm-sweep/version_19",
    # SOURCES.md section C
    "gan-version_0": "lightning-gan-nan-versions/version_0",
    "gan-version_1": "lightning-gan-nan-versions/version_1",
    "gan-version_2": "lightning-gan-nan-versions/version_2",
    "gan-version_3": "lightning-gan-nan-versions/version_3",
    "gan-version_6": "lightning-gan-nan-versions/version_6",
    "gan-version_12": "lightning-gan-nan-versions/version_12",
    "tb-lightning-satd-stepdecay": "tb-lightning-satd-stepdecay",
    "tb-hf-gpt2ja-evalontrain": "tb-hf-gpt2ja-evalontrain",
    "tb-lightning-fractaldb-short": "tb-lightning-fractaldb-short",
    "wandb-alpaca-v7i3k2p0": "wandb-alpaca-llama7b-runs/run-20231102_033502-v7i3k2p0",
    "wandb-imdb-t2wihhdg": "wandb-imdb-optimizer-sweep/run-20230329_015729-t2wihhdg",
    "wandb-imdb-r8mtbfdx": "wandb-imdb-optimizer-sweep/run-20230329_015319-r8mtbfdx",  # a partial copy
    "wandb-imdb-dnevcmuk": "wandb-imdb-optimizer-sweep/run-20230329_030534-dnevcmuk",  # its summary alone
    "llamafactory-qwen7b-medical-overfit": "llamafactory-qwen7b-medical-overfit",
    "llamafactory-nsllm-slow-healthy": "llamafactory-nsllm-slow-healthy",
    "llamafactory-loss-zero-collapse": "llamafactory-loss-zero-collapse",
    "llamafactory-luojiu7b-nowarmup": "llamafactory-luojiu7b-nowarmup",
    "hf-dpo-tinyllama-eval-plateau": "hf-dpo-tinyllama-eval-plateau",
    "hf-smolvlm-endoscopy-bigstart": "hf-smolvlm-endoscopy-bigstart",
    "hf-lora-flat-loss": "hf-lora-flat-loss",
    "hf-medbot-lora-healthy": "hf-medbot-lora-healthy",
    "hf-chatglm-ptuning-memorize": "hf-chatglm-ptuning-memorize",
    "nanogpt-resume": "nanogpt-gpt2-124m-resume-2epoch",
    "nanogpt-healthy": "nanogpt-gpt2-124m-healthy",
}
# logs no importer reads yet (their import test is an xfail)
UNREADABLE: frozenset[str] = frozenset()

# log key -> (detected format, train rows, evaluations) as SOURCES.md counts them
# (None: SOURCES.md gives no exact count)
IMPORTED: dict[str, tuple[str, int | None, int | None]] = {
    "hf-tinyllama-sft": ("hf_trainer_state", 186, 14),
    "hf-jaong-cpt-10epoch": ("hf_trainer_state", 10, 10),
    "hf-whisper-ja-overfit": ("hf_trainer_state", 200, 5),
    "hf-law-llm-loss-mismatch": ("hf_trainer_state", 6, 6),
    "hf-qwen05b-verifier": ("hf_trainer_state", 24, 6),
    "llamafactory-mistral7b-lora": ("llamafactory_log", 866, 0),
    "llmc-gpt2-124m": ("text_log", 19552, 80),
    "megatron-deepspeed-with-kernel": ("text_log", 213, 21),
    "megatron-deepspeed-baseline": ("text_log", 47, 4),
    "megatron-lm-golden-values": ("megatron_golden_values", 100, 0),
    "lightning-version_0": ("lightning_csv", None, 20),
    "lightning-version_3": ("lightning_csv", None, 4),
    "lightning-version_19": ("lightning_csv", None, 4),
    "gan-version_0": ("lightning_csv", 320, 0),
    "gan-version_1": ("lightning_csv", 320, 0),
    "gan-version_2": ("lightning_csv", 320, 0),
    "gan-version_3": ("lightning_csv", 320, 0),
    "gan-version_6": ("lightning_csv", 320, 0),
    "gan-version_12": ("lightning_csv", 200, 0),
    "tb-lightning-satd-stepdecay": ("tensorboard", 240, 120),
    "tb-hf-gpt2ja-evalontrain": ("tensorboard", 6, 1),
    "tb-lightning-fractaldb-short": ("tensorboard", 78, 2),  # valid_loss_epoch: 1.0123, 0.9833
    "wandb-alpaca-v7i3k2p0": ("wandb_run", 1218, 0),
    "wandb-imdb-t2wihhdg": ("wandb_run", 2912, 0),
    "wandb-imdb-r8mtbfdx": ("wandb_run", 3957, 0),
    "wandb-imdb-dnevcmuk": ("wandb_run", 1, 1),  # the summary's final values: one row, one accuracy
    "llamafactory-qwen7b-medical-overfit": ("llamafactory_log", 675, 13),
    "llamafactory-nsllm-slow-healthy": ("llamafactory_log", 435, 0),
    "llamafactory-loss-zero-collapse": ("llamafactory_log", 37, 0),
    "llamafactory-luojiu7b-nowarmup": ("llamafactory_log", 1742, 0),
    "hf-dpo-tinyllama-eval-plateau": ("hf_trainer_state", 291, 29),
    "hf-smolvlm-endoscopy-bigstart": ("hf_trainer_state", 90, 18),
    "hf-lora-flat-loss": ("hf_trainer_state", 100, 0),
    "hf-medbot-lora-healthy": ("hf_trainer_state", 642, 0),
    "hf-chatglm-ptuning-memorize": ("hf_trainer_state", 300, 0),
    "nanogpt-resume": ("text_log", 38147, 156),
    "nanogpt-healthy": ("text_log", 19073, 78),
}

# logs written at a regular interval (every N steps): none has a real hole in its step sequence
REGULAR_INTERVAL_LOGS = [
    key
    for key in LOGS
    if key not in {"megatron-lm-golden-values", "llmc-gpt2-124m", "gan-version_0", "gan-version_1"}
    and key not in UNREADABLE
    and not key.startswith("nanogpt")
]


@dataclass(frozen=True)
class Diagnosis:
    """One real log, imported and built: the run as imported and the marts as built (the
    build holds the module's other logs too: `query` sees this log's rows only)."""

    key: str
    source_format: str
    run: RunData
    build: BuildResult
    findings: list[dict[str, Any]]  # the findings mart, fix-first order

    def query(self, sql: str) -> list[dict[str, Any]]:
        return records(log_connection(self.build.db_path, self.key).execute(sql))

    def of(self, *categories: str) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["category"] in categories]

    def one(self, category: str) -> dict[str, Any]:
        found = self.of(category)
        assert len(found) == 1, f"expected one {category} finding in {self.key}:\n{self.table()}"
        return found[0]

    def fix_first(self) -> dict[str, Any] | None:
        return self.findings[0] if self.findings else None

    def above(self, severities: frozenset[str]) -> list[str]:
        return [f["finding_id"] for f in self.findings if f["severity"] in severities]

    def table(self) -> str:
        """The findings as the compact table the tests print on failure."""
        rows = [f"  {f['severity']:<8} {f['finding_id']:<38} {str(f['title'])[:110]}" for f in self.findings]
        return "\n".join(rows) or "  (no findings)"


def records(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [column[0] for column in cursor.description or []]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@functools.cache
def log_connection(db_path: Path, key: str) -> duckdb.DuckDBPyConnection:
    """One log's rows of the shared build (views `main.<table>`), opened once per log."""
    return run_connection(db_path, key)


def import_log(key: str, runs: Path) -> tuple[str, RunData]:
    """Import one real log and write its canonical files into runs/<key>/ (run_id = key)."""
    source = REAL_LOGS / LOGS[key]
    module = importers.detect(source)
    run = module.load(source)
    write_run(run, runs / key)
    return module.FORMAT, run


def diagnose_logs(keys: list[str], work: Path) -> dict[str, Diagnosis]:
    """Import the logs, build them all in ONE dbt build (a folder of run folders), and read
    each log's findings back."""
    imported = {key: import_log(key, work / "runs") for key in keys}
    build = build_run(
        work / "runs",
        work / DB_NAME,
        work / "dbt",
        select=SELECT,
        exclude=EXCLUDE,
        indirect_selection=None if FULL_BUILD else "empty",
        threads=THREADS,
    )
    diagnoses: dict[str, Diagnosis] = {}
    with duckdb.connect(str(build.db_path), read_only=True) as con:
        for key, (source_format, run) in imported.items():
            sql = "select * from main.findings where run_id = ? order by harm_rank, finding_id"
            findings = records(con.execute(sql, [key]))
            diagnoses[key] = diagnosis = Diagnosis(key, source_format, run, build, findings)
            if SUMMARY:  # one block per log, for comparing rule changes across the corpus
                with Path(SUMMARY).open("a", encoding="utf-8") as handle:
                    counts = f"train={len(run.train)} evals={len(run.evals)}"
                    handle.write(f"== {key} [{source_format}] {counts}\n")
                    handle.write(diagnosis.table() + "\n")
    return diagnoses


class Diagnoses:
    """The real logs the selected tests need, imported and built together when the module's
    first test asks for one (a log asked for later is built in a batch of its own)."""

    def __init__(self, work: Path, wanted: Iterable[str]) -> None:
        self._work = work
        self._wanted = [key for key in wanted if (REAL_LOGS / LOGS[key]).exists()]
        self._built: dict[str, Diagnosis] = {}

    def get(self, key: str) -> Diagnosis:
        if not (REAL_LOGS / LOGS[key]).exists():
            pytest.skip(f"{REAL_LOGS / LOGS[key]} is absent")
        if key not in self._built:
            batch = [k for k in self._wanted if k not in self._built] if key in self._wanted else [key]
            self._built.update(diagnose_logs(batch, self._work / f"batch_{len(self._built)}"))
        return self._built[key]


def _log_of(item: pytest.Item) -> str | None:
    """The log a collected test needs built, if any."""
    if "diagnosis" not in getattr(item, "fixturenames", ()):
        return None
    callspec = getattr(item, "callspec", None)
    return getattr(item.cls, "LOG", None) or (callspec.params.get("log_key") if callspec else None)


@pytest.fixture(scope="module")
def diagnoses(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Diagnoses:
    here = Path(__file__).resolve()
    selected = [_log_of(item) for item in request.session.items if Path(item.path).resolve() == here]
    wanted = list(dict.fromkeys(key for key in selected if key))
    return Diagnoses(tmp_path_factory.mktemp("real-logs"), wanted)


@pytest.fixture
def diagnosis(request: pytest.FixtureRequest, diagnoses: Diagnoses) -> Diagnosis:
    key = getattr(request.cls, "LOG", None) or request.node.callspec.params["log_key"]
    return diagnoses.get(key)


# ---------------------------------------------------------------- every log


UNREADABLE_REASON = "no importer reads this format yet"


@pytest.mark.parametrize(
    "log_key",
    [
        pytest.param(key, marks=pytest.mark.xfail(strict=True, reason=UNREADABLE_REASON))
        if key in UNREADABLE
        else key
        for key in LOGS
    ],
)
def test_imports_and_builds(diagnosis: Diagnosis, log_key: str) -> None:
    fmt, n_train, n_evals = IMPORTED[log_key]
    assert diagnosis.source_format == fmt
    assert diagnosis.build.ok and diagnosis.build.n_error == 0
    if n_train is not None:
        assert len(diagnosis.run.train) == n_train
    if n_evals is not None:
        assert len(diagnosis.run.evals) == n_evals
    counted = diagnosis.query("select count(*) as n from main.step_metrics where is_counted")[0]["n"]
    replayed = len(diagnosis.run.train) - diagnosis.run.train["step"].nunique()  # a resume re-logs steps
    assert counted == len(diagnosis.run.train) - replayed, "every imported train row is a counted step"
    ids = [f["finding_id"] for f in diagnosis.findings]
    assert all(ids) and len(set(ids)) == len(ids), ids
    assert {f["severity"] for f in diagnosis.findings} <= SEVERITIES
    assert [f["harm_rank"] for f in diagnosis.findings] == list(range(1, len(ids) + 1))


def golden_view(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The compared fields of each finding, floats rounded to GOLDEN_DIGITS significant digits."""

    def rounded(value: Any) -> Any:
        return float(f"{value:.{GOLDEN_DIGITS}g}") if isinstance(value, float) else value

    return [{field: rounded(f.get(field)) for field in GOLDEN_FIELDS} for f in findings]


@pytest.mark.parametrize("log_key", list(LOGS))
def test_findings_match_golden(diagnosis: Diagnosis, log_key: str) -> None:
    """Every log's findings are those recorded in tests/golden/real_logs_findings.json."""
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    now = golden_view(diagnosis.findings)
    if UPDATE_GOLDEN:
        golden[log_key] = now
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        return
    assert log_key in golden, f"{log_key} has no golden findings: RUN_DIAGNOSIS_UPDATE_GOLDEN=1 records them"
    assert now == golden[log_key], f"{log_key}'s findings changed:\n{diagnosis.table()}"


@pytest.mark.parametrize("log_key", list(LOGS))
def test_severity_and_rank_agree_everywhere(diagnosis: Diagnosis, log_key: str) -> None:
    """Every finding's final severity and rank are the same in the findings mart, the stored
    failures of its anomaly test, the problem list dbt printed, findings.json and report.md."""
    build = diagnosis.build
    found = disagreements(build.db_path, build.target_path, build.output, [log_key], several_runs=True)
    assert not found, describe(found)


@pytest.mark.parametrize("log_key", REGULAR_INTERVAL_LOGS)
def test_regular_logging_interval_is_not_a_gap(diagnosis: Diagnosis, log_key: str) -> None:
    assert not diagnosis.of("step_sequence"), diagnosis.table()


# ---------------------------------------------------------------- A. Hugging Face Trainer


class TestTinyllamaCleanRun:
    """SOURCES.md A1: a clean run; eval loss falls 1.62 -> 1.122 and flattens."""

    LOG: ClassVar[str] = "hf-tinyllama-sft"

    def test_no_model_quality_problem(self, diagnosis: Diagnosis) -> None:
        problems = (
            "overfitting",
            "loss_spikes",
            "nan_loss",
            "no_learning",
            "underfitting",
            "eval_contamination",
        )
        assert not diagnosis.of(*problems), diagnosis.table()

    def test_best_eval_is_the_last(self, diagnosis: Diagnosis) -> None:
        best = diagnosis.query("select step, val_loss from main.eval_metrics where is_best")
        assert [(b["step"], round(b["val_loss"], 3)) for b in best] == [(2800, 1.122)]

    def test_nothing_above_low(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.above(ABOVE_LOW), diagnosis.table()


class TestJaongOverfitting:
    """SOURCES.md A2: eval loss lowest at epoch 6 (0.4853), then up to 0.4917; train loss falls."""

    LOG: ClassVar[str] = "hf-jaong-cpt-10epoch"
    EPOCH_6_EVAL_STEP: ClassVar[int] = 3294  # 549 steps per epoch

    def test_overfitting_from_epoch_6(self, diagnosis: Diagnosis) -> None:
        finding = diagnosis.one("overfitting")
        assert finding["first_step"] == self.EPOCH_6_EVAL_STEP
        assert finding["expected_value"] == pytest.approx(0.4853, abs=1e-4)
        assert finding["observed_value"] == pytest.approx(0.4917, abs=1e-4)

    def test_overfitting_is_fix_first(self, diagnosis: Diagnosis) -> None:
        assert (diagnosis.fix_first() or {}).get("category") == "overfitting", diagnosis.table()

    def test_finished_run_is_not_short(self, diagnosis: Diagnosis) -> None:
        assert "config_mismatch:total_steps" not in diagnosis.above(ABOVE_LOW | {"low"}), diagnosis.table()

    def test_training_loss_is_known_at_each_eval(self, diagnosis: Diagnosis) -> None:
        rows = diagnosis.query("select step, train_loss_smoothed from main.eval_metrics order by step")
        assert all(r["train_loss_smoothed"] is not None for r in rows), rows


class TestWhisperOverfitting:
    """SOURCES.md A3: textbook overfitting, eval loss rises from the first eval 0.321 to 0.420."""

    LOG: ClassVar[str] = "hf-whisper-ja-overfit"

    def test_overfitting_from_the_first_eval(self, diagnosis: Diagnosis) -> None:
        finding = diagnosis.one("overfitting")
        assert finding["first_step"] == 1000
        assert finding["expected_value"] == pytest.approx(0.321, abs=5e-4)
        assert finding["observed_value"] == pytest.approx(0.420, abs=5e-4)
        assert finding["severity"] in ABOVE_LOW

    def test_best_eval_is_the_first(self, diagnosis: Diagnosis) -> None:
        best = diagnosis.query("select step from main.eval_metrics where is_best")
        assert [b["step"] for b in best] == [1000]

    def test_overfitting_is_fix_first(self, diagnosis: Diagnosis) -> None:
        assert (diagnosis.fix_first() or {}).get("category") == "overfitting", diagnosis.table()


class TestLawLossScaleMismatch:
    """SOURCES.md A4: train loss ~16x eval loss all run (unnormalised loss), huge early grad norm."""

    LOG: ClassVar[str] = "hf-law-llm-loss-mismatch"

    def test_scale_mismatch_found(self, diagnosis: Diagnosis) -> None:
        found = [f for f in diagnosis.findings if f["finding_id"] == "log_quality:loss_scale_mismatch"]
        assert found, diagnosis.table()
        # a log-quality finding sits in the records ledger (final severity at most low)
        assert found[0]["detector_severity"] in ABOVE_LOW

    def test_not_read_as_contamination(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.of("eval_contamination", "overfitting"), diagnosis.table()

    def test_ratio_is_the_logged_one(self, diagnosis: Diagnosis) -> None:
        rows = diagnosis.query(
            "select train_loss_smoothed / val_loss as ratio from main.eval_metrics where step >= 400"
        )
        ratios = sorted(r["ratio"] for r in rows)
        assert 10 <= ratios[len(ratios) // 2] <= 25, ratios

    def test_early_grad_norm_blowup_found(self, diagnosis: Diagnosis) -> None:
        assert any(grad_finding_at(f, 100, 200) for f in diagnosis.findings), diagnosis.table()

    def test_only_the_mismatch_above_low(self, diagnosis: Diagnosis) -> None:
        extra = [i for i in diagnosis.above(ABOVE_LOW) if i != "log_quality:loss_scale_mismatch"]
        assert not [i for i in extra if not i.startswith("grad")], diagnosis.table()


def grad_finding_at(finding: dict[str, Any], first: int, last: int) -> bool:
    """A finding about the gradient norm that starts within [first, last]."""
    step = finding["first_step"]
    text = f"{finding['title']} {finding['evidence']}"
    return bool(GRAD_NORM_TEXT.search(text)) and step is not None and first <= step <= last


class TestQwenEarlyGradNorms:
    """SOURCES.md A5: large early grad norms (33.4 at step 5 vs median ~4), eval improves throughout."""

    LOG: ClassVar[str] = "hf-qwen05b-verifier"

    def test_eval_improves_throughout(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.of("overfitting", "no_learning", "underfitting"), diagnosis.table()
        best = diagnosis.query("select step from main.eval_metrics where is_best")
        assert [b["step"] for b in best] == [120]

    def test_early_grad_norms_found(self, diagnosis: Diagnosis) -> None:
        assert any(grad_finding_at(f, 1, 25) for f in diagnosis.findings), diagnosis.table()


class TestMistralStaircase:
    """SOURCES.md A6: 4 epochs, loss drops sharply at each epoch boundary (memorisation), steady speed."""

    LOG: ClassVar[str] = "llamafactory-mistral7b-lora"
    STEPS_PER_EPOCH: ClassVar[int] = 2165  # 8660 steps / 4 epochs

    def test_step_times_from_elapsed_time(self, diagnosis: Diagnosis) -> None:
        row = diagnosis.query("select median(step_time_sec) as median from main.step_metrics")[0]
        assert row["median"] == pytest.approx(2.4, abs=0.2)  # ~24 s per 10 steps
        assert not diagnosis.of("slow_steps"), diagnosis.table()

    def test_multi_epoch_staircase_found(self, diagnosis: Diagnosis) -> None:
        finding = diagnosis.one("data_repetition")
        assert self.STEPS_PER_EPOCH - 50 <= finding["first_step"] <= self.STEPS_PER_EPOCH + 50


# ---------------------------------------------------------------- B. other formats


class TestLlmcPretraining:
    """SOURCES.md B7: a healthy GPT-2 124M run; val 11.01 -> 3.273; one grad-norm spike 4.29 at 8715."""

    LOG: ClassVar[str] = "llmc-gpt2-124m"

    def test_healthy_run(self, diagnosis: Diagnosis) -> None:
        # apart from the post-warmup gradient bursts SOURCES.md points at (4.29 at step 8715)
        above = [i for i in diagnosis.above(ABOVE_LOW) if not i.startswith("grad_norm_spikes:")]
        assert not above, diagnosis.table()
        assert not diagnosis.of("overfitting", "no_learning", "underfitting"), diagnosis.table()

    def test_best_val_loss(self, diagnosis: Diagnosis) -> None:
        row = diagnosis.query("select min(val_loss) as best, max(val_loss) as first from main.eval_metrics")[
            0
        ]
        assert row["best"] == pytest.approx(3.2731, abs=1e-4)
        assert row["first"] == pytest.approx(11.01, abs=0.01)

    def test_grad_norm_spike_found(self, diagnosis: Diagnosis) -> None:
        assert any(grad_finding_at(f, 8700, 8715) for f in diagnosis.findings), diagnosis.table()


class _MegatronDeepSpeedChecks:
    """SOURCES.md B8: token-based warmup still running at the end; stopped by hand (KeyboardInterrupt)."""

    LOG: ClassVar[str]
    LAST_STEP: ClassVar[int]

    def test_manual_stop_is_an_event_at_the_end(self, diagnosis: Diagnosis) -> None:
        events = diagnosis.run.events
        stops = events[events["event"].str.contains("KeyboardInterrupt", na=False)]
        assert list(stops["step"]) == [self.LAST_STEP]

    def test_fresh_start_is_not_a_restart(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.of("run_restart"), diagnosis.table()

    def test_nothing_high(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.above(HIGH_OR_WORSE), diagnosis.table()


class TestMegatronDeepSpeedWithKernel(_MegatronDeepSpeedChecks):
    LOG: ClassVar[str] = "megatron-deepspeed-with-kernel"
    LAST_STEP: ClassVar[int] = 2130

    def test_fp16_loss_scale_growth_is_not_a_problem(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.of("nan_loss", "loss_spikes"), diagnosis.table()

    def test_iteration_time_spike_found(self, diagnosis: Diagnosis) -> None:
        finding = diagnosis.one("slow_steps")
        assert finding["first_step"] <= 2110 <= finding["last_step"]


class TestMegatronDeepSpeedBaseline(_MegatronDeepSpeedChecks):
    LOG: ClassVar[str] = "megatron-deepspeed-baseline"
    LAST_STEP: ClassVar[int] = 470


class TestMegatronGoldenValues:
    """SOURCES.md B9: iteration-time outliers, 0.596 s at step 70 against ~0.057 s; loss 10.94 -> 9.71."""

    LOG: ClassVar[str] = "megatron-lm-golden-values"

    def test_step_70_stall_found(self, diagnosis: Diagnosis) -> None:
        finding = diagnosis.one("slow_steps")
        assert finding["first_step"] <= 70 <= finding["last_step"]
        assert re.search(r"\bstep 70\b", finding["evidence"]), finding["evidence"]

    def test_loss_falls(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.of("no_learning", "underfitting", "loss_spikes", "nan_loss"), diagnosis.table()

    def test_step_70_is_marked_slow(self, diagnosis: Diagnosis) -> None:
        rows = diagnosis.query("select is_slow_step from main.step_metrics where step = 70")
        assert [r["is_slow_step"] for r in rows] == [True]


class TestLightningLowLr:
    """SOURCES.md B10: low-LR trial v0 runs all 20 epochs; val loss keeps falling (gap widens)."""

    LOG: ClassVar[str] = "lightning-version_0"

    def test_learns_without_overfitting(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.of("overfitting", "no_learning", "underfitting"), diagnosis.table()
        best = diagnosis.query("select step from main.eval_metrics where is_best")
        assert [b["step"] for b in best] == [5739]


class _LightningHighLrChecks:
    """SOURCES.md B10: high-LR trials stall (loss flat) and val loss rises from the first epoch."""

    LOG: ClassVar[str]
    FIRST_VAL: ClassVar[float]
    LAST_VAL: ClassVar[float]

    def test_stall_found(self, diagnosis: Diagnosis) -> None:
        assert diagnosis.one("no_learning")["severity"] in HIGH_OR_WORSE

    def test_val_loss_rises_from_the_first_epoch(self, diagnosis: Diagnosis) -> None:
        rows = diagnosis.query("select step, val_loss, is_best from main.eval_metrics order by step")
        assert rows[0]["is_best"] and rows[0]["val_loss"] == pytest.approx(self.FIRST_VAL, abs=0.01)
        assert rows[-1]["val_loss"] == pytest.approx(self.LAST_VAL, abs=0.01)

    def test_not_called_overfitting(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.of("overfitting"), diagnosis.table()

    def test_stall_is_fix_first(self, diagnosis: Diagnosis) -> None:
        assert (diagnosis.fix_first() or {}).get("category") == "no_learning", diagnosis.table()


class TestLightningVersion3(_LightningHighLrChecks):
    LOG: ClassVar[str] = "lightning-version_3"
    FIRST_VAL: ClassVar[float] = 7.523
    LAST_VAL: ClassVar[float] = 8.142


class TestLightningVersion19(_LightningHighLrChecks):
    LOG: ClassVar[str] = "lightning-version_19"
    FIRST_VAL: ClassVar[float] = 7.87
    LAST_VAL: ClassVar[float] = 8.46


# ---------------------------------------------------------------- C. second batch


@pytest.mark.parametrize("log_key", ["gan-version_0", "gan-version_1"])
def test_gan_nan_from_the_first_step(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md C11: v0 and v1 are NaN from (almost) the first step to the end."""
    finding = diagnosis.one("nan_loss")
    assert finding["severity"] == "critical", diagnosis.table()
    assert finding["first_step"] <= 1


@pytest.mark.parametrize("log_key", ["gan-version_2", "gan-version_3"])
def test_gan_critic_never_learns(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md C11: the critic loss stays at 11.5-12.0 (total change under 0.5): v2 falls 1.6%
    (within its noise: no_learning), v3 3.7% (beyond its noise, so "fell only ... and flattened")."""
    found = diagnosis.of("no_learning", "underfitting")
    assert [f["severity"] for f in found] in (["high"], ["medium"]), diagnosis.table()


@pytest.mark.parametrize("log_key", ["gan-version_6", "gan-version_12"])
def test_gan_fixed_runs_are_healthy(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md C11: negative, non-decreasing WGAN critic losses are normal."""
    assert not diagnosis.above(ABOVE_LOW), diagnosis.table()
    assert not diagnosis.of("no_learning", "underfitting", "nan_loss", "loss_spikes"), diagnosis.table()


class TestSatdStepDecay:
    """SOURCES.md C12: MultiStep LR decays give staircase drops (expected); mild late overfitting."""

    LOG: ClassVar[str] = "tb-lightning-satd-stepdecay"

    def test_late_overfitting_found(self, diagnosis: Diagnosis) -> None:
        overfitting = diagnosis.one("overfitting")
        assert overfitting["first_step"] == 158975, diagnosis.table()
        # +6% over the minimum point, a sliver of the 2.76 nats gained; level to level (the median of the 13
        # evaluations around the minimum against the last 12) +1.7%, under the 2% medium bar: mild, low
        assert overfitting["severity"] == "low", diagnosis.table()
        assert "mild late drift" in overfitting["evidence"]
        assert "levels (medians): validation 0.3642" in overfitting["evidence"]

    def test_scheduled_decays_are_not_anomalies(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.of("loss_spikes", "no_learning", "nan_loss", "eval_contamination"), (
            diagnosis.table()
        )
        assert not [
            i for i in diagnosis.above(ABOVE_LOW) if i.startswith(("log_quality", "step_sequence"))
        ], diagnosis.table()

    def test_lr_joined_to_the_loss_rows(self, diagnosis: Diagnosis) -> None:
        assert diagnosis.run.train["learning_rate"].notna().all()


class TestGpt2jaEvalOnTrain:
    """SOURCES.md C13: eval_samples = train_samples = 31, eval loss below train: evaluation on train."""

    LOG: ClassVar[str] = "tb-hf-gpt2ja-evalontrain"

    def test_eval_on_train_found_high(self, diagnosis: Diagnosis) -> None:
        finding = diagnosis.one("eval_contamination")
        assert finding["finding_id"] == "eval_contamination:eval_is_train"
        assert finding["severity"] == "high", diagnosis.table()

    def test_eval_only_event_file_is_not_a_restart(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.of("run_restart"), diagnosis.table()
        assert diagnosis.run.events.empty


HEALTHY = [
    "wandb-alpaca-v7i3k2p0",
    "tb-lightning-fractaldb-short",
    "llamafactory-nsllm-slow-healthy",
    "llamafactory-luojiu7b-nowarmup",
    "hf-medbot-lora-healthy",
    "nanogpt-healthy",
]


@pytest.mark.parametrize("log_key", HEALTHY)
def test_healthy_runs_get_nothing_above_low(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md C14, C15, C18, C20, C24, C27: healthy runs; nothing may be reported at medium or above."""
    assert not diagnosis.above(ABOVE_LOW), diagnosis.table()
    assert not diagnosis.of("no_learning", "nan_loss", "eval_contamination", "overfitting"), diagnosis.table()


@pytest.mark.parametrize("log_key", ["llamafactory-qwen7b-medical-overfit"])
def test_medical_overfitting_in_epoch_3(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md C17: eval loss minimum 1.5518 at step 4500, then 1.5776 at 6500."""
    finding = diagnosis.one("overfitting")
    assert finding["first_step"] == 4500
    assert finding["expected_value"] == pytest.approx(1.5518, abs=1e-4)


@pytest.mark.parametrize("log_key", ["llamafactory-loss-zero-collapse"])
def test_loss_collapsed_to_zero_is_critical(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md C19: loss 122.14 at step 10, then exactly 0.0 for all 36 later logs."""
    finding = diagnosis.one("no_learning")
    assert finding["finding_id"] == "no_learning:zero_loss"
    assert finding["severity"] == "critical"
    assert finding["first_step"] == 20
    assert (diagnosis.fix_first() or {}).get("finding_id") == "no_learning:zero_loss", diagnosis.table()


class TestDpoStartsAtLn2:
    """SOURCES.md C21: DPO loss 0.6931 at step 1 is the correct start, not "stuck at chance"."""

    LOG: ClassVar[str] = "hf-dpo-tinyllama-eval-plateau"

    def test_not_stuck(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.of("no_learning", "underfitting", "nan_loss", "eval_contamination"), (
            diagnosis.table()
        )

    def test_mild_overfitting_found(self, diagnosis: Diagnosis) -> None:
        assert diagnosis.of("overfitting"), diagnosis.table()


class TestSmolvlmBigStart:
    """SOURCES.md C22: initial loss 19.2 (above ln(vocab)), grad-norm spike in warmup; near-zero end."""

    LOG: ClassVar[str] = "hf-smolvlm-endoscopy-bigstart"

    def test_near_zero_end_is_not_called_leakage(self, diagnosis: Diagnosis) -> None:
        high = [f for f in diagnosis.of("eval_contamination") if f["severity"] in ABOVE_LOW]
        assert not high, diagnosis.table()

    def test_no_false_spikes_on_near_zero_loss(self, diagnosis: Diagnosis) -> None:
        assert not [f for f in diagnosis.of("loss_spikes") if f["severity"] in ABOVE_LOW], diagnosis.table()

    def test_abnormal_start_found(self, diagnosis: Diagnosis) -> None:
        # 19.23 and 14.42 against ln 262144 = 12.48, the largest vocabulary in common use: no vocabulary
        # is known from the log, and a loss summed over several outputs (EAGLE draft heads) starts as far
        # above one token's ceiling, so it is reported low, with that reason
        start = diagnosis.one("initial_loss_too_high")
        assert (start["first_step"], start["severity"]) == (10, "low"), diagnosis.table()
        assert "the vocabulary is not known" in start["evidence"]


@pytest.mark.parametrize("log_key", ["hf-lora-flat-loss"])
def test_lora_flat_loss_is_no_progress(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md C23: a plateau within batch-1 noise: "no progress", not "diverged". Llama 3.1's loss
    starts at 2.2, a fifth of ln V: a pretrained model with little left to learn, reported low."""
    flat = diagnosis.one("no_learning")
    assert flat["severity"] == "low", diagnosis.table()
    assert "a pretrained model with little left to learn" in flat["evidence"]
    assert not diagnosis.of("loss_spikes", "nan_loss", "grad_norm_spikes"), diagnosis.table()


@pytest.mark.parametrize("log_key", ["hf-chatglm-ptuning-memorize"])
def test_ptuning_high_lr_is_not_an_alarm(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md C25: lr 2e-2 is the standard P-Tuning v2 setting; memorisation cannot be measured."""
    assert not diagnosis.above(ABOVE_LOW), diagnosis.table()
    assert not diagnosis.of("no_learning", "loss_spikes", "eval_contamination"), diagnosis.table()


class TestNanogptResume:
    """SOURCES.md C26: epoch 2 resumes with LR 3.38e-4 and no optimizer state: loss 3.96, norm 8.5."""

    LOG: ClassVar[str] = "nanogpt-resume"

    def test_two_legs_read_as_one_run(self, diagnosis: Diagnosis) -> None:
        events = diagnosis.run.events
        assert list(events["step"]) == [19072], events
        assert "resuming from step 19072" in events["event"].iloc[0]

    def test_resume_jump_found(self, diagnosis: Diagnosis) -> None:
        # the LR reset at the resume is the cause (its cost to the final loss is within the run's
        # noise: low); the norm and loss jumps after it are found with it, never above their cause
        reset = next(f for f in diagnosis.findings if f["finding_id"] == "lr_schedule_mismatch:resume_19072")
        assert reset["detector_severity"] in ABOVE_LOW and reset["severity"] != "info", diagnosis.table()
        assert any(
            grad_finding_at(f, 19072, 19080) and f["severity"] != "info" for f in diagnosis.findings
        ), diagnosis.table()

    def test_no_false_high(self, diagnosis: Diagnosis) -> None:
        assert not diagnosis.above(HIGH_OR_WORSE), diagnosis.table()


def test_sweep_folder_is_diagnosed_run_by_run(tmp_path: Path) -> None:
    """SOURCES.md C11: a folder of Lightning versions gets one report per run and an index, worst first."""
    from run_diagnosis import diagnose

    folder = tmp_path / "lightning_logs"
    folder.mkdir()
    for version in ("version_1", "version_6"):  # NaN from step 0; a fixed run
        source = REAL_LOGS / "lightning-gan-nan-versions" / version
        if not source.exists():
            pytest.skip(f"{source} is absent")
        (folder / version).symlink_to(source, target_is_directory=True)
    assert diagnose.main([str(folder), "--out", str(tmp_path / "out")]) == 0
    index = (tmp_path / "out" / "index.md").read_text(encoding="utf-8")
    rows = [line for line in index.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split(" | ")[1] for row in rows] == ["version_1", "version_6"], index
    assert " critical " in rows[0]
    for version in ("version_1", "version_6"):
        assert (tmp_path / "out" / "runs" / version / "report.html").is_file()
    assert (tmp_path / "out" / "index.html").is_file()


@pytest.mark.parametrize("log_key", ["wandb-imdb-t2wihhdg"])
def test_imdb_adam_run_hovers_at_chance(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md C16: adam lr 1e-3 hovers at 0.70 (~ln 2, chance for 2 classes) for 2,912 steps."""
    finding = diagnosis.one("no_learning")
    assert finding["finding_id"] == "no_learning:chance_loss"
    assert finding["severity"] in ABOVE_LOW, diagnosis.table()
    # batch-4 noise: two neighbouring steps at ~2x are a blip, not a spike that matters
    assert not [i for i in diagnosis.above(ABOVE_LOW) if i.startswith("loss_spikes")], diagnosis.table()


def test_wandb_sweep_folder_lists_every_run() -> None:
    """SOURCES.md C16: 31 run folders, 4 with a .wandb file; 20 more are read from their summaries'
    final values (their output.log holds no training log); the 7 stopped in their first minute, with
    W&B's own keys only in their summaries, are listed as unreadable."""
    from run_diagnosis import multi_run
    from run_diagnosis.importers import wandb_run

    sweep = REAL_LOGS / "wandb-imdb-optimizer-sweep"
    runs = multi_run.find_runs(sweep)
    assert len(runs) == 31
    with_history = [run.name for run in runs if any((sweep / run.name).glob("*.wandb"))]
    from_summary = [run.name for run in runs if wandb_run.summary_only(sweep / run.name)]
    assert (len(with_history), len(from_summary)) == (4, 20), (with_history, from_summary)
    readable = [run.name for run in runs if wandb_run.sniff(sweep / run.name)]
    assert sorted(readable) == sorted(with_history + from_summary)


@pytest.mark.parametrize("log_key", ["wandb-imdb-dnevcmuk"])
def test_imdb_lion_run_overfits_by_its_final_values(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md C16: lion lr 3e-5 ends at a training loss of 0.099 with a test accuracy of 0.536, in
    its summary alone: the training loss guarantees >= 85.8% on the training data, 32 points above."""
    finding = diagnosis.one("overfitting")
    assert finding["finding_id"] == "overfitting:accuracy_gap"
    assert finding["severity"] == "low"
    assert not diagnosis.above(ABOVE_LOW), diagnosis.table()
    # the report says what the evaluation was: one accuracy, no loss (not "no evaluations")
    _, data = story_of(diagnosis)
    numbers = dict(run_numbers(data))
    assert numbers["Best evaluation"] == "no validation loss logged (1 evaluation with an accuracy only)"


# ---------------------------------------------------------------- the story (issue 26)


def story_of(diagnosis: Diagnosis) -> tuple[PageOne, ReportData]:
    """Page one of the log's report (no plots) and what it read."""
    data = load_report_data(diagnosis.build.db_path, diagnosis.build.target_path, diagnosis.key)
    return build_page_one(data, build_double_check(data).consistency), data


def told(page: PageOne) -> str:
    return " ".join([*page.what_happened, *(answer for _, answer in page.questions)])


@pytest.mark.parametrize("log_key", ["hf-tinyllama-sft", "nanogpt-resume", "lightning-version_0"])
def test_a_best_evaluation_at_the_end_is_not_stopped_improving(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md A1, C26, B10: the best evaluation is the last one; the story must not say the run
    stopped improving."""
    page, data = story_of(diagnosis)
    assert data.story["best_is_last"] and data.story["val_trend"] != "stopped_improving"
    assert "stopped improving" not in told(page)


class TestNanogptResumeStory:
    """SOURCES.md C26: one manual resume after epoch 1 (no crash): a stop, told once."""

    LOG: ClassVar[str] = "nanogpt-resume"

    def test_the_resume_is_one_restart_and_no_crash(self, diagnosis: Diagnosis) -> None:
        restarts = diagnosis.of("run_restart")
        assert len(restarts) == 1, diagnosis.table()
        assert "crashed" not in restarts[0]["title"] and "redoing 0" not in restarts[0]["title"]
        assert "steps of risk" not in restarts[0]["recommendation"]
        page, data = story_of(diagnosis)
        assert data.story["n_crash_restarts"] == 0
        assert "It stopped once with no crash logged and was resumed" in told(page)
        assert "crash" not in told(page).replace("no crash logged", "")

    def test_a_small_late_fall_is_progress(self, diagnosis: Diagnosis) -> None:
        """Val loss 3.400 at step 4249 (95% of the fall) to 3.017 at the end: an 11% fall."""
        page, data = story_of(diagnosis)
        assert data.story["late_fall_share"] == pytest.approx(0.113, abs=0.002)
        assert data.story["val_trend"] == "still_improving"
        assert "almost no net progress" not in told(page)


@pytest.mark.parametrize("log_key", ["lightning-version_3", "lightning-version_19"])
def test_a_pruned_trial_is_named_as_such_and_said_first(diagnosis: Diagnosis, log_key: str) -> None:
    """SOURCES.md B10: high-LR trials were pruned after 4-8 epochs: a stopped trial, not a config
    mismatch, said before any judgement."""
    assert [f["finding_id"] for f in diagnosis.of("run_ended_early")] == ["run_ended_early:stopped_early"]
    assert not [f for f in diagnosis.of("config_mismatch") if f["severity"] in ABOVE_LOW], diagnosis.table()
    page, _ = story_of(diagnosis)
    assert page.what_happened[0].startswith("The log ends at step ")
    assert "a pruned or early-stopped trial" in page.what_happened[0]


def test_a_complete_trial_says_nothing_of_its_end(diagnoses: Diagnoses) -> None:
    """SOURCES.md B10: v0 ran all 20 epochs."""
    assert not diagnoses.get("lightning-version_0").of("run_ended_early")


class TestWandbPartialCopy:
    """SOURCES.md C16: r8mtbfdx's .wandb holds 3,957 of the run's 62,509 steps (its summary says
    _step 62509) and no exit record: the log is partial, and the report says so first."""

    LOG: ClassVar[str] = "wandb-imdb-r8mtbfdx"

    def test_said_partial_before_any_judgement(self, diagnosis: Diagnosis) -> None:
        ended = diagnosis.one("run_ended_early")
        assert ended["finding_id"] == "run_ended_early:partial_copy"
        assert "copied while the run was writing" in ended["title"]
        summary_note = (
            "partial copy: run-r8mtbfdx.wandb holds history up to W&B step 3956, but the run's summary"
        )
        assert any(str(e).startswith(summary_note) for e in diagnosis.run.events["event"])
        page, _ = story_of(diagnosis)
        assert page.what_happened[0].startswith("The log is a partial copy: it ends at step 3956")

    def test_a_complete_copy_is_not_partial(self, diagnoses: Diagnoses) -> None:
        complete = diagnoses.get("wandb-imdb-t2wihhdg")
        assert not [f for f in complete.of("run_ended_early") if f["finding_id"].endswith("partial_copy")]
