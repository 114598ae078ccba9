"""The OpenHands SDK's condensers against the ``openhands.CondenserPipeline`` preset, and the
adapter (``GuardedCondenser``) on the knobs ``check-config`` calls safe.

The SDK runs as installed (openhands-sdk needs Python >= 3.12 and cannot share a venv with
the other frameworks: ``.venvs/py3.12-openhands``). Its own ``LLMSummarizingCondenser`` (and a
``PipelineCondenser`` around it) condenses a conversation's ``View``, rebuilt from the event log
with ``View.from_events`` after every event, as the agent loop does; its summarizer is the SDK's
own ``TestLLM``, recording each prompt and answering with the markers it could read. Every
condensation is compared with the preset's model stepped on the same events: the events
forgotten, those shown whole to the summarizer, whether the previous summary was shown, and the
events that stayed. Then the marker oracle: every event's marker is in the final view or in the
summary.

Event 0 is the system prompt event (the agent loop puts it first); every event is a turn of
one message whose size in tokens is its text's length in characters. The token rule
(:func:`run_tokens`) runs with an agent LLM counting one token per character and
``max_tokens`` set: the same condensations, the same events forgotten and kept (the newest
under half the limit less the first ``keep_first`` events' tokens; a hard context reset under
``minimum_progress``), everything forgotten shown whole; it stops after a reset that forgets
pinned events (``hard_reset_forgets_pinned``).

The adapter runs a persisted ``ConversationState`` (a temporary directory) with the knobs of
tests/adapters/data/openhands_agreement.toml (floor 2, events of at most 500 characters): it
must allow every condensation, and the marker oracle must find nothing lost.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import random
import re
import tempfile
import uuid
from pathlib import Path
from typing import Any

# offline: litellm reads its bundled model map instead of fetching it; no banner on import
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

from openhands.sdk import Agent
from openhands.sdk.context.condenser import LLMSummarizingCondenser, PipelineCondenser
from openhands.sdk.context.condenser.base import CondenserBase
from openhands.sdk.context.view import View
from openhands.sdk.conversation.state import ConversationState
from openhands.sdk.event import Condensation, MessageEvent, SystemPromptEvent
from openhands.sdk.event.base import Event as SdkEvent, LLMConvertibleEvent
from openhands.sdk.llm import Message, TextContent
from openhands.sdk.testing import TestLLM
from openhands.sdk.workspace import LocalWorkspace
from pydantic import PrivateAttr

from tailguard.adapters.openhands import GuardedCondenser, bind
from tailguard.doctor.harness import Case, Mismatch, ModelRun, Turn, content
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.presets.openhands import PREVIEW_CHARS
from tailguard.runtime.seed_api import UnrecoverableCompactionError

__all__ = ["CharCountLLM", "Outcome", "PaddedLLM", "RecordingLLM", "cases", "check_outcome", "policy_of",
           "random_knobs", "random_session", "recording_llm", "run", "run_tokens", "token_policy"]

TAG = re.compile(r"\[t(\d+)m0\]")
#: the knobs of tests/adapters/data/openhands_agreement.toml (check-config: safe with floor 2)
AGREEMENT: dict[str, Any] = {"max_size": 10, "keep_first": 2, "floor": 2, "sizes": (12, 500)}


class RecordingLLM(TestLLM):
    """The SDK's ``TestLLM``: each call's prompt recorded, the reply the tags it could read (an
    event's tag when the event's whole text is in the prompt, and the tags of a summary shown)."""

    __test__ = False
    _prompts: list[str] = PrivateAttr(default_factory=list)
    _texts: dict[int, str] = PrivateAttr(default_factory=dict)

    def completion(self, messages: list[Message], *args: Any, **kwargs: Any) -> Any:
        prompt = "\n".join(c.text for m in messages for c in m.content if isinstance(c, TextContent))
        self._prompts.append(prompt)
        self._scripted_responses.append(
            Message(role="assistant", content=[TextContent(text="SUMMARY " + " ".join(self.read(prompt)))]))
        return super().completion(messages, *args, **kwargs)

    def read(self, prompt: str) -> list[str]:
        whole = {i for i, text in self._texts.items() if text in prompt}
        summarized = {int(x) for line in prompt.splitlines() if "SUMMARY" in line for x in TAG.findall(line)}
        return [f"[t{i}m0]" for i in sorted(whole | summarized)]


def recording_llm() -> RecordingLLM:
    return RecordingLLM(model="test-model", usage_id="condenser")


def event(index: int, size: int, role: str) -> SdkEvent:
    text = content(index, 0, size)
    if index == 0:
        return SystemPromptEvent(source="agent", system_prompt=TextContent(text=text), tools=[])
    return MessageEvent(source="user" if role == "user" else "agent",
                        llm_message=Message(role=role, content=[TextContent(text=text)]))


def policy_of(k: dict[str, Any]) -> Policy:
    text = (f'name = "differential"\nturn_tokens = [1, 1200]\nmessages_per_turn = [1, 1]\n'
            f'floor = 0\nfloor_unit = "messages"\n[framework]\nname = "openhands.CondenserPipeline"\n'
            f'max_size = {k["max_size"]}\nkeep_first = {k["keep_first"]}\n'
            f'summary_tokens = {k["summary_tokens"]}\n')
    if k.get("chars") is not None:
        text += f'max_event_chars = {k["chars"]}\n'
    return parse_policy(text, "differential.toml")


@dataclasses.dataclass
class Outcome:
    compared: int
    lost: set[str]  # markers in no final view event and no summary
    model_holes: int


def run(sizes: list[int], roles: list[str], k: dict[str, Any], *, policy: Policy | None = None,
        pipeline: bool = False, llm: RecordingLLM | None = None) -> Outcome:
    """Append the events one by one; condense the view after each, as the agent does."""
    llm = llm or recording_llm()
    condenser: CondenserBase = LLMSummarizingCondenser(llm=llm, max_size=k["max_size"], keep_first=k["keep_first"])
    if pipeline:
        condenser = PipelineCondenser(condensers=[condenser])
    sim = ModelRun(policy or policy_of(k))
    log: list[SdkEvent] = []
    turn_of: dict[str, int] = {}
    compared = holes = 0
    pinned = max(k["keep_first"], 1)
    summary_text: str | None = None
    for index, size in enumerate(sizes):
        ev = event(index, size, roles[index])
        llm._texts[index] = content(index, 0, size)
        turn_of[ev.id] = index
        log.append(ev)
        view = View.from_events(log)
        calls = len(llm._prompts)
        result = condenser.condense(view)
        predicted, kinds = sim.append(Turn("human", (size,)))
        holes += sum(1 for x in kinds if x.startswith("hole:"))
        where = f"event {index} (max_size {k['max_size']}, keep_first {k['keep_first']})"
        if not isinstance(result, Condensation):
            if predicted is not None:
                raise Mismatch(f"{where}: the model compacted, the SDK did not", compared)
            continue
        if predicted is None:
            raise Mismatch(f"{where}: the SDK condensed, the model did not trigger", compared + 1)
        if len(llm._prompts) != calls + 1:
            raise Mismatch(f"{where}: {len(llm._prompts) - calls} summarizer calls for one condensation", compared + 1)
        prompt = llm._prompts[-1]
        present = [turn_of[e.id] for e in view.events if e.id in turn_of]
        forgotten = tuple(sorted(turn_of[i] for i in result.forgotten_event_ids if i in turn_of))
        shown = tuple(t for t in present if llm._texts[t] in prompt)
        log.append(result)
        after = View.from_events(log)
        kept = tuple(turn_of[e.id] for e in after.events if e.id in turn_of and turn_of[e.id] >= pinned)
        summary_shown = None if summary_text is None else summary_text in prompt
        real: tuple[Any, ...] = (forgotten, shown, kept, summary_shown)
        model: tuple[Any, ...] = (predicted.deleted, predicted.shown, predicted.kept,
                 None if summary_text is None else predicted.summary_shown)
        if k.get("chars") is None:  # event_preview, as declared: the model shows a subset
            whole = tuple(t for t in forgotten if sizes[t] <= PREVIEW_CHARS)
            whole_summary = None if summary_text is None else len(summary_text) <= PREVIEW_CHARS
            if shown != whole or summary_shown != whole_summary:
                raise Mismatch(f"{where}: the SDK showed {shown} (summary {summary_shown}), not the events "
                               f"of at most {PREVIEW_CHARS} characters {whole} (summary {whole_summary})", compared + 1)
            if not set(predicted.shown) <= set(shown) or model[3]:
                raise Mismatch(f"{where}: the model showed {predicted.shown} (summary {model[3]}), more "
                               f"than the SDK {shown}", compared + 1)
            real, model = real[::2], model[::2]  # forgotten and kept: exact
        if real != model:
            raise Mismatch(f"{where}: the SDK forgot {forgotten}, showed {shown}, kept {kept}, previous "
                           f"summary shown {summary_shown}; the model deleted {model[0]}, showed "
                           f"{model[1]}, kept {model[2]}, summary shown {model[3]}", compared + 1)
        summary_text = result.summary
        compared += 1
    final = View.from_events(log)
    text = "\n".join(c.text for m in LLMConvertibleEvent.events_to_messages(final.events) for c in m.content
                     if isinstance(c, TextContent))  # what the agent's LLM is sent
    lost = {f"[t{i}m0]" for i in range(len(sizes))} - set(llm.read(text))
    return Outcome(compared, lost, holes)


def check_outcome(out: Outcome, k: dict[str, Any]) -> None:
    """The marker oracle against the model: shown whole, nothing is lost and the model finds no
    hole; under the careful model, a lost marker is always a hole the model reported."""
    if k["chars"] is not None:
        if out.lost or out.model_holes:
            raise Mismatch(f"markers lost on the SDK {sorted(out.lost)}, holes the model reports {out.model_holes}; "
                           "with every event shown whole neither may happen")
    elif out.lost and not out.model_holes:
        raise Mismatch(f"markers lost on the SDK {sorted(out.lost)} where the model reports no hole")


def random_knobs(rng: random.Random) -> dict[str, Any]:
    """As the differential test draws them (tests/presets/test_openhands_preset.py)."""
    max_size = rng.randint(4, 24)
    return {"max_size": max_size, "keep_first": rng.randint(0, max_size // 2 - 2),
            "summary_tokens": rng.randint(20, 300), "chars": rng.choice([PREVIEW_CHARS, None])}


def random_session(rng: random.Random, max_events: int = 60, longest: int = 900) -> tuple[list[int], list[str]]:
    count = rng.randint(1, max_events)
    sizes = [rng.randint(12, longest) for _ in range(count)]
    return sizes, ["system", *(rng.choice(["user", "assistant"]) for _ in range(count - 1))]


class CharCountLLM(TestLLM):
    """The agent's LLM for the token rule: the SDK's ``TestLLM`` with a context window and a
    token count of one token per character of the messages' text (the turn sizes here)."""

    __test__ = False

    def get_token_count(self, messages: list[Message], *args: Any, **kwargs: Any) -> int:
        return sum(len(c.text) for m in messages for c in m.content if isinstance(c, TextContent))


