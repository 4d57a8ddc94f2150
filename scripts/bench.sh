#!/usr/bin/env bash
# make bench: run every script in benchmarks/ in turn; each prints its own figures.
set -uo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
scripts=(benchmarks/*.py)
if [ ${#scripts[@]} -eq 0 ]; then
  echo "bench: benchmarks/ has no scripts yet"; exit 1
fi
status=0
for s in "${scripts[@]}"; do
  echo "== $s"
  .venv/bin/python "$s" || { echo "bench: $s failed" >&2; status=1; }
done
exit $status
