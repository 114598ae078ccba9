"""Read a compaction case (the ``tailguard check`` JSON format) with errors that name where.

Type checking of the fields is the generated checker's (``read_case``), so the
vendored module and the CLI reject exactly the same inputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tailguard._generated.checker import CaseError, read_case


class InputError(ValueError):
    """Unusable input: ``where`` is ``FILE``, ``FILE:LINE[:COL]`` or ``FILE: field``."""

    def __init__(self, where: str, reason: str) -> None:
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason}")


def parse_json_text(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}:{exc.lineno}:{exc.colno}", f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(source, "invalid JSON: nested too deeply") from None


def load_case_file(path: str) -> dict[str, Any]:
    """Read ``path`` (``-`` for stdin) and return the typed case fields."""
    try:
        if path == "-":
            import sys

            text = sys.stdin.read()
            source = "<stdin>"
        else:
            text = Path(path).read_text(encoding="utf-8")
            source = path
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a case file") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    return case_from_json(parse_json_text(text, source), source)


def case_from_json(data: Any, source: str = "case") -> dict[str, Any]:
    try:
        return read_case(data)
    except CaseError as exc:
        raise InputError(f"{source}: {exc.field}", exc.reason) from None
