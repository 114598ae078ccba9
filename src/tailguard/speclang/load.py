"""Load and validate ``spec/clauses.toml`` into a :class:`Spec`.

Errors name the file, the line and the clause field at fault.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailguard.base.errors import SpecError as SpecError
from tailguard.base.safeio import open_regular
from tailguard.speclang import ast
from tailguard.speclang.ast import Type
from tailguard.speclang.parse import SpecSyntaxError, parse
from tailguard.speclang.typecheck import SpecTypeError, infer

INPUT_TYPES = ("int", "interval", "intervals", "unit")
SPECIAL_PLACEHOLDERS = ("witness", "holes", "why")
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


@dataclass(frozen=True)
class Input:
    field: str
    symbol: str
    type: Type
    doc: str


@dataclass(frozen=True)
class Define:
    name: str
    source: str
    node: ast.Node
    type: Type
    doc: str


@dataclass(frozen=True)
class Placeholder:
    source: str
    node: ast.Node | None  # None for the special placeholders witness, holes, why


@dataclass(frozen=True)
class Clause:
    id: str
    meaning: str
    holds_source: str
    holds: ast.Node
    message: str
    placeholders: tuple[Placeholder, ...]
    holes_source: str | None = None
    holes: ast.Node | None = None


@dataclass(frozen=True)
class Profile:
    id: str
    doc: str
    report: str  # "first" | "all"
    wellformed: str  # clause id gating the rest, or ""
    clauses: tuple[Clause, ...]
    extends: str = ""  # the profile this one is derived from, or ""
    without: tuple[str, ...] = ()  # the base's clauses it drops

    def clause(self, cid: str) -> Clause:
        for c in self.clauses:
            if c.id == cid:
                return c
        raise KeyError(cid)


#: The names a lineage expression may use, all as sets of offsets: compaction k's C, I and TRU
#: (as in its case), and the unions of the effective coverage of the summaries it saw whole and
#: of those it keeps. (C and I are sets here, so that T14 can prove the rule for any set C ∩ I.)
LINEAGE_NAMES: dict[str, Type] = {"C": "set", "I": "set", "TRU": "set", "SEEN": "set", "KEPT": "set"}
LINEAGE_SAW_DEFAULTS = ("context",)
LINEAGE_KEEPS_DEFAULTS = ("none",)


@dataclass(frozen=True)
class Lineage:
    """Summary lineage (spec 1.1): ``E(S_k)`` and a compaction's prior coverage, as sets over
    :data:`LINEAGE_NAMES`; ``saw_default``/``keeps_default``: what an unstated ``saw``/``keeps`` means."""

    effective_coverage_source: str
    effective_coverage: ast.Node
    effective_coverage_doc: str
    prior_coverage_source: str
    prior_coverage: ast.Node
    prior_coverage_doc: str
    saw_default: str
    keeps_default: str


@dataclass(frozen=True)
class Spec:
    version: str
    units: tuple[str, ...]
    inputs: tuple[Input, ...]
    defines: tuple[Define, ...]
    profiles: tuple[Profile, ...]
    path: str
    sha256: str
    lineage: Lineage | None = None

    def profile(self, pid: str) -> Profile:
        for p in self.profiles:
            if p.id == pid:
                return p
        raise KeyError(pid)

    @property
    def env(self) -> dict[str, Type]:
        env: dict[str, Type] = {i.symbol: i.type for i in self.inputs}
        env.update({d.name: d.type for d in self.defines})
        return env


class _Ctx:
    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text

    def line_of(self, needle: str) -> int:
        quoted = '"' + needle.replace("\\", "\\\\") + '"'  # as a TOML basic string
        idx = self.text.find(quoted)
        if idx < 0:
            idx = self.text.find(needle)
        return self.text.count("\n", 0, idx) + 1 if idx >= 0 else 1

    def fail(self, where: str, needle: str, msg: str) -> SpecError:
        return SpecError(f"{self.path}:{self.line_of(needle)}: {where}: {msg}")

    def string(self, table: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
        value = table.get(key, None if required else "")
        if not isinstance(value, str):
            raise self.fail(where, where.split(".")[-1], f"{key!r} must be a string")
        return value

    def expr(self, source: str, env: dict[str, Type], where: str, want: set[str]) -> tuple[ast.Node, Type]:
        try:
            node = parse(source)
            typ = infer(node, env)
        except SpecSyntaxError as exc:
            raise self.fail(where, source, f"{exc.msg}{_at(exc.msg)} {exc.pos + 1} of {source!r}") from None
        except SpecTypeError as exc:
            raise self.fail(where, source, f"{exc.msg}{_at(exc.msg)} {exc.pos + 1} of {source!r}") from None
        if typ not in want:
            raise self.fail(where, source, f"expected {' or '.join(sorted(want))}, got {typ}")
        return node, typ


def _at(msg: str) -> str:
    return " column" if msg.endswith(" at") else " at column"


def load_spec(path: str | Path) -> Spec:
    """Parse the spec file at ``path``; raise :class:`SpecError` when it is unusable."""
    p = Path(path)
    with open_regular(p) as f:  # a FIFO or device: an error naming it, never a hang
        raw = f.read()
    text = raw.decode("utf-8")
    ctx = _Ctx(str(path), text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: {exc}") from None

    version = ctx.string(data, "spec_version", "spec_version")
    units = data.get("units")
    if not (isinstance(units, list) and units and all(isinstance(u, str) for u in units)):
        raise ctx.fail("units", "units", "must be a non-empty list of strings")

    env: dict[str, Type] = {}
    inputs: list[Input] = []
    for raw_in in data.get("input", []):
        fld = ctx.string(raw_in, "field", "input")
        where = f"input {fld}"
        sym = ctx.string(raw_in, "symbol", where)
        typ = ctx.string(raw_in, "type", where)
        if typ not in INPUT_TYPES:
            raise ctx.fail(where, fld, f"type must be one of {INPUT_TYPES}, not {typ!r}")
        if sym in env:
            raise ctx.fail(where, fld, f"symbol {sym!r} defined twice")
        env[sym] = typ  # type: ignore[assignment]
        inputs.append(Input(fld, sym, typ, ctx.string(raw_in, "doc", where, required=False)))  # type: ignore[arg-type]

    defines: list[Define] = []
    for raw_def in data.get("define", []):
        name = ctx.string(raw_def, "name", "define")
        where = f"define {name}"
        if name in env:
            raise ctx.fail(where, name, f"{name!r} already defined")
        src = ctx.string(raw_def, "expr", where)
        node, typ = ctx.expr(src, env, where, {"int", "interval", "set", "bool"})
        env[name] = typ
        defines.append(Define(name, src, node, typ, ctx.string(raw_def, "doc", where, required=False)))

    profiles: list[Profile] = []
    for raw_p in data.get("profile", []):
        pid = ctx.string(raw_p, "id", "profile")
        if any(p.id == pid for p in profiles):
            raise ctx.fail(f"profile {pid}", pid, "duplicate profile id")
        if "extends" in raw_p:
            profiles.append(_derived_profile(ctx, raw_p, pid, profiles))
            continue
        report = ctx.string(raw_p, "report", f"profile {pid}")
        if report not in ("first", "all"):
            raise ctx.fail(f"profile {pid}", pid, "report must be 'first' or 'all'")
        clauses: list[Clause] = []
        for raw_c in raw_p.get("clause", []):
            cid = ctx.string(raw_c, "id", f"profile {pid}")
            where = f"clause {pid}.{cid}"
            if any(c.id == cid for c in clauses):
                raise ctx.fail(where, cid, "duplicate clause id")
            holds_src = ctx.string(raw_c, "holds", where)
            holds, _ = ctx.expr(holds_src, env, f"{where}.holds", {"bool"})
            holes_src = raw_c.get("holes")
            holes = None
            if holes_src is not None:
                if not isinstance(holes_src, str):
                    raise ctx.fail(where, cid, "'holes' must be a string")
                holes, _ = ctx.expr(holes_src, env, f"{where}.holes", {"set", "interval"})
            # `{ t }` means `{t}`: written back stripped, so every renderer sees one spelling
            message = _PLACEHOLDER.sub(lambda m: "{" + m.group(1).strip() + "}",
                                       ctx.string(raw_c, "message", where))
            placeholders: list[Placeholder] = []
            for m in _PLACEHOLDER.finditer(message):
                src = m.group(1).strip()
                if src in SPECIAL_PLACEHOLDERS:
                    placeholders.append(Placeholder(src, None))
                    continue
                node, _ = ctx.expr(src, env, f"{where}.message", {"int", "interval", "set", "unit"})
                placeholders.append(Placeholder(src, node))
            clauses.append(
                Clause(cid, ctx.string(raw_c, "meaning", where), holds_src, holds, message,
                       tuple(placeholders), holes_src, holes)
            )
        gate = ctx.string(raw_p, "wellformed", f"profile {pid}", required=False)
        if gate and not any(c.id == gate for c in clauses):
            raise ctx.fail(f"profile {pid}", pid, f"wellformed clause {gate!r} is not in the profile")
        profiles.append(Profile(pid, ctx.string(raw_p, "doc", f"profile {pid}", required=False),
                                report, gate, tuple(clauses)))
    if not profiles:
        raise SpecError(f"{path}: no [[profile]] defined")
    lineage = _lineage(ctx, data["lineage"], env) if "lineage" in data else None
    return Spec(version, tuple(units), tuple(inputs), tuple(defines), tuple(profiles), str(path),
                hashlib.sha256(raw).hexdigest(), lineage)


def _lineage(ctx: _Ctx, raw: object, env: dict[str, Type]) -> Lineage:
    """The ``[lineage]`` table: two set expressions over :data:`LINEAGE_NAMES` only (what a
    compaction's lineage depends on), and the defaults."""
    if not isinstance(raw, dict):
        raise ctx.fail("lineage", "[lineage]", "must be a table")
    for name in ("C", "I", "TRU"):
        if name not in env:
            raise ctx.fail("lineage", "[lineage]", f"the case has no {name}, which lineage expressions name")
    exprs: dict[str, tuple[str, ast.Node]] = {}
    for key in ("effective_coverage", "prior_coverage"):
        where = f"lineage.{key}"
        src = ctx.string(raw, key, where)
        node, _ = ctx.expr(src, dict(LINEAGE_NAMES), where, {"set", "interval"})
        exprs[key] = (src, node)  # typed in LINEAGE_NAMES alone: any other name is an error
    saw = ctx.string(raw, "saw_default", "lineage.saw_default")
    if saw not in LINEAGE_SAW_DEFAULTS:
        raise ctx.fail("lineage.saw_default", "saw_default", f"must be one of {LINEAGE_SAW_DEFAULTS}, not {saw!r}")
    keeps = ctx.string(raw, "keeps_default", "lineage.keeps_default")
    if keeps not in LINEAGE_KEEPS_DEFAULTS:
        raise ctx.fail("lineage.keeps_default", "keeps_default",
                       f"must be one of {LINEAGE_KEEPS_DEFAULTS}, not {keeps!r}")
    return Lineage(exprs["effective_coverage"][0], exprs["effective_coverage"][1],
                   ctx.string(raw, "effective_coverage_doc", "lineage", required=False),
                   exprs["prior_coverage"][0], exprs["prior_coverage"][1],
                   ctx.string(raw, "prior_coverage_doc", "lineage", required=False), saw, keeps)


def _derived_profile(ctx: _Ctx, raw_p: dict[str, Any], pid: str, earlier: list[Profile]) -> Profile:
    """A profile defined as an earlier one minus some of its clauses (``extends``/``without``).

    The clauses are the base profile's own objects, in the base's order: a clause is defined
    once, whichever profiles use it. Report mode and well-formedness gate are the base's.
    """
    where = f"profile {pid}"
    base_id = ctx.string(raw_p, "extends", where)
    base = next((p for p in earlier if p.id == base_id), None)
    if base is None:
        raise ctx.fail(where, pid, f"extends {base_id!r}, which is not a profile defined before it")
    without = raw_p.get("without", [])
    if not (isinstance(without, list) and all(isinstance(w, str) for w in without)):
        raise ctx.fail(where, pid, "'without' must be a list of clause ids")
    for cid in without:
        if not any(c.id == cid for c in base.clauses):
            raise ctx.fail(where, pid, f"without {cid!r}: profile {base_id!r} has no such clause")
        if cid == base.wellformed:
            raise ctx.fail(where, pid, f"without {cid!r}: the well-formedness gate cannot be dropped")
    for key in ("report", "wellformed", "clause"):
        if key in raw_p:
            raise ctx.fail(where, pid, f"{key!r} is inherited from {base_id!r} and cannot be set here")
    clauses = tuple(c for c in base.clauses if c.id not in without)
    return Profile(pid, ctx.string(raw_p, "doc", where, required=False), base.report, base.wellformed,
                   clauses, base_id, tuple(without))
