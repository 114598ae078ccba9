"""LangChain's SummarizationMiddleware, guarded: the refusal, then the spill (offline, fake model).

    pip install -e '.[langchain]' && python examples/langchain_guarded_agent.py

120 messages, trigger=("tokens", 3000), keep=("messages", 20), the default 4,000-token trim:
LangChain would delete 100 messages after showing its summarizer only offsets 64 to 99.
With on_refuse="halt" the guard refuses before anything is deleted (offsets [0, 64) named);
with on_refuse="spill" it writes the 100 messages to a spill store first, and the agent reads
them back byte-exact through the reader tool.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, messages_to_dict
from langgraph.checkpoint.memory import InMemorySaver

from tailguard.adapters.langchain import GuardedSummarizationMiddleware, spill_reader_tool
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore


def conversation() -> list[BaseMessage]:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(content=f"m{i:03d} " + "x" * 400, id=f"m{i}")
            for i in range(120)]


def fake() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=itertools.repeat(AIMessage(content="summary of the conversation")))


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="tailguard-example-"))
    knobs = {"trigger": ("tokens", 3000), "keep": ("messages", 20)}

    guard = GuardedSummarizationMiddleware(fake(), recovery_floor_span=4, on_refuse="halt",
                                           log=work / "halt.jsonl", **knobs)
    agent = create_agent(fake(), tools=[], middleware=[guard], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "halt"}}
    try:
        agent.invoke({"messages": conversation()}, config)
    except UnrecoverableCompactionError as err:
        print(f"halt: refused {err.failed}, holes {err.holes}")
        print(f"      {len(err.holes) and err.holes[0][1] - err.holes[0][0]} messages would have been deleted unseen")
    held = agent.get_state(config).values["messages"]
    print(f"      the checkpoint still holds all {len(held)} messages")

    store = FileSpillStore(work / "spills", create=True)
    guard = GuardedSummarizationMiddleware(fake(), recovery_floor_span=4, on_refuse="spill", store=store,
                                           log=work / "spill.jsonl", **knobs)
    update = guard.before_model({"messages": conversation()}, None)
    assert update is not None
    summary = update["messages"][1]
    spill = summary.additional_kwargs["tailguard"]["spills"][0]
    lo, hi = spill['range']
    print(f"spill: compacted; offsets [{lo}, {hi}) spilled as {spill['handle'][:20]}...")
    text = spill_reader_tool(store).invoke({"handle": spill["handle"]})
    items = [x["item"] for x in json.loads(text)["items"]]
    exact = items == messages_to_dict(conversation()[:100]) and text.encode() == store.get(spill["handle"])
    print(f"       read back {len(items)} messages through the reader tool, byte-exact: {exact}")
    print(f"       audit: tailguard audit --profile partitioned {work / 'spill.jsonl'}")
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
