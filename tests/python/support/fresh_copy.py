"""A fresh copy of the checkout: what a fresh clone of it would hold, with the changes not yet committed.

The README's recipes run in such a copy (tests/python/test_readme_commands.py): the tree's files,
tracked and new, without anything git ignores (no .venv, .dbt_state, target, reports), so a recipe
must create whatever it needs. scripts/test.sh makes the copy, runs the README's first recipe
(scripts/diagnose_sample.sh, the sample's `ci` build) in it in the background and hands that build
to the tests that read the sample (support/sample_build.py); `python tests/python/support/fresh_copy.py
DEST` is the command it calls.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]  # tests/python/support/ -> the checkout


def tree_files(repo: Path = REPO) -> list[str]:
    """The checkout's files as git sees them: tracked or new, not ignored, not deleted."""
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")
    names = sorted({name for name in listed.split("\0") if name})
    return [name for name in names if os.path.lexists(repo / name)]


def fresh_copy(target: Path, repo: Path = REPO) -> Path:
    """Copy the checkout's files (tree_files) into target, which must not exist yet."""
    target.mkdir(parents=True)
    for name in tree_files(repo):
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / name, destination, follow_symlinks=False)
    return target


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/python/support/fresh_copy.py DEST (DEST must not exist)")
    fresh_copy(Path(sys.argv[1]))