class PaddedLLM(RecordingLLM):
    """A summarizer whose summary is exactly ``SUMMARY_CHARS`` characters (the model's
    ``summary_tokens``), its markers first."""

    __test__ = False

    def completion(self, messages: list[Message], *args: Any, **kwargs: Any) -> Any:
        prompt = "\n".join(c.text for m in messages for c in m.content if isinstance(c, TextContent))
        self._prompts.append(prompt)
        text = ("SUMMARY " + " ".join(self.read(prompt)) + " ").ljust(SUMMARY_CHARS, "s")
        if len(text) != SUMMARY_CHARS:
            raise Mismatch(f"too many markers for a summary of {SUMMARY_CHARS} characters (the session is too long)")
        self._scripted_responses.append(Message(role="assistant", content=[TextContent(text=text)]))
        return TestLLM.completion(self, messages, *args, **kwargs)


SUMMARY_CHARS = 500


def token_policy(limit: int, keep_first: int) -> Policy:
    """The preset with only the token rule firing (``max_size`` 10,000), every event shown whole."""
    return parse_policy(
        f'name = "tokens"\nturn_tokens = [1, 1200]\nmessages_per_turn = [1, 1]\nfloor = 0\n'
        f'floor_unit = "messages"\n[framework]\nname = "openhands.CondenserPipeline"\nmax_size = 10000\n'
        f'keep_first = {keep_first}\nmax_tokens = {limit}\nsummary_tokens = {SUMMARY_CHARS}\n'
        f'max_event_chars = {PREVIEW_CHARS}\n', "tokens.toml")


