"""Where the conformance kit is: the vectors, their manifest and the JSON Schemas.

An installed wheel carries a copy of ``spec/`` (vectors, manifest, schemas, clauses.toml and
SPEC.md) as package data, ``tailguard/_spec/``, found through :mod:`importlib.resources`;
a checkout or an editable install has none and reads the project's ``spec/`` (see
:mod:`tailguard.tooling.project`). The installed copy wins, so the kit always matches the installed
checker. Standard library only.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from tailguard.base.errors import KitNotFound as KitNotFound

__all__ = ["KitNotFound", "schema_path", "spec_data_dir", "vectors_dir"]


def _installed() -> Path | None:
    root = importlib.resources.files("tailguard") / "_spec"
    # a wheel unpacks to files on disk; a zip import (unsupported) is not a Path
    if isinstance(root, Path) and (root / "vectors" / "manifest.json").is_file():
        return root
    return None


def spec_data_dir() -> Path:
    """The directory holding ``vectors/`` and the ``*.schema.json`` files."""
    found = _installed()
    if found is not None:
        return found
    from tailguard.tooling.project import ProjectNotFound, project_root

    try:
        return project_root() / "spec"
    except ProjectNotFound as exc:
        raise KitNotFound(
            f"the conformance kit is not installed (no tailguard/_spec in the package) and {exc}"
        ) from None


def vectors_dir() -> Path:
    return spec_data_dir() / "vectors"


def schema_path(name: str) -> Path:
    """``schema_path("eventlog")`` -> the path of ``eventlog.schema.json``."""
    return spec_data_dir() / f"{name}.schema.json"
