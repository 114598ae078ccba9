"""The differential harness of the framework presets (brief 6c, 6d): one source for the tests
(tests/presets) and ``tailguard doctor``.

A session is a list of turns; a turn is one human message, one AI answer, or an AI message
with tool calls and its tool results (1 + k messages, moved together by every framework's
safe-cutoff rule). Each message's size in tokens is its content's length in characters:
the drivers pass the framework a ``token_counter`` that counts exactly that (LangChain's and
langmem's own knob), so the model's sizes match the framework's to the token.

For every append a driver runs the real package and steps the preset's model
(:func:`tailguard.pipeline.model.step` on the translated policy), and at every compaction
compares what the real code deleted, what its summarizer was shown whole and what stayed
verbatim with what the model's ``compact`` event says. The known differences a preset
declares are checked as declared, never skipped silently. A disagreement is a
:class:`Mismatch` naming the append (and the compaction) where it happened.

Sessions come from the tests' Hypothesis strategies or, in ``doctor``, from
:func:`random_turns` (a seeded :class:`random.Random`, no Hypothesis needed). Standard
library and the pipeline only: the frameworks are imported by the driver modules.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tailguard.pipeline.model import Event, State, step
from tailguard.pipeline.policy import Compact, Policy, parse_policy
from tailguard.pipeline.presets import find

__all__ = ["MIN_MESSAGE", "Case", "Compaction", "Mismatch", "ModelRun", "Turn", "adapter_verdict", "content", "covers",
           "holes", "knob_label", "preset_policy", "random_turns"]


class Mismatch(AssertionError):
    """The real package and the preset's model disagree; ``compaction``: the 1-based number of
    the real compaction where they did (``None``: not known, or none had run)."""

    def __init__(self, message: str, compaction: int | None = None) -> None:
        super().__init__(message)
        self.compaction = compaction


@dataclass(frozen=True)
class Case:
    """One check ``doctor`` runs: ``check`` says what it compares (``preset``: the real package
    with the preset's model; ``adapter``: the guarded framework with the preset's findings),
    ``label`` the knobs and session (enough to reproduce it), ``run`` runs it and returns the
    real compactions compared (raises :class:`Mismatch`)."""

    check: Literal["preset", "adapter"]
    label: str
    run: Callable[[], int]


@dataclass(frozen=True)
class Turn:
    """``kind``: ``human``, ``ai`` (an answer) or ``tools`` (an AI call and its results);
    ``sizes``: the tokens of each message, the AI message first for ``tools``."""

    kind: str
    sizes: tuple[int, ...]

    @property
    def tokens(self) -> int:
        return sum(self.sizes)

    @property
    def messages(self) -> int:
        return len(self.sizes)


MIN_MESSAGE = 12  # a message holds its tag ("[t123m4]") and some filler


def content(turn: int, message: int, size: int) -> str:
    """A message's text: a unique tag, then lines of filler, ``size`` characters in all (the
    lines let LangChain's ``allow_partial`` cut a message, which the harness then sees as
    not shown whole)."""
    tag = f"[t{turn}m{message}]"
    body = "".join("\n" if (i + 1) % 10 == 0 else "x" for i in range(size - len(tag)))
    return tag + body


def random_turns(rng: random.Random, *, max_turns: int = 40, max_size: int = 300, tools: bool = True,
                 first_human: bool = True, min_turns: int = 1) -> list[Turn]:
    """A session as the tests' ``turns`` strategy draws it: sizes from :data:`MIN_MESSAGE` up;
    human, answer and tool-call turns (1 to 3 results)."""
    kinds = ["human", "ai", "tools"] if tools else ["human", "ai"]
    out: list[Turn] = []
    for i in range(rng.randint(min_turns, max_turns)):
        kind = "human" if i == 0 and first_human else rng.choice(kinds)
        k = rng.randint(1, 3) if kind == "tools" else 0
        out.append(Turn(kind, tuple(rng.randint(MIN_MESSAGE, max_size) for _ in range(1 + k))))
    return out


def preset_policy(framework: str, knobs: str, floor: int = 0, floor_unit: str = "messages",
                  extra: str = "", max_size: int = 1200) -> Policy:
    """The translated policy of a preset, as ``check-config`` reads it."""
    text = (f'name = "differential"\nturn_tokens = [1, {max_size}]\nmessages_per_turn = [1, 4]\n'
            f'floor = {floor}\nfloor_unit = "{floor_unit}"\n{extra}\n'
            f'[framework]\nname = "{framework}"\n{knobs}\n')
    if find(framework) is None:
        raise ValueError(f"no preset named {framework!r}")
    return parse_policy(text, "differential.toml")


@dataclass
class Compaction:
    """One compaction in turn indices: ``deleted`` the turns that left the context, ``shown``
    those the summarizer saw whole, ``kept`` the unpinned turns still verbatim, and whether
    the earlier summary (if any) was shown whole."""

    deleted: tuple[int, ...]
    shown: tuple[int, ...]
    kept: tuple[int, ...]
    summary_shown: bool | None = None  # None: there was no earlier summary
    spilled: tuple[int, ...] = ()


@dataclass
class ModelRun:
    """The preset's model stepped turn by turn; ``last`` the compaction of the latest append."""

    policy: Policy
    state: State = field(default_factory=State)
    previous: State = field(default_factory=State)

    def undo(self, turn: Turn) -> None:
        """Undo the latest append's stages (the real code did nothing, as a declared difference
        says): the state before it, with the turn appended verbatim."""
        self.state = self.previous
        index = len(self.state.sizes)
        self.state.sizes.append(turn.tokens)
        self.state.messages.append(turn.messages)
        self.state.body += turn.tokens
        self.state.mbody += turn.messages
        (self.state.pinned if index < self.policy.keep_first else self.state.verbatim).append(index)

    def append(self, turn: Turn, spill_fails: bool = False) -> tuple[Compaction | None, list[str]]:
        self.previous = self.state.copy()
        before = list(self.state.verbatim)
        had_summary = self.state.summary
        events: list[Event] = []
        found = step(self.policy, self.state, turn.tokens, events, messages=turn.messages,
                     spill_fails=spill_fails)
        kinds = [f"{f.kind}:{f.detail}" for f in found]
        compact = next((e for e in events if e.kind == "compact"), None)
        if compact is None:
            return None, kinds
        _, seen, tail = compact.data[:3]
        inherited = compact.data[3] if len(compact.data) > 3 else 1
        index = len(self.state.sizes) - 1
        verbatim = [*before, index]
        spill = next((e for e in events if e.kind == "spill"), None)
        stage = self.policy.stages[compact.data[0]]
        if not isinstance(stage, Compact):
            raise TypeError(f"a compact event from stage {compact.data[0]}, which is not a compact stage")
        summary_shown = None
        if had_summary and stage.summary == "message":
            summary_shown = bool(inherited)
        return Compaction(
            deleted=tuple(j for j in verbatim if j < tail),
            shown=tuple(j for j in verbatim if seen <= j < tail),
            kept=tuple(j for j in verbatim if j >= tail),
            summary_shown=summary_shown,
            spilled=tuple(range(spill.data[0], spill.data[1])) if spill else (),
        ), kinds

    def resync(self, kept: Sequence[int], covered: set[int], spilled: set[int] | None = None) -> None:
        """Continue from the real code's state after a declared difference that kept more
        turns verbatim than the model (``tail_rounds_up``): those turns go back into the
        model's context and its summary holds what the real one holds unspilled, so the next
        compaction is compared from the same state."""
        back = sorted(set(kept) - set(self.state.verbatim))
        for j in back:
            self.state.body += self.state.sizes[j]
            self.state.mbody += self.state.messages[j]
        self.state.verbatim = sorted({*self.state.verbatim, *back})
        only = sorted(covered - (spilled or set()))
        ranges: list[tuple[int, int]] = []
        for j in only:  # maximal [lo, hi) runs, as State.unspilled holds them
            if ranges and ranges[-1][1] == j:
                ranges[-1] = (ranges[-1][0], j + 1)
            else:
                ranges.append((j, j + 1))
        self.state.unspilled = tuple(ranges)