def run_tokens(sizes: list[int], roles: list[str], limit: int, keep_first: int,
               policy: Policy | None = None) -> tuple[int, int]:
    """The token rule on the SDK (``max_tokens = limit``) against the preset: the same
    condensations (the trigger is exact), the same events forgotten and kept (the keep under
    ``limit // 2`` less the first ``keep_first`` events' tokens, and the hard context reset under
    ``minimum_progress``), everything forgotten shown whole. Returns the condensations compared
    and the hard context resets seen; after a reset that forgets pinned events
    (``hard_reset_forgets_pinned``: ``keep_first`` of 2 or more) the comparison stops."""
    llm = PaddedLLM(model="test-model", usage_id="condenser")
    agent = CharCountLLM(model="test-model", usage_id="agent")
    condenser = LLMSummarizingCondenser(llm=llm, max_size=10_000, keep_first=keep_first, max_tokens=limit)
    sim = ModelRun(policy or token_policy(limit, keep_first))
    log: list[SdkEvent] = []
    turn_of: dict[str, int] = {}
    compared = resets = 0
    pinned = max(keep_first, 1)
    for index, size in enumerate(sizes):
        ev = event(index, size, roles[index])
        llm._texts[index] = content(index, 0, size)
        turn_of[ev.id] = index
        log.append(ev)
        view = View.from_events(log)
        present = [turn_of[e.id] for e in view.events if e.id in turn_of]
        result = condenser.condense(view, agent_llm=agent)
        predicted, _ = sim.append(Turn("human", (size,)))
        where = f"event {index} (max_tokens {limit}, keep_first {keep_first})"
        if not isinstance(result, Condensation):
            if predicted is not None:
                raise Mismatch(f"{where}: the model compacted, the SDK did not", compared)
            continue
        if predicted is None:
            raise Mismatch(f"{where}: the SDK condensed, the model did not trigger", compared + 1)
        forgotten = {turn_of[i] for i in result.forgotten_event_ids if i in turn_of}
        shown = {t for t in forgotten if llm._texts[t] in llm._prompts[-1]}
        if shown != forgotten:
            raise Mismatch(f"{where}: the SDK forgot {sorted(forgotten)} but showed {sorted(shown)}", compared + 1)
        log.append(result)
        after = [turn_of[e.id] for e in View.from_events(log).events if e.id in turn_of]
        kept = tuple(t for t in after if t >= pinned)
        resets += forgotten == {t for t in present if t > 0}  # a hard context reset
        if kept != predicted.kept or forgotten - set(range(pinned)) != set(predicted.deleted):
            raise Mismatch(f"{where}: the model deleted {predicted.deleted} and kept {predicted.kept}, the SDK "
                           f"forgot {sorted(forgotten)} and kept {kept}", compared + 1)
        compared += 1
        if any(t < pinned for t in forgotten):  # a hard context reset forgets the pinned events too
            return compared, resets
    return compared, resets


