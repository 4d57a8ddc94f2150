"""The built-in plugin: registers plugins/' faults, workloads, clients and checks, and how
`chaoskit explore` draws the built-in faults' steps.

It is loaded through the `chaoskit` entry-point group (name `builtin`), exactly as
a third-party plugin is.
"""
from __future__ import annotations

from chaoskit.hookspecs import Factories, hookimpl


@hookimpl
def chaoskit_add_faults() -> Factories:
    from chaoskit_plugins.faults import FAULTS

    return FAULTS


@hookimpl
def chaoskit_add_workloads() -> Factories:
    from chaoskit_plugins.workloads.coordinator import coordinator_probe
    from chaoskit_plugins.workloads.keyed import keyed_sequences

    return {"keyed-sequences": keyed_sequences, "coordinator-probe": coordinator_probe}


@hookimpl
def chaoskit_add_clients() -> Factories:
    from chaoskit_plugins.clients.aio import AiokafkaClient
    from chaoskit_plugins.clients.ordered import OrderedClient
    from chaoskit_plugins.clients.probe import ProbeClient
    from chaoskit_plugins.clients.stock import KafkaPythonClient, LibrdkafkaClient

    return {"kafka-python": KafkaPythonClient, "librdkafka": LibrdkafkaClient, "aiokafka": AiokafkaClient,
            "ordered": OrderedClient, "probe": ProbeClient}


@hookimpl
def chaoskit_add_checks() -> Factories:
    from chaoskit_plugins.checks import CHECKS

    return CHECKS


@hookimpl
def chaoskit_add_steps() -> Factories:
    from chaoskit.explore.grammar import builtin_kinds

    return builtin_kinds()


@hookimpl
def chaoskit_add_brokers() -> Factories:
    from chaoskit.cluster.brokers import own_broker
    from chaoskit_plugins.brokers.tansu_cluster import tansu_broker

    return {"chaoskit": own_broker, "tansu": tansu_broker}
