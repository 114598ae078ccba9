"""AutoGen's model contexts against the ``autogen`` preset, and the adapter
(``GuardedChatCompletionContext``) on the same sessions.

The contexts of autogen-core run as installed: ``BufferedChatCompletionContext``,
``HeadAndTailChatCompletionContext``, ``TokenLimitedChatCompletionContext`` (counting with
autogen_ext's ``ReplayChatCompletionClient``, the package's own test client) and
``UnboundedChatCompletionContext``. A session is a list of turns
(:mod:`tailguard.doctor.harness`): a human message, an AI answer, or an AI message with function
calls and their results. Every message's content is a marker ``[t<turn>m<k>]`` followed by
filler words, ``size`` whitespace-separated words in all, so the token count of
``ReplayChatCompletionClient.count_tokens`` (words of string contents) is the turn's size. A
function result's content is a list (AutoGen's ``FunctionExecutionResultMessage``), which that
client does not count: tool turns are for the buffered and unbounded contexts only (the preset
refuses them for the token-limited and head-and-tail ones).

After each turn the driver asks the context for its view (``get_messages()``, what the model
would be sent at that model call), records which stored messages it holds and compares them
with the preset's model stepped turn by turn: the messages the view holds and the turns the
model keeps. Declared differences, as declared: ``partial_rounds`` (the model's kept messages
are inside the view, the view's extra messages are the later part of one cut round, first loss
at the same turn) and ``middle_out`` (first loss at the same turn; afterwards the view loses
something exactly when the stored messages exceed the limit, and always fits it). AutoGen never
summarizes: a *compaction* here is a view that leaves out a stored message the previous view
held (or a new one).

The adapter runs the same sessions with ``GuardedChatCompletionContext`` around the real
context (floor 0, ``on_refuse="halt"``, no store, so every message leaving the view is
refused): it must refuse at the turn where the preset's model finds the first hole, and allow
every view of a session where the model finds none.
"""

from __future__ import annotations

import asyncio
import functools
import io
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autogen_core import FunctionCall
from autogen_core.model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)
from autogen_ext.models.replay import ReplayChatCompletionClient

from tailguard.adapters.autogen import GuardedChatCompletionContext
from tailguard.doctor.harness import Case, Mismatch, ModelRun, Turn, holes, random_turns
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.presets.autogen import BUFFERED, HEAD_AND_TAIL, PRESET, TOKEN_LIMITED, UNBOUNDED
from tailguard.runtime.seed_api import UnrecoverableCompactionError

__all__ = ["BUFFERED", "HEAD_AND_TAIL", "TOKEN_LIMITED", "UNBOUNDED", "View", "adapter_agrees", "cases", "compare",
           "compare_exact", "first_loss", "make", "messages", "model_first_loss", "policy", "rounds", "run", "text"]

Knobs = Mapping[str, int]

FIXED_SESSION = [Turn("human" if i % 2 == 0 else "ai", (12 + 3 * (i % 4),)) for i in range(12)]  # 198 tokens
FIXED: tuple[tuple[str, dict[str, int]], ...] = (
    (BUFFERED, {"buffer_size": 4}), (HEAD_AND_TAIL, {"head_size": 2, "tail_size": 3}),
    (TOKEN_LIMITED, {"token_limit": 100}))


# -- the real contexts -------------------------------------------------------------------------------


def text(turn: int, k: int, size: int) -> str:
    """``size`` words: the marker and filler."""
    return " ".join([f"[t{turn}m{k}]", *(["w"] * (size - 1))])


def messages(index: int, turn: Turn) -> list[LLMMessage]:
    """The AutoGen messages of one turn (``chat``: a prompt and answers, one message each)."""
    if turn.kind == "human":
        return [UserMessage(content=text(index, 0, turn.sizes[0]), source="user")]
    if turn.kind == "ai":
        return [AssistantMessage(content=text(index, 0, turn.sizes[0]), source="assistant")]
    if turn.kind == "chat":
        return [UserMessage(content=text(index, k, size), source="user") if k % 2 == 0
                else AssistantMessage(content=text(index, k, size), source="assistant")
                for k, size in enumerate(turn.sizes)]
    # AssistantAgent's tool round: one message of calls, one message of all their results
    calls = [FunctionCall(id=f"c{index}_{k}", name="probe", arguments="{}") for k in range(1, len(turn.sizes))]
    out: list[LLMMessage] = [AssistantMessage(content=calls, source="assistant", thought=text(index, 0, turn.sizes[0]))]
    out.append(FunctionExecutionResultMessage(content=[
        FunctionExecutionResult(content=text(index, k, turn.sizes[k]), call_id=f"c{index}_{k}", name="probe")
        for k in range(1, len(turn.sizes))]))
    return out


