"""Point 6 of issue 11, the part that can be checked today: an adapter's event log is a function
of (framework, knobs, session) alone, and it means the same to every reader.

- The same session under the same knobs writes the same bytes (no clock, no random ids: summary
  ids are ordinals, spill handles are content addresses).
- ``tailguard audit`` replays it to the decisions the adapter's ledger took, and
  ``Ledger.from_log`` rebuilds the same state.

Not checked here (it needs issue 10's framework presets, which do not exist yet): that the log
equals what the preset model predicts for the same framework and knobs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain", reason="install the frameworks extra (CI does)")
pytest.importorskip("langmem", reason="install the frameworks extra (CI does)")

from langchain_core.messages import HumanMessage

from tailguard.adapters.langchain import GuardedSummarizationMiddleware
from tailguard.adapters.langmem import GuardedSummarizer
from tailguard.audit.replay import replay
from tailguard.runtime.eventlog import iter_events
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tests.adapters.fakes import audit_json, conversation, recording_model


def langchain_session(work: Path, on_refuse: str) -> Ledger:
    """Three rounds of a LangChain session with the issue's knobs and a smaller trim."""
    mw = GuardedSummarizationMiddleware(recording_model(), recovery_floor_span=4, on_refuse=on_refuse,
                                        store=work / "spills" if on_refuse == "spill" else None,
                                        log=work / "log.jsonl", trigger=("tokens", 3000),
                                        keep=("messages", 20))
    state: list[Any] = conversation(120)
    for rnd in range(3):
        try:
            update = mw.before_model({"messages": state}, None)  # type: ignore[arg-type]
        except UnrecoverableCompactionError:
            update = None
        if update is not None:
            state = list(update["messages"][1:])
        state += [HumanMessage(content=f"r{rnd} {i} " + "y" * 400, id=f"r{rnd}-{i}") for i in range(60)]
    mw.guard.close()
    return mw.guard.ledger


def langmem_session(work: Path, on_refuse: str) -> Ledger:
    guard = GuardedSummarizer(recovery_floor_span=4, on_refuse=on_refuse, log=work / "log.jsonl",
                              store=work / "spills" if on_refuse == "spill" else None)
    msgs: list[Any] = conversation(100)
    running = None
    for rnd in range(2):
        try:
            result = asyncio.run(guard.asummarize_messages(msgs, running_summary=running, model=recording_model(),
                                                           max_tokens=4000, max_tokens_before_summary=9100))
            running = result.running_summary or running
        except UnrecoverableCompactionError:
            pass
        msgs = msgs + conversation(100, prefix=f"n{rnd}")
    guard.guard.close()
    return guard.guard.ledger


SESSIONS = {"langchain": langchain_session, "langmem": langmem_session}


@pytest.mark.parametrize("framework", sorted(SESSIONS))
@pytest.mark.parametrize("on_refuse", ["halt", "spill", "defer"])
def test_log_is_a_function_of_framework_knobs_and_session(tmp_path: Path, framework: str, on_refuse: str) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = SESSIONS[framework](tmp_path / "a", on_refuse)
    SESSIONS[framework](tmp_path / "b", on_refuse)
    log_a, log_b = (tmp_path / "a" / "log.jsonl").read_bytes(), (tmp_path / "b" / "log.jsonl").read_bytes()
    assert log_a == log_b
    lines = log_a.decode().splitlines()
    verdicts = [v for v in replay(iter_events(lines), profile="partitioned") if hasattr(v, "decision")]
    refusals = sum(1 for x in lines if '"event": "refusal"' in x)
    assert refusals == a.refusals and refusals > 0  # every variant meets the loss at least once
    assert all(v.decision.allowed for v in verdicts)  # only allowed compactions were committed
    assert len(verdicts) >= (2 if on_refuse == "spill" else 0)
    code, report = audit_json(str(tmp_path / "a" / "log.jsonl"))
    assert (code, report["violations"], report["refusals"]) == (0, 0, refusals)
    assert len(report["compactions"]) == len(verdicts)
    rebuilt = Ledger.from_log(tmp_path / "a" / "log.jsonl", profile="partitioned", append=False)
    assert (rebuilt.history_end, rebuilt.summaries, rebuilt.refusals) == (a.history_end, a.summaries, a.refusals)
