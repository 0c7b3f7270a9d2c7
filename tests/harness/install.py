"""Install the real harness CLIs the harness tests drive, pinned, into <repo>/.cache/harness.

`python -m tests.harness.install [claude codex ...]` installs the named ones
(by default every one versions.json pins) with `npm install --prefix .cache/harness <pkg>@<version>`;
tests then call `binary(name)` and never touch the network. Versions are
pinned in versions.json; AGORA_HARNESS_<NAME>_VERSION overrides one (NAME is
CLAUDE, CODEX, GEMINI or OPENCODE).

Each package ships its program as a per-platform optional dependency, and npm
may skip the postinstall that copies it into place, so `binary` points at the
platform package's executable itself, which needs no install script.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "harness"
MODULES = CACHE / "node_modules"
VERSIONS = Path(__file__).with_name("versions.json")

PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
    "opencode": "opencode-ai",
}

_ARCH = {"x86_64": ("x64", "x86_64"), "aarch64": ("arm64", "aarch64"), "arm64": ("arm64", "aarch64")}


class NotInstalled(RuntimeError):
    """A harness CLI is not in the cache."""


def version(name: str) -> str:
    override = os.environ.get(f"AGORA_HARNESS_{name.upper()}_VERSION")
    if override:
        return override
    pinned = json.loads(VERSIONS.read_text())
    try:
        return pinned[PACKAGES[name]]
    except KeyError:
        raise NotInstalled(f"no pinned version for {name} ({PACKAGES.get(name, '?')}) in {VERSIONS}; "
                           f"add one or set AGORA_HARNESS_{name.upper()}_VERSION") from None


def _platform_binary(name: str) -> Path:
    npm_arch, rust_arch = _ARCH.get(platform.machine(), (platform.machine(), platform.machine()))
    if name == "claude":
        # The wrapper's install.cjs copies this file over bin/claude.exe; we run it where it lies.
        return MODULES / "@anthropic-ai" / f"claude-code-linux-{npm_arch}" / "claude"
    if name == "codex":
        # bin/codex.js only picks and spawns this binary.
        return (MODULES / "@openai" / f"codex-linux-{npm_arch}" / "vendor" / f"{rust_arch}-unknown-linux-musl"
                / "bin" / "codex")
    if name == "opencode":
        # opencode-ai's bin/opencode is a node launcher that finds and spawns this (its postinstall may not run).
        return MODULES / f"opencode-linux-{npm_arch}" / "bin" / "opencode"
    # @google/gemini-cli is plain JavaScript: its bin runs under node (20 or newer).
    return MODULES / ".bin" / name


def binary(name: str) -> Path:
    """The installed executable of harness `name`; NotInstalled says how to install it."""
    if name not in PACKAGES:
        raise NotInstalled(f"unknown harness {name!r}; known: {', '.join(PACKAGES)}")
    for candidate in (_platform_binary(name), MODULES / ".bin" / name):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise NotInstalled(f"{name} is not installed under {CACHE}; run `python -m tests.harness.install {name}` "
                       "(or `make test-harness`, which does)")


def installed_version(name: str) -> str | None:
    manifest = MODULES / PACKAGES[name] / "package.json"
    try:
        return json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def install(names: list[str]) -> None:
    """npm-install each named harness at its pinned version, skipping those already there.

    Saved into .cache/harness/package.json (not --no-save): npm prunes what its manifest does not
    list, so an unsaved install of one harness would remove the others.
    """
    wanted = [f"{PACKAGES[n]}@{version(n)}" for n in names if installed_version(n) != version(n)]
    if not wanted:
        return
    npm = shutil.which("npm")
    if npm is None:
        raise NotInstalled("npm is not on PATH; install Node.js (18 or newer) to run the harness tests")
    CACHE.mkdir(parents=True, exist_ok=True)
    print(f"installing {' '.join(wanted)} into {CACHE}", file=sys.stderr)
    done = subprocess.run([npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--save-exact", *wanted])
    if done.returncode != 0:
        raise NotInstalled(f"npm install {' '.join(wanted)} exited {done.returncode}; see its output above "
                           "(offline, it needs the packages in npm's cache, ~/.npm)")


def pinned() -> list[str]:
    """The harnesses versions.json pins: what `make test-harness` installs."""
    packages = json.loads(VERSIONS.read_text())
    return [name for name, package in PACKAGES.items() if package in packages]


def main(argv: list[str]) -> int:
    names = argv or pinned()
    unknown = [n for n in names if n not in PACKAGES]
    if unknown:
        print(f"unknown harness {', '.join(unknown)}; known: {', '.join(PACKAGES)}", file=sys.stderr)
        return 1
    try:
        install(names)
        for name in names:
            print(f"{name} {installed_version(name)}: {binary(name)}")
    except NotInstalled as exc:
        print(f"install: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
