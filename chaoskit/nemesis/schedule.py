"""The seeded fault schedule: a pure function from (spec, seed) to fault windows.

A spec, as a dict (from a suite, an ini option or a JSON file)::

    {
      "duration_s": 60,            # the run's length; every window ends by then
      "mean_interval_s": 5,        # mean gap between fault arrivals
      "window_s": [1, 4],          # a window's length, drawn uniformly from [min, max]
      "quiet_end_s": 5,            # optional: no fault in the last 5 s (the cluster settles)
      "faults": {
        "partition": {"weight": 3, "targets": ["leader-of:orders/0", "random-broker"]},
        "latency":   {"weight": 1, "targets": ["client"],
                      "params": {"ms": {"uniform": [50, 500]}}, "overlap": true},
        "kill":      {"weight": 1, "targets": ["active-controller"], "window_s": [2, 6]}
      },
      "scripted": [                # optional: windows at fixed times, whatever the seed
        {"at": 0.25, "fault": "admin", "target": "client", "params": {"op": "expand", "by": 2}, "window_s": 1}
      ]
    }

Generation walks arrival times from 0: each gap is uniform on
``[0, 2 * mean_interval_s]`` (mean as given, bounded, like Jepsen's stagger). At
each arrival it draws, in this order, the fault (by weight), the window length,
the target (uniform over the fault's targets), the params (``{"uniform": [lo, hi]}``
and ``{"choice": [...]}`` are drawn; other values pass through) and ``pick``, a
31-bit number the nemesis uses for any choice it makes when resolving the target
(which follower, which broker), so that choice too flows from the seed. A fault
that is still active ignores the arrival unless its ``overlap`` is true. Windows
are cut at ``duration_s - quiet_end_s``: faults always heal by the run's end.

``scripted`` windows are the steps a suite needs whatever the seed (an expansion at a quarter of
the run, a shrink at three quarters): each opens at ``at`` (a fraction of ``duration_s``) or
``at_s`` seconds for ``window_s`` seconds. Their ``pick`` comes from a generator of their own, so
adding a scripted step never changes the random windows a seed gives, unless the step gives its
own ``pick`` (an int): then the step hits the same node whatever steps come before it, which is
what lets a search delete and move steps (chaoskit explore). ``faults`` may then be empty.

Only ``random.Random(seed).random()`` and ``getrandbits`` are used, whose output
CPython keeps stable across versions. Times are rounded to milliseconds and the
file is canonical JSON (sorted keys, Python's shortest round-trip float form,
one window per line), so the same spec and seed give the same bytes.
"""
from __future__ import annotations

import bisect
import json
import math
import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from chaoskit.nemesis.targets import TargetSpecError, parse_target

SCHEDULE_FILE = "nemesis-schedule.json"
FORMAT = 1
MAX_EXPECTED_WINDOWS = 100_000
_SPEC_KEYS = {"duration_s", "mean_interval_s", "window_s", "quiet_end_s", "faults", "scripted"}
_SCRIPTED_KEYS = {"at", "at_s", "fault", "target", "params", "window_s", "pick"}
_FAULT_KEYS = {"weight", "targets", "params", "window_s", "overlap"}


class ScheduleSpecError(ValueError):
    """A schedule spec that cannot be used; the message names the field and the fix."""


