"""deepagents' argument truncation (``truncate_args_settings``, brief 6d): the preset's
``clip_args`` stage against the real package.

Every ``unsafe`` trace the checker prints for a deepagents policy is replayed through the real
middleware (``create_summarization_middleware``, what ``create_deep_agent`` installs, for the
defaults; ``SummarizationMiddleware`` with the policy's knobs otherwise) over a real
``FilesystemBackend``, with LangChain's fake chat model as the summarizer. The marker oracle:
each turn carries a unique tag (``[t3m0]``; in a turn large enough to hold a clippable argument
it ends a ``write_file`` call's ``content``, past the 20 characters a clip keeps); the
summarizer writes back every tag it was shown; a tag is held while the messages the model was
last called with, the summary or the offload files hold it. The replay checks that the tags
lost are exactly those of the turns the finding names, at the append it names; a ``safe``
policy's random sessions lose nothing.

The token counter (the middleware's ``token_counter`` knob): a message's content counts one
token a character (as the other differential tests), each string argument of a tool call
``ceil(len / 4)`` (count_tokens_approximately's 4 characters a token, which the preset's
``clippable_turn_tokens`` default assumes), a summary ``summary_tokens``.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("deepagents", reason="install the frameworks extra (CI does)")

from deepagents.backends import FilesystemBackend
from deepagents.middleware.summarization import (
    SUMMARIZATION_EVENT_KEY,
    SummarizationMiddleware,
    create_summarization_middleware,
)
from hypothesis import HealthCheck, given, settings, strategies as st
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from tailguard.cli.main import main
from tailguard.doctor.drivers.langchain_messages import is_summary
from tailguard.pipeline.model import ARGS_CLIPPED, Finding, replay
from tailguard.pipeline.policy import ClipArgs, Policy, PolicyError, parse_policy
from tailguard.pipeline.presets import translate
from tailguard.pipeline.presets._base import TriggerAny
from tailguard.pipeline.solver import Budget, decide

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = ROOT / "examples" / "presets" / "deepagents-defaults.toml"
REPAIRED = ROOT / "examples" / "presets" / "deepagents-repaired.toml"
TAG = re.compile(r"\[t\d+m\d+\]")
FRAMEWORK = "deepagents.SummarizationMiddleware"


def tags(text: str) -> set[str]:
    return set(TAG.findall(text))


def text_of(messages: Sequence[BaseMessage]) -> str:
    parts = []
    for m in messages:
        parts.append(str(m.content))
        for call in getattr(m, "tool_calls", None) or []:
            parts += [str(v) for v in call["args"].values()]
    return "\n".join(parts)


class Summarizer(GenericFakeChatModel):
    """LangChain's fake chat model; its summary lists every tag its prompt holds."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        shown = " ".join(sorted(tags(text_of(messages))))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=f"SUMMARY {shown}"))])


def make_counter(summary_tokens: int) -> Any:
    def count(messages: Sequence[BaseMessage], **_: Any) -> int:
        total = 0
        for m in messages:
            if is_summary(m):
                total += summary_tokens
                continue
            total += len(m.content) if isinstance(m.content, str) else len(str(m.content))
            for call in getattr(m, "tool_calls", None) or []:
                total += sum(math.ceil(len(v) / 4) for v in call["args"].values() if isinstance(v, str))
        return total

    return count


