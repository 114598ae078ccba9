"""Render the conformance vectors (``spec/vectors/``) from the spec.

The vectors are language-neutral JSON: every file holds a group of cases, each with the
clause or boundary it exercises and the expected decision of both profiles. The groups:

- ``examples``: the worked examples of SPEC.md (``examples/cases/``);
- ``boundaries``: for each clause and each integer of a case that the clause reads, a pair
  of cases one step apart, found with z3: *inside* (every clause of the profile holds) and
  *outside* (only this clause fails), so an off-by-one at any endpoint flips one of them;
- ``combinations``: every clause failing alone, and every combination that can fail together
  (the ones that cannot are listed in the manifest as ``impossible``);
- ``malformed``: each conjunct of ``well_formed`` violated alone;
- ``random``: a corpus drawn with a fixed seed, one case per distinct outcome, minimized;
- ``inputs``: unusable input (expected answer: an error naming the field) and extra keys
  (ignored), as exact JSON text (:mod:`tailguard.backends.vector_inputs`);
- ``integers``: integers from 2^31 - 1 to 1,000 digits, exact answers.

The search runs in a fresh interpreter (:mod:`tailguard.backends.vector_search`), so z3
always starts from the same state and the output is deterministic; the result is cached
per process by the hash of everything it depends on. ``manifest.json`` records the spec
version, the count and a sha256 over the group files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tailguard.speclang.load import Spec

GENERATOR = "tailguard.backends.vectors"
FORMAT = "tailguard-vectors/2"
DIRECTORY = "spec/vectors"
GROUPS: dict[str, str] = {
    "examples": "The worked examples of SPEC.md section 7 (examples/cases/).",
    "boundaries": ("For each clause and each integer it reads: a case just inside (every clause of the "
                   "profile holds) and the same case one step away, just outside (only this clause fails)."),
    "combinations": "Every clause failing alone, and every combination of clauses that can fail together.",
    "malformed": "Each conjunct of strict well_formed violated alone: the guard must fail closed.",
    "random": "A random corpus (fixed seed), one case per distinct outcome of both profiles, minimized.",
    "inputs": ("Unusable input, as exact JSON text (case_text): each field of each type made unreadable (a float "
               "or exponent form of the same integer, a boolean, a string, null, nesting missing or added, a "
               "missing field), NaN, over-limit integers and nesting, repeated keys, a case that is not an object. "
               "The answer is an error naming one of the names in expected.unusable; extra keys are ignored."),
    "integers": ("Integers from 2^31-1 to 1,000 digits (exact answers), shaped so that wrapping at 32 or 64 bits or "
                 "rounding to a double changes the answer. 'declinable' vectors hold an integer beyond "
                 "±(2^53-1): an implementation may answer an error there (a declared limit), never another decision."),
}

_CACHE: dict[str, dict[str, Any]] = {}


def examples_root(root: Path) -> Path:
    """Where the worked examples are: ``root/examples/cases``, else this checkout's (like the spec)."""
    here = root / "examples" / "cases"
    if here.is_dir():
        return root
    return Path(__file__).resolve().parents[3]


def _inputs_key(spec: Spec, root: Path) -> str:
    """A hash of everything the vectors depend on: spec, generator code, examples, z3 version."""
    from importlib.metadata import PackageNotFoundError, version

    h = hashlib.sha256(spec.sha256.encode())
    here = Path(__file__).resolve().parent
    for name in ("vector_search.py", "vector_inputs.py", "vectors.py", "python_render.py", "z3_encode.py"):
        h.update((here / name).read_bytes())
    h.update((here.parent / "base" / "intervals.py").read_bytes())
    h.update((here.parent / "base" / "jsonstrict.py").read_bytes())
    for path in sorted((examples_root(root) / "examples" / "cases").glob("*.json")):
        h.update(path.name.encode() + path.read_bytes())
    with contextlib.suppress(PackageNotFoundError):
        h.update(version("z3-solver").encode())
    return h.hexdigest()