@dataclass(frozen=True)
class FaultMix:
    """One entry of a spec's fault mix."""

    name: str
    weight: float
    targets: tuple[str, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    window_s: tuple[float, float] | None = None  # None: the spec's window_s
    overlap: bool = False


@dataclass(frozen=True)
class Scripted:
    """A window at a fixed time (seconds from the start), the same for every seed."""

    at_s: float
    fault: str
    target: str
    window_s: float
    params: Mapping[str, Any] = field(default_factory=dict)
    pick: int | None = None  # None: drawn from the seed's scripted stream


@dataclass(frozen=True)
class ScheduleSpec:
    """A validated spec; build it with :meth:`from_dict`."""

    duration_s: float
    mean_interval_s: float
    window_s: tuple[float, float]
    faults: tuple[FaultMix, ...]  # sorted by name, so a dict's key order never matters
    quiet_end_s: float = 0.0
    scripted: tuple[Scripted, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScheduleSpec:
        _mapping("schedule spec", data, required={"duration_s", "mean_interval_s", "window_s", "faults"},
                 allowed=_SPEC_KEYS)
        duration = _number("duration_s", data["duration_s"], positive=True)
        mean = _number("mean_interval_s", data["mean_interval_s"], positive=True)
        quiet = _number("quiet_end_s", data.get("quiet_end_s", 0.0))
        if quiet >= duration:
            raise ScheduleSpecError(f"quiet_end_s ({quiet}) must be below duration_s ({duration}): no time left for faults")
        if duration / mean > MAX_EXPECTED_WINDOWS:
            raise ScheduleSpecError(
                f"duration_s / mean_interval_s = {duration / mean:.0f} fault arrivals, above {MAX_EXPECTED_WINDOWS}; "
                "raise mean_interval_s"
            )
        scripted = _scripted(data.get("scripted", []), duration)
        faults = data["faults"]
        if not isinstance(faults, Mapping) or not (faults or scripted):
            raise ScheduleSpecError("faults must be a non-empty mapping of fault name -> {weight, targets, ...} "
                                    "(it may be empty only when `scripted` has windows)")
        mixes = tuple(_fault_mix(str(name), faults[name]) for name in sorted(faults))
        return cls(duration, mean, _range("window_s", data["window_s"]), mixes, quiet, scripted)

    @property
    def fault_names(self) -> set[str]:
        """Every fault the schedule may open: the random mix's and the scripted steps'."""
        return {m.name for m in self.faults} | {w.fault for w in self.scripted}

    def to_dict(self) -> dict[str, Any]:
        """The spec with every default spelled out; ``from_dict`` of it gives the same spec."""
        faults = {}
        for mix in self.faults:
            entry = asdict(mix)
            del entry["name"]
            entry["targets"] = list(mix.targets)
            entry["window_s"] = list(mix.window_s) if mix.window_s else None
            faults[mix.name] = entry
        out = {"duration_s": self.duration_s, "mean_interval_s": self.mean_interval_s,
               "window_s": list(self.window_s), "quiet_end_s": self.quiet_end_s, "faults": faults}
        if self.scripted:
            out["scripted"] = [{"at_s": w.at_s, "fault": w.fault, "target": w.target, "params": dict(w.params),
                                "window_s": w.window_s, **({"pick": w.pick} if w.pick is not None else {})}
                               for w in self.scripted]
        return out


@dataclass(frozen=True)
class Window:
    """One fault window of a schedule (implements :class:`chaoskit.roles.Fault`)."""

    id: int
    start_s: float
    stop_s: float
    name: str
    target: str
    params: Mapping[str, Any]
    pick: int


@dataclass(frozen=True)
class Schedule:
    """The windows one (spec, seed) gives, with both kept so the file replays by itself."""

    seed: int
    spec: ScheduleSpec
    windows: tuple[Window, ...]

    def to_json(self) -> str:
        head = {"format": FORMAT, "seed": self.seed, "spec": self.spec.to_dict()}
        lines = [f" {_canonical(k)}: {_canonical(v)}," for k, v in sorted(head.items())]
        rows = "".join(f"\n  {_canonical(asdict(w))}," for w in self.windows).rstrip(",")
        return "{\n" + "\n".join(lines) + f'\n "windows": [{rows}\n ]\n}}\n'


    @classmethod
    def from_json(cls, text: str) -> Schedule:
        """Read a schedule file back; the spec is re-validated and the windows regenerated and compared."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScheduleSpecError(f"schedule file is not JSON: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT or not {"seed", "spec"} <= set(data):
            raise ScheduleSpecError(f"not a chaoskit schedule file: expected \"format\": {FORMAT}, \"seed\" and \"spec\"")
        schedule = generate(ScheduleSpec.from_dict(data["spec"]), data["seed"])
        if [asdict(w) for w in schedule.windows] != data.get("windows"):
            raise ScheduleSpecError(
                "the file's windows differ from what its spec and seed generate; it was edited or written by "
                "another chaoskit version -- regenerate it from the spec and seed"
            )
        return schedule

    def write(self, run_dir: Path | str) -> Path:
        """Write ``nemesis-schedule.json`` into the run directory (atomically) and return its path."""
        path = Path(run_dir) / SCHEDULE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(self.to_json(), encoding="ascii")
        os.replace(tmp, path)
        return path


def generate(spec: ScheduleSpec | Mapping[str, Any], seed: int) -> Schedule:
    """The fault windows for ``spec`` and ``seed``; pure: no clock, no global randomness."""
    if not isinstance(spec, ScheduleSpec):
        spec = ScheduleSpec.from_dict(spec)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ScheduleSpecError(f"the seed must be an int, got {type(seed).__name__} {seed!r}")
    rng = random.Random(seed)
    end = _ms(spec.duration_s - spec.quiet_end_s)
    cumulative = list(_running_sums(m.weight for m in spec.faults))
    busy_until: dict[str, float] = {}
    drafts: list[tuple[float, float, str, str, dict[str, Any], int]] = []
    t = 0.0
    while spec.faults:
        t = _ms(t + max(0.001, _uniform(rng, 0.0, 2 * spec.mean_interval_s)))  # >= 1 ms: time always advances
        if t >= end:
            break
        mix = spec.faults[min(bisect.bisect_right(cumulative, rng.random() * cumulative[-1]), len(spec.faults) - 1)]
        length = _uniform(rng, *(mix.window_s or spec.window_s))
        target = mix.targets[_below(rng, len(mix.targets))]
        params = {k: _draw(rng, v) for k, v in sorted(mix.params.items())}
        pick = rng.getrandbits(31)
        if not mix.overlap and t < busy_until.get(mix.name, 0.0):
            continue  # this fault is still active: the arrival passes
        stop = min(_ms(t + length), end)
        if stop > t:
            busy_until[mix.name] = stop
            drafts.append((t, stop, mix.name, target, params, pick))
    scripted_rng = random.Random(f"{seed}/scripted")  # its own stream: the random windows stay the same
    for step in spec.scripted:
        drawn = scripted_rng.getrandbits(31)  # drawn either way: a given pick leaves the others' alone
        pick = step.pick if step.pick is not None else drawn
        stop = min(_ms(step.at_s + step.window_s), _ms(spec.duration_s))
        params = {k: _draw(scripted_rng, v) for k, v in sorted(step.params.items())}
        drafts.append((step.at_s, stop, step.fault, step.target, params, pick))
    windows = tuple(Window(i, *d) for i, d in enumerate(sorted(drafts, key=lambda d: d[:4])))
    return Schedule(seed, spec, windows)


# --- drawing -------------------------------------------------------------------------------

def _ms(seconds: float) -> float:
    return round(seconds, 3)


def _uniform(rng: random.Random, lo: float, hi: float) -> float:
    return lo + (hi - lo) * rng.random()


def _below(rng: random.Random, n: int) -> int:
    return min(int(rng.random() * n), n - 1)


def _running_sums(values: Any) -> Any:
    total = 0.0
    for v in values:
        total += v
        yield total


def _draw(rng: random.Random, value: Any) -> Any:
    if isinstance(value, Mapping) and "uniform" in value:
        return _ms(_uniform(rng, *value["uniform"]))
    if isinstance(value, Mapping) and "choice" in value:
        return value["choice"][_below(rng, len(value["choice"]))]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True)


# --- validation ----------------------------------------------------------------------------

def _mapping(where: str, data: Any, *, required: set[str], allowed: set[str]) -> None:
    if not isinstance(data, Mapping):
        raise ScheduleSpecError(f"{where} must be a mapping, got {type(data).__name__}")
    unknown = set(data) - allowed
    if unknown:
        raise ScheduleSpecError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    missing = required - set(data)
    if missing:
        raise ScheduleSpecError(f"{where}: missing field(s) {sorted(missing)}")


def _number(where: str, value: Any, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ScheduleSpecError(f"{where} must be a finite number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ScheduleSpecError(f"{where} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


def _range(where: str, value: Any) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ScheduleSpecError(f"{where} must be [min, max], got {value!r}")
    lo, hi = (_number(f"{where}[{i}]", v) for i, v in enumerate(value))
    if not 0 < lo <= hi:
        raise ScheduleSpecError(f"{where} must satisfy 0 < min <= max, got {list(value)!r}")
    return lo, hi


def _scripted(steps: Any, duration: float) -> tuple[Scripted, ...]:
    if not isinstance(steps, (list, tuple)):
        raise ScheduleSpecError(f"scripted must be a list of {{at or at_s, fault, target, window_s}}, got {steps!r}")
    out = []
    for i, step in enumerate(steps):
        where = f"scripted[{i}]"
        _mapping(where, step, required={"fault", "target", "window_s"}, allowed=_SCRIPTED_KEYS)
        if ("at" in step) == ("at_s" in step):
            raise ScheduleSpecError(f"{where}: give exactly one of `at` (a fraction of duration_s) or `at_s` (seconds)")
        if "at" in step:
            fraction = _number(f"{where}.at", step["at"])
            if fraction >= 1:
                raise ScheduleSpecError(f"{where}.at is a fraction of the run in [0, 1), got {fraction!r}")
            at = _ms(fraction * duration)
        else:
            at = _ms(_number(f"{where}.at_s", step["at_s"]))
        if at >= duration:
            raise ScheduleSpecError(f"{where} opens at {at} s, not before the run's end ({duration} s)")
        _target(f"{where}.target", step["target"])
        params = _params(where, step)
        pick = step.get("pick")
        if pick is not None and (isinstance(pick, bool) or not isinstance(pick, int) or not 0 <= pick < 2 ** 31):
            raise ScheduleSpecError(f"{where}.pick must be an int in [0, 2**31), got {pick!r}")
        out.append(Scripted(at, str(step["fault"]), step["target"], _number(f"{where}.window_s", step["window_s"],
                                                                            positive=True), params, pick))
    return tuple(out)


def _target(where: str, spec: Any) -> None:
    try:
        parse_target(spec)
    except TargetSpecError as exc:
        raise ScheduleSpecError(f"{where}: {exc}") from None


def _params(where: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    params = entry.get("params", {})
    if not isinstance(params, Mapping):
        raise ScheduleSpecError(f"{where}.params must be a mapping, got {type(params).__name__}")
    for key, value in params.items():
        _check_param(f"{where}.params.{key}", value)
    return dict(params)


def _fault_mix(name: str, entry: Any) -> FaultMix:
    where = f"faults.{name}"
    _mapping(where, entry, required={"weight", "targets"}, allowed=_FAULT_KEYS)
    targets = entry["targets"]
    if not isinstance(targets, (list, tuple)) or not targets:
        raise ScheduleSpecError(f"{where}.targets must be a non-empty list of target specs, got {targets!r}")
    for spec in targets:
        _target(f"{where}.targets", spec)
    params = _params(where, entry)
    overlap = entry.get("overlap", False)
    if not isinstance(overlap, bool):
        raise ScheduleSpecError(f"{where}.overlap must be true or false, got {overlap!r}")
    window = entry.get("window_s")
    return FaultMix(name, _number(f"{where}.weight", entry["weight"], positive=True), tuple(targets),
                    dict(params), _range(f"{where}.window_s", window) if window is not None else None, overlap)


def _check_param(where: str, value: Any) -> None:
    try:
        _canonical(value)
    except (TypeError, ValueError) as exc:
        raise ScheduleSpecError(f"{where} must be plain JSON data: {exc}") from None
    if isinstance(value, Mapping) and "uniform" in value:
        if set(value) != {"uniform"}:
            raise ScheduleSpecError(f"{where}: a drawn parameter is exactly {{\"uniform\": [lo, hi]}}, got {value!r}")
        lo, hi = (_number(f"{where}.uniform[{i}]", v) for i, v in enumerate(_pair(where, value["uniform"])))
        if lo > hi:
            raise ScheduleSpecError(f"{where}.uniform must be [lo, hi] with lo <= hi, got {value['uniform']!r}")
    elif isinstance(value, Mapping) and "choice" in value:
        if set(value) != {"choice"} or not isinstance(value["choice"], list) or not value["choice"]:
            raise ScheduleSpecError(f"{where}: a drawn parameter is exactly {{\"choice\": [non-empty list]}}, got {value!r}")


def _pair(where: str, value: Any) -> list[Any]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ScheduleSpecError(f"{where}.uniform must be [lo, hi], got {value!r}")
    return list(value)
