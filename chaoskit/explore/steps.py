"""A schedule as data: timed steps and the explored topic's settings, and the ChaosTest it becomes.

    {"settings": {"min.insync.replicas": "2"},
     "steps": [{"fault": "admin", "at_s": 2.0, "window_s": 0.5, "target": "client",
                "params": {"op": "expand", "topic": "orders", "to": 6}, "pick": 17},
               {"fault": "kill", "at_s": 2.4, "window_s": 1.5, "target": "coordinator", "pick": 3}]}

A step is one window of a fault (chaoskit.nemesis.schedule's scripted steps, with its own `pick`,
so deleting or moving a step never changes which node another one hits). `settings` are topic
configs of the explored topics. The ChaosTest a schedule becomes is an ordinary test.json:
`chaoskit run` replays it on any cluster, with any client. Steps name topics by the base test's
names; a run on a cluster kept up between runs renames them (`suffix`) so each run has fresh ones.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from chaoskit.run.chaostest import ChaosTest, Topic

QUIET_END_S = 2.0  # no step opens in a run's last seconds: the cluster settles before the drain


def default_base(client: str = "ordered", profile: str = "patched", duration_s: float = 10.0) -> ChaosTest:
    """What an explore starts from when given no suite or test: one topic of 4 partitions, three
    producers and a group of three that reads a little slower than they write (run/mixes.py's
    SLOW_GROUP with a third consumer: with two, round-robin gives a partition an expansion splits off
    to the member that owns its parent, and no gate ever waits on another member's position), small
    polls, no faults: the search brings them all."""
    from chaoskit.run.mixes import SLOW_GROUP, SMALL_POLLS, TOPIC

    return ChaosTest("explore", profile=profile, duration_s=duration_s, client=client, topics=[Topic(TOPIC, 4)],
                     workload_options={**SLOW_GROUP, "consumers": 3}, client_options=dict(SMALL_POLLS),
                     drain_timeout_s=20.0)


@dataclass(frozen=True)
class Step:
    fault: str
    at_s: float
    window_s: float
    target: str
    params: Mapping[str, Any] = field(default_factory=dict)
    pick: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"fault": self.fault, "at_s": self.at_s, "window_s": self.window_s, "target": self.target,
                "params": dict(self.params), "pick": self.pick}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        unknown = set(data) - {"fault", "at_s", "window_s", "target", "params", "pick"}
        if unknown:
            raise ValueError(f"a step has fault, at_s, window_s, target, params and pick; not {sorted(unknown)}")
        return cls(str(data["fault"]), float(data["at_s"]), float(data["window_s"]), str(data["target"]),
                   dict(data.get("params") or {}), int(data.get("pick", 0)))

    @property
    def stop_s(self) -> float:
        return self.at_s + self.window_s

    def describe(self) -> str:
        """One readable line: when, what, on what, for how long."""
        p = dict(self.params)
        if self.fault == "admin":
            what = f"{p.pop('op', '?')} {p.pop('topic', '?')} to {p.pop('to', '?')} partitions"
        elif self.fault == "clients":
            what = f"clients {p.pop('action', '?')} ({p.pop('which', 'all')})"
        else:
            what = f"{self.fault} {self.target}"
        extra = ", ".join(f"{k}={v}" for k, v in sorted(p.items()))
        return f"{self.at_s:6.2f} s  {what}" + (f" [{extra}]" if extra else "") + f" for {self.window_s:g} s"


@dataclass(frozen=True)
class StepSchedule:
    steps: tuple[Step, ...] = ()
    settings: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(sorted(self.steps, key=lambda s: (s.at_s, s.fault, s.target))))

    def to_json(self) -> dict[str, Any]:
        return {"settings": dict(sorted(self.settings.items())), "steps": [s.to_json() for s in self.steps]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepSchedule:
        if not isinstance(data, Mapping) or not isinstance(data.get("steps"), list):
            raise ValueError("a schedule is {\"settings\": {...}, \"steps\": [...]}")
        settings = data.get("settings") or {}
        return cls(tuple(Step.from_json(s) for s in data["steps"]), {str(k): str(v) for k, v in settings.items()})

    @property
    def digest(self) -> str:
        """The schedule's name: a hash of its canonical JSON (the same schedule, the same name)."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha1(text.encode()).hexdigest()[:10]

    def with_steps(self, steps: Any) -> StepSchedule:
        return replace(self, steps=tuple(steps))

    def lines(self) -> list[str]:
        """The schedule as a person reads it: its settings, then a step a line."""
        head = [f"settings: {', '.join(f'{k}={v}' for k, v in sorted(self.settings.items()))}"] if self.settings else []
        return head + [s.describe() for s in self.steps]

    def faults(self, names: Mapping[str, str]) -> dict[str, Any] | None:
        """The ChaosTest `faults` spec: every step a scripted window, no random ones (None: no step)."""
        if not self.steps:
            return None
        return {"mean_interval_s": 60.0, "window_s": [1.0, 1.0], "quiet_end_s": 0.0, "faults": {},
                "scripted": [{"at_s": s.at_s, "fault": s.fault, "target": renamed_target(s.target, names),
                              "window_s": s.window_s, "params": renamed_params(s.params, names), "pick": s.pick}
                             for s in self.steps]}


def renamed_target(target: str, names: Mapping[str, str]) -> str:
    kind, sep, rest = target.partition(":")
    topic, slash, partition = rest.rpartition("/")
    if sep and slash and topic in names:
        return f"{kind}:{names[topic]}/{partition}"
    return target


def renamed_params(params: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    out = dict(params)
    if isinstance(out.get("topic"), str):
        out["topic"] = names.get(out["topic"], out["topic"])
    if isinstance(out.get("topics"), Mapping):
        out["topics"] = {names.get(t, t): c for t, c in out["topics"].items()}
    return out


def to_test(base: ChaosTest, schedule: StepSchedule, name: str, seed: int, suffix: str = "",
            **changes: Any) -> ChaosTest:
    """The ChaosTest that runs `schedule` on `base`: the base's cluster, workload and client, its
    topics renamed with `suffix` (and the explored ones given the schedule's settings)."""
    names = {t.name: f"{t.name}{suffix}" for t in base.topics}
    topics = [Topic(names[t.name], t.partitions, t.replication_factor, {**t.config, **schedule.settings})
              for t in base.topics]
    options = dict(base.workload_options)
    if isinstance(options.get("topics"), list):
        options["topics"] = [names.get(t, t) for t in options["topics"]]
    return replace(base, name=name, seed=seed, topics=topics, workload_options=options,
                   faults=schedule.faults(names), replay=None, **changes)
