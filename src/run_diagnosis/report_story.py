"""What the report says to the lead, as plain text: page one (the story, the two questions,
the ledgers, fix first, reruns, caveats) and page two (causes with their symptoms, glitches).

Every number comes from the data; nothing here knows about the sample run. The cost
columns of the findings mart (ledger, val_loss_cost, ...) are used when the build has
them; without them the report falls back to one ranked list and the detectors' estimates.
Both renderers format the same content, so report.md and report.html cannot disagree.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from run_diagnosis.importers.metric_names import NOT_UNDERSTOOD
from run_diagnosis.report_content import (
    all_symptoms,
    direct_symptoms,
    display_order,
    estimate_text,
    finding_evidence,
    fmt_compute_cost,
    fmt_loss,
    fmt_model_cost,
    fmt_num,
    fmt_pct,
    fmt_steps,
    plural,
)
from run_diagnosis.report_data import ReportData, catalog_text, is_above_low

LEDGER_ROWS = 5  # rows of the one ranked list on page one (without the cost columns)
LEDGER_ROWS_EACH = 3  # rows per ledger on page one when there are two
HEAD_MAX_CHARS = 70  # layout: a title cut at ':' or ';' names a finding when it is this short

# The config_mismatch finding that names every required field the config lacks (one line).
UNKNOWN_CONFIG_FIELDS = "config_mismatch:unknown_fields"

# How to confirm a fix when neither the finding (`confirm_rerun`) nor its category (check_catalog) says.
CONFIRM_DEFAULT = "rerun with the fix and compare validation loss at the same evaluation steps"


# --------------------------------------------------------------------------- helpers


def head(finding: dict[str, Any]) -> str:
    """A short name for a finding: its title up to the first ':' or ';' when that is short."""
    title = str(finding.get("title") or finding.get("finding_id"))
    for mark in (":", ";"):
        cut = title.split(mark, 1)[0].strip()
        if len(cut) < len(title) and len(cut) <= HEAD_MAX_CHARS:
            return cut
    return title.rstrip(".")


def short(finding: dict[str, Any]) -> str:
    """A cause named in running text: 'the bad data shard (steps 89-112)'."""
    name = catalog_text(finding, "plain_name")
    key = str(finding.get("finding_id") or "").partition(":")[2]
    if name is None or ("{key}" in name and not key):
        return head(finding)
    name = name.format(key=key)
    steps = fmt_steps(finding.get("first_step"), finding.get("last_step"))
    return name if steps == "no step range" else f"{name} ({steps})"


def report_group(finding: dict[str, Any]) -> str | None:
    """How the report groups the finding's category (check_catalog.report_group): 'glitch' (how
    the run was logged), 'compute' (costs compute only), 'instability' (makes the loss look
    unstable, or drives it), or None."""
    return catalog_text(finding, "report_group")


def is_glitch(finding: dict[str, Any]) -> bool:
    if finding.get("ledger") is not None:
        return finding["ledger"] == "records"
    return report_group(finding) == "glitch"


def num_column(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[column], errors="coerce").astype("float64").to_numpy()


def flag_column(frame: pd.DataFrame, column: str, default: bool) -> np.ndarray:
    if column not in frame.columns:
        return np.full(len(frame), default)
    return frame[column].astype("boolean").fillna(default).to_numpy(dtype=bool)


def join_words(items: list[str]) -> str:
    items = list(dict.fromkeys(items))  # the same name twice reads as a mistake
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# --------------------------------------------------------------------------- causes


@dataclass
class Cause:
    """A root cause with the findings it explains (its symptoms)."""

    finding: dict[str, Any]
    symptoms: list[dict[str, Any]]
    evidence: list[str]
    estimate: str
    fix: str
    confirm: str

    @property
    def report_groups(self) -> set[str | None]:
        return {report_group(f) for f in [self.finding, *self.symptoms]}


def confirm_text(finding: dict[str, Any]) -> str:
    if finding.get("confirm_rerun"):
        return str(finding["confirm_rerun"])
    template = catalog_text(finding, "confirm") or CONFIRM_DEFAULT
    first, last = finding.get("first_step"), finding.get("last_step")
    if first is None or last is None:
        template = CONFIRM_DEFAULT
    return template.format(first=fmt_num(first), last=fmt_num(last))


def build_causes(data: ReportData) -> tuple[list[Cause], list[dict[str, Any]]]:
    """Root causes (with every symptom under them) and the log/record glitches left over."""
    ids = {f["finding_id"] for f in data.findings}
    symptoms = direct_symptoms(data.findings)
    roots = [
        f for f in data.findings if f.get("caused_by") not in ids or f.get("caused_by") == f["finding_id"]
    ]
    causes: list[Cause] = []
    covered: set[str] = set()
    for root in display_order([f for f in roots if not is_glitch(f)]):
        explained = [data.finding(i) for i in all_symptoms(root["finding_id"], symptoms)]
        members = [f for f in explained if f is not None and f["finding_id"] not in covered]
        covered.update([root["finding_id"], *(f["finding_id"] for f in members)])
        causes.append(
            Cause(
                finding=root,
                symptoms=display_order(members),
                evidence=finding_evidence(root),
                estimate=estimate_text(root),
                fix=str(root.get("recommendation") or "none given"),
                confirm=confirm_text(root),
            )
        )
    glitches = display_order([f for f in data.findings if f["finding_id"] not in covered])
    return causes, glitches


def is_material(finding: dict[str, Any]) -> bool:
    """Above info: worth a sentence on page one."""
    return str(finding.get("severity") or "info").lower() != "info"


def is_priced(finding: dict[str, Any]) -> bool:
    """Has a model cost above the run's noise floor (a cost within noise is not a measurement)."""
    return finding.get("val_loss_cost") is not None and not finding.get("cost_within_noise")


