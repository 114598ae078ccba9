"""Read the conformance vectors (``spec/vectors/``), verified against ``manifest.json``."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailguard.base import jsonstrict
from tailguard.base.errors import VectorError as VectorError
from tailguard.base.safeio import open_regular

FORMAT = "tailguard-vectors/2"


@dataclass(frozen=True)
class Vector:
    """One vector. ``text`` is the exact JSON text of the case (a vector's ``case_text``, else its
    ``case`` re-encoded); ``case`` is the decoded case, or None when the text is not strictly
    decodable (a repeated key, NaN, over a limit). ``expected[profile]`` is a decision
    ``{"decision", "failed", "holes"}`` or ``{"unusable": [names]}``: an error answer whose text
    starts with one of the names. ``declinable`` (a reason) allows an error instead of the decision."""

    id: str
    exercises: dict[str, Any]
    case: Any
    expected: dict[str, dict[str, Any]]
    text: str = ""
    declinable: str | None = None

    @property
    def decides(self) -> bool:
        """Whether every profile's expected answer is a decision (not unusable input)."""
        return all("decision" in e for e in self.expected.values())

    def describe(self) -> str:
        """One line: what this vector exercises."""
        ex = self.exercises
        kind = ex.get("kind", "?")
        if kind == "boundary":
            return (f"boundary of {ex['profile']}.{ex['clause']} at {ex['coordinate']} "
                    f"(step {ex['step']:+d}, {ex['side']})")
        if kind in ("alone", "combination"):
            return f"{ex['profile']} clauses failing {kind}: {', '.join(ex['clauses'])}"
        if kind == "malformed":
            return f"malformed input: violates {ex['violates']}"
        if kind == "example":
            return f"worked example {ex['source']}"
        if kind == "random":
            return f"random corpus (seed {ex['seed']}): {ex['signature']}"
        if kind == "unusable":
            return f"unusable input: {ex['field']} is {ex['violates']}" if ex["type"] != "object" else \
                f"unusable input: {ex['violates']}"
        if kind == "extra_keys":
            return f"extra keys are ignored: {ex['violates']}"
        if kind == "integers":
            return f"integers at {ex['magnitude']}: {ex['what']}"
        return str(kind)

    def group(self) -> str:
        """Coarser than :meth:`describe`: what a summary of mismatches counts by."""
        ex = self.exercises
        kind = ex.get("kind", "?")
        if kind == "boundary":
            return f"boundary of {ex['profile']}.{ex['clause']}"
        if kind == "alone":
            return f"{ex['profile']}.{ex['clauses'][0]} failing alone"
        if kind == "combination":
            return f"{ex['profile']} clauses failing in combination"
        if kind == "unusable":
            return f"unusable input ({ex['type']})"
        if kind == "integers":
            return f"integers at {ex['magnitude']}"
        names = {"malformed": "malformed input", "example": "worked examples", "random": "random corpus",
                 "extra_keys": "extra keys"}
        return names.get(str(kind), str(kind))


@dataclass(frozen=True)
class VectorSet:
    directory: Path
    spec_version: str
    sha256: str
    vectors: tuple[Vector, ...]


def default_directory() -> Path:
    """The installed kit's vectors, else the checkout's ``spec/vectors`` (:mod:`tailguard.tooling.resources`)."""
    from tailguard.tooling.resources import KitNotFound, vectors_dir

    try:
        return vectors_dir()
    except KitNotFound as exc:
        raise VectorError(str(exc)) from None


def _vector(v: dict[str, Any]) -> Vector:
    if "case_text" in v:
        text = v["case_text"]
        try:
            case = jsonstrict.loads(text)
        except jsonstrict.JSONInputError:
            case = None
    else:
        case = v["case"]
        text = json.dumps(case, separators=(",", ":"))
    return Vector(v["id"], v["exercises"], case, v["expected"], text, v.get("declinable"))


def load_vectors(directory: Path | None = None) -> VectorSet:
    """Every vector, in manifest order; :class:`VectorError` when a file does not match the manifest."""
    d = default_directory() if directory is None else directory
    try:
        manifest = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise VectorError(f"{d / 'manifest.json'}: {exc}") from None
    if manifest.get("format") != FORMAT:
        raise VectorError(f"{d / 'manifest.json'}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    digest = hashlib.sha256()
    vectors: list[Vector] = []
    for entry in manifest["files"]:
        path = d / entry["path"]
        try:
            with open_regular(path) as f:  # a FIFO or device: an error naming it, never a hang
                data = f.read()
        except OSError as exc:
            raise VectorError(f"{path}: {exc}") from None
        digest.update(data)
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise VectorError(f"{path}: sha256 differs from manifest.json; regenerate with `tailguard gen`")
        doc = json.loads(data)
        for v in doc["vectors"]:
            vectors.append(_vector(v))
    if digest.hexdigest() != manifest["sha256"] or len(vectors) != manifest["count"]:
        raise VectorError(f"{d}: vector files do not match manifest.json (count or sha256)")
    return VectorSet(d, manifest["spec_version"], manifest["sha256"], tuple(vectors))
