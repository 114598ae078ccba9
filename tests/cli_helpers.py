"""Call the CLI as a function and capture what it prints."""

from __future__ import annotations

import io

from tailguard.cli.main import main


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()