class _MarkerLLM(TestLLM):
    """The SDK's ``TestLLM``: the summary is every tag its prompt holds."""

    __test__ = False

    def completion(self, messages: list[Message], *args: Any, **kwargs: Any) -> Any:
        prompt = "\n".join(c.text for m in messages for c in m.content if isinstance(c, TextContent))
        tags = sorted(set(TAG.findall(prompt)), key=int)
        self._scripted_responses.append(Message(role="assistant", content=[TextContent(
            text="SUMMARY " + " ".join(f"[t{t}m0]" for t in tags))]))
        return super().completion(messages, *args, **kwargs)


def adapter_allows(sizes: list[int]) -> int:
    """``GuardedCondenser`` (the agreement's floor, ``on_refuse="halt"``) over a persisted
    conversation of ``sizes``: no refusal, nothing lost; returns the condensations."""
    roles = ["system", *(["user", "assistant"] * len(sizes))[: len(sizes) - 1]]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        agent = Agent(llm=TestLLM(model="test-model", usage_id="agent"), tools=[])
        state = ConversationState.create(id=uuid.uuid4(), agent=agent, workspace=LocalWorkspace(working_dir=str(root)),
                                         persistence_dir=str(root / "conversation"))
        inner = LLMSummarizingCondenser(llm=_MarkerLLM(model="test-model", usage_id="condenser"),
                                        max_size=AGREEMENT["max_size"], keep_first=AGREEMENT["keep_first"])
        guard = GuardedCondenser(inner=inner, recovery_floor_span=AGREEMENT["floor"], on_refuse="halt",
                                 log=str(root / "logs") + "/")
        summaries: list[str] = []
        condensations = 0
        for index, size in enumerate(sizes):
            state.append_event(event(index, size, roles[index]))
            try:
                with bind(state):
                    result = guard.condense(state.view)
            except UnrecoverableCompactionError as exc:
                raise Mismatch(f"event {index}: the adapter refused a condensation of a session the preset calls "
                               f"safe with floor {AGREEMENT['floor']}: {exc}", condensations + 1) from None
            if isinstance(result, Condensation):
                condensations += 1
                if result.summary:
                    summaries.append(result.summary)
                state.append_event(result)
        final = state.view
        text = "\n".join(c.text for m in LLMConvertibleEvent.events_to_messages(final.events) for c in m.content
                         if isinstance(c, TextContent))
        held = {int(t) for t in TAG.findall(text)} | {int(t) for s in summaries[-1:] for t in TAG.findall(s)}
        lost = set(range(len(sizes))) - held
        if lost:
            raise Mismatch(f"the adapter allowed every condensation, yet markers {sorted(lost)} are held nowhere",
                           condensations)
    return condensations


