#!/usr/bin/env bash
# Regenerates tests/golden/<scenario>.csv, the expected `--format csv --no-wall-time` output of
# every scenarios/*.json, from the built CLI (build/sim/trainsim, or $TRAINSIM_BIN). Run it after
# a change that is meant to move the predictions, and review `git diff tests/golden` before
# committing: every changed number is a changed prediction. Scenarios named in
# tests/golden/no-golden.txt (too slow to simulate in the test suite) are skipped.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${TRAINSIM_BIN:-$root/build/sim/trainsim}"
if [[ ! -x "$bin" ]]; then
  echo "update.sh: $bin not found; build first: cmake --build build" >&2
  exit 1
fi
cd "$root"  # scenario paths are given relative to the repository root, as the e2e test does
skipped="$(sed -e 's/#.*//' tests/golden/no-golden.txt | awk 'NF { print $1 }')"
for scenario in scenarios/*.json; do
  name="$(basename "$scenario" .json)"
  if grep -qx "$name" <<< "$skipped"; then
    echo "skipped $name (tests/golden/no-golden.txt)"
    continue
  fi
  "$bin" run "$scenario" --format csv --no-wall-time > "tests/golden/$name.csv.tmp"
  mv "tests/golden/$name.csv.tmp" "tests/golden/$name.csv"
  echo "wrote tests/golden/$name.csv"
done
for golden in tests/golden/*.csv; do
  name="$(basename "$golden" .csv)"
  if [[ ! -f "scenarios/$name.json" ]]; then
    rm -f "$golden"
    echo "removed $golden (no scenarios/$name.json)"
  fi
done
