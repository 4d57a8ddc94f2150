"""Network faults on the proxied topology: partitions by link set, and toxics on chosen links.

`partition` params:
- `shape`: `isolate` (default: cut every link of the target node), `halves` (the target and
  others on one side, the rest on the other: every link across is cut), `bridge` (two halves
  joined by one node, Jepsen's bridge; the target is ignored), `ring` (each node keeps only its two
  ring neighbours; the target is ignored);
- `direction` (isolate only): `both`, `outbound` (the target dials no one; others still reach it)
  or `inbound` (no one reaches it; it still dials out);
- `how`: `refuse` (the proxies are disabled: connections are refused and dropped) or `drop` (a
  black hole: connections open, bytes vanish, as a firewall DROP);
- `roles` (halves, bridge, ring): which nodes take part, default brokers, controllers and ZooKeeper.

Toxic faults (`latency`, `bandwidth`, `slicer`, `reset-peer`, `slow-close`, `limit-data`) add
Toxiproxy's toxic of that type to every link of the target node (`client`: every client link);
params are Toxiproxy's attributes (`latency`, `jitter`; `rate`; `average_size`, `size_variation`,
`delay`; `timeout`; `delay`; `bytes`) plus `stream` (`both`, `upstream`, `downstream`),
`toxicity` and `direction` as for partitions.
"""
from __future__ import annotations

from typing import Any, Mapping

from chaoskit.nemesis import link_sets
from chaoskit.nemesis.base import WindowedFault, check_params
from chaoskit.nemesis.resolve import CLIENT, node_names

SHAPES = ("isolate", "halves", "bridge", "ring")
DEFAULT_ROLES = ("broker", "controller", "zookeeper", "storage")


class PartitionFault(WindowedFault):
    name = "partition"

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, {"shape", "direction", "how", "roles"})
        shape, how = params.get("shape", "isolate"), params.get("how", "refuse")
        ctx = self.context
        links = ctx.links
        state: dict[str, Any] = {"shape": shape, "how": how}
        if shape == "isolate":
            node = ctx.resolve(target, pick)
            cut = link_sets.isolate(links, node, params.get("direction", "both"))
            state["node"] = node
        elif shape in ("halves", "bridge", "ring"):
            nodes = node_names(ctx.cluster, tuple(params.get("roles", DEFAULT_ROLES)))
            if shape == "halves":
                node = ctx.resolve(target, pick)
                small, large = link_sets.halves([n for n in nodes if n != node], pick)
                groups = [small | {node}, large] if node != CLIENT else [small, large]
                cut = link_sets.split(links, groups)
                state["groups"] = [sorted(g) for g in groups]
            elif shape == "bridge":
                cut, middle = link_sets.bridge(links, nodes, pick)
                state["bridge"] = middle
            else:
                cut = link_sets.ring(links, nodes, pick)
        else:
            raise ValueError(f"partition: shape {shape!r} is not one of {', '.join(SHAPES)}")
        names = [link.name for link in cut]
        ctx.cutter.cut(names, how)
        state["links"] = names
        return state

    def stop(self, state: dict[str, Any]) -> None:
        self.context.cutter.heal(state["links"], state["how"])


# our fault name -> Toxiproxy's toxic type
TOXICS = {"latency": "latency", "bandwidth": "bandwidth", "slicer": "slicer", "reset-peer": "reset_peer",
          "slow-close": "slow_close", "limit-data": "limit_data"}
STREAMS = {"both": ("upstream", "downstream"), "upstream": ("upstream",), "downstream": ("downstream",)}


class ToxicFault(WindowedFault):
    """One toxic type on every link of the target; each window's toxics carry its window id."""

    def __init__(self, fault: str, **options: Any) -> None:
        if fault not in TOXICS:
            raise ValueError(f"no toxic fault {fault!r}; there are {', '.join(TOXICS)}")
        super().__init__(**options)
        self.name, self.toxic = fault, TOXICS[fault]
        self._windows = 0

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        # Toxiproxy's attributes are whole numbers; a schedule's uniform draws are not
        attributes = {k: round(v) if isinstance(v, float) else v for k, v in params.items()
                      if k not in ("stream", "toxicity", "direction")}
        stream = params.get("stream", "both")
        if stream not in STREAMS:
            raise ValueError(f"{self.name}: stream {stream!r} is not one of {', '.join(STREAMS)}")
        ctx = self.context
        node = ctx.resolve(target, pick)
        links = [link.name for link in link_sets.isolate(ctx.links, node, params.get("direction", "both"))]
        self._windows += 1
        added: list[list[str]] = []
        try:
            for link in links:
                for s in STREAMS[stream]:
                    name = f"chaoskit-{self.name}-{self._windows}-{s}"
                    ctx.router.proxies.add_toxic(link, self.toxic, attributes, stream=s,
                                                 toxicity=float(params.get("toxicity", 1.0)), name=name)
                    added.append([link, name])
        except Exception:
            self.stop({"toxics": added})  # all or nothing: a half-applied window is undone
            raise
        return {"node": node, "toxic": self.toxic, "attributes": attributes, "toxics": added}

    def stop(self, state: dict[str, Any]) -> None:
        from chaoskit.proxy.client import ProxyNotFound

        for link, name in state["toxics"]:
            try:
                self.context.router.proxies.remove_toxic(link, name)
            except ProxyNotFound:
                pass  # a reset took it already
