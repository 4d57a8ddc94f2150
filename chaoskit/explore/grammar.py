"""The grammar of steps: every step a schedule may hold, each drawn valid in the state the steps
before it leave (Hypothesis's rule-based state machine: rules with preconditions).

The `Model` is what the grammar knows of a run at a time without running it: each explored
topic's initial, undeleted and existing partition counts, the partitions a shrink marked and until
when they exist, which fault windows are open (a fault plays one window at a time), which steps
take a broker or the controller down (one of each at a time, so a run stays able to make progress)
and the topic settings. `valid(schedule)` walks a schedule through it; `repaired` drops the steps
that are not valid where they stand (after an edit moved or deleted the step they relied on).

Every fault the plugin registry holds joins the grammar. How to draw a fault's targets and params
is a `StepKind`, registered through the `chaoskit_add_steps` hook (the built-in plugin registers
the built-ins' kinds, below, as a third party registers its own); a fault without one is drawn
with a broker or controller target and its factory's default params.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from chaoskit.cluster import capabilities as caps
from chaoskit.explore.steps import QUIET_END_S, Step, StepSchedule

MAX_PARTITIONS = 16
DRAWS = 4  # kinds tried for one step before the time is left without one
NOVELTY = 4.0  # how much more often a guided search draws a kind of step no run of it has tried yet
MAX_RUN_FACTOR = 3.0  # a run with a staged story lasts at most this many times the base's duration
INF = math.inf
BROKER, CONTROLLER = "broker", "controller"


@dataclass
class TopicModel:
    name: str
    initial: int
    count: int  # undeleted partitions
    existing: int  # partitions that exist: the undeleted and the marked ones
    marked_until: float = -INF  # marked partitions exist until then (INF: until the group drained them)

    def marked(self, t: float) -> bool:
        return t < self.marked_until and self.existing > self.count

    def partitions(self, t: float) -> int:
        return self.existing if self.marked(t) else self.count


@dataclass
class Model:
    duration_s: float
    topics: dict[str, TopicModel]
    brokers: int = 3
    settings: dict[str, str] = field(default_factory=dict)
    t: float = 0.0
    busy: dict[str, float] = field(default_factory=dict)  # fault -> its open window's end
    down: dict[str, float] = field(default_factory=dict)  # broker/controller -> until when one is down
    capabilities: frozenset[str] = caps.OWN  # the broker's (chaoskit.cluster.capabilities): which targets exist

    @classmethod
    def start(cls, topics: Mapping[str, int], duration_s: float, brokers: int = 3,
              settings: Mapping[str, str] | None = None, capabilities: frozenset[str] = caps.OWN) -> Model:
        return cls(duration_s, {n: TopicModel(n, c, c, c) for n, c in topics.items()}, brokers, dict(settings or {}),
                   capabilities=capabilities)

    def copy(self) -> Model:
        return replace(self, topics={n: replace(t) for n, t in self.topics.items()}, settings=dict(self.settings),
                       busy=dict(self.busy), down=dict(self.down))

    @property
    def last_start_s(self) -> float:
        return self.duration_s - QUIET_END_S

    def free(self, fault: str, t: float) -> bool:
        return self.busy.get(fault, -INF) <= t

    def can_take_down(self, what: str | None, t: float) -> bool:
        return what is None or self.down.get(what, -INF) <= t


Draw = Callable[[random.Random, Model, float], "Step | None"]


@dataclass(frozen=True)
class StepKind:
    """How the grammar draws one fault's steps: `draw(rng, model, t)` gives a step opening at t that
    is valid in `model` (None when none is), `check(step, model)` says whether a given step still is
    (after an edit), `apply(step, model)` is what the step changes. `takes_down` names what it stops
    (BROKER, CONTROLLER or None) and `hold_s` how long past its window it may keep it (a story
    that waits on the cluster). `settings` are the topic settings the step needs: drawing it brings
    them onto the schedule (a story drawn is a story run, not one its settings rule out)."""

    fault: str
    weight: float
    draw: Draw
    check: Callable[[Step, Model], bool] = lambda step, model: True
    apply: Callable[[Step, Model], None] = lambda step, model: None
    takes_down: str | None = None
    hold_s: float = 0.0
    settings: Mapping[str, str] = field(default_factory=dict)

    def settled(self, model: Model) -> bool:
        return all(model.settings.get(k) == v for k, v in self.settings.items())


# --- targets ------------------------------------------------------------------------------------------
# what a target needs of the broker: a follower and the coordinator are read from ZooKeeper's view
TARGET_NEEDS = {"follower-of": caps.ZOOKEEPER, "coordinator": caps.ZOOKEEPER, "active-controller": caps.CONTROLLERS,
                "storage": caps.STORAGE}


def target_allowed(target: str, capabilities: frozenset[str]) -> bool:
    need = TARGET_NEEDS.get(target.partition(":")[0])
    return need is None or need in capabilities


def partition_targets(model: Model, t: float, kinds: tuple[str, ...] = ("leader-of", "follower-of")) -> list[str]:
    kinds = tuple(k for k in kinds if target_allowed(k, model.capabilities))
    return [f"{k}:{topic.name}/{p}" for topic in model.topics.values() for p in range(topic.partitions(t))
            for k in kinds]


def node_targets(model: Model, t: float, controllers: bool = True) -> list[str]:
    out = ["random-broker", "coordinator", "storage", *partition_targets(model, t)]
    out = out + ["active-controller"] if controllers else out
    return [x for x in out if target_allowed(x, model.capabilities)]


def target_exists(target: str, model: Model, t: float) -> bool:
    kind, _, rest = target.partition(":")
    if kind not in ("leader-of", "follower-of"):
        return True
    name, _, p = rest.rpartition("/")
    topic = model.topics.get(name)
    return topic is None or (p.isdigit() and int(p) < topic.partitions(t))  # another topic: not ours to judge


def takes_down_of(target: str) -> str:
    return CONTROLLER if target == "active-controller" else BROKER


# --- the built-in kinds --------------------------------------------------------------------------------
def _window(rng: random.Random, lo: float, hi: float) -> float:
    return round(lo + (hi - lo) * rng.random(), 1)


def _node_fault(fault: str, weight: float, lo: float, hi: float, params: Callable[[random.Random], dict] | None = None,
                controllers: bool = True) -> StepKind:
    """A fault on one node (kill, pause, restart, partition, zombie, ...): any broker, the leader or a
    follower of an explored partition, the group's coordinator, or the active controller."""
    def draw(rng: random.Random, model: Model, t: float) -> Step | None:
        targets = [x for x in node_targets(model, t, controllers) if model.can_take_down(takes_down_of(x), t)]
        if not targets:
            return None
        return Step(fault, t, _window(rng, lo, hi), rng.choice(targets), params(rng) if params else {},
                    rng.getrandbits(31))
    return StepKind(fault, weight, draw, check=lambda s, m: target_exists(s.target, m, s.at_s), takes_down=BROKER)


