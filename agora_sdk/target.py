"""Where a client connects and as whom: a home's Unix socket or a URL, an agent and its key."""

from __future__ import annotations

from agorad.surface.errors import AgoraError, Unauthorized
from agorad.surface.filenames import hub_url_and_source
from agorad.surface.keys import no_key, read_key
from agorad.surface.paths import Home
from agorad.surface.wsclient import check_url


def _url(given: str | None, home: Home) -> tuple[str | None, str | None]:
    """(the URL to reach, where it came from): `url=`, else the home's hub.url (`agora setup --url`: its
    keys are that hub's), else $AGORA_URL, as for every command; (None, None) for the home's socket."""
    if given is not None:
        return given, "url="
    return hub_url_and_source(home.root_text)


class Target:
    """A resolved connection target: `url` (None for the Unix socket of `home`), `agent`, `key`."""

    def __init__(self, agent: str | None = None, *, key: str | None = None, home=None, url: str | None = None,
                 interval: float | str | None = None):
        self.home = home if isinstance(home, Home) else Home.resolve(home)
        self.url, self.url_from = _url(url, self.home)
        if self.url is not None:
            check_url(self.url)
        self.agent = agent
        self.key = key
        self.interval = interval
        self._key_given = key is not None  # else read again at each connect: `agora agent rekey` may replace it
        self.key_holder = agent  # whose key file holds the key: the seat's current id once a rename moved it
        if agent is not None and key is None:
            self.key = read_key(self.home, agent)
            if self.key is None:
                raise Unauthorized(no_key(self.home, agent, "pass key=, set AGORA_KEY, or keep it in "
                                          f"{self.home.key_file(agent)}"))
        if self.url is not None and agent is None:
            raise Unauthorized("a remote hub acts only as an agent: name one (and its key)")

    @property
    def where(self) -> str:
        return self.url or self.home.root_text

    def refused(self, exc: AgoraError) -> AgoraError:
        """The hub's refusal of hub.hello, saying which hub refused and where its URL came from: a home's
        hub.url wins over $AGORA_URL, which a user may not expect."""
        where = self.where if self.url is None else f"{self.url}, from {self.url_from}"
        return type(exc)(f"{exc.message} (the hub at {where})", **exc.data)

    @property
    def key_from_file(self) -> bool:
        """The key is read again at each connect: one the hub revoked may have been replaced there."""
        return not self._key_given

    def lost_key_file(self) -> bool:
        """The home's key file, where the key comes from, is not under the id known: `agora agent rename`
        moved it to the seat's new id, which the hub's socket can tell (`agents.resolve`, before the hello,
        as the operator, as the CLI asks). A URL's home keeps its own copy, which no rename moves."""
        return self.key_from_file and self.url is None and read_key(self.home, self.key_holder) is None

    def follow(self, current_id: str) -> None:
        """The seat's id now (agents.resolve, or the hello's answer): its key file is under it."""
        self.key_holder = current_id

    def hello_params(self) -> dict:
        if not self._key_given:
            self.key = read_key(self.home, self.key_holder) or self.key
        params = {"agent": self.agent, "key": self.key}
        if self.interval is not None:
            params["interval"] = self.interval
        return params
