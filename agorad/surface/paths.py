"""AGORA_HOME and every file name under it (agora-files(5)).

Kept free of heavy imports: `agora listen --once` resolves paths in a loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HOME_MODE = 0o700
FILE_MODE = 0o600


def default_home() -> Path:
    """The home from $AGORA_HOME, else ~/.agora."""
    env = os.environ.get("AGORA_HOME")
    return Path(env).expanduser() if env else Path.home() / ".agora"


@dataclass(frozen=True)
class Home:
    """Names every file the project keeps under one home directory."""

    root: Path

    @classmethod
    def resolve(cls, home: str | os.PathLike | None = None) -> "Home":
        path = Path(home).expanduser() if home else default_home()
        return cls(path.absolute())

    @property
    def db(self) -> Path:
        return self.root / "agora.db"

    @property
    def socket(self) -> Path:
        return self.root / "agorad.sock"

    @property
    def pidfile(self) -> Path:
        return self.root / "agorad.pid"

    @property
    def lockfile(self) -> Path:
        return self.root / "agorad.lock"

    @property
    def keys_dir(self) -> Path:
        return self.root / "keys"

    def key_file(self, agent_id: str) -> Path:
        return self.keys_dir / f"{agent_id}.key"

    def ensure(self) -> None:
        """Create the home and keys directory 0700, tightening them if they exist."""
        for directory in (self.root, self.keys_dir):
            try:
                directory.mkdir(mode=HOME_MODE, parents=True, exist_ok=True)
                os.chmod(directory, HOME_MODE)
            except OSError as exc:
                raise OSError(f"creating the directory {directory}: {exc.strerror}") from exc


def write_private(path: Path, text: str, sync: bool = True) -> None:
    """Write `text` to `path` atomically (temp file, fsync unless told not to, rename), mode 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    try:
        os.write(fd, text.encode())
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
