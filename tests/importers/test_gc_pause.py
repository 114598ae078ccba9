"""The cyclic collector is paused only for the span of one import (.gc_pause)."""

from __future__ import annotations

import gc

import pytest

from tailguard.importers.gc_pause import paused


def test_paused_inside_and_enabled_after_even_on_error() -> None:
    assert gc.isenabled()
    with paused():
        assert not gc.isenabled()
        with paused():  # nested: still off, and the inner end does not turn it on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    try:
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