def make(kind: str, *, buffer_size: int = 0, head_size: int = 0, tail_size: int = 0,
         token_limit: int = 0) -> ChatCompletionContext:
    if kind == BUFFERED:
        return BufferedChatCompletionContext(buffer_size=buffer_size)
    if kind == HEAD_AND_TAIL:
        return HeadAndTailChatCompletionContext(head_size=head_size, tail_size=tail_size)
    if kind == TOKEN_LIMITED:
        return TokenLimitedChatCompletionContext(ReplayChatCompletionClient(["ok"]), token_limit=token_limit)
    if kind == UNBOUNDED:
        return UnboundedChatCompletionContext()
    raise ValueError(f"unknown model context {kind!r}")


@dataclass
class View:
    """One model call's view after a turn: the stored indices it holds, the turn each stored
    message belongs to, and the view's token count (words)."""

    held: frozenset[int]
    owner: tuple[int, ...]
    tokens: int  # words of string contents, as ReplayChatCompletionClient.count_tokens counts


async def _run(context: ChatCompletionContext, turns: Sequence[Turn]) -> list[View]:
    owner: list[int] = []
    out: list[View] = []
    for i, turn in enumerate(turns):
        for m in messages(i, turn):
            await context.add_message(m)
            owner.append(i)
        view = await context.get_messages()
        where = {id(m): j for j, m in enumerate(context._messages)}
        held = frozenset(where[id(m)] for m in view if id(m) in where)
        out.append(View(held, tuple(owner), sum(len(m.content.split()) for m in view if isinstance(m.content, str))))
    return out


def run(context: ChatCompletionContext, turns: Sequence[Turn]) -> list[View]:
    """The view after every turn of ``turns`` fed to ``context``."""
    return asyncio.run(_run(context, turns))


def first_loss(views: Sequence[View]) -> int | None:
    """The first turn whose view leaves a stored message out."""
    return next((i for i, v in enumerate(views) if len(v.held) < len(v.owner)), None)


def _dropped(views: Sequence[View], i: int) -> bool:
    """Whether view ``i`` leaves out a stored message view ``i - 1`` held (or a new one)."""
    before = set(range(len(views[i - 1].owner))) - views[i - 1].held if i else set()
    return bool(set(range(len(views[i].owner))) - views[i].held - before)


# -- the preset's model ------------------------------------------------------------------------------


def rounds(session: Sequence[Turn]) -> list[Turn]:
    """AssistantAgent's tool round is two messages: the calls, and one FunctionExecutionResultMessage
    holding every result."""
    return [Turn(t.kind, t.sizes[:2]) if t.kind == "tools" else t for t in session]


def toml_knobs(kind: str, knobs: Knobs) -> str:
    return "\n".join([f'model_context = "{kind}"', *(f"{k} = {v}" for k, v in knobs.items())])


def policy(knobs: str, *, mpt: tuple[int, int] = (1, 1), max_tokens: int = 60, floor: int = 0) -> Policy:
    """The translated policy of the preset with ``knobs`` (TOML lines of ``[framework]``)."""
    text = (f'name = "differential"\nturn_tokens = [1, {max_tokens}]\nmessages_per_turn = [{mpt[0]}, {mpt[1]}]\n'
            f'floor = {floor}\nfloor_unit = "messages"\n[framework]\nname = "{PRESET.name}"\n{knobs}\n')
    return parse_policy(text, "differential.toml")


def _policy_for(kind: str, knobs: Knobs, session: Sequence[Turn]) -> Policy:
    """The policy of ``kind`` with ``knobs``, ``messages_per_turn`` up to the session's largest turn."""
    return policy(toml_knobs(kind, knobs), mpt=(1, max((t.messages for t in session), default=1)))


