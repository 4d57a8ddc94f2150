"""`chaoskit plugins`: what the installed plugins register, by kind."""
from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("plugins", help="list installed plugins and the faults, workloads, clients and checks they add")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=run)


def run(args) -> int:
    from chaoskit.pluginmanager import KINDS, collect, get_plugin_manager

    pm = get_plugin_manager()
    listing = {
        "plugins": sorted(name for name, _ in pm.list_name_plugin()),
        **{kind: sorted(collect(pm, kind)) for kind in KINDS},
    }
    if args.json:
        print(json.dumps(listing, indent=2))
        return 0
    for key, names in listing.items():
        print(f"{key:10} {', '.join(names) if names else '(none yet)'}")
    return 0
