"""The guarded OpenAI Agents SDK session over long sessions, restarts and the preset's knobs.

The SDK runs as installed (``Runner``, ``SQLiteSession``, ``OpenAIResponsesCompactionSession``)
with a stub client object (``responses.create`` answers one assistant message,
``responses.compact`` echoes the user messages it was sent and returns one compaction item that
holds every marker it could read in its input). Every item carries a unique marker
(``mkU7``, ``mkA3``, ``mkI12``). The oracle: a marker that no later store content (items and
compaction items) or spill holds is lost; an allowed compaction loses none, a refusal is one
where the unguarded SDK, run in lockstep on the same turns, loses one at that very turn, and
every log audits (profile ``partitioned``) to the decisions made live.
"""

from __future__ import annotations

import asyncio
import io
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="install the frameworks extra (CI does)")

from agents import Agent, OpenAIResponsesModel, Runner, SQLiteSession, set_tracing_disabled
from agents.memory import OpenAIResponsesCompactionSession
from agents.memory.session_settings import SessionSettings
from openai.types.responses import Response

from tailguard.adapters._offsets import AdapterError
from tailguard.adapters.openai_agents import GuardedResponsesCompactionSession, MemoryStateStore
from tailguard.cli.main import main as cli
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore
from tests.adapters.fakes import audit_json

set_tracing_disabled(True)

MARK = re.compile(r"mk[UAI]\d+")
USAGE = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
         "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 0}}
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "presets"


def text_of(item: dict[str, Any]) -> str:
    c = item.get("content")
    if isinstance(c, list):
        return "".join(str(b.get("text", "")) for b in c if isinstance(b, dict))
    return str(c)


class _Compacted:
    def __init__(self, output: list[dict[str, Any]]) -> None:
        self.output, self.usage = output, None


class StubResponses:
    """``responses.create`` and ``responses.compact``, answered locally and recorded."""

    def __init__(self) -> None:
        self.answers = 0
        self.compacts: list[list[dict[str, Any]]] = []

    async def create(self, **kw: Any) -> Response:
        n = self.answers
        self.answers += 1
        return Response.model_validate({
            "id": f"resp_{n}", "object": "response", "created_at": 0, "model": "gpt-4.1", "status": "completed",
            "output": [{"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": f"mkA{n} answer", "annotations": []}]}],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": USAGE})

    async def compact(self, **kw: Any) -> _Compacted:
        shown = list(kw.get("input", []))
        self.compacts.append(shown)
        marks = sorted(set(MARK.findall(json.dumps(shown))))
        users = [x for x in shown if x.get("role") == "user"]
        out: list[dict[str, Any]] = [
            {"type": "message", "role": "user", "id": f"u{len(self.compacts)}_{i}", "status": "completed",
             "content": [{"type": "input_text", "text": text_of(u)}]} for i, u in enumerate(users)]
        out.append({"type": "compaction", "id": f"cmp_{len(self.compacts)}", "encrypted_content": " ".join(marks)})
        return _Compacted(out)


class StubClient:
    def __init__(self) -> None:
        self.responses = StubResponses()


def marks(items: list[Any]) -> set[str]:
    return set(MARK.findall(json.dumps(items)))


async def store(under: SQLiteSession) -> list[Any]:
    return await under.get_items(limit=10**9)


def hook(threshold: int) -> Any:
    return lambda ctx: len(ctx["compaction_candidate_items"]) >= threshold


# -- 1. the long session: a rule in the first turn, 200 turns, SQLiteSession(limit=100) -------

