"""z3 encoding of one append step over the window abstraction.

Abstract state: pinned turns so far ``p`` and their tokens ``P``; the size of the
summary in context ``sc`` (0 when none); the unpinned verbatim turns as a count
``L``, a token total ``S`` and the sizes of the newest ``W`` of them (``w[0]`` the
newest; slots past ``L`` hold 0). Along a clean run a truncate stage drops nothing
(dropping is a hole) and a compaction summarizes every candidate (a clipped one is a
hole), so the stages reduce to checks plus the tail computation. When ``W`` covers
every tail the encoding is exact; otherwise tails reaching past the window are
chosen by fresh variables within the bounds every real tail meets (a sound
over-approximation, used only to prove safety; counterexamples come from an exact
window). ``proofs/pipeline.py`` proves the reductions this relies on.

Spec 1.1 (brief 6b), only where the policy uses it (:class:`Shape`), so 1.0 policies keep
their encoding: the messages of the pinned turns ``pm``, of the verbatim ones ``M`` and
of the newest ``W`` (``wm``), like the tokens; whether a summary is in the context
``hs`` (a summary of 0 tokens is one message); and ``U``, whether the summary holds a
turn that was never spilled (what a ``summary = "message"`` compaction loses when it
does not show the earlier summary whole). Spill stages: a ``halt`` spill is encoded as
a write that always succeeds (a failed one ends the session, which then finds nothing)
and a ``proceed`` spill as one that always fails (a failed write only leaves more
unspilled: proofs/pipeline.py P6), so neither needs a choice variable. A
``message``-placement compaction runs when the earlier summary is its only candidate.
Spec 1.2: a ``keep_less_pinned`` tail's budget is ``keep - base_tokens - P``; under
``min_progress`` (left out ``L - kt`` turns, and the summary with a ``message`` placement, of
``p + hs + L``) the tail is empty (:func:`tailguard.pipeline.model.compact_tail`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import z3

from tailguard.pipeline.model import DEFAULT_PROFILE, Profile, spill_modes
from tailguard.pipeline.policy import ClipArgs, Compact, Policy, Truncate

Z = Any  # z3 expressions are untyped


@dataclass(frozen=True)
class Shape:
    """Which spec 1.1 state components a policy needs (none for a 1.0 policy)."""

    messages: bool = False  # pm, M, wm: some check counts messages
    summary_flag: bool = False  # hs: messages occupancy or a ``message`` placement reads it
    unspilled: bool = False  # U: a ``message`` placement with an input limit reads it
    clip: bool = False  # G: a ``clip_args`` stage reads the sizes of turns outside the window


PLAIN = Shape()


def shape_of(policy: Policy) -> Shape:
    """The state components ``policy`` needs."""
    units = {policy.floor_unit}
    placement = False
    dropping = False
    for s in policy.stages:
        if isinstance(s, Truncate):
            units.add(s.unit)
        elif isinstance(s, ClipArgs):
            if s.min_tokens <= policy.turn_max:
                units |= {s.trigger_unit, s.keep_unit}
        elif isinstance(s, Compact):
            units |= {*s.trigger_units, s.keep_unit}
            if s.input_limit > 0:
                units.add(s.input_limit_unit)
            if s.summary == "message":
                placement = True
                dropping = dropping or s.input_limit > 0
            if s.first_input_limit or s.min_progress:
                placement = True  # hs: whether a summary (perhaps of 0 tokens) is in the context
    messages = "messages" in units
    return Shape(messages, messages or placement, dropping, bool(live_clips(policy)))


def live_clips(policy: Policy) -> list[ClipArgs]:
    """The ``clip_args`` stages some turn can reach (``min_tokens`` at most ``turn_max``): the
    others never clip and are encoded as nothing."""
    return [s for s in policy.stages if isinstance(s, ClipArgs) and s.min_tokens <= policy.turn_max]


@dataclass(frozen=True)
class AState:
    """Abstract state as z3 terms (spec 1.1 components ``None`` / empty when unused)."""

    p: Z
    P: Z
    sc: Z
    S: Z
    L: Z
    w: tuple[Z, ...]
    pm: Z = None
    M: Z = None
    wm: tuple[Z, ...] = ()
    hs: Z = None
    U: Z = None
    G: Z = None  # 1: some verbatim turn outside the window can hold a clippable argument

    def flat(self) -> list[Z]:
        out = [self.p, self.P, self.sc, self.S, self.L, *self.w]
        if self.pm is not None:
            out += [self.pm, self.M, *self.wm]
        return out + [v for v in (self.hs, self.U, self.G) if v is not None]

    def widen(self) -> AState:
        """One more window slot (empty)."""
        zero = z3.IntVal(0)
        return replace(self, w=(*self.w, zero),
                       wm=(*self.wm, zero) if self.pm is not None else ())

    def has_summary(self) -> Z:
        return self.hs == 1 if self.hs is not None else self.sc > 0


def tokens_matter(policy: Policy) -> bool:
    """Whether any check ever reads a token count (else turn sizes are irrelevant)."""
    if policy.floor_unit == "tokens" or policy.window:
        return True
    for s in policy.stages:
        if (isinstance(s, Truncate) and s.unit == "tokens") or \
                (isinstance(s, ClipArgs) and s.min_tokens <= policy.turn_max):
            return True  # a clip_args stage reads every turn's size (min_tokens)
        if isinstance(s, Compact) and (
            "tokens" in (*s.trigger_units, s.keep_unit)
            or (s.input_limit > 0 and s.input_limit_unit == "tokens")
        ):
            return True
    return False


def needed_window(policy: Policy) -> int:
    """Window that makes the encoding exact: every tail lies inside it (none is needed
    when no check reads a token or message count: then sizes never matter)."""
    if not tokens_matter(policy) and not shape_of(policy).messages:
        return 0
    width = 1
    tails: list[Compact | ClipArgs] = [s for s in policy.stages if isinstance(s, Compact)]
    for s in [*tails, *live_clips(policy)]:
        per_turn = {"turns": 0, "tokens": policy.turn_min,
                    "messages": policy.messages_per_turn[0]}[s.keep_unit]
        width = max(width, s.keep if s.keep_unit == "turns" else s.keep // per_turn + 1)
    return width


def fresh_state(prefix: str, width: int, shape: Shape = PLAIN) -> AState:
    """Symbolic state with variables named ``prefix``."""
    ints = z3.Ints(" ".join(f"{prefix}_{n}" for n in ("p", "P", "sc", "S", "L")))
    w = tuple(z3.Int(f"{prefix}_w{i}") for i in range(width))
    st = AState(ints[0], ints[1], ints[2], ints[3], ints[4], w)
    if shape.messages:
        st = replace(st, pm=z3.Int(f"{prefix}_pm"), M=z3.Int(f"{prefix}_M"),
                     wm=tuple(z3.Int(f"{prefix}_m{i}") for i in range(width)))
    if shape.summary_flag:
        st = replace(st, hs=z3.Int(f"{prefix}_hs"))
    if shape.unspilled:
        st = replace(st, U=z3.Int(f"{prefix}_U"))
    if shape.clip:
        st = replace(st, G=z3.Int(f"{prefix}_G"))
    return st


def init_state(width: int, shape: Shape = PLAIN) -> AState:
    """The empty session."""
    zero = z3.IntVal(0)
    st = AState(zero, zero, zero, zero, zero, tuple(zero for _ in range(width)))
    if shape.messages:
        st = replace(st, pm=zero, M=zero, wm=tuple(zero for _ in range(width)))
    if shape.summary_flag:
        st = replace(st, hs=zero)
    if shape.unspilled:
        st = replace(st, U=zero)
    if shape.clip:
        st = replace(st, G=zero)
    return st


def _slots(st: AState, arr: tuple[Z, ...], total: Z, lo: int, hi: int) -> list[Z]:
    """Window slots within per-turn bounds, and the rest of ``total`` within the bounds
    of the turns outside the window."""
    width = len(arr)
    facts = [z3.If(i < st.L, z3.And(a >= lo, a <= hi), a == 0) for i, a in enumerate(arr)]
    m = z3.If(width > st.L, st.L, width)
    rest = total - z3.Sum([*arr, z3.IntVal(0)])
    return [*facts, rest >= (st.L - m) * lo, rest <= (st.L - m) * hi]


def basic(policy: Policy, st: AState) -> Z:
    """Facts every reachable state meets (proved inductive per policy by the solver)."""
    lo, hi = policy.turn_min, policy.turn_max
    sizes = [s.summary_tokens for s in policy.stages if isinstance(s, Compact)]
    facts = [
        st.p >= 0, st.p <= policy.keep_first, st.p * lo <= st.P, st.p * hi >= st.P,
        z3.Or(st.sc == 0, *[st.sc == s for s in sizes]),
        st.L >= 0, z3.Implies(st.p < policy.keep_first, z3.And(st.L == 0, st.sc == 0)),
        *_slots(st, st.w, st.S, lo, hi),
    ]
    if st.pm is not None:
        mlo, mhi = policy.messages_per_turn
        facts += [st.p * mlo <= st.pm, st.p * mhi >= st.pm, *_slots(st, st.wm, st.M, mlo, mhi)]
    if st.hs is not None:
        facts += [z3.Or(st.hs == 0, st.hs == 1), z3.Implies(st.hs == 0, st.sc == 0),
                  z3.Implies(st.p < policy.keep_first, st.hs == 0)]
    if st.U is not None:
        facts += [z3.Or(st.U == 0, st.U == 1), z3.Implies(st.U == 1, st.hs == 1)]
    if st.G is not None:
        facts += [z3.Or(st.G == 0, st.G == 1), z3.Implies(st.G == 1, len(st.w) < st.L)]
    return z3.And(*facts)


@dataclass
class Step:
    """One encoded append: the next state, the clean condition, per-stage bad conditions.
    ``messages``: the appended turn's message count (``None`` when not tracked)."""

    nxt: AState
    clean: Z
    bad: list[tuple[int, Z]]
    inputs: list[Z]
    input_ok: Z
    messages: Z = None


