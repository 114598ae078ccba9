#!/usr/bin/env bash
# Mutation testing as a gate (docs/verification.md, "Mutation testing").
#
#   tools/mutation.sh          the full run: every subset tests/mutation/*.toml in turn (audit,
#                              checker, ci, harness, ledger, render), each with its own lean
#                              test selection and gate; exit 1 when any subset fails
#   tools/mutation.sh --ci     the CI-sized subset of tests/mutation/ci.toml (.ci/test runs it)
#   tools/mutation.sh --subset FILE   only_mutate and the test selection from FILE (like ci.toml)
#   tools/mutation.sh --keep   any of these, keeping the scratch copy (its path is printed)
#   tools/mutation.sh --subset FILE --only PATTERN   only the mutants whose names match PATTERN
#                              (fnmatch, repeatable: `tailguard.runtime.ledger.*`, `*x__render_profile__*`),
#                              to re-run the functions a change touched; the gate then judges those
#
# mutmut 3 runs in a scratch copy of the checkout (tracked and untracked, not ignored, files), so
# mutants/ never lands in the work tree. mutmut exits 0 even when mutants survive; the gate is
# tests/mutation/gate.py: every survivor must be killed or listed in tests/mutation/equivalent*.toml
# with its reason. One child process, at low priority: the machine is shared. Exit 0 pass, 1 fail.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=full keep=0 subset="" only=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --ci) mode=ci subset="$root/tests/mutation/ci.toml" ;;
    --subset) mode=subset subset=$(realpath "${2:?--subset needs a file}"); shift ;;
    --keep) keep=1 ;;
    --only) only+=("${2:?--only needs a pattern}"); shift ;;
    *) echo "usage: tools/mutation.sh [--ci | --subset FILE [--only PATTERN]...] [--keep]" >&2; exit 2 ;;
  esac
  shift
done
if [[ ${#only[@]} -gt 0 && $mode == full ]]; then echo "mutation.sh: --only needs --subset FILE" >&2; exit 2; fi
if [[ $mode == full ]]; then
  failed=()
  for f in tests/mutation/*.toml; do
    [[ $(basename "$f") == equivalent* ]] && continue
    echo "=== mutation subset $f ($(date -u +%H:%M:%S))"
    args=(--subset "$f"); [[ $keep == 1 ]] && args+=(--keep)
    bash "$0" "${args[@]}" || failed+=("$f")
  done
  if [[ ${#failed[@]} -gt 0 ]]; then echo "mutation.sh: the gate failed for: ${failed[*]}" >&2; exit 1; fi
  echo "mutation.sh: every subset passed its gate"; exit 0
fi
command -v mutmut >/dev/null || { echo "mutation.sh: mutmut is not installed (pip install -e '.[dev]')" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tailguard-mutation.XXXXXX")
cleanup() { if [[ $keep == 0 ]]; then rm -rf "$work"; else echo "scratch copy kept: $work"; fi; }
trap cleanup EXIT
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [[ -e "$f" ]] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$work"
if [[ -n $subset ]]; then
  python - "$work/pyproject.toml" "$subset" <<'PY'
import json, re, sys, tomllib
path, subset = sys.argv[1], tomllib.load(open(sys.argv[2], "rb"))
text = open(path, encoding="utf-8").read()
for key in ("only_mutate", "pytest_add_cli_args_test_selection"):
    pattern = re.compile(rf"^{key} = \[.*?^\]\n", re.S | re.M)
    assert pattern.search(text), f"[tool.mutmut] has no {key} array"
    text = pattern.sub(f"{key} = {json.dumps(subset[key])}\n", text, count=1)
open(path, "w", encoding="utf-8").write(text)
PY
fi
modules=$(cd "$work" && python -c '
import tomllib
cfg = tomllib.load(open("pyproject.toml", "rb"))["tool"]["mutmut"]
print(" ".join(p.removeprefix("src/").removesuffix(".py").replace("/", ".") for p in cfg["only_mutate"]))')
echo "mutation ($mode): $modules${only[*]+ (only ${only[*]})}"
start=$(date +%s)
(cd "$work" && nice -n 15 mutmut run --max-children 1 ${only[@]+"${only[@]}"} >"$work/mutmut-run.log" 2>&1) || {
  tail -40 "$work/mutmut-run.log"; echo "mutation.sh: mutmut run failed" >&2; exit 1; }
echo "mutmut run: $(( $(date +%s) - start )) s"
(cd "$work" && mutmut export-cicd-stats >/dev/null && cat mutants/mutmut-cicd-stats.json | tr -d '\n ' && echo)
if [[ ${#only[@]} -gt 0 ]]; then  # stale entries are judged for the modules the patterns name only
  modules=$(python -c '
import sys
mods, pats = sys.argv[1].split(), sys.argv[2:]
print(" ".join(m for m in mods if any(p.startswith(m + ".") for p in pats)))' "$modules" "${only[@]}")
fi
cd "$work" && python "$root/tests/mutation/gate.py" --run-modules $modules
