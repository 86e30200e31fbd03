"""Where the tests find the repository and the shared material beside it.

SHARED is the one place that knows the team's shared folder sits beside the checkout
(`../shared`: real-logs/, sample-run/, calibration/; read in place, never copied into the repo).
A test that needs a file there skips when it is absent, naming the path.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]  # tests/python/support/ -> the checkout
SEEDS = REPO / "seeds"
SHARED = REPO.parent / "shared"
REAL_LOGS = SHARED / "real-logs"