def occupancy(policy: Policy, st: AState, unit: str) -> Z:
    """Occupancy in ``unit`` (brief sections 6 and 6b)."""
    if unit == "turns":
        return st.p + st.L
    if unit == "messages":
        return st.pm + st.M + st.hs
    return policy.base_tokens + st.sc + st.P + st.S


def floor_lost(tail_turns: Z, tail_units: Z, floor: Z, unit: str) -> Z:
    """At a clean compaction that leaves out of the context at least one turn between the
    pinned turns and the tail (it summarizes one, or the earlier summary, which covers
    one), the floor is violated iff the tail is shorter than the floor; ``tail_units``
    is the tail in the floor's unit (tokens or messages; proved: ``proofs/pipeline.py``
    P1, P2, P5)."""
    return tail_turns < floor if unit == "turns" else tail_units < floor


def floor_unshown(policy: Policy, stage: Compact, profile: Profile) -> bool:
    """Whether, under ``profile``, every clean compaction is a floor loss because of the
    summarizer's input (then the loss is just ``fire``). Only ``strict`` asks for the
    floor in the input. With ``input = "all"`` the input is the seen candidates and the
    tail, which holds the floor (else ``floor_lost``): nothing to add. With
    ``"candidates"`` the newest turn is in the floor whenever ``F > 0``, and it is either
    in the tail (not shown to the summarizer) or out of the context (``floor_lost``):
    every such compaction is a loss."""
    return profile == "strict" and stage.input == "candidates" and policy.floor > 0


