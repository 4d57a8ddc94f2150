"""The layout convention: every package has a docstring, every module says what it is,
and every package with code has a matching test module.

A package chaoskit/a/b is matched by tests/a/b/test_*.py or tests/a/test_b.py;
plugins/x by tests/plugins/x/test_*.py or tests/plugins/test_x.py. A package whose
only file is a docstring-only __init__.py is a planned folder and needs no tests yet.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
# source root -> where its tests live
SOURCE_ROOTS = {ROOT / "chaoskit": TESTS, ROOT / "plugins": TESTS / "plugins"}


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
