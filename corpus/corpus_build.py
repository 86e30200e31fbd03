"""The materialized cases of one half of a corpus in one dbt build, scored by score_corpus.py's rules.

``corpus.py score`` runs ``scripts/diagnose.py`` once per case (a dbt build each: about 15 s, so
two and a half hours for 600 cases). Checking that a rule changes only what it should needs every
dev case after each change, so this imports each case into a warehouse folder (the importers of
``run-diagnosis diagnose``), builds them all at once (one dbt build, about ten minutes for 500
cases) and scores each by the rules of ``../shared/tools/score_corpus.py`` (read, found at low or
above, false serious at medium or above, the loss series). A source holding several runs (a sweep
folder) is read as one run here, where ``diagnose`` splits it: such a case counts as not read.

    .venv/bin/python corpus/corpus_build.py corpus/runs.json /work/corpus/runs --out /tmp/ms-new
    .venv/bin/python corpus/corpus_build.py corpus/runs.json /work/corpus/runs --out /tmp/ms-new \\
        --compare /tmp/ms-old/score.json      # the cases whose outcome or findings changed
    .venv/bin/python corpus/corpus_build.py corpus/runs.json /work/corpus/runs --out /tmp/ms-h \\
        --split heldout                       # the held-out half: only when asked for by name

The dev half is the default: a check of a rule on dev never builds, scores or prints the held-out
half, so its findings are not seen before its one first score.

Writes OUT/score.json (case -> split, read, found, expected, missed, false, loss, reported) and
prints one line per case and the sums of each half. Run it with the project's interpreter: it
imports ``run_diagnosis`` and DuckDB. ``RUN_DIAGNOSIS_PROJECT_DIR`` and ``PYTHONPATH`` point it at
another checkout (an export of an older commit, to compare against), ``RUN_DIAGNOSIS_SCORER_DIR`` at
the folder of ``score_corpus.py`` when that checkout has no ``../shared/tools`` beside it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# score_corpus.py's folder: ../shared/tools beside the checkout (RUN_DIAGNOSIS_SCORER_DIR: elsewhere)
SCORER_DIR = Path(os.environ.get("RUN_DIAGNOSIS_SCORER_DIR", REPO.parent / "shared" / "tools"))
SERIOUS = ("critical", "high", "medium")
OUTCOMES = ("read", "found", "false", "loss", "negative_refused")


def scorer() -> Any:
    """score_corpus.py, the rules the project is judged by (read in place, never copied)."""
    sys.path.insert(0, str(SCORER_DIR))
    import score_corpus

    return score_corpus


def score_case(
    key: dict[str, Any], error: str | None, reported: list[tuple[str, str, str]]
) -> dict[str, Any]:
    """One case's outcome by score_corpus's rules, from its import error (None: read) and its
    findings as (category, severity, finding_id); the loss series is scored apart (loss_right)."""
    if key.get("negative"):
        return {"negative_refused": error is not None}
    read = error is None
    shown = {category for category, severity, _ in reported if severity != "info"}
    serious = {category for category, severity, _ in reported if severity in SERIOUS}
    expect = key.get("expect", [])
    found = [e for e in expect if read and set(e.split("|")) & shown]
    return {
        "read": read,
        "error": error,
        "reported": sorted(f"{c}:{s}:{f}" for c, s, f in reported),
        "expected": len(expect),
        "found": len(found),
        "missed": [e for e in expect if e not in found],
        "false": sorted(serious & set(key.get("must_not", []))) if read else [],
    }


def loss_right(key: dict[str, Any], run_dir: Path) -> bool:
    """The noted training-loss points are in the canonical series written into run_dir."""
    rules = scorer()
    noted = [key["train_loss"], *key["train_loss"].get("alternatives", [])]
    return any(
        rules.series_matches(s, k) for s in rules.canonical_series(str(run_dir), "train") for k in noted
    )


def half_sums(scores: dict[str, dict[str, Any]]) -> list[str]:
    """One line per half: read, found, false serious, loss series right."""
    lines = []
    for half in sorted({s["split"] for s in scores.values()}):
        cases = [s for s in scores.values() if s["split"] == half and "read" in s]
        lines.append(
            f"{half}: read={sum(s['read'] for s in cases)}/{len(cases)} "
            f"found={sum(s['found'] for s in cases)}/{sum(s['expected'] for s in cases)} "
            f"false={sum(len(s['false']) for s in cases)} "
            f"loss={sum(s.get('loss', False) for s in cases)}/{sum('loss' in s for s in cases)}"
        )
    return lines


def compare(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[str]:
    """The cases whose outcome changed, or whose findings above info did, each with what changed."""
    lines = []
    for case in sorted(set(old) | set(new)):
        before, after = old.get(case, {}), new.get(case, {})
        shown_before = {r for r in before.get("reported", []) if ":info:" not in r}
        shown_after = {r for r in after.get("reported", []) if ":info:" not in r}
        changed = [k for k in OUTCOMES if before.get(k) != after.get(k)]
        if not changed and shown_before == shown_after:
            continue
        lines.append(f"{case} [{after.get('split', before.get('split'))}]")
        lines += [f"   {k}: {before.get(k)} -> {after.get(k)}" for k in changed]
        lines += [f"   - {r}" for r in sorted(shown_before - shown_after)]
        lines += [f"   + {r}" for r in sorted(shown_after - shown_before)]
    return lines


def _import_case(job: tuple[str, str, str]) -> tuple[str, str | None]:
    """Import one case's target into warehouse/<case>/ (a worker process); its error, or None."""
    case, target, warehouse = job
    from run_diagnosis import diagnose

    diagnose.say = diagnose.detail = lambda message: None  # one line a case is enough
    diagnose.step = lambda number, message: None
    try:
        diagnose.write_canonical(diagnose.read_source(Path(target), None), Path(warehouse) / case)
    except Exception as error:
        return case, f"{type(error).__name__}: {str(error)[:200]}"
    except SystemExit as error:
        return case, f"exit {error.code}"
    return case, None