def _client_fault(fault: str, weight: float, lo: float, hi: float,
                  params: Callable[[random.Random], dict] | None = None) -> StepKind:
    def draw(rng: random.Random, model: Model, t: float) -> Step | None:
        return Step(fault, t, _window(rng, lo, hi), "client", params(rng) if params else {}, rng.getrandbits(31))
    return StepKind(fault, weight, draw)


def _toxic(fault: str, weight: float, params: Callable[[random.Random], dict]) -> StepKind:
    def draw(rng: random.Random, model: Model, t: float) -> Step | None:
        target = rng.choice([x for x in ["client", "random-broker", "coordinator", "storage",
                                          *partition_targets(model, t, ("leader-of",))]
                             if target_allowed(x, model.capabilities)])
        return Step(fault, t, _window(rng, 1.0, 4.0), target, params(rng), rng.getrandbits(31))
    return StepKind(fault, weight, draw, check=lambda s, m: target_exists(s.target, m, s.at_s))


def _admin_draw(rng: random.Random, model: Model, t: float) -> Step | None:
    topic = rng.choice(sorted(model.topics.values(), key=lambda x: x.name))
    can_shrink = topic.count > topic.initial and not topic.marked(t)
    if can_shrink and rng.random() < 0.45:
        to = rng.randint(topic.initial, topic.count - 1)
        removal = rng.choice([{}, {}, {"delay_ms": 60_000}, {"delay_ms": rng.choice([1000, 3000])}, {"immediate": True}])
        extra = {"written_within_s": 3, "written_records": 4} if rng.random() < 0.5 else {}
        return Step("admin", t, 0.5, "client", {"op": "shrink", "topic": topic.name, "to": to, **removal, **extra},
                    rng.getrandbits(31))
    if topic.existing >= MAX_PARTITIONS:
        return None
    to = min(MAX_PARTITIONS, topic.count + rng.choice([1, 2, 2, topic.count]))
    wait = {"removed_within_s": 15} if topic.marked(t) or topic.existing > topic.count else {}
    return Step("admin", t, 0.5, "client", {"op": "expand", "topic": topic.name, "to": to, **wait}, rng.getrandbits(31))


