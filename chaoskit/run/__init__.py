"""The run: a chaos test as data (chaostest.py), the live run its parts share (live.py), the runner
that plays it phase by phase (runner.py) with its worker processes (workers.py), the fault mixes
suites and the demo share (mixes.py), and `chaoskit run`, which replays a test.json (cli.py).

Everything a run needs is here; chaoskit/suite/ (the pytest side), chaoskit/demo.py and
`chaoskit run` are ways to start one.
"""
import sys as _sys
import types as _types


class _CallablePackage(_types.ModuleType):
    """`from chaoskit import run` names both this package and the function that runs a test: once
    the package is imported, Python binds `chaoskit.run` to it, so the package itself runs a test."""

    def __call__(self, test, progress=False, keep=False):  # type: ignore[no-untyped-def]
        from chaoskit.run.runner import run

        return run(test, progress=progress, keep=keep)


_sys.modules[__name__].__class__ = _CallablePackage