def encode_step(
    policy: Policy, st: AState, x: Z, tag: str, profile: Profile = DEFAULT_PROFILE
) -> Step:
    """Encode append of ``x`` tokens (and a fresh message count when tracked) then every
    stage under ``profile``; ``tag`` names fresh variables."""
    width = len(st.w)
    lo, hi = policy.turn_min, policy.turn_max
    pin = st.p < policy.keep_first
    shifted = (x, *st.w[: width - 1]) if width else ()
    cur = replace(
        st, p=z3.If(pin, st.p + 1, st.p), P=z3.If(pin, st.P + x, st.P),
        S=z3.If(pin, st.S, st.S + x), L=z3.If(pin, st.L, st.L + 1),
        w=tuple(z3.If(pin, a, b) for a, b in zip(st.w, shifted, strict=True)),
    )
    if st.G is not None:  # the turn leaving the window (none while it widens), or x itself
        floor = min(s.min_tokens for s in live_clips(policy))
        leaves = z3.And(width <= st.L, st.w[width - 1] >= floor) if width else x >= floor
        cur = replace(cur, G=z3.If(z3.And(z3.Not(pin), leaves), 1, st.G))
    inputs: list[Z] = [x]
    input_ok = [x >= lo, x <= hi]
    y = None
    if st.pm is not None:
        y = z3.Int(f"{tag}_y")
        inputs.append(y)
        input_ok += [y >= policy.messages_per_turn[0], y <= policy.messages_per_turn[1]]
        mshift = (y, *st.wm[: width - 1]) if width else ()
        cur = replace(cur, pm=z3.If(pin, st.pm + y, st.pm), M=z3.If(pin, st.M, st.M + y),
                      wm=tuple(z3.If(pin, a, b) for a, b in zip(st.wm, mshift, strict=True)))
    conds: list[Z] = []
    bad: list[tuple[int, Z]] = []
    modes = spill_modes(policy)
    for i, stage in enumerate(policy.stages):
        if isinstance(stage, Truncate):
            over = occupancy(policy, cur, stage.unit) > stage.limit
            bad.append((i, z3.And(*conds, over)))
            conds.append(z3.Not(over))
            continue
        if isinstance(stage, ClipArgs) and stage.min_tokens > policy.turn_max:
            continue  # no turn can hold a clippable argument: it never clips
        if isinstance(stage, ClipArgs):
            tail, extra, ok = _tail(policy, stage, cur, f"{tag}_{i}")
            inputs += extra
            input_ok += ok
            kc = tail["turns"]
            big = [z3.And(j >= kc, j < cur.L, wj >= stage.min_tokens) for j, wj in enumerate(cur.w)]
            # outside the window: G, when the clip's tail leaves some turn out (exact when the
            # window holds every tail, as BMC's does; else an over-approximation)
            clips = z3.And(occupancy(policy, cur, stage.trigger_unit) >= stage.trigger,
                           z3.Or(*big, z3.And(cur.G == 1, kc < cur.L)))
            bad.append((i, z3.And(*conds, clips)))
            conds.append(z3.Not(clips))
            continue
        if not isinstance(stage, Compact):
            continue  # a spill stage: its write is part of the compact stage it covers
        tail, extra, ok = _tail(policy, stage, cur, f"{tag}_{i}")
        earlier = stage.summary == "message"
        if stage.min_progress:  # under min_progress left out: no tail (model.compact_tail)
            num, den = stage.progress()
            left_out = cur.L - tail["turns"] + (cur.hs if earlier else 0)
            reset = left_out * den < num * (cur.p + cur.hs + cur.L)
            tail = {unit: z3.If(reset, 0, value) for unit, value in tail.items()}
        kt = tail["turns"]
        inputs += extra
        input_ok += ok
        some = kt < cur.L
        if earlier:
            some = z3.Or(some, cur.has_summary())
        triggered = z3.Or(*(z3.And(*(occupancy(policy, cur, unit) >= threshold for unit, threshold in clause))
                            for clause in stage.clauses))
        if stage.cut == "messages":  # nothing happens while the whole context is within keep
            some = z3.And(some, beyond_keep(policy, stage, cur))
        fire = z3.And(triggered, some)
        floor_unit = policy.floor_unit
        loss = floor_lost(kt, tail.get(floor_unit, kt), policy.floor, floor_unit)
        if floor_unshown(policy, stage, profile):
            loss = z3.BoolVal(True)
        spilled = modes.get(i) == "halt"
        unseen, dropped = z3.BoolVal(False), z3.BoolVal(False)
        if stage.input_limit > 0:
            unit = stage.input_limit_unit
            total = cur.S if unit == "tokens" else cur.M
            cand = total - tail[unit]
            limit = z3.If(cur.has_summary(), stage.input_limit, stage.first_input_limit) \
                if stage.first_input_limit else z3.IntVal(stage.input_limit)
            unseen = cand > limit
            if earlier and cur.U is not None:
                own = cur.sc if unit == "tokens" else z3.IntVal(1)
                dropped = z3.And(cur.hs == 1, cand + own > limit)
        lost, next_u = spill_effect(spilled, unseen, dropped, kt < cur.L, cur.U)
        loss = z3.Or(loss, lost)
        bad.append((i, z3.And(*conds, fire, loss)))
        conds.append(z3.Not(z3.And(fire, loss)))
        nxt = replace(
            cur, sc=z3.If(fire, stage.summary_tokens, cur.sc), S=z3.If(fire, tail["tokens"], cur.S),
            L=z3.If(fire, kt, cur.L),
            w=tuple(z3.If(z3.And(fire, j >= kt), 0, wj) for j, wj in enumerate(cur.w)),
        )
        if cur.pm is not None:
            nxt = replace(nxt, M=z3.If(fire, tail["messages"], cur.M),
                          wm=tuple(z3.If(z3.And(fire, j >= kt), 0, v) for j, v in enumerate(cur.wm)))
        if cur.hs is not None:
            nxt = replace(nxt, hs=z3.If(fire, 1, cur.hs))
        if cur.U is not None:
            nxt = replace(nxt, U=z3.If(fire, next_u, cur.U))
        if cur.G is not None:  # a tail inside the window leaves no turn outside it
            nxt = replace(nxt, G=z3.If(z3.And(fire, kt <= width), 0, cur.G))
        cur = nxt
    if policy.window:  # spec 1.1: over the window after the stages is an overflow
        over = occupancy(policy, cur, "tokens") > policy.window
        bad.append((len(policy.stages), z3.And(*conds, over)))
        conds.append(z3.Not(over))
    return Step(cur, z3.And(*conds), bad, inputs, z3.And(*input_ok), y)


