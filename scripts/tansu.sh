#!/bin/bash
# `make tansu`: builds tansu (an Apache-Kafka-compatible broker in Rust) once per machine, pinned,
# with the storage engines chaoskit runs it on, into the user's cache folder that every clone
# shares. Nothing else builds it: `make test` and `make demo` never do.
set -uo pipefail
VERSION=0.6.0
FEATURES=postgres,libsql,dynostore
ROOT="${CHAOSKIT_TANSU_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/chaoskit/tansu-$VERSION}"
BIN="$ROOT/bin/tansu"
LOG="$ROOT/build.log"

if [ -x "$BIN" ] && [ -f "$ROOT/features" ] && [ "$(cat "$ROOT/features")" = "$FEATURES" ]; then
  echo "tansu: $VERSION is built ($BIN)"
  exit 0
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "tansu: cargo is not installed: install Rust's toolchain with rustup, then run make tansu again" >&2
  exit 3
fi
mkdir -p "$ROOT"
echo "tansu: building $VERSION with $FEATURES into $ROOT (once per machine; 15-20 minutes on 2 cores)"
echo "tansu: cargo's output goes to $LOG"
started=$(date +%s)
# the target folder stays in the cache: a second build (another feature set) reuses what the first compiled
CARGO_TARGET_DIR="$ROOT/target" cargo install tansu --version "$VERSION" --locked --features "$FEATURES" \
  --root "$ROOT" >"$LOG" 2>&1 &
build=$!
ticks=0
while kill -0 "$build" 2>/dev/null; do
  sleep 1
  ticks=$((ticks + 1))
  if [ $((ticks % 30)) -eq 0 ]; then  # progress every 30 s
    done_units=$(grep -c '^ *Compiling ' "$LOG" 2>/dev/null || true)
    echo "tansu: $(( $(date +%s) - started )) s, $done_units crates compiled"
  fi
done
if ! wait "$build"; then
  why=$(grep -m1 '^error' "$LOG" || tail -n 1 "$LOG")
  echo "tansu: the build failed ($why); its output is in $LOG: fix what it names and run make tansu again" >&2
  exit 3
fi
echo "$FEATURES" > "$ROOT/features"
echo "tansu: built $VERSION in $(( $(date +%s) - started )) s: $BIN"
