"""The concrete falsifier (issue 26 item 5): real-size policies decided without ``unknown``.

The falsifier (``pipeline/falsify.py``) runs the executable model over structured session
families; it only ever yields a session the model replays (a loss at its last append, none
before), which the z3 encoding accepts too. These tests check that on generated real-size
policies, break the falsifier on purpose (a step function that invents a loss) and see the
invented loss refused at both layers, and check the gate that lets the falsifier go before
the bounded search (``fails_late``) against the explorer's shortest sessions.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import z3
from hypothesis import HealthCheck, given, settings

from tailguard.pipeline import falsify as falsify_module
from tailguard.pipeline.encode import encode_step, init_state, needed_window, shape_of
from tailguard.pipeline.explorer import explore
from tailguard.pipeline.falsify import falsify
from tailguard.pipeline.model import Finding, Session, replay, spill_modes
from tailguard.pipeline.policy import Compact, Policy, parse_policy
from tailguard.pipeline.shrink import shrink
from tailguard.pipeline.solver import Budget, decide, fails_late, own_context
from tests.cli_helpers import run_cli
from tests.test_pipeline_agreement import policies

ROOT = Path(__file__).resolve().parent.parent

# the held-out policy a user found ``unknown`` after 100 to 160 s (60 s of CPU): chatty
# turns, truncate at the window, compact one token above the safe boundary 198001
USER = """
name = "user-chatty-200k"
window = 200000
base_tokens = 4000
turn_tokens = [1, 2000]
floor = 1000
floor_unit = "tokens"

[[stage]]
kind = "truncate"
unit = "tokens"
limit = 200000

[[stage]]
kind = "compact"
trigger_unit = "tokens"
trigger = 198002
keep_unit = "tokens"
keep = 60000
summary_tokens = 2000
"""


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_real_size", ROOT / "benchmarks" / "bench_real_size.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_real_size", module)
    spec.loader.exec_module(module)
    return module


def _generated(every: int) -> list[Policy]:
    return [parse_policy(text, name) for name, text in _bench().generate(200, 26)[::every]]


def _well_formed(policy: Policy, session: Session) -> None:
    """Every append within the policy's session shape; failures never or always (proceed)."""
    assert all(policy.turn_min <= s <= policy.turn_max for s in session.sizes)
    lo, hi = policy.messages_per_turn
    assert all(lo <= m <= hi for m in session.messages)
    assert session.failures in (frozenset(), frozenset(range(1, len(session.sizes) + 1)))
    if session.failures:
        assert "proceed" in spill_modes(policy).values()


def test_user_policy_is_unsafe_at_any_budget() -> None:
    """The user's shape: unsafe with a replayed trace, at the default budget and at
    ``--budget 10`` (10M z3 units a query, 6,000 falsifier appends), where the bounded search
    alone answers ``unknown``."""
    policy = parse_policy(USER, "user.toml")
    for budget in (Budget(), Budget.of(10)):
        d = decide(policy, budget)
        assert d.verdict == "unsafe", d.detail
        assert d.method.startswith("falsifier"), d.method
        found, at = replay(policy, d.trace, "partitioned", d.messages, frozenset(d.failures))
        assert at == len(d.trace) and found == list(d.findings)
        assert [f.kind for f in d.findings] == ["hole"]  # the truncator drops the oldest turn
    # the safe side of the boundary is proved, not falsified
    safe = parse_policy(USER.replace("198002", "198001"), "user-safe.toml")
    assert falsify(safe) is None
    d = decide(safe)
    assert d.verdict == "safe" and "re-checked" in d.method


def test_falsifier_sessions_replay_on_generated_policies() -> None:
    """Every session the falsifier returns on real-size policies is well formed and its
    findings are the model's, at its last append and no earlier."""
    hits = 0
    for policy in _generated(every=7):
        got = falsify(policy)
        if got is None:
            continue
        hits += 1
        _well_formed(policy, got.session)
        s = got.session
        found, at = replay(policy, s.sizes, "partitioned", s.messages, s.failures)
        assert at == len(s.sizes) and tuple(found) == got.findings, policy.name
    assert hits >= 10  # the generated families do fail (a falsifier that finds nothing would pass)


def _z3_accepts(policy: Policy, session: Session) -> bool:
    """Whether the z3 encoding (the bounded search's, window as wide as the session) takes
    ``session``: every input allowed, clean at every append but the last, bad at the last."""
    width = min(needed_window(policy), len(session.sizes))
    solver = z3.Solver()
    state = init_state(0, shape_of(policy))
    for k, size in enumerate(session.sizes):
        if len(state.w) < min(width, k + 1):
            state = state.widen()
        st = encode_step(policy, state, z3.IntVal(size), f"t{k}")
        solver.add(st.input_ok)
        if st.messages is not None:
            solver.add(st.messages == session.count(policy, k))
        if k == len(session.sizes) - 1:
            solver.add(z3.Or(*[b for _, b in st.bad]))
        else:
            solver.add(st.clean)
        state = st.nxt
    return bool(solver.check() == z3.sat)


