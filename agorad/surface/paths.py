"""AGORA_HOME and every file under it as pathlib Paths, and `Home`, which names them for one home.

Each name is spelled once, as a string, in filenames.py; this module wraps them in Paths for the
code that wants Paths. Importing it costs no pathlib (which loads on the first Path made): the stop
hook resolves a Home and names its socket and key file through it at every turn's end, and
pathlib's import chain was ~4.7 ms of that hook's start-up (filenames.py says more).
"""

from __future__ import annotations

import errno
import os

from agorad.surface import filenames
from agorad.surface.filenames import (  # re-exported: the rest of the code names them as paths.X
    DB_NAME, DEFAULT_HOME, DRIVE_FILES, DRIVE_STATE, FILE_MODE, HOME_MODE, KEYS_DIR_NAME, LISTEN_FILES, LISTEN_STATE,
    LOCKFILE_NAME, LOG_NAME, PIDFILE_NAME, ROTATED_SUFFIX, SEAT_DIR_NAME, SETUP_LOCK_NAME,
    SOCKET_NAME, write_private,
)
from agorad.surface.vocab import HOOKS

TYPE_CHECKING = False  # typing's, without importing typing (~5 ms of the hook's start-up)
if TYPE_CHECKING:
    from pathlib import Path


def _path(text: str) -> Path:
    from pathlib import Path  # on first use only: see the module's docstring

    return Path(text)


def notify_file(directory: Path, agent_id: str) -> Path:
    """The seat's notify stream; `directory` is the hub's notify directory (the home by default)."""
    return _path(filenames.notify_file(directory, agent_id))


def rotated(path: Path) -> Path:
    """Where a notify file goes when it rotates."""
    return path.with_name(path.name + ROTATED_SUFFIX)


def listen_file(root: Path, agent_id: str, what: str) -> Path:
    return _path(filenames.listen_file(root, agent_id, what))


def drive_file(root: Path, agent_id: str, what: str) -> Path:
    return _path(filenames.drive_file(root, agent_id, what))


def hook_stamp(root: Path, agent_id: str, hook: str) -> Path:
    """When a harness hook was wired and last fired for the seat, and the backstop's backoff (hook_stamps.py)."""
    return _path(filenames.hook_stamp(root, agent_id, hook))


def seat_state_files(root: Path, agent_id: str) -> list[Path]:
    """The seat's state files: what follows a rename and goes with a removal (hook stamps too: a
    renamed seat stays wired, and its backstop keeps its backoff)."""
    return ([listen_file(root, agent_id, what) for what in LISTEN_STATE]
            + [drive_file(root, agent_id, what) for what in DRIVE_STATE]
            + [hook_stamp(root, agent_id, hook) for hook in HOOKS])


def seat_record(workspace: Path) -> Path:
    """Where a workspace's seat record lives: <workspace>/.agora/seat.toml."""
    return _path(filenames.seat_record(workspace))


def default_home() -> Path:
    """The home from $AGORA_HOME, else ~/.agora."""
    return _path(os.environ.get("AGORA_HOME") or DEFAULT_HOME).expanduser()


class Home:
    """Names every file the project keeps under one home directory.

    A plain value class rather than a frozen dataclass: `dataclasses` imports `inspect`, which was
    a quarter of the stop hook's start-up (bench/hook.py), and every hook resolves a Home. It keeps
    its directory as text (`root_text`, as pathlib spells it) and makes `root` a Path when first
    asked, so the hook, which names only its socket and key file (filenames.py), loads no pathlib.
    """

    __slots__ = ("root_text", "_root")

    def __init__(self, root: str | os.PathLike):
        object.__setattr__(self, "root_text", filenames.pathlib_form(os.fspath(root)))
        object.__setattr__(self, "_root", None)

    def __setattr__(self, name, value):
        raise AttributeError(f"Home is immutable: cannot set {name}")

    def __eq__(self, other) -> bool:
        return isinstance(other, Home) and other.root_text == self.root_text

    def __hash__(self) -> int:
        return hash(self.root_text)

    def __repr__(self) -> str:
        return f"Home(root={self.root!r})"

    @classmethod
    def resolve(cls, home: str | os.PathLike | None = None) -> "Home":
        """`home`, else $AGORA_HOME, else ~/.agora; absolute, a leading ~ expanded."""
        return cls(filenames.home_root(home))

    @property
    def root(self) -> Path:
        if self._root is None:
            object.__setattr__(self, "_root", _path(self.root_text))
        return self._root

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
    def socket_text(self) -> str:
        """`str(self.socket)` without making a Path (the hook and the listener load no pathlib)."""
        return filenames.pathlib_form(os.path.join(self.root_text, SOCKET_NAME))

    @property
    def pidfile(self) -> Path:
        return self.root / PIDFILE_NAME

    @property
    def lockfile(self) -> Path:
        return self.root / LOCKFILE_NAME

    @property
    def log(self) -> Path:
        return self.root / LOG_NAME

    @property
    def setup_lock(self) -> Path:
        return self.root / SETUP_LOCK_NAME

    @property
    def keys_dir(self) -> Path:
        return self.root / KEYS_DIR_NAME

    def key_file(self, agent_id: str) -> Path:
        return _path(filenames.key_file(self.root_text, agent_id))

    @property
    def hub_url_file(self) -> Path:
        return _path(filenames.hub_url_file(self.root_text))

    @property
    def hub_url(self) -> str | None:
        """The remote port of this home's hub when it runs on another host, else None (filenames.read_hub_url)."""
        return filenames.read_hub_url(self.root_text)

    def ensure(self) -> None:
        """Create the home and keys directory 0700 (and any parent the home lacks), tightening them if
        they exist. A keys directory that is a symbolic link is refused: the keys would be written, and
        its target made 0700, wherever it points."""
        for directory in (self.root, self.keys_dir):
            try:
                make_private_dirs(directory)
                if not os.path.isdir(directory):  # a file named as the home: say so, change nothing
                    raise OSError(errno.ENOTDIR, "it is not a directory")
                if directory == self.keys_dir and os.path.islink(directory):  # a linked home is the user's choice
                    raise OSError(errno.ELOOP, "it is a symbolic link; make it a directory of its own")
                os.chmod(directory, HOME_MODE)
            except OSError as exc:
                raise OSError(f"creating the directory {directory}: {exc.strerror}") from exc


def make_private_dirs(directory: Path) -> None:
    """mkdir -p with every directory it makes 0700 (Path.mkdir gives the parents the umask's mode)."""
    if directory.exists() or directory.is_symlink():
        return
    make_private_dirs(directory.parent)
    try:
        directory.mkdir(mode=HOME_MODE)
    except FileExistsError:
        pass  # made meanwhile
