"""Our corpora of real public runs (corpus/*.json): every manifest is well formed, split fairly, and
still points at the bytes its keys were written for.

A manifest maps a case to its source (public repository, commit, paths, the sha256 of each file),
its half (dev: tuned on; heldout: never tuned on) and the key written before the tool ran on it
(docs/corpus.md). These tests read only the manifests, except the last one, which compares the
materialized files (``python corpus/corpus.py materialize ...``) with the recorded sha256 and is
skipped where they were never materialized. The logs themselves are never in the repository.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from run_diagnosis import project
from support.paths import REPO

MANIFESTS = sorted((REPO / "corpus").glob("*.json"))
# the corpora the judgement is scored on (issue 21: each half a third healthy, several formats);
# the reading corpora (generic.json, formats.json) only keep their halves apart
JUDGEMENT_MANIFESTS = [m for m in MANIFESTS if m.stem == "runs"]
# where `corpus.py materialize corpus/<name>.json <dir>/<name>` wrote the files (docs/corpus.md)
MATERIALIZED = Path(os.environ.get("RUN_DIAGNOSIS_CORPUS_DIR", REPO.parent / "corpus"))
# each half must be able to catch a tool that calls everything broken: at least this share healthy
MIN_HEALTHY_SHARE = 1 / 3
# ... and must not be one importer's corpus: at least this many formats per half
MIN_FORMATS_PER_HALF = 3
SHA256 = re.compile(r"^[0-9a-f]{64}$")


def corpus_module(name: str = "corpus") -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{name}_tool", REPO / "corpus" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CORPUS = corpus_module()
BUILD = corpus_module("corpus_build")


@functools.cache
def categories() -> frozenset[str]:
    """The project's finding categories, read from its check folders once (0.1 CPU-s a read)."""
    return frozenset(project.categories(REPO))


def manifest_cases() -> list[tuple[Path, str, dict[str, Any]]]:
    return [(m, name, case) for m in MANIFESTS for name, case in CORPUS.load(m).items()]


def case_id(item: tuple[Path, str, dict[str, Any]]) -> str:
    return f"{item[0].stem}:{item[1]}"


def test_there_is_a_corpus() -> None:
    assert MANIFESTS, "no corpus/*.json manifest"


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda m: m.stem)
def test_manifest_loads_with_sources_and_splits(manifest: Path) -> None:
    cases = CORPUS.load(manifest)  # raises on a missing source, a bad split or an excluded repo
    assert cases, f"{manifest.name}: no case"


@pytest.mark.parametrize("item", manifest_cases(), ids=case_id)
def test_key_is_well_formed(item: tuple[Path, str, dict[str, Any]]) -> None:
    manifest, name, case = item
    where = f"{manifest.name}: {name}"
    known = categories()
    named: dict[str, set[str]] = {}
    for field in ("expect", "also_ok", "must_not"):
        entries = case.get(field, [])
        assert isinstance(entries, list), f"{where}: {field} is not a list"
        named[field] = set()
        for entry in entries:
            alternatives = entry.split("|")
            unknown = [c for c in alternatives if c not in known]
            assert not unknown, f"{where}: {field} names unknown categories {unknown}"
            named[field].update(alternatives)
    clash = named["expect"] & named["must_not"]
    assert not clash, f"{where}: {sorted(clash)} both expected and forbidden"
    assert case.get("format"), f"{where}: no format"
    assert len(case.get("notes", "")) >= 80, f"{where}: the notes must give the numbers behind the key"
    assert isinstance(case.get("healthy", True), bool), f"{where}: healthy must be true or false"
    for series in ("train_loss", "eval_loss"):
        key = case.get(series)
        if key is None:
            continue
        assert isinstance(key.get("n"), int) and key["n"] > 0, f"{where}: {series}.n"
        points = key.get("points", [])
        assert points and all(len(p) == 2 for p in points), f"{where}: {series}.points"
        counters = [p[0] for p in points]
        # a log the script was relaunched into repeats its counter; the key says so (file order)
        if not key.get("counter_restarts"):
            assert counters == sorted(counters), f"{where}: {series}.points out of counter order"


