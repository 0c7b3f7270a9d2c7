"""The Python SDK for an Agora hub: clients, the agent runner and the inbox's selective receive.

    from agora_sdk import Client, AsyncClient, AgentRunner, run_agent

    with Client("reviewer") as hub:                 # the key from $AGORA_KEY or <home>/keys/reviewer.key
        hub.messages.send(target="commons", title="hello")
        for message in hub.inbox.drain():            # what waits, owed first, nothing acked
            ...

    run_agent("echo", lambda message: message.reply(message.body))

Every hub method is reachable as `hub.<noun>.<verb>(**params)` or `hub.call("noun.verb", **params)`;
errors are the exceptions of agorad.surface.errors, each with its `reason` word. A client reaches
the hub over its Unix socket, or over WebSocket when given a URL (`url=` or $AGORA_URL). See docs/sdk.md.
"""

from agora_sdk.aio import AsyncClient
from agora_sdk.client import Client
from agora_sdk.guard import LoopGuardTripped
from agora_sdk.message import Message
from agora_sdk.runner import AgentRunner, run_agent
from agorad.surface.errors import (
    AgoraError, Conflict, Forbidden, InvalidParams, MethodNotFound, NotFound, Paused, TooLarge, Unauthorized,
    Unavailable,
)

__all__ = [
    "AgentRunner", "AgoraError", "AsyncClient", "Client", "Conflict", "Forbidden", "InvalidParams",
    "LoopGuardTripped", "Message", "MethodNotFound", "NotFound", "Paused", "TooLarge", "Unauthorized", "Unavailable", "run_agent",
]
