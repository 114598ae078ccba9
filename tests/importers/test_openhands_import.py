"""The ``openhands`` importer against the real OpenHands SDK (brief 10, issue 27).

The SDK's own ``Conversation`` runs **unguarded**: an ``Agent`` on the SDK's ``TestLLM`` (a reply
per message) with the real ``LLMSummarizingCondenser``, whose summarizer is a ``TestLLM``
answering with every marker it could read in its prompt; the conversation persists to a
directory (``persistence_dir``). Every message (the user's and the agent's) ends with one unique
marker, so a message the SDK shows its summarizer cut (``str(event)`` keeps 500 characters)
loses its marker, and so does a summary shown cut. Then the directory is imported and audited
(``tailguard audit --from openhands DIR --knobs K --format json``) and the messages it names as
lost are compared with the markers:

- every marker no later view (events and summary) holds is named (no loss missed), and
- every marker named is one no later view holds, except where the event log is conservative by
  design (brief 4c, theorem T12): what only a summary shown cut covered (its first 500
  characters may still name it), and a message a summarizer read although a message newer in
  the same condensation was cut (a summarizer input is one interval, its newest run).

Wrong importers (one that takes every forgotten event as summarized, one that ignores the
500-character cut) must fail the same check. CI runs this file in ``.venvs/py3.12-openhands``.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

if sys.version_info < (3, 12):
    pytest.skip("openhands-sdk requires Python >= 3.12; CI runs this file in .venvs/py3.12-openhands "
                "(.ci/versions)", allow_module_level=True)

from tests.presets.harness import REQUIRE

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
if not REQUIRE:
    pytest.importorskip("openhands.sdk", reason="install the openhands extra (Python >= 3.12)")

from openhands.sdk import Agent, Conversation
from openhands.sdk.context.condenser import LLMSummarizingCondenser
from openhands.sdk.context.view import View
from openhands.sdk.event import Condensation
from openhands.sdk.llm import Message, TextContent
from openhands.sdk.testing import TestLLM

from tailguard.cli.main import main
from tailguard.importers import openhands as oh

MARK = re.compile(r"<M\d+>")
SEEDS = range(5)


def markers(text: str) -> set[str]:
    return set(MARK.findall(text))


def prompt_of(messages: list[Message]) -> str:
    return "\n".join(c.text for m in messages for c in m.content if isinstance(c, TextContent))


class MarkerLLM(TestLLM):
    """The SDK's ``TestLLM`` as the summarizer: it writes back every marker its prompt holds."""

    __test__ = False
    prompts: ClassVar[list[str]] = []

    def completion(self, messages: list[Message], *args: Any, **kwargs: Any) -> Any:
        prompt = prompt_of(messages)
        MarkerLLM.prompts.append(prompt)
        marks = sorted(markers(prompt), key=lambda m: int(m[2:-1]))
        self._scripted_responses.append(Message(role="assistant", content=[TextContent(text="S " + " ".join(marks))]))
        return super().completion(messages, *args, **kwargs)


class ReplyLLM(TestLLM):
    """The SDK's ``TestLLM`` as the agent: a reply of a chosen size, its marker last."""

    __test__ = False
    sizes: ClassVar[list[int]] = []
    counter: ClassVar[list[int]] = [0]

    def completion(self, messages: list[Message], *args: Any, **kwargs: Any) -> Any:
        ReplyLLM.counter[0] += 1
        n = ReplyLLM.counter[0]
        size = ReplyLLM.sizes.pop(0) if ReplyLLM.sizes else 80
        self._scripted_responses.append(Message(role="assistant", content=[TextContent(text=text(100000 + n, size))]))
        return super().completion(messages, *args, **kwargs)


def text(i: int, size: int) -> str:
    mark = f" <M{i}>"
    return "x" * max(size - len(mark), 1) + mark


@dataclass
class Run:
    """One conversation: its directory, its knobs file, and what the markers say."""

    dir: Path
    knobs: Path
    sent: set[str] = field(default_factory=set)
    held: set[str] = field(default_factory=set)
    allowed: set[str] = field(default_factory=set)  # named although held: conservative by design
    condensations: int = 0


def run_conversation(tmp: Path, seed: int) -> Run:
    rng = random.Random(seed)
    max_size, keep_first = (10, 2) if seed == 0 else rng.choice([(10, 2), (12, 1), (14, 3), (8, 1)])
    knobs = tmp / f"knobs-{seed}.toml"
    knobs.write_text('name = "imported"\nturn_tokens = [1, 8000]\nfloor = 2\n\n[framework]\n'
                     f'name = "openhands.CondenserPipeline"\nmax_size = {max_size}\nkeep_first = {keep_first}\n',
                     encoding="utf-8")
    MarkerLLM.prompts.clear()
    sizes = [60, 200, 450, 700] if seed else [60, 120]
    ReplyLLM.sizes[:] = [rng.choice(sizes) for _ in range(200)]
    if seed == 0:  # one long message, the first the condenser forgets: the log is exact here
        ReplyLLM.sizes[0] = 700
    condenser = LLMSummarizingCondenser(llm=MarkerLLM(model="test-model", usage_id="condenser"),
                                        max_size=max_size, keep_first=keep_first)
    agent = Agent(llm=ReplyLLM(model="test-model", usage_id="agent"), tools=[], condenser=condenser)
    persist = tmp / f"conversations-{seed}"
    conv = Conversation(agent=agent, persistence_dir=str(persist), workspace=str(tmp), visualizer=None,
                        delete_on_close=False)
    run = Run(persist / conv.state.id.hex, knobs)
    for i in range(18 if seed == 0 else rng.randint(14, 30)):
        conv.send_message(text(seed * 1000 + i, rng.choice(sizes)))
        conv.run()
    events = list(conv.state.events)
    for e in events:
        if type(e).__name__ == "MessageEvent":
            run.sent |= markers(prompt_of([e.to_llm_message()]))
    final = View.from_events(events).events
    run.held = markers(prompt_of([e.to_llm_message() for e in final]))
    # what the event log counts as lost although a summarizer read it (see the module's doc)
    condensations = [(i, e) for i, e in enumerate(events) if isinstance(e, Condensation)]
    run.condensations = len(condensations)
    assert len(condensations) == len(MarkerLLM.prompts)
    for (i, c), prompt in zip(condensations, MarkerLLM.prompts, strict=True):
        before = View.from_events(events[:i]).events
        forgotten = [e for e in before if e.id in c.forgotten_event_ids]
        texts = [prompt_of([e.to_llm_message()]) for e in forgotten]
        cut = [k for k, t in enumerate(texts) if t not in prompt]
        if cut:  # everything older than the newest cut one is outside the summarizer's input
            run.allowed |= {m for t in texts[:max(cut)] for m in markers(t)}
            if type(forgotten[max(cut)]).__name__ == "CondensationSummaryEvent" or any(
                    type(forgotten[k]).__name__ == "CondensationSummaryEvent" for k in cut):
                run.allowed |= {m for k in cut for m in markers(texts[k])}
    return run


