#!/usr/bin/env bash
# The long run of the reader fuzzers (tests/test_fuzz_readers.py): case files, event logs,
# policies and spill records, over bytes; and the writers (the text audit, the HTML pages of
# audit and check-config, check-config's text, JSON and SARIF) fed hostile strings: control
# characters, bidi overrides, lone surrogates, markup, long ids. CI runs the same tests with
# 60 examples each.
#
#   tools/fuzz.sh            # 20,000 examples per reader (a few minutes on 2 cores)
#   tools/fuzz.sh 200000     # longer
#
# Exit: pytest's (0: every input was read or rejected with an error naming where).
set -euo pipefail
cd "$(dirname "$0")/.."
export TAILGUARD_FUZZ_EXAMPLES="${1:-20000}"
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
echo "fuzz: ${TAILGUARD_FUZZ_EXAMPLES} examples per reader"
exec "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider tests/test_fuzz_readers.py \
    --hypothesis-show-statistics --hypothesis-seed="${FUZZ_SEED:-$RANDOM}"