async def long_session(guard: str | None, tmp_path: Path, turns: int = 200) -> dict[str, Any]:
    client = StubClient()
    under = SQLiteSession("long", session_settings=SessionSettings(limit=100))
    log = tmp_path / f"long-{guard}.jsonl"
    if guard is None:
        session: Any = OpenAIResponsesCompactionSession("long", under, client=client, compaction_mode="input",
                                                        should_trigger_compaction=hook(20))
    else:
        session = GuardedResponsesCompactionSession("long", under, client=client, compaction_mode="input",
                                                    should_trigger_compaction=hook(20), on_refuse=guard, log=log)
    agent = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client))  # type: ignore[arg-type]
    ever: set[str] = set()
    lost: set[str] = set()
    for t in range(turns):
        rule = " RULE: always answer in French" if t == 0 else ""
        done = len(client.responses.compacts)
        await Runner.run(agent, f"mkU{t} question{rule}", session=session)
        ever |= {f"mkU{t}", f"mkA{t}"}
        if len(client.responses.compacts) > done:  # only a compaction removes items
            lost |= ever - marks(await store(under))
    items = await store(under)
    return {"compactions": len(client.responses.compacts), "lost": lost, "items": items,
            "refusals": 0 if guard is None else session.guard.ledger.refusals, "log": log}


def test_long_session_keeps_the_first_turn_and_the_guard_refuses_nothing(tmp_path: Path) -> None:
    long_session_in(tmp_path, ("halt",))


@pytest.mark.slow
def test_long_session_in_defer_mode(tmp_path: Path) -> None:
    long_session_in(tmp_path, ("defer",))


def long_session_in(tmp_path: Path, modes: tuple[str, ...]) -> None:
    """Unguarded, the SDK keeps the first-turn item (the retained prefix of its suffix
    replacement, or an echo); guarded, nothing is refused (the adapter that counted the whole
    store as leaving halted at turn 99, or logged 101 refusals under ``defer``)."""
    plain = asyncio.run(long_session(None, tmp_path))
    assert plain["compactions"] == 10 and plain["lost"] == set()
    assert "RULE: always answer in French" in json.dumps(plain["items"])  # the SDK keeps the first turn
    for mode in modes:
        run = asyncio.run(long_session(mode, tmp_path))
        assert (run["compactions"], run["refusals"], run["lost"]) == (10, 0, set()), mode
        assert run["items"] == plain["items"]
        code, report = audit_json(str(run["log"]))
        assert code == 0 and len(report["compactions"]) == 10 and report["refusals"] == 0
    policy = tmp_path / "long.toml"
    policy.write_text('name = "long"\nturn_tokens = [1, 8000]\nmessages_per_turn = [2, 2]\nfloor = 0\n'
                      'floor_unit = "messages"\n[framework]\nname = "agents.OpenAIResponsesCompactionSession"\n'
                      'limit = 100\ncompaction_threshold = 20\nwindow = 200000\n')
    assert check_config(policy)["verdict"] == "safe"


# -- 2. the oracle: random sessions, the guard in lockstep with the plain SDK ----------------

def turn_items(rng: random.Random, t: int, counter: list[int]) -> list[dict[str, Any]]:
    def mark() -> str:
        counter[0] += 1
        return f"mkI{counter[0]}"
    kind = rng.choice(["human", "ai", "tools"])
    if kind == "human":
        return [{"role": "user", "content": f"{mark()} ask"}]
    if kind == "ai":
        return [{"role": "assistant", "content": f"{mark()} say"}]
    call = f"call_{t}"
    return [{"type": "function_call", "call_id": call, "name": "lookup", "arguments": f'"{mark()}"'},
            {"type": "function_call_output", "call_id": call, "output": f"{mark()} result"}]


