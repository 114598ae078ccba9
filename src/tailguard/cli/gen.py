"""``tailguard gen [--check]``: regenerate every file derived from spec/.

``--check`` writes nothing and exits 1 naming each stale file, with the fix.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from tailguard.speclang.load import SpecError, load_spec
from tailguard.tooling.project import ProjectNotFound, project_root, spec_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 every derived file written or up to date, 1 stale (--check), "
                     "2 no spec/ or a spec error")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if any derived file is stale")


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from tailguard.backends.targets import targets

    try:
        root = project_root()
        spec = load_spec(spec_path())
    except (ProjectNotFound, SpecError) as exc:
        print(f"tailguard gen: {exc}", file=stderr)
        return 2
    stale: list[str] = []
    for target in targets():
        path = root / target.path
        try:
            new = target.render(spec, root)
        except (OSError, ValueError) as exc:
            print(f"tailguard gen: {target.path}: {exc}", file=stderr)
            return 2
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old == new:
            continue
        stale.append(target.path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new, encoding="utf-8")
            print(f"wrote {target.path} ({target.what})", file=stdout)
    if args.check:
        if stale:
            for p in stale:
                print(f"stale: {p}", file=stderr)
            print("derived files are out of date with spec/; run `tailguard gen` and commit", file=stderr)
            return 1
        print(f"all {len(targets())} derived files are up to date", file=stdout)
    elif not stale:
        print("nothing to do: every derived file is up to date", file=stdout)
    return 0