def test_z3_encoding_accepts_falsifier_sessions() -> None:
    """The falsifier's sessions are sessions of the z3 side too (same inputs, same step of
    the first loss): on generated policies whose window is exact, and on the user's shape."""
    small = [p for p in _generated(every=3) if needed_window(p) <= 24]
    checked = 0
    with own_context():
        for policy in small:
            got = falsify(policy)
            if got is None or len(got.session.sizes) > 120:
                continue
            assert _z3_accepts(policy, got.session), policy.name
            checked += 1
            if checked == 4:
                break
        user = parse_policy(USER, "user.toml")  # and the user's 99-append session (about 1 s)
        got = falsify(user)
        assert got is not None and _z3_accepts(user, got.session)
    assert checked >= 2


def _inventing(real: object) -> object:
    """A broken model step: a hole on the 30th append of every session, lost or not."""

    def step(policy: Policy, state: object, size: int, *args: object, **kw: object) -> list[Finding]:
        found = real(policy, state, size, *args, **kw)  # type: ignore[operator]
        if len(state.sizes) == 30 and not found:  # type: ignore[attr-defined]
            return [Finding("hole", 0, 30, (0,), "invented")]
        return list(found)

    return step


def test_an_invented_loss_is_refused_by_the_falsifier(monkeypatch: pytest.MonkeyPatch) -> None:
    """Break the falsifier on purpose: its model step invents a loss at append 30, before
    the policy's real one (append 99). The falsifier's replay through the real model refuses
    every such session: it returns nothing rather than a non-loss."""
    policy = parse_policy(USER, "user.toml")
    real = falsify(policy)
    assert real is not None and len(real.session.sizes) == 99
    monkeypatch.setattr(falsify_module, "step", _inventing(falsify_module.step))
    got = falsify(policy)
    assert got is None or replay(policy, got.session.sizes)[1] == len(got.session.sizes)


def test_an_unreplayed_session_is_never_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A falsifier that claims a loss the model does not reproduce: the solver replays it
    again and reports no ``unsafe`` with it."""
    policy = parse_policy(USER, "user.toml")
    fake = falsify_module.Found(Session((1,) * 5), (Finding("hole", 0, 5, (0,), "invented"),), "broken")
    monkeypatch.setitem(decide.__globals__, "falsify", lambda *a, **k: fake)  # where decide looks it up
    d = decide(policy, Budget.of(1, depth=20))
    assert d.trace != fake.session.sizes
    assert d.verdict == "unknown"  # the bounded search alone cannot reach append 99 here


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policies(spec11=True))
def test_fails_late_is_sound(policy: Policy) -> None:
    """``fails_late(p, d)`` skips the bounded search up to ``d``: no session may fail that
    early. Checked against the explorer's shortest failing session (small policies, so a
    small ``d``)."""
    for depth in (1, 2, 3, 5):
        if not fails_late(policy, depth):
            continue
        got = explore(policy, max_states=20_000)
        if got.verdict == "unsafe":
            assert len(got.trace) > depth, (policy, got.trace)


def test_fails_late_gate_on_real_sizes() -> None:
    """The gate is open at real sizes and closed where the first loss can be shallow."""
    policy = parse_policy(USER, "user.toml")
    depth = Budget().quick_depth
    assert fails_late(policy, depth)
    assert not fails_late(policy.with_knob("turn_max", 20000), depth)  # 10 turns reach the window


# f119 of a fuzz run: the LangChain window shape whose proof needs "once a summary exists, at
# least 35 turns stay verbatim" (a kept tail, more than the floor's 26 messages), beyond the
# 24 turns Houdini tried before: it took Spacer 21 to 33 s of CPU, now Houdini 0.1 s (without
# the new lower bounds this test fails: Spacer proves it)
TAIL_FLOOR = """
name = "tail-floor"
window = 32000
base_tokens = 4000
turn_tokens = [1, 500]
floor = 26
floor_unit = "messages"

[[stage]]
kind = "compact"
trigger_unit = "tokens"
trigger = 17193
keep_unit = "messages"
keep = 35
summary_tokens = 4000
summary = "message"

