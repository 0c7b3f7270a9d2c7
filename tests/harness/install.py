"""Where the harness CLIs the harness tests drive are installed: <repo>/.cache/harness (pinned in versions.json).

Minimal stand-in of the shared rig's installer, to its interface: `binary(name)`
is the installed executable or raises NotInstalled.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "harness"
MODULES = CACHE / "node_modules"
VERSIONS = Path(__file__).with_name("versions.json")
PACKAGES = {"gemini": "@google/gemini-cli", "opencode": "opencode-ai"}
_ARCH = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}


class NotInstalled(RuntimeError):
    """A harness CLI is not in the cache."""


def _platform_binary(name: str) -> Path:
    if name == "opencode":
        # bin/opencode in opencode-ai is a node launcher that finds and spawns this (its postinstall may not run).
        return MODULES / f"opencode-linux-{_ARCH.get(platform.machine(), platform.machine())}" / "bin" / "opencode"
    # @google/gemini-cli is plain JavaScript: its bin is bundle/gemini.js, run by node (20 or newer).
    return MODULES / ".bin" / name


def binary(name: str) -> Path:
    if name not in PACKAGES:
        raise NotInstalled(f"unknown harness {name!r}; known: {', '.join(PACKAGES)}")
    candidate = _platform_binary(name)
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    pinned = json.loads(VERSIONS.read_text())[PACKAGES[name]]
    raise NotInstalled(f"{name} is not installed under {CACHE}; run "
                       f"`npm install --prefix {CACHE} {PACKAGES[name]}@{pinned}`")