def kept_messages(sim: ModelRun, owner: tuple[int, ...]) -> frozenset[int]:
    """The stored message indices of the turns the model holds (pinned and verbatim)."""
    turns_in = {*sim.state.pinned, *sim.state.verbatim}
    return frozenset(j for j, t in enumerate(owner) if t in turns_in)


def model_first_loss(pol: Policy, session: Sequence[Turn]) -> int | None:
    """The first turn at which the preset's model finds a hole."""
    sim = ModelRun(pol)
    for i, turn in enumerate(session):
        if holes(sim.append(turn)[1]):
            return i
    return None


# -- the comparisons (each returns the real compactions compared, raises Mismatch) ---------------------


def compare_exact(pol: Policy, session: Sequence[Turn], views: Sequence[View], what: str = "") -> int:
    """The view holds exactly the messages of the turns the model keeps, after every turn."""
    sim = ModelRun(pol)
    compared = 0
    for i, (turn, view) in enumerate(zip(session, views, strict=True)):
        sim.append(turn)
        expected = kept_messages(sim, view.owner)
        if view.held != expected:
            raise Mismatch(f"turn {i}{what}: AutoGen's view {sorted(view.held)}, the model {sorted(expected)}",
                           compared + 1)
        compared += _dropped(views, i)
    return compared


def compare_rounds(pol: Policy, session: Sequence[Turn], views: Sequence[View], what: str = "") -> int:
    """``partial_rounds``: the model's kept messages are in the view; the view's extra ones are the
    later messages of the one round the buffer cut; the first loss is at the same turn."""
    sim = ModelRun(pol)
    compared = 0
    model_first: int | None = None
    for i, (turn, view) in enumerate(zip(session, views, strict=True)):
        if holes(sim.append(turn)[1]) and model_first is None:
            model_first = i
        expected = kept_messages(sim, view.owner)
        if not expected <= view.held:
            raise Mismatch(f"turn {i}{what}: the model keeps messages {sorted(expected - view.held)} AutoGen's view "
                           "dropped", compared + 1)
        extra = {view.owner[j] for j in view.held - expected}
        if len(extra) > 1:
            raise Mismatch(f"turn {i}{what}: AutoGen's view keeps parts of turns {sorted(extra)}, the model none",
                           compared + 1)
        compared += _dropped(views, i)
    if first_loss(views) != model_first:
        raise Mismatch(f"{what.lstrip(', ')}: AutoGen's view first loses at turn {first_loss(views)}, the model "
                       f"finds a hole at turn {model_first}", compared)
    return compared


def compare_middle_out(pol: Policy, session: Sequence[Turn], views: Sequence[View], limit: int,
                       what: str = "") -> int:
    """``middle_out``: the first loss at the same turn; then the view loses something exactly when
    the stored messages count more than ``limit``, and always fits it."""
    if first_loss(views) != (model := model_first_loss(pol, session)):
        raise Mismatch(f"{what.lstrip(', ')}: AutoGen's view first loses at turn {first_loss(views)}, the model "
                       f"finds a hole at turn {model}", 1)
    total = compared = 0
    for i, (turn, view) in enumerate(zip(session, views, strict=True)):
        total += turn.tokens
        if (len(view.held) < len(view.owner)) != (total > limit) or view.tokens > limit:
            raise Mismatch(f"turn {i}{what}: {total} tokens stored, limit {limit}: AutoGen's view holds "
                           f"{len(view.held)} of {len(view.owner)} messages, {view.tokens} tokens", compared + 1)
        compared += _dropped(views, i)
    return compared


def compare(kind: str, knobs: Knobs, session: Sequence[Turn]) -> int:
    """The real ``kind`` context with ``knobs`` over ``session`` against the preset's model, with the
    declared differences where they apply; the real compactions compared."""
    pol = _policy_for(kind, knobs, session)
    views = run(make(kind, **knobs), session)
    what = f", {kind} {dict(knobs)}"
    if kind == UNBOUNDED:
        lost, found = first_loss(views), model_first_loss(pol, session)
        if lost is not None or found is not None:
            raise Mismatch(f"{what.lstrip(', ')}: AutoGen's view first loses at turn {lost}, the model finds a hole "
                           f"at turn {found}", 1)
        return 0
    if kind == TOKEN_LIMITED:
        return compare_middle_out(pol, session, views, knobs["token_limit"], what)
    if kind == BUFFERED and any(t.messages > 1 for t in session):
        return compare_rounds(pol, session, views, what)
    return compare_exact(pol, session, views, what)


