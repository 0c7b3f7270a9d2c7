"""One headline as a line of text a model reads: sender, ref, flags and the title quoted and neutralised.

Shared by the listener's digest and the stop-hook backstop, so a hostile title is made harmless in
one place: control characters (newlines included) become spaces, so it cannot start a line of its
own (an `AGORA_WAKE` lookalike, a fake instruction); it is cut short and JSON-quoted, so it reads as
data; channel and sender pass through sentinels.clamp. And which headlines are the hub's own notices,
which ring no one (is_notice): the listener's re-ring and the driver's turns ask it.
"""

from __future__ import annotations

from agora_listen.sentinels import clamp, number
from agorad.surface import cjson
from agorad.surface.vocab import HUB_SENDER, IMPORTANT_FLAGS, OPEN_FLAG

TITLE_CHARS = 100


def quoted_title(title) -> str:
    return cjson.dumps("".join(c if c.isprintable() else " " for c in str(title))[:TITLE_CHARS])


def line(channel, seq, sender, flags, title) -> str:
    """`  general#4 from alice [to-me,open] "title"`."""
    shown = ",".join(f for f in flags or () if f in IMPORTANT_FLAGS) or "-"
    return f"  {clamp(channel)}#{number(seq)} from {clamp(sender or '?')} [{shown}] {quoted_title(title)}"


def is_notice(message: dict) -> bool:
    """The hub's own announcement (a pause, a resume): addressed to every seat so each learns of it, but it
    asks nothing, so it neither re-prompts a model nor buys a driven turn. A claim's reminder asks (open)."""
    return message.get("sender") == HUB_SENDER and OPEN_FLAG not in message["flags"]
