"""The importer's one-new-message path (``_Builder.fresh``) gives what the general step gives.

Most checkpoints of a thread add one message; the builder appends it without the general
:meth:`_Builder.step`. Anything but a plain new message (a summary, an id the thread had
before) must still take the step: the oracle is the same chain imported with the fast path
switched off, which must give the same log, or the same error.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.messages import AIMessage, HumanMessage

from tailguard.importers import langgraph as lg
from tailguard.importers.knobs import Knobs


def _summary(sid: str) -> HumanMessage:
    return HumanMessage(content=f"summary {sid}", id=sid, additional_kwargs={"lc_source": "summarization"})


def _both(chain: list[tuple[str, list[Any]]], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """(the import with the fast path, the import without it): a log or the error's text."""
    def imported() -> Any:
        try:
            return lg._build("db#t", "t", chain, Knobs(), names=False).lines
        except lg.ImportSourceError as exc:
            return str(exc)

    fast = imported()
    with monkeypatch.context() as m:
        m.setattr(lg._Builder, "fresh", lambda self, msg: None)
        general = imported()
    return fast, general


def test_a_summary_added_alone_takes_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    h, a, s = HumanMessage(content="q0", id="q0"), AIMessage(content="a0", id="a0"), _summary("s0")
    q1 = HumanMessage(content="q1", id="q1")
    chain: list[tuple[str, list[Any]]] = [("c0", [h]), ("c1", [h, a]), ("c2", [h, a, s]), ("c3", [h, a, s, q1])]
    fast, general = _both(chain, monkeypatch)
    assert fast == general
    assert not any('"append"' in line and "s0" in line for line in fast)


def test_a_message_back_after_it_left_is_the_steps_error(monkeypatch: pytest.MonkeyPatch) -> None:
    h, a = HumanMessage(content="q0", id="q0"), AIMessage(content="a0", id="a0")
    chain: list[tuple[str, list[Any]]] = [("c0", [h]), ("c1", [h, a]), ("c2", [h]), ("c3", [h, a])]
    fast, general = _both(chain, monkeypatch)
    assert isinstance(fast, str) and fast == general
    assert "checkpoint c3" in fast


def test_plain_appends_give_the_same_log(monkeypatch: pytest.MonkeyPatch) -> None:
    msgs = [HumanMessage(content=f"q{i}", id=f"q{i}") if i % 2 == 0 else AIMessage(content=f"a{i}", id=f"a{i}")
            for i in range(12)]
    chain = [(f"c{i}", msgs[:i + 1]) for i in range(12)]
    fast, general = _both(chain, monkeypatch)
    assert isinstance(fast, list) and fast == general and len(fast) > 12
