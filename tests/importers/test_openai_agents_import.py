"""The ``openai-agents`` importer against the real OpenAI Agents SDK (brief 10, issue 27).

The SDK runs as installed, unguarded, over a real ``SQLiteSession`` file, offline: an
``openai.AsyncOpenAI`` client on an ``httpx.MockTransport`` answers ``/responses`` (the Runner's
model: an assistant message) and ``/responses/compact`` as the API documents (the user messages
it was shown, then one compaction item) - its compaction item writes back every marker it was
shown, earlier compaction items' included. Every item the application or the model adds carries
a unique marker (``m0017``). Three kinds of generated sessions:

- ``run_compaction()`` after every turn on a new ``OpenAIResponsesCompactionSession`` over
  ``SessionSettings(limit=N)`` (the whole store replaced, the newest N rows shown);
- the same without a limit, on one long-lived object;
- the Runner's automatic compaction (``Runner.run`` with the session: suffix replacement).

Some sessions also ``pop_item()`` their newest row, and some databases hold two sessions whose
Runner and application turns interleave (the ids are shared). The oracle: a marker is lost when no row of
the final store holds it, as an item or inside a compaction item. The test records which row id
each item was given (it wraps the session's own ``_insert_items``, so the SDK's SQL is
unchanged) and checks, for every database: every lost marker is named lost (a hole) or lies in
an unverified range; every row named lost lost its marker; and where nothing is unverified, the
two agree exactly. Wrong importers fail the same check: every deleted row taken as shown (the
limit ignored), ``pop_item`` gaps ignored, no ``2 * compaction_threshold`` bound.
"""

from __future__ import annotations

import asyncio
import io
import json
import random
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("agents", reason="install the frameworks extra (CI does)")

import httpx
from agents import Agent, OpenAIResponsesModel, Runner, SQLiteSession, set_tracing_disabled
from agents.memory import OpenAIResponsesCompactionSession
from agents.memory.session_settings import SessionSettings
from openai import AsyncOpenAI

from tailguard.cli.main import main
from tailguard.importers import openai_agents as oa

set_tracing_disabled(True)
MARK = re.compile(r"\bm\d{4}\b")
USAGE = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 0}}