def turn_messages(k: int, size: int, count: int, clippable: int) -> list[BaseMessage]:
    """Turn ``k``: ``size`` tokens in ``count`` messages: an AI message then ``count - 1``
    ``lookup`` results (a human message when ``count`` is 1). A turn of at least ``clippable``
    tokens is an AI message whose ``write_file`` call's ``content`` argument holds all its
    tokens and ends with its tag (its results are empty: 0 tokens under this counter);
    otherwise each result is 12 tagged characters and the first message the rest."""
    tag = f"[t{k}m0]"
    lookups = [{"name": "lookup", "args": {}, "id": f"c{k}_{j}", "type": "tool_call"} for j in range(1, count)]
    if size >= clippable:
        arg = "w" * (4 * size - len(tag)) + tag  # ceil(len / 4) == size
        write = {"name": "write_file", "args": {"file_path": "", "content": arg}, "id": f"c{k}_0",
                 "type": "tool_call"}
        return [AIMessage(content="", id=f"t{k}m0", tool_calls=[write, *lookups]),
                *[ToolMessage(content="", id=f"t{k}m{j}", tool_call_id=f"c{k}_{j}") for j in range(1, count)]]
    head = size - 12 * (count - 1)
    text = tag.ljust(head, "x") if head >= len(tag) else "x" * head
    results: list[BaseMessage] = [
        ToolMessage(content=f"[t{k}m{j}]".ljust(12, "r"), id=f"t{k}m{j}", tool_call_id=f"c{k}_{j}")
        for j in range(1, count)]
    first: BaseMessage = AIMessage(content=text, id=f"t{k}m0", tool_calls=lookups) if count > 1 else \
        HumanMessage(content=text, id=f"t{k}m0")
    return [first, *results]


def knobs_of(policy_text: str) -> dict[str, Any]:
    import tomllib

    data = tomllib.loads(policy_text)
    return translate(data, "p.toml", {}).values


def middleware(values: dict[str, Any], backend: Any, factory: bool) -> tuple[Any, Summarizer]:
    """The real middleware for the preset's knob values: the factory ``create_deep_agent``
    calls when the knobs are its defaults, else the class with the knobs spelled out."""
    model = Summarizer(messages=iter(()))
    if values["window"]:
        model.profile = {"max_input_tokens": values["window"]}
    counter = make_counter(values["summary_tokens"])
    if factory:
        return create_summarization_middleware(model, backend, token_counter=counter), model
    settings_ = values["truncate_args_settings"]
    trigger = values["trigger"]
    if isinstance(trigger, TriggerAny):  # LangChain's list of TriggerClause dicts (OR of ANDs)
        trigger = trigger.toml()
    return SummarizationMiddleware(model, backend=backend, trigger=trigger, keep=values["keep"],
                                   token_counter=counter, trim_tokens_to_summarize=values["trim_tokens_to_summarize"],
                                   truncate_args_settings=dict(settings_) if settings_ else None), model


def clippable_of(policy: Policy) -> int:
    clip = next((s for s in policy.stages if isinstance(s, ClipArgs)), None)
    return clip.min_tokens if clip is not None else 10**9