def _cache_dir() -> Path | None:
    if os.environ.get("TAILGUARD_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tailguard" / "vectors"


def search(spec: Spec, root: Path) -> dict[str, Any]:
    """Every group of vectors for ``spec``: computed in a fresh interpreter, cached in memory and on
    disk by the hash of its inputs (the output is a function of them; ``TAILGUARD_NO_CACHE=1`` skips
    the disk cache). ``gen --check`` still compares every committed file with this result."""
    key = _inputs_key(spec, root)
    if key in _CACHE:
        return _CACHE[key]
    cache = _cache_dir()
    cached = cache / f"{key}.json" if cache is not None else None
    if cached is not None and cached.is_file():
        try:
            _CACHE[key] = json.loads(cached.read_text(encoding="utf-8"))
            return _CACHE[key]
        except (OSError, json.JSONDecodeError):
            pass
    import z3  # noqa: F401  (fail here, cleanly reported, rather than inside the child process)

    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "tailguard.backends.vector_search", str(Path(spec.path).resolve()),
         str(examples_root(root))],
        capture_output=True, text=True, env=env, check=False,
    )
    if proc.returncode != 0:
        raise ValueError(f"vector search failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    _CACHE[key] = result
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(proc.stdout, encoding="utf-8")
            tmp.replace(cached)
        except OSError:
            pass  # a cache that cannot be written is only slower
    return result


def _header(spec: Spec) -> dict[str, Any]:
    return {
        "_generated": (f"GENERATED FILE, do not edit. Source: spec/clauses.toml (spec {spec.version}, sha256 "
                       f"{spec.sha256[:16]}); generator: {GENERATOR}. Regenerate with `tailguard gen`; "
                       "`tailguard gen --check` fails when stale."),
        "format": FORMAT,
        "spec_version": spec.version,
        "spec_sha256": spec.sha256,
    }


def render_group(spec: Spec, root: Path, group: str) -> str:
    """One group file: a header, then one vector per line (diffs stay readable)."""
    vectors = search(spec, root)[group]
    head = {**_header(spec), "group": group, "description": GROUPS[group], "count": len(vectors)}
    lines = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    body = ",\n".join("  " + json.dumps(v, ensure_ascii=False) for v in vectors)
    return f'{lines},\n "vectors": [\n{body}\n ]\n}}\n'


def render_manifest(spec: Spec, root: Path) -> str:
    files = []
    digest = hashlib.sha256()
    total = 0
    for group in GROUPS:
        data = render_group(spec, root, group).encode("utf-8")
        digest.update(data)
        count = len(search(spec, root)[group])
        total += count
        files.append({"path": f"{group}.json", "group": group, "count": count,
                      "sha256": hashlib.sha256(data).hexdigest()})
    from tailguard.backends import vector_search as vs

    manifest = {
        **_header(spec),
        "count": total,
        "sha256": digest.hexdigest(),
        "sha256_of": "the bytes of the files below, concatenated in this order",
        "files": files,
        "impossible_combinations": search(spec, root)["_impossible"],
        "impossible_malformed": search(spec, root)["_impossible_malformed"],
        "search": {"integer_range": [vs.LOW, vs.HIGH], "list_bound": vs.LIST_BOUND,
                   "random_seed": vs.RANDOM_SEED, "random_draws": vs.RANDOM_DRAWS},
    }
    return json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"


def vector_targets() -> list[tuple[str, Any, str]]:
    """(path, render(spec, root), what) for every file under ``spec/vectors/``."""
    out: list[tuple[str, Any, str]] = []
    for group in GROUPS:
        out.append((f"{DIRECTORY}/{group}.json",
                    lambda s, r, g=group: render_group(s, r, g), f"conformance vectors: {group}"))
    out.append((f"{DIRECTORY}/manifest.json", render_manifest, "conformance vector manifest"))
    return out