def _findings(db_path: Path) -> dict[str, list[tuple[str, str, str]]]:
    import duckdb

    with duckdb.connect(str(db_path), read_only=True) as con:
        rows = con.sql("select run_id, category, severity, finding_id from findings").fetchall()
    found: dict[str, list[tuple[str, str, str]]] = {}
    for run_id, category, severity, finding_id in rows:
        found.setdefault(run_id, []).append((category, severity, finding_id))
    return found


def build(manifest: Path, corpus: Path, out: Path, split: str, jobs: int) -> dict[str, dict[str, Any]]:
    """Import, build and score every materialized case of one half."""
    from run_diagnosis import diagnose

    cases = json.loads(manifest.read_text(encoding="utf-8"))
    keys = json.loads((corpus / "expected.json").read_text(encoding="utf-8"))
    names = sorted(n for n in keys if n in cases and cases[n]["split"] == split)
    warehouse = out / "warehouse"
    rules = scorer()
    work = [(n, rules.target_of(str(corpus / n), keys[n].get("files", [])), str(warehouse)) for n in names]
    print(f"importing {len(work)} case(s)", flush=True)
    with multiprocessing.Pool(jobs) as pool:
        errors = dict(pool.map(_import_case, work, chunksize=4))
    print(
        f"read {sum(e is None for e in errors.values())} of {len(errors)}; building them together", flush=True
    )
    result = diagnose.build(warehouse, out, keep_going=True)
    reported = _findings(result.db_path)
    scores: dict[str, dict[str, Any]] = {}
    for name in names:
        outcome = score_case(keys[name], errors[name], reported.get(name, []))
        if keys[name].get("train_loss") and "read" in outcome:
            outcome["loss"] = bool(outcome["read"]) and loss_right(keys[name], warehouse / name)
        scores[name] = {"split": cases[name]["split"], **outcome}
    return scores


def _case_line(name: str, s: dict[str, Any]) -> str:
    if "negative_refused" in s:
        return f"{name} [{s['split']}]: negative {'refused' if s['negative_refused'] else 'NOT REFUSED'}"
    parts = [f"{name} [{s['split']}]: read={s['read']} found {s['found']}/{s['expected']}"]
    parts += [f"missed {','.join(s['missed'])}"] if s["missed"] else []
    parts += [f"FALSE {','.join(s['false'])}"] if s["false"] else []
    parts += [f"loss {'right' if s['loss'] else 'WRONG'}"] if "loss" in s else []
    parts += [f"ERR {s['error']}"] if s["error"] else []
    return " ".join(parts)


def _print(lines: Iterable[str]) -> None:
    for line in lines:
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", type=Path, help="the corpus manifest (corpus/runs.json)")
    parser.add_argument("corpus", type=Path, help="its materialized cases (corpus.py materialize)")
    parser.add_argument(
        "--out", type=Path, required=True, help="folder for the warehouse, database and score.json"
    )
    parser.add_argument(
        "--split",
        choices=("dev", "heldout"),
        default="dev",
        help="the half to build (default dev: the held-out half only when asked for by name)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="processes importing cases (default 2)")
    parser.add_argument("--compare", type=Path, help="an earlier score.json: print what changed")
    a = parser.parse_args(argv)
    if not (a.corpus / "expected.json").is_file():
        parser.error(f"{a.corpus}/expected.json absent: run corpus.py materialize first")
    a.out.mkdir(parents=True, exist_ok=True)
    scores = build(a.manifest, a.corpus, a.out, a.split, a.jobs)
    (a.out / "score.json").write_text(json.dumps(scores, indent=1) + "\n", encoding="utf-8")
    _print(_case_line(n, s) for n, s in scores.items())
    _print(half_sums(scores))
    if a.compare:
        earlier = json.loads(a.compare.read_text(encoding="utf-8"))
        # one half scored: the other half's cases were not built (nor shown)
        earlier = {name: s for name, s in earlier.items() if name in scores}
        _print(["", f"changed against {a.compare}:"])
        _print(compare(earlier, scores) or ["(nothing)"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
