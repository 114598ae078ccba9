"""Build hook: ship the conformance kit inside the package.

``spec/`` is the one source of the vectors, their manifest and the JSON Schemas; the wheel
carries a copy under ``tailguard/_spec/`` so that ``tailguard conform`` and ``verify-guard``
work from an installed wheel with no checkout (``tailguard.tooling.resources`` finds them through
``importlib.resources``, else in the checkout). Everything else is in ``pyproject.toml``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# files of spec/ that ship, relative to spec/ (the manifest lists the vector files)
SHIPPED = ("clauses.toml", "SPEC.md", "eventlog.schema.json", "policy.schema.json", "vectors/*.json")


class BuildPyWithSpec(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads spec/ in place
            return
        spec = HERE / "spec"
        if not (spec / "vectors" / "manifest.json").is_file():
            raise SystemExit(f"setup.py: {spec / 'vectors' / 'manifest.json'} is missing; cannot build the kit")
        dest = Path(self.build_lib) / "tailguard" / "_spec"
        for pattern in SHIPPED:
            for src in sorted(spec.glob(pattern)):
                target = dest / src.relative_to(spec)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, target)


setup(cmdclass={"build_py": BuildPyWithSpec})
