"""Backlog at arm: debt the seat owes but has not been woken for rings once.

The debts a wake covered are remembered in `listen-<id>.owedsig` as
`<seq>@<asked_at>@<escalations>` entries, so unchanged debt does not re-ring every loop,
while a new or newly escalated debt does. Not by ref: a DM's name follows a
rename of either agent, and the unchanged debt came back under its new ref
and rang again (a signature from before, `<ref>@<escalations>`, still counts). Any wake covers all current debt
(the woken seat sees the owed block first in its inbox). An ask sent
`--urgency next_turn` waits quietly like its delivery: its debt rings at arm
only once it has escalated. Needs the hub and
the seat's key; without them there is no backlog check and the notify file
still rings.
"""

from __future__ import annotations

from agora_listen.seat import CORRUPT, Seat
from agorad.surface import settings
from agorad.surface.vocab import NEXT_TURN


def ask(seat: Seat, home, key: str | None, url: str | None = None) -> dict | None:
    """The hub's `inbox.check` for the seat, or None when the hub or the key is not there to say.

    One connection, two round trips (hello, inbox.check), as owed.list took before: the one answer
    holds the debts (`owed`, with `owed_total`), the unread headlines rering.py needs, and the hub's
    clock (`now`), up to settings.ARM_CHECK_LIMIT of each.
    """
    from agorad.surface.errors import AgoraError
    from agorad.surface.keys import current_key

    key = current_key(home, seat.agent, key)
    if not key:
        return None

    try:
        with _client(home, url) as hub:
            hub.hello(seat.agent, key)
            # important: only to-me, dm and open headlines, so a busy channel cannot crowd them out
            return hub.call("inbox.check", limit=settings.ARM_CHECK_LIMIT, important=True)
    except AgoraError:
        return None


def _client(home, url: str | None):
    """The hub's Unix socket under `home`, or its remote port at `url` (a ws seat)."""
    from agorad.surface.client import Client

    if url is None:
        return Client(home, timeout=5)
    from agorad.surface.wsclient import RemoteClient

    return RemoteClient(url, timeout=5)


def unrung(seat: Seat, debts: list[dict]) -> list[dict]:
    """The debts missing from the remembered signature, as wake-line deliveries."""
    stored = seat.load("owedsig")
    known = set(stored) if isinstance(stored, list) and stored != CORRUPT else set()  # corrupt: ring again
    return [_as_delivery(d) for d in debts if not (_mark(d) in known or _ref_mark(d) in known) and not _waits(d)]


def _waits(debt: dict) -> bool:
    """A next_turn ask not yet escalated: the seat sees it at its next inbox check, unrung."""
    return debt.get("urgency") == NEXT_TURN and not debt["escalations"]


def remember(seat: Seat, debts: list[dict] | None) -> None:
    if debts is not None:
        seat.save("owedsig", sorted(_mark(d) for d in debts))


def _mark(debt: dict) -> str:
    """What stays of a debt through renames: its message's seq and the hub's time of the ask (two debts of
    one seat share both only if asked in two channels at one instant of the hub's clock)."""
    return f"{debt['ref'].rpartition('#')[2]}@{debt['asked_at']!r}@{debt['escalations']}"


def _ref_mark(debt: dict) -> str:
    return f"{debt['ref']}@{debt['escalations']}"


def _as_delivery(debt: dict) -> dict:
    channel, _, seq = debt["ref"].rpartition("#")
    flags = ["to-me"] + (["dm"] if channel.startswith("dm:") else []) + ["open"] + \
        (["escalated"] if debt["escalations"] else [])
    return {"channel": channel, "seq": int(seq), "flags": flags, "title": debt["title"], "sender": debt["asker"]}