class World:
    """One generated session: the SDK's client, its markers, and the id each row was given."""

    def __init__(self) -> None:
        self.n = 0
        self.origin: dict[int, str] = {}  # row id -> the marker of the item the application/model added
        self.compactions = 0

    def mark(self) -> str:
        self.n += 1
        return f"m{self.n:04d}"

    def client(self) -> AsyncOpenAI:
        def handler(request: httpx.Request) -> httpx.Response:
            body = json.loads(request.content)
            if request.url.path.endswith("/responses/compact"):
                shown = body.get("input", [])
                self.compactions += 1
                users = [x for x in shown if x.get("role") == "user"]
                out: list[dict[str, Any]] = [
                    {"type": "message", "role": "user", "id": f"u{self.compactions}_{i}", "status": "completed",
                     "content": [{"type": "input_text", "text": _text(u)}]} for i, u in enumerate(users)]
                read = sorted({m for x in shown for m in MARK.findall(json.dumps(x))})
                out.append({"type": "compaction", "id": f"cmp_{self.compactions}",
                            "encrypted_content": " ".join(read) or "none"})
                return httpx.Response(200, json={"id": "resp_c", "object": "response.compaction", "created_at": 0,
                                                 "output": out, "usage": USAGE})
            m = self.mark()
            return httpx.Response(200, json={
                "id": f"resp_{m}", "object": "response", "created_at": 0, "model": "gpt-4.1", "status": "completed",
                "output": [{"type": "message", "id": f"msg_{m}", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": f"{m} answer", "annotations": []}]}],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": USAGE})

        return AsyncOpenAI(api_key="test", base_url="http://stub.invalid/v1",
                           http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))

    def watch(self, under: SQLiteSession) -> None:
        """Record the id of every row the SDK inserts (its own SQL, run as it is)."""
        insert = under._insert_items

        def recorded(conn: sqlite3.Connection, items: list[Any]) -> None:
            before = conn.execute("SELECT COALESCE(MAX(id), 0) FROM agent_messages").fetchone()[0]
            insert(conn, items)
            rows = conn.execute("SELECT id, message_data FROM agent_messages WHERE id > ? ORDER BY id",
                                (before,)).fetchall()
            if any(json.loads(d).get("type") == "compaction" for _, d in rows):
                return  # a compaction's output: echoes and the compaction item, no new marker
            for rid, data in rows:
                found = MARK.findall(data)
                assert len(found) == 1, data
                self.origin[rid] = found[0]

        under._insert_items = recorded  # type: ignore[method-assign]


def _text(item: dict[str, Any]) -> str:
    c = item.get("content")
    if isinstance(c, list):
        return "".join(str(b.get("text", "")) for b in c if isinstance(b, dict))
    return str(c if c is not None else item.get("output", item.get("arguments", "")))


def turn_items(w: World, calls: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": f"{w.mark()} question"}]
    for j in range(calls):
        call = f"call_{w.n}_{j}"
        out += [{"type": "function_call", "call_id": call, "name": "lookup", "arguments": f'"{w.mark()}"'},
                {"type": "function_call_output", "call_id": call, "output": f"{w.mark()} result"}]
    out.append({"role": "assistant", "content": f"{w.mark()} answer"})
    return out


def manual(path: Path, rng: random.Random, limit: int | None, threshold: int, turns: int | list[int],
           pops: bool) -> World:
    """The application adds each turn, then calls ``run_compaction()`` (a new object per turn
    under a limit, one object without)."""
    w = World()

    async def go() -> None:
        under = SQLiteSession("s", str(path), session_settings=SessionSettings(limit=limit) if limit else None)
        w.watch(under)
        client = w.client()

        def session() -> OpenAIResponsesCompactionSession:
            return OpenAIResponsesCompactionSession(
                "s", under, client=client, compaction_mode="input",
                should_trigger_compaction=lambda ctx: len(ctx["compaction_candidate_items"]) >= threshold)

        s = session()
        for calls in turns if isinstance(turns, list) else [rng.randint(0, 2) for _ in range(turns)]:
            if limit:
                s = session()
            await s.add_items(turn_items(w, calls))
            if pops and rng.random() < 0.3:
                await s.pop_item()
            await s.run_compaction()
        under.close()

    asyncio.run(go())
    return w


def automatic(path: Path, threshold: int, turns: int) -> World:
    """``Runner.run`` with the compaction session: the SDK compacts after each turn by itself."""
    w = World()

    async def go() -> None:
        under = SQLiteSession("s", str(path))
        w.watch(under)
        client = w.client()
        session = OpenAIResponsesCompactionSession(
            "s", under, client=client, compaction_mode="input",
            should_trigger_compaction=lambda ctx: len(ctx["session_items"]) >= threshold)
        agent = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client))
        for _ in range(turns):
            await Runner.run(agent, f"{w.mark()} question", session=session)
        under.close()

    asyncio.run(go())
    return w


def knobs_file(tmp: Path, limit: int | None, threshold: int, fresh: bool, removes: bool,
               automatic: bool = False) -> str:
    p = tmp / f"k{limit}-{threshold}-{int(fresh)}-{int(removes)}-{int(automatic)}.toml"
    p.write_text('[framework]\nname = "agents.OpenAIResponsesCompactionSession"\n'
                 f'limit = {limit if limit else "false"}\ncompaction_threshold = {threshold}\n'
                 f'fresh_session_per_turn = {int(fresh)}\napplication_removes_items = {int(removes)}\n'
                 f'automatic_compaction = {int(automatic)}\n')
    return str(p)


def lost_markers(path: Path, w: World, session: str = "s") -> set[str]:
    conn = sqlite3.connect(str(path))
    try:
        text = " ".join(d for (d,) in conn.execute("SELECT message_data FROM agent_messages WHERE session_id = ?",
                                                   (session,)))
    finally:
        conn.close()
    return set(w.origin.values()) - set(MARK.findall(text))


