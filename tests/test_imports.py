"""The import rules between chaoskit's packages, read from the source with ast (nothing is imported).

The process packages share contracts only through chaoskit.protocol ("every format two processes
agree on"), so each can be read, tested and changed without the others' insides:
- broker imports neither controller nor client; controller neither broker nor client; client
  neither broker nor controller; protocol, the floor they stand on, no other chaoskit package;
- proxy does not import cluster (cluster runs the proxy as a node: cluster/proxy_node.py);
- plugins (chaoskit_plugins) import only public names from chaoskit, and nothing of chaoskit.broker
  or chaoskit.controller.
Above those, the packages stand in layers (LAYERS, bottom first), and a module imports only from
its own layer and those below: protocol; the processes (broker, controller, client, proxy); cluster;
history; checkers; the plugin contract (roles, hookspecs, pluginmanager); nemesis and reporting;
run; explore; suite; and on top the commands (chaoskit's public face, `chaoskit.cli`, the demo and
every package's `cli`/`*_cli` module). No modules import each other in a circle, however long.
Every `import` and `from ... import` counts: at module level, in functions, under TYPE_CHECKING and
relative ones. Imports by string (importlib.import_module) are not seen.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from chaoskit.checkers.cycles import Edge, components

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {ROOT / "chaoskit": "chaoskit", ROOT / "plugins": "chaoskit_plugins"}  # folder -> import name


@dataclass(frozen=True)
class Rule:
    """Modules under `importer` must not import anything under `forbidden`, unless under `allowed`."""

    name: str
    importer: str
    forbidden: tuple[str, ...]
    allowed: tuple[str, ...] = ()

    def breaks(self, module: str, target: str) -> bool:
        return (under(module, (self.importer,)) and under(target, self.forbidden)
                and not under(target, self.allowed))


RULES = (
    Rule("broker must not import controller or client", "chaoskit.broker", ("chaoskit.controller", "chaoskit.client")),
    Rule("controller must not import broker or client", "chaoskit.controller", ("chaoskit.broker", "chaoskit.client")),
    Rule("client must not import broker or controller", "chaoskit.client", ("chaoskit.broker", "chaoskit.controller")),
    Rule("protocol must import no other chaoskit package", "chaoskit.protocol", ("chaoskit",), ("chaoskit.protocol",)),
    Rule("proxy must not import cluster", "chaoskit.proxy", ("chaoskit.cluster",)),
    Rule("plugins must not import broker or controller internals", "chaoskit_plugins",
         ("chaoskit.broker", "chaoskit.controller")),
)
PRIVATE_RULE = "plugins must import only public names from chaoskit"
# bottom first; a module imports from its own layer and those below only
LAYERS: tuple[tuple[str, ...], ...] = (
    ("chaoskit.protocol",),
    ("chaoskit.broker", "chaoskit.controller", "chaoskit.client", "chaoskit.proxy"),
    ("chaoskit.cluster",),
    ("chaoskit.history",),
    ("chaoskit.checkers",),
    ("chaoskit.roles", "chaoskit.hookspecs", "chaoskit.pluginmanager"),
    ("chaoskit.nemesis", "chaoskit.reporting"),
    ("chaoskit.run",),
    ("chaoskit.explore",),
    ("chaoskit.suite",),
)
COMMANDS = len(LAYERS)  # the top: the public face, the command line, the demo, and the plugins on them
LAYER_RULE = "a module imports nothing from a layer above its own"
# Known debts: target -> why it is still there. test_every_exemption_is_still_needed fails once one is paid.
EXEMPT: dict[str, str] = {}


@dataclass(frozen=True)
class Violation:
    path: Path
    line: int
    module: str
    target: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.module} imports {self.target} ({self.rule})"


def under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def module_name(path: Path, folder: Path, import_name: str) -> str:
    parts = list(path.relative_to(folder).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([import_name, *parts])


def imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, what is imported) for every import in the tree; `from a import b` gives "a.b"."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: counted from this module's package
                package = module.split(".") if is_package else module.split(".")[:-1]
                anchor = package[:len(package) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                yield node.lineno, base if alias.name == "*" else f"{base}.{alias.name}"


def is_private(target: str) -> bool:
    """A dotted name with a part like `_x` (dunders such as `__version__` are public)."""
    return any(p.startswith("_") and not p.endswith("__") for p in target.split("."))


def layer_of(module: str) -> int | None:
    """The module's layer (an index of LAYERS, or COMMANDS); None for a module of no layer."""
    last = module.rpartition(".")[2]
    if module in ("chaoskit", "chaoskit.cli", "chaoskit.demo") or under(module, ("chaoskit_plugins",)) or \
            (under(module, ("chaoskit",)) and (last in ("cli", "__main__") or last.endswith("_cli"))):
        return COMMANDS
    return next((i for i, prefixes in enumerate(LAYERS) if under(module, prefixes)), None)


def owning_module(target: str, modules: set[str]) -> str:
    """The module an imported name lives in (`a.b.f` -> `a.b`), or the name itself when not ours."""
    name = target
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or target