def _admin_check(step: Step, model: Model) -> bool:
    p, t = step.params, step.at_s
    topic = model.topics.get(p.get("topic"))
    if topic is None or not isinstance(p.get("to"), int):
        return False
    if p.get("op") == "shrink":
        return topic.initial <= p["to"] < topic.count and not topic.marked(t)
    if p.get("op") == "expand":
        waits = "removed_within_s" in p
        return topic.count < p["to"] <= MAX_PARTITIONS and (waits or not topic.marked(t))
    return False


def _admin_apply(step: Step, model: Model) -> None:
    p, t = step.params, step.at_s
    topic = model.topics[p["topic"]]
    if p["op"] == "expand":
        topic.count = topic.existing = p["to"]  # once the marked ones are gone (it waited), under their numbers
        topic.marked_until = -INF
        return
    topic.count = p["to"]
    if p.get("immediate"):
        topic.existing, topic.marked_until = topic.count, -INF
    else:
        topic.marked_until = t + p["delay_ms"] / 1000 if "delay_ms" in p else INF


def _delete_records_draw(rng: random.Random, model: Model, t: float) -> Step | None:
    marked = [x for x in model.topics.values() if x.marked(t)]
    if not marked:
        return None
    return Step("delete-records", t, 1.0, "client", {"topic": rng.choice(marked).name, "committed_within_s": 5},
                rng.getrandbits(31))


def _expand_batch_draw(rng: random.Random, model: Model, t: float) -> Step | None:
    topic = rng.choice(sorted(model.topics.values(), key=lambda x: x.name))
    if topic.marked(t) or topic.existing >= MAX_PARTITIONS:
        return None
    # KAFKA-20029's story in one step: the batch, then a broker restarted so that it reads the
    # coordinators' topic anew (without it every broker keeps the count it read first: no split to
    # see), and every broker asked where the groups live
    return Step("expand-batch", t, 1.0, "client", {"topics": {topic.name: topic.count + 1, "__consumer_offsets": 6},
                                                    "restart": True, "probe_s": 3},
                rng.getrandbits(31))


def _expand_batch_apply(step: Step, model: Model) -> None:
    for name, count in step.params["topics"].items():
        if name in model.topics:
            model.topics[name].count = model.topics[name].existing = count


def _expand_batch_check(step: Step, model: Model) -> bool:
    return all(not (x := model.topics[n]).marked(step.at_s) and c > x.count
               for n, c in step.params.get("topics", {}).items() if n in model.topics)


def _stale_shrink_draw(rng: random.Random, model: Model, t: float) -> Step | None:
    topic = rng.choice(sorted(model.topics.values(), key=lambda x: x.name))
    grow = rng.choice([1, 2])
    if topic.marked(t) or topic.existing + grow > MAX_PARTITIONS:
        return None
    # a short delay: without one a producer whose key hashes to a marked partition waits until the
    # group drained it (the stock rule), which stretches the run and displaces no send
    return Step("stale-shrink", t, _window(rng, 3.0, 6.0), "client",
                {"topic": topic.name, "grow": grow, "delay_ms": rng.choice([1000, 2000, 3000])}, rng.getrandbits(31))


def _stale_shrink_check(step: Step, model: Model) -> bool:
    topic = model.topics.get(step.params.get("topic"))
    return topic is not None and STALE_SHRINK.items() <= model.settings.items() and not topic.marked(step.at_s) \
        and topic.existing + step.params.get("grow", 1) <= MAX_PARTITIONS


def _stale_shrink_apply(step: Step, model: Model) -> None:
    topic = model.topics[step.params["topic"]]
    topic.existing = topic.count + step.params.get("grow", 1)  # grown, then shrunk back: the growth is marked
    delay_ms = step.params.get("delay_ms")  # from the shrink, late in the window: the window's end bounds it
    topic.marked_until = step.stop_s + delay_ms / 1000 if delay_ms is not None else INF