def cases(rng: random.Random, sessions: int) -> list[Case]:
    fixed = {"max_size": 10, "keep_first": 2, "summary_tokens": 50, "chars": PREVIEW_CHARS}
    sizes, roles = [100] * 60, ["system", *(["user", "assistant"] * 60)[:59]]

    def checked(s: list[int], r: list[str], k: dict[str, Any], pipeline: bool) -> int:
        out = run(s, r, k, pipeline=pipeline)
        check_outcome(out, k)
        return out.compared

    out = [Case("preset", f"knobs {fixed}, 60 events of 100", lambda: checked(sizes, roles, fixed, False))]
    for _ in range(sessions - 1):
        k, (s, r), pipeline = random_knobs(rng), random_session(rng), rng.random() < 0.5
        if k["chars"] is not None:
            s = [min(size, 300) for size in s]
        out.append(Case("preset", f"knobs {k}, {len(s)} events, pipeline {pipeline}",
                        functools.partial(checked, s, r, k, pipeline)))
    for _ in range(max(1, sessions // 4)):  # the token rule, as the differential test draws it
        (s, r), limit, first = random_session(rng, 40, 300), rng.randint(1500, 4000), rng.randint(0, 3)
        out.append(Case("preset", f"token rule: max_tokens {limit}, keep_first {first}, sizes {s}",
                        functools.partial(lambda *a: run_tokens(*a)[0], s, r, limit, first)))
    lo, hi = AGREEMENT["sizes"]
    agreement = [rng.randint(lo, hi) for _ in range(rng.randint(15, 45))]
    out.append(Case("adapter", f"agreement knobs, sizes {agreement}", lambda: adapter_allows(agreement)))
    return out
