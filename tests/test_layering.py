"""The layout is the architecture: rooms on floors, no import upward, no cycle, stdlib runtime.

``tests/layering.toml`` orders the rooms of ``src/tailguard/`` (lowest floor first) and
``docs/architecture.md`` lists them in a table; these tests hold the code, the file and the page
to each other. Each check is a function over source texts, so the tests also feed it an upward
import added on purpose and see it fail.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
import types
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "tailguard"
LAYERS = tomllib.loads((ROOT / "tests" / "layering.toml").read_text(encoding="utf-8"))
ORDER: list[str] = LAYERS["order"]
FACE_MODULES = {"tailguard", "tailguard.__main__", "tailguard.ledger"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def room_of(module: str) -> str:
    """``tailguard.runtime.ledger`` -> ``runtime``; the package face -> ``face``."""
    if module in FACE_MODULES:
        return "face"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "face"


def sources() -> dict[str, str]:
    return {module_name(p): p.read_text(encoding="utf-8") for p in sorted(PKG.rglob("*.py"))}


def imports_of(module: str, text: str, known: Iterable[str]) -> list[tuple[int, str, tuple[str, ...]]]:
    """Every tailguard import of ``module`` (module level or inside functions): (line, target, names).

    ``from tailguard.x import y`` targets ``tailguard.x.y`` when that is a module, else ``tailguard.x``.
    """
    mods = set(known)
    out: list[tuple[int, str, tuple[str, ...]]] = []
    package = module if module in mods and _is_package(module) else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, ()) for a in node.names if a.name.split(".")[0] == "tailguard"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "tailguard":
                continue
            names = tuple(a.name for a in node.names)
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in mods]
            if subs:
                out += [(node.lineno, s, ()) for s in subs]
                rest = tuple(n for n in names if f"{target}.{n}" not in mods)
                if rest:
                    out.append((node.lineno, target, rest))
            else:
                out.append((node.lineno, target, names))
    return out


def _is_package(module: str) -> bool:
    return (PKG.parent / module.replace(".", "/") / "__init__.py").is_file()


def upward_imports(texts: Mapping[str, str]) -> list[str]:
    """One line per import that reaches a higher floor (or the face, beyond its metadata)."""
    rank = {room: i for i, room in enumerate(ORDER)}
    bad: list[str] = []
    for module, text in sorted(texts.items()):
        src = room_of(module)
        if src not in rank:
            bad.append(f"{module}: room {src!r} is not in tests/layering.toml")
            continue
        for line, target, names in imports_of(module, text, texts):
            dst = room_of(target)
            if target == "tailguard" and src != "face":
                extra = sorted(set(names) - set(LAYERS["face_names"]))
                if extra:
                    bad.append(f"{module}:{line}: imports {', '.join(extra)} from the package face")
                continue
            if dst not in rank:
                bad.append(f"{module}:{line}: imports {target}, whose room {dst!r} is not in tests/layering.toml")
            elif rank[dst] > rank[src]:
                bad.append(f"{module}:{line}: {src} imports {target} ({dst} is a higher floor)")
    return bad


def cycles(texts: Mapping[str, str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), sorted."""
    graph = {m: sorted({t for _, t, _ in imports_of(m, s, texts) if t in texts and t != m}) for m, s in texts.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:  # other tests (deep TOML in check-config) depend on the interpreter's default
        sys.setrecursionlimit(limit)
    return sorted(found)


def test_every_room_is_listed_and_exists() -> None:
    rooms = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert rooms == set(ORDER) - {"face"}, "tests/layering.toml and src/tailguard/ disagree"
    assert len(ORDER) == len(set(ORDER))


def test_no_module_is_loose_at_the_package_top() -> None:
    loose = {p.name for p in PKG.glob("*.py")}
    assert loose == {"__init__.py", "__main__.py", "ledger.py"}


def test_every_room_states_its_role() -> None:
    for room in set(ORDER) - {"face"}:
        doc = ast.get_docstring(ast.parse((PKG / room / "__init__.py").read_text(encoding="utf-8")))
        assert doc, f"src/tailguard/{room}/__init__.py has no docstring stating the room's role"


def test_no_import_reaches_a_higher_floor() -> None:
    assert upward_imports(sources()) == []


def test_an_upward_import_added_on_purpose_is_caught() -> None:
    texts = sources()
    texts["tailguard.runtime.ledger"] += "\nfrom tailguard.cli.main import main\n"
    texts["tailguard.base.intervals"] += "\ndef f():\n    from tailguard.runtime import ledger\n"
    texts["tailguard.spill._files"] += "\nfrom tailguard import check\n"
    found = upward_imports(texts)
    assert any(s.startswith("tailguard.runtime.ledger:") and "tailguard.cli.main" in s for s in found), found
    assert any(s.startswith("tailguard.base.intervals:") and "tailguard.runtime.ledger" in s for s in found), found
    assert any(s.startswith("tailguard.spill._files:") and "check from the package face" in s for s in found), found
    assert len(found) == 3


def test_no_import_cycle() -> None:
    assert cycles(sources()) == []


def test_a_cycle_added_on_purpose_is_caught() -> None:
    texts = sources()
    texts["tailguard.pipeline.presets._base"] += "\ndef f():\n    from tailguard.pipeline.policy import parse_policy\n"
    assert any("tailguard.pipeline.policy" in c and "tailguard.pipeline.presets._base" in c
               for c in cycles(texts))


def test_the_architecture_page_lists_the_rooms_in_order() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \d+ \| `([a-z_]+)/?` \|", page, re.M)
    assert rows == list(reversed(ORDER)), "docs/architecture.md's table is not tests/layering.toml's order"
    for room in LAYERS["stdlib_only"]:
        assert re.search(rf"^\| \d+ \| `{room}/?` \|[^\n]*\| yes \|", page, re.M), room


_STDLIB_ONLY = r'''
import importlib, importlib.abc, pkgutil, sys
ALLOWED = set(sys.stdlib_module_names) | {"tailguard"}

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in ALLOWED:
            raise ImportError(f"not standard library: {name}")
        return None

sys.meta_path.insert(0, Refuse())
try:
    import hypothesis  # the finder is live: a non-stdlib package is refused
except ImportError:
    pass
else:
    raise SystemExit("the refusing finder let hypothesis in")
import tailguard
names = []
for room in ROOMS:
    pkg = importlib.import_module(f"tailguard.{room}")
    names.append(pkg.__name__)
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"tailguard.{room}."):
        names.append(info.name)
for name in names:
    importlib.import_module(name)
for name in ["tailguard.ledger", "tailguard"]:
    importlib.import_module(name)
from tailguard import Ledger, TailguardError  # the lazy names of the face
print(len(names))
'''


def test_runtime_rooms_import_only_the_standard_library() -> None:
    rooms = LAYERS["stdlib_only"]
    proc = subprocess.run([sys.executable, "-c", f"ROOMS = {rooms!r}\n" + _STDLIB_ONLY],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    expected = sum(1 for room in rooms for p in (PKG / room).rglob("*.py"))
    assert int(proc.stdout) == expected


def test_a_non_stdlib_import_in_the_runtime_is_caught(tmp_path: Path) -> None:
    """The same subprocess, over a copy of the package whose ledger imports z3, fails."""
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(PKG, copy / "tailguard", ignore=shutil.ignore_patterns("__pycache__"))
    ledger = copy / "tailguard" / "runtime" / "ledger.py"
    ledger.write_text(ledger.read_text(encoding="utf-8") + "\nimport z3\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(copy)!r})\n"
                           f"ROOMS = {LAYERS['stdlib_only']!r}\n" + _STDLIB_ONLY],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert proc.returncode != 0 and "not standard library: z3" in proc.stderr, proc.stderr


@pytest.mark.parametrize("name", ["Ledger", "TailguardError", "check"])
def test_the_face_is_exactly_all(name: str) -> None:
    import tailguard

    for n in tailguard.__all__:
        getattr(tailguard, n)
    public = {k for k, v in vars(tailguard).items() if not k.startswith("_") and not isinstance(v, types.ModuleType)}
    assert public == set(tailguard.__all__)
    assert name in tailguard.__all__
    assert sorted(dir(tailguard)) == sorted([*tailguard.__all__, "__version__"])


def test_the_stable_paths_keep_working() -> None:
    import tailguard
    import tailguard.ledger
    from tailguard import check
    from tailguard.runtime.ledger import Ledger

    assert tailguard.ledger.Ledger is Ledger is tailguard.Ledger
    assert check is tailguard.check
    assert issubclass(tailguard.UnrecoverableCompactionError, tailguard.TailguardError)
    assert issubclass(tailguard.LogFailedError, RuntimeError)