def audit(path: Path, knobs: str | None, session: str = "s") -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    args = ["audit", "--from", "openai-agents", str(path), "--thread", session, "--profile", "partitioned",
            "--format", "json"]
    code = main([*args, *(["--knobs", knobs] if knobs else [])], stdout=out, stderr=err)
    assert code in (0, 1), err.getvalue()
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def judge(path: Path, w: World, knobs: str | None, session: str = "s") -> tuple[set[str], set[str], bool]:
    """(markers named lost, markers lost, whether any range is unverified); asserts soundness."""
    doc = audit(path, knobs, session)
    named: set[str] = set()
    for row in doc["lost_messages"]:
        rid = int(row["id"].removeprefix("row "))
        assert rid in w.origin, f"row {rid} named lost is no item the application or the model added"
        named.add(w.origin[rid])
    lost = lost_markers(path, w, session)
    unverified: set[str] = set()
    if doc.get("unverified"):
        imported = oa.import_session(str(path), session, oa_knobs(knobs))
        spans = [tuple(r) for r in doc["unverified"]]
        for n in imported.units:
            rid = int(n.id.removeprefix("row "))
            if any(lo <= n.lo < hi for lo, hi in spans) and rid in w.origin:
                unverified.add(w.origin[rid])
        # a row the record no longer places (an earlier compaction's output) is unverified too
        unverified |= {m for rid, m in w.origin.items() if f"row {rid}" not in {u.id for u in imported.units}}
    assert named <= lost, f"named lost but kept: {sorted(named - lost)}"
    assert lost <= named | unverified, f"lost but neither named nor unverified: {sorted(lost - named - unverified)}"
    return named, lost, bool(doc.get("unverified"))


def oa_knobs(path: str | None) -> Any:
    from tailguard.importers import knobs_for

    return knobs_for("openai-agents", path)


def test_limit_window_loses_the_oldest_rows_exactly(tmp_path: Path) -> None:
    """One compaction under limit 4 (fresh object per turn): the 4 oldest of its 8 rows go unseen."""
    db = tmp_path / "w.sqlite"
    w = manual(db, random.Random(3), limit=4, threshold=4, turns=[0, 2, 0], pops=False)
    named, lost, unverified = judge(db, w, knobs_file(tmp_path, 4, 4, True, False))
    assert lost == {"m0001", "m0002", "m0003", "m0004"} and named == lost and not unverified


def test_several_whole_store_replacements_stay_unverified(tmp_path: Path) -> None:
    """Four compactions under limit 4: the rows deleted before the last one mix earlier
    compactions' outputs with items; which were shown is not decided, so nothing is named."""
    db = tmp_path / "many.sqlite"
    w = manual(db, random.Random(1), limit=4, threshold=2, turns=[1, 1, 0, 2, 1], pops=False)
    named, lost, unverified = judge(db, w, knobs_file(tmp_path, 4, 2, True, False))
    assert w.compactions >= 3 and lost and unverified and not named


