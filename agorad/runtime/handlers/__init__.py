"""Method handlers, one module per noun. Each takes a Call and returns a JSON-able dict.

Handlers read their params first and call `finish()` before anything else, so
an unknown parameter is refused before any write.
"""

from __future__ import annotations

from dataclasses import dataclass

from agorad.domain.policy import Actor
from agorad.runtime.hub import HubState
from agorad.runtime.params import Params


@dataclass
class Call:
    hub: HubState
    actor: Actor
    params: Params
    connection: object = None       # the server connection, for subscriptions
    new_actor: Actor | None = None  # set by hub.hello when the connection becomes an agent

    @property
    def now(self) -> float:
        return self.hub.clock.now()

    @property
    def db(self):
        return self.hub.db

    def finish(self) -> None:
        self.params.done()