def touches_model(cause: Cause) -> bool:
    """Does the cause (or a symptom of it) hurt model quality rather than only cost compute?"""
    if cause.finding.get("ledger") is not None:
        return cause.finding["ledger"] == "model" or any(s.get("ledger") == "model" for s in cause.symptoms)
    return any(group not in ("compute", "glitch") for group in cause.report_groups)


# --------------------------------------------------------------------------- the validation story


@dataclass
class Trajectory:
    steps: list[int]
    losses: list[float]
    accuracies: list[float | None]


def trajectory(data: ReportData) -> Trajectory | None:
    frame = data.eval_metrics
    if not len(frame):
        return None
    counted = flag_column(frame, "is_counted", True)
    steps, losses = num_column(frame, "step")[counted], num_column(frame, "val_loss")[counted]
    accuracy = num_column(frame, "val_accuracy")[counted]
    keep = np.isfinite(steps) & np.isfinite(losses)
    if keep.sum() < 2:
        return None
    return Trajectory(
        steps=[int(s) for s in steps[keep]],
        losses=[float(v) for v in losses[keep]],
        accuracies=[float(a) if math.isfinite(a) else None for a in accuracy[keep]],
    )


def accuracy_at(t: Trajectory, step: Any) -> float | None:
    """Validation accuracy at an evaluation step (None when not logged there)."""
    if step is None or int(step) not in t.steps:
        return None
    return t.accuracies[t.steps.index(int(step))]


def accuracy_change(t: Trajectory, first: Any, last: Any) -> str:
    a, b = accuracy_at(t, first), accuracy_at(t, last)
    return f", accuracy {fmt_loss(a)} -> {fmt_loss(b)}" if a is not None and b is not None else ""


def fall_pct(before: Any, after: Any) -> str:
    """'-3.6%': the relative change from before to after."""
    if before is None or after is None or not float(before):
        return "n/a"
    return f"{100 * (float(after) - float(before)) / float(before):+.1f}%"


# the learning verdicts that judge the run against the loss of a uniform guess (its expected_value)
CHANCE_VERDICTS = ("no_learning:chance_level", "underfitting:near_chance")


def chance_clause(data: ReportData) -> str:
    """', all of it near the loss of a uniform guess (L: finding id)' when a chance-level verdict
    stands above info: a curve that falls a little can still be at chance; the sentence says both."""
    for f in data.findings:
        level = f.get("expected_value")
        if f.get("finding_id") in CHANCE_VERDICTS and f.get("severity") != "info" and level:
            return f", all of it near the loss of a uniform guess ({fmt_loss(level)}: {f['finding_id']})"
    return ""


def trend_sentence(data: ReportData, t: Trajectory) -> str:
    """The validation curve as run_story judged it (val_trend and its numbers); without that mart,
    its two ends and no judgement; with a chance-level verdict, that it stayed there."""
    sentence = trend_words(data, t)
    clause = chance_clause(data)
    return sentence[:-1] + clause + "." if clause and sentence.endswith(".") else sentence


def trend_words(data: ReportData, t: Trajectory) -> str:
    """trend_sentence's sentence, before the chance-level clause."""
    s = data.story
    first_step, first = t.steps[0], t.losses[0]
    final_step, final = t.steps[-1], t.losses[-1]
    ends = f"{fmt_loss(first)} at step {fmt_num(first_step)}"
    trend = s.get("val_trend")
    best = " (its best)" if s.get("best_is_last") else ""
    if trend == "did_not_improve":
        return (
            f"Validation loss did not improve: {ends} and {fmt_loss(final)} at step {fmt_num(final_step)}"
            f"{accuracy_change(t, first_step, final_step)}."
        )
    if trend == "stopped_improving":
        return (
            f"Validation loss fell from {ends} to its best {fmt_loss(s['best_val_loss'])} at step "
            f"{fmt_num(s['best_eval_step'])}, then stopped improving: {fmt_loss(final)} at step "
            f"{fmt_num(final_step)}, the last evaluation"
            f"{accuracy_change(t, s['best_eval_step'], final_step)}."
        )
    if trend == "plateaued":
        k, at_k = s["plateau_step"], s["plateau_val_loss"]
        return (
            f"Validation loss fell from {ends} to {fmt_loss(at_k)} by step {fmt_num(k)}; after step "
            f"{fmt_num(k)} the run made almost no net progress: val loss {fmt_loss(at_k)} -> "
            f"{fmt_loss(final)} ({fall_pct(at_k, final)}){accuracy_change(t, k, final_step)} by step "
            f"{fmt_num(final_step)}{best}."
        )
    if trend == "still_improving":
        return (
            f"Validation loss fell from {ends} to {fmt_loss(final)} at step {fmt_num(final_step)}{best}"
            f"{accuracy_change(t, first_step, final_step)}, still improving at the end."
        )
    return (
        f"Validation loss went from {ends} to {fmt_loss(final)} at step {fmt_num(final_step)}"
        f"{accuracy_change(t, first_step, final_step)}."
    )


