"""Built-in fault packs: partitions, process faults, zombies (KAFKA-6880's zombie-rejoin story, and
zombie-isr: an offline replica kept out of the ISR, or min.insync.replicas is a lie),
unclean elections, stale metadata, link toxics, admin changes (ours, a stock AdminClient's batch and its deletion and re-creation of topics, and a shrink
under clients' stale metadata),
an operator's DeleteRecords of drained marked partitions, and the workload's clients going idle,
leaving, restarting or stopping their producers.

`FAULTS` maps each fault's name to its factory (keyword options become the defaults of every
window's params); plugins/builtin.py registers it through the `chaoskit_add_faults` hook.
docs/faults.md describes each fault and its params.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

from chaoskit_plugins.faults.clients import ClientsFault
from chaoskit_plugins.faults.cluster_faults import (AdminFault, FreezeClientMetadataFault, StaleMetadataFault,
                                                    UncleanElectionFault, ZombieFault)
from chaoskit_plugins.faults.delete_records import DeleteRecordsFault
from chaoskit_plugins.faults.expand_batch import ExpandBatchFault
from chaoskit_plugins.faults.network import TOXICS, PartitionFault, ToxicFault
from chaoskit_plugins.faults.process import KillFault, PauseFault, RestartFault
from chaoskit_plugins.faults.recreate_topics import RecreateTopicsFault
from chaoskit_plugins.faults.stale_shrink import StaleShrinkFault
from chaoskit_plugins.faults.zombie_isr import ZombieIsrFault
from chaoskit_plugins.faults.zombie_rejoin import ZombieRejoinFault

FAULTS: dict[str, Callable[..., Any]] = {
    cls.name: cls for cls in (PartitionFault, KillFault, PauseFault, RestartFault, ZombieFault,
                              UncleanElectionFault, StaleMetadataFault, FreezeClientMetadataFault, AdminFault,
                              ZombieRejoinFault, ZombieIsrFault, ExpandBatchFault, DeleteRecordsFault,
                              ClientsFault, StaleShrinkFault, RecreateTopicsFault)
}
FAULTS.update({name: partial(ToxicFault, name) for name in TOXICS})
