"""Agent keys: made once, shown once, stored by the hub only as a hash.

Keys are 256-bit random tokens, so a plain SHA-256 is the right hash: a slow
password KDF protects guessable secrets, and these are not guessable.
"""

from __future__ import annotations

import errno
import os

from agorad.surface import filenames
from agorad.surface.filenames import key_file
from agorad.surface.paths import Home, write_private
from agorad.surface.vocab import TURN_ENV

KEY_PREFIX = "agk_"


# hashlib, hmac and secrets load where used: a hook that only reads its key file (read_key) runs at
# every turn's end, and they are a tenth of its start-up (OpenSSL's _hashlib alone, bench/hook.py).


def new_key() -> str:
    import secrets

    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def key_matches(key: str, stored_hash: str) -> bool:
    import hmac

    return hmac.compare_digest(hash_key(key), stored_hash)


def save_key_file(home: Home, agent_id: str, key: str) -> None:
    write_private(home.key_file(agent_id), key + "\n")


STAGED_SUFFIX = ".new"  # keys/<id>.key.new: a rekey's key until its change is stored (not a key file: no .key end)


def stage_key(home: Home, agent_id: str, key: str) -> None:
    """Write the key beside the key file, to be renamed over it once stored; refuse now what the rename
    would refuse then (a directory, say, where the key file goes)."""
    final = home.key_file(agent_id)
    if os.path.isdir(final):
        raise IsADirectoryError(errno.EISDIR, "a directory stands there", str(final))
    write_private(f"{final}{STAGED_SUFFIX}", key + "\n")


def staged_keys(home: Home) -> list[tuple[str, str]]:
    """(agent id, key) of each staged key in keys/ (a rekey's, not yet put in place)."""
    found = []
    try:
        names = os.listdir(home.keys_dir)
    except OSError:
        return []
    for name in names:
        agent_id = filenames.key_file_owner(name[:-len(STAGED_SUFFIX)]) if name.endswith(STAGED_SUFFIX) else None
        if agent_id:
            try:
                found.append((agent_id, filenames.read_regular_text(os.path.join(home.keys_dir, name)).strip()))
            except (OSError, UnicodeDecodeError):
                continue
    return found


def install_staged_key(home: Home, agent_id: str, as_id: str | None = None) -> None:
    """The staged key of `agent_id` becomes the key file of `as_id` (the seat's id since, if renamed)."""
    os.replace(f"{home.key_file(agent_id)}{STAGED_SUFFIX}", home.key_file(as_id or agent_id))


def drop_staged_key(home: Home, agent_id: str) -> None:
    try:
        os.unlink(f"{home.key_file(agent_id)}{STAGED_SUFFIX}")
    except FileNotFoundError:
        pass


def move_key_file(home: Home, old_id: str, new_id: str) -> None:
    try:
        os.replace(home.key_file(old_id), home.key_file(new_id))
    except FileNotFoundError:
        pass


def remove_key_file(home: Home, agent_id: str) -> None:
    try:
        home.key_file(agent_id).unlink()
    except FileNotFoundError:
        pass


def read_key_file(home: Home, agent_id: str) -> str | None:
    """The key in keys/<id>.key alone ($AGORA_KEY aside), or None when it cannot be read or is empty."""
    try:  # named as a string (filenames.py): the stop hook reads its key at every turn's end
        return filenames.read_regular_text(key_file(home.root_text, agent_id)).strip() or None
    except (OSError, UnicodeDecodeError):  # missing, unreadable, not a file: no key, and the caller says so
        return None


def no_key(home: Home | str, agent_id: str, remedy: str, holder: str | None = None) -> str:
    """`no key for <id>: <remedy>`, saying first what is wrong with the key file when something is there
    (a FIFO, a file it cannot read, an empty one): "put the key in keys/<id>.key" alone misleads then.
    `holder`: the id whose file was read last, when not `agent_id` (a renamed seat's key moved with it)."""
    trouble = key_file_trouble(home, holder or agent_id)
    path = _key_path(home, holder or agent_id)
    return f"no key for {agent_id}: " + (f"{path} {trouble}; " if trouble else "") + remedy


def _key_path(home: Home | str, agent_id: str) -> str:
    return key_file(home.root_text if isinstance(home, Home) else os.fspath(home), agent_id)


def key_file_trouble(home: Home | str, agent_id: str) -> str | None:
    """Why keys/<id>.key holds no key for `read_key_file`, in words that follow its name; None when
    nothing is there (or a key is)."""
    path = _key_path(home, agent_id)
    try:
        text = filenames.read_regular_text(path)
    except FileNotFoundError:
        return None
    except filenames.NotRegularFile:
        return "is not a regular file (move it away)"
    except UnicodeDecodeError:
        return "does not hold a key (it is not UTF-8 text)"
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            return "does not hold a key (it is larger than a key file can be)"
        return f"cannot be read ({exc.strerror or exc})"
    if text.strip():
        return None
    return "holds no key (only blank space)" if text else "is empty"


def kept_seats(home: Home) -> list[str]:
    """The seats whose key files this home keeps (keys/<id>.key), sorted: on a seat's host, its seats."""
    try:
        names = os.listdir(home.keys_dir)
    except OSError:
        return []
    return sorted(agent for agent in map(filenames.key_file_owner, names) if agent)


def read_key(home: Home, agent_id: str) -> str | None:
    """The key for `agent_id`: $AGORA_KEY if set, else keys/<id>.key, else None. In a driven turn only its own
    seat's key file is read (Forbidden for another's)."""
    env = os.environ.get("AGORA_KEY")
    if env:
        return env.strip()
    key = read_key_file(home, agent_id)
    if key is not None:
        _refuse_another_seat_in_turn(agent_id)
    return key


def in_turn() -> bool:
    """Whether this process is part of a driven turn (TURN_ENV set, even empty). On every hub, not only the
    seat's: a turn that was the operator of the user's other hubs, or of one it started itself, could read
    and rekey their seats, or point a hub's files at a directory a shell sources (a review)."""
    return TURN_ENV in os.environ


def _refuse_another_seat_in_turn(agent_id: str) -> None:
    """A driven turn acts as its seat only (agora-drive(1) SECURITY): with `--as` another seat's key file was read
    for it, and a review's turn sent as another seat and read its inbox. (A former id of the turn's seat has no
    key file: the caller asks the hub where it went, and reads the seat's own.)"""
    if not in_turn():
        return
    seat = os.environ.get("AGORA_AGENT_ID")
    if agent_id != seat:
        from agorad.surface.errors import Forbidden

        raise Forbidden(f"this process is part of a driven turn of seat {seat or '(none named)'} ({TURN_ENV} is set), "
                        f"which acts as that seat only: the key of {agent_id} is not read for it "
                        "(agora-drive(1) SECURITY). Run it from your own shell")


def current_key(home: str, agent_id: str, known: str | None) -> str | None:
    """The key to say hello with now, for a process that runs for hours (a listener, a driver's doorbell):
    read again each time, since `agora agent rekey` replaces the key file (and closes the old key's
    connections); `known`, the key it started with, when there is none to read."""
    return read_key(Home(home), agent_id) or known
