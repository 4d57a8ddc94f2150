"""The layout convention: every package has a docstring, every module says what it is,
every package with code has a matching test module, and chaoskit's top level holds only its
public face (the run is in chaoskit/run/, the pytest side in chaoskit/suite/), and no module draws
from random's global state (a run's choices come from its seed alone).

A package chaoskit/a/b is matched by tests/a/b/test_*.py or tests/a/test_b.py;
plugins/x by tests/plugins/x/test_*.py or tests/plugins/test_x.py; a top-level module
chaoskit/m.py by tests/test_m.py. A package whose only file is a docstring-only
__init__.py is a planned folder and needs no tests yet.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
# source root -> where its tests live
SOURCE_ROOTS = {ROOT / "chaoskit": TESTS, ROOT / "plugins": TESTS / "plugins"}
# the public face, the command, the demo, and what plugins implement and how they are found
TOP_LEVEL = {"__init__", "cli", "demo", "hookspecs", "pluginmanager", "roles"}


def packages():
    for src, tests in SOURCE_ROOTS.items():
        for init in sorted(src.rglob("__init__.py")):
            yield pytest.param(init.parent, src, tests, id=str(init.parent.relative_to(ROOT)))


def has_code(package: Path) -> bool:
    modules = [p for p in package.glob("*.py") if p.name != "__init__.py"]
    body = ast.parse((package / "__init__.py").read_text()).body
    code_in_init = [n for n in body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    return bool(modules or code_in_init)


def matching_tests(package: Path, src: Path, tests: Path) -> list[Path]:
    rel = package.relative_to(src)
    if rel == Path("."):
        return sorted(tests.glob("test_*.py"))
    return sorted((tests / rel).glob("test_*.py")) + sorted((tests / rel.parent).glob(f"test_{rel.name}.py"))


@pytest.mark.parametrize("package,src,tests", list(packages()))
def test_package_has_docstring_and_tests(package: Path, src: Path, tests: Path):
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
    assert doc and doc.strip(), f"{package.relative_to(ROOT)}/__init__.py needs a docstring saying what lives there"
    if has_code(package):
        found = matching_tests(package, src, tests)
        rel = package.relative_to(src)
        expected = tests / rel / "test_*.py" if rel != Path(".") else tests / "test_*.py"
        assert found, f"{package.relative_to(ROOT)} has code but no test module: add {expected.relative_to(ROOT)}"


def test_every_module_has_a_docstring():
    missing = [
        str(p.relative_to(ROOT))
        for src in SOURCE_ROOTS
        for p in sorted(src.rglob("*.py"))
        if not ast.get_docstring(ast.parse(p.read_text()))
    ]
    assert not missing, "modules without a docstring saying what they are: " + ", ".join(missing)


# random's module-level functions share one global state that other libraries' threads move too
# (kazoo's ZooKeeper loop, kafka-python's and aiokafka's node choice): a draw from it cannot be
# replayed from a run's seed. Only the classes are allowed.
SEEDABLE = {"Random", "SystemRandom"}


def global_random_uses(source: str) -> list[int]:
    """Lines that draw from the global random state: random.f(...) or `from random import f`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "random":
            lines += [node.lineno for alias in node.names if alias.name not in SEEDABLE]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "random"
              and node.attr not in SEEDABLE):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_module_draws_from_the_global_random_state():
    found = [
        f"{p.relative_to(ROOT)}:{line}"
        for src in SOURCE_ROOTS
        for p in sorted(src.rglob("*.py"))
        for line in global_random_uses(p.read_text())
    ]
    assert not found, "draws from the global random state, which no seed replays: " + ", ".join(found)


def test_global_random_uses_fire_on_the_module_functions_only():
    assert global_random_uses("import random\nrandom.shuffle(x)\nfrom random import choice") == [2, 3]
    assert global_random_uses("import random\nrng = random.Random(7)\nrng.shuffle(x)\n"
                              "from random import Random, SystemRandom") == []


def test_checker_finds_a_package_without_tests(tmp_path: Path):
    # the convention test itself must be able to fail
    pkg = tmp_path / "src" / "lonely"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A package."""\n')
    (pkg / "code.py").write_text('"""Some code."""\nX = 1\n')
    assert has_code(pkg)
    assert matching_tests(pkg, tmp_path / "src", tmp_path / "tests") == []
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_lonely.py").write_text("")
    assert matching_tests(pkg, tmp_path / "src", tmp_path / "tests")


def test_the_top_level_holds_only_the_public_face():
    modules = {p.stem for p in (ROOT / "chaoskit").glob("*.py")}
    assert modules <= TOP_LEVEL, (f"chaoskit/ has loose modules {sorted(modules - TOP_LEVEL)}: put the run's in "
                                  "chaoskit/run/, the pytest side's in chaoskit/suite/, or a package of their own")


@pytest.mark.parametrize("module", sorted(TOP_LEVEL - {"__init__"}))
def test_every_top_level_module_has_its_test_module(module: str):
    assert (TESTS / f"test_{module}.py").exists(), f"chaoskit/{module}.py has no tests/test_{module}.py"


def test_the_readme_links_every_page_of_the_docs_and_the_docs_speak_to_users():
    import re

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    pages = sorted(p.name for p in (root / "docs").glob("*.md"))
    assert [p for p in pages if f"(docs/{p})" not in readme] == [], "pages the README's index does not link"
    for page in (root / "docs").glob("*.md"):
        text = page.read_text()
        assert not re.search(r"\b[Ii]ssue \d+|\.\./shared/", text), f"{page.name} points at work items or outside files"
