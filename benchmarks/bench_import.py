"""Import-and-audit against audit-only: ``audit --from langgraph`` over a checkpoint database.

    python benchmarks/bench_import.py [--threads N] [--turns N] [--repeat N]

Runs the real LangChain ``create_agent`` (LangChain's fake chat models, unguarded
``SummarizationMiddleware(trigger=("messages", 40), keep=("messages", 20),
trim_tokens_to_summarize=600)``) for one thread of ``--turns`` turns under a ``SqliteSaver``,
then copies that thread's checkpoint rows under ``--threads`` thread ids (same blobs, so the
generation cost stays one thread's). Then, in one process (``--workers 1``):

- A: ``tailguard audit --from langgraph DB --knobs K --out A.jsonl``: read every checkpoint
  through the saver, import, audit;
- B: ``tailguard audit LOGS/ --out B.jsonl`` over the same sessions already imported.

Prints both times, the ratio A / B (issue 27's goal: under 3x at 1,000 threads of 200 turns),
and how much of A is reading and deserializing the checkpoints through the saver. One run here
(10 threads x 200 turns, a shared 2-core machine): 20x to 36x from run to run (the audit-only
time is tens of milliseconds and the load of the machine moves it). Best of ``--repeat``.
The two runs' records must agree (refusals and holes per session), or the benchmark fails.
Needs the ``langchain`` extra. A thread of 200 turns is about 800 checkpoints (about 6 MB
in SQLite); 1,000 threads are several GB: size ``--threads`` to the disk.
"""

from __future__ import annotations

import argparse
import io
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

KNOBS = """name = "bench"
turn_tokens = [1, 8000]

[framework]
name = "langchain.SummarizationMiddleware"
trigger = ["messages", 40]
keep = ["messages", 20]
trim_tokens_to_summarize = 600
"""


def generate(db: Path, threads: int, turns: int) -> None:
    import itertools

    from langchain.agents import create_agent
    from langchain.agents.middleware.summarization import SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(db, check_same_thread=False)
    answers = (AIMessage(content=f"a{i:04d} " + "answer " * 12, id=f"a{i}") for i in itertools.count())
    summarizer = GenericFakeChatModel(messages=itertools.repeat(AIMessage(content="SUMMARY")))
    mw = SummarizationMiddleware(summarizer, trigger=("messages", 40), keep=("messages", 20),
                                 trim_tokens_to_summarize=600)
    agent = create_agent(GenericFakeChatModel(messages=answers), tools=[], middleware=[mw],
                         checkpointer=SqliteSaver(conn))
    config: Any = {"configurable": {"thread_id": "t0000"}}
    for i in range(turns):
        agent.invoke({"messages": [HumanMessage(content=f"q{i:04d} " + "question " * 12, id=f"q{i}")]}, config)
    for t in range(1, threads):  # the same rows under other thread ids
        for table in ("checkpoints", "writes"):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            sel = ", ".join("?" if c == "thread_id" else c for c in cols)
            conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {sel} FROM {table} "
                         "WHERE thread_id = 't0000'", (f"t{t:04d}",))
    conn.commit()
    conn.close()


def cli(argv: list[str]) -> tuple[int, str]:
    from tailguard.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    if code not in (0, 1):
        sys.exit(f"bench_import: {' '.join(argv)} exited {code}: {err.getvalue()}")
    return code, out.getvalue()


def records(path: Path) -> dict[str, tuple[int, list[Any]]]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        thread = r["source"].rsplit("#", 1)[-1] if "#" in r["source"] else Path(r["source"]).stem.split(".")[-1]
        out[thread] = (r["refusals"], [h["ranges"] for h in r["holes"]])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=20, help="threads in the database (default 20)")
    ap.add_argument("--turns", type=int, default=200, help="turns per thread (default 200)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs (default 3)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        db, knobs, logs = work / "checkpoints.sqlite", work / "knobs.toml", work / "logs"
        knobs.write_text(KNOBS, encoding="utf-8")
        t0 = time.perf_counter()
        generate(db, args.threads, args.turns)
        print(f"generated {args.threads} threads x {args.turns} turns in {time.perf_counter() - t0:.1f} s "
              f"({db.stat().st_size / 1e6:,.0f} MB)")
        cli(["import", "langgraph", str(db), "--knobs", str(knobs), "--out-dir", str(logs)])
        best_a = best_b = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            cli(["audit", "--from", "langgraph", str(db), "--knobs", str(knobs), "--workers", "1",
                 "--out", str(work / "A.jsonl")])
            best_a = min(best_a, time.perf_counter() - t)
            t = time.perf_counter()
            cli(["audit", str(logs), "--workers", "1", "--out", str(work / "B.jsonl")])
            best_b = min(best_b, time.perf_counter() - t)
        a, b = records(work / "A.jsonl"), records(work / "B.jsonl")
        if a != b or len(a) != args.threads:
            sys.exit("bench_import: the imported audit and the audit of the imported logs disagree")
        from langgraph.checkpoint.sqlite import SqliteSaver

        from tailguard.importers.langgraph import _history, _share_messages, open_database

        conn = open_database(str(db))
        read_one = float("inf")
        for _ in range(args.repeat):  # what A does to read a thread, without the import and audit
            saver = SqliteSaver(conn)
            _share_messages(saver)
            t = time.perf_counter()
            _history(saver, str(db), "t0000")
            read_one = min(read_one, time.perf_counter() - t)
        conn.close()
    refused = sum(1 for r, _ in a.values() if r)
    print(f"A import + audit: {best_a:.2f} s   B audit only: {best_b:.3f} s   ratio A/B: {best_a / best_b:.1f}x "
          f"(goal < 3x)   sessions with refusals: {refused} of {len(a)}")
    print(f"reading one thread's checkpoints through SqliteSaver.list (as A does): {read_one:.3f} s; "
          f"all threads: about {read_one * args.threads / best_a:.0%} of A")
    return 0


if __name__ == "__main__":
    sys.exit(main())
