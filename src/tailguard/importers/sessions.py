"""Which sessions ``tailguard import`` and ``audit --from`` read, and how one is imported.

A SOURCE of format ``langgraph`` is a ``SqliteSaver`` database file; each of its threads (or
the one ``--thread`` names) is a session, named ``PATH#THREAD``. A SOURCE of format
``openhands`` is a conversation directory or a ``persistence_dir`` holding them; each
conversation (or the one ``--thread`` names by its directory name) is a session, named by its
directory. A SOURCE of format ``openai-agents`` is an OpenAI Agents SDK ``SQLiteSession`` database;
each of its sessions (or the one ``--thread`` names) is a session, named ``PATH#SESSION``. A
source that cannot be read is one session whose error says why
(``SOURCE: where: why``), so a fleet audit still judges the others.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tailguard.audit.fleet.sources import Item
from tailguard.base.errors import ImportSourceError
from tailguard.importers import langgraph, openai_agents, openhands
from tailguard.importers.imported import Imported
from tailguard.importers.knobs import Knobs, load_knobs

__all__ = ["FORMATS", "SessionRef", "expand", "fleet_item", "import_session", "knobs_for", "require"]

FORMATS: tuple[str, ...] = (langgraph.FORMAT, openhands.FORMAT, openai_agents.FORMAT)


@dataclass(frozen=True, slots=True)
class SessionRef:
    """One session: ``source`` as reported, the file it is in, its thread; ``error`` when the
    source could not even be listed."""

    source: str
    path: str
    thread: str | None
    error: str | None = None


def knobs_for(fmt: str, path: str | None) -> Knobs:
    """The knobs of ``--knobs PATH`` for format ``fmt`` (no path: none given). Raises
    :class:`tailguard.base.errors.PolicyError`."""
    if path is None:
        return Knobs()
    if fmt == openhands.FORMAT:
        return load_knobs(path, openhands.PRESET_NAME, openhands.UNITS)
    if fmt == openai_agents.FORMAT:
        return load_knobs(path, openai_agents.PRESET_NAME, openai_agents.UNITS)
    return load_knobs(path, langgraph.PRESET_NAME, langgraph.UNITS)


def expand(fmt: str, paths: list[str], thread: str | None) -> list[SessionRef]:
    """The sessions of ``paths`` (every thread, or ``thread`` only), in the order given, each once."""
    out: dict[str, SessionRef] = {}
    if fmt == openhands.FORMAT:
        return _expand_openhands(paths, thread)
    if fmt == openai_agents.FORMAT:
        return _expand_openai_agents(paths, thread)
    for path in paths:
        try:
            conn = langgraph.open_database(path)
        except ImportSourceError as exc:
            out.setdefault(path, SessionRef(path, path, None, str(exc)))
            continue
        try:
            threads = [thread] if thread is not None else langgraph.thread_ids(conn, path)
        except ImportSourceError as exc:
            out.setdefault(path, SessionRef(path, path, None, str(exc)))
            continue
        finally:
            conn.close()
        if not threads:
            out.setdefault(path, SessionRef(path, path, None, f"{path}: table checkpoints: no thread (an empty "
                                                              "checkpointer database)"))
        for t in threads:
            source = f"{path}#{t}"
            out.setdefault(source, SessionRef(source, path, t))
    return list(out.values())


def _expand_openhands(paths: list[str], thread: str | None) -> list[SessionRef]:
    out: dict[str, SessionRef] = {}
    for path in paths:
        try:
            dirs = openhands.conversation_dirs(path)
        except ImportSourceError as exc:
            out.setdefault(path, SessionRef(path, path, None, str(exc)))
            continue
        if thread is not None:
            dirs = [d for d in dirs if os.path.basename(os.path.normpath(d)) == thread]
            if not dirs:
                out.setdefault(path, SessionRef(path, path, None, f"{path}: --thread {thread}: no such "
                                                                  "conversation directory in it"))
        for d in dirs:
            out.setdefault(d, SessionRef(d, d, None))
    return list(out.values())


def _expand_openai_agents(paths: list[str], thread: str | None) -> list[SessionRef]:
    out: dict[str, SessionRef] = {}
    for path in paths:
        try:
            conn = openai_agents.open_database(path)
            try:
                sessions = [thread] if thread is not None else openai_agents.session_ids(conn, path)
            finally:
                conn.close()
        except ImportSourceError as exc:
            out.setdefault(path, SessionRef(path, path, None, str(exc)))
            continue
        if not sessions:
            out.setdefault(path, SessionRef(path, path, None, f"{path}: table {openai_agents.MESSAGES}: no session "
                                                              "(an empty SQLiteSession database)"))
        for t in sessions:
            source = f"{path}#{t}"
            out.setdefault(source, SessionRef(source, path, t))
    return list(out.values())


def require(fmt: str) -> None:
    """Import format ``fmt``'s framework, or raise ImportError naming the extra to install."""
    {openhands.FORMAT: openhands._require, openai_agents.FORMAT: openai_agents._require}.get(fmt, langgraph._require)()


def import_session(fmt: str, ref: SessionRef, knobs: Knobs) -> Imported:
    """Import one session; raises :class:`ImportSourceError` when it cannot be."""
    if ref.error is not None:
        source, _, rest = ref.error.partition(": ")
        where, _, why = rest.partition(": ")
        raise ImportSourceError(source, where, why)
    if fmt == openhands.FORMAT:
        return openhands.import_conversation(ref.path, knobs)
    if fmt == openai_agents.FORMAT:
        assert ref.thread is not None
        return openai_agents.import_session(ref.path, ref.thread, knobs)
    assert ref.thread is not None
    return langgraph.import_thread(ref.path, ref.thread, knobs)


def fleet_item(fmt: str, ref: SessionRef, knobs: Knobs) -> Item:
    """The fleet audit's session: opened (imported) by the worker that audits it."""
    if ref.error is not None:
        return Item(ref.source, ref.path, ref.error)
    if fmt == openhands.FORMAT:
        return Item(ref.source, ref.path, opener=openhands.opener(knobs, ref.source))
    if fmt == openai_agents.FORMAT:
        assert ref.thread is not None
        return Item(ref.source, ref.path, opener=openai_agents.opener(ref.thread, knobs, ref.source))
    assert ref.thread is not None
    return Item(ref.source, ref.path, opener=langgraph.opener(ref.thread, knobs, ref.source),
                judge=langgraph.judge(ref.thread, knobs, ref.source))
