"""Session-wide test settings: caches go to a temporary directory, never the user cache."""

from __future__ import annotations

import os
import tempfile

# Set at import so that every subprocess a test starts inherits it too.
if not os.environ.get("LABREPLAY_CACHE_DIR"):
    os.environ["LABREPLAY_CACHE_DIR"] = tempfile.mkdtemp(prefix="labreplay-test-cache-")
os.environ.setdefault("MPLBACKEND", "Agg")
