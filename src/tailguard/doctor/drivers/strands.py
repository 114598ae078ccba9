"""Strands Agents' conversation managers against the two Strands presets, and the adapter
(``GuardedConversationManager``) on the same sessions.

Strands runs as installed: the real ``Agent``, its tool loop and its
``SlidingWindowConversationManager`` / ``SummarizingConversationManager``, on a
:class:`ScriptedModel`, a subclass of Strands' provider interface (``strands.models.Model``) that
streams canned events. Strands 1.65 ships no test model, so this is its provider extension point
with a script behind it, not an imitation of the agent loop.

Every message carries a unique tag ``[m<i>]`` (``i`` its index among the messages the session
appended: prompts, tool calls, tool results, answers), and every summary the model writes carries
``[s<k>]``; what each summary call was shown is recorded, so the marker oracle follows summaries
transitively. A message's size in tokens is its characters (text blocks, tool-result texts, a tool
call's input as JSON), and the model counts a request the same way and raises
``ContextWindowOverflowException`` above ``window``: the provider's overflow.

The preset's model is stepped beside Strands and compared (:func:`compare_sliding`,
:func:`compare_summarizing`):

- sliding window: a turn is an invocation; after each one, the invocations still in
  ``agent.messages`` must be exactly the model's verbatim turns, and a turn the model drops is a
  hole exactly when Strands dropped its messages (``per_turn`` too: the same state after each
  invocation);
- summarizing: a turn is a message or a tool call with its result; at every model request the
  harness knows which summary calls Strands made before it (the provider overflowed); the model
  must compact at the same turn, every message Strands summarized must have been shown whole
  (the previous summary first), Strands' count must follow ``summary_ratio`` as the declared
  difference says, and the model then continues from Strands' state.

Then the marker oracle: a tag no later context or summary holds is lost. A *compaction* is an
invocation after which Strands' sliding window had dropped something, or a model request before
which Strands summarized.

The adapter runs sessions with the guarded manager (``on_refuse="halt"``): on a sliding window it
must refuse at the invocation where the preset's model (at the guard's floor) finds its first hole
or floor finding, and allow every trim before it; on the summarizer with a floor of
``preserve_recent_messages - 1`` (safe in the preset) it must allow every summary.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import random
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any

from strands import Agent, ToolContext, tool
from strands.agent.conversation_manager import SlidingWindowConversationManager, SummarizingConversationManager
from strands.models.model import Model
from strands.types.exceptions import ContextWindowOverflowException

from tailguard.adapters.strands import GuardedConversationManager
from tailguard.doctor.harness import Case, Mismatch, ModelRun, Turn
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.presets.strands import SLIDING, SUMMARIZING
from tailguard.runtime.seed_api import UnrecoverableCompactionError

__all__ = [
    "SUMMARY_SYSTEM",
    "SUMMARY_TAG",
    "TAG",
    "Invocation",
    "ScriptedModel",
    "Session",
    "SlidingCase",
    "Step",
    "SummarizingCase",
    "adapter_agrees_sliding",
    "adapter_allows_summaries",
    "build",
    "cases",
    "compare_sliding",
    "compare_sliding_messages",
    "compare_summarizing",
    "context_tags",
    "expected_counts",
    "invocation",
    "long_session",
    "lost",
    "message_tags",
    "of_messages",
    "policy",
    "random_sliding",
    "random_summarizing",
]

TAG = re.compile(r"\[m(\d+)\]")
SUMMARY_TAG = re.compile(r"\[s(\d+)\]")
SUMMARY_PROMPT = "Please summarize this conversation."
CALL_OVERHEAD = len(json.dumps({"note": ""}))  # a tool call's input JSON around its note


def pad(tag: str, size: int) -> str:
    """``size`` characters starting with ``tag``."""
    return tag + "x" * max(0, size - len(tag))


def block_size(block: dict[str, Any]) -> int:
    if "text" in block:
        return len(block["text"])
    if "toolUse" in block:
        return len(json.dumps(block["toolUse"].get("input", {})))
    if "toolResult" in block:
        return sum(len(x.get("text", "")) for x in block["toolResult"].get("content", []))
    return 0


def message_size(message: dict[str, Any]) -> int:
    return sum(block_size(b) for b in message["content"])


def message_tags(message: dict[str, Any]) -> list[int]:
    return [int(t) for t in TAG.findall(json.dumps(message["content"]))]


@dataclass
class Step:
    """One answer of the model: a text of ``size``, or (``result`` set) a call of ``probe`` whose
    input is ``size`` characters and whose result is ``result`` characters."""

    size: int
    result: int | None = None
    stop: bool = False  # the tool ends the invocation after its result (agent.cancel(after_current_tools=True))


@dataclass
class Script:
    steps: list[Step] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    results: dict[str, tuple[str, int, bool]] = field(default_factory=dict)  # call -> (result tag, size, stop)


class ScriptedModel(Model):
    """Strands' provider interface playing a script; ``window``: raise the provider's overflow above it."""

    def __init__(self, script: Script, *, window: int | None = None, summary_tokens: int = 30) -> None:
        self.script = script
        self.window = window
        self.summary_tokens = summary_tokens
        self.requests: list[list[int]] = []  # tags of every request the agent made
        self.prompts: list[list[int]] = []  # tags and summary numbers each summary call was shown
        self.shown: list[list[dict[str, Any]]] = []  # the messages each summary call was shown
        self.calls = 0

    def update_config(self, **model_config: Any) -> None:
        return None

    def get_config(self) -> Any:
        return {}

    async def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None,
                                **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield {}  # pragma: no cover

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None,
                     **kwargs: Any) -> AsyncGenerator[Any, None]:
        self.calls += 1
        size = sum(message_size(m) for m in messages) + len(system_prompt or "")
        if self.window is not None and size > self.window:
            raise ContextWindowOverflowException(f"request of {size} tokens > window {self.window}")
        last = messages[-1]["content"] if messages else []
        if last and last[0].get("text") == SUMMARY_PROMPT:
            k = len(self.prompts)
            self.prompts.append([t for m in messages[:-1] for t in message_tags(m)]
                                + [-1 - int(s) for m in messages[:-1] for s in SUMMARY_TAG.findall(json.dumps(m))])
            self.shown.append([json.loads(json.dumps(m)) for m in messages[:-1]])
            for event in _text(pad(f"[s{k}]", self.summary_tokens)):
                yield event
            return
        self.requests.append([t for m in messages for t in message_tags(m)])
        step = self.script.steps.pop(0)
        tag = self.script.tags.pop(0)
        if step.result is None:
            for event in _text(pad(tag, step.size)):
                yield event
            return
        note = pad(tag, step.size - CALL_OVERHEAD)
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": f"c{tag[2:-1]}", "name": "probe"}}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"note": note})}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def _text(text: str) -> list[dict[str, Any]]:
    return [{"messageStart": {"role": "assistant"}}, {"contentBlockStart": {"start": {}}},
            {"contentBlockDelta": {"delta": {"text": text}}}, {"contentBlockStop": {}},
            {"messageStop": {"stopReason": "end_turn"}}]


def probe_tool(script: Script) -> Any:
    @tool(context=True)  # type: ignore[untyped-decorator]
    def probe(note: str, tool_context: ToolContext) -> str:
        """Return a result of the size the script says, carrying the next message's tag."""
        tag, size, stop = script.results[TAG.findall(note)[0]]
        if stop:
            tool_context.agent.cancel(after_current_tools=True)
        return pad(tag, size)

    return probe


