#!/usr/bin/env python3
"""`python scripts/diagnose.py SOURCE --out DIR` is `run-diagnosis diagnose SOURCE --out DIR`.

Kept for what calls the diagnosis by this path: corpus scorers (`../shared/tools/score_corpus.py`
runs `scripts/diagnose.py TARGET --out OUT` with a given interpreter) and users' scripts written
before the console script. It runs the checkout's own package, whichever interpreter runs it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from run_diagnosis.cli import main

if __name__ == "__main__":
    sys.exit(main(["diagnose", *sys.argv[1:]]))
