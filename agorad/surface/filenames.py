"""The files under AGORA_HOME named as plain strings: the one place each name is spelled (agora-files(5)).

paths.py gives the same names as pathlib Paths, and `Home`; this module is what they are built
from, and what the stop hook uses directly. It imports no pathlib on purpose: `agora hook stop`
runs at every turn's end of every wired session, and pathlib's import chain (urllib.parse,
ipaddress, fnmatch) was ~4.7 ms of the ~10 ms the hook's own modules added to a bare interpreter's
start-up (bench/README.md, "The stop hook"). Every function here takes a str or a PathLike.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from agorad.surface.vocab import URL_ENV

# FS_IOC_GETVERSION, linux/fs.h's _IOR('v', 1, long) in the generic encoding of x86-64 and arm64 (other
# architectures encode ioctl numbers otherwise: not asked there). The kernel writes an int, the inode's
# generation: ext4 gives each new inode a random one (measured here), so a freed inode number that it
# hands to the next new file comes with another generation; XFS, btrfs and f2fs answer it too, with a
# value of the inode's own life (btrfs: the transaction that made it). tmpfs does not answer it.
_GET_GENERATION = 0x80087601
_ASKS_GENERATION = sys.platform.startswith("linux") and os.uname().machine in ("x86_64", "aarch64")

HOME_MODE = 0o700
FILE_MODE = 0o600

DB_NAME = "agora.db"
SOCKET_NAME = "agorad.sock"
PIDFILE_NAME = "agorad.pid"
LOCKFILE_NAME = "agorad.lock"
LOG_NAME = "agorad.log"  # the hub's log when `agora up --detach` runs it in the background
KEYS_DIR_NAME = "keys"
KEY_SUFFIX = ".key"  # a seat's key file is keys/<id>.key
SETUP_LOCK_NAME = "setup.lock"  # serialises `agora setup` runs on this host
HUB_URL_NAME = "hub.url"  # in a home whose hub runs on another host: that hub's remote port (agora setup --url)
ROTATED_SUFFIX = ".1"  # a notify file rotates to <name>.1
NOTIFY_SUFFIX = "-inbox.log"  # a seat's notify file is <id>-inbox.log
DEFAULT_HOME = "~/.agora"  # without $AGORA_HOME

# In a workspace (not the home): the seat record `agora setup` writes (agora-setup(1)).
SEAT_DIR_NAME = ".agora"
SEAT_RECORD_NAME = "seat.toml"

# A seat's files: `listen-<id>.<what>` for its listener, `drive-<id>.<what>` for its driver.
SEAT_FILE_PREFIXES = ("listen-", "drive-", "hook-")  # a seat's listener, driver and hook files in the home
LISTEN_FILES = ("lock", "pid", "offset", "backoff", "owedsig")
DRIVE_FILES = ("lock", "pid", "state", "turns.jsonl", "failures.jsonl")
# What a seat keeps between processes: it follows a rename and goes with a removal. A live
# listener's lock and pidfile are its own, and it removes them itself when it ends.
LISTEN_STATE = ("offset", "backoff", "owedsig")
DRIVE_STATE = ("state", "turns.jsonl", "failures.jsonl")


def notify_file(directory: str | os.PathLike, agent_id: str) -> str:
    """The seat's notify stream; `directory` is the hub's notify directory (the home by default)."""
    return os.path.join(directory, f"{agent_id}{NOTIFY_SUFFIX}")


def notify_file_owner(name: str) -> str | None:
    """The agent id whose notify file (or its rotated generation) is called `name`; None for other names."""
    if name.endswith(ROTATED_SUFFIX):
        name = name[:-len(ROTATED_SUFFIX)]
    return name[:-len(NOTIFY_SUFFIX)] or None if name.endswith(NOTIFY_SUFFIX) else None


def seat_record(workspace: str | os.PathLike) -> str:
    """Where a workspace's seat record lives: <workspace>/.agora/seat.toml."""
    return os.path.join(workspace, SEAT_DIR_NAME, SEAT_RECORD_NAME)


def listen_file(root: str | os.PathLike, agent_id: str, what: str) -> str:
    if what not in LISTEN_FILES:
        raise ValueError(f"no listener file {what!r}")
    return os.path.join(root, f"listen-{agent_id}.{what}")


def drive_file(root: str | os.PathLike, agent_id: str, what: str) -> str:
    if what not in DRIVE_FILES:
        raise ValueError(f"no driver file {what!r}")
    return os.path.join(root, f"drive-{agent_id}.{what}")


def hook_stamp(root: str | os.PathLike, agent_id: str, hook: str) -> str:
    """When a harness hook was wired and last fired for the seat, and the backstop's backoff (hook_stamps.py)."""
    return os.path.join(root, f"hook-{agent_id}.{hook}.stamp")


def key_file(root: str | os.PathLike, agent_id: str) -> str:
    return os.path.join(root, KEYS_DIR_NAME, f"{agent_id}{KEY_SUFFIX}")


def key_file_owner(name: str) -> str | None:
    """The agent id whose key file in keys/ is called `name`; None for other names."""
    return name[:-len(KEY_SUFFIX)] or None if name.endswith(KEY_SUFFIX) else None


def hub_url_file(root: str | os.PathLike) -> str:
    return os.path.join(root, HUB_URL_NAME)


def read_hub_url(root: str | os.PathLike) -> str | None:
    """The remote port of the hub this home's seats belong to, when it runs on another host (the home's
    `hub.url`, written by `agora setup --url`); None for a home whose hub is its own socket."""
    try:
        return read_regular_text(hub_url_file(root)).strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def hub_url_for(root: str | os.PathLike) -> str | None:
    """The remote port a command naming this home speaks to when no --url is given: the home's hub.url
    (its keys are that hub's), else $AGORA_URL; None: the hub's own socket under the home."""
    return hub_url_and_source(root)[0]


