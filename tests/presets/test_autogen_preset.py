"""Differential test of the ``autogen`` preset against AutoGen's real model contexts.

The contexts run as installed (:mod:`tailguard.doctor.drivers.autogen`, which ``tailguard doctor``
runs too): ``BufferedChatCompletionContext``,
``HeadAndTailChatCompletionContext``, ``TokenLimitedChatCompletionContext`` (counting with
autogen_ext's ``ReplayChatCompletionClient``) and ``UnboundedChatCompletionContext``. After every
turn the harness takes the real view (``get_messages()``, what the model is sent) and compares it
with the preset's model stepped turn by turn: the messages the view holds and the turns the
model keeps verbatim. Declared differences, as declared: ``partial_rounds`` (the model's kept
messages are inside the view, the view's extra messages are the later part of one cut round,
first loss at the same turn) and ``middle_out`` (first loss at the same turn; afterwards the view
loses something exactly when the stored messages exceed the limit). Then the counterexample each
shipped example prints is replayed on the real context with the trace's sizes and loses exactly
the turns it names, at the append it names; and random sessions of the safe policy lose nothing.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE, Turn, turns

if not REQUIRE:
    pytest.importorskip("autogen_core", reason="install the frameworks extra (CI does)")
    pytest.importorskip("autogen_ext.models.replay", reason="install the frameworks extra (CI does)")

from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.cli.main import main
from tailguard.doctor.drivers import autogen as ag
from tailguard.doctor.drivers.autogen import BUFFERED, HEAD_AND_TAIL, TOKEN_LIMITED, UNBOUNDED, policy
from tailguard.doctor.harness import Mismatch
from tailguard.pipeline.presets.autogen import PRESET

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = 60
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_installed_versions_are_the_validated_ones() -> None:
    from importlib.metadata import version

    for package in ("autogen-core", "autogen-agentchat", "autogen-ext"):
        assert f"{package} {version(package)}" in PRESET.validated_on


def check_config(path: Path | str) -> dict[str, Any]:
    out = io.StringIO()
    main(["check-config", "--format", "json", str(path)], stdout=out, stderr=io.StringIO())
    result: dict[str, Any] = json.loads(out.getvalue())["policies"][0]
    return result


small = st.integers(1, 8)


@SETTINGS
@given(session=turns(max_turns=30, max_size=20, tools=False), buffer_size=small)
def test_buffered_agrees_with_the_preset_model(session: list[Turn], buffer_size: int) -> None:
    ag.compare(BUFFERED, {"buffer_size": buffer_size}, session)


tool_sessions = turns(max_turns=30, max_size=20, tools=True).map(ag.rounds)


@SETTINGS
@given(session=tool_sessions, buffer_size=small)
def test_buffered_with_tool_rounds_keeps_what_the_model_keeps(session: list[Turn], buffer_size: int) -> None:
    """``partial_rounds`` (:func:`~tailguard.doctor.drivers.autogen.compare_rounds`): the model's kept
    messages are in the view; the view's extra ones are the later messages of the one round the
    buffer cut; the first loss is at the same turn."""
    ag.compare(BUFFERED, {"buffer_size": buffer_size}, session)


@SETTINGS
@given(session=turns(max_turns=30, max_size=20, tools=False), head=small, tail=small)
def test_head_and_tail_agrees_with_the_preset_model(session: list[Turn], head: int, tail: int) -> None:
    ag.compare(HEAD_AND_TAIL, {"head_size": head, "tail_size": tail}, session)


@pytest.mark.parametrize("limit", [35, 36, 37])
def test_token_limited_boundary(limit: int) -> None:
    """At the limit exactly nothing is lost, one token over it is (both sides, on the real context)."""
    session = [Turn("human", (12,)), Turn("ai", (12,)), Turn("human", (12,))]  # 36 tokens
    pol = policy(f'model_context = "{TOKEN_LIMITED}"\ntoken_limit = {limit}')
    views = ag.run(ag.make(TOKEN_LIMITED, token_limit=limit), session)
    assert ag.first_loss(views) == ag.model_first_loss(pol, session) == (2 if limit < 36 else None)
    assert ag.compare(TOKEN_LIMITED, {"token_limit": limit}, session) == (1 if limit < 36 else 0)


@SETTINGS
@given(session=turns(max_turns=30, max_size=20, tools=False), limit=st.integers(1, 120))
def test_token_limited_loses_at_the_models_turn(session: list[Turn], limit: int) -> None:
    """``middle_out`` (:func:`~tailguard.doctor.drivers.autogen.compare_middle_out`): the first loss at
    the same turn; then the view loses something exactly when the stored messages count more than
    ``token_limit``, and always fits it."""
    ag.compare(TOKEN_LIMITED, {"token_limit": limit}, session)


@SETTINGS
@given(session=tool_sessions)
def test_unbounded_loses_nothing_and_the_preset_is_safe(session: list[Turn]) -> None:
    assert ag.compare(UNBOUNDED, {}, session) == 0


def test_the_harness_compares_real_views() -> None:
    """The comparison is live: a model one message off (buffer_size + 1) disagrees with AutoGen."""
    session = [Turn("human", (3,)), Turn("ai", (4,))] * 4
    views = ag.run(ag.make(BUFFERED, buffer_size=3), session)
    assert ag.compare_exact(policy(f'model_context = "{BUFFERED}"\nbuffer_size = 3'), session, views) == 5
    with pytest.raises(Mismatch, match="AutoGen's view"):
        ag.compare_exact(policy(f'model_context = "{BUFFERED}"\nbuffer_size = 4'), session, views)


def test_the_view_drops_what_the_state_keeps() -> None:
    """``view_not_state``: the stored messages stay in save_state(); the view has left them."""
    import asyncio

    ctx = ag.make("BufferedChatCompletionContext", buffer_size=2)
    ag.run(ctx, [Turn("human", (2,)), Turn("ai", (2,)), Turn("human", (2,))])
    state = asyncio.run(ctx.save_state())
    assert len(state["messages"]) == 3
    assert [m.content.split()[0] for m in asyncio.run(ctx.get_messages())] == ["[t1m0]", "[t2m0]"]


EXAMPLES_DIR = ROOT / "examples" / "presets"
REPLAYS = {
    "autogen-buffered.toml": ("BufferedChatCompletionContext", {"buffer_size": 20}),
    "autogen-head-and-tail.toml": ("HeadAndTailChatCompletionContext", {"head_size": 2, "tail_size": 20}),
    "autogen-token-limited.toml": ("TokenLimitedChatCompletionContext", {"token_limit": 100000}),
}


@pytest.mark.parametrize("name", sorted(REPLAYS))
def test_the_counterexample_reproduces_on_autogen(name: str) -> None:
    """check-config's hole trace replayed on the real context with the trace's sizes (and the most
    messages a turn may hold, as the trace's turns): the view loses messages first at the finding's
    append, and (but for the declared ``middle_out``) exactly the turns it names."""
    found = check_config(EXAMPLES_DIR / name)
    assert found["verdict"] == "unsafe"
    hole = next(f for f in found["findings"] if f["kind"] == "hole")
    trace, counts = hole["trace"], hole.get("messages", [1] * len(hole["trace"]))
    session = []
    for i, (size, count) in enumerate(zip(trace, counts, strict=True)):
        # a turn of `count` messages (prompt, answers): sizes only matter to the token limit,
        # whose example has one message a turn
        kind = ("human" if i % 2 == 0 else "ai") if count == 1 else "chat"
        session.append(Turn(kind, (size,) if count == 1 else (1,) * count))
    kind, knobs = REPLAYS[name]
    views = ag.run(ag.make(kind, **knobs), session)
    assert ag.first_loss(views) == hole["step"] - 1 == len(trace) - 1
    last = views[-1]
    lost_turns = sorted({last.owner[j] for j in range(len(last.owner)) if j not in last.held})
    named = hole["offsets"]
    # the boundary is the real one: one unit less (a token, or the last message) loses nothing
    short = [*session[:-1], *([Turn(session[-1].kind, (session[-1].sizes[0] - 1,))] if kind.startswith("Token")
                              else [])]
    assert ag.first_loss(ag.run(ag.make(kind, **knobs), short)) is None
    if kind == "TokenLimitedChatCompletionContext":  # middle_out: as many turns, from the middle
        assert len(lost_turns) == len(named) and lost_turns != named, (lost_turns, named)
        assert lost_turns == [len(trace) // 2]
    else:
        assert lost_turns == named, (lost_turns, named)


def test_the_safe_default_loses_nothing_on_autogen() -> None:
    """Unbounded without a window is safe, and a long session on the real context loses nothing;
    with the shipped example's window it is an overflow, never called safe."""
    text = ('name = "u"\nturn_tokens = [1, 8000]\nmessages_per_turn = [1, 4]\nfloor = 8\nfloor_unit = "messages"\n'
            '[framework]\nname = "autogen"\n')
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "u.toml"
        path.write_text(text)
        assert check_config(path)["verdict"] == "safe"
    assert check_config(EXAMPLES_DIR / "autogen-defaults.toml")["verdict"] == "unsafe"
    session = [Turn("human", (50,)), Turn("tools", (10, 5, 5)), Turn("ai", (30,))] * 40
    views = ag.run(ag.make("UnboundedChatCompletionContext"), session)
    assert ag.first_loss(views) is None