@pytest.mark.parametrize("item", manifest_cases(), ids=case_id)
def test_source_records_every_file_and_its_digest(item: tuple[Path, str, dict[str, Any]]) -> None:
    manifest, name, case = item
    where = f"{manifest.name}: {name}"
    source = case["source"]
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), f"{where}: commit must be a full sha"
    digests = source.get("sha256", {})
    assert set(digests) == set(source["paths"]), f"{where}: sha256 must cover every path"
    assert all(SHA256.match(d) for d in digests.values()), f"{where}: malformed sha256"
    out = Path("/nonexistent")
    written = {str(t.relative_to(out / name)) for t in CORPUS.case_files(case, out, name).values()}
    # `files` names what score_corpus reads: the written files, or a folder holding them all
    # (an MLflow experiment folder); each written file lies under one of its entries
    named = set(case.get("files", []))
    covers = {w for w in written if w in named or any(w.startswith(f"{n}/") for n in named)}
    assert covers == written, f"{where}: files differ from where the paths land"
    assert all(n in written or any(w.startswith(f"{n}/") for w in written) for n in named), where


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda m: m.stem)
def test_halves_share_no_repository(manifest: Path) -> None:
    repos: dict[str, set[str]] = defaultdict(set)
    for case in CORPUS.load(manifest).values():
        repos[case["source"]["repo"].lower()].add(case["split"])
    straddling = sorted(repo for repo, splits in repos.items() if len(splits) > 1)
    assert not straddling, f"{manifest.name}: repositories in both halves: {straddling}"


@pytest.mark.parametrize("manifest", JUDGEMENT_MANIFESTS, ids=lambda m: m.stem)
def test_halves_are_fair(manifest: Path) -> None:
    cases = CORPUS.load(manifest)
    halves: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for case in cases.values():
        halves[case["split"]].append(case)
    for half in CORPUS.SPLITS:
        members = halves[half]
        assert members, f"{manifest.name}: the {half} half is empty"
        healthy = sum(CORPUS.is_healthy(c) for c in members)
        assert healthy >= MIN_HEALTHY_SHARE * len(members), (
            f"{manifest.name}: {half} has {healthy} healthy of {len(members)}"
        )
        formats = {c["format"] for c in members}
        assert len(formats) >= MIN_FORMATS_PER_HALF, f"{manifest.name}: {half} covers {sorted(formats)}"


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda m: m.stem)
def test_materialized_files_still_match(manifest: Path) -> None:
    out = MATERIALIZED / manifest.stem
    if not out.is_dir():
        pytest.skip(f"{out} absent: run `python corpus/corpus.py materialize {manifest} {out}`")
    changed = CORPUS.changed_files(CORPUS.load(manifest), out)
    assert not changed, f"materialized files differ from the manifest's sha256: {changed}"


def write_manifest(tmp_path: Path, cases: dict[str, Any]) -> Path:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    return path


def one_case(**source: Any) -> dict[str, Any]:
    base = {"repo": "someone/somewhere", "commit": "0" * 40, "paths": ["a/log.txt"]}
    return {"c": {"source": {**base, **source}, "split": "dev", "format": "text", "expect": []}}


def test_load_refuses_what_the_corpus_must_not_hold(tmp_path: Path) -> None:
    assert CORPUS.load(write_manifest(tmp_path, one_case()))
    bad_split = one_case()
    bad_split["c"]["split"] = "test"
    with pytest.raises(CORPUS.CorpusError, match="split"):
        CORPUS.load(write_manifest(tmp_path, bad_split))
    with pytest.raises(CORPUS.CorpusError, match="sha256"):
        CORPUS.load(write_manifest(tmp_path, one_case(sha256={"other/path": "0" * 64})))
    stand_in = hashlib.sha256(b"someone/somewhere").hexdigest()  # the real list names no repo
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CORPUS, "excluded_hashes", lambda: {stand_in})
        with pytest.raises(CORPUS.CorpusError, match="excluded"):
            CORPUS.load(write_manifest(tmp_path, one_case()))


def test_changed_files_notices_a_changed_snapshot(tmp_path: Path) -> None:
    case = one_case(sha256={"a/log.txt": hashlib.sha256(b"loss 1.0\n").hexdigest()}, strip="a/")["c"]
    target = tmp_path / "c" / "log.txt"
    target.parent.mkdir()
    target.write_bytes(b"loss 1.0\n")
    assert CORPUS.changed_files({"c": case}, tmp_path) == []
    target.write_bytes(b"loss 9.0\n")
    assert CORPUS.changed_files({"c": case}, tmp_path) == ["c: a/log.txt"]
    # a transcription's digest: the snapshot's own bytes may differ (materialize writes them)
    case["source"]["transcribed"] = True
    assert CORPUS.changed_files({"c": case}, tmp_path) == []


