"""LangChain v1's ``SummarizationMiddleware`` against the ``langchain.SummarizationMiddleware``
preset, and the LangChain adapter on the same knobs.

The installed middleware runs offline (``before_model`` with LangChain's own
``GenericFakeChatModel`` as summarizer); at every append the preset's model is stepped on the
same turn, and every compaction is compared
(:func:`~tailguard.doctor.drivers.langchain_messages.compare`: deleted, shown whole, kept
verbatim, the earlier summary), with the preset's declared differences checked as declared.
The adapter (``GuardedSummarizationMiddleware``, ``on_refuse="halt"``) runs the same session:
it must allow every compaction of a session in which the preset's model finds nothing, and
refuse the fixed session whose trimmer drops what it never summarized.
"""

from __future__ import annotations

import functools
import io
import random
from typing import Any

from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.messages import RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from tailguard.adapters.langchain import GuardedSummarizationMiddleware
from tailguard.doctor.drivers.langchain_messages import (
    compare,
    make_counter,
    observe,
    summarizer,
    toml_trigger,
    turn_messages,
)
from tailguard.doctor.harness import (
    Case,
    Mismatch,
    ModelRun,
    Turn,
    adapter_verdict,
    covers,
    knob_label,
    preset_policy,
    random_turns,
)
from tailguard.runtime.seed_api import UnrecoverableCompactionError

__all__ = ["PRESET_NAME", "cases", "random_knobs", "run", "run_adapter", "run_with_policy", "toml_knobs"]

PRESET_NAME = "langchain.SummarizationMiddleware"
#: a session that compacts at every few appends, with tool turns; its trimmer (500 tokens)
#: leaves candidates unsummarized, so the guarded middleware must refuse it
FIXED_SESSION = [Turn("human", (200,)), *[Turn("tools", (100, 150, 150)) for _ in range(12)]]
FIXED_KNOBS: dict[str, Any] = {"trigger": ("tokens", 2000), "keep": ("messages", 6), "trim": 500,
                               "summary_tokens": 100}


def random_knobs(rng: random.Random) -> dict[str, Any]:
    """Knobs as the differential test draws them (tests/presets/test_langchain_preset.py)."""
    trigger = ("tokens", rng.randint(300, 5000)) if rng.random() < 0.5 else ("messages", rng.randint(3, 40))
    keep = ("messages", rng.randint(1, 20)) if rng.random() < 0.5 else ("tokens", rng.randint(50, 2500))
    trim = None if rng.random() < 0.3 else rng.randint(100, 3000)
    return {"trigger": trigger, "keep": keep, "trim": trim, "summary_tokens": rng.randint(20, 400)}


def toml_knobs(k: dict[str, Any]) -> str:
    trim = "false" if k["trim"] is None else k["trim"]
    return (f'trigger = {toml_trigger(k["trigger"])}\nkeep = ["{k["keep"][0]}", {k["keep"][1]}]\n'
            f'trim_tokens_to_summarize = {trim}\nsummary_tokens = {k["summary_tokens"]}\n')


def run(session: list[Turn], k: dict[str, Any]) -> tuple[int, int]:
    """Drive LangChain and the model in lockstep; return (compactions compared, appends)."""
    return run_with_policy(session, k, k)


def run_with_policy(session: list[Turn], k: dict[str, Any], policy_k: dict[str, Any]) -> tuple[int, int]:
    """``run`` with the model translated from ``policy_k`` (a wrong translation, for the tests)."""
    policy = preset_policy(PRESET_NAME, toml_knobs(policy_k))
    model = summarizer()
    mw = SummarizationMiddleware(model, trigger=k["trigger"], keep=k["keep"],
                                 token_counter=make_counter(k["summary_tokens"]),
                                 trim_tokens_to_summarize=k["trim"])
    sim = ModelRun(policy)
    messages: list[Any] = []
    compared = 0
    covered: set[int] = set()  # what the real summary covers
    for index, turn in enumerate(session):
        messages = [*messages, *turn_messages(index, turn)]
        calls = len(model.calls)
        update = mw.before_model({"messages": messages}, None)  # type: ignore[arg-type]
        real = None
        if update is not None:
            out = update["messages"]
            if not (isinstance(out[0], RemoveMessage) and out[0].id == REMOVE_ALL_MESSAGES):
                raise Mismatch(f"append {index + 1}: the update does not start with RemoveMessage(REMOVE_ALL)",
                               compared + 1)
            prompt = model.calls[-1] if len(model.calls) > calls else ""
            real = observe(messages, out[1:], prompt)
            messages = list(out[1:])
        predicted, kinds = sim.append(turn)
        try:
            outcome = compare(real, predicted, kinds, index + 1, [t.messages for t in session])
        except Mismatch as exc:
            raise Mismatch(str(exc), compared + 1 if real is not None else compared) from None
        if real is not None:
            compared += 1
            covered = covers(covered, real)
        if outcome == "diverged" and real is not None:  # tail_rounds_up, as declared
            sim.resync(real.kept, covered)
    return compared, len(session)


def compactions_compared(session: list[Turn], k: dict[str, Any]) -> int:
    return run(session, k)[0]


def model_findings(session: list[Turn], k: dict[str, Any]) -> list[str]:
    """What the preset's model finds on ``session`` (floor 0): holes and overflows, in order."""
    sim = ModelRun(preset_policy(PRESET_NAME, toml_knobs(k)))
    found: list[str] = []
    for turn in session:
        found += sim.append(turn)[1]
    return found


def run_adapter(session: list[Turn], k: dict[str, Any]) -> tuple[int, bool]:
    """The guarded middleware (floor 0, ``on_refuse="halt"``) over ``session``: (compactions it
    allowed, whether it refused one)."""
    log = io.StringIO()
    mw = GuardedSummarizationMiddleware(summarizer(), recovery_floor_span=0, on_refuse="halt", log=log,
                                        trigger=k["trigger"], keep=k["keep"],
                                        token_counter=make_counter(k["summary_tokens"]),
                                        trim_tokens_to_summarize=k["trim"])
    messages: list[Any] = []
    allowed = 0
    for index, turn in enumerate(session):
        messages = [*messages, *turn_messages(index, turn)]
        try:
            update = mw.before_model({"messages": messages}, None)
        except UnrecoverableCompactionError:
            return allowed, True
        if update is not None:
            allowed += 1
            messages = list(update["messages"][1:])
    return allowed, False


def adapter_agrees(session: list[Turn], k: dict[str, Any], *, must_refuse: bool = False) -> int:
    """The adapter and the preset's model on ``session`` (:func:`~tailguard.doctor.harness.adapter_verdict`)."""
    return adapter_verdict(model_findings(session, k), *run_adapter(session, k), must_refuse=must_refuse)


_label = knob_label


def cases(rng: random.Random, sessions: int) -> list[Case]:
    out = [Case("preset", _label(FIXED_KNOBS, FIXED_SESSION), lambda: run(FIXED_SESSION, FIXED_KNOBS)[0])]
    for _ in range(sessions - 1):
        k, session = random_knobs(rng), random_turns(rng)
        out.append(Case("preset", _label(k, session), functools.partial(compactions_compared, session, k)))
    out.append(Case("adapter", _label(FIXED_KNOBS, FIXED_SESSION),
                    lambda: adapter_agrees(FIXED_SESSION, FIXED_KNOBS, must_refuse=True)))
    k = dict(random_knobs(rng), trim=None)
    session = random_turns(rng)
    out.append(Case("adapter", _label(k, session), lambda: adapter_agrees(session, k)))
    return out