def run_real(policy: Policy, values: dict[str, Any], sizes: Sequence[int], counts: Sequence[int],
             *, factory: bool = False) -> list[set[str]]:
    """Drive the real middleware over the session; after each append, the tags lost so far."""
    clippable = clippable_of(policy)
    system = SystemMessage(content="s" * policy.base_tokens)
    out: list[set[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        backend = FilesystemBackend(root_dir=Path(tmp), virtual_mode=True)
        mw, model = middleware(values, backend, factory)
        messages: list[BaseMessage] = []
        state: dict[str, Any] = {"messages": messages}
        seen: list[BaseMessage] = []
        carried: set[str] = set()

        def handler(request: Any) -> ModelResponse:
            seen[:] = list(request.messages)
            return ModelResponse(result=[AIMessage(content="ok")])

        for k, (size, count) in enumerate(zip(sizes, counts, strict=True)):
            turn = turn_messages(k, size, count, clippable)
            messages = [*messages, *turn]
            state["messages"] = messages
            carried |= tags(text_of(turn))
            request = ModelRequest(model=model, messages=messages, system_message=system, tools=[],
                                   state=state, runtime=None)  # type: ignore[arg-type]
            response = mw.wrap_model_call(request, handler)
            command = getattr(response, "command", None)
            if command is not None:
                state.update(command.update)
            held = tags(text_of(seen))
            event = state.get(SUMMARIZATION_EVENT_KEY)
            if event:
                held |= tags(str(event["summary_message"].content))
            held |= tags("".join(p.read_text() for p in Path(tmp).rglob("*.md")))
            out.append(carried - held)
    return out


def expected_lost(policy: Policy, found: list[Finding], sizes: Sequence[int], counts: Sequence[int]) -> set[str]:
    """The tags of the turns the findings name as holes."""
    holes = {j for f in found if f.kind == "hole" for j in f.offsets}
    clippable = clippable_of(policy)
    return {t for j in holes for t in tags(text_of(turn_messages(j, sizes[j], counts[j], clippable)))}


def check_trace(path_or_text: Path | str, *, factory: bool = False) -> list[Finding]:
    """check-config's unsafe trace, replayed on the real package: nothing lost before its last
    append, then exactly the tags of the turns the finding names."""
    text = path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text
    policy = parse_policy(text, "p.toml")
    decision = decide(policy, Budget())
    assert decision.verdict == "unsafe", decision
    sizes = list(decision.trace)
    counts = list(decision.messages) or [policy.messages_per_turn[0]] * len(sizes)
    found, at = replay(policy, sizes, messages=counts, failures=frozenset(decision.failures))
    assert at == len(sizes) and not decision.failures
    lost = run_real(policy, knobs_of(text), sizes, counts, factory=factory)
    assert all(not x for x in lost[:-1]), (sizes, lost)
    want = expected_lost(policy, found, sizes, counts)
    assert want and lost[-1] == want, (sizes, found, lost[-1], want)
    return found


def test_the_defaults_lose_exactly_the_clipped_turns_on_the_real_factory() -> None:
    """examples/presets/deepagents-defaults.toml: unsafe, the clip of turns [0, 19) at append
    21; through create_summarization_middleware (create_deep_agent's) those 19 write_file
    arguments are held nowhere, and nothing else is lost."""
    found = check_trace(DEFAULTS, factory=True)
    assert [(f.kind, f.stage, f.detail) for f in found] == [("hole", 0, ARGS_CLIPPED)]
    assert found[0].offsets == tuple(range(19))


ISSUE = """name = "issue-26"
turn_tokens = [12, 20000]
messages_per_turn = [1, 4]
floor = 0
floor_unit = "messages"
base_tokens = 6000

[framework]
name = "deepagents.SummarizationMiddleware"
window = 200000
keep = ["messages", 6]
"""


def test_the_issues_real_size_defaults_are_unsafe_and_reproduce() -> None:
    """The issue's configuration (window 200k, keep 6 messages, the rest deepagents' defaults)
    was called safe; now the clip of its old write_file arguments is found, and replays."""
    found = check_trace(ISSUE)
    assert found[0].detail == ARGS_CLIPPED


def test_switched_off_nothing_is_clipped_and_nothing_lost() -> None:
    """``truncate_args_settings = false``: no clip stage; the same session as the defaults'
    trace loses nothing on the real package (the offload holds every turn), and the issue's
    configuration is safe, its random sessions losing nothing."""
    text = DEFAULTS.read_text() + "truncate_args_settings = false\n"
    policy = parse_policy(text, "p.toml")
    assert not any(isinstance(s, ClipArgs) for s in policy.stages)
    trace = decide(parse_policy(DEFAULTS.read_text(), "d.toml")).trace
    counts = [1] * len(trace)
    assert run_real(policy, knobs_of(text), trace, counts)[-1] == set()
    off = ISSUE + "truncate_args_settings = false\n"
    assert decide(parse_policy(off, "p.toml")).verdict == "safe"


def sessions(policy: Policy, count: int, length: int, seed: int) -> list[tuple[list[int], list[int]]]:
    import random

    rng = random.Random(seed)
    lo, hi = policy.messages_per_turn
    out = []
    for _ in range(count):
        counts = [rng.randint(lo, hi) for _ in range(length)]
        sizes = [max(rng.choice([policy.turn_min, policy.turn_max, rng.randint(policy.turn_min, policy.turn_max)]),
                     12 * c) for c in counts]
        out.append(([min(s, policy.turn_max) for s in sizes], counts))
    return out


SMALL = """name = "small"
turn_tokens = [{lo}, {hi}]
messages_per_turn = [1, 3]
floor = 0
floor_unit = "messages"
base_tokens = 40

[framework]
name = "deepagents.SummarizationMiddleware"
trigger = {trigger}
keep = {keep}
trim_tokens_to_summarize = false
summary_tokens = 60
truncate_args_settings = {settings}
"""


@st.composite
def small_policies(draw: st.DrawFn) -> str:
    trigger = draw(st.sampled_from(['["tokens", 1500]', '["tokens", 3000]', '["messages", 12]']))
    keep = draw(st.sampled_from(['["messages", 4]', '["tokens", 900]', '["messages", 20]']))
    a_trigger = draw(st.sampled_from(['["tokens", 1200]', '["tokens", 4000]', '["messages", 8]',
                                      '["messages", 30]']))
    a_keep = draw(st.sampled_from(['["messages", 4]', '["tokens", 700]', '["messages", 40]']))
    length = draw(st.sampled_from([200, 400, 1000]))
    settings_ = draw(st.sampled_from([
        f"{{trigger = {a_trigger}, keep = {a_keep}, max_length = {length}}}", "false"]))
    hi = draw(st.sampled_from([150, 400]))
    return SMALL.format(lo=36, hi=hi, trigger=trigger, keep=keep, settings=settings_)


RANDOM = settings(max_examples=8, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@RANDOM
@given(small_policies())
def test_random_policies_agree_with_the_real_package(text: str) -> None:
    """Own random policies: every unsafe trace replays exactly on the real package; a safe
    verdict survives random sessions (which hit the clip's and the compaction's thresholds)."""
    agree_with_the_real_package(text)


@pytest.mark.slow
@settings(RANDOM, max_examples=60)
@given(small_policies())
def test_random_policies_agree_with_the_real_package_long(text: str) -> None:
    """``pytest -m slow tests/presets/test_deepagents_truncate_args.py`` (about 3.5 minutes)."""
    agree_with_the_real_package(text)


def agree_with_the_real_package(text: str) -> None:
    policy = parse_policy(text, "p.toml")
    decision = decide(policy, Budget())
    if decision.verdict == "unsafe":
        check_trace(text)
        return
    assert decision.verdict == "safe", decision
    values = knobs_of(text)
    for sizes, counts in sessions(policy, 3, 40, seed=len(text)):
        assert run_real(policy, values, sizes, counts)[-1] == set(), (sizes, counts)


@pytest.mark.parametrize(("trigger", "keep", "clip"), [
    ('["messages", 12]', '["messages", 20]', '{trigger = ["messages", 8], keep = ["messages", 40], max_length = 200}'),
    ('["messages", 12]', '["messages", 4]', '{trigger = ["messages", 30], keep = ["messages", 4], max_length = 200}'),
])
def test_a_safe_policy_with_clipping_on_survives_random_sessions(trigger: str, keep: str, clip: str) -> None:
    """Clipping on, yet safe: its keep holds more than the context ever does, or its trigger is
    above it. Random sessions on the real package (clipping on) lose nothing; a lower clip keep
    or trigger makes the same policy unsafe, and its trace replays."""
    text = SMALL.format(lo=36, hi=150, trigger=trigger, keep=keep, settings=clip)
    policy = parse_policy(text, "p.toml")
    assert decide(policy, Budget()).verdict == "safe"
    for sizes, counts in sessions(policy, 3, 40, seed=3):
        assert run_real(policy, knobs_of(text), sizes, counts)[-1] == set(), (sizes, counts)
    tighter = text.replace('keep = ["messages", 40]', 'keep = ["messages", 6]').replace(
        'trigger = ["messages", 30]', 'trigger = ["messages", 10]')
    check_trace(tighter)


def test_the_repaired_example_survives_random_sessions() -> None:
    """deepagents-repaired.toml is safe; random sessions of its shape lose nothing on the real
    package (sizes scaled down by 40 for speed: its thresholds in the same proportion)."""
    assert decide(parse_policy(REPAIRED.read_text(), "r.toml")).verdict == "safe"
    scaled = REPAIRED.read_text().replace("window = 200000", "window = 5000").replace(
        "[1, 8000]", "[12, 200]").replace("base_tokens = 6000", "base_tokens = 150") + "summary_tokens = 25\n"
    policy = parse_policy(scaled, "r.toml")
    assert decide(policy).verdict == "safe"
    for sizes, counts in sessions(policy, 3, 60, seed=7):
        assert run_real(policy, knobs_of(scaled), sizes, counts, factory=False)[-1] == set()


def test_a_model_without_the_clip_would_be_caught() -> None:
    """Deliberately broken: the replay of the defaults' trace with the clip switched off in the
    model but on in the package finds markers lost where the model names none."""
    text = DEFAULTS.read_text()
    policy = parse_policy(text, "d.toml")
    trace = list(decide(policy).trace)
    counts = [1] * len(trace)
    blind = parse_policy(text + "truncate_args_settings = false\n", "b.toml")
    found, _ = replay(blind, trace)
    assert expected_lost(blind, found, trace, counts) == set()
    assert run_real(policy, knobs_of(text), trace, counts, factory=True)[-1] != set()


# -- the summarization trigger's lists (OR) and clauses (AND) ---------------------------------------

CLAUSES = """name = "deepagents-trigger-clauses"
turn_tokens = [36, 150]
messages_per_turn = [1, 3]
floor = 0
floor_unit = "messages"
base_tokens = 40

[framework]
name = "deepagents.SummarizationMiddleware"
trigger = {trigger}
keep = ["messages", 4]
trim_tokens_to_summarize = false
summary_tokens = 60
truncate_args_settings = {{trigger = ["messages", 11], keep = ["messages", 2], max_length = 200}}
"""
AND = CLAUSES.format(trigger="{messages = 8, tokens = 3000}")
OR = CLAUSES.format(trigger='[["messages", 8], ["tokens", 3000]]')


def test_an_and_clause_waits_and_the_clip_comes_first_on_the_real_package() -> None:
    """``trigger = {messages = 8, tokens = 3000}`` (a TriggerClause: both): small turns reach
    the clip's 11 messages long before 3,000 tokens, so deepagents never summarizes first and
    clips an old write_file argument. check-config's trace (a few appends, one turn clipped) loses
    exactly that turn on the real middleware, given the clause as a dict (which turn the
    solver's trace clips is its choice: one clipped turn, whichever it is, reproduces)."""
    found = check_trace(AND)
    assert [(f.kind, len(f.offsets), f.detail) for f in found] == [("hole", 1, ARGS_CLIPPED)]


def test_an_or_list_summarizes_first_and_nothing_is_lost_on_the_real_package() -> None:
    """``trigger = [["messages", 8], ["tokens", 3000]]`` (either): deepagents summarizes (and
    offloads) at 8 messages, so the context never reaches the clip's 11: safe. The AND
    policy's trace loses nothing here on the real package (the list is read as an OR, not as
    the AND), and neither do random sessions, which pass 3,000 tokens too."""
    policy = parse_policy(OR, "or.toml")
    assert decide(policy, Budget()).verdict == "safe"
    values = knobs_of(OR)
    assert isinstance(values["trigger"], TriggerAny)
    trace = decide(parse_policy(AND, "and.toml"), Budget())
    assert run_real(policy, values, trace.trace, trace.messages)[-1] == set()
    for sizes, counts in sessions(policy, 3, 40, seed=11):
        assert run_real(policy, values, sizes, counts)[-1] == set(), (sizes, counts)


def test_the_trigger_forms_are_translated_not_refused() -> None:
    """The summarization ``trigger`` takes LangChain's forms (deepagents passes it on); the
    stage is the langchain preset's ``trigger_any``, fractions resolved against ``window``."""
    stage = parse_policy(HEAD + 'window = 100000\ntrigger = [["tokens", 9000], {messages = 40, fraction = 0.5}]\n',
                         "p.toml").stages[-1]
    assert stage.trigger_any == ((("tokens", 9000),), (("messages", 40), ("tokens", 50000)))


# -- the knob as deepagents spells it ------------------------------------------------------------

HEAD = 'name = "p"\nturn_tokens = [1, 8000]\nfloor = 0\nfloor_unit = "messages"\n' \
       f'[framework]\nname = "{FRAMEWORK}"\n'


def test_the_knob_is_read_as_deepagents_spells_it() -> None:
    def clip(extra: str) -> ClipArgs | None:
        stages = parse_policy(HEAD + extra, "p.toml").stages
        return next((s for s in stages if isinstance(s, ClipArgs)), None)

    assert clip("truncate_args_settings = false\n") is None
    assert clip("truncate_args_settings = {}\n") is None  # .get("trigger") is None: off
    got = clip('truncate_args_settings = {trigger = ["messages", 50], keep = ["tokens", 3000], '
               'max_length = 400}\n')
    assert got is not None and (got.trigger_unit, got.trigger, got.keep_unit, got.keep, got.min_tokens) == \
        ("messages", 50, "tokens", 3000, 101)
    table = clip('[framework.truncate_args_settings]\ntrigger = ["tokens", 9000]\n')
    assert table is not None and (table.keep_unit, table.keep, table.min_tokens) == ("messages", 20, 501)
    own = clip('clippable_turn_tokens = 2001\ntruncate_args_settings = {trigger = ["messages", 5]}\n')
    assert own is not None and own.min_tokens == 2001
    assert clip("window = 100000\n") == ClipArgs("tokens", 85000, "tokens", 10000, 501, line=5)


@pytest.mark.parametrize(("value", "key"), [
    ("3", "framework.truncate_args_settings"),
    ('{trigger = ["weeks", 3]}', "framework.truncate_args_settings.trigger"),
    ('{trigger = ["messages", 3], keep = 5}', "framework.truncate_args_settings.keep"),
    ('{trigger = ["fraction", 0.5]}', "framework.truncate_args_settings.trigger"),
    ("{max_length = -1}", "framework.truncate_args_settings.max_length"),
    ("{truncation_text = 3}", "framework.truncate_args_settings.truncation_text"),
    ("{max_len = 3}", "framework.truncate_args_settings.max_len"),
    ('{trigger = [["messages", 5], ["tokens", 900]]}', "framework.truncate_args_settings.trigger"),
    ("{trigger = {messages = 5}}", "framework.truncate_args_settings.trigger"),
])
def test_bad_values_are_exit_2_naming_the_key(tmp_path: Path, value: str, key: str) -> None:
    with pytest.raises(PolicyError, match=re.escape(key)):
        parse_policy(HEAD + f"truncate_args_settings = {value}\n", "p.toml")
    path = tmp_path / "bad.toml"
    path.write_text(HEAD + f"truncate_args_settings = {value}\n")
    import io

    out, err = io.StringIO(), io.StringIO()
    assert main(["check-config", str(path)], stdout=out, stderr=err) == 2
    assert f"bad.toml:7: {key}:" in err.getvalue() and "Traceback" not in err.getvalue()


@pytest.mark.parametrize(("value", "why"), [
    ("{weeks = 3}", "unsupported trigger metric 'weeks'"),
    ("{}", "at least one of tokens, messages, fraction"),
    ('[["messages", 0]]', "messages must be an integer > 0"),
    ('[["tokens", 900], {messages = 2.5}]', "messages must be an integer > 0"),
    ('[{fraction = 1.5}]', "a fraction must be in (0, 1]"),
    ('[["fraction", 0.5]]', "needs `window`"),
])
def test_bad_trigger_clauses_are_exit_2_naming_the_knob(tmp_path: Path, value: str, why: str) -> None:
    """The summarization trigger's lists and clauses are validated as LangChain validates them
    (the langchain preset's reader): exit 2, file:line, the knob and why."""
    import io

    path = tmp_path / "bad.toml"
    path.write_text(HEAD + f"trigger = {value}\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["check-config", str(path)], stdout=out, stderr=err) == 2
    assert "bad.toml:7: framework.trigger:" in err.getvalue() and why in err.getvalue(), err.getvalue()
    assert "Traceback" not in err.getvalue()


def test_the_truncate_trigger_refusal_says_what_deepagents_does(tmp_path: Path) -> None:
    """Why a list or a table is refused for ``truncate_args_settings.trigger``: the real
    ``_should_truncate_args`` unpacks one (kind, value), so a list of two sizes is silently never
    met and the other forms raise at the first call (while the summarization trigger takes them)."""
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    messages: list[BaseMessage] = [HumanMessage(content="x" * 10) for _ in range(30)]

    def truncates(trigger: Any) -> bool:
        mw = SummarizationMiddleware(Summarizer(messages=iter(())), backend=backend,
                                     trigger=[("messages", 100), {"tokens": 10, "messages": 50}],
                                     truncate_args_settings={"trigger": trigger, "keep": ("messages", 2)})
        return bool(mw._should_truncate_args(messages, 1000))

    assert truncates(("messages", 3)) and truncates(("tokens", 5))
    assert not truncates([("messages", 3), ("tokens", 5)])  # both met, yet never
    for raising in ([("messages", 3)], {"messages": 3}, {"messages": 3, "tokens": 5}):
        with pytest.raises((ValueError, TypeError)):
            truncates(raising)


def test_explain_shows_the_translation() -> None:
    import io

    out = io.StringIO()
    assert main(["check-config", "--explain", str(DEFAULTS)], stdout=out, stderr=io.StringIO()) == 0
    text = out.getvalue()
    assert 'truncate_args_settings = {trigger = ["fraction", 0.85], keep = ["fraction", 0.1], ' \
           'max_length = 2000, truncation_text = "...(argument truncated)"}  # default' in text
    assert 'kind = "clip_args"' in text and "min_tokens = 501" in text
    out = io.StringIO()
    assert main(["check-config", "--explain", str(REPAIRED)], stdout=out, stderr=io.StringIO()) == 0
    assert "truncate_args_settings = false\n" in out.getvalue() and "clip_args" not in out.getvalue()


@pytest.mark.parametrize("window", [None, 200000])
def test_the_defaults_are_compute_summarization_defaults(tmp_path: Path, window: int | None) -> None:
    """Absent, the knob is what create_summarization_middleware (create_deep_agent's) sets, with
    the class's max_length and truncation_text."""
    text = HEAD + (f"window = {window}\n" if window else "")
    values = knobs_of(text)
    mw, _ = middleware(values, FilesystemBackend(root_dir=tmp_path, virtual_mode=True), factory=True)
    ours = values["truncate_args_settings"]
    assert (mw._truncate_args_trigger, mw._truncate_args_keep, mw._max_arg_length, mw._truncation_text) == \
        (ours["trigger"], ours["keep"], ours["max_length"], ours["truncation_text"])
    off = SummarizationMiddleware(Summarizer(messages=iter(())), backend=mw._backend, truncate_args_settings={})
    assert off._truncate_args_trigger is None  # a table without trigger: off, as the preset reads it
