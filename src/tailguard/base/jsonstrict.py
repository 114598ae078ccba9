"""Strict JSON reading shared by every tailguard JSON input, and the documented size limits.

Every reader (case files, event-log lines, spill records, conformance answers) decodes with
:func:`loads`, so they agree on what is unusable:

- a key repeated in one object (``{"range": [0, 8], "range": [0, 0]}``): the last one would
  win silently, turning a refusal into an allow;
- ``NaN``, ``Infinity``, ``-Infinity`` (not JSON);
- an integer of more than :data:`MAX_INT_DIGITS` digits;
- nesting deeper than :data:`MAX_DEPTH` arrays and objects;
- text longer than the caller's byte limit (checked by the caller before decoding).

Each is a :class:`JSONInputError` whose ``str`` names the line and column when they are
known. The limits (``spec/SPEC.md``, section "Limits") are checked before the expensive work:
integer length and depth by a scan of the raw text, so a 1 M-digit integer or a 100,000-deep
document costs a linear scan, never a quadratic conversion or a recursion error.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from tailguard.base.errors import DuplicateKeyError as DuplicateKeyError, JSONInputError as JSONInputError

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_CASE_BYTES",
    "MAX_DEPTH",
    "MAX_INTERVALS",
    "MAX_INT_DIGITS",
    "MAX_LINE_BYTES",
    "MAX_POLICY_BYTES",
    "MAX_RECORD_BYTES",
    "DuplicateKeyError",
    "JSONInputError",
    "decode_unchecked",
    "loads",
    "precheck",
    "scanner",
    "too_long",
]

#: digits of one integer (sign not counted); the generated checker enforces the same bound
MAX_INT_DIGITS = 1000
#: arrays and objects nested in one JSON document or TOML policy
MAX_DEPTH = 64
#: intervals in one case (prior_truncations, prior_coverage and spills together)
MAX_INTERVALS = 100_000
#: bytes of one case file
MAX_CASE_BYTES = 4 << 20
#: bytes of one event-log line (its line end included)
MAX_LINE_BYTES = 16 << 20
#: bytes of one policy file
MAX_POLICY_BYTES = 1 << 20
#: bytes of one spill index record
MAX_RECORD_BYTES = 64 << 10
#: bytes of one answer line of an implementation under ``tailguard conform``
MAX_ANSWER_BYTES = 1 << 20


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(f"duplicate key {json.dumps(key)}", key=key)
            seen.add(key)
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (numbers must be finite)")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_hook, parse_constant=_no_constant)
_LONG_DIGITS = re.compile(r"\d{" + str(MAX_INT_DIGITS + 1) + ",}")
# a string, or an unterminated one up to the end: it cannot fail once started, so a scan of
# any text (valid or not) is linear
_STRING = re.compile(r'"(?:[^"\\]|\\.|\\\Z)*(?:"|\Z)', re.DOTALL)
_STEP = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")  # opening +1, closing -1 (signed bytes)
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")


def decode_unchecked(text: str) -> Any:
    """Decode without :func:`precheck` (the caller did it); a duplicate raises
    :class:`DuplicateKeyError` without a position."""
    return _DECODER.decode(text)


def scanner() -> Callable[[str, int], tuple[Any, int]]:
    """The strict decoder's ``scan_once`` (for readers that decode many small texts)."""
    return _DECODER.scan_once  # type: ignore[attr-defined,no-any-return]


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _depth(text: str) -> int:
    """Deepest nesting of arrays and objects outside strings (for valid JSON, exact)."""
    outside = _STRING.sub("", text).encode("utf-8", "surrogatepass")
    steps = outside.translate(_STEP, _NOT_BRACKET)
    return max(accumulate(memoryview(steps).cast("b")), default=0)


def precheck(text: str) -> None:
    """Integer length and nesting depth, from the raw text (linear, before decoding)."""
    match = _LONG_DIGITS.search(text)
    if match is not None:
        # digits inside a string are harmless; only an unquoted run is an integer
        for m in _LONG_DIGITS.finditer(_STRING.sub(lambda s: " " * len(s.group()), text)):
            line, col = _position(text, m.start())
            raise JSONInputError(
                f"an integer of {m.end() - m.start():,} digits (the limit is {MAX_INT_DIGITS:,})", line, col
            )
    if text.count("[") + text.count("{") > MAX_DEPTH:
        depth = _depth(text)
        if depth > MAX_DEPTH:
            raise JSONInputError(f"nested {depth:,} deep (the limit is {MAX_DEPTH})", 1, 1)


def duplicate_position(text: str, key: str) -> tuple[int, int]:
    """Line and column of the second occurrence of ``"key":`` (best effort; (0, 0) if not found)."""
    pattern = re.compile(re.escape(json.dumps(key)) + r"\s*:")
    hits = [m.start() for m in pattern.finditer(text)]
    return _position(text, hits[1]) if len(hits) > 1 else (0, 0)


def loads(text: str) -> Any:
    """Decode one JSON document strictly; :class:`JSONInputError` says what and where."""
    precheck(text)
    try:
        return _DECODER.decode(text)
    except DuplicateKeyError as dup:
        line, col = duplicate_position(text, dup.key or "")
        raise DuplicateKeyError(dup.reason, line, col, dup.key) from None
    except json.JSONDecodeError as exc:
        # "Unterminated string starting at" needs its place said, not left dangling
        where = f" line {exc.lineno}, column {exc.colno}" if exc.msg.endswith(" at") else ""
        raise JSONInputError(f"invalid JSON: {exc.msg}{where}", exc.lineno, exc.colno) from None
    except RecursionError:  # unbalanced brackets can hide the depth from the precheck
        raise JSONInputError(f"nested too deeply (the limit is {MAX_DEPTH})") from None
    except ValueError as exc:  # NaN / Infinity, or an integer the interpreter refuses to convert
        raise JSONInputError(f"invalid JSON: {exc}") from None


def too_long(size: int, limit: int, what: str) -> str:
    """The message for input over a byte limit."""
    return f"{what} of {size:,} bytes is over the limit of {limit:,} bytes"