def beyond_keep(policy: Policy, stage: Compact, st: AState) -> Z:
    """LangChain's within-``keep`` rule (``cut = "messages"``, model._compact): a compaction
    happens only while the messages in context, the earlier summary included and
    ``base_tokens`` not (deepagents' system prompt is outside the cutoff's count), exceed
    ``keep``; else ``_determine_cutoff_index`` returns 0 and nothing is summarized, not even
    the earlier summary alone. tests/test_pipeline_cut.py breaks it on purpose."""
    base = policy.base_tokens if stage.keep_unit == "tokens" else 0  # the messages alone
    return occupancy(policy, st, stage.keep_unit) - base > stage.keep


def spill_effect(spilled: bool, unseen: Z, dropped: Z, summarized: Z, u: Z) -> tuple[Z, Z]:
    """What a firing compaction loses besides the floor, and the next unspilled flag ``U``
    (``u``; ``None`` when not tracked). ``unseen``: some candidate turn was not shown to the
    summarizer; ``dropped``: the earlier summary was not shown whole (``summary =
    "message"``); ``summarized``: some candidate turn was (on a clean run every one was).
    Written (``spilled``), no candidate is a hole and the summary gains nothing unspilled;
    else an unseen candidate is a hole and a summarized one makes ``U`` 1. A dropped
    summary loses what it held unspilled (``U``). ``proofs/pipeline.py`` P6: a failed write
    is never better than a successful one, which is why ``proceed`` is encoded as "always
    fails" and ``halt`` as "always succeeds"."""
    if u is None:
        return (z3.BoolVal(False) if spilled else unseen), None
    lost = z3.Or(z3.And(dropped, u == 1), z3.BoolVal(False) if spilled else unseen)
    return lost, (u if spilled else z3.If(summarized, 1, u))