@dataclass
class Session:
    """One agent and its script; ``sent`` counts the messages the session appended."""

    agent: Agent
    model: ScriptedModel
    script: Script
    sent: int = 0
    invocations: list[list[int]] = field(default_factory=list)  # tags of each invocation

    def invoke(self, prompt: int, steps: Sequence[Step]) -> None:
        """One invocation: a prompt of ``prompt`` characters, then the model's ``steps`` (tool
        rounds, then a text answer, unless the last round stops); tags follow the order of the
        messages."""
        start = self.sent
        tag = f"[m{self.sent}]"
        self.sent += 1
        for s in steps:
            call = f"[m{self.sent}]"
            self.script.steps.append(s)
            self.script.tags.append(call)
            self.sent += 1
            if s.result is not None:
                self.script.results[str(self.sent - 1)] = (f"[m{self.sent}]", s.result, s.stop)
                self.sent += 1
        self.invocations.append(list(range(start, self.sent)))
        self.agent(pad(tag, prompt))


def build(manager: Any, *, window: int | None = None, summary_tokens: int = 30, **agent_kw: Any) -> Session:
    script = Script()
    model = ScriptedModel(script, window=window, summary_tokens=summary_tokens)
    agent = Agent(model=model, tools=[probe_tool(script)], conversation_manager=manager, callback_handler=None,
                  **agent_kw)
    return Session(agent, model, script)


