"""Line-protocol programs that are wrong on purpose, for ``tailguard conform`` tests.

    python tests/impls/variants.py decision-only   # right decisions, never lists clauses
    python tests/impls/variants.py garbage         # answers with something that is not JSON
    python tests/impls/variants.py crash           # exits after the first request
    python tests/impls/variants.py hang            # never answers
    python tests/impls/variants.py int32           # every integer wraps to signed 32 bits
    python tests/impls/variants.py int64           # every integer wraps to signed 64 bits
    python tests/impls/variants.py double          # every integer rounded to a double, never declined
    python tests/impls/variants.py lenient-json    # JSON.parse-like: 60.0 is 60, the last repeated key wins
"""

from __future__ import annotations

import json
import sys
import time

from tailguard._generated.checker import CaseError, check_case
from tailguard.conform.reference_impl import answer

MODE = sys.argv[1]
WIDTHS = {"int32": 32, "int64": 64}


def wrap(value, bits):
    """Every integer in ``value`` as a signed two's-complement integer of ``bits`` bits."""
    if type(value) is int:
        return (value + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    if isinstance(value, list):
        return [wrap(v, bits) for v in value]
    if isinstance(value, dict):
        return {k: wrap(v, bits) for k, v in value.items()}
    return value


def as_double(value):
    if type(value) is int:
        return int(float(value))
    if isinstance(value, list):
        return [as_double(v) for v in value]
    if isinstance(value, dict):
        return {k: as_double(v) for k, v in value.items()}
    return value


def integral(value):
    """JSON.parse: a float that is integral is the integer."""
    if type(value) is float and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [integral(v) for v in value]
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    return value

for line in sys.stdin:
    req = json.loads(line)
    if MODE == "crash":
        sys.stderr.write("boom: cannot handle this\n")
        sys.exit(3)
    if MODE == "hang":
        time.sleep(60)
    if MODE == "garbage":
        print("ALLOW!", flush=True)
        continue
    if MODE in (*WIDTHS, "double", "lenient-json"):
        case = req["case"]  # json.loads: the last repeated key wins, NaN is read
        try:
            case = wrap(case, WIDTHS[MODE]) if MODE in WIDTHS else as_double(case) if MODE == "double" \
                else integral(case)
            print(json.dumps(check_case(case, req["profile"]).to_json()), flush=True)
        except (CaseError, OverflowError, ValueError) as exc:
            print(json.dumps({"error": f"case: {exc}"}), flush=True)
        continue
    full = json.loads(answer(line))  # decision-only: the reference implementation's answer, clauses dropped
    print(json.dumps({"decision": full["decision"], "failed": [], "holes": []} if "decision" in full else full),
          flush=True)