def _tail(policy: Policy, stage: Compact | ClipArgs, st: AState, tag: str) -> tuple[dict[str, Z], list[Z], list[Z]]:
    """The tail in turns, tokens and (when tracked) messages; fresh variables when the
    tail may reach past the window."""
    width = len(st.w)
    arrays: dict[str, tuple[tuple[Z, ...], Z, int, int]] = {
        "tokens": (st.w, st.S, policy.turn_min, policy.turn_max)}
    if st.pm is not None:
        arrays["messages"] = (st.wm, st.M, *policy.messages_per_turn)
    extra: list[Z] = []
    ok: list[Z] = []
    out: dict[str, Z] = {}
    if stage.keep_unit == "turns":
        kt = z3.If(stage.keep > st.L, st.L, stage.keep)
        exact = stage.keep <= width
    else:
        arr, total, lo, hi = arrays[stage.keep_unit]
        prefix = [z3.IntVal(0)]
        for a in arr:
            prefix.append(prefix[-1] + a)
        budget: Z = z3.IntVal(stage.keep)
        if isinstance(stage, Compact) and stage.keep_less_pinned:  # model.compact_tail
            budget = stage.keep - policy.base_tokens - st.P
        fits = z3.Sum([z3.If(z3.And(j <= st.L, prefix[j] <= budget), 1, 0)
                       for j in range(1, width + 1)] + [z3.IntVal(0)])
        inside = z3.Sum([z3.If(j < fits, a, 0) for j, a in enumerate(arr)] + [z3.IntVal(0)])
        exact = width * lo > stage.keep
        if exact:
            kt, out[stage.keep_unit] = fits, inside
        else:
            k2, t2 = z3.Int(f"{tag}_k"), z3.Int(f"{tag}_t")
            extra += [k2, t2]
            open_ = z3.And(fits == width, width < st.L)
            more = k2 - width
            ok.append(z3.Implies(open_, z3.And(
                k2 >= width, k2 <= st.L, t2 - inside >= more * lo, t2 - inside <= more * hi,
                t2 <= budget, t2 <= total, (total - t2) >= (st.L - k2) * lo,
                (total - t2) <= (st.L - k2) * hi,
                z3.Implies(k2 == st.L, t2 == total), z3.Implies(k2 < st.L, t2 >= budget - hi + 1),
            )))
            kt, out[stage.keep_unit] = z3.If(open_, k2, fits), z3.If(open_, t2, inside)
    if isinstance(stage, Compact) and stage.cut == "messages" and stage.keep_unit != "turns":
        # LangChain's cut (model.compact_tail): one turn more when the cut lands inside it (a
        # messages keep not yet full) or when no whole turn fits (a tokens keep); every unit is
        # then summed again over the new count
        more = out[stage.keep_unit] < stage.keep if stage.keep_unit == "messages" else kt == 0
        add = z3.And(kt < st.L, more)
        arr, total, lo, hi = arrays[stage.keep_unit]
        # the added turn: its window slot (exact windows hold kt + 1 turns: more than
        # keep // per_turn slots), else a fresh turn within the per-turn bounds
        slot = z3.Sum([z3.If(kt == j, a, 0) for j, a in enumerate(arr)] + [z3.IntVal(0)])
        if not exact:
            f = z3.Int(f"{tag}_f")
            extra.append(f)
            ok.append(z3.Implies(z3.And(add, kt >= width), z3.And(
                f >= lo, f <= hi, f <= total - out[stage.keep_unit],
                total - out[stage.keep_unit] - f >= (st.L - kt - 1) * lo,
                total - out[stage.keep_unit] - f <= (st.L - kt - 1) * hi)))
            slot = z3.If(kt < width, slot, f)
        out[stage.keep_unit] = z3.If(add, out[stage.keep_unit] + slot, out[stage.keep_unit])
        kt = z3.If(add, kt + 1, kt)
    out["turns"] = kt
    for unit, (arr, total, lo, hi) in arrays.items():
        if unit in out:
            continue
        inside = z3.Sum([z3.If(j < kt, a, 0) for j, a in enumerate(arr)] + [z3.IntVal(0)])
        if exact:
            out[unit] = inside
            continue
        e = z3.Int(f"{tag}_e{unit[0]}")
        extra.append(e)
        beyond = kt - width
        ok.append(z3.Implies(kt > width, z3.And(
            e >= beyond * lo, e <= beyond * hi, e <= total - inside,
            total - inside - e >= (st.L - kt) * lo, total - inside - e <= (st.L - kt) * hi)))
        out[unit] = z3.If(kt > width, inside + e, inside)
    return out, extra, ok
