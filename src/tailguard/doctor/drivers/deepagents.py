"""deepagents' ``SummarizationMiddleware`` against the ``deepagents.SummarizationMiddleware``
preset, and the deepagents adapter on the same knobs.

deepagents' middleware runs as installed (``wrap_model_call`` with a ``ModelRequest`` carrying
a system message, LangChain's ``GenericFakeChatModel`` as summarizer, the drivers' token
counter) over a real ``FilesystemBackend`` in a temporary directory whose writes fail on the
appends the session names (6b ``spill`` with ``on_failure = "proceed"``: the failure is an
input of the session). The preset's model is stepped on the same turns with the same failures;
every compaction is compared: deleted, shown whole, kept, the earlier summary, and what the
offload wrote to the backend.
"""

from __future__ import annotations

import functools
import io
import random
import tempfile
from pathlib import Path
from typing import Any

from deepagents.backends import FilesystemBackend
from deepagents.backends.protocol import EditResult, WriteResult
from deepagents.middleware.summarization import (
    SUMMARIZATION_EVENT_KEY,
    SUMMARIZATION_SESSION_ID_KEY,
    SummarizationMiddleware,
)
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, SystemMessage

from tailguard.adapters.deepagents import GuardedDeepAgentsSummarizationMiddleware
from tailguard.doctor.drivers.langchain_messages import (
    compare,
    make_counter,
    observe,
    summarizer,
    toml_trigger,
    turn_messages,
    turn_of,
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

__all__ = ["PRESET_NAME", "SYSTEM", "FlakyBackend", "cases", "random_knobs", "run", "toml_knobs"]

PRESET_NAME = "deepagents.SummarizationMiddleware"
SYSTEM = SystemMessage(content="You are a careful agent. " * 4)
FIXED_SESSION = [Turn("human", (200,)), *[Turn("tools", (100, 150, 150)) for _ in range(14)]]
FIXED_KNOBS: dict[str, Any] = {"trigger": ("tokens", 2000), "keep": ("messages", 6), "trim": 500,
                               "summary_tokens": 100, "failures": {8}}
#: every offload fails: the trimmer's losses are recoverable nowhere, the guard must refuse
FAILING_KNOBS: dict[str, Any] = {**FIXED_KNOBS, "failures": set(range(1, 41))}


class FlakyBackend(FilesystemBackend):
    """A real ``FilesystemBackend`` whose writes fail while ``failing`` is set."""

    failing = False

    def write(self, *args: Any, **kwargs: Any) -> Any:
        return WriteResult(error="injected write failure") if self.failing else super().write(*args, **kwargs)

    def edit(self, *args: Any, **kwargs: Any) -> Any:
        return EditResult(error="injected write failure") if self.failing else super().edit(*args, **kwargs)


def random_knobs(rng: random.Random) -> dict[str, Any]:
    """Knobs as the differential test draws them (tests/presets/test_deepagents_preset.py)."""
    trigger = ("tokens", rng.randint(400, 5000)) if rng.random() < 0.5 else ("messages", rng.randint(3, 40))
    keep = ("messages", rng.randint(1, 20)) if rng.random() < 0.5 else ("tokens", rng.randint(50, 2500))
    trim = None if rng.random() < 0.3 else rng.randint(100, 3000)
    failures = {rng.randint(1, 40) for _ in range(rng.randint(0, 10))}
    return {"trigger": trigger, "keep": keep, "trim": trim, "summary_tokens": rng.randint(20, 400),
            "failures": failures}


def toml_knobs(k: dict[str, Any]) -> str:
    trim = "false" if k["trim"] is None else k["trim"]
    return (f'trigger = {toml_trigger(k["trigger"])}\nkeep = ["{k["keep"][0]}", {k["keep"][1]}]\n'
            f'trim_tokens_to_summarize = {trim}\nsummary_tokens = {k["summary_tokens"]}\n'
            'truncate_args_settings = false\n')  # the class's default (None); the factory's is on


def offloaded(root: Path) -> str:
    return "".join(p.read_text() for p in sorted(root.rglob("*.md")))


def run(session: list[Turn], k: dict[str, Any], policy_k: dict[str, Any] | None = None) -> int:
    """Drive deepagents and the model in lockstep; return the compactions compared. The model
    is translated from ``policy_k`` when given (a wrong translation, for the tests)."""
    policy = preset_policy(PRESET_NAME, toml_knobs(policy_k or k), extra=f"base_tokens = {len(str(SYSTEM.content))}")
    model = summarizer()
    compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        backend = FlakyBackend(root_dir=root, virtual_mode=True)
        mw = SummarizationMiddleware(model, backend=backend, trigger=k["trigger"], keep=k["keep"],
                                     token_counter=make_counter(k["summary_tokens"]),
                                     trim_tokens_to_summarize=k["trim"])
        sim = ModelRun(policy)
        messages: list[Any] = []
        state: Any = {"messages": messages}
        covered: set[int] = set()  # what the real summary covers
        offloaded_turns: set[int] = set()  # what the real offload holds
        for index, turn in enumerate(session):
            where = f"append {index + 1}"
            messages = [*messages, *turn_messages(index, turn)]
            state["messages"] = messages
            event = state.get(SUMMARIZATION_EVENT_KEY)
            before = mw._apply_event_to_messages(messages, event)
            fails = index + 1 in k["failures"]
            backend.failing = fails
            calls, written = len(model.calls), offloaded(root)
            request = ModelRequest(model=model, messages=messages, system_message=SYSTEM, tools=[],
                                   state=state, runtime=None)
            response = mw.wrap_model_call(request, lambda req: ModelResponse(result=[AIMessage(content="ok")]))
            real = None
            command = getattr(response, "command", None)
            if command is not None and SUMMARIZATION_EVENT_KEY in command.update:
                state.update(command.update)
                after = mw._apply_event_to_messages(messages, state[SUMMARIZATION_EVENT_KEY])
                prompt = model.calls[-1] if len(model.calls) > calls else ""
                real = observe(before, after, prompt)
                new = offloaded(root)[len(written):]
                spilled = tuple(sorted({t for m in before if (t := turn_of(m)) is not None and str(m.content) in new}))
                if fails and spilled != ():
                    raise Mismatch(f"{where}: a failed write offloaded turns {spilled}", compared + 1)
                real.spilled = spilled
                if not state.get(SUMMARIZATION_SESSION_ID_KEY):
                    raise Mismatch(f"{where}: the summarization event has no session id", compared + 1)
            predicted, kinds = sim.append(turn, spill_fails=fails)
            try:
                outcome = compare(real, predicted, kinds, index + 1, [t.messages for t in session])
            except Mismatch as exc:
                raise Mismatch(str(exc), compared + 1 if real is not None else compared) from None
            if real is not None and predicted is not None and outcome == "same" and real.spilled != predicted.spilled:
                raise Mismatch(f"{where}: offloaded {real.spilled}, the model spilled {predicted.spilled}",
                               compared + 1)
            if real is not None:
                compared += 1
                covered = covers(covered, real)
                offloaded_turns |= set(real.spilled)
            if outcome == "diverged" and real is not None:  # tail_rounds_up, as declared
                sim.resync(real.kept, covered, offloaded_turns)
    return compared


def model_findings(session: list[Turn], k: dict[str, Any]) -> list[str]:
    sim = ModelRun(preset_policy(PRESET_NAME, toml_knobs(k), extra=f"base_tokens = {len(str(SYSTEM.content))}"))
    found: list[str] = []
    for index, turn in enumerate(session):
        found += sim.append(turn, spill_fails=index + 1 in k["failures"])[1]
    return found


def run_adapter(session: list[Turn], k: dict[str, Any]) -> tuple[int, bool]:
    """The guarded middleware (floor 0, ``on_refuse="halt"``) over ``session`` with the same
    backend failures: (compactions it allowed, whether it refused one)."""
    allowed = 0
    with tempfile.TemporaryDirectory() as tmp:
        backend = FlakyBackend(root_dir=Path(tmp), virtual_mode=True)
        model = summarizer()
        mw = GuardedDeepAgentsSummarizationMiddleware(
            model, backend=backend, recovery_floor_span=0, on_refuse="halt", log=io.StringIO(),
            trigger=k["trigger"], keep=k["keep"], token_counter=make_counter(k["summary_tokens"]),
            trim_tokens_to_summarize=k["trim"])
        messages: list[Any] = []
        state: Any = {"messages": messages}
        for index, turn in enumerate(session):
            messages = [*messages, *turn_messages(index, turn)]
            state["messages"] = messages
            backend.failing = index + 1 in k["failures"]
            request = ModelRequest(model=model, messages=messages, system_message=SYSTEM, tools=[], state=state,
                                   runtime=None)
            try:
                response = mw.wrap_model_call(request, lambda req: ModelResponse(result=[AIMessage(content="ok")]))
            except UnrecoverableCompactionError:
                return allowed, True
            command = getattr(response, "command", None)
            if command is not None and SUMMARIZATION_EVENT_KEY in command.update:
                state.update(command.update)
                allowed += 1
    return allowed, False


def adapter_agrees(session: list[Turn], k: dict[str, Any], *, must_refuse: bool = False) -> int:
    """The adapter and the preset's model on ``session`` (:func:`~tailguard.doctor.harness.adapter_verdict`)."""
    return adapter_verdict(model_findings(session, k), *run_adapter(session, k), must_refuse=must_refuse)


_label = knob_label


def cases(rng: random.Random, sessions: int) -> list[Case]:
    out = [Case("preset", _label(FIXED_KNOBS, FIXED_SESSION), lambda: run(FIXED_SESSION, FIXED_KNOBS))]
    for _ in range(sessions - 1):
        k, session = random_knobs(rng), random_turns(rng)
        out.append(Case("preset", _label(k, session), functools.partial(run, session, k)))
    out.append(Case("adapter", _label(FAILING_KNOBS, FIXED_SESSION),
                    lambda: adapter_agrees(FIXED_SESSION, FAILING_KNOBS, must_refuse=True)))
    k = dict(random_knobs(rng), trim=None, failures=set())
    session = random_turns(rng)
    out.append(Case("adapter", _label(k, session), lambda: adapter_agrees(session, k)))
    return out