def causes_in(causes: list[Cause], start: int, end: int) -> list[Cause]:
    """Causes whose root or a symptom starts or ends in (start, end]: what ran just before an evaluation."""
    found = []
    for cause in causes:
        for f in [cause.finding, *cause.symptoms]:
            edges = [e for e in (f.get("first_step"), f.get("last_step")) if e is not None]
            if any(start < e <= end for e in edges):
                found.append(cause)
                break
    return found


def dip_sentence(data: ReportData, causes: list[Cause]) -> str | None:
    """The largest rise of validation loss above its best so far (run_story), and what ran just before it."""
    s = data.story
    if s.get("dip_step") is None:
        return None
    text = f"Validation loss rose to {fmt_loss(s['dip_val_loss'])} at step {fmt_num(s['dip_step'])}"
    text += f" (best before {fmt_loss(s['dip_best_before'])})"
    accuracy, before = s.get("dip_val_accuracy"), s.get("dip_previous_val_accuracy")
    if accuracy is not None and s.get("dip_accuracy_collapsed"):
        text += f" and accuracy collapsed to about {fmt_loss(accuracy)} (from {fmt_loss(before)})"
    elif accuracy is not None and before is not None and accuracy < before:
        text += f" and accuracy fell to {fmt_loss(accuracy)} (from {fmt_loss(before)})"
    previous = s.get("dip_previous_eval_step")
    around = causes_in(causes, int(previous), int(s["dip_step"])) if previous is not None else []
    if around:
        text += f", after {join_words([short(c.finding) for c in around])}"
    return text + "."


def checkpoint_sentence(data: ReportData) -> str | None:
    c = data.context
    if not c or c.get("best_eval_step") is None:
        return None
    best = f"The best evaluation is at step {fmt_num(c['best_eval_step'])}"
    best += f" (val loss {fmt_loss(c['best_val_loss'])})"
    if not c.get("n_checkpoints_saved"):
        return best + "; the events log no saved checkpoint." if data.events else best + "."
    saved = c.get("last_checkpoint_step")
    if saved == c["best_eval_step"]:
        return best + ", and it was saved as a checkpoint."
    at = (
        f" (val loss there {fmt_loss(c['last_checkpoint_val_loss'])})"
        if c.get("last_checkpoint_val_loss")
        else ""
    )
    return best + f"; the last saved checkpoint is step {fmt_num(saved)}{at}."


def restart_sentence(data: ReportData) -> str | None:
    """The resumes, as the events name them (else as the run_restart findings place them): told
    as a crash only when run_story counts that many after a logged crash; a stop with no crash
    logged is told as a stop."""
    parts = [
        f"at step {fmt_num(e['step'])} from the checkpoint of step {fmt_num(e['resumed_from_step'])}"
        for e in data.events
        if e.get("resumed_from_step") is not None
    ]
    if not parts:
        parts = [
            f"at step {fmt_num(f['first_step'])}"
            for f in sorted(
                (
                    f
                    for f in data.findings
                    if f.get("category") == "run_restart" and f.get("first_step") is not None
                ),
                key=lambda f: f["first_step"],
            )
        ]
    if not parts:
        return None
    n = int(data.story.get("n_restarts") or len(parts))
    times = "once" if n == 1 else f"{n} times"
    crashes = data.story.get("n_crash_restarts")
    if crashes is None:  # a build without run_story: say what happened, not why
        return f"It was resumed {times}: {join_words(parts)}."
    if int(crashes) >= n:
        return f"It crashed and was resumed {times}: {join_words(parts)}."
    if int(crashes) == 0:
        return f"It stopped {times} with no crash logged and was resumed: {join_words(parts)}."
    after = plural(int(crashes), "time")
    return f"It was stopped and resumed {times} ({after} after a crash): {join_words(parts)}."


def end_sentence(data: ReportData) -> str | None:
    """How the log ends when it ends early (the run_ended_early finding): said before any judgement."""
    ended = next((f for f in data.findings if f.get("category") == "run_ended_early"), None)
    return str(ended["title"]) if ended is not None and ended.get("title") else None