async def manual_lockstep(seed: int, log: io.StringIO) -> tuple[int, int, int]:
    """The application's protocol of the preset's harness: add a turn's items, then
    ``run_compaction()``; a fresh session object every turn or one for the run."""
    rng = random.Random(seed)
    limit = rng.choice([None, 3, 5, 8, 12, 20])
    threshold, fresh = rng.randint(2, 8), rng.random() < 0.5
    settings = SessionSettings(limit=limit) if limit else None
    plain_store = SQLiteSession("p", session_settings=settings)
    guarded_store = SQLiteSession("g", session_settings=settings)
    plain_client, guarded_client = StubClient(), StubClient()
    states = MemoryStateStore()

    def make() -> tuple[Any, GuardedResponsesCompactionSession]:
        p = OpenAIResponsesCompactionSession("p", plain_store, client=plain_client, compaction_mode="input",
                                             should_trigger_compaction=hook(threshold))
        g = GuardedResponsesCompactionSession("g", guarded_store, client=guarded_client, compaction_mode="input",
                                              should_trigger_compaction=hook(threshold), log=log, state_store=states)
        return p, g

    plain, guarded = make()
    counter = [0]
    ever: set[str] = set()
    for t in range(rng.randint(5, 40)):
        if fresh and t:
            plain, guarded = make()
        items = turn_items(rng, t, counter)
        await plain.add_items(items)
        await guarded.add_items(items)
        await plain.run_compaction()
        try:
            await guarded.run_compaction()
        except UnrecoverableCompactionError:
            held = marks(await store(guarded_store))  # untouched: the store before the compaction
            assert held - marks(await store(plain_store)), f"seed {seed} turn {t}: refused, yet nothing was lost"
            return len(guarded_client.responses.compacts), guarded.guard.ledger.refusals, t
        now = await store(guarded_store)
        assert now == await store(plain_store), f"seed {seed} turn {t}"
        ever |= marks(now)
        assert ever <= marks(now), f"seed {seed} turn {t}: an allowed compaction lost {ever - marks(now)}"
    return len(guarded_client.responses.compacts), guarded.guard.ledger.refusals, -1


def test_every_refusal_is_a_loss_and_every_allowed_compaction_loses_nothing() -> None:
    compactions = refusals = 0
    for seed in range(60):
        log = io.StringIO()
        done, refused, _ = asyncio.run(manual_lockstep(seed, log))
        compactions, refusals = compactions + done, refusals + refused
        lines = log.getvalue()
        assert lines.count('"event": "compact"') == done and lines.count('"event": "refusal"') == refused
        assert audit_text(lines)["violations"] == 0
    assert compactions > 200 and refusals >= 5  # both directions exercised


async def runner_lockstep(seed: int, log: io.StringIO) -> int:
    """The Runner's automatic compaction (native suffix replacement) under small limits: the
    guard never refuses, and nothing is lost."""
    rng = random.Random(seed)
    limit, threshold = rng.choice([3, 4, 6, 10]), rng.randint(2, 6)
    settings = SessionSettings(limit=limit)
    plain_store = SQLiteSession("p", session_settings=settings)
    guarded_store = SQLiteSession("g", session_settings=settings)
    pc, gc = StubClient(), StubClient()
    plain = OpenAIResponsesCompactionSession("p", plain_store, client=pc, compaction_mode="input",
                                             should_trigger_compaction=hook(threshold))
    guarded = GuardedResponsesCompactionSession("g", guarded_store, client=gc, compaction_mode="input",
                                                should_trigger_compaction=hook(threshold), log=log)
    pa = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=pc))  # type: ignore[arg-type]
    ga = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=gc))  # type: ignore[arg-type]
    ever: set[str] = set()
    for t in range(rng.randint(10, 40)):
        await Runner.run(pa, f"mkU{t} question", session=plain)
        await Runner.run(ga, f"mkU{t} question", session=guarded)
        now = await store(guarded_store)
        assert now == await store(plain_store)
        ever |= marks(now)
        assert ever <= marks(now)
    assert guarded.guard.ledger.refusals == 0
    return len(gc.responses.compacts)


def test_the_runner_suffix_replacement_is_never_refused() -> None:
    total = 0
    for seed in range(12):
        log = io.StringIO()
        total += asyncio.run(runner_lockstep(seed, log))
        report = audit_text(log.getvalue())
        assert report["violations"] == 0 and report["refusals"] == 0
    assert total > 25


def audit_text(text: str) -> dict[str, Any]:
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write(text)
    code, report = audit_json(f.name)
    Path(f.name).unlink()
    assert code in (0, 1)
    return report


