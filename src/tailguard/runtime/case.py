"""Read a compaction case (the ``tailguard check`` JSON format) with errors that name where.

Type checking of the fields is the generated checker's (``read_case``), so the
vendored module and the CLI reject exactly the same inputs. The JSON is read strictly
(:mod:`tailguard.base.jsonstrict`): a repeated key, ``NaN``, an over-long integer, deep nesting or
a file over :data:`~tailguard.base.jsonstrict.MAX_CASE_BYTES` is an input error, before any work.
"""

from __future__ import annotations

import sys
from typing import Any

from tailguard._generated.checker import CaseError, read_case
from tailguard.base import jsonstrict
from tailguard.base.errors import InputError as InputError
from tailguard.base.safeio import open_regular, printable


def display_name(path: str) -> str:
    """A file name as it can always be printed: undecodable bytes as ``\\xNN`` escapes, and
    control characters and bidi overrides escaped (:func:`tailguard.base.safeio.printable`)."""
    try:
        text = path.encode("utf-8").decode("utf-8")
    except UnicodeEncodeError:  # surrogate escapes of a non-UTF-8 name
        import os

        try:
            text = os.fsencode(path).decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
            text = path
    return printable(text)


def parse_json_text(text: str, source: str) -> Any:
    try:
        return jsonstrict.loads(text)
    except jsonstrict.JSONInputError as exc:
        where = f"{source}:{exc.line}:{exc.col}" if exc.line else source
        raise InputError(where, exc.reason) from None


def load_case_file(path: str) -> dict[str, Any]:
    """Read ``path`` (``-`` for stdin) and return the typed case fields."""
    limit = jsonstrict.MAX_CASE_BYTES
    source = "<stdin>" if path == "-" else display_name(path)
    try:
        if path == "-":
            binary = getattr(sys.stdin, "buffer", None)
            raw = binary.read(limit + 1) if binary is not None else sys.stdin.read(limit + 1).encode()
        else:
            with open_regular(path) as f:  # a FIFO or device: an error naming it, never a hang
                raw = f.read(limit + 1)
    except FileNotFoundError:
        raise InputError(source, "no such file") from None
    except IsADirectoryError:
        raise InputError(source, "is a directory, not a case file") from None
    except OSError as exc:
        raise InputError(source, exc.strerror or str(exc)) from None
    return case_from_bytes(raw, source)


def case_from_bytes(raw: bytes, source: str) -> dict[str, Any]:
    """The typed case fields of a case file's bytes; :class:`InputError` names where and why."""
    limit = jsonstrict.MAX_CASE_BYTES
    if len(raw) > limit:
        raise InputError(source, f"a case file over the limit of {limit:,} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(source, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return case_from_json(parse_json_text(text, source), source)


def case_from_json(data: Any, source: str = "case") -> dict[str, Any]:
    try:
        return read_case(data)
    except CaseError as exc:
        raise InputError(f"{source}: {exc.field}", exc.reason) from None
