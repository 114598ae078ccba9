"""The differential harness of the framework presets (issue 10 point 3, brief 6c), test side.

The harness itself (turns, the preset's model stepped turn by turn, the comparison records)
lives in the package, :mod:`tailguard.doctor.harness`, with the drivers of the real packages
(:mod:`tailguard.doctor.drivers`): ``tailguard doctor`` runs the same comparison on what is
installed. What stays here is what only the tests need: Hypothesis's session strategy and
the CI settings.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import strategies as st

from tailguard.doctor.harness import (
    MIN_MESSAGE,
    Compaction,
    Mismatch,
    ModelRun,
    Turn,
    content,
    covers,
    holes,
    preset_policy,
)

__all__ = ["EXAMPLES", "MIN_MESSAGE", "REQUIRE", "SLOW_EXAMPLES", "Compaction", "Mismatch", "ModelRun", "Turn",
           "content", "covers", "holes", "preset_policy", "trigger_forms", "turns"]

REQUIRE = os.environ.get("TAILGUARD_REQUIRE_FRAMEWORKS") == "1"
# Hypothesis examples per differential test: sized for CI (+3 min budget for all presets);
# ``pytest -m slow tests/presets`` runs the long version (SLOW_EXAMPLES).
EXAMPLES = 100
SLOW_EXAMPLES = 400


@st.composite
def turns(draw: st.DrawFn, *, max_turns: int = 40, max_size: int = 300, tools: bool = True,
          first_human: bool = True) -> list[Turn]:
    """A session: sizes from MIN_MESSAGE up; human, answer and tool-call turns."""
    size = st.integers(MIN_MESSAGE, max_size)
    kinds = ["human", "ai", "tools"] if tools else ["human", "ai"]
    count = draw(st.integers(1, max_turns))
    out: list[Turn] = []
    for i in range(count):
        kind = "human" if i == 0 and first_human else draw(st.sampled_from(kinds))
        k = draw(st.integers(1, 3)) if kind == "tools" else 0
        out.append(Turn(kind, tuple(draw(size) for _ in range(1 + k))))
    return out


def trigger_forms(tokens: tuple[int, int], messages: tuple[int, int]) -> st.SearchStrategy[Any]:
    """LangChain's trigger forms besides a size (deepagents' summarization takes them too): a
    ``TriggerClause`` dict (AND) or a list of sizes and dicts (OR)."""
    size = st.one_of(st.tuples(st.just("tokens"), st.integers(*tokens)),
                     st.tuples(st.just("messages"), st.integers(*messages)))
    clause = st.fixed_dictionaries({}, optional={"tokens": st.integers(*tokens),
                                                 "messages": st.integers(*messages)}).filter(bool)
    return st.one_of(clause, st.lists(st.one_of(size, clause), min_size=1, max_size=3))