def _story(fault: str, weight: float, lo: float, hi: float, params: Callable[[random.Random], dict],
           hold_s: float, settings: Mapping[str, str] | None = None) -> StepKind:
    """A staged story on one explored partition (its leader's election, a zombie's rejoin), valid
    where the topic has `settings` (an unclean election needs the topic to allow one)."""
    def draw(rng: random.Random, model: Model, t: float) -> Step | None:
        targets = partition_targets(model, t, ("leader-of",))
        if not targets:
            return None
        return Step(fault, t, _window(rng, lo, hi), rng.choice(targets), params(rng), rng.getrandbits(31))
    kind = StepKind(fault, weight, draw, takes_down=BROKER, hold_s=hold_s, settings=dict(settings or {}))
    return replace(kind, check=lambda s, m: kind.settled(m) and target_exists(s.target, m, s.at_s))


UNCLEAN = {"unclean.leader.election.enable": "true"}
MIN_ISR = {"min.insync.replicas": "2"}  # every acks=all write held by two in-sync replicas
MIN_ISR_GUARDED = {**UNCLEAN, **MIN_ISR}
UNUSED_INTERNAL = ("__transaction_state", "__share_group_state")  # no transactions or share groups here
STALE_SHRINK = {"enable.ordered.delivery": "false"}  # KIP-253's count check off: the refusal alone guards


def _unclean_params(rng: random.Random) -> dict[str, Any]:
    story = rng.choice([None, "reading", "lagging", "idle", "restarted"])
    return {"solo_writes": rng.choice([1, 5, 20]), "isr_timeout_s": 8, "solo_timeout_s": 4, "elect_timeout_s": 10,
            "rejoin_timeout_s": 15, "read_timeout_s": 4, "grow_timeout_s": 6, "idle_s": 2,
            **({"consumers": story} if story else {})}


def builtin_kinds() -> dict[str, StepKind]:
    kinds = [
        StepKind("admin", 4.0, _admin_draw, _admin_check, _admin_apply),
        StepKind("delete-records", 0.5, _delete_records_draw,
                 check=lambda s, m: (x := m.topics.get(s.params.get("topic"))) is not None and x.marked(s.at_s)),
        # the only step that tries KAFKA-20029's guardrail: at 0.3 a 10-minute search drew it in none of 44 runs
        StepKind("expand-batch", 1.5, _expand_batch_draw, _expand_batch_check, _expand_batch_apply,
                 takes_down=BROKER, hold_s=5.0),  # its restart and probe: about 5 s past its window
        _node_fault("partition", 2.0, 1.0, 5.0, lambda r: {"shape": r.choice(["isolate", "isolate", "halves"]),
                                                            "how": r.choice(["refuse", "drop"])}),
        _node_fault("kill", 1.5, 1.0, 3.0),
        _node_fault("pause", 1.0, 1.0, 3.0),
        _node_fault("restart", 0.5, 1.0, 3.0),
        _node_fault("zombie", 0.7, 5.0, 8.0, lambda r: {"timeout_s": 10}, controllers=False),
        _node_fault("stale-metadata", 0.8, 2.0, 6.0, controllers=False),
        _toxic("latency", 1.0, lambda r: {"latency": r.choice([50, 200, 800]), "jitter": r.choice([0, 50])}),
        _toxic("reset-peer", 0.4, lambda r: {"timeout": r.choice([0, 100])}),
        _toxic("bandwidth", 0.3, lambda r: {"rate": r.choice([5, 50])}),
        _toxic("slicer", 0.2, lambda r: {"average_size": r.choice([16, 256]), "size_variation": 8, "delay": 500}),
        _toxic("slow-close", 0.2, lambda r: {"delay": r.choice([500, 2000])}),
        _toxic("limit-data", 0.2, lambda r: {"bytes": r.choice([1000, 100_000])}),
        _client_fault("freeze-client-metadata", 1.0, 2.0, 6.0),
        _client_fault("clients", 2.0, 1.0, 5.0, lambda r: {"action": r.choice(["idle", "leave", "restart",
                                                                                "stop-producers"]),
                                                            "which": r.choice(["all", "one"])}),
        # the staged stories weigh more: each is a whole sequence of steps the search would rarely compose
        _story("unclean-election", 2.0, 3.0, 5.0, _unclean_params, hold_s=12.0, settings=UNCLEAN),
        # several acks=1 records past the other follower's end: one alone is often re-sent by a producer
        # to the very offset the zombie kept it at, which hides the story (the zombie suite writes 3)
        _story("zombie-rejoin", 1.5, 4.0, 6.0, lambda r: {"step_timeout_s": 15, "rejoin_timeout_s": 6,
                                                          "in_flight": r.choice([1, 3, 3, 5]),
                                                          **({"consumers": "after"} if r.random() < 0.7 else {})},
               hold_s=25.0, settings=MIN_ISR),
        _story("zombie-isr", 1.5, 4.0, 6.0, lambda r: {"solo_s": r.choice([1, 2]), "step_timeout_s": 12}, hold_s=20.0,
               settings=MIN_ISR_GUARDED),
        # KIP-694's refusal of a stale producer's send to a ReadOnly partition: a shrink while the
        # clients' metadata is frozen, on a topic without ordered delivery (a growth, records on it, the
        # freeze and the shrink: the search drew that sequence in 1 of 3 10-minute explores)
        StepKind("stale-shrink", 0.6, _stale_shrink_draw, _stale_shrink_check, _stale_shrink_apply, hold_s=8.0,
                 settings=STALE_SHRINK),
        # the back door round KAFKA-20029's guardrail: an unused internal topic asked for with a count not its
        # configured one (never __consumer_offsets: deleting it mid-search would only cost the group its offsets)
        StepKind("recreate-topics", 0.1, lambda rng, model, t: Step(
            "recreate-topics", t, 1.0, "client", {"topics": {rng.choice(UNUSED_INTERNAL): rng.choice([1, 2, 3])}},
            rng.getrandbits(31))),
    ]
    return {k.fault: k for k in kinds}


