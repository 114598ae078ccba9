"""Runtime and config agree on deepagents' knobs (brief 6d, last two bullets).

The adapter (``GuardedDeepAgentsSummarizationMiddleware``, ``on_refuse="halt"``) runs the same
real middleware code as the preset's replay (tests/presets/test_deepagents_truncate_args.py:
its messages, token counter and marker summarizer, a real ``FilesystemBackend``), configured
with the policy's knobs and floor:

- on random sessions of a policy the preset calls ``safe`` (within its session shape) it never
  refuses: no exception, no ``refusal`` line;
- on the preset's counterexample (the ``unsafe`` trace check-config prints) it refuses at the
  append the finding names, the refusal's holes being exactly the finding's turns.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deepagents", reason="install the frameworks extra (CI does)")

from langchain.agents.middleware.types import ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from tailguard.adapters import GuardOptions
from tailguard.adapters.deepagents import GuardedDeepAgentsSummarizationMiddleware
from tailguard.base.intervals import normalize
from tailguard.pipeline.model import ARGS_CLIPPED, replay
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.solver import Budget, decide
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tests.presets.test_deepagents_truncate_args import (
    DEFAULTS,
    REPAIRED,
    SMALL,
    Summarizer,
    clippable_of,
    knobs_of,
    make_counter,
    sessions,
    turn_messages,
)


def run_guarded(policy: Policy, values: dict[str, Any], sizes: Sequence[int], counts: Sequence[int],
                root: Path, clippable: int | None = None) -> tuple[int | None, list[dict[str, Any]], dict[str, Any]]:
    """Drive the guarded middleware; the append (0-based) it refused at (or ``None``), its log and
    the offsets its guard gave each message id."""
    from langchain.agents.middleware.types import ModelRequest

    model = Summarizer(messages=iter(()))
    if values["window"]:
        model.profile = {"max_input_tokens": values["window"]}
    settings_ = values["truncate_args_settings"]
    log = root / "log.jsonl"
    opts = GuardOptions(recovery_floor_span=policy.floor, floor_unit=policy.floor_unit,  # type: ignore[arg-type]
                        on_refuse="halt", store=root / "spills", log=log)
    (root / "ws").mkdir()
    (root / "spills").mkdir()
    from deepagents.backends import FilesystemBackend

    backend = FilesystemBackend(root_dir=root / "ws", virtual_mode=True)
    mw = GuardedDeepAgentsSummarizationMiddleware(
        model, backend=backend, options=opts, trigger=values["trigger"], keep=values["keep"],
        token_counter=make_counter(values["summary_tokens"]),
        trim_tokens_to_summarize=values["trim_tokens_to_summarize"],
        truncate_args_settings=dict(settings_) if settings_ else None)
    system = SystemMessage(content="s" * policy.base_tokens)
    clippable = clippable_of(policy) if clippable is None else clippable
    messages: list[BaseMessage] = []
    state: dict[str, Any] = {"messages": messages}
    refused = None
    try:
        for k, (size, count) in enumerate(zip(sizes, counts, strict=True)):
            messages = [*messages, *turn_messages(k, size, count, clippable)]
            state["messages"] = messages
            request = ModelRequest(model=model, messages=messages, system_message=system, tools=[],
                                   state=state, runtime=None)  # type: ignore[arg-type]
            try:
                response = mw.wrap_model_call(request, lambda req: ModelResponse(result=[AIMessage(content="ok")]))
            except UnrecoverableCompactionError:
                refused = k
                break
            command = getattr(response, "command", None)
            if command is not None:
                state.update(command.update)
        units = dict(mw.guard.tracker.units)
    finally:
        mw.close()
    lines = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    return refused, lines, units


def refusals(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [x for x in lines if x.get("event") == "refusal"]


SAFE = [
    SMALL.format(lo=36, hi=150, trigger='["messages", 12]', keep='["messages", 20]',
                 settings='{trigger = ["messages", 8], keep = ["messages", 40], max_length = 200}'),
    SMALL.format(lo=36, hi=150, trigger='["tokens", 1500]', keep='["messages", 4]', settings="false"),
    REPAIRED.read_text().replace("window = 200000", "window = 5000").replace("[1, 8000]", "[12, 200]")
    .replace("base_tokens = 6000", "base_tokens = 150") + "summary_tokens = 25\n",
]


@pytest.mark.parametrize("text", SAFE, ids=["clip-on-safe", "clip-off", "repaired-scaled"])
def test_the_adapter_never_refuses_a_session_the_preset_calls_safe(text: str) -> None:
    policy = parse_policy(text, "p.toml")
    assert decide(policy, Budget()).verdict == "safe"
    compacted = 0
    for n, (sizes, counts) in enumerate(sessions(policy, 2, 60, seed=11)):
        with tempfile.TemporaryDirectory() as tmp:
            refused, lines, _ = run_guarded(policy, knobs_of(text), sizes, counts, Path(tmp))
            assert refused is None and refusals(lines) == [], (n, sizes, counts, refusals(lines))
            compacted += sum(x.get("event") == "compact" for x in lines)
    assert compacted >= 3  # the sessions do reach the compaction


UNSAFE = [
    SAFE[0].replace('keep = ["messages", 40]', 'keep = ["messages", 6]'),
    SMALL.format(lo=36, hi=150, trigger='["tokens", 1500]', keep='["messages", 4]',
                 settings='{trigger = ["tokens", 1200], keep = ["tokens", 700], max_length = 200}'),
    DEFAULTS.read_text(),
]


@pytest.mark.parametrize("text", UNSAFE, ids=["clip-keep-6", "clip-tokens", "defaults"])
def test_the_adapter_refuses_the_presets_counterexample(text: str) -> None:
    policy = parse_policy(text, "p.toml")
    decision = decide(policy, Budget())
    assert decision.verdict == "unsafe"
    sizes = list(decision.trace)
    counts = list(decision.messages) or [policy.messages_per_turn[0]] * len(sizes)
    found, at = replay(policy, sizes, messages=counts)
    assert at == len(sizes) and [f.detail for f in found] == [ARGS_CLIPPED]
    with tempfile.TemporaryDirectory() as tmp:
        refused, lines, units = run_guarded(policy, knobs_of(text), sizes, counts, Path(tmp))
        assert refused == len(sizes) - 1, (refused, sizes)
        (line,) = refusals(lines)
        clipped = [tuple(units[f"t{j}m0"]) for j in found[0].offsets]
        phi = sum(counts) - policy.floor  # the adapter's floor: a clip there fails floor_in_tail
        outside = [r for r in clipped if r[1] <= phi]
        assert [tuple(h) for h in line["holes"]] == normalize(outside), (line, clipped)
        assert line["tail_start"] == max(hi for _, hi in clipped)
        assert line["failed"] == [*(["floor_in_tail"] if len(outside) < len(clipped) else []), "no_hole"]


def test_a_preset_blind_to_clipping_is_caught() -> None:
    """Deliberately broken: a preset that ignored ``truncate_args_settings`` would call the
    clip-keep-6 policy safe, and the adapter (running the real clipping) refuses a session of
    its shape: the first test above would fail."""
    text = UNSAFE[0]
    blind = parse_policy(text.replace("truncate_args_settings = {", "truncate_args_settings = false\n# {"), "b.toml")
    assert decide(blind, Budget()).verdict == "safe"
    real = parse_policy(text, "p.toml")
    decision = decide(real, Budget())
    trace = list(decision.trace)
    counts = list(decision.messages) or [1] * len(trace)
    with tempfile.TemporaryDirectory() as tmp:
        refused, lines, _ = run_guarded(blind, knobs_of(text), trace, counts, Path(tmp),
                                        clippable=clippable_of(real))
    assert refused is not None and refusals(lines)
