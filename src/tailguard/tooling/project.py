"""Where the project's top-level ``spec/`` and ``proofs/`` are.

Order: the ``TAILGUARD_ROOT`` environment variable; else the nearest directory at or
above the current one holding ``spec/clauses.toml``; else the source checkout this
package was installed from (``pip install -e .``). Only ``gen``, ``prove`` and the
tests need it: the runtime checker is generated and carries no reference to spec/.
"""

from __future__ import annotations

import os
from pathlib import Path

from tailguard.base.errors import ProjectNotFound as ProjectNotFound

SPEC_RELATIVE = Path("spec") / "clauses.toml"


def project_root() -> Path:
    env = os.environ.get("TAILGUARD_ROOT")
    if env:
        root = Path(env)
        if not (root / SPEC_RELATIVE).is_file():
            raise ProjectNotFound(f"TAILGUARD_ROOT={env} has no {SPEC_RELATIVE}")
        return root
    here = Path.cwd().resolve()
    for cand in (here, *here.parents):
        if (cand / SPEC_RELATIVE).is_file():
            return cand
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / SPEC_RELATIVE).is_file():
        return checkout
    raise ProjectNotFound(
        f"cannot find {SPEC_RELATIVE}: run from a tailguard checkout or set TAILGUARD_ROOT"
    )


def spec_path() -> Path:
    return project_root() / SPEC_RELATIVE