async def late_hook_lockstep(seed: int, on_refuse: str, tmp_path: Path, log: io.StringIO,
                             seen: dict[str, int]) -> None:
    """The Runner's compaction with a hook that starts late and then fires every turn. The first
    compaction keeps older items verbatim (they become part of its summary); the next one's
    window starts between those and its compaction item, so that summary is seen in part and
    its kept part carries over into the new summary. Under ``spill`` the user also pops items
    between turns and clears the store once (the guard spills what leaves first). The store
    equals the plain SDK's throughout, nothing is lost, and under ``halt`` nothing is refused."""
    rng = random.Random(seed)
    limit, start = rng.choice([2, 3, 4]), rng.randint(2, 5)
    pops = on_refuse == "spill"
    settings = SessionSettings(limit=limit)
    plain_store = SQLiteSession("p", session_settings=settings)
    guarded_store = SQLiteSession("g", session_settings=settings)
    pc, gc = StubClient(), StubClient()
    turn = [0]

    def late(ctx: Any) -> bool:
        return turn[0] >= start  # a user's policy: any rule that is not a count of the window

    plain = OpenAIResponsesCompactionSession("p", plain_store, client=pc, compaction_mode="input",
                                             should_trigger_compaction=late)
    spills = FileSpillStore(tmp_path / f"spills-{seed}", create=True)
    guarded = GuardedResponsesCompactionSession("g", guarded_store, client=gc, compaction_mode="input",
                                                should_trigger_compaction=late, log=log, on_refuse=on_refuse,
                                                store=spills if pops else None)
    plan = guarded._plan

    def spy(kept: int, window: list[str]) -> Any:
        out = plan(kept, window)
        seen["composite"] += bool(out[1])
        return out

    guarded._plan = spy  # type: ignore[method-assign]
    pa = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=pc))  # type: ignore[arg-type]
    ga = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=gc))  # type: ignore[arg-type]
    ever: set[str] = set()
    for t in range(rng.randint(12, 24)):
        turn[0] = t
        if pops and t and rng.random() < 0.25:  # undo the last item, in both sessions
            gone = await guarded.pop_item()
            assert gone == await plain.pop_item()
            seen["pops"] += 1
        if pops and t == 9 and seed % 3 == 0:  # start over: clear both stores
            await guarded.clear_session()
            await plain.clear_session()
            seen["clears"] += 1
        await Runner.run(pa, f"mkU{t} question", session=plain)
        await Runner.run(ga, f"mkU{t} question", session=guarded)
        now = await store(guarded_store)
        assert now == await store(plain_store)
        ever |= marks(now)
        held = marks(now) | {m for r in spills.list() for m in MARK.findall(spills.get(r.handle).decode())}
        assert ever <= held  # a popped item's markers are in its spill
    if not pops:
        assert guarded.guard.ledger.refusals == 0


@pytest.mark.parametrize("on_refuse", ["halt", "spill"])
def test_a_summary_seen_in_part_carries_over_and_removed_items_are_spilled(on_refuse: str, tmp_path: Path) -> None:
    seen = {"composite": 0, "pops": 0, "clears": 0}
    for seed in range(10):
        log = io.StringIO()
        asyncio.run(late_hook_lockstep(seed, on_refuse, tmp_path, log, seen))
        report = audit_text(log.getvalue())
        assert report["violations"] == 0
        assert on_refuse == "spill" or report["refusals"] == 0
    assert seen["composite"] >= 10  # a summary seen in part, with its kept part carried over
    assert on_refuse == "halt" or (seen["pops"] >= 5 and seen["clears"] >= 3)


def test_without_spill_an_undone_item_is_a_prior_truncation(tmp_path: Path) -> None:
    """Under ``halt`` a popped item no summary covers is a truncation: the next compaction that
    evicts across it is refused before the request, the store untouched."""
    async def go() -> None:
        under = SQLiteSession("u", session_settings=SessionSettings(limit=3))
        client = StubClient()
        turn = [0]
        session = GuardedResponsesCompactionSession("u", under, client=client, compaction_mode="input",
                                                    should_trigger_compaction=lambda ctx: turn[0] == 4,
                                                    log=tmp_path / "u.jsonl")
        agent = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client))  # type: ignore[arg-type]
        for t in range(4):
            turn[0] = t
            await Runner.run(agent, f"mkU{t} question", session=session)
        await session.pop_item()  # the answer mkA3
        before = await store(under)
        turn[0] = 4
        with pytest.raises(UnrecoverableCompactionError, match="no_hole"):
            await Runner.run(agent, "mkU4 question", session=session)
        assert client.responses.compacts == [] and (await store(under))[:len(before)] == before
        text = (tmp_path / "u.jsonl").read_text()
        assert '"event": "truncate"' in text and '"event": "refusal"' in text

    asyncio.run(go())


