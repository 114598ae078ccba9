"""A framework's SQLite database opened read-only, or a clear :class:`ImportSourceError`.

Shared by the formats whose SOURCE is an SQLite file (``langgraph``, ``openai-agents``): the
file must exist, start with SQLite's magic, open read-only (``mode=ro``: an import never writes),
and hold each expected table with its columns; anything else names the file or table and why.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from collections.abc import Mapping, Sequence

from tailguard.base.errors import ImportSourceError

__all__ = ["open_readonly"]

SQLITE_MAGIC = b"SQLite format 3\x00"


def open_readonly(path: str, tables: Mapping[str, Sequence[str]], expected: str, missing: str,
                  not_ours: str) -> sqlite3.Connection:
    """A read-only connection to ``path`` holding every table of ``tables`` with its columns.

    ``expected`` completes "not an SQLite database (... is expected)"; ``missing`` the reason
    a table is absent ("missing: ..."); ``not_ours`` the reason a column is ("no column C:
    ...")."""
    try:
        with open(path, "rb") as f:
            magic = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise ImportSourceError(path, "file", f"cannot read ({exc.strerror or exc})") from None
    if magic != SQLITE_MAGIC:
        raise ImportSourceError(path, "file", f"not an SQLite database ({expected} is expected)")
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        try:
            for table, columns in tables.items():
                have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
                if not have:
                    raise ImportSourceError(path, f"table {table}", f"missing: {missing}")
                lacking = [c for c in columns if c not in have]
                if lacking:
                    raise ImportSourceError(path, f"table {table}", f"no column {lacking[0]}: {not_ours}")
        except BaseException:
            conn.close()
            raise
    except sqlite3.Error as exc:
        raise ImportSourceError(path, "file", f"unreadable SQLite database ({exc})") from None
    return conn