def hub_url_and_source(root: str | os.PathLike) -> tuple[str | None, str | None]:
    """`hub_url_for(root)` and where it came from (the hub.url file's path, or "$AGORA_URL"), for an
    error to name; (None, None) for the hub's own socket."""
    recorded = read_hub_url(root)
    if recorded:
        return recorded, hub_url_file(root)
    from_env = os.environ.get(URL_ENV) or None
    return from_env, ("$" + URL_ENV if from_env else None)


def home_root(home: str | os.PathLike | None = None) -> str:
    """The home directory, absolute: `home`, else $AGORA_HOME, else ~/.agora, a leading ~ expanded.

    Spelled exactly as pathlib spells `Path(home).expanduser().absolute()` (`..` kept, not resolved),
    so a root named here prints and compares as paths.Home's does (tests/test_paths.py holds the two
    to each other).
    """
    text = os.fspath(home) if home else os.environ.get("AGORA_HOME") or DEFAULT_HOME
    text = pathlib_form(_expanduser(pathlib_form(text)))
    return text if text.startswith("/") else pathlib_form(os.path.join(os.getcwd(), text))


def pathlib_form(text: str) -> str:
    """`text` as pathlib spells it on POSIX: repeated and trailing slashes and `.` parts dropped, `..`
    kept, exactly two leading slashes kept (POSIX leaves their meaning to the system), '' as '.'."""
    body = text.lstrip("/")
    slashes = len(text) - len(body)
    root = "//" if slashes == 2 else "/" if slashes else ""
    return root + "/".join(part for part in body.split("/") if part and part != ".") or "."


def _expanduser(text: str) -> str:
    # pathlib's rule, not os.path's: a home it cannot find is an error, not a path left with its ~.
    if not text.startswith("~"):
        return text
    first, slash, rest = text.partition("/")
    home = os.path.expanduser(first)
    if home.startswith("~"):
        raise RuntimeError("Could not determine home directory.")
    return home + slash + rest


def made_private(fd: int, info: os.stat_result | None = None) -> os.stat_result:
    """The open file's stat (`info`, when the caller has it), after making the file 0600 if it was wider:
    every file in the home is 0600, whoever made it (one copied in, or left by an older agora)."""
    info = info or os.fstat(fd)
    if info.st_mode & 0o077:
        os.fchmod(fd, FILE_MODE)
    return info


class NotRegularFile(OSError):
    """Something other than a regular file under one of the home's names (a FIFO, a socket, a device)."""


def open_regular(path: str | os.PathLike, flags: int, mode: int = FILE_MODE) -> int:
    """`os.open` of a regular file only, never waiting: NotRegularFile when something else is under the
    name. A plain open of a FIFO blocks until its other end comes (it hung the hub's start, every command,
    a listener, the stop hook; the hub itself, once a FIFO it appended to was full), and a socket's fails
    with ENXIO. O_NONBLOCK changes nothing for a regular file."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing with no reader
            raise NotRegularFile(errno.ENXIO, "not a regular file; remove it", os.fspath(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularFile(errno.EINVAL, "not a regular file; remove it", os.fspath(path))
    return fd


# What the home's small files hold at most (a place, a key, a pid file, a stamp: well under 1 KiB; a
# driver's state a few KiB): one grown past it by a fault or by hand is read as unreadable, not into memory.
SMALL_FILE_MAX = 1 << 20


def read_regular(path: str | os.PathLike, limit: int | None = SMALL_FILE_MAX) -> bytes:
    """The bytes of the regular file at `path`. FileNotFoundError when nothing is there, NotRegularFile
    when something else is (`open_regular`), OSError EFBIG when it holds more than `limit` bytes: what every
    reader of the home's small files (places, keys, pid files, stamps, hub.url) reads them with."""
    fd = open_regular(path, os.O_RDONLY)
    try:
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 16 if limit is None else min(1 << 16, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                raise OSError(errno.EFBIG, f"larger than {limit} bytes", os.fspath(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: str | os.PathLike) -> str:
    """`read_regular`, decoded as UTF-8 (UnicodeDecodeError, a ValueError, when it is not)."""
    return read_regular(path).decode()


def write_private(path: str | os.PathLike, text: str | bytes, sync: bool = True) -> None:
    """Write `text` (or bytes) to `path` atomically (temp file, fsync unless told not to, rename), mode 0600."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    try:
        data = text if isinstance(text, bytes) else text.encode()
        while data:  # a file this size can take more than one write(2)
            data = data[os.write(fd, data):]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def sync_path(path: str | os.PathLike) -> None:
    """fsync a file, or a directory (which makes the renames and links in it durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# Path.exists's rule, which os.path.exists does not follow: only a missing file (or a missing, looping
# or non-directory step on the way) is False; any other error (a directory not searchable) raises.
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def exists(path: str | os.PathLike) -> bool:
    """`Path(path).exists()`, without pathlib."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno not in _ABSENT:
            raise
        return False
    except ValueError:  # a NUL in the name
        return False
    return True


def file_generation(fd: int) -> int | None:
    """The generation of the open file's inode, or None where the file system or platform does not say.

    With the inode number it names a file: a number alone can be a deleted file's, given to a new one."""
    if not _ASKS_GENERATION:
        return None
    import fcntl  # here: only a saved place needs it, and the stop hook imports this module

    try:
        return int.from_bytes(fcntl.ioctl(fd, _GET_GENERATION, bytes(8))[:4], "little")
    except OSError:  # ENOTTY: the file system keeps no generation
        return None
