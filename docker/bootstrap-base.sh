#!/usr/bin/env bash
# Make a local base image without a registry: a Debian bookworm minbase tree from Debian's own
# packages (debootstrap), imported with `docker import`. It carries everything the chaoskit images
# need at run time (Python 3.11 with venv, a JRE, ZooKeeper), so the Dockerfiles built FROM it
# never reach the network.
#
#   docker/bootstrap-base.sh [TAG]        (default chaoskit/bootstrap-base:bookworm)
#   MIRROR=http://deb.debian.org/debian   (environment; where the packages come from)
set -euo pipefail

TAG=${1:-chaoskit/bootstrap-base:bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PACKAGES=python3,python3-venv,default-jre-headless,zookeeper,libslf4j-java

say() { printf 'bootstrap-base: %s\n' "$*" >&2; }

command -v debootstrap >/dev/null 2>&1 || {
  say "debootstrap is not installed: apt-get install -y debootstrap (or run make setup)"; exit 2; }
command -v docker >/dev/null 2>&1 || { say "the docker CLI is not installed"; exit 2; }
[ "$(id -u)" = 0 ] || { say "debootstrap needs root (it makes device nodes and chroots)"; exit 2; }

ROOT=$(mktemp -d /tmp/chaoskit-rootfs.XXXXXX)
trap 'rm -rf "$ROOT"' EXIT

began=$(date +%s)
say "debootstrap bookworm (minbase + $PACKAGES) from $MIRROR into $ROOT"
debootstrap --variant=minbase --include="$PACKAGES" bookworm "$ROOT" "$MIRROR" >"$ROOT.log" 2>&1 || {
  tail -n 30 "$ROOT.log" >&2; say "debootstrap failed; full log in $ROOT.log"; exit 1; }
rm -f "$ROOT.log"
# smaller image: package lists and caches are rebuilt by apt-get update when ever needed
rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/* "$ROOT"/usr/share/doc/* \
       "$ROOT"/usr/share/man/*

say "docker import as $TAG"
tar -C "$ROOT" -c . | docker import \
  --change 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' \
  --message "chaoskit bootstrap-base: debootstrap bookworm minbase + $PACKAGES" - "$TAG" >/dev/null
say "done in $(( $(date +%s) - began ))s: $TAG ($(docker image inspect -f '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}'))"
