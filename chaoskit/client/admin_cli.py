"""`chaoskit admin`: the proposals' topic changes against a running cluster.

    chaoskit admin expand TOPIC --to N --bootstrap-server HOST:PORT
    chaoskit admin shrink TOPIC --to N [--delay-ms D | --immediate] --bootstrap-server HOST:PORT
    chaoskit admin describe TOPIC [--json] --bootstrap-server HOST:PORT

expand grows a topic (KIP-253: older partitions' leader epochs are bumped, new ones record them).
shrink marks the partitions from N up ReadOnly; without --delay-ms each is removed once it is empty
(KIP-253: consumed away by retention or DeleteRecords), with it D ms after it became ReadOnly, data
or not (KIP-694), with --immediate right away (KIP-694's immediate_delete). describe prints the
counts, each partition's leader, epoch, mode and epoch maps. Before expand and shrink the command
prints KIP-694's warnings where they apply (client/admin_warnings.py) to stderr and goes on.
A refusal, or no broker answering, prints the broker's error or the address tried and exits 3, as
a bad argument does (1 and 2 are kept for verdicts).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from chaoskit.run.options import BAD_INPUT, one_line
from chaoskit.client import admin_warnings
from chaoskit.client.admin import AdminClient, AdminError, TopicDescription, parse_bootstrap
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.wire_client import WireError


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a partition count (a whole number >= 1)")
    return int(text)


def _delay(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a delay in ms (a whole number >= 0)")
    return int(text)


def _bootstrap(text: str) -> str:
    try:
        parse_bootstrap(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def register(sub: Any) -> None:
    admin = sub.add_parser("admin", help="expand, shrink or describe a topic of a running cluster",
                           description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = admin.add_subparsers(dest="admin_command", metavar="ACTION", required=True)
    for name, what in (("expand", "grow a topic to N partitions (KIP-253)"),
                       ("shrink", "shrink a topic to N partitions (KIP-253 / KIP-694)"),
                       ("describe", "counts, modes, leader epochs and epoch maps of a topic")):
        p = actions.add_parser(name, help=what)
        p.add_argument("topic")
        p.add_argument("--bootstrap-server", required=True, type=_bootstrap, metavar="HOST:PORT[,HOST:PORT]")
        if name == "describe":
            p.add_argument("--json", action="store_true", help="print one JSON object")
        else:
            p.add_argument("--to", required=True, type=_count, metavar="N", help="the new partition count")
        if name == "shrink":
            when = p.add_mutually_exclusive_group()
            when.add_argument("--delay-ms", type=_delay, metavar="D",
                              help="remove the partitions D ms after they become ReadOnly (KIP-694); "
                                   "default: once each is empty (KIP-253)")
            when.add_argument("--immediate", action="store_true",
                              help="remove the partitions right away (KIP-694's immediate_delete)")
        p.set_defaults(func=run)


def warn(lines: list[str]) -> None:
    for line in lines:
        print(line, file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    try:
        with AdminClient(args.bootstrap_server) as admin:
            if args.admin_command == "describe":
                described = admin.describe(args.topic)
                print(json.dumps(described.to_json()) if args.json else render(described))
                return 0
            warn(admin_warnings.topic_warnings(admin.topic(args.topic)))
            if args.admin_command == "expand":
                info = admin.expand(args.topic, args.to)
                print(f"{args.topic}: {len(info.partitions)} partitions "
                      f"(undeleted {info.undeleted_partition_count}, initial {info.initial_partition_count})")
            else:
                shrink(admin, args)
    except (AdminError, WireError) as e:
        print(one_line(f"chaoskit admin {args.admin_command}: {e}"), file=sys.stderr)
        return BAD_INPUT
    return 0


def shrink(admin: AdminClient, args: argparse.Namespace) -> None:
    missing = admin_warnings.feature_missing(admin.api_versions())
    warn([admin_warnings.FEATURE] if missing else [])
    try:
        modes = admin.shrink(args.topic, args.to, args.delay_ms, args.immediate)
    except AdminError as e:
        if e.code == ErrorCode.TOPIC_DELETION_DISABLED and not missing:
            warn([admin_warnings.FEATURE])
        raise
    when = ("right away" if args.immediate else "once empty" if args.delay_ms is None
            else f"after {args.delay_ms} ms")
    print(f"{args.topic}: undeleted partitions now {args.to}; marked for deletion ({when}): "
          + ", ".join(f"{p} {m.label}" for p, m in sorted(modes.items())))


def render(d: TopicDescription) -> str:
    t = d.topic
    lines = [f"topic {t.name}: {len(t.partitions)} partitions, initial_partition_count "
             f"{_or_dash(t.initial_partition_count)}, undeleted_partition_count {_or_dash(t.undeleted_partition_count)}",
             f"{'partition':>9}  {'leader':>6}  {'epoch':>5}  {'mode':<9}  {'isr':<10}  epoch maps"]
    for p, i in sorted(t.partitions.items()):
        maps = d.epoch_maps.get(p)
        notes = []
        if maps and maps.after_creation:
            notes.append(f"leaderEpochAfterCreation {_map(maps.after_creation)}")
        if maps and maps.before_deletion:
            notes.append(f"leaderEpochBeforeDeletion {_map(maps.before_deletion)}")
        isr = ",".join(map(str, i.isr))
        lines.append(f"{p:>9}  {i.leader:>6}  {i.leader_epoch:>5}  {i.mode.label:<9}  {isr:<10}  {'; '.join(notes)}")
    return "\n".join(lines)


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def _map(epochs: dict[int, int]) -> str:
    return "{" + ", ".join(f"{p}: {e}" for p, e in sorted(epochs.items())) + "}"
