from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

try:  # the runtime-only venvs of .ci/versions have Hypothesis too, but stay importable without it
    from hypothesis import settings
except ImportError:  # pragma: no cover
    pass
else:
    # No per-example deadline anywhere: CI runs its jobs side by side on 2 cores, and speed is
    # measured by the benchmarks (benchmarks/), never by timed tests. A test's own @settings
    # still sets everything else.
    settings.register_profile("tailguard", deadline=None)
    settings.load_profile("tailguard")


@pytest.fixture
def root() -> Path:
    return ROOT