def test_a_spill_that_fails_before_a_pop_removes_nothing(tmp_path: Path) -> None:
    """Under ``spill`` a pop whose spill cannot be written raises ``AdapterError`` and the item stays."""
    class FullDisk(FileSpillStore):
        def put(self, data: bytes, **kw: Any) -> str:
            raise OSError(28, "No space left on device")

    async def go() -> None:
        under = SQLiteSession("p")
        session = GuardedResponsesCompactionSession("p", under, client=StubClient(), on_refuse="spill",
                                                    store=FullDisk(tmp_path / "spills", create=True))
        await session.add_items([{"role": "user", "content": f"mkU{i}"} for i in range(3)])
        before = await store(under)
        with pytest.raises(AdapterError, match=r"spill of \[2, 3\) failed: .*No space left.*nothing was removed"):
            await session.pop_item()
        assert await store(under) == before and session.guard.ledger.snapshot()["state"]["spilled"] == []

    asyncio.run(go())


# -- 3. restarts: a new session object (new guard) over the same SQLite file -------------------

async def restartable(tmp_path: Path, name: str, restarts: set[int], turns: int,
                      limit: int) -> tuple[list[Any], list[str]]:
    db, log = tmp_path / f"{name}.db", tmp_path / f"{name}.jsonl"
    client = StubClient()
    agent = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client))  # type: ignore[arg-type]
    every = [0]

    def make() -> tuple[SQLiteSession, GuardedResponsesCompactionSession]:
        under = SQLiteSession("chat", db, session_settings=SessionSettings(limit=limit))
        # a hook that does not depend on the SDK's per-object cache: the same in both runs
        return under, GuardedResponsesCompactionSession(
            "chat", under, client=client, compaction_mode="input", log=log,
            should_trigger_compaction=lambda ctx: every[0] % 3 == 2)

    under, session = make()
    stores: list[Any] = []
    for t in range(turns):
        if t in restarts:
            session.close()
            under.close()
            under, session = make()
        every[0] = t
        await Runner.run(agent, f"mkU{t} question", session=session)
        stores.append(await store(under))
    session.close()
    under.close()
    return stores, log.read_text().splitlines()


def test_a_restarted_session_decides_as_an_uninterrupted_one(tmp_path: Path) -> None:
    for seed in range(4):
        rng = random.Random(seed)
        limit, turns = rng.choice([3, 5, 8]), 30
        restarts = {0, *rng.sample(range(1, turns), 6)}  # 0: before the session's first turn
        one, log_one = asyncio.run(restartable(tmp_path, f"one{seed}", set(), turns, limit))
        many, log_many = asyncio.run(restartable(tmp_path, f"many{seed}", restarts, turns, limit))
        assert many == one
        resumes = [x for x in log_many if '"event": "resume"' in x]
        assert len(resumes) == len(restarts)
        assert [x for x in log_many if x not in resumes] == log_one
        assert sum('"event": "compact"' in x for x in log_one) >= 5
        code, report = audit_json(str(tmp_path / f"many{seed}.jsonl"))
        assert code == 0 and len(report["compactions"]) == sum('"event": "compact"' in x for x in log_one)


def test_state_is_in_a_side_table_and_a_tampered_state_is_refused(tmp_path: Path) -> None:
    async def go() -> None:
        db = tmp_path / "s.db"
        under = SQLiteSession("s", db)
        session = GuardedResponsesCompactionSession("s", under, client=StubClient(), compaction_mode="input")
        await session.add_items([{"role": "assistant", "content": f"mkI{i}"} for i in range(12)])
        await session.run_compaction({"force": True})
        import sqlite3
        with sqlite3.connect(db) as conn:
            (text,) = conn.execute("SELECT state FROM tailguard_state WHERE session_id = 's'").fetchone()
            assert json.loads(text)["ledger"]["format"] == "tailguard.ledger"
            assert conn.execute("SELECT count(*) FROM agent_messages").fetchone()[0] == 1  # no item of ours
            conn.execute("UPDATE tailguard_state SET state = replace(state, '\"carrier\"', '\"unit\"')")
        with pytest.raises(AdapterError, match="integrity"):
            GuardedResponsesCompactionSession("s", SQLiteSession("s", db), client=StubClient())
    asyncio.run(go())


