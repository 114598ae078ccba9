"""Write the per-session records: JSONL (standard library) or Parquet (pyarrow, when installed).

``--out PATH``: an existing directory, or a path ending in ``/``, gets ``results.jsonl``;
a name ending ``.parquet`` is written as Parquet; anything else is a JSONL file. A URL is
written through fsspec. The file is written whole after the audit, records sorted by source.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import IO, Any

from tailguard.audit.fleet.record import Record
from tailguard.audit.fleet.sources import fsspec_module, is_url
from tailguard.base.errors import OutputError as OutputError

__all__ = ["OutputError", "check_writable", "resolve", "write"]

RESULTS = "results.jsonl"


def resolve(out: str) -> str:
    """The file that ``--out out`` names."""
    if out.endswith("/") or (not is_url(out) and os.path.isdir(out)):
        return out.rstrip("/") + "/" + RESULTS
    return out


def is_parquet(path: str) -> bool:
    return path.endswith(".parquet")


def check_writable(path: str) -> None:
    """Fail before the audit rather than after it: a missing parent directory, or no pyarrow."""
    if is_parquet(path):
        import pyarrow  # noqa: F401 - ModuleNotFoundError names the package
    if not is_url(path):
        parent = os.path.dirname(path) or "."
        if not os.path.isdir(parent):
            raise OutputError(f"--out {path}: directory {parent} does not exist")
        if os.path.isdir(path):
            raise OutputError(f"--out {path}: is a directory")


def jsonl(records: Sequence[Record]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def write(path: str, records: Sequence[Record]) -> None:
    """Write ``records`` to ``path``; raises OutputError with the reason."""
    try:
        if is_url(path):
            with fsspec_module().open(path, "wb") as f:
                _write(f, path, records)
        else:
            tmp = f"{path}.tmp{os.getpid()}"
            try:
                with open(tmp, "wb") as f:
                    _write(f, path, records)
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(f"--out {path}: cannot write ({exc.strerror or exc})") from None


def _write(f: IO[bytes], path: str, records: Sequence[Record]) -> None:
    if is_parquet(path):
        _parquet(f, path, records)
    else:
        f.write(jsonl(records).encode())


def _parquet(f: IO[bytes], path: str, records: Sequence[Record]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    hole = pa.struct([("line", pa.int64()), ("clause", pa.string()),
                      ("ranges", pa.list_(pa.list_(pa.int64()))), ("truncated_at", pa.list_(pa.int64())),
                      ("why", pa.string())])
    schema = pa.schema([("source", pa.string()), ("events", pa.int64()), ("compactions", pa.int64()),
                        ("refusals", pa.int64()), ("logged_refusals", pa.int64()),
                        ("holes", pa.list_(hole)), ("unverified", pa.list_(pa.list_(pa.int64()))),
                        ("error", pa.string()), ("warning", pa.string())])
    rows: list[Any] = list(records)
    try:
        table = pa.Table.from_pylist(rows, schema=schema)
    except (OverflowError, pa.ArrowInvalid) as exc:
        raise OutputError(f"--out {path}: cannot write Parquet ({exc}); an offset past 64 bits "
                          "needs JSONL output") from None
    pq.write_table(table, f)
