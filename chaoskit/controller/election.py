"""Controller election through the ephemeral `/controller` znode and the `/controller_epoch` counter.

Winning is one ZooKeeper transaction: create `/controller` (ephemeral, so it goes with the
winner's session) and bump `/controller_epoch` conditional on the version just read. The epoch
travels in every controller -> broker request (brokers refuse a lower one) and the epoch znode's
version guards every ZooKeeper write the winner makes (zk_store.ControllerZk).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from chaoskit.controller.zk_store import Watch
from chaoskit.protocol import zk_layout as zl

log = logging.getLogger("chaoskit.controller.election")


@dataclass(frozen=True)
class Term:
    """What a win gives: the epoch for requests and the epoch znode version for fenced writes."""

    epoch: int
    epoch_zk_version: int


class Election:
    def __init__(self, client: KazooClient, controller_id: int) -> None:
        self.client, self.controller_id = client, controller_id

    def active_controller(self, watch: Watch = None) -> int | None:
        """The id in /controller (setting `watch` on it, or on its creation when absent)."""
        try:
            data, _ = self.client.get(zl.CONTROLLER, watch=watch)
        except NoNodeError:
            if self.client.exists(zl.CONTROLLER, watch=watch) is not None:
                return self.active_controller(watch)  # created between the two calls
            return None
        try:
            return zl.decode_controller(data)
        except zl.ZkDataError as e:
            log.error("%s; waiting for its owner's session to end", e)
            return -1

    def try_to_win(self, watch: Watch = None) -> Term | None:
        """Become the active controller if there is none; None when another one is."""
        while True:
            if self.active_controller(watch) is not None:
                return None
            try:
                data, stat = self.client.get(zl.CONTROLLER_EPOCH)
                epoch, version = zl.decode_epoch(data), stat.version
            except NoNodeError:
                try:
                    self.client.create(zl.CONTROLLER_EPOCH, zl.encode_epoch(0), makepath=True)
                except NodeExistsError:
                    pass
                continue
            tx = self.client.transaction()
            tx.create(zl.CONTROLLER, zl.encode_controller(self.controller_id), ephemeral=True)
            tx.set_data(zl.CONTROLLER_EPOCH, zl.encode_epoch(epoch + 1), version=version)
            created, written = tx.commit()
            if isinstance(created, NodeExistsError):
                continue  # lost the race: loop to set the watch on the winner's znode
            if isinstance(written, BadVersionError):
                continue  # a concurrent winner bumped the epoch; look again
            for result in (created, written):
                if isinstance(result, Exception):
                    raise result
            self.active_controller(watch)  # re-arm the watch on our own znode
            log.info("controller %d won the election at epoch %d", self.controller_id, epoch + 1)
            return Term(epoch + 1, int(written.version))

    def resign(self) -> None:
        """Give /controller up now (a clean shutdown) rather than when the session times out."""
        try:
            data, stat = self.client.get(zl.CONTROLLER)
        except NoNodeError:
            return
        if stat.ephemeralOwner == self.client.client_id[0]:
            try:
                self.client.delete(zl.CONTROLLER, version=stat.version)
            except (NoNodeError, BadVersionError):
                pass
