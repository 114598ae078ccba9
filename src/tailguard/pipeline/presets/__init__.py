"""Framework presets (brief 6c): a policy names ``[framework] name = ...`` and sets that
framework's own knobs; the preset translates them into the stages of brief 6b.

:func:`expand` is the hook :func:`tailguard.pipeline.policy.parse_policy` calls: it replaces
the ``[framework]`` table by the top-level keys and ``[[stage]]`` tables the preset writes,
which the parser then reads like hand-written ones. Errors are :class:`PolicyError` naming
``FILE:LINE: framework.KNOB``.
"""

from __future__ import annotations

import re
from typing import Any

from tailguard.base.errors import PolicyError
from tailguard.pipeline.presets import (
    autogen,
    deepagents,
    google_adk,
    langchain,
    langmem,
    llamaindex,
    openai_agents,
    openhands,
    pydantic_ai,
    semantic_kernel,
    strands,
)
from tailguard.pipeline.presets._base import Preset, Translation, as_toml, read_knob

__all__ = ["PRESETS", "Preset", "Translation", "expand", "find", "translate"]

PRESETS: tuple[Preset, ...] = (
    langchain.PRESET, deepagents.PRESET, langmem.PRESET, openai_agents.PRESET, openhands.PRESET,
    pydantic_ai.PRESET, google_adk.PRESET, autogen.PRESET, semantic_kernel.TRUNCATION_PRESET,
    semantic_kernel.SUMMARIZATION_PRESET, strands.SLIDING, strands.SUMMARIZING, *llamaindex.PRESETS,
)
_BY_NAME: dict[str, Preset] = {n: p for p in PRESETS for n in (p.name, *p.aliases)}
# top-level keys a preset policy keeps: the session's shape and the floor (brief 6c)
SESSION_KEYS = ("name", "turn_tokens", "messages_per_turn", "floor", "floor_unit", "framework")


def find(name: str) -> Preset | None:
    return _BY_NAME.get(name)


def _header_line(text: str) -> int:
    for number, raw in enumerate(text.splitlines(), start=1):
        if re.match(r"^\s*\[\s*framework\s*\]", raw):
            return number
    return 1


def translate(data: dict[str, Any], file: str, lines: dict[str, int]) -> Translation:
    """Validate the ``[framework]`` table of parsed TOML ``data`` and translate it."""

    def fail(key: str, reason: str) -> PolicyError:
        probe = key
        while probe and probe not in lines:
            probe = probe.rpartition(".")[0]
        return PolicyError(file, lines.get(probe, lines.get("framework", 1)), key, reason)

    table = data["framework"]
    if not isinstance(table, dict):
        raise fail("framework", "expected a [framework] table")
    name = table.get("name")
    if name is None:
        raise fail("framework.name", "required key is missing")
    preset = find(name) if isinstance(name, str) else None
    if preset is None:
        names = ", ".join(p.name for p in PRESETS)
        raise fail("framework.name", f"unknown framework {name!r} (presets: {names})")
    for key in data:
        if key not in SESSION_KEYS and key not in preset.top_keys:
            why = ("its stages come from the preset" if key == "stage"
                   else "set the framework's own knobs under [framework]")
            allowed = ", ".join(k for k in (*SESSION_KEYS, *preset.top_keys) if k != "framework")
            raise fail(key, f"not a top-level key of a {preset.name} policy: {why} "
                            f"(top-level keys here: {allowed})")
    knobs = {k.name: k for k in preset.knobs}
    for key in table:
        if key != "name" and key not in knobs:
            raise fail(f"framework.{key}", f"unknown knob of {preset.name} (knobs: "
                                           f"{', '.join(knobs)})")

    def knob_fail(key: str, reason: str) -> PolicyError:
        return fail(f"framework.{key}" if key in knobs else key, reason)

    window_knob = knobs.get("window")
    window = 0
    if window_knob is not None and "window" in table:
        window = read_knob(window_knob, table["window"], knob_fail, 0) or 0
    values = {k.name: (read_knob(k, table[k.name], knob_fail, window) if k.name in table else k.default)
              for k in preset.knobs}
    given = tuple(k for k in table if k != "name")
    values = preset.resolve(values, given)
    preset.check(values, knob_fail)
    shape = {openhands.PRESET.name: openhands.check_shape, pydantic_ai.PRESET.name: pydantic_ai.check_shape}
    if preset.name in shape:
        mpt = data.get("messages_per_turn", [1, 1])
        if isinstance(mpt, list) and len(mpt) == 2:
            shape[preset.name]((mpt[0], mpt[1]), knob_fail)
    if preset.name == google_adk.PRESET.name:
        google_adk.check_session(values, data, knob_fail)
    if preset.name == autogen.PRESET.name:
        autogen.check_session(values, data, knob_fail)
    if preset.name in (semantic_kernel.TRUNCATION, semantic_kernel.SUMMARIZATION):
        semantic_kernel.check_session(preset.name, values, data, knob_fail)
    if preset.name in (strands.SLIDING.name, strands.SUMMARIZING.name):
        strands.check_session(preset.name, values, data, knob_fail)
    llamaindex.check_session(preset, values, data, knob_fail)
    top, stages = preset.translate(values)
    return Translation(preset.name, values, given, top, stages)


def expand(data: dict[str, Any], file: str, lines: dict[str, int], text: str) -> dict[str, Any]:
    """``data`` with its ``[framework]`` table replaced by the preset's translation; the
    generated stages are located at the ``[framework]`` header for diagnostics."""
    lines.setdefault("framework", _header_line(text))
    tr = translate(data, file, lines)
    out = {k: v for k, v in data.items() if k != "framework"}
    out.update(tr.top)
    out["stage"] = tr.stages
    for i in range(len(tr.stages)):
        lines[f"stage.{i}"] = lines["framework"]
    return out


def describe(tr: Translation) -> dict[str, Any]:
    """The JSON form of a translation (``check-config --explain --format json``)."""
    preset = find(tr.preset)
    assert preset is not None
    return {
        "framework": preset.name,
        "knobs": {k: as_toml(v) for k, v in tr.values.items()},
        "defaulted": [k.name for k in preset.knobs if k.name not in tr.given],
        "policy": {**{k: as_toml(v) for k, v in tr.top.items()}, "stage": tr.stages},
        "validated_on": list(preset.validated_on),
        "differential": preset.differential,
        "differences": [{"name": d.name, "reason": d.reason, "effect": d.effect, "tested": d.tested}
                        for d in preset.differences],
    }
