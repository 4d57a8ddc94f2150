"""chaoskit's version, as every process and file reports it: the command's `--version`, test.json's
`chaoskit_version`, the proxy's `/version` and its clients' User-Agent."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("chaoskit")
except PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "0.0.0+source"