def context_tags(messages: Sequence[dict[str, Any]]) -> tuple[list[int], list[int]]:
    """The message tags in ``messages`` (verbatim), and the numbers of the summaries there."""
    raw: list[int] = []
    summaries: list[int] = []
    for m in messages:
        found = SUMMARY_TAG.findall(json.dumps(m["content"]))
        if found and m["role"] == "user" and not TAG.findall(json.dumps(m["content"])):
            summaries.append(int(found[0]))
        else:
            raw.extend(message_tags(m))
    return raw, summaries


def lost(sent: int, messages: Sequence[dict[str, Any]], prompts: Sequence[Sequence[int]],
         extra: set[int] | frozenset[int] = frozenset()) -> set[int]:
    """The marker oracle: the tags no message, summary (with what it was shown, transitively) or
    ``extra`` (a spill) holds."""
    holds: dict[int, set[int]] = {}
    for k, shown in enumerate(prompts):
        got = {t for t in shown if t >= 0}
        for s in (t for t in shown if t < 0):
            got |= holds.get(-1 - s, set())
        holds[k] = got
    raw, summaries = context_tags(messages)
    held = set(raw) | set(extra)
    for s in summaries:
        held |= holds.get(s, set())
    return set(range(sent)) - held


# -- the preset's model ------------------------------------------------------------------------------

SUMMARY_SYSTEM = "Summarize."  # a short system prompt, so the summary call's size is the messages'


def policy(name: str, knobs: str, *, floor: int = 0, mpt: tuple[int, int] = (2, 8), max_tokens: int = 400,
           limit: int | None = None) -> Policy:
    """The translated policy of preset ``name`` with ``knobs`` (TOML lines of ``[framework]``);
    ``limit``: a deliberately wrong translation (the stage's limit replaced), for the tests that
    the check fails."""
    text = (f'name = "differential"\nturn_tokens = [1, {max_tokens}]\nmessages_per_turn = [{mpt[0]}, {mpt[1]}]\n'
            f'floor = {floor}\nfloor_unit = "messages"\n[framework]\nname = "{name}"\n{knobs}\n')
    out = parse_policy(text, "differential.toml")
    if limit is not None:
        stage: Any = out.stages[0]
        out = dataclasses.replace(out, stages=(dataclasses.replace(stage, limit=limit),))
    return out


# -- the sliding window: a turn is an invocation ------------------------------------------------------


def invocation(rounds: int) -> list[Step]:
    """An invocation of ``rounds`` tool rounds and an answer (``2 + 2 * rounds`` messages)."""
    return [*(Step(20, result=15) for _ in range(rounds)), Step(12)]