# -- adoption: a store compacted before the guard came --------------------------------------------

def test_history_compacted_before_the_guard_is_adopted_or_refused(tmp_path: Path) -> None:
    async def go() -> None:
        under = SQLiteSession("s", session_settings=SessionSettings(limit=4))
        plain = OpenAIResponsesCompactionSession("s", under, client=StubClient(), compaction_mode="input")
        await plain.add_items([{"role": "assistant", "content": f"mkI{i}"} for i in range(6)])
        await plain.run_compaction({"force": True})
        await under.add_items([{"role": "assistant", "content": "mkI100"}])
        refusing = GuardedResponsesCompactionSession("s", under, client=StubClient(), on_unknown_history="refuse",
                                                     state_store=None)
        with pytest.raises(AdapterError, match="on_unknown_history='refuse'"):
            await refusing.run_compaction({"force": True})
        log = tmp_path / "adopt.jsonl"
        session = GuardedResponsesCompactionSession("s", under, client=StubClient(), compaction_mode="input", log=log)
        session.close()  # a restart before the guard first read the store: the adoption is still to come
        session = GuardedResponsesCompactionSession("s", under, client=StubClient(), compaction_mode="input", log=log)
        await session.run_compaction({"force": True})  # all 2 items shown: the adopted summary is seen
        assert session.guard.ledger.unverified == ((0, 1),)
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        assert [x["event"] for x in lines] == ["session", "resume", "adopt", "append", "compact"]
        assert lines[-1]["saw"] == ["adopted"]
    asyncio.run(go())



def test_logs_name_the_session_and_go_one_file_per_session(tmp_path: Path) -> None:
    """``log=`` a directory: each session's own file, its header naming the store's session id; a
    restart appends a ``resume`` line to that file. ``on_unknown_history`` is a GuardOptions field
    here as in every adapter (given both ways is a TypeError; a bad value names the field)."""
    from tailguard.adapters._guard import GuardOptions, SessionLogs

    async def go() -> None:
        logs = tmp_path / "logs"
        logs.mkdir()
        db = tmp_path / "many.db"
        for sid in ("alice", "bob"):
            under = SQLiteSession(sid, db)
            session = GuardedResponsesCompactionSession(sid, under, client=StubClient(), compaction_mode="input",
                                                        log=logs)
            await session.add_items([{"role": "assistant", "content": f"mkI{i}"} for i in range(4)])
            await session.run_compaction({"force": True})
            session.close()
        again = GuardedResponsesCompactionSession("alice", SQLiteSession("alice", db), client=StubClient(),
                                                  compaction_mode="input", log=logs)
        again.close()
        for sid in ("alice", "bob"):
            lines = [json.loads(x) for x in SessionLogs(logs).path(sid).read_text().splitlines()]  # type: ignore[union-attr]
            assert lines[0]["event"] == "session" and lines[0]["session_id"] == sid
            assert [x["event"] for x in lines][-1] == ("resume" if sid == "alice" else "compact")
        assert len(list(logs.iterdir())) == 2
    asyncio.run(go())
    under = SQLiteSession("x")
    opts = GuardOptions(recovery_floor_span=0, on_unknown_history="refuse")
    assert GuardedResponsesCompactionSession("x", under, client=StubClient(), options=opts).on_unknown_history \
        == "refuse"
    with pytest.raises(TypeError, match="not both"):
        GuardedResponsesCompactionSession("x", under, client=StubClient(), options=opts, on_unknown_history="adopt")
    with pytest.raises(ValueError, match="on_unknown_history"):
        GuardedResponsesCompactionSession("x", under, client=StubClient(), on_unknown_history="ignore")

# -- 4. runtime and config agree on the shipped presets ---------------------------------------

