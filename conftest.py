"""What is project-wide for this repository's own test runs (tests/ and suites/).

pytest reads this file first. The plugin itself comes from its `pytest11` entry point, as it does
for every user; here is only what holds for this checkout: its runs use this checkout's code, not
another installed copy (run `make setup` to install it). The other project-wide switches are ini
keys in pyproject.toml (`chaos_allure`: the suites' Allure results under reports/allure-results).
"""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    import chaoskit
    import chaoskit_plugins

    for package in (chaoskit, chaoskit_plugins):
        where = Path(package.__file__).resolve().parent.parent
        if where != ROOT:
            raise pytest.UsageError(f"{package.__name__} is imported from {where}, not this checkout ({ROOT}): "
                                    "run `make setup` here (it installs the checkout into .venv, editable)")


# --- the docker images, built early ----------------------------------------------------------
# The first docker test would otherwise build the images (a few minutes from nothing) while the
# session waits. When the session holds docker tests and an engine answers, the build starts in the
# background as collection ends, at low priority, and the docker tests run last; their own build
# waits for it (the images module's lock) and then finds every image made.
EARLY_BUILD = pytest.StashKey()


@pytest.hookimpl(trylast=True)  # after pytest's own ordering by fixture scope
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("docker") is not None)  # stable: order kept within


def pytest_collection_finish(session: pytest.Session) -> None:
    import os
    import shutil
    import subprocess
    import sys

    if os.environ.get("CHAOSKIT_EARLY_IMAGES", "1") == "0" or session.config.option.collectonly:
        return
    if not any(item.get_closest_marker("docker") for item in session.items):
        return
    from chaoskit.cluster.docker_engine import EngineUnavailable, engine

    try:
        engine(timeout=5).close()
    except EngineUnavailable:
        return  # the docker tests say why they cannot run
    log = ROOT / "reports" / "images-build.log"
    log.parent.mkdir(exist_ok=True)
    log.write_text("")
    with open(log, "a") as out:  # appended to by the build's own log as well
        # idle I/O priority too: debootstrap and the layers' writes otherwise slow the tests' disks
        idle_io = ["ionice", "-c3"] if shutil.which("ionice") else []
        session.config.stash[EARLY_BUILD] = subprocess.Popen(
            idle_io + [sys.executable, "-c", "import os, sys; os.nice(10); from chaoskit.cli import main; sys.exit(main())",
             "images", "build", "--log", str(log)], stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    build = session.config.stash.get(EARLY_BUILD, None)
    if build is not None and build.poll() is None:
        build.terminate()  # the session ended before its docker tests needed the images
        build.wait(30)