[[stage]]
kind = "truncate"
unit = "tokens"
limit = 31405
"""


def test_houdini_keeps_the_floor_at_real_sizes() -> None:
    policy = parse_policy(TAIL_FLOOR, "tail-floor.toml")
    d = decide(policy)
    assert d.verdict == "safe" and d.method.startswith("inductive occupancy bounds"), d
    # one message more in the floor than the tail can hold: the falsifier breaks it
    broken = parse_policy(TAIL_FLOOR.replace("floor = 26", "floor = 36"), "tail-floor-36.toml")
    d = decide(broken)
    assert d.verdict == "unsafe" and d.method.startswith("falsifier"), d
    found, at = replay(broken, d.trace, "partitioned", d.messages, frozenset(d.failures))
    assert at == len(d.trace) and found


def test_an_unsound_invariant_is_never_a_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    """Break the proof shortcut on purpose: Houdini hands over a lemma that excludes every
    loss but is not inductive (occupancy at most 100,000 tokens, on the user's unsafe shape).
    The certificate re-check refuses it and the verdict is the real one."""
    from tailguard.pipeline.encode import occupancy

    policy = parse_policy(USER, "user.toml")

    def bogus(*args: object, **kw: object) -> object:
        return lambda s: occupancy(policy, s, "tokens") <= 100_000

    monkeypatch.setitem(decide.__globals__, "houdini", bogus)  # where decide looks it up
    d = decide(policy)
    assert d.verdict == "unsafe", d


# --- shrinking (issue 26: a falsifier trace is made as short and as small as the model allows)

# a small policy whose falsifier session (turns of two messages, then a one-message spike: 6
# appends) is longer than needed: the explorer's shortest fails after 4 (found by a random
# search over the agreement tests' policies)
SHORTENS = Policy(
    "shortens", 1, 1, 2, "messages",
    (Compact("turns", 3, "messages", 2, 1, input_limit=8, summary="message", clip=True,
             input_limit_unit="messages", first_input_limit=3),),
    base_tokens=3, keep_first=2, window=8, messages_per_turn=(1, 2))


def _signature(findings: tuple[Finding, ...] | list[Finding]) -> set[tuple[str, int]]:
    return {(f.kind, f.stage) for f in findings}


def _fails_same(policy: Policy, rows: list[tuple[int, int, bool]], want: set[tuple[str, int]]) -> bool:
    """Whether the session first loses at its last append, with the same kinds and stages."""
    if not rows:
        return False
    sizes = [r[0] for r in rows]
    messages = [r[1] for r in rows]
    failures = frozenset(k + 1 for k, r in enumerate(rows) if r[2])
    found, at = replay(policy, sizes, "partitioned", messages, failures)
    return at == len(rows) and _signature(found) == want


def _locally_minimal(policy: Policy, session: Session, findings: tuple[Finding, ...]) -> str:
    """"" when no single append can be removed, made one token or one message smaller, or
    have its failed write succeed and the session still lose the same way; else which."""
    rows = [(z, session.count(policy, k), k + 1 in session.failures) for k, z in enumerate(session.sizes)]
    want = _signature(findings)
    assert _fails_same(policy, rows, want)
    for i, (size, messages, fails) in enumerate(rows):
        if i < len(rows) - 1 and _fails_same(policy, rows[:i] + rows[i + 1:], want):
            return f"append {i + 1} can be removed"
        for row in ((size - 1, messages, fails), (size, messages - 1, fails), (size, messages, False)):
            if row != rows[i] and row[0] >= policy.turn_min and row[1] >= policy.messages_per_turn[0] \
                    and _fails_same(policy, [*rows[:i], row, *rows[i + 1:]], want):
                return f"append {i + 1} can be {row}"
    return ""


def test_shrink_drops_the_turns_a_loss_does_not_need() -> None:
    """The falsifier's 6-append session shrinks to 4, the explorer's shortest length, with
    the same kind of finding; and the engine's answer is no longer than that (the bounded
    search confirms it is the shortest). Fails if the shrinking is removed."""
    raw = falsify(SHORTENS)
    assert raw is not None and len(raw.session.sizes) == 6
    small = shrink(SHORTENS, raw.session)
    assert small is not None and small.minimal
    assert len(small.session.sizes) == len(explore(SHORTENS).trace) == 4
    assert _signature(small.findings) == _signature(raw.findings) == {("floor", 0)}
    found, at = replay(SHORTENS, small.session.sizes, "partitioned", small.session.messages,
                       small.session.failures)
    assert at == 4 and tuple(found) == small.findings
    assert _locally_minimal(SHORTENS, small.session, small.findings) == ""


def test_reported_falsifier_traces_are_locally_minimal() -> None:
    """On generated real-size policies, every trace the engine reports from the falsifier
    (the shorter ones, to keep this fast) is locally minimal, as its method line says: no
    single append can be removed or made smaller. The raw falsifier sessions are not (turns
    of ``turn_max`` where less would do): fails if the shrinking is removed."""
    checked = shrunk = 0
    for policy in _generated(every=3):
        if checked == 8:
            break
        raw = falsify(policy, steps=3_000)  # the same first session, sooner given up on
        if raw is None or len(raw.session.sizes) > 60:
            continue
        d = decide(policy)
        if not d.method.startswith("falsifier"):
            continue
        assert "locally minimal" in d.method or "shortest" in d.method, d.method
        session = Session(d.trace, d.messages, frozenset(d.failures))
        dynamic = tuple(f for f in d.findings if f.kind != "unenforceable")  # static ones aside
        assert _locally_minimal(policy, session, dynamic) == "", (policy.name, d.method)
        shrunk += raw.session != session
        checked += 1
    assert checked == 8 and shrunk >= 4, (checked, shrunk)


# a generated real-size policy (``bench_real_size.py``, seed 26, number 172): the falsifier's
# session, 179 steady turns of 2,000 tokens, shrinks to a locally minimal 24 (pairs merged into
# 16,000-token turns), where a session of 20 fails (turns of 20,000: merging pairs of 16,000
# would overshoot the largest turn)
CODEX_LIKE = """
name = "172-codex-like-400k-20000"
window = 400000
base_tokens = 2000
turn_tokens = [2000, 20000]
messages_per_turn = [1, 4]
floor = 40000
floor_unit = "tokens"