@pytest.mark.parametrize("seed", range(8))
def test_generated_sessions_agree_with_the_markers(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    kind = ("window", "unlimited", "runner", "pops")[seed % 4]
    db = tmp_path / f"{kind}.sqlite"
    threshold = rng.randint(2, 6)
    if kind == "runner":
        w = automatic(db, threshold=threshold, turns=rng.randint(2, 6))
        knobs = knobs_file(tmp_path, None, threshold, False, False, automatic=True)
    elif kind == "unlimited":
        w = manual(db, rng, limit=None, threshold=threshold, turns=rng.randint(1, 6), pops=False)
        knobs = knobs_file(tmp_path, None, threshold, False, False)
    else:
        limit = rng.randint(3, 8)
        w = manual(db, rng, limit=limit, threshold=threshold, turns=rng.randint(1, 4), pops=kind == "pops")
        knobs = knobs_file(tmp_path, limit, threshold, True, kind == "pops")
    named, lost, unverified = judge(db, w, knobs)
    if not unverified:
        assert named == lost
    judge(db, w, None)  # without knobs: sound, never more


def mixed(path: Path, rng: random.Random, sessions: list[str], limit: int | None, threshold: int,
          fresh: bool) -> tuple[dict[str, World], bool]:
    """Sessions sharing one database, each turn either a Runner turn (automatic compaction) or an
    application turn (``run_compaction()``, sometimes a ``pop_item()`` first): (worlds, popped)."""
    worlds = {sid: World() for sid in sessions}
    popped = [False]

    async def go() -> None:
        unders: dict[str, SQLiteSession] = {}
        for k, sid in enumerate(sessions):
            settings = SessionSettings(limit=limit) if limit else None
            unders[sid] = SQLiteSession(sid, str(path), session_settings=settings)
            worlds[sid].watch(unders[sid])
            worlds[sid].n = 1000 * (k + 1)  # markers unique across the database
        clients = {sid: worlds[sid].client() for sid in sessions}
        objects: dict[str, OpenAIResponsesCompactionSession] = {}
        for _ in range(rng.randint(2, 12)):
            sid = rng.choice(sessions)
            w = worlds[sid]
            if fresh or sid not in objects:
                objects[sid] = OpenAIResponsesCompactionSession(
                    sid, unders[sid], client=clients[sid], compaction_mode="input",
                    should_trigger_compaction=lambda ctx: len(ctx["compaction_candidate_items"]) >= threshold)
            s = objects[sid]
            if rng.random() < 0.25:
                agent = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=clients[sid]))
                await Runner.run(agent, f"{w.mark()} question", session=s)
                continue
            await s.add_items(turn_items(w, rng.randint(0, 2)))
            if rng.random() < 0.15:
                await s.pop_item()
                popped[0] = True
            await s.run_compaction()
        for u in unders.values():
            u.close()

    asyncio.run(go())
    return worlds, popped[0]


@pytest.mark.parametrize("seed", [0, 1, 5, 7, 11, 13])
def test_mixed_databases_of_one_or_two_sessions(tmp_path: Path, seed: int) -> None:
    """Runner and application turns, pops, one or two sessions in one file: sound for every
    session, exact where nothing is unverified (a second session makes most ids ambiguous)."""
    rng = random.Random(seed)
    db = tmp_path / "mixed.sqlite"
    sessions = ["s"] if rng.random() < 0.6 else ["s", "t"]
    limit, threshold, fresh = rng.choice([None, 3, 4, 6]), rng.randint(2, 5), rng.random() < 0.5
    worlds, popped = mixed(db, rng, sessions, limit, threshold, fresh)
    knobs = knobs_file(tmp_path, limit, threshold, fresh, popped or rng.random() < 0.5, automatic=True)
    for sid, w in worlds.items():
        if w.origin:
            named, lost, unverified = judge(db, w, knobs, sid)
            assert unverified or named == lost


def test_runner_suffix_replacement_is_decided_lossless(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    w = automatic(db, threshold=3, turns=5)
    named, lost, unverified = judge(db, w, knobs_file(tmp_path, None, 3, False, False, automatic=True))
    assert not unverified and named == lost == set()
    assert w.compactions >= 2


def test_a_row_popped_inside_a_suffix_gap_is_not_taken_as_sent(tmp_path: Path) -> None:
    """Under ``limit = 2`` the Runner's fourth turn replaces the suffix u3 a3 u4 a4 (rows 5, 6, 8,
    9) and keeps a2 (row 4); row 7, which the application added and popped, is in the same gap.
    With application_removes_items = 1 that gap is not decided (a wrong importer that takes every
    row of a suffix gap as sent misses row 7's loss)."""
    db = tmp_path / "gap.sqlite"
    w = World()
    compact = [False]

    async def go() -> None:
        under = SQLiteSession("s", str(db), session_settings=SessionSettings(limit=2))
        w.watch(under)
        client = w.client()
        s = OpenAIResponsesCompactionSession("s", under, client=client, compaction_mode="input",
                                             should_trigger_compaction=lambda ctx: compact[0])
        agent = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client))
        for _ in range(3):
            await Runner.run(agent, f"{w.mark()} question", session=s)
        await s.add_items([{"role": "assistant", "content": f"{w.mark()} aside"}])
        await s.pop_item()
        compact[0] = True
        await Runner.run(agent, f"{w.mark()} question", session=s)
        under.close()

    asyncio.run(go())
    with sqlite3.connect(str(db)) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM agent_messages ORDER BY id")]
    assert ids[:4] == [1, 2, 3, 4] and 7 not in ids and w.compactions == 1
    named, lost, unverified = judge(db, w, knobs_file(tmp_path, 2, 10, False, True, automatic=True))
    assert lost == {w.origin[7]} and unverified and not named


