"""AGORA_HOME and every file name under it: the one place each is spelled (agora-files(5)).

Kept free of heavy imports: `agora listen --once` resolves paths in a loop.
"""

from __future__ import annotations

import os
from pathlib import Path

from agorad.surface.vocab import HOOKS

HOME_MODE = 0o700
FILE_MODE = 0o600

DB_NAME = "agora.db"
SOCKET_NAME = "agorad.sock"
PIDFILE_NAME = "agorad.pid"
LOCKFILE_NAME = "agorad.lock"
KEYS_DIR_NAME = "keys"
SETUP_LOCK_NAME = "setup.lock"  # serialises `agora setup` runs on this host
ROTATED_SUFFIX = ".1"  # a notify file rotates to <name>.1

# In a workspace (not the home): the seat record `agora setup` writes (agora-setup(1)).
SEAT_DIR_NAME = ".agora"
SEAT_RECORD_NAME = "seat.toml"

# A seat's files: `listen-<id>.<what>` for its listener, `drive-<id>.<what>` for its driver.
LISTEN_FILES = ("lock", "pid", "offset", "backoff", "owedsig")
DRIVE_FILES = ("lock", "pid", "state", "turns.jsonl", "failures.jsonl")
# What a seat keeps between processes: it follows a rename and goes with a removal. A live
# listener's lock and pidfile are its own, and it removes them itself when it ends.
LISTEN_STATE = ("offset", "backoff", "owedsig")
DRIVE_STATE = ("state", "turns.jsonl", "failures.jsonl")


def notify_file(directory: Path, agent_id: str) -> Path:
    """The seat's notify stream; `directory` is the hub's notify directory (the home by default)."""
    return Path(directory) / f"{agent_id}-inbox.log"


def rotated(path: Path) -> Path:
    """Where a notify file goes when it rotates."""
    return path.with_name(path.name + ROTATED_SUFFIX)


def listen_file(root: Path, agent_id: str, what: str) -> Path:
    if what not in LISTEN_FILES:
        raise ValueError(f"no listener file {what!r}")
    return Path(root) / f"listen-{agent_id}.{what}"


def drive_file(root: Path, agent_id: str, what: str) -> Path:
    if what not in DRIVE_FILES:
        raise ValueError(f"no driver file {what!r}")
    return Path(root) / f"drive-{agent_id}.{what}"


def hook_stamp(root: Path, agent_id: str, hook: str) -> Path:
    """When a harness hook was wired and last fired for the seat, and the backstop's backoff (hook_stamps.py)."""
    return Path(root) / f"hook-{agent_id}.{hook}.stamp"


def seat_state_files(root: Path, agent_id: str) -> list[Path]:
    """The seat's state files: what follows a rename and goes with a removal (hook stamps too: a
    renamed seat stays wired, and its backstop keeps its backoff)."""
    return ([listen_file(root, agent_id, what) for what in LISTEN_STATE]
            + [drive_file(root, agent_id, what) for what in DRIVE_STATE]
            + [hook_stamp(root, agent_id, hook) for hook in HOOKS])


def seat_record(workspace: Path) -> Path:
    """Where a workspace's seat record lives: <workspace>/.agora/seat.toml."""
    return Path(workspace) / SEAT_DIR_NAME / SEAT_RECORD_NAME


def default_home() -> Path:
    """The home from $AGORA_HOME, else ~/.agora."""
    env = os.environ.get("AGORA_HOME")
    return Path(env).expanduser() if env else Path.home() / ".agora"


class Home:
    """Names every file the project keeps under one home directory.

    A plain value class rather than a frozen dataclass: `dataclasses` imports `inspect`, which was
    a quarter of the stop hook's start-up (bench/hook.py), and every hook resolves a Home.
    """

    __slots__ = ("root",)

    def __init__(self, root: Path):
        object.__setattr__(self, "root", root)

    def __setattr__(self, name, value):
        raise AttributeError(f"Home is immutable: cannot set {name}")

    def __eq__(self, other) -> bool:
        return isinstance(other, Home) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"Home(root={self.root!r})"

    @classmethod
    def resolve(cls, home: str | os.PathLike | None = None) -> "Home":
        path = Path(home).expanduser() if home else default_home()
        return cls(path.absolute())

    @property
    def db(self) -> Path:
        return self.root / DB_NAME

    @property
    def db_files(self) -> tuple[Path, Path, Path]:
        """The database and its WAL-mode companions."""
        return self.db, self.root / f"{DB_NAME}-wal", self.root / f"{DB_NAME}-shm"

    @property
    def socket(self) -> Path:
        return self.root / SOCKET_NAME

    @property
    def pidfile(self) -> Path:
        return self.root / PIDFILE_NAME

    @property
    def lockfile(self) -> Path:
        return self.root / LOCKFILE_NAME

    @property
    def setup_lock(self) -> Path:
        return self.root / SETUP_LOCK_NAME

    @property
    def keys_dir(self) -> Path:
        return self.root / KEYS_DIR_NAME

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
