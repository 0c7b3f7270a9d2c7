"""Claims: who is doing what. A claim is a row in a channel, owned by the agent that opened it:
a title, a state (open, parked, done), an optional check-in cadence, a link to another claim,
and progress receipts. Referred to as `claim:<n>`.

Every change to the row is a compare-and-swap on its `version`: a caller says which version it
read, and a row that changed since is a `conflict` naming the current version, with nothing
changed. Receipts are appended, not swapped, and leave the version alone. The cadence is the
owner's own promise to check in; cadence.py turns a lapsed one into a reminder.
"""

from __future__ import annotations

import re

import apsw

from agorad.domain import cadence
from agorad.domain import registry
from agorad.domain import channels
from agorad.domain.policy import Actor
from agorad.domain.text import check_line
from agorad.store import channels as channels_sql
from agorad.store import claims as sql
from agorad.store import write
from agorad.surface import settings
from agorad.surface.errors import Conflict, Forbidden, InvalidParams, NotFound
from agorad.surface.vocab import CLAIM_STATES, CLAIM_UNSET

REF = re.compile(re.escape(sql.REF_PREFIX) + r"([1-9][0-9]{0,17})")
MAX_TITLE = 200
MAX_RECEIPT = 500
UNSET = object()  # an update field the caller did not give
FIELD_OF_COLUMN = {"link_pk": "link"}  # the wire's name of a column claims.update changes


ref_of = sql.ref_of


def check_cadence(value, removable: bool, field: str = "cadence_minutes") -> int:
    """A cadence in whole minutes, from the floor (settings) to the ceiling. `removable`: the call
    (claims.update) also takes `none`, so its refusal offers it; claims.open's does not."""
    if type(value) is not int:
        raise InvalidParams(f"{field} must be a whole number of minutes", field=field)
    floor, ceiling = settings.CADENCE_FLOOR_MINUTES, settings.CADENCE_MAX_MINUTES
    if not floor <= value <= ceiling:
        remove = f" (or `{CLAIM_UNSET}` to remove it)" if removable else ""
        raise InvalidParams(f"{field} {value} is outside {floor} to {ceiling} minutes: a cadence is at least "
                            f"{floor} minutes{remove}", field=field, floor=floor, ceiling=ceiling)
    return value


def _title(title) -> str:
    check_line(title, "title", MAX_TITLE)
    if not title.strip():
        raise InvalidParams("a claim needs a title (one line saying what is being done)", field="title")
    return title


def _claim(db: apsw.Connection, actor: Actor, ref, field: str = "ref") -> dict:
    """The claim `ref` names, if the actor may see it: its owner (also after leaving its channel,
    as a debtor may answer what it owes), a member of its channel, or the operator. A claim in a
    DM the actor is not part of does not exist for it (as the DM does not)."""
    match = REF.fullmatch(ref) if isinstance(ref, str) else None
    if not match:
        raise InvalidParams(f"{field} {ref!r} is not a claim reference like claim:12", field=field)
    claim = sql.by_pk(db, int(match.group(1)))
    if claim is not None and not actor.is_operator and actor.agent_pk != claim["owner_pk"] and \
            channels_sql.membership(db, actor.agent_pk, claim["channel_pk"]) is None:
        if claim["channel_kind"] == "dm":
            claim = None
        else:
            raise Forbidden(f"{actor.agent_id} is not a member of {claim['channel']}, where {ref} is"
                            f"{channels.join_hint(claim['channel'], actor)}", rule="channel.member")
    if claim is None:
        raise NotFound(f"no claim {ref} (list them with `agora claim ls`)", field=field)
    return claim


def _require_owner(actor: Actor, claim: dict, what: str, operator_too: bool = True) -> None:
    if actor.is_operator and operator_too:
        return
    if actor.agent_pk != claim["owner_pk"]:
        who = "its owner or the operator" if operator_too else "its owner"
        raise Forbidden(f"{ref_of(claim['pk'])} is {claim['owner']}'s claim: only {who} may {what} it",
                        rule="claim.owner", owner=claim["owner"])


def _link(db: apsw.Connection, actor: Actor, link, own_pk: int | None = None) -> int | None:
    if link is None or link == CLAIM_UNSET:
        return None
    linked = _claim(db, actor, link, "link")
    if linked["pk"] == own_pk:
        raise InvalidParams("a claim cannot link to itself", field="link")
    return linked["pk"]


def view(claim: dict) -> dict:
    """The public shape of a claim row."""
    return {
        "ref": ref_of(claim["pk"]), "channel": claim["channel"], "owner": claim["owner"], "title": claim["title"],
        "state": claim["state"], "cadence_minutes": claim["cadence_minutes"], "version": claim["version"],
        "link": ref_of(claim["link_pk"]) if claim["link_pk"] else None,
        "created_at": claim["created_at"], "updated_at": claim["updated_at"], "quiet_since": claim["quiet_since"],
        "last_receipt_at": claim["last_receipt_at"], "receipts": claim["receipts"],
        "remind_at": claim["remind_at"], "reminder": claim["reminder"],
    }


