"""`hub.agents.every()`: every agent, whatever the number of pages agents.list answers in."""

from __future__ import annotations

from agora_sdk.methods import Noun
from agorad.surface.pages import every_agent, next_after


class Agents(Noun):
    """`hub.agents.*`: the hub's agents methods, and `every()`."""

    def every(self, **params) -> list[dict]:
        """Every agent agents.list lists (`include_expired`, `counts` as it takes them), in id order."""
        return every_agent(self._client, **params)["agents"]


class AsyncAgents(Noun):
    """`hub.agents.*` on an AsyncClient, and `await every()`."""

    async def every(self, **params) -> list[dict]:
        page = await self._client.call("agents.list", **params)
        agents = page["agents"]
        while (after := next_after(page)) is not None:
            page = await self._client.call("agents.list", **params, after=after)
            agents += page["agents"]
        return agents
