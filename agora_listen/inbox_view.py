"""What a hook asks the hub at a turn's end or a session's start: the seat's important unread mail.

One connection, one `inbox.check` with `important` (agora-rpc(7)): only headlines flagged to-me, dm
or open, so a busy channel cannot crowd them out. Important here is what `agora listen
--important-only` rings for: those headlines, except ones sent `--urgency next_turn` (they wait for
the next inbox check and never ring) and the hub's own notices (is_notice), plus debts that escalated
(their ask may have been acked).
"""

from __future__ import annotations

import os

from agora_listen.headlines import is_notice
from agorad.surface import settings
from agorad.surface.filenames import hub_url_for
from agorad.surface.vocab import DM_PREFIX, NEXT_TURN


class Trouble(Exception):
    """The hub could not be asked; the message says what happened and what to do. `refusal`: why asking
    again cannot help (`no-key`, or `refused`: a wrong key, a seat the hub does not know), None when it
    may (no hub answered)."""

    def __init__(self, message: str, refusal: str | None = None):
        super().__init__(message)
        self.refusal = refusal


class View:
    """The seat's mail as a hook sees it (a plain class: `dataclasses` costs the hook its `inspect` import)."""

    def __init__(self, agent: str, now: float, unread: int, owed: int, important: list[dict], more: bool,
                 charters: int = 0, paused: bool = False, beyond: list[str] | None = None):
        self.agent = agent  # the seat's current id (a renamed seat's old id is followed)
        self.now = now  # the hub's clock
        self.unread, self.owed = unread, owed
        self.important = important  # [{"ref", "sender", "flags", "title", "mark"}]
        self.more = more  # the hub listed as many as asked for: there may be more
        # Past the listed headlines, each DM's unread count ("dm:...:+N" for N not listed): mail that came after
        # the first BACKSTOP_HEADLINES is in no headline, and the backstop's schedule would wait out its window
        # for it (a review: 20 unread DMs hid a new ask for up to an hour). DMs only: every unread DM is
        # important, while a channel's count moves with its chatter, which re-prompted at every turn's end.
        self.beyond = beyond or []
        self.charters = charters  # charters binding the seat that it has not read: context, never a re-prompt
        self.paused = paused  # the operator paused the hub and this seat is not one of its seats


def ask(root: str | os.PathLike, agent: str) -> View:
    current, result = check(root, agent, settings.BACKSTOP_HEADLINES)
    return _view(current, result)


def check(root: str | os.PathLike, agent: str, limit: int,
          timeout: float = settings.HOOK_HUB_TIMEOUT) -> tuple[str, dict]:
    """The seat's current id (a renamed seat's old id is followed) and the hub's `inbox.check` answer,
    important headlines only, up to `limit` of them and of the debts. Raises Trouble."""
    current, (result,) = ask_as_seat(root, agent, [("inbox.check", {"important": True, "limit": limit})], timeout)
    return current, result


def ask_as_seat(root: str | os.PathLike, agent: str, calls: list[tuple[str, dict]],
                timeout: float = settings.HOOK_HUB_TIMEOUT) -> tuple[str, list[dict]]:
    """The seat's current id and the answers to `calls` (method, params), made as the seat on one
    connection. Raises Trouble."""
    from agorad.surface import keys
    from agorad.surface.client import Client
    from agorad.surface.errors import SEAT_REFUSALS, AgoraError
    from agorad.surface.paths import Home

    home = Home(root)
    url = hub_url_for(home.root_text)  # a seat on another host: the hub's remote port, where it has no socket
    try:
        with (Client(home, timeout=timeout) if not url else _remote(url, timeout)) as hub:
            key, current = keys.read_key(home, agent), agent
            if key is None and not url:  # a renamed seat's key file moved with it: ask where the old id points
                current = hub.call("agents.resolve", agent=agent)["agent"]
                key = keys.read_key(home, current)
            if key is None:
                raise Trouble(keys.no_key(home, agent, f"it is kept in {home.key_file(current)} "
                                          f"({_key_remedy(agent, url)}), or set AGORA_KEY", holder=current), "no-key")
            hello = hub.hello(agent, key)
            current = (hello.get("redirected") or {}).get("to", current)
            return current, [hub.call(method, **params) for method, params in calls]
    except AgoraError as exc:
        refused = exc.reason in SEAT_REFUSALS
        said = exc.message + (_from_environment(home, agent) if refused and os.environ.get("AGORA_KEY") else "")
        raise Trouble(said, "refused" if refused else None) from None


