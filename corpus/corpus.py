"""Our own corpora of real public training logs: keys written by hand, logs read in place.

The logs belong to other projects and are never copied into this repository. What the repository
holds is one manifest per corpus (``corpus/<name>.json``): for each case, where its files come from
(a public repository, a commit and the paths in it), which half it belongs to (``dev``, tuned on, or
``heldout``, never tuned on), and the key a careful engineer wrote *before* running the tool on it,
in the shape ``../shared/tools/score_corpus.py`` reads (``files``, ``expect``, ``must_not``,
``train_loss``, ``eval_loss``, ``negative``, ``notes``).

    python corpus/corpus.py materialize corpus/runs.json /work/corpus/runs
        # each case's files out of the repository snapshots under /work/.mirror (the search
        # tool's `fetch` brings them there), plus the expected.json score_corpus reads
    python corpus/corpus.py score corpus/runs.json /work/corpus/runs [--split heldout]
        # score_corpus.py on one half (or both, one after the other), its summary line per half
    python corpus/corpus.py check corpus/runs.json
        # the manifest's shape: every case has a source, a split, a key; prints the counts

A case whose repository snapshot is absent is reported and skipped, never guessed, unless an earlier
copy already holds every one of its files (a transcription copied by hand): it keeps its key. A
snapshot that lacks the keyed commit or path (history rewritten, another branch) skips that case,
named, and the others are still written. A source may
record the sha256 of each path (``source.sha256``): materialize refuses a blob that differs, and
``changed_files`` lists materialized files that no longer match (a changed snapshot is noticed).
A source marked ``transcribed`` was keyed on files written from the file index's text (``read_file``)
when no snapshot could be fetched: its sha256 is the transcription's, so a blob that differs is
written with a note (the snapshot's bytes win) instead of refused, and ``changed_files`` leaves it out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("RUN_DIAGNOSIS_MIRROR", "/work/.mirror"))
SCORER = REPO.parent / "shared" / "tools" / "score_corpus.py"
EXCLUDE = REPO.parent / "shared" / "real-logs" / "EXCLUDE.sha256"
SPLITS = ("dev", "heldout")
# what score_corpus.py reads from a key; the rest of a case (source, split, format) is ours
KEY_FIELDS = ("files", "expect", "also_ok", "must_not", "train_loss", "eval_loss", "negative", "notes")


class CorpusError(Exception):
    """The manifest or a case's source cannot be used; the message names the case."""


def load(manifest: Path) -> dict[str, dict[str, Any]]:
    try:
        cases = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise CorpusError(f"{manifest}: {error}") from error
    if not isinstance(cases, dict):
        raise CorpusError(f"{manifest}: expected an object of cases")
    excluded = excluded_hashes()
    for name, case in cases.items():
        source = case.get("source") or {}
        missing = [k for k in ("repo", "commit", "paths") if not source.get(k)]
        if missing:
            raise CorpusError(f"{manifest}: case {name}: source lacks {', '.join(missing)}")
        if case.get("split") not in SPLITS:
            raise CorpusError(f"{manifest}: case {name}: split must be one of {SPLITS}")
        if hashlib.sha256(source["repo"].lower().encode()).hexdigest() in excluded:
            raise CorpusError(f"{manifest}: case {name}: {source['repo']} is excluded (EXCLUDE.sha256)")
        recorded = source.get("sha256", {})
        if not isinstance(recorded, dict) or set(recorded) - set(source["paths"]):
            raise CorpusError(f"{manifest}: case {name}: source sha256 must map its paths to digests")
    return cases


def case_files(case: dict[str, Any], out: Path, name: str) -> dict[str, Path]:
    """Each source path of a case -> where materialize writes it under OUT/NAME."""
    source = case["source"]
    return {path: destination(out / name, path, source.get("strip", "")) for path in source["paths"]}


def changed_files(cases: dict[str, dict[str, Any]], out: Path) -> list[str]:
    """Materialized files whose sha256 is not the one the manifest recorded (absent cases are skipped)."""
    changed = []
    for name, case in sorted(cases.items()):
        if case["source"].get("transcribed"):  # its sha256 is a transcription's: the blob may differ
            continue
        recorded = case["source"].get("sha256", {})
        for path, target in case_files(case, out, name).items():
            digest = hashlib.sha256(target.read_bytes()).hexdigest() if target.is_file() else None
            if path in recorded and digest is not None and digest != recorded[path]:
                changed.append(f"{name}: {path}")
    return changed


def is_healthy(case: dict[str, Any]) -> bool:
    """A run with nothing to report: no expected finding, unless the key says otherwise (``healthy``:
    false marks a run whose real problem has no finding category, so ``expect`` stays empty)."""
    if case.get("negative"):
        return False
    return bool(case.get("healthy", not case.get("expect")))


def excluded_hashes() -> set[str]:
    if not EXCLUDE.is_file():
        return set()
    return {line.split()[0] for line in EXCLUDE.read_text().splitlines() if line.strip()}


def git_dir(repo: str) -> Path:
    """The snapshot's git directory: a bare repository, or the .git of a checked-out one."""
    snapshot = MIRROR / repo.replace("/", "+") / "repo"
    return snapshot / ".git" if (snapshot / ".git").is_dir() else snapshot


