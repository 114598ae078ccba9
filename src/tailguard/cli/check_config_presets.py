"""``check-config --explain`` and ``--list-frameworks``: the framework presets (brief 6c).

``--explain`` prints, for each policy with a ``[framework]`` table, the knob values (defaults
marked), the policy the preset translates them into (top-level keys and ``[[stage]]``
tables, as a user would write them by hand), the package versions it was validated on and
its declared differences from the real code. Nothing is checked. Exit 0, or 2 when a file is
unusable (``FILE:LINE: key: reason`` on stderr; the other files are still explained).
"""

from __future__ import annotations

import json
import tomllib
from typing import Any, TextIO

from tailguard.base.safeio import open_regular, printable


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # an inline table (trigger clauses, truncate_args_settings)
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def _default_text(value: Any) -> str:
    """A default as TOML; ``false`` is how a policy writes "off" (TOML has no null), so say so."""
    return "false (off)" if value is False else _toml_value(value)


def list_frameworks(fmt: str, stdout: TextIO) -> int:
    """Every preset, its knobs' defaults and the versions it was validated on."""
    from tailguard.pipeline.presets import PRESETS, find
    from tailguard.pipeline.presets._base import as_toml

    rows: list[dict[str, Any]] = [{"name": p.name, "aliases": list(p.aliases), "summary": p.summary,
             "validated_on": list(p.validated_on), "differential": p.differential, "doc": p.doc,
             "knobs": {k.name: k.default_text or as_toml(k.default) for k in p.knobs}} for p in PRESETS]
    if fmt == "json":
        stdout.write(json.dumps({"frameworks": rows}, indent=2) + "\n")
        return 0
    for row in rows:
        also = f" (also {', '.join(row['aliases'])})" if row["aliases"] else ""
        stdout.write(f"{row['name']}{also}\n  {row['summary']}\n")
        stdout.write(f"  validated on: {', '.join(row['validated_on'])}\n")
        stdout.write(f"  differential test: {row['differential']}\n")
        texts = {k.name: k.default_text for k in find(row["name"]).knobs}  # type: ignore[union-attr]
        knobs = ", ".join(f"{k} = {texts[k] or _default_text(v)}" for k, v in row["knobs"].items())
        stdout.write(f"  knobs (defaults): {knobs}\n  docs: {row['doc']}\n")
    return 0


def _explain_one(path: str) -> dict[str, Any]:
    from tailguard.pipeline.policy import _locate, load_policy
    from tailguard.pipeline.presets import describe, translate

    policy = load_policy(path)  # every error of the whole policy first, as check-config reports it
    with open_regular(path) as f:
        text = f.read().decode("utf-8")
    data = tomllib.loads(text)
    if "framework" not in data:
        return {"file": path, "name": policy.name, "framework": None}
    lines = _locate(text)
    return {"file": path, "name": policy.name, **describe(translate(data, path, lines))}


def _render_text(entry: dict[str, Any]) -> str:
    if entry["framework"] is None:
        return f"{printable(entry['file'])}: no [framework] table: its own stages are checked as written\n"
    defaulted = set(entry["defaulted"])
    out = [f"{printable(entry['file'])}: {entry['framework']} (validated on {', '.join(entry['validated_on'])})",
           "  knobs:"]
    out += [f"    {k} = {_toml_value(v)}{'  # default' if k in defaulted else ''}"
            for k, v in entry["knobs"].items()]
    out.append("  translation into stages (what check-config checks):")
    policy = dict(entry["policy"])
    stages = policy.pop("stage")
    out += [f"    {k} = {_toml_value(v)}" for k, v in policy.items()]
    if not stages:
        out.append("    # no stage: this configuration never compacts")
    for stage in stages:
        out.append("    [[stage]]")
        out += [f"    {k} = {_toml_value(v)}" for k, v in stage.items()]
    out.append(f"  differential test: {entry['differential']}")
    out.append("  known differences from the real code:")
    for d in entry["differences"]:
        out.append(f"    - {d['name']}: {d['reason']}")
        out.append(f"      effect: {d['effect']}")
    return "\n".join(out) + "\n"


def explain(paths: list[str], fmt: str, stdout: TextIO, stderr: TextIO) -> int:
    """Print each policy's translation; exit 2 if any file is unusable."""
    from tailguard.pipeline.policy import PolicyError

    if not paths:
        print("tailguard check-config: --explain needs POLICY.toml files", file=stderr)
        return 2
    entries: list[dict[str, Any]] = []
    code = 0
    for path in paths:
        try:
            entries.append(_explain_one(path))
        except PolicyError as exc:
            print(f"tailguard check-config: {exc}", file=stderr)
            entries.append({"file": exc.file, "error": str(exc), "line": exc.line, "key": exc.key})
            code = 2
    if fmt == "json":
        stdout.write(json.dumps({"translations": entries}, indent=2) + "\n")
    else:
        stdout.write("".join(_render_text(e) for e in entries if "error" not in e))
    return code
