"""The docker backend's images, built from docker/ and tagged by a hash of their inputs.

Four images, each FROM the one before: `base` (BASE_IMAGE, default python:3.11-slim-bookworm, plus
what it lacks), `zookeeper`, `node` (the project and its run-time dependencies in a venv; broker
and controller) and `proxy`. An image's tag is `chaoskit/<name>:<hash>` where the hash covers its
Dockerfile, its build-context files and its parent's image id, so an image is rebuilt exactly when
one of those changed and a second build only looks the tags up. Where BASE_IMAGE is absent and
cannot be pulled (no registry), docker/bootstrap-base.sh makes a Debian base with debootstrap.

    tags = build_images(docker.from_env())   # {"base": "chaoskit/base:1a2b..", "zookeeper": ...}
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_BASE_IMAGE = "python:3.11-slim-bookworm"
BOOTSTRAP_TAG = "chaoskit/bootstrap-base:bookworm"
REPOSITORY = "chaoskit"
LABEL = "chaoskit.image"
INPUTS_LABEL = "chaoskit.inputs"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = PROJECT_ROOT / "docker"
# what the node image needs at run time (the broker, controller and proxy import only these);
# pinned to the versions installed here so the node runs what the tests ran
RUNTIME_REQUIREMENTS = ("kafka-python", "crc32c", "kazoo", "psutil", "pluggy")
# the project files the node image installs; a change to any of them makes a new node image
PROJECT_INPUTS = ("pyproject.toml", "setup.py", "README.md", "chaoskit", "plugins")
LOCK_PATH = Path(tempfile.gettempdir()) / "chaoskit-images.lock"

Say = Callable[[str], None]


class ImageBuildError(Exception):
    """An image could not be built; the message names it and carries the tail of the build log."""


@dataclass(frozen=True)
class ImageSpec:
    name: str
    dockerfile: str
    files: tuple[str, ...] = ()  # extra files from docker/ copied into the build context
    needs_wheels: bool = False


IMAGES = (
    ImageSpec("base", "base.Dockerfile"),
    ImageSpec("zookeeper", "zookeeper.Dockerfile", ("zookeeper-entrypoint.sh",)),
    ImageSpec("node", "node.Dockerfile", needs_wheels=True),
    ImageSpec("proxy", "proxy.Dockerfile"),
)
PARENT = {"zookeeper": "base", "node": "base", "proxy": "node"}


def requirements() -> str:
    """The node's run-time requirements, pinned to what is installed beside this chaoskit."""
    return "".join(f"{name}=={importlib.metadata.version(name)}\n" for name in RUNTIME_REQUIREMENTS)


def _project_files() -> list[Path]:
    out: list[Path] = []
    for entry in PROJECT_INPUTS:
        path = PROJECT_ROOT / entry
        if path.is_file():
            out.append(path)
        elif path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                          and not p.name.endswith(".pyc"))
    return out


def input_hash(spec: ImageSpec, parent_id: str) -> str:
    """A hash of everything that goes into `spec`'s image: Dockerfile, context files, parent id."""
    h = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        h.update(b"%s\0%d\0" % (label.encode(), len(data)))
        h.update(data)
    add("parent", parent_id.encode())
    for name in (spec.dockerfile, *spec.files):
        add(name, (DOCKER_DIR / name).read_bytes())
    if spec.needs_wheels:
        add("requirements.txt", requirements().encode())
        for path in _project_files():
            add(str(path.relative_to(PROJECT_ROOT)), path.read_bytes())
    return h.hexdigest()


def _wheels(ctx: Path, say: Say) -> None:
    """deps/: the run-time dependencies' wheels; project/: the project's (pip's cache makes repeats quick)."""
    req = ctx / "requirements.txt"
    req.write_text(requirements())
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir"]
    for cmd in (pip + [str(ctx / "deps"), "-r", str(req)], pip + [str(ctx / "project"), "--no-deps", str(PROJECT_ROOT)]):
        say(f"  {' '.join(cmd[2:])}")
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise ImageBuildError(f"building wheels for the node image failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")


def _context(spec: ImageSpec, say: Say) -> Path:
    ctx = Path(tempfile.mkdtemp(prefix=f"chaoskit-{spec.name}-ctx-"))
    for name in (spec.dockerfile, *spec.files):
        shutil.copy2(DOCKER_DIR / name, ctx / name)
    if spec.needs_wheels:
        _wheels(ctx, say)
    return ctx