# -- the adapter -----------------------------------------------------------------------------------


async def _guarded(kind: str, knobs: Knobs, session: Sequence[Turn]) -> tuple[int, int | None]:
    context = GuardedChatCompletionContext(make(kind, **knobs), recovery_floor_span=0, on_refuse="halt",
                                           log=io.StringIO())
    for i, turn in enumerate(session):
        for m in messages(i, turn):
            await context.add_message(m)
        try:
            await context.get_messages()
        except UnrecoverableCompactionError:
            return i, i
    return len(session), None


def adapter_agrees(kind: str, knobs: Knobs, session: Sequence[Turn], *, must_refuse: bool = False) -> int:
    """``GuardedChatCompletionContext`` (floor 0, halt) around the real context: it refuses the view
    of the turn where the preset's model finds the first hole, and allows every view before it
    (all of them where the model finds none). Returns the views it allowed."""
    found = model_first_loss(_policy_for(kind, knobs, session), session)
    allowed, refused = asyncio.run(_guarded(kind, knobs, session))
    if must_refuse and refused is None:
        raise Mismatch(f"the adapter allowed all {allowed} views of a session where the preset's model finds a hole "
                       f"at turn {found}", allowed)
    if refused != found:
        raise Mismatch(f"the adapter refused the view of turn {refused}, the preset's model finds the first hole at "
                       f"turn {found}", allowed + 1)
    return allowed


# -- doctor's cases ---------------------------------------------------------------------------------


def random_case(rng: random.Random, variant: int) -> tuple[str, dict[str, int], list[Turn]]:
    """A context, its knobs and a session as the differential tests draw them
    (tests/presets/test_autogen_preset.py); ``variant`` picks the test (0 to 4)."""
    variant %= 5
    if variant in (0, 1):
        session = random_turns(rng, max_turns=30, max_size=20, tools=variant == 1)
        return BUFFERED, {"buffer_size": rng.randint(1, 8)}, rounds(session)
    if variant == 2:
        session = random_turns(rng, max_turns=30, max_size=20, tools=False)
        return HEAD_AND_TAIL, {"head_size": rng.randint(1, 8), "tail_size": rng.randint(1, 8)}, session
    if variant == 3:
        session = random_turns(rng, max_turns=30, max_size=20, tools=False)
        return TOKEN_LIMITED, {"token_limit": rng.randint(1, 120)}, session
    return UNBOUNDED, {}, rounds(random_turns(rng, max_turns=30, max_size=20, tools=True))


def _label(kind: str, knobs: Knobs, session: Sequence[Turn]) -> str:
    return f"{kind} {dict(knobs)}, {len(session)} turns ({sum(t.messages for t in session)} messages)"


def _fixed() -> int:
    """The fixed session through each truncating context: every one of them compacts."""
    total = 0
    for kind, knobs in FIXED:
        compared = compare(kind, knobs, FIXED_SESSION)
        if not compared:
            raise Mismatch(f"the fixed session compacted nothing on {kind} {knobs}: the check would be vacuous")
        total += compared
    return total


def cases(rng: random.Random, sessions: int) -> list[Case]:
    fixed = "; ".join(f"{kind} {knobs}" for kind, knobs in FIXED)
    out = [Case("preset", f"{fixed}; the fixed session, {len(FIXED_SESSION)} turns", _fixed)]
    for i in range(sessions - 1):
        kind, knobs, session = random_case(rng, i)
        out.append(Case("preset", _label(kind, knobs, session), functools.partial(compare, kind, knobs, session)))
    lossy, safe = {"buffer_size": 4}, {"buffer_size": len(FIXED_SESSION)}  # every message, just
    out.append(Case("adapter", _label(BUFFERED, lossy, FIXED_SESSION),
                    lambda: adapter_agrees(BUFFERED, lossy, FIXED_SESSION, must_refuse=True)))
    out.append(Case("adapter", _label(BUFFERED, safe, FIXED_SESSION),
                    lambda: adapter_agrees(BUFFERED, safe, FIXED_SESSION)))
    kind, knobs, session = random_case(rng, rng.randrange(5))
    out.append(Case("adapter", _label(kind, knobs, session), functools.partial(adapter_agrees, kind, knobs, session)))
    return out
