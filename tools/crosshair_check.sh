#!/usr/bin/env bash
# Run CrossHair on the PEP 316 contracts of src/tailguard/oracles/contracts.py with a fixed budget.
#
#   tools/crosshair_check.sh                      # CI budget: 3 CPU s per condition
#   CROSSHAIR_TIMEOUT=20 tools/crosshair_check.sh # a deeper (slow) run
#   PYTHON=.venv/bin/python tools/crosshair_check.sh
#
# The checker's, the reference's and the ledger core's contracts run in three parallel
# processes (2 cores). Cost is about conditions x timeout CPU seconds per process (27, 21 and 18 conditions
# each; about 65 CPU s per process at the default 3 s).
#
# Exit: 0 no counterexample found, 1 counterexample (CrossHair exit 1), 2 CrossHair error.
# "Not confirmed" is NOT proof: it only means no counterexample was found in the budget.
set -uo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
TIMEOUT="${CROSSHAIR_TIMEOUT:-3}"
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
M=tailguard.oracles.contracts
CHECKER=("$M.checker_strict_gate" "$M.checker_strict_clauses" "$M.checker_strict_holes" "$M.checker_partitioned_clauses" "$M.checker_seed")
REFERENCE=("$M.reference_strict_gate" "$M.reference_strict_clauses" "$M.reference_strict_holes" "$M.reference_seed_decision")
# the ledger core's decision in endpoint form (no theorem covers it: docs/verification.md)
LEDGER=("$M.ledger_strict_clauses" "$M.ledger_strict_holes" "$M.ledger_seed")

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

run() {  # name targets...
    local name="$1"; shift
    "$PY" -m crosshair check --per_condition_timeout="$TIMEOUT" --report_all "$@" \
        >"$tmp/$name.out" 2>&1
    echo $? >"$tmp/$name.rc"
}

start=$SECONDS
echo "crosshair check: per_condition_timeout=${TIMEOUT}s, contracts of $M (checker, reference and ledger in parallel)"
run checker "${CHECKER[@]}" &
pid1=$!
run reference "${REFERENCE[@]}" &
pid2=$!
run ledger "${LEDGER[@]}" &
pid3=$!
wait "$pid1" "$pid2" "$pid3"

status=0
for name in checker reference ledger; do
    rc="$(cat "$tmp/$name.rc")"
    out="$tmp/$name.out"
    n_nc="$(grep -c 'Not confirmed' "$out" || true)"
    n_ok="$(grep -c 'Confirmed over all paths' "$out" || true)"
    n_err="$(grep -c ': error:' "$out" || true)"
    echo "== $name: crosshair exit $rc; counterexamples/errors: $n_err; confirmed over all paths: $n_ok; not confirmed: $n_nc"
    grep -v 'info: Not confirmed' "$out" | sed 's/^/   /'
    if [ "$rc" = 1 ]; then
        status=1
    elif [ "$rc" != 0 ] && [ "$status" = 0 ]; then
        status=2
    fi
done
echo "elapsed: $((SECONDS - start)) s"
echo "NOTE: 'Not confirmed' means CrossHair found no counterexample within ${TIMEOUT} CPU s per"
echo "      condition. It is NOT a proof; only 'Confirmed over all paths' is exhaustive."
case "$status" in
    0) echo "RESULT: no counterexample found (not a proof)";;
    1) echo "RESULT: COUNTEREXAMPLE found: a contract is violated";;
    *) echo "RESULT: CrossHair ERROR (exit 2): the check did not run properly";;
esac
exit "$status"
