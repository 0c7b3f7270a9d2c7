"""Which seat a listener listens for, and where its notify file is, as the hub says.

Asked at start-up. A listener that started while no hub answered armed on
what it could know (the id as given, the home as notify directory); it asks
again as soon as the hub answers (`confirm`), because either may be wrong: the
id may be an alias left by a rename (deliveries now go to the new id's file)
or the hub may write its notify files elsewhere. An armed listener asks again
too when its file's name vanishes without a rotation: the hub moves the file
at a rename and deletes it at a removal. Staying armed on a file no one writes
would make the seat deaf, so a wrong guess re-arms (`Rearm`) or, when there is
nothing to listen to, ends with a reason (`Refused`).
"""

from __future__ import annotations

import os
import sys
import time

HUB_RETRY = 2.0  # seconds between tries while no hub answers: a refused connect costs microseconds


class Answer:
    """The hub's word on a seat. Plain, and its directory text: an armed listener imports neither
    dataclasses nor pathlib (listener.Options says why)."""

    __slots__ = ("agent", "notify_dir", "redirected", "newest_id")

    def __init__(self, agent: str, notify_dir: str | None, redirected: dict | None, newest_id: int | None = None):
        self.agent = agent  # the current id behind the one asked for
        self.notify_dir = notify_dir  # as pathlib spells it; None: the hub writes no notify files
        self.redirected = redirected  # {"from", "to", "reason"} when the id asked for is an alias
        self.newest_id = newest_id  # the id its notify files have got to (None: the hub did not say)


class Rearm(Exception):
    """The hub named another seat or notify directory: listen again with these options."""

    def __init__(self, options):
        super().__init__(options.agent)
        self.options = options


class Refused(Exception):
    """The hub's answer leaves nothing to listen to; end with this reason and cause."""

    def __init__(self, reason: str, cause: str):
        super().__init__(cause)
        self.reason, self.cause = reason, cause


def ask(home: str | os.PathLike, agent: str, timeout: float = 5.0) -> Answer | None:
    """The hub's answer about `agent`, or None when no hub answers. Raises NotFound for an id it does not know."""
    from agorad.surface.client import Client
    from agorad.surface.errors import AgoraError
    from agorad.surface.filenames import pathlib_form

    try:
        with Client(home, timeout=timeout) as hub:
            told = hub.call("hub.hello").get("notify_dir")
            resolved = hub.call("agents.resolve", agent=agent)
    except AgoraError as exc:
        if exc.reason == "not-found":
            raise
        return None
    newest = resolved.get("newest_id")
    return Answer(resolved["agent"], pathlib_form(told) if told else None, resolved["redirected"],
                  newest if type(newest) is int and newest >= 0 else None)


def newest_before_first_arm(options) -> int | None:
    """The id the seat's notify files have got to, asked before a first arm looks at them (None while no hub
    answers, or when it names another seat or notify directory: the arm is confirmed later). Where the file
    under the name is empty, the follower counts gaps from it (or from `.1`'s last id, if higher): from 0
    it would count deliveries from before the arm that a power cut or a `--notify-dir` change left out."""
    from agorad.surface.errors import AgoraError

    try:
        answer = ask(options.home, options.agent, timeout=HUB_RETRY)
    except AgoraError:
        return None
    if answer is None or answer.agent != options.agent or answer.notify_dir != options.notify_dir:
        return None  # (a --notify-dir not the hub's may lag behind its lines)
    return answer.newest_id


def confirm(options, seat) -> bool:
    """Whether the hub, if it answers now, confirms the seat and notify directory this listener armed on.

    False while no hub answers (ask again later). True when it confirms (the
    options are marked confirmed). Raises Rearm with the options to listen
    with instead, or Refused when the hub knows no such seat or writes no
    notify files.
    """
    from agorad.surface.errors import NotFound

    try:
        answer = ask(options.home, options.agent, timeout=HUB_RETRY)
    except NotFound as exc:
        seat.forget_state()  # written while the hub was away: an id it does not know has no seat
        raise Refused("error", f"the hub, answering now, says: {exc.message}") from None
    if answer is None:
        return False
    notify_dir = options.notify_dir if options.notify_dir_given else answer.notify_dir
    if notify_dir is None:
        raise Refused("no-notify-file", "the hub, answering now, writes no notify files (it was started with "
                      "--notify-dir ''); start it with notify files to listen")
    if answer.agent == options.agent and notify_dir == options.notify_dir:
        options.confirmed = True
        return True
    if answer.redirected:
        r = answer.redirected
        sys.stderr.write(f"agora listen: redirected: {r['from']} -> {r['to']} ({r['reason']}); "
                         f"listening for {r['to']} from now on\n")
        seat.forget_state()  # an alias has no seat: the hub moved the seat's files at the rename
    from agorad.surface import keys
    from agorad.surface.paths import Home

    key = keys.read_key(Home(options.home), answer.agent) or options.key
    raise Rearm(options.replace(agent=answer.agent, notify_dir=notify_dir, key=key, confirmed=True,
                                since=options.started))


class Asker:
    """When the listener's loop asks the hub: until it first answers, and when the followed file's name vanishes."""

    def __init__(self, options, seat):
        self.options, self.seat = options, seat
        self.at: float | None = None if options.confirmed else time.monotonic()  # monotonic; None: no need
        self._vanished: int | None = None  # the inode number of the followed file already asked about

    def ask_if_due(self) -> None:
        """Ask now if due (raises Rearm or Refused as `confirm` does); while no hub answers, again later."""
        if self.at is not None and time.monotonic() >= self.at:
            self.at = None if confirm(self.options, self.seat) else time.monotonic() + HUB_RETRY

    def notice_change(self, follower) -> None:
        """After file events. Unconfirmed, the hub may be up now. A followed file deleted, or whose name is
        gone with no new file in its place (a rotation puts one there at once), was moved by a rename or
        deleted by a removal (or by hand: the hub then confirms the seat): ask once per such file. A seat
        with no file yet never asks (other seats' files come and go)."""
        if follower.inode != self._vanished:  # moved on from the file asked about, whose number, freed, a later
            self._vanished = None             # file may get (ext4 gives it to the next): that one is asked about
        if self.at is not None:
            self.at = time.monotonic()
        elif follower.inode is not None and self._vanished is None and _gone(follower):
            self._vanished = follower.inode
            self.at = time.monotonic()


def _gone(follower) -> bool:
    """Whether the followed file was deleted, or has left its name with none standing there. Its link count
    is looked at first: an unlink drops it (and sends the IN_ATTRIB a listener may wake on) before the name
    leaves the kernel's name cache, so a look at the name alone could, in that gap, still find it (a guess at
    a flake seen once, in test_listen_confirm.py's removal test; not reproduced)."""
    try:
        unlinked = follower.fd is not None and os.fstat(follower.fd).st_nlink == 0
    except OSError:
        unlinked = False
    return unlinked or not os.path.exists(follower.path)
