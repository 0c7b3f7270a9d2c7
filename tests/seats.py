"""Seats for messaging tests: registered agents with open client connections."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def seats(hub, *agent_ids: str, mode: str = "always-on"):
    """Register each agent and yield {id: connected client acting as it}."""
    clients = {}
    try:
        for agent_id in agent_ids:
            key = hub.add_agent(agent_id, liveness_mode=mode)
            clients[agent_id] = hub.client(agent_id, key)
        yield clients
    finally:
        for client in clients.values():
            client.close()


def send(client, target: str, title: str = "hello", body: str = "", **params) -> dict:
    return client.call("messages.send", target=target, title=title, body=body, **params)


def unread_refs(client) -> list[str]:
    return [m["ref"] for c in client.call("inbox.check")["channels"] for m in c["messages"]]