[[stage]]
kind = "truncate"
unit = "tokens"
limit = 380000

[[stage]]
kind = "compact"
trigger_unit = "tokens"
trigger = 360000
keep_unit = "turns"
keep = 4
summary_tokens = 2000
"""


def test_the_bounded_search_looks_below_the_falsifiers_length() -> None:
    """Where it is cheap (an exact window, a few dozen depths), the bounded search below the
    shrunk session's length runs before the falsifier's session is reported, and its own
    session, a shortest, is the answer when it finds one. Fails if that search is removed."""
    policy = parse_policy(CODEX_LIKE, "codex-like.toml")
    raw = falsify(policy)
    assert raw is not None and len(raw.session.sizes) == 179
    small = shrink(policy, raw.session)
    assert small is not None and small.minimal and len(small.session.sizes) == 24
    d = decide(policy)
    assert d.verdict == "unsafe" and d.method == "bmc depth 20" and len(d.trace) == 20, d.method
    found, at = replay(policy, d.trace, "partitioned", d.messages, frozenset(d.failures))
    assert at == 20 and found
    # the user's shape: no stage fires before the 98th append, and its 99-append session is
    # locally minimal; the window is too wide for the bounded search to confirm it cheaply
    d = decide(parse_policy(USER, "user.toml"))
    assert "locally minimal" in d.method and len(d.trace) == 99, d.method


# --- --depth bounds the falsifier (issue 26): no session longer than --depth is the answer


def test_depth_bounds_the_falsifier() -> None:
    """The user's shape fails first after 99 appends (it needs 98 turns of 2,000 tokens to
    reach the trigger's edge). Without ``--depth`` the falsifier's 99-append session is the
    answer; with ``--depth 99`` too; with ``--depth 60`` it is not: the bounded search finds
    nothing within 60 appends, and the verdict is ``unknown`` (depth), naming the longer
    session that exists. Fails if ``--depth`` is ignored by the falsifier."""
    policy = parse_policy(USER, "user.toml")
    for budget in (Budget(), Budget.of(100, depth=99)):
        d = decide(policy, budget)
        assert d.verdict == "unsafe" and len(d.trace) == 99, d
    d = decide(policy, Budget.of(10, depth=60))
    assert d.verdict == "unknown" and d.exhausted == "depth", d
    assert not d.trace
    assert "a failing session of 99 appends exists" in d.detail and "--depth 60" in d.detail
    assert "raise --depth to 99" in d.detail


def test_depth_on_the_command_line_bounds_every_search(tmp_path: Path) -> None:
    """``check-config --depth 60`` on the user's shape: exit 3, JSON ``exhausted: depth``,
    no trace; without ``--depth``: exit 1 and the 99-append trace."""
    path = tmp_path / "user.toml"
    path.write_text(USER, encoding="utf-8")
    code, out, _ = run_cli("check-config", "--format", "json", "--depth", "60", "--budget", "10", str(path))
    data = json.loads(out)["policies"][0]
    assert code == 3 and data["verdict"] == "unknown" and data["exhausted"] == "depth", data
    assert data["findings"] == []
    code, out, _ = run_cli("check-config", "--format", "json", str(path))
    data = json.loads(out)["policies"][0]
    assert code == 1 and len(data["findings"][0]["trace"]) == 99