def violations(sources: dict[Path, str] = SOURCES) -> list[Violation]:
    found = []
    modules = {module_name(p, folder, name) for folder, name in sources.items() for p in folder.rglob("*.py")}
    for folder, import_name in sources.items():
        for path in sorted(folder.rglob("*.py")):
            module = module_name(path, folder, import_name)
            tree = ast.parse(path.read_text(), filename=str(path))
            for line, target in imports(tree, module, path.name == "__init__.py"):
                shown = path.relative_to(folder.parent)
                found += [Violation(shown, line, module, target, r.name) for r in RULES if r.breaks(module, target)]
                mine, theirs = layer_of(module), layer_of(owning_module(target, modules))
                if mine is not None and theirs is not None and theirs > mine:
                    found.append(Violation(shown, line, module, target, LAYER_RULE))
                if under(module, ("chaoskit_plugins",)) and under(target, ("chaoskit",)) and is_private(target):
                    found.append(Violation(shown, line, module, target, PRIVATE_RULE))
    return found


def test_packages_import_only_what_the_rules_allow():
    broken = [v for v in violations() if v.target not in EXEMPT]
    assert not broken, "imports that break the layering:\n" + "\n".join(map(str, broken))


def import_graph(sources: dict[Path, str] = SOURCES) -> dict[str, set[str]]:
    """module -> the modules of ours it imports (`from a import b` counts as a's module, or a.b's)."""
    paths = {module_name(p, folder, name): p for folder, name in sources.items() for p in sorted(folder.rglob("*.py"))}
    graph: dict[str, set[str]] = {m: set() for m in paths}
    for module, path in paths.items():
        for _, target in imports(ast.parse(path.read_text()), module, path.name == "__init__.py"):
            owner = owning_module(target, set(paths))
            if owner in paths and owner != module:
                graph[module].add(owner)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (the cycle checks' own Tarjan pass)."""
    succ = {m: [Edge(m, t, "import", "") for t in sorted(targets)] for m, targets in graph.items()}
    return sorted(sorted(c) for c in components(succ))


def test_no_modules_import_each_other_in_a_circle():
    found = circles(import_graph())
    assert not found, "modules that import each other in a circle:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_circle_finder_finds_planted_circles_and_nothing_else():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}, "g": set()}
    assert sorted(circles(graph)) == [["a", "b", "c"], ["e", "f"]]


def test_every_exemption_is_still_needed():
    used = {v.target for v in violations()}
    stale = sorted(set(EXEMPT) - used)
    assert not stale, f"exemptions nothing needs any more, delete them from EXEMPT: {stale}"


def test_the_checker_fires_on_planted_bad_imports(tmp_path: Path):
    # a rule test that cannot fail is worthless: plant one import per rule and find each
    src, plugins = tmp_path / "chaoskit", tmp_path / "plugins"
    planted = {
        src / "broker" / "bad.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from chaoskit.controller.config import ControllerConfig\n",
        src / "controller" / "__init__.py": "def f():\n    import chaoskit.broker.zk\n",
        src / "client" / "bad.py": "from chaoskit import controller\n",
        src / "protocol" / "bad.py": "from chaoskit.protocol import errors\n"
                                     "from chaoskit.cluster.spec import Address\n",
        src / "proxy" / "bad.py": "from ..cluster.node import Node\n",
        src / "proxy" / "good.py": "from chaoskit.proxy.client import ToxiproxyClient\nfrom . import client\n",
        plugins / "bad.py": "from chaoskit.roles import PENDING, _Hidden\nfrom chaoskit.broker import config\n",
        src / "checkers" / "up.py": "def f():\n    from chaoskit.run.runner import run\n",
        src / "checkers" / "cli.py": "from chaoskit.run.runner import run\n",  # a command: the top layer
        src / "run" / "runner.py": "from chaoskit.checkers import up\n",
    }
    for path, text in planted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    found = {str(v) for v in violations({src: "chaoskit", plugins: "chaoskit_plugins"})}
    assert found == {
        "chaoskit/broker/bad.py:3: chaoskit.broker.bad imports chaoskit.controller.config.ControllerConfig "
        "(broker must not import controller or client)",
        "chaoskit/controller/__init__.py:2: chaoskit.controller imports chaoskit.broker.zk "
        "(controller must not import broker or client)",
        "chaoskit/client/bad.py:1: chaoskit.client.bad imports chaoskit.controller "
        "(client must not import broker or controller)",
        "chaoskit/protocol/bad.py:2: chaoskit.protocol.bad imports chaoskit.cluster.spec.Address "
        "(protocol must import no other chaoskit package)",
        "chaoskit/proxy/bad.py:1: chaoskit.proxy.bad imports chaoskit.cluster.node.Node "
        "(proxy must not import cluster)",
        "plugins/bad.py:1: chaoskit_plugins.bad imports chaoskit.roles._Hidden "
        "(plugins must import only public names from chaoskit)",
        "plugins/bad.py:2: chaoskit_plugins.bad imports chaoskit.broker.config "
        "(plugins must not import broker or controller internals)",
        f"chaoskit/protocol/bad.py:2: chaoskit.protocol.bad imports chaoskit.cluster.spec.Address ({LAYER_RULE})",
        f"chaoskit/proxy/bad.py:1: chaoskit.proxy.bad imports chaoskit.cluster.node.Node ({LAYER_RULE})",
        f"chaoskit/checkers/up.py:2: chaoskit.checkers.up imports chaoskit.run.runner.run ({LAYER_RULE})",
    }
    graph = import_graph({src: "chaoskit", plugins: "chaoskit_plugins"})
    assert circles(graph) == [["chaoskit.checkers.up", "chaoskit.run.runner"]]