def test_runner_under_a_limit_sends_the_whole_store_it_replaces(tmp_path: Path) -> None:
    """``Runner.run`` under ``SessionSettings(limit=3)``: the model saw the newest 3 items and the
    new turn, the automatic compaction matched them all and replaced the whole store (5 rows),
    sending every one. The block looks like a manual one's; with automatic_compaction = 1 the
    importer does not read the limit into it (it would name m0001 lost, which was sent)."""
    db = tmp_path / "rl.sqlite"
    w = World()

    async def go() -> None:
        under = SQLiteSession("s", str(db), session_settings=SessionSettings(limit=3))
        w.watch(under)
        client = w.client()
        agent = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client))
        for _ in range(2):
            s = OpenAIResponsesCompactionSession("s", under, client=client, compaction_mode="input",
                                                 should_trigger_compaction=lambda ctx:
                                                 len(ctx["compaction_candidate_items"]) >= 2)
            await Runner.run(agent, f"{w.mark()} question", session=s)
        under.close()

    asyncio.run(go())
    named, lost, unverified = judge(db, w, knobs_file(tmp_path, 3, 2, True, False, automatic=True))
    assert w.compactions == 1 and lost == set() and named == set() and unverified
    with pytest.raises(AssertionError, match="named lost but kept"):  # the knob stated wrongly
        judge(db, w, knobs_file(tmp_path, 3, 2, True, False, automatic=False))