def generic_kind(fault: str) -> StepKind:
    """A plugin's fault without a StepKind of its own: a broker or controller target, default params."""
    def draw(rng: random.Random, model: Model, t: float) -> Step | None:
        return Step(fault, t, _window(rng, 1.0, 4.0), rng.choice(["random-broker", "active-controller"]), {},
                    rng.getrandbits(31))
    return StepKind(fault, 0.5, draw, takes_down=BROKER)


# --- settings ---------------------------------------------------------------------------------------------
# topic configs a schedule may set (the value other than the default, and how often it is drawn): KIP-253
# off for the topic, two in-sync replicas for a write, out-of-sync replicas electable, compaction. A
# setting not drawn is left to the cluster's default, so a schedule lists only what it changes.
SETTINGS: dict[str, tuple[str, float]] = {
    "enable.ordered.delivery": ("false", 0.25),  # with a shrink: the only schedules KIP-694's refusal alone guards
    "min.insync.replicas": ("2", 0.4),
    "unclean.leader.election.enable": ("true", 0.5),
    "cleanup.policy": ("compact", 0.1),
}


def draw_settings(rng: random.Random, names: list[str]) -> dict[str, str]:
    return {name: SETTINGS[name][0] for name in names if rng.random() < SETTINGS[name][1]}


