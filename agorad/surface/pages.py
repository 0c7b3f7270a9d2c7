"""Every page of agents.list: the hub answers it a page at a time (domain/roster.py), a client that
wants every agent asks again after the last id until no more follow."""

from __future__ import annotations


def every_agent(hub, after: str = "", **params) -> dict:
    """agents.list's result (`hub` any client with `.call`) holding every page's agents (those after
    `after`, if given), without `more`. A hub before pages answers without `more`: one page, the list."""
    result = hub.call("agents.list", **params, **({"after": after} if after else {}))
    agents = result["agents"]
    while (after := next_after(result)) is not None:
        result = hub.call("agents.list", **params, after=after)
        agents += result["agents"]
    result["agents"] = agents
    result.pop("more", None)
    return result


def next_after(page: dict) -> str | None:
    """The `after` that asks for the page following `page`, or None when no more follow (a hub before
    pages answers without `more`: its one page is the list)."""
    return page["agents"][-1]["id"] if page.get("more") and page["agents"] else None