def scope_sentence(data: ReportData, said_end: bool = False) -> str:
    """What the log holds: steps (or training rows, one every N steps); the configured length
    unless the sentence before already said how the log ends against it."""
    s = data.summary
    first, last, counted = s.get("first_step"), s.get("last_step"), s.get("steps_counted")
    total = s.get("total_steps_config")
    configured = f" of {fmt_num(total)} configured" if total and not said_end else ""
    if (
        isinstance(first, int)
        and isinstance(last, int)
        and isinstance(counted, int)
        and counted < last - first + 1
    ):
        # sparse logging (every n-th step): the rows logged are not the steps trained
        interval = data.story.get("logging_interval")
        every = f", one every {fmt_num(float(interval))} steps" if interval and float(interval) > 1 else ""
        if said_end:  # the log's end is told already: say only what its training rows cover
            text = f"The run {s.get('run_name') or ''} logged {plural(counted, 'training row')}{every}"
            text += f", up to step {fmt_num(last)}"
        else:
            text = f"The run {s.get('run_name') or ''} reached step {fmt_num(last)}{configured}"
            text += f" ({plural(counted, 'training row')} logged{every})"
    elif not counted:
        text = f"The run {s.get('run_name') or ''} logged no training loss, only its validation loss"
    elif counted == 1 and isinstance(last, int) and last > 1:
        # one row far into the run: its final values (a W&B summary read without its history)
        text = f"The run {s.get('run_name') or ''} reached step {fmt_num(last)}{configured}"
        text += " (one training row logged: its values at that step, no curve)"
    else:
        text = f"The run {s.get('run_name') or ''} logged {plural(counted, 'step')}{configured}"
    return " ".join(text.split()) + "."


# --------------------------------------------------------------------------- the two questions


def spike_share_sentence(data: ReportData) -> str | None:
    """How concentrated the loss-spike steps are on one shard, as run_story judged it
    (is_spikes_on_one_shard): '16 of 19 loss-spike steps (84.2%) were on shard 8 (web)'."""
    s = data.story
    if not s.get("is_spikes_on_one_shard"):
        return None
    n_top, n_spikes = int(s["spike_shard_steps"]), int(s["n_spike_steps"])
    source = s.get("spike_shard_source")
    named = f"shard {s['spike_shard_id']}" + (f" ({source})" if source is not None else "")
    return f"{n_top} of {n_spikes} loss-spike steps ({fmt_pct(n_top / n_spikes)}) were on {named}"


def why_val_loss_high(data: ReportData, causes: list[Cause], t: Trajectory | None) -> str:
    model = [c for c in causes if touches_model(c) and is_material(c.finding)]
    final = data.summary.get("final_val_loss")
    if not model:
        return "No finding points at model quality: the validation loss is what this setup reaches."
    if data.has_costs and any(is_priced(c.finding) for c in model):
        priced = sorted(
            [c for c in model if is_priced(c.finding)], key=lambda c: -float(c.finding["val_loss_cost"])
        )
        parts = [f"{short(c.finding)}, about {fmt_loss(c.finding['val_loss_cost'])}" for c in priced[:3]]
        text = f"Mostly {'; '.join(parts)} (of the final {fmt_loss(final)})."
    elif data.has_costs and any(c.finding.get("cost_within_noise") for c in model):
        parts = [short(c.finding) for c in model[:3]]
        text = (
            f"Not measurably because of {join_words(parts)}: each one's estimated cost is within this run's "
            "evaluation noise, so the run cannot tell it from none."
        )
    else:
        parts = [short(c.finding) for c in model[:3]]
        text = (
            f"The problems that plausibly cost validation loss, most severe first: {join_words(parts)}. "
            "This build gives no validation-loss estimate per problem, so their shares are unknown."
        )
    trend = data.story.get("val_trend")
    if trend == "stopped_improving":
        text += " Training stopped improving validation loss well before the end (above)."
    elif trend == "plateaued":
        late = fall_pct(data.story["plateau_val_loss"], data.story["final_val_loss"]).lstrip("+-")
        text += (
            f" Most of the gain came by step {fmt_num(data.story['plateau_step'])}; the rest of the run "
            f"lowered validation loss by only {late} (above)."
        )
    return text


def why_train_unstable(data: ReportData, causes: list[Cause]) -> str:
    unstable = [c for c in causes if "instability" in c.report_groups and is_material(c.finding)]
    spikes = spike_share_sentence(data)
    if not unstable and spikes is None:
        return "It is not flagged as unstable: no loss spikes, gradient spikes or NaN losses were found."
    text = f"Because of {join_words([short(c.finding) for c in unstable])}." if unstable else ""
    if spikes:
        text += f" {spikes}."
    return text.strip()


# --------------------------------------------------------------------------- ledgers and fix first


@dataclass
class Ledger:
    title: str
    rows: list[tuple[dict[str, Any], str]]  # (finding, amount text)
    empty: str


