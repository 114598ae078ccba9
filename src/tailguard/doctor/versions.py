"""Installed versions against validated ones: a small PEP 440 subset, standard library only.

The adapters' ranges are the framework extras of tailguard's own metadata (pyproject.toml:
"the ranges validated by tools/adapter_matrix.sh"), read back with :mod:`importlib.metadata`
(or from the checkout's pyproject.toml when tailguard runs from a source tree without being
installed). The presets name exact versions (``validated_on``: ``"langchain 1.5.2"``).
Versions compare by their release numbers; a pre-release or dev release sorts before its
release and a post release after it, as PEP 440 orders them (local labels are ignored).
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Requirement", "adapter_ranges", "installed", "normalize", "parse_requirement", "satisfies",
           "version_key"]

_VERSION = re.compile(r"^\s*v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d*))?"
                      r"(?:[-_.]?(post|rev|r)[-_.]?(\d*))?(?:[-_.]?(dev)[-_.]?(\d*))?(?:\+[a-z0-9.]+)?\s*$",
                      re.IGNORECASE)
_PRE_RANK = {"a": -3, "alpha": -3, "b": -2, "beta": -2, "c": -1, "rc": -1, "pre": -1, "preview": -1}
_CLAUSE = re.compile(r"^\s*(===|==|!=|~=|<=|>=|<|>)\s*([^\s,]+)\s*$")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)$")

VersionKey = tuple[tuple[int, ...], int, int, int, int]


def normalize(name: str) -> str:
    """A distribution or extra name as PEP 503 compares them: ``Pydantic_AI`` -> ``pydantic-ai``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def version_key(text: str) -> VersionKey | None:
    """A sortable key of a PEP 440 version, or ``None`` when ``text`` is not one.

    >>> version_key("1.6.0rc1") < version_key("1.6") < version_key("1.6.0.post1")
    True
    """
    m = _VERSION.match(text)
    if m is None:
        return None
    release = tuple(int(x) for x in m.group(1).split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    pre = _PRE_RANK[m.group(2).lower()] if m.group(2) else 0
    pre_n = int(m.group(3) or 0)
    post = int(m.group(5) or 0) + 1 if m.group(4) else 0
    dev = -1 if m.group(6) else 0  # a dev release sorts before the release (or pre) it leads to
    if dev and not pre and not post:
        pre = -4
    return release, pre, pre_n, post, dev * (10**9 - int(m.group(7) or 0))


def _is_pre(key: VersionKey) -> bool:
    return key[1] < 0 or key[4] < 0


def _clause(version: str, key: VersionKey, op: str, bound: str) -> bool:
    if op == "===":
        return version.strip() == bound
    if bound.endswith(".*") and op in ("==", "!="):
        prefix = version_key(bound[:-2])
        if prefix is None:
            raise ValueError(f"not a version: {bound!r}")
        given = bound[:-2].split(".")
        head = tuple(int(x) for x in _VERSION.match(version).group(1).split("."))  # type: ignore[union-attr]
        padded = head + (0,) * max(0, len(given) - len(head))
        same = padded[:len(given)] == tuple(int(x) for x in given)
        return same if op == "==" else not same
    b = version_key(bound)
    if b is None:
        raise ValueError(f"not a version: {bound!r}")
    if op == "==":
        return key == b
    if op == "!=":
        return key != b
    if op == ">=":
        return key >= b
    if op == "<=":
        return key <= b
    if op == ">":
        return key > b and not (key[0] == b[0] and key[3] > 0 and b[3] == 0)
    if op == "<":  # PEP 440: <V excludes V's own pre-releases
        return key < b and not (_is_pre(key) and not _is_pre(b) and key[0] == b[0])
    # ~=X.Y.Z: >= X.Y.Z and == X.Y.*
    parts = bound.split(".")
    if len(parts) < 2:
        raise ValueError(f"~= needs at least two release numbers: {bound!r}")
    return key >= b and _clause(version, key, "==", ".".join(parts[:-1]) + ".*")


def satisfies(version: str, specifier: str) -> bool:
    """Whether ``version`` is in ``specifier`` (``">=1.5,<1.6"``; empty: any version).

    >>> satisfies("1.5.2", ">=1.5,<1.6"), satisfies("1.6.0", ">=1.5,<1.6"), satisfies("1.6.0rc1", "<1.6")
    (True, False, False)
    """
    key = version_key(version)
    if key is None:
        return False
    for part in filter(None, (p.strip() for p in specifier.split(","))):
        m = _CLAUSE.match(part)
        if m is None:
            raise ValueError(f"not a version clause: {part!r}")
        if not _clause(version, key, m.group(1), m.group(2)):
            return False
    return True


@dataclass(frozen=True)
class Requirement:
    """One requirement line of an extra: distribution (normalized) and its specifier."""

    name: str
    specifier: str
    extra: str | None


def parse_requirement(line: str) -> Requirement | None:
    """``langchain<1.6,>=1.5; extra == "langchain"`` -> ``Requirement("langchain", "<1.6,>=1.5",
    "langchain")``; ``None`` for a line that is not a requirement."""
    spec, _, marker = line.partition(";")
    m = _NAME.match(spec)
    if m is None:
        return None
    extra = _EXTRA.search(marker)
    rest = m.group(2).strip()
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]
    return Requirement(normalize(m.group(1)), rest.replace(" ", ""), normalize(extra.group(1)) if extra else None)


def _requirement_lines() -> list[str]:
    try:
        found = importlib.metadata.requires("tailguard")
    except importlib.metadata.PackageNotFoundError:
        found = None
    if found:
        return list(found)
    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return []
    if data.get("project", {}).get("name") != "tailguard":
        return []
    out: list[str] = []
    for extra, lines in data["project"].get("optional-dependencies", {}).items():
        out += [f'{line}; extra == "{extra}"' for line in lines if isinstance(line, str)]
    return out


def adapter_ranges(extras: Iterable[str]) -> dict[str, str]:
    """Distribution -> specifier over the given extras of tailguard (empty when tailguard's
    metadata cannot be read). A distribution in two of the extras keeps both clauses."""
    wanted = {normalize(e) for e in extras}
    out: dict[str, str] = {}
    for line in _requirement_lines():
        req = parse_requirement(line)
        if req is None or req.extra not in wanted or req.name == "tailguard":
            continue
        clauses = [c for c in out.get(req.name, "").split(",") if c]
        clauses += [c for c in req.specifier.split(",") if c and c not in clauses]
        out[req.name] = ",".join(clauses)
    return out


def installed(distributions: Iterable[str]) -> Mapping[str, str | None]:
    """Distribution -> its installed version, or ``None`` when it is not installed."""
    out: dict[str, str | None] = {}
    for name in distributions:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out
