"""The controller: `python -m chaoskit.controller`.

ZooKeeper layout, election through /controller and /controller_epoch, the
partition state machine, leader election, and topic changes (creation,
KIP-253 expansion and deletion, KIP-694 reduction, the internal-topic
guardrail). Every step is restartable by a successor.
"""