def of_messages(count: int) -> list[Step]:
    """An invocation of ``count`` >= 2 messages: tool rounds and an answer, or (odd) tool rounds
    the last of which ends the invocation (a tool calling ``agent.cancel(after_current_tools=True)``)."""
    if count % 2 == 0:
        return invocation((count - 2) // 2)
    rounds = (count - 1) // 2
    return [*(Step(20, result=15, stop=i == rounds - 1) for i in range(rounds))]


def sliding_policy(counts: Sequence[int], window_size: int, per_turn: bool | int = False, *, floor: int = 0,
                   limit: int | None = None) -> Policy:
    """The sliding-window preset for invocations of ``counts`` messages."""
    return policy(SLIDING.name, f"window_size = {window_size}\nper_turn = {json.dumps(per_turn)}", floor=floor,
                  mpt=(2, max(2, *counts)), limit=limit)


def compare_sliding(shapes: Sequence[int], window_size: int, per_turn: bool | int = False, *,
                    limit: int | None = None) -> int:
    """Drive ``shapes`` (tool rounds per invocation, each ending with an answer); returns how many
    invocations dropped something."""
    return compare_sliding_messages([2 + 2 * r for r in shapes], window_size, per_turn, limit=limit)


def compare_sliding_messages(counts: Sequence[int], window_size: int, per_turn: bool | int = False, *,
                             limit: int | None = None) -> int:
    """Drive invocations of ``counts`` >= 2 messages each (:func:`of_messages`: an odd count ends
    on a tool result); returns how many invocations dropped something."""
    sess = build(SlidingWindowConversationManager(window_size=window_size, per_turn=per_turn))
    sim = ModelRun(sliding_policy(counts, window_size, per_turn, limit=limit))
    dropping = 0
    for k, count in enumerate(counts):
        before = set(sim.state.verbatim)
        sess.invoke(12, of_messages(count))
        _, kinds = sim.append(Turn("tools", (1,) * count))
        raw, _ = context_tags(sess.agent.messages)
        kept = sorted(j for j, tags in enumerate(sess.invocations) if set(tags) <= set(raw))
        partial = [j for j, tags in enumerate(sess.invocations) if j not in kept and set(tags) & set(raw)]
        where = (f"invocation {k} (messages per invocation {list(counts)}, window_size {window_size}, "
                 f"per_turn {per_turn})")
        if partial:
            raise Mismatch(f"{where}: Strands split invocations {partial}", dropping + 1)
        if kept != sorted(sim.state.verbatim):
            raise Mismatch(f"{where}: Strands kept invocations {kept}, the model {sorted(sim.state.verbatim)}",
                           dropping + 1)
        dropped = before | {k} != set(kept)
        if dropped != any(x.startswith("hole:") for x in kinds):
            raise Mismatch(f"{where}: Strands dropped {sorted(before | {k} - set(kept))}, the model's findings "
                           f"{kinds}", dropping + 1)
        dropping += dropped
    gone = lost(sess.sent, sess.agent.messages, sess.model.prompts)
    expected = {t for j, tags in enumerate(sess.invocations) if j not in sim.state.verbatim for t in tags}
    if gone != expected:
        raise Mismatch(f"markers lost on Strands {sorted(gone)}, the model's holes hold {sorted(expected)}", dropping)
    return dropping


# -- the summarizer: a turn is a message, or a tool call with its result --------------------------------


@dataclass
class Invocation:
    """A prompt, tool rounds (call size, result size) and an answer, in tokens."""

    prompt: int
    rounds: list[tuple[int, int]]
    answer: int

    def turns(self) -> list[Turn]:
        return [Turn("human", (self.prompt,)), *(Turn("tools", r) for r in self.rounds), Turn("ai", (self.answer,))]

    def steps(self) -> list[Step]:
        return [*(Step(c, result=r) for c, r in self.rounds), Step(self.answer)]


def expected_counts(sizes: list[int], summary: bool, ratio: float, preserve: int, rounds: int) -> list[int]:
    """``summary_ratio`` as declared: the messages each of ``rounds`` summaries takes from a context
    of turns of ``sizes`` messages (the previous summary first), the cut moved past a tool result."""
    out: list[int] = []
    turns = ([1] if summary else []) + sizes
    for _ in range(rounds):
        n = sum(turns)
        count = min(max(1, int(n * ratio)), n - preserve)
        at, i = 0, 0
        while at < count:
            at += turns[i]
            i += 1
        out.append(at)
        turns = [1, *turns[i:]]
    return out


def summarizing_knobs(window: int, preserve: int, ratio: float) -> str:
    return (f"summary_ratio = {ratio}\npreserve_recent_messages = {preserve}\nwindow = {window}\n"
            "summary_tokens = 30")


def summarizing_manager(preserve: int, ratio: float) -> Any:
    return SummarizingConversationManager(summary_ratio=ratio, preserve_recent_messages=preserve,
                                          summarization_system_prompt=SUMMARY_SYSTEM)


def compare_summarizing(session: Sequence[Invocation], window: int, preserve: int, ratio: float,
                        *, keep: int | None = None) -> int:
    """Drive ``session``; returns the number of the model's compactions compared. ``keep``: a
    deliberately wrong translation (the stage's keep replaced), for the tests that the check fails."""
    sess = build(summarizing_manager(preserve, ratio), window=window, summary_tokens=30)
    summary_at: list[int] = []  # the agent request before which each summary was made
    original = sess.model.stream

    async def recording(messages: Any, *args: Any, **kwargs: Any) -> Any:
        if messages and messages[-1]["content"][0].get("text") == SUMMARY_PROMPT:
            summary_at.append(len(sess.model.requests))
        async for event in original(messages, *args, **kwargs):
            yield event

    sess.model.stream = recording  # type: ignore[method-assign]
    for inv in session:
        sess.invoke(inv.prompt, inv.steps())
    if "[truncated:" in json.dumps(sess.agent.messages):
        raise Mismatch("a text block was truncated: the session needs a larger window (the harness compares "
                       "summaries, not overflow_truncation)")
    pol = policy(SUMMARIZING.name, summarizing_knobs(window, preserve, ratio), mpt=(1, 2), max_tokens=200)
    if keep is not None:
        stage: Any = pol.stages[0]
        pol = dataclasses.replace(pol, stages=(dataclasses.replace(stage, keep=keep),))
    sim = ModelRun(pol)
    turns = [t for inv in session for t in inv.turns()]
    tags: list[list[int]] = []  # each turn's message tags
    at = 0
    for t in turns:
        tags.append(list(range(at, at + t.messages)))
        at += t.messages
    request = 0
    covered: set[int] = set()
    compared = 0
    for i, turn in enumerate(turns):
        had_summary = sim.state.summary
        before = [*sim.state.verbatim, i]
        sizes = [turns[j].messages for j in before]
        predicted, kinds = sim.append(turn)
        where = f"turn {i} ({turn.kind})"
        at = compared + 1
        if turn.kind == "ai":  # no model call follows an answer: before_model_calls, as declared
            if predicted is not None:
                sim.undo(turn)
            continue
        rounds = [k for k, r in enumerate(summary_at) if r == request]
        real_request = sess.model.requests[request]
        request += 1
        if not rounds:
            if predicted is not None:
                raise Mismatch(f"{where}: the model compacted {predicted.deleted}, Strands did not", at)
            continue
        if predicted is None:
            raise Mismatch(f"{where}: Strands summarized {len(rounds)} time(s), the model did not ({kinds})", at)
        kept = [j for j in before if set(tags[j]) <= set(real_request)]
        deleted = [j for j in before if j not in kept]
        if any(set(tags[j]) & set(real_request) for j in deleted):
            raise Mismatch(f"{where}: Strands split a turn", at)
        shown = {t for k in rounds for t in sess.model.prompts[k] if t >= 0}
        if shown != {t for j in deleted for t in tags[j]}:
            raise Mismatch(f"{where}: Strands deleted {deleted} but showed tags {sorted(shown)}", at)
        firsts = [sess.model.prompts[k] for k in rounds]
        if (had_summary or len(rounds) > 1) and not all(p and p[-1] < 0 for p in firsts[1:] if p):
            raise Mismatch(f"{where}: a later round did not show the previous summary", at)
        counts = [len(sess.model.shown[k]) for k in rounds]
        wanted = expected_counts(sizes, had_summary, ratio, preserve, len(rounds))
        if counts != wanted:
            raise Mismatch(f"{where}: Strands summarized {counts} messages per round, summary_ratio says {wanted}", at)
        if not set(deleted) <= set(predicted.deleted) or set(predicted.shown) != set(predicted.deleted):
            raise Mismatch(f"{where}: Strands deleted {deleted}, the model {predicted.deleted} (shown "
                           f"{predicted.shown}); the model may only summarize more (summary_ratio)", at)
        covered |= set(deleted)
        sim.resync(kept, covered)
        compared += 1
    gone = lost(sess.sent, sess.agent.messages, sess.model.prompts)
    if gone:
        raise Mismatch(f"markers lost on Strands where every summarized message was shown: {sorted(gone)}", compared)
    return compared


def long_session(n: int = 14) -> list[Invocation]:
    """``n`` invocations of 0, 1 or 2 tool rounds in turn: summaries at prompts and at tool results."""
    return [Invocation(50, [(40, 55)] * (k % 3), 45) for k in range(n)]


# -- sessions and knobs, as the differential tests draw them ------------------------------------------


@dataclass(frozen=True)
class SlidingCase:
    """Messages per invocation (:func:`of_messages`) and the sliding window's knobs."""

    counts: tuple[int, ...]
    window_size: int
    per_turn: bool | int = False

    def label(self, floor: int | None = None) -> str:
        where = f", floor {floor}" if floor is not None else ""
        return (f"sliding window (window_size={self.window_size}, per_turn={self.per_turn}){where}, "
                f"{len(self.counts)} invocations (messages {list(self.counts)})")


@dataclass(frozen=True)
class SummarizingCase:
    """A session of invocations and the summarizer's knobs (``window``: the provider's)."""

    session: tuple[Invocation, ...]
    window: int
    preserve: int
    ratio: float

    def label(self, floor: int | None = None) -> str:
        where = f", floor {floor}" if floor is not None else ""
        return (f"summarizing (summary_ratio={self.ratio}, preserve_recent_messages={self.preserve}, "
                f"window={self.window}){where}, {len(self.session)} invocations "
                f"({sum(len(i.rounds) for i in self.session)} tool rounds)")


def random_sliding(rng: random.Random, max_invocations: int = 14) -> SlidingCase:
    """As tests/presets/test_strands_preset.py's ``sliding_cases`` draws them: every invocation
    fits the window (``tool_pair_fallback`` aside)."""
    window_size = rng.randint(2, 12)
    most = min(3, (window_size - 2) // 2)
    shapes = tuple(2 + 2 * rng.randint(0, most) for _ in range(rng.randint(1, max_invocations)))
    return SlidingCase(shapes, window_size, rng.choice((False, True, 2)))


def random_summarizing(rng: random.Random, max_invocations: int = 20) -> SummarizingCase:
    """As the tests' ``summarizing_cases`` draws them: preserve >= 8 and a window >= 800 (the
    summary call and the kept messages always fit: no overflow_truncation), summary_ratio >= 0.3
    (a round never takes the previous summary alone)."""
    def size() -> int:
        return rng.randint(20, 60)

    session = tuple(Invocation(size(), [(size(), size()) for _ in range(rng.randint(0, 2))], size())
                    for _ in range(rng.randint(max_invocations // 2, max_invocations)))
    return SummarizingCase(session, rng.randint(800, 1200), rng.randint(8, 12), rng.choice((0.3, 0.5, 0.8)))


# -- the adapter -------------------------------------------------------------------------------------


def model_first_finding(pol: Policy, turns: Sequence[Turn]) -> int | None:
    """The first turn (0-based) at which the preset's model finds a hole or a floor finding."""
    sim = ModelRun(pol)
    for i, turn in enumerate(turns):
        if any(k.startswith(("hole:", "floor:")) for k in sim.append(turn)[1]):
            return i
    return None


def adapter_agrees_sliding(case: SlidingCase, floor: int, *, must_refuse: bool = False) -> int:
    """The guarded sliding window (``recovery_floor_span=floor``, halt) over ``case``: it refuses
    at the invocation where the preset's model (at ``floor``) finds its first hole or floor
    finding, and allows every trim before it (all of them where the model finds none). Returns
    the trims it allowed."""
    turns = [Turn("tools", (1,) * c) for c in case.counts]
    found = model_first_finding(sliding_policy(case.counts, case.window_size, case.per_turn, floor=floor), turns)
    guard = GuardedConversationManager(SlidingWindowConversationManager(window_size=case.window_size,
                                                                        per_turn=case.per_turn),
                                       recovery_floor_span=floor, on_refuse="halt", log=io.StringIO())
    sess = build(guard)
    allowed, refused = 0, None
    for k, count in enumerate(case.counts):
        removed = guard.removed_message_count
        try:
            sess.invoke(12, of_messages(count))
        except UnrecoverableCompactionError:
            refused = k
            break
        allowed += guard.removed_message_count > removed
    if must_refuse and refused is None:
        raise Mismatch(f"the adapter refused none of the {len(case.counts)} invocations ({allowed} trims ran) of "
                       f"a session where the preset's model finds a hole at invocation {found}", allowed)
    if refused != found:
        raise Mismatch(f"the adapter refused invocation {refused}, the preset's model finds its first hole or "
                       f"floor finding at invocation {found}", allowed + 1)
    return allowed


def adapter_allows_summaries(case: SummarizingCase, *, must_summarize: bool = False) -> int:
    """The guarded summarizer with a floor of ``preserve_recent_messages - 1`` (where the preset's
    model finds nothing) over ``case``: it allows every summary. Returns the summaries allowed."""
    floor = case.preserve - 1
    pol = policy(SUMMARIZING.name, summarizing_knobs(case.window, case.preserve, case.ratio), floor=floor,
                 mpt=(1, 2), max_tokens=200)
    found = model_first_finding(pol, [t for inv in case.session for t in inv.turns()])
    if found is not None:
        raise Mismatch(f"the preset's model finds a hole or floor finding at turn {found} with floor {floor}, "
                       "which the preset calls safe")
    guard = GuardedConversationManager(summarizing_manager(case.preserve, case.ratio), recovery_floor_span=floor,
                                       on_refuse="halt", log=io.StringIO())
    sess = build(guard, window=case.window)
    for k, inv in enumerate(case.session):
        try:
            sess.invoke(inv.prompt, inv.steps())
        except UnrecoverableCompactionError as exc:
            raise Mismatch(f"the adapter refused invocation {k} ({exc}), the preset's model finds no hole",
                           len(sess.model.prompts)) from exc
    summaries = len(sess.model.prompts)
    if must_summarize and not summaries:
        raise Mismatch("the fixed session summarized nothing under the guard: the check would be vacuous")
    return summaries


# -- doctor's cases ----------------------------------------------------------------------------------

#: 10 invocations of 2 to 8 messages (odd: the last tool round ends the invocation): window_size 8
#: trims after most of them (a hole each time); the odd counts make a limit one off either way show
FIXED_COUNTS = (2, 4, 3, 6, 2, 5, 4, 2, 3, 8)
FIXED_SLIDING = (SlidingCase(FIXED_COUNTS, 8), SlidingCase(FIXED_COUNTS, 8, per_turn=True))
#: 14 invocations, summaries at prompts and at tool results, several rounds
FIXED_SUMMARIZING = (SummarizingCase(tuple(long_session()), 1000, 8, 0.3),
                     SummarizingCase(tuple(long_session()), 1000, 10, 0.8))


def compare_sliding_case(case: SlidingCase) -> int:
    return compare_sliding_messages(case.counts, case.window_size, case.per_turn)


def compare_summarizing_case(case: SummarizingCase) -> int:
    return compare_summarizing(case.session, case.window, case.preserve, case.ratio)


def _fixed() -> int:
    """The fixed session through both managers: every run trims or summarizes."""
    total = 0
    runs: list[tuple[str, functools.partial[int]]] = [
        *((c.label(), functools.partial(compare_sliding_case, c)) for c in FIXED_SLIDING),
        *((c.label(), functools.partial(compare_summarizing_case, c)) for c in FIXED_SUMMARIZING)]
    for label, run in runs:
        compared = run()
        if not compared:
            raise Mismatch(f"the fixed session compacted nothing on {label}: the check would be vacuous")
        total += compared
    return total


def cases(rng: random.Random, sessions: int) -> list[Case]:
    fixed = "; ".join(c.label() for c in (*FIXED_SLIDING, *FIXED_SUMMARIZING))
    out = [Case("preset", f"the fixed session: {fixed}", _fixed)]
    for i in range(sessions - 1):
        if i % 2 == 0:
            sliding = random_sliding(rng)
            out.append(Case("preset", sliding.label(), functools.partial(compare_sliding_case, sliding)))
        else:
            summarizing = random_summarizing(rng)
            out.append(Case("preset", summarizing.label(), functools.partial(compare_summarizing_case, summarizing)))
    lossy = FIXED_SLIDING[0]  # every trim drops what nothing holds
    safe = FIXED_SUMMARIZING[0]
    out.append(Case("adapter", lossy.label(0), lambda: adapter_agrees_sliding(lossy, 0, must_refuse=True)))
    out.append(Case("adapter", safe.label(safe.preserve - 1),
                    lambda: adapter_allows_summaries(safe, must_summarize=True)))
    chat = random_sliding(rng)
    floor = rng.randint(0, chat.window_size)
    out.append(Case("adapter", chat.label(floor), functools.partial(adapter_agrees_sliding, chat, floor)))
    return out
