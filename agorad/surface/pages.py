"""Every page of agents.list: the hub answers it a page at a time (domain/roster.py), a client that
wants every agent asks again after the last id until no more follow."""

from __future__ import annotations


def every_agent(hub, after: str = "", **params) -> dict:
    """agents.list's result (`hub` any client with `.call`) holding every page's agents (those after
    `after`, if given), without `more`. A hub before pages answers without `more`: one page, the list."""
    result = hub.call("agents.list", **params, **({"after": after} if after else {}))
    agents = result["agents"]
    while result.get("more") and result["agents"]:
        result = hub.call("agents.list", **params, after=result["agents"][-1]["id"])
        agents += result["agents"]
    result["agents"] = agents
    result.pop("more", None)
    return result
