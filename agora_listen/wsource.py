"""`agora listen --source ws`: a seat's deliveries pushed over the hub's remote port.

The seat on another host has no notify file to tail; it holds a WebSocket to the hub
(`agora up --listen`) as the agent and subscribes. A reader thread keeps that connection: it
reconnects with jittered backoff and subscribes again `after` the last delivery id it got, so
the hub replays whatever came meanwhile (a cut connection, a hub restart): nothing is missed,
and an id already had is dropped, so nothing rings twice. The listener's loop sees this source
as it sees a watcher and a follower (listener.py): a descriptor that becomes readable, and
`read_new()` with the lines that came. Its saved place is the last delivery id rung.
"""

from __future__ import annotations

import collections
import os
import random
import threading

from agora_listen.identity import Refused
from agorad.surface import settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agorad.surface.wsclient import RemoteClient


class Fatal(Refused):
    """Reconnecting cannot help: the hub refused the seat (a wrong key, a removed seat; `refused`), or the
    URL cannot be a hub's, or the reader failed. A listener ends with reason=error (listener.run handles
    Refused); a driver tells a refused seat how to set its key right (agora_drive/driver.py)."""

    def __init__(self, cause: str, refused: bool = False):
        super().__init__("error", cause)
        self.refused = refused


class WsSource:
    """Deliveries from the remote port, reconnecting and catching up by id."""

    inode = None  # never a file: the loop's file checks find nothing to follow
    missed = 0    # nothing is rotated away: the hub replays what came meanwhile

    def __init__(self, url: str, agent: str, key: str, after: int | None, home: str | None = None):
        from agora_listen.watchers import wake_pipe

        self.url, self.agent, self.key = url, agent, key
        self.home = home  # where the seat's key file is read again at each connect (keys.current_key)
        self.received = after  # the newest id this source has had; None: start at the hub's newest
        self.handed = after or 0  # the newest id read_new has returned
        # A first arm while no hub answered (listener.py sets it): the first subscription replays what the hub
        # stored since then (its clock), so what landed before this source got through still rings.
        self.since: float | None = None
        self.fd, self._wake_fd = wake_pipe()
        self.lines: collections.deque[dict] = collections.deque()
        self.fatal: Fatal | None = None  # why the reader gave up; read_new raises it
        self.connected = threading.Event()
        self.redirected: dict | None = None
        self.notify_dir: str | None = None  # where the hub writes notify files, on its own host
        self._stop = threading.Event()
        self._client: RemoteClient | None = None
        self._thread: threading.Thread | None = None

    # --- the connection ----------------------------------------------------------------

    def open(self) -> None:
        """Connect once now (raises Fatal for a refused seat, Unavailable for no hub), so a first arm
        knows where the seat stands; the thread keeps the connection from then on."""
        self._client = self._subscribe()
        self.connected.set()

    def since_start(self, started: float) -> None:
        """A first arm that found no hub (`open` raised Unavailable): the first subscription replays what the
        hub stored from a little before `started` (time.time()), the margin covering the two hosts' clocks:
        more wakes, never fewer. An earlier such arm's saved `since` stays, being older."""
        if self.received is None and self.since is None:
            self.since = started - settings.REMOTE_SINCE_MARGIN

    def start(self) -> None:
        self._thread = threading.Thread(target=self._keep, name="agora-ws", daemon=True)
        self._thread.start()

    def _subscribe(self):
        from agorad.surface.errors import SEAT_REFUSALS, AgoraError
        from agorad.surface.wsclient import RemoteClient

        client = RemoteClient(self.url, timeout=settings.REMOTE_CONNECT_TIMEOUT)
        client.connect()
        try:
            if self.home is not None:
                from agorad.surface.keys import current_key

                self.key = current_key(self.home, self.agent, self.key)
            hello = client.hello(self.agent, self.key)
            answer = self._subscribed(client)
        except AgoraError as exc:
            client.close()
            if exc.reason in SEAT_REFUSALS:
                raise Fatal(f"the hub at {self.url} refused seat {self.agent}: {exc.message}", refused=True) from None
            raise
        self.redirected, self.notify_dir = hello.get("redirected"), hello.get("notify_dir")
        if self.redirected:  # the seat was renamed: reconnect as its id now, with the key file that moved to it
            self.agent = self.redirected["to"]
        newest = answer.get("newest", 0)
        if self.received is None:  # a first arm: from the hub's newest on, or from where `since` began
            self.received = self.handed = answer.get("after", newest)
        elif newest < self.received:  # the hub's ids started again lower (a restored database): which of its
            self.received = self.handed = 0  # deliveries are new cannot be told, so all ring: never deaf
            client.call("inbox.subscribe", after=0)
        return client

    def _subscribed(self, client) -> dict:
        """inbox.subscribe after the newest id had, or since `since` on a first arm that found no hub."""
        from agorad.surface.errors import AgoraError

        if self.received is not None:
            return client.call("inbox.subscribe", after=self.received)
        if self.since is None:
            return client.call("inbox.subscribe")
        try:
            return client.call("inbox.subscribe", since=self.since)
        except AgoraError as exc:  # a hub older than `since`: from its newest on, as before
            if exc.reason != "invalid-params":
                raise
            return client.call("inbox.subscribe")

    def _keep(self) -> None:
        """The reader thread: take pushes; when the connection goes, reconnect and catch up."""
        try:
            self._reconnecting()
        except Exception as exc:  # a bug: end the listener in words rather than leave it deaf
            self._give_up(Fatal(f"the connection to {self.url} failed: {type(exc).__name__}: {exc}"))

    def _reconnecting(self) -> None:
        from agorad.surface.errors import AgoraError

        failures = 0
        while not self._stop.is_set():
            client = self._client
            if client is None:
                try:
                    client = self._client = self._subscribe()
                    failures = 0
                except Fatal as exc:
                    return self._give_up(exc)
                except AgoraError as exc:
                    if exc.reason == "invalid-params":  # a URL that cannot be a hub's: trying again cannot help
                        return self._give_up(Fatal(exc.message))
                    failures += 1
                    self._stop.wait(_backoff(failures))
                    continue
            try:
                self._read(client)
            except AgoraError:
                pass
            client.close()
            self._client = None

    def _read(self, client) -> None:
        while not self._stop.is_set():
            note = client.next_notification(timeout=None)
            if note is None or note.get("method") != "inbox.delivery":
                continue
            line = _line(note.get("params"))
            if line is None or line["id"] <= (self.received or 0):
                continue  # already had: a delivery both pushed and replayed around a subscribe
            self.received = line["id"]
            self.lines.append(line)
            self._ring()

    def _give_up(self, why: Fatal) -> None:
        self.fatal = why
        self._ring()

    def _ring(self) -> None:
        if self._stop.is_set():  # closing: the pipe may be gone
            return
        try:
            os.write(self._wake_fd, b"!")
        except OSError:  # the pipe is full: the loop is awake anyway
            pass

    # --- what the listener's loop sees (a watcher and a follower in one) ----------------------------

    def read_new(self) -> list[dict]:
        if self.fatal is not None:
            raise Fatal(self.fatal.cause, self.fatal.refused)
        found = []
        while self.lines:
            found.append(self.lines.popleft())
        if found:
            self.handed = found[-1]["id"]
        return found

    def offset(self) -> dict:
        """The place to resume from; an id of None: never connected, so the next arm is a first arm too,
        which asks for what came `since` this one began (when it began without a hub)."""
        if self.received is not None:
            return {"source": "ws", "id": self.handed}
        return {"source": "ws", "id": None, **({"since": self.since} if self.since is not None else {})}

    def drain(self) -> None:
        try:
            while os.read(self.fd, 512):
                pass
        except BlockingIOError:
            pass

    def follow(self) -> None:
        pass

    def close(self) -> None:
        self._stop.set()
        client = self._client
        if client is not None:
            client.close()  # the reader's recv returns at once
        if self._thread is not None:
            self._thread.join(timeout=2)
        for fd in (self.fd, self._wake_fd):
            os.close(fd)


