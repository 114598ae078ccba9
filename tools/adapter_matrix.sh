#!/usr/bin/env bash
# Run the adapter tests against the oldest and the newest supported framework versions
# (the ranges of the langchain, openai-agents and langmem extras in pyproject.toml), each in a
# fresh venv under ${MATRIX_DIR:-/tmp/tailguard-adapter-matrix}. Needs PyPI; CI does not run it.
# Usage: bash tools/adapter_matrix.sh [oldest|newest]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
root="${MATRIX_DIR:-/tmp/tailguard-adapter-matrix}"
declare -A PINS=(
  [oldest]="langchain==1.5.0 langchain-core==1.8.3 langgraph==1.2.24 langgraph-prebuilt==1.1.3 langmem==0.0.30 openai-agents==0.24.0"
  [newest]="langchain<1.6 langchain-core<2 langgraph<2 langmem<0.0.31 openai-agents<0.25"
)
status=0
for name in "${@:-oldest newest}"; do
  for n in $name; do
    venv="$root/$n"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet -e '.[dev]' ${PINS[$n]}
    printf '\n== %s: %s\n' "$n" "$("$venv/bin/python" -m pip list 2>/dev/null | grep -iE '^(langchain|langgraph|langmem|openai-agents) ' | tr -s ' ' | paste -sd, -)"
    TAILGUARD_REQUIRE_FRAMEWORKS=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/adapters || status=1
  done
done
exit $status
