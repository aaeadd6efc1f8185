"""The type checker over autograder/: mypy, as the fast lane runs it (`make test-fast`), so an annotation
that no longer says what the code does fails here, not in a grading run. Imports of packages without
type information are taken as untyped (`--ignore-missing-imports`); everything else is checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_autograder_type_checks():
    cache = ROOT / "build" / "mypy-cache"   # a second run takes a second instead of about ten
    done = subprocess.run([sys.executable, "-m", "mypy", "autograder", "--ignore-missing-imports",
                           "--cache-dir", str(cache)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert done.stdout.startswith("Success: no issues found"), done.stdout
