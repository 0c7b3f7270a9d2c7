"""A workspace's seat record, `.agora/seat.toml`: which seat this directory acts as.

`agora setup` writes it (agora_setup.record); every `agora` command run in the
workspace or below reads the nearest one when not given `--as`, and nothing
above it: a workspace's identity is what its own wiring says, never what a
parent directory happens to hold. The record names where the key is, never the key.

Reading is light (tomllib, stdlib): `agora listen --once` may consult it in a loop.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from agorad.surface.filenames import read_regular_text
from agorad.surface.paths import seat_record

RECORD_FORMAT = 1


class RecordError(Exception):
    """The nearest seat record cannot be used; the message says which file and what to do."""


@dataclass(frozen=True)
class SeatRecord:
    path: Path  # the record file
    agent: str
    hub: str  # the socket path under the home that holds the seat's key and files on this host
    key_file: str
    harnesses: tuple[str, ...] = field(default_factory=tuple)
    format: int = RECORD_FORMAT
    created: tuple[str, ...] = ()  # the workspace files setup made
    made_dirs: tuple[str, ...] | None = None  # ... and the directories; None: a record from before setup noted them

    @property
    def workspace(self) -> Path:
        return self.path.parent.parent

    @property
    def home(self) -> Path:
        """The hub's home: the directory of its socket."""
        return Path(self.hub).parent


def nearest(start: Path | None = None) -> Path | None:
    """The nearest seat record at or above `start` (default: the working directory) that this user wrote,
    or None. One another user owns is passed over (in /tmp, say, anyone can plant a record naming your
    seat and a home of theirs), as is a symbolic link, as git passes over a repository of dubious ownership."""
    here = Path(start or os.getcwd()).absolute()
    for directory in (here, *here.parents):
        candidate = seat_record(directory)
        if _own_file(candidate) and _own_file(candidate.parent, directory=True):
            return candidate
    return None


def _own_file(path: Path, directory: bool = False) -> bool:
    """Whether `path` is a regular file (or a directory) owned by this process's user, not a link."""
    try:
        found = os.lstat(path)
    except OSError:
        return False
    kind = stat.S_ISDIR if directory else stat.S_ISREG
    return kind(found.st_mode) and found.st_uid == os.geteuid()


def find(start: Path | None = None) -> SeatRecord | None:
    """The nearest seat record, parsed; None when there is none. Raises RecordError for one that is unusable."""
    path = nearest(start)
    return None if path is None else load(path)


def _universal_newlines(text: str) -> str:
    """As a file opened in text mode reads: a record saved with CR line ends (an old editor's) still loads."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def load(path: Path) -> SeatRecord:
    import tomllib

    from agorad.surface.protocol import is_agent_id

    try:
        data = tomllib.loads(_universal_newlines(read_regular_text(path)))
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"cannot read the seat record {path}: {exc}") from None
    except (tomllib.TOMLDecodeError, RecursionError) as exc:  # RecursionError: arrays nested past its depth
        raise RecordError(f"the seat record {path} is not valid TOML ({exc}); "
                          "fix it, or remove it and run `agora setup ID` again") from None
    fmt = data.get("format")
    if fmt != RECORD_FORMAT:
        raise RecordError(f"the seat record {path} has format {fmt!r}; this agora reads format {RECORD_FORMAT}: "
                          "run `agora setup ID` again to rewrite it")
    agent, hub, key_file = data.get("id"), data.get("hub"), data.get("key_file")
    harnesses = data.get("harnesses", [])
    if not (isinstance(agent, str) and is_agent_id(agent)):
        raise RecordError(f"the seat record {path} has no valid id (found {agent!r}); run `agora setup ID` again")
    if not (isinstance(hub, str) and hub and isinstance(key_file, str) and key_file):
        raise RecordError(f"the seat record {path} lacks hub or key_file; run `agora setup {agent}` again")
    if not (isinstance(harnesses, list) and all(isinstance(h, str) for h in harnesses)):
        raise RecordError(f"the seat record {path} has a harnesses entry that is not a list of names; "
                          f"run `agora setup {agent}` again")
    created = data.get("created", [])  # setup's own bookkeeping: anything unreadable means none
    created = tuple(c for c in created if isinstance(c, str)) if isinstance(created, list) else ()
    made = data.get("made_dirs")
    made = tuple(d for d in made if isinstance(d, str)) if isinstance(made, list) else None
    return SeatRecord(Path(path), agent, hub, key_file, tuple(harnesses), fmt, created, made)
