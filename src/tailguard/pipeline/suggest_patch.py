"""A fix as edits of the policy file: the line of each knob replaced by ``key = value``
(SARIF ``replacements``), a key the file does not state inserted after its table's header.

:func:`patch` also applies the edits to the file's text and parses the result: the fix is
re-checked on exactly what the edits produce, never on a model of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from tailguard.pipeline.policy import Policy, PolicyError, parse_policy


@dataclass(frozen=True)
class Replacement:
    """Replace the text of line ``line`` (without its newline) by ``text``; ``insert``: put
    ``text`` as a new line after line ``line`` instead."""

    line: int
    text: str
    insert: bool = False

    def sarif(self, source: list[str]) -> dict[str, object]:
        """The SARIF 2.1.0 ``replacement`` (a whole line is ``startLine`` alone; an insertion
        is an empty region at the end of the line before it)."""
        if not self.insert:
            return {"deletedRegion": {"startLine": self.line}, "insertedContent": {"text": self.text}}
        end = len(source[self.line - 1]) + 1 if 0 < self.line <= len(source) else 1
        return {"deletedRegion": {"startLine": self.line, "startColumn": end, "endColumn": end},
                "insertedContent": {"text": "\n" + self.text}}


def toml_value(value: int | str) -> str:
    return json.dumps(value)


def edits(policy: Policy, source: list[str], changes: list[tuple[str, int | str]]) -> \
        list[Replacement] | None:
    """The replacements for ``(key, value)`` changes (``stage.1.trigger``, ``floor``,
    ``turn_tokens`` (its max)), or ``None`` when a key has no line of its own to edit (a
    preset's generated stage)."""
    out: list[Replacement] = []
    for key, value in changes:
        name = key.rpartition(".")[2]
        text = f"turn_tokens = [{policy.turn_min}, {value}]" if key == "turn_tokens" else \
            f"{name} = {toml_value(value)}"
        line = policy.lines.get(key)
        if line is not None and 0 < line <= len(source):
            raw = source[line - 1]
            indent = raw[: len(raw) - len(raw.lstrip())]
            out.append(Replacement(line, indent + text))
            continue
        table = key.rpartition(".")[0]
        header = policy.lines.get(table) if table.startswith("stage.") else None
        if header is None or not 0 < header <= len(source) or "[[stage]]" not in source[header - 1]:
            return None
        out.append(Replacement(header, text, insert=True))
    return out


def apply_edits(source: list[str], replacements: list[Replacement]) -> str:
    """The file text after the edits (insertions after their line, later lines first)."""
    lines = list(source)
    for r in sorted(replacements, key=lambda r: (r.line, r.insert), reverse=True):
        if r.insert:
            lines.insert(r.line, r.text)
        else:
            lines[r.line - 1] = r.text
    return "\n".join(lines) + "\n"


def _normal(policy: Policy) -> Policy:
    return replace(policy, stages=tuple(replace(s, line=0) for s in policy.stages), file="", lines={})


def patch(policy: Policy, expected: Policy, changes: list[tuple[str, int | str]]) -> \
        tuple[list[Replacement], Policy] | str:
    """The edits of ``policy``'s file that give ``expected``, and the policy parsed from the
    edited text; or why there are none (the file cannot be read, a key has no line, or the
    edited text does not parse to ``expected``)."""
    try:
        with open(policy.file, encoding="utf-8") as f:
            source = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot read {policy.file}: {exc}"
    found = edits(policy, source, changes)
    if found is None:
        found = framework_edits(policy, expected, source, changes)
    if found is None:
        return "a knob has no line of its own in the file, and no framework knob gives its value"
    try:
        parsed = parse_policy(apply_edits(source, found), policy.file)
    except PolicyError as exc:
        return f"the edited file does not parse: {exc}"
    if _normal(parsed) != _normal(expected):
        return "the edited file does not give the fixed policy"
    return found, parsed


def framework_edits(policy: Policy, expected: Policy, source: list[str],
                    changes: list[tuple[str, int | str]]) -> list[Replacement] | None:
    """For a preset policy (brief 6c), whose stages come from a ``[framework]`` table: for
    each change without a line of its own, the framework knob whose edit (``knob = value`` or
    ``knob = ["unit", value]``) makes the file translate to the fixed value, found by
    parsing each candidate edit. ``None`` if some change has no such knob."""
    out: list[Replacement] = []
    for key, value in changes:
        direct = edits(policy, source, [(key, value)])
        if direct is not None:
            out.extend(direct)
            continue
        stage, _, name = key.partition(".")[2].partition(".")
        if not stage.isdigit():
            return None
        want = getattr(expected.stages[int(stage)], name)
        hit = None
        for fkey, line in sorted(policy.lines.items(), key=lambda kv: kv[1]):
            if not fkey.startswith("framework.") or fkey == "framework.name" \
                    or not 0 < line <= len(source):
                continue
            knob = fkey.partition(".")[2]
            indent = source[line - 1][: len(source[line - 1]) - len(source[line - 1].lstrip())]
            for text in (f"{knob} = {toml_value(value)}",
                         *(f'{knob} = ["{unit}", {toml_value(value)}]'
                           for unit in ("tokens", "messages", "turns"))):
                trial = [*out, Replacement(line, indent + text)]
                try:
                    parsed = parse_policy(apply_edits(source, trial), policy.file)
                except PolicyError:
                    continue
                if len(parsed.stages) == len(expected.stages) and \
                        getattr(parsed.stages[int(stage)], name, None) == want:
                    hit = trial[-1]
                    break
            if hit is not None:
                break
        if hit is None:
            return None
        out.append(hit)
    return out
