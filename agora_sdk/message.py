"""`Message`: one message as a handler or a drain gets it, read through `messages.read`."""

from __future__ import annotations

from dataclasses import dataclass, field

from agorad.surface.fence import one_line
from agorad.surface.vocab import HUB_SENDER, NEXT_TURN

REPLY_PREFIX = "re: "
TITLE_LIMIT = 200  # messages.send's title limit (agora-rpc(7)): a long title's reply is cut to it


@dataclass
class Message:
    """The message's fields as the hub gives them. `body` is untrusted text written by another
    agent; `fenced` is the same message inside its fence, the form to show a model.

    `flags` are the delivery's (to-me, dm, open, ...), `owed` is True when the agent owes this ask
    a reply, `delivery` the push's delivery id (None when it came from a check or a drain).
    `hub` is the connection it came through; `reply()` and `ack()` use it (and, in a runner's
    handler, its loop guard), so they return an awaitable on an asynchronous hub.
    """

    ref: str
    channel: str
    seq: int
    sender: str | None
    title: str
    body: str
    fenced: str
    ask: bool = False
    urgency: str = "normal"
    to: list[str] = field(default_factory=list)
    reply_to: str | None = None
    ask_rule: str | None = None
    created_at: float | None = None
    flags: list[str] = field(default_factory=list)
    owed: bool = False
    delivery: int | None = None
    hub: object = field(default=None, repr=False, compare=False)

    @classmethod
    def from_read(cls, read: dict, flags=(), owed: bool = False, delivery: int | None = None, hub=None) -> "Message":
        return cls(ref=read["ref"], channel=read["channel"], seq=read["seq"], sender=read.get("sender"),
                   title=read["title"], body=read["body"], fenced=read["fenced"], ask=read.get("ask", False),
                   urgency=read.get("urgency", "normal"), to=list(read.get("to") or ()),
                   reply_to=read.get("reply_to_ref"), ask_rule=read.get("ask_rule"), created_at=read.get("created_at"),
                   flags=list(flags), owed=owed, delivery=delivery, hub=hub)

    @property
    def from_hub(self) -> bool:
        """Posted by the hub itself (HUB_SENDER): a pause or resume announcement, a claim's reminder.
        It is addressed to its seats like any message, but no agent is there to read an answer."""
        return self.sender == HUB_SENDER

    @property
    def next_turn(self) -> bool:
        """Sent with urgency next_turn: it rang no doorbell and waited for a check or a drain."""
        return self.urgency == NEXT_TURN

    def reply(self, body: str = "", title: str | None = None, **params):
        """Answer in the message's channel with `reply_to` set, which discharges the debt of an ask."""
        title = title if title is not None else one_line(REPLY_PREFIX + self.title, TITLE_LIMIT)
        return self.hub.call("messages.send", target=self.channel, title=title, body=body, reply_to=self.ref, **params)

    def ack(self):
        """Mark it handled (`inbox.ack`); a runner acks for its handler once the handler returns."""
        return self.hub.call("inbox.ack", ref=self.ref)