def build_ledgers(data: ReportData, causes: list[Cause]) -> list[Ledger]:
    if data.has_costs:

        def folded(f: dict[str, Any]) -> bool:
            """A symptom whose cause sits in the same ledger is told under that cause, not again."""
            cause = data.finding(f.get("caused_by"))
            return cause is not None and cause is not f and cause.get("ledger") == f.get("ledger")

        def ranked(ledger: str) -> list[dict[str, Any]]:
            rows = [f for f in data.findings if f.get("ledger") == ledger and not folded(f)]
            return sorted(
                rows, key=lambda f: (f.get("ledger_rank") is None, f.get("ledger_rank") or 0, f["rank"])
            )

        model = [(f, fmt_model_cost(f) or "not estimated") for f in ranked("model")]
        compute = [(f, fmt_compute_cost(f) or "not estimated") for f in ranked("compute")]
        return [
            Ledger(
                "Model quality: what costs validation loss",
                model[:LEDGER_ROWS_EACH],
                "Nothing costs model quality.",
            ),
            Ledger("Compute: what costs time", compute[:LEDGER_ROWS_EACH], "Nothing wastes compute."),
        ]
    rows = [(c.finding, str(c.finding.get("severity"))) for c in causes if is_above_low(c.finding)]
    return [
        Ledger("The problems, most severe first", rows[:LEDGER_ROWS], "Nothing wrong above low severity.")
    ]


@dataclass
class FixFirst:
    finding: dict[str, Any]
    runner_up: dict[str, Any] | None
    why: list[str]