def check_config(path: Path) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    cli(["check-config", "--format", "json", str(path)], stdout=out, stderr=err)
    report: dict[str, Any] = json.loads(out.getvalue())["policies"][0]
    return report


def knobs_of(path: Path) -> dict[str, Any]:
    import tomllib
    doc = tomllib.loads(path.read_text())
    fw = doc["framework"]
    return {"limit": fw.get("limit") or None, "threshold": fw.get("compaction_threshold", 10),
            "fresh": bool(fw.get("fresh_session_per_turn", 0)), "floor": doc["floor"],
            "messages": tuple(doc["messages_per_turn"])}


def candidates(t: int, count: int) -> list[dict[str, Any]]:
    """``count`` items of one turn, all compaction candidates (the preset counts every message)."""
    out: list[dict[str, Any]] = []
    while len(out) < count:
        if count - len(out) >= 2 and (t + len(out)) % 3:
            call = f"call_{t}_{len(out)}"
            out += [{"type": "function_call", "call_id": call, "name": "f", "arguments": f'"mkI{t}x{len(out)}"'},
                    {"type": "function_call_output", "call_id": call, "output": f"mkI{t}y{len(out)}"}]
        else:
            out.append({"role": "assistant", "content": f"mkI{t}z{len(out)}"})
    return out


async def preset_run(k: dict[str, Any], sizes: list[int], floor: int) -> tuple[int, list[Any]]:
    """The preset harness's protocol through the guard (halt): returns the compactions made and
    the refusal (failed, holes) if one came."""
    settings = SessionSettings(limit=k["limit"]) if k["limit"] else None
    under, client, states = SQLiteSession("s", session_settings=settings), StubClient(), MemoryStateStore()

    def make() -> GuardedResponsesCompactionSession:
        return GuardedResponsesCompactionSession("s", under, client=client, compaction_mode="input",
                                                 recovery_floor_span=floor, state_store=states,
                                                 should_trigger_compaction=hook(k["threshold"]))
    session = make()
    for t, m in enumerate(sizes):
        if k["fresh"] and t:
            session = make()
        await session.add_items(candidates(t, m))
        try:
            await session.run_compaction()
        except UnrecoverableCompactionError as exc:
            return len(client.responses.compacts), [exc.failed, exc.holes]
    return len(client.responses.compacts), []


@pytest.mark.parametrize("name", ["openai-agents-defaults", "openai-agents-limit"])
def test_the_adapter_agrees_with_the_preset(name: str, tmp_path: Path) -> None:
    path = EXAMPLES / f"{name}.toml"
    report = check_config(path)
    # unsafe as shipped (defaults: the floor) -> the counterexample, replayed, is refused
    # safe as shipped (limit) -> a variant that breaks it (limit 8, threshold 6) is
    variant = tmp_path / "variant.toml"
    if report["verdict"] == "safe":
        text = path.read_text().replace("limit = 50", "limit = 8\ncompaction_threshold = 6")
    else:
        text = path.read_text().replace("floor = 8", "floor = 0")
    variant.write_text(text)
    other = check_config(variant)
    assert {report["verdict"], other["verdict"]} == {"safe", "unsafe"}
    for policy, verdict in ((path, report), (variant, other)):
        kk = knobs_of(policy)
        if verdict["verdict"] == "unsafe":
            finding = verdict["findings"][0]
            done, refusal = asyncio.run(preset_run(kk, finding["messages"], kk["floor"]))
            assert refusal, f"{policy.name}: the counterexample {finding['messages']} was not refused"
            expected = {"floor": "floor_in_tail", "hole": "no_hole"}[finding["kind"]]
            assert expected in refusal[0]
        else:  # safe: no session of the policy's shape is refused
            rng = random.Random(name)
            lo, hi = kk["messages"]
            total = 0
            for _ in range(25):
                sizes = [rng.randint(lo, hi) for _ in range(rng.randint(5, 60))]
                done, refusal = asyncio.run(preset_run(kk, sizes, kk["floor"]))
                assert refusal == [], f"{policy.name}: {sizes} refused {refusal}"
                total += done
            assert total > 20