def test_materialize_writes_what_it_can_and_names_the_rest(tmp_path: Path) -> None:
    """A snapshot without the keyed commit skips that case, named, and the others are still written;
    a case with no snapshot here whose files an earlier copy already holds keeps its key."""
    snapshot = tmp_path / "mirror" / "someone+somewhere" / "repo"
    snapshot.mkdir(parents=True)
    git = ["git", "-C", str(snapshot), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (snapshot / "log.txt").write_text("loss 1.0\n", encoding="utf-8")
    subprocess.run([*git, "add", "log.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "log"], check=True)
    rev = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    head = rev.stdout.strip()
    cases = {
        "kept": {"source": {"repo": "someone/somewhere", "commit": head, "paths": ["log.txt"]}},
        "gone": {"source": {"repo": "someone/somewhere", "commit": "1" * 40, "paths": ["log.txt"]}},
        "copied": {"source": {"repo": "elsewhere/absent", "commit": "2" * 40, "paths": ["x/run.csv"]}},
        "missing": {"source": {"repo": "elsewhere/absent", "commit": "2" * 40, "paths": ["y/run.csv"]}},
    }
    for case in cases.values():
        case.update(split="dev", format="text", expect=[])
    out = tmp_path / "out"
    (out / "copied").mkdir(parents=True)
    (out / "copied" / "run.csv").write_text("step,loss\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CORPUS, "MIRROR", tmp_path / "mirror")
        assert CORPUS.materialize(write_manifest(tmp_path, cases), out) == 1
    assert (out / "kept" / "log.txt").read_text(encoding="utf-8") == "loss 1.0\n"
    assert not (out / "gone").exists()
    assert sorted(json.loads((out / "expected.json").read_text(encoding="utf-8"))) == ["copied", "kept"]


def test_a_healthy_key_is_one_with_nothing_expected_unless_it_says_otherwise() -> None:
    assert CORPUS.is_healthy({"expect": []})
    assert not CORPUS.is_healthy({"expect": ["overfitting"]})
    assert not CORPUS.is_healthy({"expect": [], "healthy": False})
    assert not CORPUS.is_healthy({"expect": [], "negative": True})


def test_the_one_build_scores_a_case_as_score_corpus_does() -> None:
    """corpus_build.py: found at low or above (info is a note), false at medium or above on a
    must_not category, nothing found on a case not read, a negative case refused when not read."""
    key = {"expect": ["overfitting", "nan_loss|loss_spikes"], "must_not": ["no_learning", "run_restart"]}
    reported = [
        ("overfitting", "low", "overfitting:3"),
        ("loss_spikes", "info", "loss_spikes:9"),
        ("no_learning", "medium", "no_learning:run"),
        ("run_restart", "low", "run_restart:40"),
    ]
    outcome = BUILD.score_case(key, None, reported)
    assert (outcome["found"], outcome["expected"]) == (1, 2)
    assert outcome["missed"] == ["nan_loss|loss_spikes"] and outcome["false"] == ["no_learning"]
    unread = BUILD.score_case(key, "RunImportError: no loss", reported)
    assert (unread["read"], unread["found"], unread["false"]) == (False, 0, [])
    assert BUILD.score_case({"negative": True}, "BadInput: not a log", []) == {"negative_refused": True}
    scores = {"a": {"split": "dev", **outcome, "loss": True}, "b": {"split": "dev", **unread}}
    assert BUILD.half_sums(scores) == ["dev: read=1/2 found=1/4 false=1 loss=1/1"]


def test_the_one_build_builds_the_held_out_half_only_when_asked(tmp_path: Path) -> None:
    """A check on dev never builds (scores, prints) the held-out half: its findings are not seen before
    its one first score. --split heldout asks for it by name."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "expected.json").write_text("{}", encoding="utf-8")
    asked: list[str] = []

    def record(manifest: Path, corpus: Path, out: Path, split: str, jobs: int) -> dict[str, Any]:
        asked.append(split)
        return {}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BUILD, "build", record)
        for extra in ([], ["--split", "heldout"]):
            BUILD.main([str(tmp_path / "m.json"), str(corpus), "--out", str(tmp_path / "out"), *extra])
    assert asked == ["dev", "heldout"]


def test_the_one_build_compares_two_scores_by_what_changed() -> None:
    old = {
        "same": {"split": "dev", "read": True, "found": 1, "reported": ["a:low:a:1"]},
        "noted": {"split": "dev", "read": True, "found": 0, "reported": []},
        "better": {"split": "dev", "read": True, "found": 0, "reported": ["b:info:b:2"]},
    }
    new = {
        "same": {"split": "dev", "read": True, "found": 1, "reported": ["a:low:a:1"]},
        "noted": {"split": "dev", "read": True, "found": 0, "reported": ["c:info:c:5"]},  # info only
        "better": {"split": "dev", "read": True, "found": 1, "reported": ["b:medium:b:2"]},
    }
    assert BUILD.compare(old, new) == ["better [dev]", "   found: 0 -> 1", "   + b:medium:b:2"]