def pick_fix_first(
    data: ReportData, causes: list[Cause]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    s = data.summary
    named = data.finding(s.get("fix_first_finding_id"))
    # the mart names the top of the ranking even when all is low or info: never "fix first" then
    if data.has_costs and named is not None and is_above_low(named):
        return named, data.finding(s.get("runner_up_finding_id"))
    serious = [c.finding for c in causes if is_above_low(c.finding)]
    if not serious:
        return None, None
    fix = min(serious, key=lambda f: f["rank"])
    named = data.finding(s.get("runner_up_finding_id"))
    if (
        named is not None
        and named["finding_id"] != fix["finding_id"]
        and not is_glitch(named)
        and is_material(named)
    ):
        return fix, named
    others = [
        c.finding for c in causes if c.finding["finding_id"] != fix["finding_id"] and is_material(c.finding)
    ]
    return fix, (min(others, key=lambda f: f["rank"]) if others else None)


def ranges_overlap(data: ReportData, a: dict[str, Any], b: dict[str, Any]) -> bool | None:
    flag = data.summary.get("fix_first_ranges_overlap")
    if flag is not None:
        return bool(flag)
    lows = (a.get("val_loss_cost_low"), b.get("val_loss_cost_high"))
    if None in lows:
        return None
    return float(a["val_loss_cost_low"]) <= float(b["val_loss_cost_high"])


def build_fix_first(data: ReportData, causes: list[Cause]) -> FixFirst | None:
    fix, runner = pick_fix_first(data, causes)
    if fix is None:
        return None
    why: list[str] = []
    cause = next((c for c in causes if c.finding["finding_id"] == fix["finding_id"]), None)
    if fix.get("val_loss_cost") is not None:
        final = data.summary.get("final_val_loss")
        text = f"It costs about {fmt_model_cost(fix)}"
        text += f" (final validation loss {fmt_loss(final)})." if final is not None else "."
        why.append(text)
        if runner is not None:
            text = (
                f"Why it beats the runner-up, {short(runner)}: that one costs "
                f"{fmt_model_cost(runner) or 'no estimate'}."
            )
            overlap = ranges_overlap(data, fix, runner)
            if overlap:
                text += (
                    " The two ranges overlap, so the order between them is not settled: both must be fixed."
                )
            elif overlap is False:
                text += " Its lowest estimate is above the runner-up's highest, so the order is settled."
            why.append(text)
    elif runner is not None:
        why.append(
            f"Why it beats the runner-up, {short(runner)}: it is rated {fix.get('severity')} against "
            f"{runner.get('severity')} and affects {fmt_num(fix.get('steps_affected'))} steps "
            f"({fmt_steps(fix.get('first_step'), fix.get('last_step'))}) against "
            f"{fmt_num(runner.get('steps_affected'))}; this build has no validation-loss estimate for either."
        )
    else:
        why.append("It is the only problem above low severity.")
    if cause is not None and cause.symptoms:
        n = len(cause.symptoms)
        why[0] += (
            f" It also explains {plural(n, 'other finding')}: fixing it should clear "
            f"{'it' if n == 1 else 'them'} too."
        )
    if fix.get("recommendation"):
        why.append(f"What to do: {fix['recommendation']}")
    return FixFirst(fix, runner, why)


def build_reruns(data: ReportData, fix: FixFirst | None, causes: list[Cause]) -> list[str]:
    picked: list[dict[str, Any]] = []
    if fix is not None:
        picked += [f for f in (fix.finding, fix.runner_up) if f is not None]
    for cause in causes:
        if len(picked) >= 3:
            break
        if is_above_low(cause.finding) and all(
            cause.finding["finding_id"] != p["finding_id"] for p in picked
        ):
            picked.append(cause.finding)
    return [f"{capital(short(f))}: {confirm_text(f)}.".replace("..", ".") for f in picked]


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


# --------------------------------------------------------------------------- caveats


def hypothesis_caveats(data: ReportData) -> list[str]:
    notes = [
        "The causes are read from the logs, not tested: each one is a hypothesis until its rerun confirms it."
    ]
    # the LR ratio that equals the worker count (report_caveats), in the order of its findings
    ranks = {f["finding_id"]: f["rank"] for f in data.findings}
    scaled = [c for c in data.caveats if c.caveat == "lr_scaled_by_workers"]
    for caveat in sorted(scaled, key=lambda c: ranks.get(c.finding_id, len(ranks) + 1)):
        text = (
            f"The learning rate at {caveat.lr_ratio:.1f}x its configured peak equals the "
            f"{fmt_num(caveat.data_parallel_workers)} data-parallel "
            "workers; that the LR was multiplied by the worker count is a hypothesis"
        )
        if caveat.is_final_lr_min_lr:
            last = fmt_num(caveat.final_lr)
            text += f" (only the peak is scaled: the last logged LR {last} is the unscaled min_lr)"
        notes.append(text + ".")
    priors = [
        short(f)
        for f in data.findings
        if str(f.get("cost_estimator") or "").endswith("_prior") and f.get("ledger") == "model"
    ]
    if priors:
        notes[0] += f" The cost of {join_words(priors)} is a prior from other runs, not measured on this one."
    return notes


def clipping_caveat(data: ReportData) -> str | None:
    """The log records gradient norms after clipping (report_caveats: grad_norm_after_clipping)."""
    caveat = data.caveat("grad_norm_after_clipping")
    if caveat is None:
        return None
    above = caveat.first_step_above
    scope = f"before step {above}" if above is not None else "in the run"
    return (
        f"{caveat.n_steps} logged gradient norms (steps {caveat.first_step}-{caveat.last_step}) sit exactly "
        f"at the clipping limit {fmt_num(caveat.limit_value)} and none {scope} is above it: the log records "
        f"norms after clipping, so the true gradient sizes {scope} are unknown."
    )


def val_set_caveat(data: ReportData) -> str | None:
    """How noisy the validation numbers are (report_caveats: val_set_small, val_set_size_unknown)."""
    if data.caveat("val_set_size_unknown") is not None:
        return (
            "The config does not give the validation set size, so how noisy the validation "
            "numbers are is unknown."
        )
    small = data.caveat("val_set_small")
    if small is None:
        return None
    text = f"The validation set is {fmt_num(small.val_examples)} examples"
    if small.accuracy_two_standard_errors is not None:
        text += (
            f": accuracy differences under about {small.accuracy_two_standard_errors:.3f} "
            f"(two standard errors at {fmt_loss(small.val_accuracy)}) are noise"
        )
    return text + "."


def duplicate_eval_caveats(data: ReportData) -> list[str]:
    frame = data.eval_metrics
    if not len(frame):
        return []
    notes = []
    counted = flag_column(frame, "is_counted", True)
    steps, losses = num_column(frame, "step"), num_column(frame, "val_loss")
    for step in sorted({s for s in steps if np.isfinite(s) and (steps == s).sum() > 1}):
        rows = steps == step
        kept = losses[rows & counted]
        others = sorted({round(float(v), 6) for v in losses[rows & ~counted] if np.isfinite(v)})
        if not len(kept) or not others:
            continue
        alt = others[0] if len(others) == 1 else others
        notes.append(
            f"Step {int(step)} was evaluated more than once (val loss "
            f"{join_words([fmt_loss(v) for v in others])} "
            f"and {fmt_loss(kept[0])}); the report keeps {fmt_loss(kept[0])}, and the "
            f"step-{int(step)} numbers "
            f"change by {fmt_loss(abs(kept[0] - (alt if isinstance(alt, float) else alt[0])))} "
            "with the other row."
        )
    return notes


def checkpoint_caveat(data: ReportData) -> str | None:
    c = data.context
    if not c or c.get("best_eval_step") is None or not data.has_events:
        return None
    if not data.events:
        return "No run events were logged, so which checkpoints were saved is unknown."
    if not c.get("n_checkpoints_saved"):
        return "The events log no checkpoint save: which weights were kept is unknown."
    if c.get("last_checkpoint_step") == c["best_eval_step"]:
        return None
    best_saved = ""
    if (
        c.get("best_checkpoint_step") == c.get("last_checkpoint_step")
        and c.get("best_checkpoint_val_loss") is not None
    ):
        best_saved = (
            f" (val loss {fmt_loss(c['best_checkpoint_val_loss'])} there, the best of the saved ones)"
        )
    elif c.get("best_checkpoint_step") is not None:
        best_saved = (
            f"; the best saved checkpoint is step {fmt_num(c['best_checkpoint_step'])} "
            f"(val loss {fmt_loss(c['best_checkpoint_val_loss'])})"
        )
    return (
        f"The best evaluation (step {fmt_num(c['best_eval_step'])}, val loss "
        f"{fmt_loss(c['best_val_loss'])}) is not "
        "a saved checkpoint: the last save in the events is step "
        f"{fmt_num(c.get('last_checkpoint_step'))}{best_saved}."
    )


@dataclass
class StepTime:
    counted_sec: float
    n_counted: int
    replayed_sec: float
    n_replayed: int
    n_missing: int
    missing_estimate_sec: float

    @property
    def work_sec(self) -> float:
        return self.counted_sec + self.replayed_sec + self.missing_estimate_sec


def step_time(data: ReportData) -> StepTime | None:
    """The step time the logs add up to (run_story, summed in SQL); None when no row has one (or
    the build's run_story predates these columns)."""
    story = data.story
    if not story.get("n_timed_rows"):
        return None
    n_missing = int(story.get("n_untimed_counted_rows") or 0)
    return StepTime(
        counted_sec=float(story.get("counted_step_time_sec") or 0.0),
        n_counted=int(story.get("n_counted_rows") or 0),
        replayed_sec=float(story.get("replayed_step_time_sec") or 0.0),
        n_replayed=int(story.get("n_replayed_rows") or 0),
        n_missing=n_missing,
        missing_estimate_sec=n_missing * float(story.get("median_step_time_sec") or 0.0),
    )


def step_time_text(st: StepTime) -> str:
    text = f"The step times of the {fmt_num(st.n_counted)} counted steps add up to {st.counted_sec:.1f} s"
    extra = []
    if st.n_replayed:
        extra.append(f"{plural(st.n_replayed, 'replayed step')} ({st.replayed_sec:.1f} s)")
    if st.n_missing:
        extra.append(
            f"{plural(st.n_missing, 'step')} with no time logged (about {st.missing_estimate_sec:.1f} s)"
        )
    if extra:
        text += f"; with {join_words(extra)} the training work took about {st.work_sec:.1f} s"
    return text + ". Restart downtime and evaluation time are not logged, so the wall time is longer."


def import_caveat(data: ReportData) -> str | None:
    """One line from the importer's notes (run_summary.import_notes): the logged names the
    metric-name resolver could not place, and the fields whose column was a low-confidence choice."""
    try:
        notes = json.loads(data.summary.get("import_notes") or "[]")
    except (TypeError, ValueError):
        return None
    notes = [str(n) for n in notes] if isinstance(notes, list) else []
    unknown = [n.removeprefix(NOT_UNDERSTOOD) for n in notes if n.startswith(NOT_UNDERSTOOD)]
    ambiguous = [n.split(":", 1)[0] for n in notes if ": ambiguous between " in n]
    parts = [f"did not understand the logged names {unknown[0]}, so they were not used"] if unknown else []
    if ambiguous:
        parts.append(
            f"chose between equally plausible columns for {join_words(ambiguous)} (the choice may be wrong)"
        )
    return f"The importer {' and '.join(parts)}; name them with an alias file or --map." if parts else None


def build_caveats(data: ReportData, consistency: list[str]) -> list[str]:
    notes = hypothesis_caveats(data)
    notes += [n for n in (import_caveat(data),) if n]
    notes += [n for n in (clipping_caveat(data), val_set_caveat(data)) if n]
    notes += duplicate_eval_caveats(data)
    notes += [n for n in (checkpoint_caveat(data),) if n]
    st = step_time(data)
    if st is not None and (st.n_replayed or st.n_missing):
        notes.append(step_time_text(st))
    if data.dbt.incomplete:
        notes.append(
            f"The last build failed ({plural(len(data.dbt.broken_nodes), 'node')} did not build): "
            "the diagnosis is incomplete and some numbers may be from an older build (top of the report)."
        )
    if consistency:
        notes.append(
            f"The tables behind this report disagree in {plural(len(consistency), 'place')} (appendix)."
        )
    return notes


# --------------------------------------------------------------------------- page one


@dataclass
class PageOne:
    what_happened: list[str]
    questions: list[tuple[str, str]]
    ledgers: list[Ledger]
    fix_first: FixFirst | None
    reruns: list[str]
    caveats: list[str]
    nothing_above_low: bool
    causes: list[Cause] = field(default_factory=list)
    glitches: list[dict[str, Any]] = field(default_factory=list)
    all_clear: str = ""  # said when nothing is above low: plainly, with the checks that could not run
    incomplete: list[str] = field(default_factory=list)  # said before anything else: the build failed


def all_clear_sentence(data: ReportData) -> str:
    """'Nothing serious found: ...; N of M checks could not run because ...' (issue 21.3)."""
    not_run: dict[str, list[str]] = {}
    for check in data.coverage:
        if not check.get("could_run"):
            reason = str(check.get("reason") or "no reason given")
            not_run.setdefault(reason, []).append(str(check.get("category")))
    text = "Nothing serious found: no finding above low severity."
    if not data.coverage:
        return text
    if not not_run:
        return f"{text} All {len(data.coverage)} checks could run."
    n = sum(len(categories) for categories in not_run.values())
    because = "; ".join(f"{reason} ({', '.join(categories)})" for reason, categories in not_run.items())
    return f"{text} {n} of {len(data.coverage)} checks could not run because: {because}."


def with_checks_not_run(data: ReportData, glitches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The one line for the config's unknown fields names the checks they stopped (check_coverage)."""
    stopped = [
        str(c["category"]) for c in data.coverage if "unknown in the config" in str(c.get("reason") or "")
    ]
    if not stopped:
        return glitches
    named = f" Checks that could not run: {join_words(stopped)}."
    return [
        {**g, "title": str(g.get("title")) + named} if g.get("finding_id") == UNKNOWN_CONFIG_FIELDS else g
        for g in glitches
    ]


def build_page_one(data: ReportData, consistency: list[str]) -> PageOne:
    causes, glitches = build_causes(data)
    glitches = with_checks_not_run(data, glitches)
    t = trajectory(data)
    # a partial or truncated log is said first, before any judgement on it
    ended = end_sentence(data)
    story = [s for s in (ended, scope_sentence(data, said_end=ended is not None)) if s]
    if t is not None:
        story.append(trend_sentence(data, t))
        story += [s for s in (dip_sentence(data, causes),) if s]
    elif len(data.eval_metrics):
        story.append("The run logged one evaluation, so its validation trend is unknown.")
    else:
        story.append("The run logged no evaluations, so its validation trajectory is unknown.")
    story += [s for s in (restart_sentence(data), checkpoint_sentence(data)) if s]
    fix = build_fix_first(data, causes)
    return PageOne(
        what_happened=story,
        questions=[
            ("Why is the final validation loss high?", why_val_loss_high(data, causes, t)),
            ("Why does the training loss look unstable?", why_train_unstable(data, causes)),
        ],
        ledgers=build_ledgers(data, causes),
        fix_first=fix,
        reruns=build_reruns(data, fix, causes),
        caveats=build_caveats(data, consistency),
        nothing_above_low=not any(is_above_low(f) for f in data.findings),
        causes=causes,
        glitches=glitches,
        all_clear=all_clear_sentence(data),
        incomplete=data.dbt.incomplete_lines(),
    )


def run_numbers(data: ReportData) -> list[tuple[str, str]]:
    """The run's numbers, each labelled for what it is."""
    s, c = data.summary, data.context
    logged, counted = s.get("steps_logged"), s.get("steps_counted")
    steps = f"{fmt_num(counted)} counted of {fmt_num(logged)} train rows logged"
    if isinstance(logged, int) and isinstance(counted, int) and logged != counted:
        steps += f" ({fmt_num(logged - counted)} replayed or duplicate rows not counted)"
    steps += f"; {fmt_steps(s.get('first_step'), s.get('last_step'))}, "
    steps += f"{fmt_num(s.get('total_steps_config'))} configured"
    rows = [("Run", str(s.get("run_name") or "unnamed run")), ("Steps", steps)]
    evals = data.eval_metrics
    accuracy_only = (
        int((evals["val_loss"].isna() & evals["val_accuracy"].notna()).sum())
        if {"val_loss", "val_accuracy"} <= set(evals.columns)
        else 0
    )
    if s.get("best_val_loss") is None and accuracy_only:
        # evaluations that logged an accuracy and no loss (overfitting:accuracy_gap reads them)
        evaluations = plural(accuracy_only, "evaluation")
        rows.append(("Best evaluation", f"no validation loss logged ({evaluations} with an accuracy only)"))
    elif s.get("best_val_loss") is None:
        rows.append(("Best evaluation", "not logged (no evaluations)"))
    else:
        rows.append(
            (
                "Best evaluation",
                f"step {fmt_num(s.get('best_eval_step'))}, val loss {fmt_loss(s['best_val_loss'])}",
            )
        )
    if c.get("last_checkpoint_step") is not None:
        at = (
            f", val loss {fmt_loss(c['last_checkpoint_val_loss'])}"
            if c.get("last_checkpoint_val_loss")
            else ""
        )
        rows.append(("Last saved checkpoint", f"step {fmt_num(c['last_checkpoint_step'])}{at}"))
    elif data.has_events:
        rows.append(("Last saved checkpoint", "none in the events"))
    if s.get("final_val_loss") is not None:
        rows.append(
            (
                "Final validation loss",
                f"{fmt_loss(s['final_val_loss'])} at step {fmt_num(s.get('final_eval_step'))}",
            )
        )
    rows.append(("Final training loss", f"{fmt_loss(s.get('final_train_loss'))} (median of the last steps)"))
    st = step_time(data)
    if st is not None:
        rows.append(("Summed step time (counted steps)", f"{st.counted_sec:.1f} s"))
        if st.n_replayed or st.n_missing:
            rows.append(
                (
                    "Training work incl. replayed and missing steps",
                    f"about {st.work_sec:.1f} s (no downtime or evaluation time)",
                )
            )
    if c.get("val_examples"):
        rows.append(("Validation set", f"{fmt_num(c['val_examples'])} examples"))
    return rows


def glitch_row(finding: dict[str, Any]) -> list[str]:
    """One line per log/record glitch: what, where, how many rows, what to do."""
    return [
        str(finding.get("title") or finding.get("finding_id")),
        fmt_steps(finding.get("first_step"), finding.get("last_step")),
        fmt_num(finding.get("steps_affected")),
        str(finding.get("recommendation") or ""),
    ]


def symptom_line(finding: dict[str, Any]) -> str:
    steps = fmt_steps(finding.get("first_step"), finding.get("last_step"))
    return f"{finding.get('title')} ({steps}, {finding.get('severity')})"