def _build(client: Any, spec: ImageSpec, tag: str, digest: str, buildargs: dict[str, str], log_path: Path,
           say: Say) -> str:
    """docker build through the engine API, streaming the log to `log_path`; the new image's id."""
    ctx = _context(spec, say)
    try:
        image_id = None
        tail: list[str] = []
        with open(log_path, "a") as log:
            log.write(f"=== building {tag} ({spec.dockerfile}, args {buildargs})\n")
            for chunk in client.api.build(path=str(ctx), dockerfile=spec.dockerfile, tag=tag, buildargs=buildargs,
                                          rm=True, forcerm=True, decode=True,
                                          # a light share of the CPU when it is contended: a build
                                          # beside running clusters must not starve their timing
                                          container_limits={"cpushares": 256},
                                          labels={LABEL: spec.name, INPUTS_LABEL: digest}):
                text = chunk.get("stream") or chunk.get("status") or ""
                if text:
                    log.write(text)
                    tail = (tail + text.splitlines())[-30:]
                if "error" in chunk:
                    raise ImageBuildError(f"building {tag} failed: {chunk['error']}\n" + "\n".join(tail)
                                          + f"\n(full log: {log_path})")
                if "aux" in chunk and "ID" in chunk["aux"]:
                    image_id = chunk["aux"]["ID"]
        return image_id or client.images.get(tag).id
    finally:
        shutil.rmtree(ctx, ignore_errors=True)


def _present(client: Any, ref: str) -> Any | None:
    import docker.errors

    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def base_image(client: Any, wanted: str | None, say: Say, log_path: Path) -> tuple[str, str]:
    """(reference, image id) of the base to build on: `wanted` (BASE_IMAGE) when present or pullable,
    else the debootstrap base (made now when missing, and timed)."""
    import docker.errors

    chosen = wanted or os.environ.get("BASE_IMAGE")
    ref = chosen or DEFAULT_BASE_IMAGE
    image = _present(client, ref)
    if image is None and not chosen and _present(client, BOOTSTRAP_TAG) is not None:
        ref, image = BOOTSTRAP_TAG, _present(client, BOOTSTRAP_TAG)  # made before: no pull to try again
    if image is None and ref != BOOTSTRAP_TAG:
        try:
            say(f"pulling {ref}")
            image = client.images.pull(ref)
        except docker.errors.APIError as e:
            say(f"cannot pull {ref} ({str(e).splitlines()[0][:120]}); using the debootstrap base instead")
            ref = BOOTSTRAP_TAG
            image = _present(client, ref)
    if image is None:
        script = DOCKER_DIR / "bootstrap-base.sh"
        say(f"making {BOOTSTRAP_TAG} with {script} (debootstrap: a few minutes)")
        began = time.monotonic()
        with open(log_path, "a") as log:
            done = subprocess.run([str(script), BOOTSTRAP_TAG], stdout=log, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            raise ImageBuildError(f"{script} failed with code {done.returncode}; see {log_path}")
        say(f"bootstrap base made in {time.monotonic() - began:.1f}s")
        image = client.images.get(BOOTSTRAP_TAG)
    return ref, image.id


def build_images(client: Any, base: str | None = None, say: Say | None = None,
                 log_path: Path | None = None) -> dict[str, str]:
    """Every image, built only where its input hash has no image yet; {name: tag}. One build at a
    time on a machine: a second waits for the first (an early build in the background, a test suite's
    clusters) and then finds its images made."""
    import fcntl

    say = say or (lambda text: None)
    log_path = log_path or Path(tempfile.gettempdir()) / "chaoskit-images-build.log"
    with open(LOCK_PATH, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"another chaoskit is building the images ({LOCK_PATH} is held); waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)  # released by the OS when that process ends, however
        return _build_all(client, base, say, log_path)


def _build_all(client: Any, base: str | None, say: Say, log_path: Path) -> dict[str, str]:
    base_ref, parent_id = base_image(client, base, say, log_path)
    ids = {"<base>": parent_id}
    tags: dict[str, str] = {}
    for spec in IMAGES:
        parent_ref = base_ref if spec.name == "base" else tags[PARENT[spec.name]]
        pid = parent_id if spec.name == "base" else ids[PARENT[spec.name]]
        digest = input_hash(spec, pid)
        tag = f"{REPOSITORY}/{spec.name}:{digest[:16]}"
        existing = _present(client, tag)
        if existing is not None:
            say(f"{tag}: up to date")
            ids[spec.name] = existing.id
        else:
            began = time.monotonic()
            say(f"{tag}: building from docker/{spec.dockerfile}")
            args = {"BASE_IMAGE": parent_ref} if spec.name == "base" else {"BASE": parent_ref}
            ids[spec.name] = _build(client, spec, tag, digest, args, log_path, say)
            say(f"{tag}: built in {time.monotonic() - began:.1f}s")
        client.images.get(tag).tag(f"{REPOSITORY}/{spec.name}", "latest")  # for compose.yaml
        tags[spec.name] = tag
    return tags


def list_images(client: Any) -> list[dict[str, Any]]:
    """chaoskit's images on the engine: name, tags, id, size, created."""
    out = []
    for image in client.images.list(filters={"label": LABEL}):
        out.append({"name": image.labels.get(LABEL), "tags": sorted(image.tags), "id": image.short_id,
                    "size_mb": round(image.attrs.get("Size", 0) / 1e6, 1), "created": image.attrs.get("Created")})
    return sorted(out, key=lambda i: (i["name"] or "", i["created"] or ""))


def describe(tags: dict[str, str]) -> str:
    return json.dumps(tags, sort_keys=True)
