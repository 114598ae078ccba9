"""The reference implementation of the ledger conformance protocol (:mod:`tailguard.conform.ledger`).

``python -m tailguard.conform.ledger_impl`` reads a request line ``{"profile", "id", "lines": K}``,
then the K lines of an event log, and answers with the audit's judgment of every compaction
(:func:`tailguard.audit.replay.replay`, what ``tailguard audit`` reports), one line each, then
``{"end": true, "unverified": [...]}``; an unusable log gets ``{"error": "<field>: <reason>",
"line": L}``. ``tailguard conform --ledger -- python -m tailguard.conform.ledger_impl``.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from tailguard.audit.replay import Verdict, replay
from tailguard.base.errors import EventLogError
from tailguard.runtime.eventlog import Adopt, iter_events


def answer(profile: str, lines: list[str]) -> list[str]:
    out: list[str] = []
    unverified: list[list[int]] = []
    try:
        for item in replay(iter_events(lines, "<request>"), profile=profile):
            if isinstance(item, Verdict):
                out.append(json.dumps(item.to_json()))
            elif isinstance(item, Adopt) and item.hi > 0:
                unverified.append([0, item.hi])
    except EventLogError as exc:
        return [json.dumps({"error": f"{exc.field}: {exc.reason}", "line": exc.line})]
    return [*out, json.dumps({"end": True, "unverified": unverified})]


def serve(stdin: TextIO, stdout: TextIO) -> None:
    while True:
        head = stdin.readline()
        if not head:
            return
        if not head.strip():
            continue
        try:
            request = json.loads(head)
            count, profile = int(request["lines"]), str(request.get("profile", "strict"))
        except (ValueError, KeyError, TypeError) as exc:
            stdout.write(json.dumps({"error": f"request: {exc}"}) + "\n")
            stdout.flush()
            continue
        lines = [stdin.readline() for _ in range(count)]
        stdout.write("".join(line + "\n" for line in answer(profile, lines)))
        stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