def audited_lost(run: Run, *args: str) -> set[str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["audit", "--from", "openhands", str(run.dir), "--knobs", str(run.knobs), "--format", "json", *args],
                stdout=out, stderr=err)
    assert code in (0, 1), err.getvalue()
    doc = json.loads(out.getvalue())
    assert (code == 1) == bool(doc["violations"])
    return {x for row in doc["lost_messages"] for x in markers(row["text"])}


def problems(run: Run) -> list[str]:
    lost = run.sent - run.held
    named = audited_lost(run)
    out = []
    if lost - named:
        out.append(f"{run.dir.name}: lost but not named: {sorted(lost - named)[:5]}")
    if named - lost - run.allowed:
        out.append(f"{run.dir.name}: named but held: {sorted(named - lost - run.allowed)[:5]}")
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Run]:
    tmp = tmp_path_factory.mktemp("openhands-real")
    return [run_conversation(tmp, seed) for seed in SEEDS]


def test_the_conversations_condense_and_lose(runs: list[Run]) -> None:
    """The check is not vacuous: the real SDK condensed and lost markers."""
    assert sum(r.condensations for r in runs) >= 10
    assert sum(1 for r in runs if r.sent - r.held) >= 3


def test_the_audit_names_exactly_the_lost_messages(runs: list[Run]) -> None:
    assert [p for r in runs for p in problems(r)] == []
    # where nothing is conservative by design (seed 0: the one cut message is the oldest the
    # condenser forgets), the audit names exactly the lost messages, and some are lost
    assert runs[0].sent - runs[0].held and audited_lost(runs[0]) == runs[0].sent - runs[0].held


def test_an_importer_that_assumes_coverage_fails(runs: list[Run], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oh._Builder, "_shown", staticmethod(lambda deleted, prompt: [e.id for e in deleted]))
    assert [p for r in runs for p in problems(r)] != []


def test_an_importer_that_ignores_the_cut_fails(runs: list[Run], monkeypatch: pytest.MonkeyPatch) -> None:
    full = "\n".join
    monkeypatch.setattr(oh, "_prompt", lambda forgotten: full(prompt_of([e.to_llm_message()]) for e in forgotten))
    assert [p for r in runs for p in problems(r)] != []


def test_without_knobs_the_condensed_range_is_unverified(runs: list[Run]) -> None:
    run = next(r for r in runs if r.condensations)
    out, err = io.StringIO(), io.StringIO()
    code = main(["import", "openhands", str(run.dir)], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    kinds = [json.loads(line).get("event") for line in out.getvalue().splitlines()]
    assert "adopt" in kinds and "compact" not in kinds[:kinds.index("adopt")]


def test_a_persistence_dir_is_every_conversation(runs: list[Run], tmp_path: Path) -> None:
    parent = runs[0].dir.parent
    refs = oh.conversation_dirs(str(parent))
    assert refs == [str(runs[0].dir)]
    out, err = io.StringIO(), io.StringIO()
    assert main(["import", "openhands", str(parent), "--out-dir", str(tmp_path / "logs")], stdout=out,
                stderr=err) == 0, err.getvalue()
    assert len(list((tmp_path / "logs").glob("*.jsonl"))) == 1


@pytest.mark.parametrize(("damage", "where", "why"), [
    ("truncate", "events/event-00003-", "not JSON"),
    ("remove", "events/", "event 3 is missing"),
    ("garbage", "events/event-00003-", "not an OpenHands event"),
])
def test_a_damaged_log_is_exit_2_naming_the_file(runs: list[Run], tmp_path: Path, damage: str, where: str,
                                                 why: str) -> None:
    import shutil

    copy = tmp_path / runs[0].dir.name
    shutil.copytree(runs[0].dir, copy)
    victim = next((copy / "events").glob("event-00003-*.json"))
    if damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:40])
    elif damage == "remove":
        victim.unlink()
    else:
        victim.write_text('{"kind": "NoSuchEvent"}', encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = main(["audit", "--from", "openhands", str(copy), "--knobs", str(runs[0].knobs)], stdout=out, stderr=err)
    assert code == 2
    assert f"{copy}: {where}" in err.getvalue() and why in err.getvalue()
    assert "Traceback" not in err.getvalue()


def test_not_a_conversation_is_exit_2(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["import", "openhands", str(tmp_path)], stdout=out, stderr=err) == 2
    assert f"{tmp_path}: directory: no conversation in it" in err.getvalue()