def _from_environment(home, agent: str) -> str:
    """A refused key that came from $AGORA_KEY: no key file the remedies rewrite would change it."""
    return (f"; the key came from $AGORA_KEY, which comes before {home.key_file(agent)}: correct it, or unset "
            "it to use the key file")


def _key_remedy(agent: str, url: str | None) -> str:
    """How a seat gets its key file back: on the hub's host a new key is written there; a remote seat's
    host keeps the one its operator hands over."""
    if url:
        return f"`agora setup {agent} --url {url} --key-stdin` keeps the key the hub's operator gives you there"
    return f"on the hub's host `agora agent rekey {agent}` writes a new one there"


def _remote(url: str, timeout: float):
    from agorad.surface.wsclient import RemoteClient

    return RemoteClient(url, timeout=timeout)


def _view(agent: str, result: dict) -> View:
    escalations = {debt["ref"]: debt["escalations"] for debt in result["owed"]}
    items, seen = [], set()
    open_now = through_pause(result)
    for channel in result["channels"]:
        for m in channel["messages"]:
            if is_notice(m):
                continue
            if m.get("urgency") != NEXT_TURN or escalations.get(m["ref"]):
                items.append(_item(m["ref"], m["sender"], m["flags"], m["title"], escalations.get(m["ref"], 0)))
                seen.add(m["ref"])
    for debt in result["owed"]:
        if debt["escalations"] and debt["ref"] not in seen:
            items.append(_item(debt["ref"], debt["asker"], ["to-me", "open"], debt["title"], debt["escalations"]))
    if open_now is not None:  # paused: only what the seat may still answer is asked of it
        items = [item for item in items if channel_of(item["ref"]) in open_now]
    listed = sum(len(c["messages"]) for c in result["channels"])
    more = listed >= settings.BACKSTOP_HEADLINES or len(result["owed"]) >= settings.BACKSTOP_HEADLINES
    return View(agent, result["now"], result["unread"], result["owed_total"], items, more=more,
                charters=len(result.get("charter") or []), paused=open_now is not None,
                beyond=_beyond(result, open_now) if more else [])


def _beyond(result: dict, open_now: frozenset | None) -> list[str]:
    """A mark per DM whose unread the listing did not show in full, with how many it left out (a channel's
    new mentions past the listing wait for the window)."""
    return [f"{c['channel']}{BEYOND}{c['unread'] - len(c['messages'])}" for c in result["channels"]
            if c["channel"].startswith(DM_PREFIX) and c["unread"] > len(c["messages"])
            and (open_now is None or c["channel"] in open_now)]


BEYOND = ":+"  # in a mark: the DM before it, the count after it


def steady(marks: list[str], before: list[str]) -> list[str]:
    """`marks` with each DM's count past the listing kept at the highest the schedule (`before`) saw: only a
    count that rises past it is news; one that falls (the seat acked some) is not."""
    seen = {}
    for mark in before:
        dm, sep, count = mark.rpartition(BEYOND)
        if sep and count.isdigit():
            seen[dm] = max(seen.get(dm, 0), int(count))
    kept = []
    for mark in marks:
        dm, sep, count = mark.rpartition(BEYOND)
        if sep and count.isdigit() and seen.get(dm, -1) >= int(count):
            mark = f"{dm}{BEYOND}{seen[dm]}"
        kept.append(mark)
    return kept


def through_pause(result: dict) -> frozenset | None:
    """None while the hub runs for this seat (not paused, or the seat is one of the operator's); else
    the channels the seat may still answer in, its DMs with the operator's seats: what waits anywhere
    else would buy a turn whose answers are refused."""
    paused = result.get("paused")
    if not paused or paused.get("operator_seat"):
        return None
    return frozenset(paused.get("open_dms", ()))


def channel_of(ref: str) -> str:
    return ref.rpartition("#")[0]


def _item(ref: str, sender: str, flags: list, title: str, escalations: int) -> dict:
    """A headline; its `mark` changes when its debt escalates again, so that counts as new news."""
    return {"ref": ref, "sender": sender, "title": title,
            "flags": [*flags, "escalated"] if escalations else list(flags),
            "mark": f"{ref}@{escalations}" if escalations else ref}
