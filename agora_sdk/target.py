"""Where a client connects and as whom: a home's Unix socket or a URL, an agent and its key."""

from __future__ import annotations

from agorad.surface.errors import Unauthorized
from agorad.surface.filenames import hub_url_for
from agorad.surface.keys import read_key
from agorad.surface.paths import Home
from agorad.surface.wsclient import check_url



class Target:
    """A resolved connection target: `url` (None for the Unix socket of `home`), `agent`, `key`."""

    def __init__(self, agent: str | None = None, *, key: str | None = None, home=None, url: str | None = None,
                 interval: float | str | None = None):
        self.home = home if isinstance(home, Home) else Home.resolve(home)
        # As every command: the home's hub.url (`agora setup --url`: its keys are that hub's), else $AGORA_URL.
        self.url = url if url is not None else hub_url_for(self.home.root_text)
        if self.url is not None:
            check_url(self.url)
        self.agent = agent
        self.key = key
        self.interval = interval
        if agent is not None and key is None:
            self.key = read_key(self.home, agent)
            if self.key is None:
                raise Unauthorized(f"no key for {agent!r}: pass key=, set AGORA_KEY, or keep it in "
                                   f"{self.home.key_file(agent)}")
        if self.url is not None and agent is None:
            raise Unauthorized("a remote hub acts only as an agent: name one (and its key)")

    @property
    def where(self) -> str:
        return self.url or self.home.root_text

    def hello_params(self) -> dict:
        params = {"agent": self.agent, "key": self.key}
        if self.interval is not None:
            params["interval"] = self.interval
        return params
