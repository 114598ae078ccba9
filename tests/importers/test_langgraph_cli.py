"""``tailguard import langgraph`` and ``tailguard audit --from langgraph``: outputs, fleet mode,
the in-process saver, and bad input (``SOURCE: where: why``, exit 2, never a traceback).

The databases are written by the real LangChain agent (``create_agent`` with the real
``SummarizationMiddleware``, LangChain's fake models from ``tests.adapters.fakes``) under the
real ``SqliteSaver``; ``tests/importers/test_langgraph_real.py`` checks the verdicts against
the markers.
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain.agents import create_agent
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from tailguard.base.errors import ImportSourceError
from tailguard.cli.main import main
from tailguard.importers import langgraph as lg
from tailguard.importers.knobs import Knobs, load_knobs
from tests.adapters.fakes import echo_model, human, marker_summarizer

KNOBS = {"trigger": ("messages", 8), "keep": ("messages", 3), "trim_tokens_to_summarize": 150}
KNOBS_TOML = """name = "imported"
turn_tokens = [1, 8000]

[framework]
name = "langchain.SummarizationMiddleware"
trigger = ["messages", 8]
keep = ["messages", 3]
trim_tokens_to_summarize = 150
"""
THREADS = ("alpha", "beta")


def drive(saver: BaseCheckpointSaver[Any], turns: int = 12) -> None:
    agent = create_agent(echo_model(), tools=[], checkpointer=saver,
                         middleware=[SummarizationMiddleware(marker_summarizer(), **KNOBS)])  # type: ignore[arg-type]
    for thread in THREADS:
        config: Any = {"configurable": {"thread_id": thread}}
        for i in range(turns):
            agent.invoke({"messages": [human(thread, i, chars=200)]}, config)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lg") / "checkpoints.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        drive(SqliteSaver(conn))
    finally:
        conn.close()
    return path


@pytest.fixture
def knobs(tmp_path: Path) -> Path:
    path = tmp_path / "knobs.toml"
    path.write_text(KNOBS_TOML, encoding="utf-8")
    return path


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# -- outputs ----------------------------------------------------------------------------------

def test_import_writes_one_normative_log_per_thread(db: Path, knobs: Path, tmp_path: Path) -> None:
    code, _, err = cli("import", "langgraph", str(db), "--knobs", str(knobs), "--out-dir", str(tmp_path / "logs"))
    assert code == 0, err
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert logs == ["checkpoints.alpha.jsonl", "checkpoints.beta.jsonl"]
    for name in logs:  # the plain audit reads what import wrote
        code, out, err = cli("audit", "--format", "json", str(tmp_path / "logs" / name))
        assert code == 1 and err == "", err
        assert json.loads(out)["violations"] >= 1
    code, out, _ = cli("import", "langgraph", str(db), "--knobs", str(knobs), "--thread", "alpha")
    assert code == 0 and out == (tmp_path / "logs" / "checkpoints.alpha.jsonl").read_text(encoding="utf-8")
    header = json.loads(out.splitlines()[0])
    assert header["event"] == "session" and header["session_id"] == "alpha" and header["unit"] == "messages"


def test_several_threads_need_an_out_dir(db: Path) -> None:
    code, out, err = cli("import", "langgraph", str(db))
    assert code == 2 and out == "" and "give --out-dir DIR" in err


def test_audit_from_names_the_lost_messages(db: Path, knobs: Path, tmp_path: Path) -> None:
    code, out, err = cli("audit", "--from", "langgraph", str(db), "--thread", "alpha", "--knobs", str(knobs))
    assert code == 1 and err == "", err
    assert f"{db}#alpha: lost messages (in no later context, summary or spill), oldest first:" in out
    assert "h-MKalphax000" in out and "compaction refused (no_hole)" in out
    code, out, err = cli("audit", "--from", "langgraph", str(db), "--thread", "alpha", "--knobs", str(knobs),
                         "--format", "json", "--html", str(tmp_path / "alpha.html"))
    assert code == 1 and err == "", err
    doc = json.loads(out)
    assert doc["source"] == f"{db}#alpha" and doc["violations"] >= 1
    lost = {row["id"] for row in doc["lost_messages"]}
    holes = {x for c in doc["compactions"] for lo, hi in c["holes"] for x in range(lo, hi)}
    assert lost and {row["offsets"][0] for row in doc["lost_messages"] if row["judged"]} == holes
    page = (tmp_path / "alpha.html").read_text(encoding="utf-8")
    assert "<html" in page.lower() and "alpha" in page


def test_without_knobs_the_compacted_history_is_unverified(db: Path) -> None:
    code, out, err = cli("audit", "--from", "langgraph", str(db), "--thread", "alpha", "--format", "json")
    assert code == 0 and err == "", err
    doc = json.loads(out)
    assert doc["unverified"] and doc["unverified"][0][0] == 0 and doc["unverified"][0][1] > 0
    assert doc["lost_messages"] == []  # nothing is called lost, nothing is called covered


def test_the_in_process_saver_gives_the_same_log(db: Path, knobs: Path) -> None:
    memory = InMemorySaver()
    drive(memory)
    k = load_knobs(str(knobs), lg.PRESET_NAME, lg.UNITS)
    for thread in THREADS:
        mine = lg.import_saver(memory, thread, k, f"memory#{thread}")
        theirs = lg.import_thread(str(db), thread, k)
        assert mine.lines == theirs.lines and len(mine.lines) > 10
        assert [(n.lo, n.id) for n in mine.units] == [(n.lo, n.id) for n in theirs.units]


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_fleet_mode_judges_every_thread(db: Path, knobs: Path, tmp_path: Path, engine: str) -> None:
    bad = tmp_path / "notes.sqlite"
    bad.write_text("not a database", encoding="utf-8")
    if engine == "dask":
        pytest.importorskip("distributed")
    res = tmp_path / f"{engine}.jsonl"
    code, out, err = cli("audit", "--from", "langgraph", str(db), str(bad), "--knobs", str(knobs),
                         "--engine", engine, "--workers", "2", "--out", str(res))
    assert code == 2, err  # one source unusable, the others still judged
    records = {r["source"]: r for r in map(json.loads, res.read_text(encoding="utf-8").splitlines())}
    assert set(records) == {f"{db}#alpha", f"{db}#beta", str(bad)}
    assert records[f"{db}#alpha"]["refusals"] >= 1 and records[f"{db}#alpha"]["error"] is None
    assert records[str(bad)]["error"] == f"{bad}: file: not an SQLite database (a langgraph-checkpoint-sqlite " \
                                         "SqliteSaver file is expected)"
    assert "3 sessions" in out and "1 unreadable" in out
    for thread in THREADS:  # the fleet judges each thread as the one-session audit does
        one = json.loads(cli("audit", "--from", "langgraph", str(db), "--thread", thread, "--knobs", str(knobs),
                             "--format", "json")[1])
        assert [h["ranges"] for h in records[f"{db}#{thread}"]["holes"]] == \
            [c["holes"] for c in one["compactions"] if c["decision"] == "refuse"]


# -- bad input --------------------------------------------------------------------------------

def _error(*argv: str) -> str:
    code, out, err = cli(*argv)
    assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
    return err.strip()


def test_a_database_that_is_not_a_checkpointers(tmp_path: Path) -> None:
    other = tmp_path / "app.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.commit()
    conn.close()
    assert _error("audit", "--from", "langgraph", str(other)) == (
        f"{other}: table checkpoints: missing: not a LangGraph checkpointer's database (SqliteSaver writes "
        "checkpoints and writes)")
    assert _error("import", "langgraph", str(tmp_path / "absent.sqlite")).startswith(
        f"{tmp_path / 'absent.sqlite'}: file: cannot read (")
    text = tmp_path / "log.jsonl"
    text.write_text('{"event": "session"}\n', encoding="utf-8")
    assert _error("audit", "--from", "langgraph", str(text)) == (
        f"{text}: file: not an SQLite database (a langgraph-checkpoint-sqlite SqliteSaver file is expected)")


def test_a_thread_that_does_not_exist(db: Path) -> None:
    assert _error("audit", "--from", "langgraph", str(db), "--thread", "gamma") == (
        f"{db}#gamma: thread 'gamma': no such thread (no checkpoint of it)")


def test_a_corrupt_or_truncated_database(db: Path, tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.sqlite"
    data = db.read_bytes()
    truncated.write_bytes(data[: len(data) // 3])
    err = _error("audit", "--from", "langgraph", str(truncated), "--thread", "alpha")
    assert err.startswith(f"{truncated}"), err
    garbled = tmp_path / "garbled.sqlite"
    shutil.copy(db, garbled)
    conn = sqlite3.connect(garbled)
    conn.execute("UPDATE checkpoints SET checkpoint = x'c1c1c1c1' WHERE thread_id = 'alpha'")
    conn.commit()
    conn.close()
    err = _error("audit", "--from", "langgraph", str(garbled), "--thread", "alpha")
    assert err.startswith(f"{garbled}#alpha: thread 'alpha': cannot read its checkpoints ("), err
    assert garbled.read_bytes() != b""  # read-only: the source is never written
    code, out, err = cli("audit", "--from", "langgraph", str(garbled), "--out", str(tmp_path / "r.jsonl"))
    assert code == 2 and "1 unreadable" in out and "2 sessions" in out  # beta is still judged


def test_the_source_is_opened_read_only(db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.sqlite"
    shutil.copy(db, copy)
    before = copy.read_bytes()
    assert cli("import", "langgraph", str(copy), "--thread", "beta")[0] == 0
    assert copy.read_bytes() == before  # (SQLite itself may add a -wal/-shm beside a WAL database it reads)


def test_bad_knobs_and_options(db: Path, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('[framework]\nname = "langmem.summarize_messages"\n', encoding="utf-8")
    err = _error("audit", "--from", "langgraph", str(db), "--knobs", str(wrong))
    assert err.startswith(f"tailguard audit: --knobs: {wrong}:2: framework.name: these knobs are"), err
    typo = tmp_path / "typo.toml"
    typo.write_text('[framework]\nname = "langchain.SummarizationMiddleware"\ntrim_tokens = 4\n', encoding="utf-8")
    assert "framework.trim_tokens: unknown knob" in _error("import", "langgraph", str(db), "--knobs", str(typo))
    assert "--thread: only with --from" in _error("audit", str(db), "--thread", "alpha")
    assert "unknown format" in _error("audit", "--from", "crewai", str(db))
    assert "--html: one session only" in _error("audit", "--from", "langgraph", str(db), "--html",
                                                str(tmp_path / "x.html"))


def test_import_source_error_renders_source_where_why() -> None:
    exc = ImportSourceError("db.sqlite#t", "thread 't'", "no such thread")
    assert str(exc) == "db.sqlite#t: thread 't': no such thread" and isinstance(exc, ValueError)
    assert Knobs().given is False


def test_every_thread_of_a_database_is_reported_with_its_lost_messages(db: Path, knobs: Path,
                                                                       tmp_path: Path) -> None:
    bad = tmp_path / "empty.sqlite"
    bad.write_bytes(b"")
    code, out, err = cli("audit", "--from", "langgraph", str(db), str(bad), "--knobs", str(knobs))
    assert code == 2 and err.strip() == f"{bad}: file: not an SQLite database (a langgraph-checkpoint-sqlite " \
                                        "SqliteSaver file is expected)"
    for thread in THREADS:
        assert f"{db}#{thread}: lost messages (in no later context, summary or spill), oldest first:" in out
        assert f"h-MK{thread}x000" in out
    assert out.endswith("tailguard audit: 3 sessions: 0 clean, 2 with refusals, 1 unusable (profile strict)\n")
    code, out, err = cli("audit", "--from", "langgraph", str(db), "--knobs", str(knobs), "--format", "json")
    assert code == 1 and err == ""
    docs = json.loads(out)["sessions"]
    assert [d["source"] for d in docs] == [f"{db}#{t}" for t in THREADS]
    assert all(d["violations"] and d["lost_messages"] for d in docs)


def test_without_the_framework_the_extra_is_named(db: Path) -> None:
    code = ("import sys, io; sys.modules['langchain'] = None\n"
            "from tailguard.cli.main import main\n"
            "err = io.StringIO()\n"
            f"rc = main(['audit', '--from', 'langgraph', {str(db)!r}, '--thread', 'alpha'], stdout=io.StringIO(), "
            "stderr=err)\n"
            "print(rc, err.getvalue())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.startswith("2 tailguard audit: --from langgraph: the langgraph format needs LangChain"), \
        done.stdout + done.stderr
    assert "pip install 'tailguard[langchain]'" in done.stdout


def test_knobs_the_record_disagrees_with_decide_nothing(db: Path, tmp_path: Path) -> None:
    """Knobs that are not the ones the agent ran with (keep 5, not 3) cannot say what its
    summarizers were shown: the history up to the last compaction they disagree with is
    unverified, never judged with the wrong trim."""
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(KNOBS_TOML.replace('keep = ["messages", 3]', 'keep = ["messages", 5]'), encoding="utf-8")
    code, out, err = cli("audit", "--from", "langgraph", str(db), "--thread", "alpha", "--knobs", str(wrong))
    assert code == 0 and err == "", err
    assert "disagree with the record at checkpoint" in out
    assert "with these knobs LangChain keeps 5 of these 8 messages; the record kept 3" in out
    assert "unverified (predate the guard): [0, " in out and "lost messages" not in out


def test_import_to_one_file_and_past_an_unusable_source(db: Path, knobs: Path, tmp_path: Path) -> None:
    log = tmp_path / "beta.jsonl"
    code, out, err = cli("import", "langgraph", str(db), "--thread", "beta", "--knobs", str(knobs), "-o", str(log))
    assert code == 0 and out == "" and f"{db}#beta: " in err and log.read_text(encoding="utf-8").startswith(
        '{"event": "session"')
    missing = tmp_path / "missing.sqlite"
    code, out, err = cli("import", "langgraph", str(missing), str(db), "--knobs", str(knobs),
                         "--out-dir", str(tmp_path / "both"))
    assert code == 2 and f"{missing}: file: cannot read (" in err
    assert sorted(p.name for p in (tmp_path / "both").iterdir()) == ["checkpoints.alpha.jsonl",
                                                                      "checkpoints.beta.jsonl"]
