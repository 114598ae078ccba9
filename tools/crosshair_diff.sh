#!/usr/bin/env bash
# crosshair diffbehavior between the generated checker and the naive reference, both
# profiles, through the uncontracted flat wrappers of src/tailguard/oracles/contracts.py.
#
#   tools/crosshair_diff.sh                        # 20 CPU s per comparison
#   CROSSHAIR_TIMEOUT=120 tools/crosshair_diff.sh  # deeper
#
# Exit: 0 no difference found (NOT a proof of equivalence), 1 a difference, 2 error.
set -uo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
TIMEOUT="${CROSSHAIR_TIMEOUT:-20}"
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
M=tailguard.oracles.contracts

status=0
for profile in strict seed; do
    echo "== diffbehavior $M.checker_${profile}_flat vs $M.reference_${profile}_flat" \
         "(per_condition_timeout=${TIMEOUT}s)"
    "$PY" -m crosshair diffbehavior --per_condition_timeout="$TIMEOUT" \
        "$M.checker_${profile}_flat" "$M.reference_${profile}_flat"
    rc=$?
    echo "   crosshair exit $rc"
    if [ "$rc" = 1 ]; then
        status=1
    elif [ "$rc" != 0 ] && [ "$status" = 0 ]; then
        status=2
    fi
done
echo "NOTE: 'no differences found' is NOT a proof of equivalence: it covers only the paths"
echo "      explored within the budget."
exit "$status"