# --- the grammar ------------------------------------------------------------------------------------------
@dataclass
class Grammar:
    """The kinds of step a search draws from, and the explored topics it draws them for."""

    kinds: dict[str, StepKind]
    topics: dict[str, int]  # explored topic -> its initial partition count
    duration_s: float
    brokers: int = 3
    fixed: dict[str, str] = field(default_factory=dict)  # settings the base test sets: never drawn
    capabilities: frozenset[str] = caps.OWN  # the broker's: its faults were chosen by them, targets are too
    # kinds no run has tried yet (the guided search keeps it): drawn NOVELTY times as often, so a rare
    # story is tried early rather than never (grammar coverage, as a fuzzer favours unhit edges)
    novel: frozenset[str] = frozenset()

    @classmethod
    def for_faults(cls, faults: list[str], topics: Mapping[str, int], duration_s: float, brokers: int = 3,
                   kinds: Mapping[str, StepKind] | None = None, fixed: Mapping[str, str] | None = None,
                   capabilities: frozenset[str] = caps.OWN) -> Grammar:
        """The grammar over `faults` (the registry's names), each drawn by its kind in `kinds` (the
        registry's steps; default the built-in ones) or by a generic kind."""
        known = builtin_kinds() if kinds is None else dict(kinds)
        kinds = {f: known.get(f) or generic_kind(f) for f in sorted(faults)}
        return cls(kinds, dict(topics), duration_s, brokers, dict(fixed or {}), capabilities=capabilities)

    def model(self, settings: Mapping[str, str]) -> Model:
        return Model.start(self.topics, self.duration_s, self.brokers, {**self.fixed, **settings}, self.capabilities)

    @property
    def setting_names(self) -> list[str]:
        """The settings a schedule may change: those the base test does not set itself."""
        return [k for k in SETTINGS if k not in self.fixed]

    def settings(self, rng: random.Random) -> dict[str, str]:
        return draw_settings(rng, self.setting_names)

    def can_settle(self, kind: StepKind, settings: Mapping[str, str]) -> bool:
        """Whether a schedule with `settings` can take the settings `kind` needs: each already set so,
        or one a schedule may change and not set otherwise."""
        return all(settings.get(k) == v or (k in self.setting_names and k not in settings)
                   for k, v in kind.settings.items())

    def draw_step(self, rng: random.Random, model: Model, t: float) -> Step | None:
        """A step opening at `t`, valid in `model` once the settings its kind needs are set (None if
        the kind drawn has none valid then). `with_step` adds it to a schedule, settings and all."""
        kinds = [k for k in self.kinds.values() if model.free(k.fault, t) and model.can_take_down(k.takes_down, t)
                 and self.can_settle(k, model.settings)]
        for _ in range(DRAWS):  # a kind with no step valid now (no partition to target) gives way
            if not kinds:
                return None
            kind = _weighted(rng, kinds, self.novel)
            step = kind.draw(rng, model, t)
            if step is not None:
                model.settings.update(kind.settings)
                return step
            kinds.remove(kind)
        return None

    def with_step(self, schedule: StepSchedule, step: Step) -> StepSchedule:
        """`schedule` with `step` added, and the settings its kind needs."""
        kind = self.kinds.get(step.fault)
        needed = {k: v for k, v in (kind.settings if kind else {}).items() if k not in self.fixed}
        settings = {**schedule.settings, **needed}
        return replace(schedule, settings=settings).with_steps([*schedule.steps, step])

    def random_schedule(self, rng: random.Random, steps: tuple[int, int] = (1, 6)) -> StepSchedule:
        """A schedule of a few steps at random times, each drawn in the state the ones before it leave."""
        times = sorted(round(rng.uniform(0.3, self.last_start_s), 2) for _ in range(rng.randint(*steps)))
        schedule = StepSchedule((), self.settings(rng))
        model = self.model(schedule.settings)
        for t in times:
            step = self.draw_step(rng, model, t)  # settles the model for the step's kind
            if step is not None and self.admit(step, model):
                schedule = self.with_step(schedule, step)
        return schedule

    @property
    def last_start_s(self) -> float:
        return max(0.5, self.duration_s - QUIET_END_S)

    def admit(self, step: Step, model: Model) -> bool:
        """If `step` is valid in `model` now, apply it (the model moves on) and say so."""
        kind = self.kinds.get(step.fault)
        t = step.at_s
        if kind is None or not 0 <= t <= self.last_start_s or step.window_s <= 0 \
                or not target_allowed(step.target, model.capabilities):
            return False
        takes_down = takes_down_of(step.target) if kind.takes_down else None
        if not model.free(step.fault, t) or not model.can_take_down(takes_down, t) or not kind.check(step, model):
            return False
        kind.apply(step, model)
        model.busy[step.fault] = step.stop_s
        if takes_down:
            model.down[takes_down] = step.stop_s + kind.hold_s
        return True

    def repaired(self, schedule: StepSchedule) -> StepSchedule:
        """The schedule without the steps that are not valid where they stand."""
        model = self.model(schedule.settings)
        return schedule.with_steps([s for s in schedule.steps if self.admit(s, model)])

    def valid(self, schedule: StepSchedule) -> bool:
        return len(self.repaired(schedule).steps) == len(schedule.steps)

    def run_length(self, schedule: StepSchedule) -> float:
        """How long a run of `schedule` lasts: the base's duration, or longer when a staged story would
        still be waiting on the workload's writes at its end (each kind's `hold_s` past its window),
        at most MAX_RUN_FACTOR times the base's. Most runs stay short; a story gets the run it needs."""
        ends = [s.stop_s + self.kinds[s.fault].hold_s + QUIET_END_S for s in schedule.steps if s.fault in self.kinds]
        return round(min(max([self.duration_s, *ends]), self.duration_s * MAX_RUN_FACTOR), 1)

    def model_at(self, schedule: StepSchedule, t: float) -> Model:
        """The model as the schedule's steps before `t` leave it."""
        model = self.model(schedule.settings)
        for s in schedule.steps:
            if s.at_s < t:
                self.admit(s, model)
        return model


def _weighted(rng: random.Random, kinds: list[StepKind], novel: frozenset[str] = frozenset()) -> StepKind:
    weights = [k.weight * (NOVELTY if k.fault in novel else 1.0) for k in kinds]
    x = rng.random() * sum(weights)
    for k, w in zip(kinds, weights):
        x -= w
        if x < 0:
            return k
    return kinds[-1]