def open_claim(db: apsw.Connection, actor: Actor, channel_name, title, cadence_minutes, link, now: float) -> dict:
    """Open a claim owned by the actor in a channel it is a member of."""
    _title(title)
    if cadence_minutes is not None:
        check_cadence(cadence_minutes, removable=False)
    with write(db):
        channel = channels.named(db, channel_name, "channel", actor)
        channels.require_member(db, actor, channel)
        link_pk = _link(db, actor, link)
        pk = sql.insert(db, channel["pk"], actor.agent_pk, title, cadence_minutes, link_pk, now)
        if cadence_minutes is not None:
            sql.set_remind_at(db, pk, cadence.remind_at(pk, cadence_minutes, now))  # its jitter needs its pk
        return view(sql.by_pk(db, pk))


def update(db: apsw.Connection, actor: Actor, ref, version: int, now: float, title=UNSET, state=UNSET,
           cadence_minutes=UNSET, link=UNSET) -> dict:
    """Change a claim's declared fields if it is still at `version`; the owner or the operator may."""
    if all(value is UNSET for value in (title, state, cadence_minutes, link)):
        raise InvalidParams("nothing to change: give title, state, cadence_minutes or link")
    if version < 1:  # as charters and phases: a version no claim can have is the caller's mistake, not a race
        raise InvalidParams("version is the claim's version you read: 1 or more (`agora claim show REF`)",
                            field="version")
    if title is not UNSET:
        _title(title)
    if state is not UNSET and state not in CLAIM_STATES:
        raise InvalidParams(f"state must be one of {', '.join(CLAIM_STATES)}", field="state")
    if cadence_minutes is not UNSET and cadence_minutes != CLAIM_UNSET:
        check_cadence(cadence_minutes, removable=True)
    with write(db):
        claim = _claim(db, actor, ref)
        _require_owner(actor, claim, "change")
        _check_version(claim, version)
        wanted = {"title": title, "state": state,
                  "cadence_minutes": None if cadence_minutes == CLAIM_UNSET else cadence_minutes,
                  "link_pk": UNSET if link is UNSET else _link(db, actor, link, claim["pk"])}
        changes = {column: value for column, value in wanted.items() if value is not UNSET and value != claim[column]}
        if changes:  # an update that changes nothing keeps its version
            sql.update(db, claim["pk"], version, {**changes, **cadence.after_change(db, claim, changes, now)}, now)
        shown = view(sql.by_pk(db, claim["pk"]))
    return {**shown, "changed": sorted(FIELD_OF_COLUMN.get(column, column) for column in changes)}


def set_state(db: apsw.Connection, actor: Actor, ref, version: int, state: str, now: float) -> dict:
    """Park or finish a claim (claims.park, claims.done): an update of its state alone."""
    return update(db, actor, ref, version, now, state=state)


def _check_version(claim: dict, version: int) -> None:
    if version != claim["version"]:
        raise Conflict(f"{ref_of(claim['pk'])} is at version {claim['version']}, not {version}: it changed since you "
                       f"read it; read it again (`agora claim show {ref_of(claim['pk'])}`) and decide again",
                       field="version", current_version=claim["version"], ref=ref_of(claim["pk"]))


def receipt(db: apsw.Connection, actor: Actor, ref, text, now: float) -> dict:
    """Record progress on the actor's own claim; it restarts the cadence and discharges a standing reminder."""
    check_line(text, "text", MAX_RECEIPT)
    if not text.strip():
        raise InvalidParams("a receipt needs text (what was done, what is next)", field="text")
    with write(db):
        claim = _claim(db, actor, ref)
        _require_owner(actor, claim, "write a receipt on", operator_too=False)
        n = sql.add_receipt(db, claim["pk"], text, now)
        discharged = cadence.after_receipt(db, claim, now)
        shown = view(sql.by_pk(db, claim["pk"]))
    return {**shown, "receipt": n, "discharged": discharged}


def show(db: apsw.Connection, actor: Actor, ref) -> dict:
    claim = _claim(db, actor, ref)
    return {**view(claim), "receipts_shown": sql.receipts(db, claim["pk"], settings.CLAIM_RECEIPTS_SHOWN)}


def listing(db: apsw.Connection, actor: Actor, channel_name, state, owner_id, limit: int,
            after=None) -> tuple[list[dict], bool]:
    """Claims the actor may see, oldest first: those in its channels and its own, also in a channel it
    left (as `_claim` shows them); every claim for the operator. After the claim `after` names (the
    last of the page before): at most `limit`, and whether more follow."""
    if state is not None and state not in CLAIM_STATES:
        raise InvalidParams(f"state must be one of {', '.join(CLAIM_STATES)}", field="state")
    after_pk = 0
    if after is not None:
        match = REF.fullmatch(after) if isinstance(after, str) else None
        if not match:
            raise InvalidParams(f"after {after!r} is not a claim reference like claim:12 (the last claim listed)",
                                field="after")
        after_pk = int(match.group(1))
    channel_pk = None
    if channel_name is not None:
        channel = channels.named(db, channel_name, "channel", actor)
        if not actor.is_operator and not sql.owns_in(db, actor.agent_pk, channel["pk"]):
            channels.require_member(db, actor, channel)
        channel_pk = channel["pk"]
    owner_pk = registry.resolve(db, owner_id, "owner")[0]["pk"] if owner_id is not None else None
    found = sql.listing(db, None if actor.is_operator else actor.agent_pk, channel_pk, state, owner_pk, limit + 1,
                        after_pk)
    return [view(claim) for claim in found[:limit]], len(found) > limit