def destination(case_dir: Path, path: str, strip: str) -> Path:
    relative = path[len(strip) :].lstrip("/") if strip and path.startswith(strip) else Path(path).name
    target = (case_dir / relative).resolve()
    if case_dir.resolve() not in target.parents:
        raise CorpusError(f"{path}: would be written outside {case_dir}")
    return target


def materialize(manifest: Path, out: Path) -> int:
    cases = load(manifest)
    out.mkdir(parents=True, exist_ok=True)
    keys: dict[str, dict[str, Any]] = {}
    absent: Counter[str] = Counter()
    unreadable: list[str] = []
    kept: list[str] = []
    for name, case in sorted(cases.items()):
        source = case["source"]
        gd = git_dir(source["repo"])
        held = all(
            destination(out / name, path, source.get("strip", "")).is_file() for path in source["paths"]
        )
        if not gd.is_dir():
            if held:
                # no snapshot here, but an earlier copy of every file (a transcription copied by hand):
                # the case keeps its key
                keys[name] = {k: case[k] for k in KEY_FIELDS if k in case}
                kept.append(name)
            else:
                absent[source["repo"]] += 1
            continue
        blobs: dict[str, bytes] = {}
        for path in source["paths"]:
            blob = subprocess.run(
                ["git", "--git-dir", str(gd), "show", f"{source['commit']}:{path}"], capture_output=True
            )
            if blob.returncode != 0:
                # a snapshot without the keyed commit (history rewritten, another branch): the case is
                # skipped and named, the others are still written; a transcription held here (keyed on
                # the file index's text of that commit) keeps its key
                if source.get("transcribed") and held:
                    keys[name] = {k: case[k] for k in KEY_FIELDS if k in case}
                    kept.append(name)
                else:
                    unreadable.append(f"{name}: {source['repo']}@{source['commit'][:10]}:{path}")
                break
            blobs[path] = blob.stdout
        if len(blobs) < len(source["paths"]):
            continue
        case_dir = out / name
        for path, data in blobs.items():
            target = destination(case_dir, path, source.get("strip", ""))
            target.parent.mkdir(parents=True, exist_ok=True)
            recorded = source.get("sha256", {}).get(path)
            if recorded and hashlib.sha256(data).hexdigest() != recorded:
                where = f"{source['repo']}@{source['commit'][:10]}:{path}"
                if not source.get("transcribed"):
                    raise CorpusError(f"case {name}: {where}: sha256 differs from the manifest's")
                note = f"  note: case {name}: {where}: the blob differs from the transcription keyed"
                print(note, file=sys.stderr)
            target.write_bytes(data)
        keys[name] = {k: case[k] for k in KEY_FIELDS if k in case}
    (out / "expected.json").write_text(
        json.dumps(keys, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"{len(keys)} of {len(cases)} case(s) in {out} ({len(kept)} kept from an earlier copy)")
    for repo, n in sorted(absent.items()):
        print(f"  absent: {repo} ({n} case(s)): fetch github:{repo} first", file=sys.stderr)
    for where in unreadable:
        print(f"  not in the snapshot (the keyed commit or path): {where}", file=sys.stderr)
    return 0 if not absent and not unreadable else 1


def score(manifest: Path, out: Path, split: str | None, project: Path) -> int:
    cases = load(manifest)
    present = (
        json.loads((out / "expected.json").read_text(encoding="utf-8"))
        if (out / "expected.json").exists()
        else {}
    )
    status = 0
    for half in [split] if split else SPLITS:
        names = sorted(n for n, c in cases.items() if c["split"] == half and n in present)
        if not names:
            print(f"{half}: no materialized case")
            continue
        print(f"== {half}: {len(names)} case(s)", flush=True)
        p = subprocess.run([sys.executable, str(SCORER), str(out), *names, "--project", str(project)])
        status = status or p.returncode
    return status


def check(manifest: Path) -> int:
    cases = load(manifest)
    by_split = Counter(c["split"] for c in cases.values())
    repos = {c["source"]["repo"] for c in cases.values()}
    formats = Counter(c.get("format", "?") for c in cases.values())
    healthy = sum(1 for c in cases.values() if is_healthy(c))
    print(f"{len(cases)} cases ({dict(by_split)}), {len(repos)} repositories, {healthy} healthy")
    print(f"formats: {dict(formats)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("materialize", help="write each case's files and expected.json into OUT")
    m.add_argument("manifest", type=Path)
    m.add_argument("out", type=Path)
    s = sub.add_parser("score", help="score_corpus.py on the materialized cases, one half at a time")
    s.add_argument("manifest", type=Path)
    s.add_argument("out", type=Path)
    s.add_argument("--split", choices=SPLITS)
    s.add_argument("--project", type=Path, default=REPO)
    c = sub.add_parser("check", help="the manifest's shape and counts")
    c.add_argument("manifest", type=Path)
    a = parser.parse_args(argv)
    try:
        if a.command == "materialize":
            return materialize(a.manifest, a.out)
        if a.command == "score":
            return score(a.manifest, a.out, a.split, a.project)
        return check(a.manifest)
    except CorpusError as error:
        print(f"corpus: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
