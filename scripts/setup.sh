#!/usr/bin/env bash
# make setup: bring a fresh machine to the point where chaoskit runs.
# Idempotent and fast when nothing is missing: each step checks before it acts.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }

# --- system packages, only those missing -------------------------------------
missing=()
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
[ -x /usr/share/zookeeper/bin/zkServer.sh ] || missing+=(zookeeper)
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
# headless Chromium renders the run summary page in its test (tests/reporting)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# the docker backend's registry-free base image (docker/bootstrap-base.sh)
[ -x /usr/sbin/debootstrap ] || command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
# PostgreSQL's server: the storage a foreign broker (tansu) runs over; tests load chaoskit's schema into one
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
    say "missing system packages: ${missing[*]}; install them as root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  say "installing system packages: ${missing[*]}"
  # another apt (unattended upgrades, a second checkout setting up) may hold the lock: wait for it
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- the virtualenv and the project -------------------------------------------
PY=""
for cand in python3.11 python3.12 python3.13 python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    PY=$cand; break
  fi
done
[ -n "$PY" ] || { say "Python >= 3.11 is required; none found on PATH" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $PY"
  "$PY" -m venv .venv
fi

# reinstall only when the install inputs changed (or the last install did not finish)
want=$(cat pyproject.toml setup.py | sha256sum | cut -c1-16)
stamp=.venv/.chaoskit-installed
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! .venv/bin/python -c 'import chaoskit, chaoskit_plugins' 2>/dev/null; then
  say "installing chaoskit (editable) with its test extras into .venv"
  .venv/bin/python -m pip install -q --upgrade pip setuptools wheel
  .venv/bin/python -m pip install -q -e '.[test]'
  echo "$want" > "$stamp"
fi
# the local Spark driver may run a newer JDK than the default java (spark/session.py `driver_java_home`)
driver=$(.venv/bin/python -c 'from pathlib import Path
from chaoskit.checkers.spark.session import driver_java_home, java_major
home = driver_java_home()
print(f"; the local Spark driver: Java {java_major(Path(home))}, {home}" if home else "")' 2>/dev/null || true)
say "ready ($(.venv/bin/python --version), java: $(java -version 2>&1 | head -n1)$driver)"
