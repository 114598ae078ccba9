"""Write a LangGraph checkpoint database the way a deployed, unguarded LangChain agent would.

    pip install -e '.[langchain]'
    python examples/import/langchain_postmortem.py checkpoints.sqlite
    tailguard audit --from langgraph checkpoints.sqlite --thread support-7 \\
        --knobs examples/import/langchain-postmortem.toml --html support-7.html

Two threads of 120 turns each through ``create_agent`` with LangChain's own
``SummarizationMiddleware`` (``trigger=("tokens", 8000)``, ``keep=("messages", 20)`` and the
shipped 4,000-token ``trim_tokens_to_summarize``) under a ``SqliteSaver``; the chat models are
LangChain's ``GenericFakeChatModel`` (offline, no key). Every message starts with its own
marker (``q007`` asked, ``a007`` answered), so what the audit names can be checked by eye
(docs/import.md walks through it).
"""

from __future__ import annotations

import itertools
import sqlite3
import sys
from collections.abc import Iterator

from langchain.agents import create_agent
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

THREADS = ("support-7", "support-9")
TURNS = 120


def answers(thread: str) -> Iterator[AIMessage]:
    for i in itertools.count():
        yield AIMessage(content=f"a{i:03d} " + "answer " * 20, id=f"{thread}-a{i:03d}")


def main(path: str) -> None:
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        for thread in THREADS:
            summarizer = GenericFakeChatModel(messages=itertools.repeat(AIMessage(content="SUMMARY")))
            middleware = SummarizationMiddleware(summarizer, trigger=("tokens", 8000), keep=("messages", 20))
            agent = create_agent(GenericFakeChatModel(messages=answers(thread)), tools=[], middleware=[middleware],
                                 checkpointer=SqliteSaver(conn))
            config = {"configurable": {"thread_id": thread}}
            for i in range(TURNS):
                words = "question " * (15 if i % 7 else 400)  # every seventh question is long
                agent.invoke({"messages": [HumanMessage(content=f"q{i:03d} {words}", id=f"{thread}-q{i:03d}")]},
                             config)  # type: ignore[arg-type]
    finally:
        conn.close()
    print(f"wrote {path}: threads {', '.join(THREADS)}, {TURNS} turns each")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "checkpoints.sqlite")
