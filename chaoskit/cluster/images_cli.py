"""`chaoskit images build|list`: the docker backend's images (chaoskit.cluster.images).

`build` makes whatever image's inputs changed since its last build (a second build only looks the
tags up) and prints one JSON object {name: tag} on stdout; progress goes to stderr. `list` prints
chaoskit's images on the engine, one JSON object per line. Both exit 3 (bad input) with one line when
no Docker engine answers; `build` exits 1 when a build fails, naming its log.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    images = sub.add_parser("images", help="build or list the docker backend's images")
    actions = images.add_subparsers(dest="images_command", metavar="ACTION", required=True)
    build = actions.add_parser("build", help="build the images whose inputs changed (from no images at all too)",
                               description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    build.add_argument("--base-image", metavar="REF",
                       help="the base to build on (default $BASE_IMAGE or python:3.11-slim-bookworm; made with "
                            "debootstrap when absent and not pullable)")
    build.add_argument("--log", type=Path, help="the build log (default a file in the temp directory)")
    build.set_defaults(func=images_build)
    listing = actions.add_parser("list", help="chaoskit's images on the engine, one JSON object per line")
    listing.set_defaults(func=images_list)


def _engine() -> Any:
    from chaoskit.run.options import UsageError
    from chaoskit.cluster.docker_engine import EngineUnavailable, engine

    try:
        return engine()
    except EngineUnavailable as e:
        raise UsageError(str(e)) from None


def images_build(args: argparse.Namespace) -> int:
    from chaoskit.run.options import UsageError
    from chaoskit.cluster.images import ImageBuildError, build_images

    if args.log is not None and args.log.is_dir():
        raise UsageError(f"--log {args.log} is a folder; name a file")
    client = _engine()
    began = time.monotonic()
    try:
        tags = build_images(client, args.base_image, say=lambda t: print(t, file=sys.stderr, flush=True),
                            log_path=args.log)
    except ImageBuildError as e:
        print(f"chaoskit images build: {e}", file=sys.stderr)
        return 1
    print(f"images ready in {time.monotonic() - began:.1f}s", file=sys.stderr)
    print(json.dumps(tags, sort_keys=True))
    return 0


def images_list(args: argparse.Namespace) -> int:
    from chaoskit.cluster.images import list_images

    for image in list_images(_engine()):
        print(json.dumps(image))
    return 0
