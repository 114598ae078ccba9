"""Line-protocol programs that are wrong on purpose, for ``tailguard conform`` tests.

    python tests/impls/variants.py decision-only   # right decisions, never lists clauses
    python tests/impls/variants.py garbage         # answers with something that is not JSON
    python tests/impls/variants.py crash           # exits after the first request
    python tests/impls/variants.py hang            # never answers
"""

from __future__ import annotations

import json
import sys
import time

from tailguard._generated.checker import check_case

MODE = sys.argv[1]

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
    d = check_case(req["case"], req["profile"])
    print(json.dumps({"decision": d.decision, "failed": [], "holes": []}), flush=True)
