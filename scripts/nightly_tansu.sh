#!/bin/bash
# `make nightly-tansu`: what a night gives tansu: its build (once per machine), the generic suites
# looped with fresh seeds on SQLite and on three brokers over PostgreSQL, and a search on each.
set -uo pipefail
bash scripts/tansu.sh || exit $?
CHAOSKIT=.venv/bin/chaoskit
SUITES=durability,shared_log,partition_order,group_offsets
HOURS=${CHAOSKIT_NIGHTLY_TANSU_DURATION:-30m}
status=0
$CHAOSKIT nightly --suites "$SUITES" --duration "$HOURS" -- --chaos-broker tansu || status=1
$CHAOSKIT nightly --suites "$SUITES" --duration "$HOURS" -- --chaos-broker tansu --chaos-broker-storage postgres \
  --chaos-brokers 3 || status=1
$CHAOSKIT explore durability --broker tansu --budget 10m --until budget || status=1
$CHAOSKIT explore durability --broker tansu --broker-storage postgres --brokers 3 --budget 10m --until budget || status=1
exit $status
