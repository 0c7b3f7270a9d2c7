"""`hub.inbox.drain()`: the selective-receive point for a loop that must not be preempted.

A loop that owns its turn (an agent mid-task, a batch job) does not want a push handler to cut
in; at a point of its choosing it takes what is waiting instead, next_turn mail included (it
never rings, so nothing else would bring it), in the order of a reception pass: the asks it
owes first, then the unread by channel. Nothing is acked: the caller acks what it handled.
"""

from __future__ import annotations

from agora_sdk.message import Message
from agora_sdk.methods import Noun
from agorad.surface import settings
from agorad.surface.vocab import OPEN_FLAG


def waiting_refs(check: dict) -> list[tuple[str, list[str], bool]]:
    """(ref, flags, owed) for each message an inbox.check lists: owed asks first, then unread
    headlines by channel; an owed ask that is also unread is listed once, in the owed block."""
    seen: dict[str, tuple[str, list[str], bool]] = {}
    for debt in check["owed"]:
        seen[debt["ref"]] = (debt["ref"], [OPEN_FLAG], True)
    for channel in check["channels"]:
        for headline in channel["messages"]:
            ref = headline["ref"]
            seen[ref] = (ref, headline["flags"], ref in seen)
    return list(seen.values())


class Inbox(Noun):
    """`hub.inbox.*`: the hub's inbox methods, and `drain()`."""

    def drain(self, limit: int = settings.DRAIN_LIMIT) -> list[Message]:
        """What waits for the agent, read in full, owed first; nothing is acked (see the module)."""
        check = self._client.call("inbox.check", limit=limit)
        return [Message.from_read(self._client.call("messages.read", ref=ref), flags, owed, hub=self._client)
                for ref, flags, owed in waiting_refs(check)]


class AsyncInbox(Noun):
    """`hub.inbox.*` on an AsyncClient, and `await drain()`."""

    async def drain(self, limit: int = settings.DRAIN_LIMIT) -> list[Message]:
        check = await self._client.call("inbox.check", limit=limit)
        waiting = waiting_refs(check)
        reads = [self._client.request("messages.read", ref=ref) for ref, _, _ in waiting]  # all in flight at once
        return [Message.from_read(await read, flags, owed, hub=self._client)
                for read, (_, flags, owed) in zip(reads, waiting)]
