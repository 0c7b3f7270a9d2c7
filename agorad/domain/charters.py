"""Charters: the rules a seat works under, one per hub and one per channel, every version kept.

Only the local operator sets a charter (policy `charter.write`). A seat is bound by the hub's
charter and by those of the channels it is a member of; until it has read the current version
of each (a `charters.get` of it records a receipt), its inbox check leads with a `charter` entry
for it. A charter change is never a delivery: it writes no notify line, so it never rings a
doorbell or makes a turn, and no wake signature includes it.
"""

from __future__ import annotations

import apsw

from agorad.domain import channels
from agorad.domain.policy import Actor
from agorad.domain.text import check_sized
from agorad.store import charters as sql
from agorad.store import write
from agorad.surface.errors import Conflict, InvalidParams, NotFound
from agorad.surface.fence import fenced_charter


def scope_of(db: apsw.Connection, actor: Actor, channel_name) -> tuple[int, str | None]:
    """(scope, channel name) for the hub (`channel_name` None) or a channel; a DM has no charter."""
    if channel_name is None:
        return sql.HUB_SCOPE, None
    channel = channels.named(db, channel_name, actor=actor)
    if channel["kind"] == "dm":
        raise InvalidParams(f"{channel['name']} is a DM: charters are the hub's and channels'", field="channel")
    return channel["pk"], channel["name"]


def check_text(text, max_bytes: int) -> str:
    """A charter's text: any Unicode text with something in it, up to the hub's body limit in UTF-8."""
    check_sized(text, "text", max_bytes, " (this hub's body limit: agora up --max-body-kib)")
    if not text.strip():
        raise InvalidParams("a charter needs text: to withdraw rules, set a text that says so", field="text")
    return text


def get(db: apsw.Connection, actor: Actor, channel_name, number: int | None, now: float) -> dict:
    """The current charter of a scope (or version `number`); an agent reading the current one records its receipt."""
    scope, name = scope_of(db, actor, channel_name)
    current = sql.current(db, scope)
    if number is None:
        charter = current
    elif not current or not 1 <= number <= current["version"]:
        raise NotFound(f"the {_label(name)} charter has no version {number} (current: {_version(current)})",
                       field="version", current_version=_version(current))
    else:
        charter = sql.version(db, scope, number)
    read = bool(charter) and not actor.is_operator and charter["version"] == current["version"]
    if read:
        with write(db):
            sql.record_receipt(db, actor.agent_pk, scope, charter["version"], now)
    return {"channel": name, "current": _version(current), "read": read, "charter": _shown(name, charter)}


def set_text(db: apsw.Connection, actor: Actor, channel_name, text: str, expected: int | None, now: float) -> dict:
    """Make `text` the scope's next version; `expected`, when given, must be the current version (0: none yet).

    Text equal to the current version's changes nothing (`changed` false): a script that sets the
    same rules again does not show every seat a CHARTER line for nothing.
    """
    scope, name = scope_of(db, actor, channel_name)
    with write(db):
        current = sql.current(db, scope)
        if expected is not None and expected != _version(current):
            raise Conflict(f"the {_label(name)} charter is at version {_version(current)}, not {expected}: "
                           f"read it again (agora charter show{' ' + name if name else ''}) and retry with "
                           f"--version {_version(current)}", field="version", current_version=_version(current))
        changed = current is None or current["text"] != text
        if changed:
            sql.add_version(db, scope, _version(current) + 1, text, actor.name, now)
    charter = sql.current(db, scope)
    return {"channel": name, "current": charter["version"], "changed": changed, "charter": _shown(name, charter)}


def unread(db: apsw.Connection, actor: Actor) -> list[dict] | None:
    """The charters binding the seat whose current version it has not read; None when it has read them all."""
    return sql.unread_by(db, actor.agent_pk) or None


def _shown(name: str | None, charter: dict | None) -> dict | None:
    if charter is None:
        return None
    shown = {"channel": name, **charter}
    return {**shown, "fenced": fenced_charter(shown)}


def _version(charter: dict | None) -> int:
    return charter["version"] if charter else 0


def _label(name: str | None) -> str:
    return f"channel {name}" if name else "hub"