def covers(previous: set[int], real: Compaction) -> set[int]:
    """What the real summary covers after ``real`` (brief 4c): the earlier summary's coverage
    if it was shown whole (or is kept beside, ``summary_shown is None``), and the turns shown."""
    inherited = previous if real.summary_shown is not False else set()
    return inherited | set(real.shown)


def holes(kinds: Sequence[str]) -> bool:
    return any(k.startswith("hole:") for k in kinds)


def adapter_verdict(found: Sequence[str], allowed: int, refused: bool, *, must_refuse: bool = False) -> int:
    """Runtime and config on the same knobs (brief 6d), from an adapter run (``allowed``
    compactions, then ``refused`` or not) and the preset model's findings on the same session: no
    refusal where the model finds nothing, a refusal where ``must_refuse``. Returns ``allowed``."""
    if refused and not found:
        raise Mismatch(f"the adapter refused compaction {allowed + 1}, where the preset's model finds no hole",
                       allowed + 1)
    if must_refuse and not refused:
        raise Mismatch(f"the adapter allowed all {allowed} compactions of a session where the preset's model "
                       f"finds {list(found)[:3]}", allowed)
    return allowed


def knob_label(k: Mapping[str, Any], session: Sequence[Turn]) -> str:
    """A case's label: its knobs and the session's length."""
    return f"knobs {dict(k)}, {len(session)} turns"