def _backoff(failures: int) -> float:
    """Seconds before the next try: doubling to the cap, jittered so many seats do not knock at once."""
    ceiling = min(settings.REMOTE_RECONNECT_CAP, settings.REMOTE_RECONNECT_FIRST * 2 ** (failures - 1))
    return ceiling * random.uniform(0.5, 1.0)


def _line(params) -> dict | None:
    """A pushed delivery as a notify line (the same fields, agora-files(5)), or None if it is not one."""
    if not isinstance(params, dict) or type(params.get("id")) is not int or not isinstance(params.get("channel"), str):
        return None
    flags = params.get("flags")
    params["flags"] = [f for f in flags if isinstance(f, str)] if isinstance(flags, list) else []
    return params


def saved_since(saved) -> float | None:
    """The `since` of a saved place that never got through (see WsSource.offset), else None."""
    since = saved.get("since") if isinstance(saved, dict) and saved.get("id") is None else None
    return since if type(since) in (int, float) and since >= 0 else None


def saved_after(saved) -> int | None:
    """Where a seat's saved place says to resume (its last delivery id), None for a first arm; a corrupt
    place replays from the start: more wakes, never deafness."""
    if saved is None or isinstance(saved, dict) and "id" in saved and saved["id"] is None:
        return None
    value = saved.get("id") if isinstance(saved, dict) else None
    return value if type(value) is int and value >= 0 else 0
