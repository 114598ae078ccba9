"""``--knobs POLICY.toml``: the framework's knobs an importer needs to compute what a record
does not say (brief 10), read from the same ``[framework]`` table ``check-config`` reads.

Only the ``[framework]`` table (validated by the preset, defaults applied as ``check-config``
applies them) and the top-level ``floor`` and ``floor_unit`` are read; every other top-level
key of a check-config policy (``turn_tokens``, ...) is allowed and ignored. Errors are
:class:`PolicyError` (``FILE:LINE: key: reason``), as for ``check-config``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any

from tailguard.base.args import is_int
from tailguard.base.errors import PolicyError
from tailguard.pipeline.policy import _locate, read_policy_text
from tailguard.pipeline.presets import find, translate

__all__ = ["Knobs", "load_knobs"]


@dataclass(frozen=True)
class Knobs:
    """The knobs of one framework (``values``: the preset's, defaults applied), the floor the
    imported log's header states, and the file they came from (None: no ``--knobs`` given, so
    what the record does not say stays unverified)."""

    framework: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    floor: int = 0
    floor_unit: str = "messages"
    file: str | None = None

    @property
    def given(self) -> bool:
        return self.file is not None


def load_knobs(path: str, framework: str, units: tuple[str, ...]) -> Knobs:
    """Read ``path``: its ``[framework]`` table must name ``framework`` (a preset name or alias);
    ``floor_unit`` must be one of ``units`` (what the importer can count)."""
    text = read_policy_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(path, 1, "toml", str(exc)) from None
    lines = _locate(text)
    if "framework" not in data:
        raise PolicyError(path, 1, "framework", f"required table is missing (name = {framework!r} and its knobs, "
                                                "as check-config reads them)")
    want = find(framework)
    table = data["framework"]
    name = table.get("name") if isinstance(table, dict) else None
    got = find(name) if isinstance(name, str) else None
    if want is not None and got is not None and got.name != want.name:
        raise PolicyError(path, lines.get("framework.name", 1), "framework.name",
                          f"these knobs are {got.name!r}'s; this format needs {want.name!r}")
    allowed = {k: v for k, v in data.items() if k in ("framework", "floor", "floor_unit", "name",
                                                       "turn_tokens", "messages_per_turn")}
    tr = translate(allowed, path, lines)
    floor = data.get("floor", 0)
    if not is_int(floor) or floor < 0:
        raise PolicyError(path, lines.get("floor", 1), "floor", f"expected an integer >= 0, got {floor!r}")
    unit = data.get("floor_unit", "messages")
    if unit not in units:
        raise PolicyError(path, lines.get("floor_unit", 1), "floor_unit",
                          f"expected one of {', '.join(units)} (what this importer counts), got {unit!r}")
    return Knobs(tr.preset, dict(tr.values), floor, unit, path)
