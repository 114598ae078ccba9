"""The Python reference implementation of the conformance protocol.

``python -m tailguard.conform.reference_impl`` reads one request per line,
``{"profile": ..., "case": {...}}``, and answers each with one line from the generated
checker, ``{"decision": ..., "failed": [...], "holes": [...]}``; a case it cannot read gets
``{"error": "<field>: <reason>"}``: the request is read strictly (:mod:`tailguard.base.jsonstrict`: a
repeated key, ``NaN``, an over-long integer or too deep a nesting is unusable, never decided), so
that ``60.0`` stays a float and is refused as one. It is what ``tailguard conform`` expects of any
implementation, in a dozen lines:
``tailguard conform -- python -m tailguard.conform.reference_impl``.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from tailguard._generated.checker import CaseError, check_case
from tailguard.base import jsonstrict


def answer(line: str) -> str:
    try:
        request = jsonstrict.loads(line)
        if not isinstance(request, dict):
            raise CaseError("request", "expected a JSON object")
        case = request.get("case")
        if not isinstance(case, dict):
            raise CaseError("case", "expected a JSON object")
        decision = check_case(case, str(request.get("profile", "strict")))
    except jsonstrict.DuplicateKeyError as exc:
        return json.dumps({"error": f"{exc.key}: key repeated in one object"})
    except jsonstrict.JSONInputError as exc:
        return json.dumps({"error": f"request: {exc}"})
    except CaseError as exc:
        return json.dumps({"error": str(exc)})
    return json.dumps(decision.to_json())


def serve(stdin: TextIO, stdout: TextIO) -> None:
    for line in stdin:
        if line.strip():
            stdout.write(answer(line) + "\n")
            stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