def test_a_wrong_importer_fails_the_same_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Taking every deleted row as summarized (ignoring the limit's window) misses the loss."""
    db = tmp_path / "w.sqlite"
    w = manual(db, random.Random(3), limit=4, threshold=4, turns=[0, 2, 0], pops=False)
    knobs = knobs_file(tmp_path, 4, 4, True, False)

    def everything_shown(self: Any, m: int, shown: set[str], gap_keys: Any) -> str | None:
        return None

    monkeypatch.setattr(oa._Builder, "whole_store", everything_shown)
    with pytest.raises(AssertionError, match="lost but neither named nor unverified"):
        judge(db, w, knobs)


def test_a_wrong_importer_that_ignores_pops_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "p.sqlite"
    w = World()

    async def go() -> None:
        under = SQLiteSession("s", str(db))
        w.watch(under)
        await under.add_items([{"role": "user", "content": f"{w.mark()} q"}, {"role": "assistant", "content":
                                                                             f"{w.mark()} a"}])
        await under.pop_item()
        await under.add_items([{"role": "user", "content": f"{w.mark()} q"}])
        await under.pop_item()
        under.close()

    asyncio.run(go())
    named, lost, _ = judge(db, w, None)
    assert named == lost == {"m0002", "m0003"}
    monkeypatch.setattr(oa._Builder, "removed", lambda self, gap, at, resume: None)
    with pytest.raises(AssertionError, match="lost but neither named nor unverified"):
        judge(db, w, None)


# -- bad input, fleet mode ----------------------------------------------------------------------

def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def small_db(path: Path, session: str = "s") -> None:
    async def go() -> None:
        under = SQLiteSession(session, str(path))
        await under.add_items([{"role": "user", "content": "m0001 q"}, {"role": "assistant", "content": "m0002 a"}])
        under.close()
    asyncio.run(go())


def test_bad_input_is_exit_2_naming_where_and_why(tmp_path: Path) -> None:
    notes = tmp_path / "notes.db"
    notes.write_text("not a database")
    other = tmp_path / "app.sqlite"
    sqlite3.connect(str(other)).execute("CREATE TABLE t (x)").connection.close()
    good = tmp_path / "good.sqlite"
    small_db(good)
    corrupt = tmp_path / "corrupt.sqlite"
    small_db(corrupt)
    with sqlite3.connect(str(corrupt)) as conn:
        conn.execute("UPDATE agent_messages SET message_data = '{\"role\": \"us' WHERE id = 2")
    cases = [
        ((str(notes),), f"{notes}: file: not an SQLite database"),
        ((str(other),), f"{other}: table agent_messages: missing: not an OpenAI Agents SDK SQLiteSession database"),
        ((str(good), "--thread", "gamma"), f"{good}#gamma: session 'gamma': no such session"),
        ((str(corrupt),), f"{corrupt}#s: session 's', row 2: message_data: not JSON"),
    ]
    for args, message in cases:
        for command in (["import", "openai-agents"], ["audit", "--from", "openai-agents"]):
            code, _, err = cli(*command, *args)
            assert code == 2 and err.startswith(message) and "Traceback" not in err, (command, args, err)
    code, out, err = cli("audit", "--from", "openai-agents", str(corrupt), str(good), "--format", "json")
    assert code == 2 and "row 2: message_data: not JSON" in err
    assert [d.get("error") is None for d in json.loads(out)["sessions"]] == [False, True]


def test_fleet_mode_gives_an_error_record_and_judges_the_others(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.sqlite", tmp_path / "bad.sqlite"
    small_db(good)
    bad.write_text("junk")
    results = tmp_path / "results.jsonl"
    code, _, _ = cli("audit", "--from", "openai-agents", str(good), str(bad), "--out", str(results))
    assert code == 2
    records = {r["source"]: r for r in map(json.loads, results.read_text().splitlines())}
    assert "error" not in records[f"{good}#s"] or not records[f"{good}#s"]["error"]
    assert "not an SQLite database" in records[str(bad)]["error"]


def test_import_writes_the_log(tmp_path: Path) -> None:
    db = tmp_path / "two.sqlite"
    small_db(db, "alpha")
    small_db(db, "beta")
    code, _, err = cli("import", "openai-agents", str(db), "--out-dir", str(tmp_path / "logs"))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["two.alpha.jsonl", "two.beta.jsonl"]
    code, _, _ = cli("audit", str(tmp_path / "logs" / "two.alpha.jsonl"))
    assert code == 0


def test_the_user_message_rule_is_the_sdks() -> None:
    from agents.memory.openai_responses_compaction_session import _is_user_message

    items: list[dict[str, Any]] = [
        {"role": "user", "content": "x"}, {"type": "message", "role": "user", "content": []},
        {"type": "message", "role": "assistant", "content": []}, {"role": "user"},
        {"type": "function_call_output", "role": "user", "content": "x"}, {"type": "compaction"}]
    assert [oa._is_user(x) for x in items] == [_is_user_message(x) for x in items]  # type: ignore[arg-type]


def test_a_guarded_session_is_imported_and_says_so(tmp_path: Path) -> None:
    """The adapter's tailguard_state table beside the items: the rows are imported as any, and the
    adopted range's reason points at the guard's own log."""
    from tailguard.adapters.openai_agents import GuardedResponsesCompactionSession
    from tailguard.spill import MemorySpillStore

    db = tmp_path / "guarded.sqlite"
    w = World()

    async def go() -> None:
        under = SQLiteSession("g", str(db), session_settings=SessionSettings(limit=4))
        await under.add_items(turn_items(w, 2) + turn_items(w, 1))
        session = GuardedResponsesCompactionSession("g", under, client=w.client(), compaction_mode="input",
                                                    on_refuse="spill", store=MemorySpillStore(), log=io.StringIO())
        await session.run_compaction({"force": True})
        under.close()

    asyncio.run(go())
    code, out, _ = cli("audit", "--from", "openai-agents", str(db))
    assert code == 0 and "has a row in tailguard_state" in out and "unverified" in out
