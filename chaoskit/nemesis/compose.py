"""ComposedNemesis: one Nemesis made of several, each handling the faults named by its key
(Jepsen's nemesis/compose, routing ops by fault name)."""
from __future__ import annotations

from typing import Mapping

from chaoskit.history.schema import Op
from chaoskit.roles import LiveRun, Nemesis


class ComposedNemesis:
    """One Nemesis made of several, each handling the faults named by its key."""

    def __init__(self, by_fault: Mapping[str, Nemesis]):
        if not by_fault:
            raise ValueError("ComposedNemesis needs at least one fault name -> Nemesis")
        self.by_fault = dict(by_fault)

    def _distinct(self) -> list[Nemesis]:
        seen: dict[int, Nemesis] = {}
        for nemesis in self.by_fault.values():  # one nemesis may serve several fault names
            seen.setdefault(id(nemesis), nemesis)
        return list(seen.values())

    def setup(self, test: LiveRun) -> None:
        for nemesis in self._distinct():
            nemesis.setup(test)

    def invoke(self, test: LiveRun, op: Op) -> Op:
        name = op["value"]["fault"]
        if name not in self.by_fault:
            raise ValueError(f"no nemesis handles fault {name!r}; this one handles {sorted(self.by_fault)}")
        return self.by_fault[name].invoke(test, op)

    def teardown(self, test: LiveRun) -> None:
        # every part tears down even if an earlier one fails; the first error is raised after
        errors: list[BaseException] = []
        for nemesis in reversed(self._distinct()):
            try:
                nemesis.teardown(test)
            except Exception as exc:  # noqa: BLE001 -- collected and re-raised below
                errors.append(exc)
        if errors:
            raise errors[0]
