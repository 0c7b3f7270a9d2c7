"""The agent registry: identities, liveness modes, status, renames.

State model (README "Liveness modes", agora-agent(1)): ephemeral seats leave the list after the TTL
without a heartbeat; async seats turn `dormant` (task cleared) after 2x their
declared interval of silence and `idle` on the next heartbeat; always-on
seats never change by themselves. The sweeper writes these transitions, and
every read applies the same rules, so a read never shows a state the sweep
would already have changed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import apsw

from agorad.domain import dm_names
from agorad.domain import intervals
from agorad.domain.policy import Actor
from agorad.domain.text import check_line, is_unicode
from agorad.store import agents as sql
from agorad.store import channels as channels_sql
from agorad.store import claims as claims_sql
from agorad.store import debts as debts_sql
from agorad.store import kb as kb_sql
from agorad.store import messages as messages_sql
from agorad.store import write
from agorad.surface import keys
from agorad.surface import settings
from agorad.surface.errors import Conflict, InternalError, InvalidParams, NotFound, TooLarge
from agorad.surface.paths import Home
from agorad.surface.protocol import (
    MAX_META, MAX_META_KEY, MAX_REASON, MAX_TASK, check_agent_id,
)
from agorad.surface.vocab import HUB_SENDER, LIVENESS_MODES, OPERATOR_NAME, PROFILE_PREFIX, REPORTED_STATUSES, TASK_STATUSES

if TYPE_CHECKING:
    from agorad.runtime.liveness import Liveness

def liveness_mode(mode: str | None, permanent: bool | None = None) -> str:
    """The mode, mapping the legacy `permanent: true` to always-on and unset to ephemeral."""
    if mode is None:
        return "always-on" if permanent else "ephemeral"
    if mode not in LIVENESS_MODES:
        raise InvalidParams(f"liveness_mode {mode!r} is not one of {', '.join(LIVENESS_MODES)}", field="liveness_mode")
    if permanent and mode != "always-on":
        raise InvalidParams(f"permanent: true contradicts liveness_mode {mode!r}", field="permanent")
    return mode


def resolve(db: apsw.Connection, agent_id, field: str = "agent") -> tuple[dict, dict | None]:
    """The agent row for `agent_id`, following a rename alias; and the redirect, if one was followed."""
    check_agent_id(agent_id, field)
    row = sql.by_id(db, agent_id)
    if row:
        return row, None
    alias = sql.alias(db, agent_id)
    if alias:
        row = sql.by_pk(db, alias["agent_pk"])
        return row, {"from": agent_id, "to": row["id"], "reason": alias["reason"]}
    raise NotFound(f"no agent named {agent_id!r} is registered (see `agora agents`)", field=field)


def _check_new_id(agent_id, field: str) -> None:
    """An id an agent may take: valid, and not the one the hub signs its own messages with."""
    check_agent_id(agent_id, field)
    if agent_id == HUB_SENDER:
        raise Conflict(f"the id {HUB_SENDER!r} is the hub's own (it signs the reminders and announcements the hub posts); "
                       "choose another", field=field)
    if agent_id == OPERATOR_NAME:
        raise Conflict(f"the id {OPERATOR_NAME!r} names the local operator (the author of the operator's own "
                       "writes); choose another", field=field)


def add(db: apsw.Connection, home: Home, now: float, agent_id, mode: str, interval: float | None, meta: dict,
        ttl: float = settings.EPHEMERAL_TTL) -> tuple[dict, str]:
    """Register an agent; return its view and its key (the only time the key is shown).
    `interval` None: the operator sets none, so the agent's declaration or the default applies."""
    _check_new_id(agent_id, "agent")
    meta_text = _meta_text(meta)
    interval_s, source = intervals.effective(interval, None)
    key = keys.new_key()
    with write(db):
        if sql.by_id(db, agent_id) or sql.alias(db, agent_id):
            raise Conflict(f"an agent (or a rename alias) named {agent_id!r} already exists", field="agent")
        pk = sql.insert(db, {
            "id": agent_id, "key_hash": keys.hash_key(key), "liveness_mode": mode,
            "interval_s": float(interval_s), "interval_source": source, "meta": meta_text, "created_at": now,
        })
        channels_sql.join_commons(db, pk, now)
        # Staged inside the transaction (if it cannot be written, the agent is not added) and put in place
        # once the change is stored (hub.key_staged), as at a rekey: a lost batch leaves no key file.
        try:
            keys.stage_key(home, agent_id, key)
        except OSError as exc:
            raise InternalError(f"writing the key file {home.key_file(agent_id)}: {exc.strerror or exc}; "
                                "the agent was not added") from None
    return view(sql.by_pk(db, pk), now, ttl), key


def rekey(db: apsw.Connection, home: Home, agent_id) -> tuple[str, dict | None, str, int]:
    """Give an agent a new key, in place of its old one (which no longer says hello): the agent keeps its
    id, deliveries, debts and claims. Return its id, the redirect followed, the key (shown this once)
    and its pk. The key is staged beside the key file inside the transaction (if it cannot be written,
    nothing changes); the hub puts it in place once the change is stored (hub.key_staged), and drops it
    if it is not, so the file and the stored hash never disagree."""
    key = keys.new_key()
    with write(db):
        row, redirect = resolve(db, agent_id)
        sql.update(db, row["pk"], {"key_hash": keys.hash_key(key)})
        try:
            keys.stage_key(home, row["id"], key)
        except OSError as exc:
            raise InternalError(f"writing the key file {home.key_file(row['id'])}: {exc.strerror or exc}; "
                                "the old key still stands") from None
    return row["id"], redirect, key, row["pk"]


def settle_staged_keys(db: apsw.Connection, home: Home) -> list[tuple[str, bool]]:
    """At start-up: finish each rekey a stop cut between its COMMIT and putting its key in place. A staged
    key the database holds the hash of is installed (else the seat would be locked out, its new key
    shown to nobody); any other (its batch was lost) is dropped. Returns (agent id, installed) of each."""
    settled = []
    for staged_as, key in keys.staged_keys(home):
        row = sql.by_id(db, staged_as)
        if row is None and (alias := sql.alias(db, staged_as)):  # renamed in the same cut batch
            row = sql.by_pk(db, alias["agent_pk"])
        installed = row is not None and keys.key_matches(key, row["key_hash"])
        if installed:
            keys.install_staged_key(home, staged_as, row["id"])
        else:
            keys.drop_staged_key(home, staged_as)
        settled.append((row["id"] if installed else staged_as, installed))
    return settled


def heartbeat(db: apsw.Connection, liveness: Liveness, now: float, actor: Actor, status: str | None, task,
              interval: float | None = None) -> dict:
    """Record that the agent is alive; a dormant agent comes back `idle` unless it says otherwise.
    With `interval` (checked by intervals.check), also store the agent's declared interval; the reply
    then carries the effective `interval` and its `interval_source`."""
    status, task = _checked_report(status, task)
    declared = None
    if interval is None:
        # One statement is atomic by itself: no savepoint needed on this hot path.
        recorded = sql.record_heartbeat(db, actor.agent_pk, status, task, now)
    else:
        with write(db):
            declared = intervals.declare(db, actor.agent_pk, interval)
            recorded = sql.record_heartbeat(db, actor.agent_pk, status, task, now)
    if recorded is None:  # removed earlier in this same batch; the connection is revoked once that commits
        raise NotFound(f"agent {actor.agent_id!r} no longer exists", field="agent")
    agent_id, status_now, task_now, last_seen = recorded
    liveness.learn(actor.agent_pk, status_now, task_now)  # also after a bare beat: it may have woken a dormant seat
    result = {"agent": agent_id or actor.agent_id, "status": status_now, "task": task_now, "last_seen": last_seen}
    if declared is not None:
        liveness.learn_interval(actor.agent_pk, interval, declared)
        result.update(declared)
    return result


def steady_heartbeat(liveness: Liveness, now: float, actor: Actor, status: str | None, task,
                     interval: float | None = None) -> dict | None:
    """The reply to a heartbeat that restates the agent's status and task (and, if it gives one,
    its declared interval), stamped without a transaction (liveness.py); None when it changes
    something or states nothing."""
    status, task = _checked_report(status, task)
    if status is None or not liveness.stamp(actor.agent_pk, status, task, now, interval):
        return None
    result = {"agent": actor.agent_id, "status": status, "task": task, "last_seen": now}
    if interval is not None:
        result.update(liveness.interval_of(actor.agent_pk))
    return result


def declare_interval(db: apsw.Connection, liveness: Liveness, actor: Actor, interval: float) -> dict:
    """The agent's own interval, declared in hub.hello: stored; its effective interval and source returned."""
    with write(db):
        declared = intervals.declare(db, actor.agent_pk, interval)
    if declared is None:
        raise NotFound(f"agent {actor.agent_id!r} no longer exists", field="agent")
    liveness.learn_interval(actor.agent_pk, interval, declared)
    return declared


def _checked_report(status: str | None, task) -> tuple[str | None, str | None]:
    """(status, task) as a heartbeat sets them: a task alone means `working`; status None sets nothing."""
    task = check_line(task, "task", MAX_TASK, optional=True)
    if status is not None and status not in REPORTED_STATUSES:
        raise InvalidParams(f"status {status!r} is not one of {', '.join(REPORTED_STATUSES)}", field="status")
    if task and status not in (None, *TASK_STATUSES):
        raise InvalidParams(f"a task goes with status {' or '.join(map(repr, TASK_STATUSES))}, not {status!r}",
                            field="task")
    if status is None and task is not None:
        status = "working"
    return status, task


def view(row: dict, now: float, ttl: float, profile: dict | None = None) -> dict:
    """The public shape of an agent at time `now`, with the state rules applied."""
    return view_of(row["id"], row["liveness_mode"], row["interval_s"], row["interval_source"], row["declared_interval_s"],
                   row["status"], row["task"], row["meta"], row["created_at"], row["last_seen"], row["expired_at"],
                   now, ttl, profile)


def view_of(agent_id, mode, interval, source, declared, status, task, meta, created, seen, expired_at,
            now: float, ttl: float, profile: dict | None) -> dict:
    """`view` from a row's values, in `store/agents.VIEW_COLUMNS` order: roster.list_agents passes them straight
    from the cursor (a dict per row, then the view, was half of agents.list at 10,000 seats). The state
    rules are the sweep's (store/agents.py `_DUE_DORMANT`, `_DUE_EXPIRED`), applied at `now`."""
    silent = seen if seen is not None else created
    if mode == "async" and silent + 2 * interval < now:
        status, task = "dormant", None  # as the sweep would leave it
    return {
        "id": agent_id, "liveness_mode": mode, "status": status, "task": task, "last_seen": seen,
        "interval": interval, "interval_source": source, "declared_interval": declared, "created_at": created,
        "expired": mode == "ephemeral" and (expired_at is not None or silent + ttl < now),  # off the list, swept or not
        "registered": True,
        "meta": {} if meta == "{}" else json.loads(meta),  # most seats have none: json.loads was a third of agents.list
        "profile": profile["value"] if profile else None,
    }


def get(db: apsw.Connection, now: float, ttl: float, agent_id) -> tuple[dict, dict | None]:
    row, redirect = resolve(db, agent_id)
    result = view(row, now, ttl, kb_sql.get(db, PROFILE_PREFIX + row["id"]))
    result["aliases"] = sql.aliases_of(db, row["pk"])
    return result, redirect


def rename(db: apsw.Connection, now: float, old_id, new_id, reason) -> tuple[dict, int]:
    """Give an agent a new id, leaving `old_id` as an alias that redirects with `reason`.

    Its DMs take their names under the new id, their old names kept as aliases.
    Returns the receipt and the agent's pk. Files named after the agent (key,
    notify, seat files) are the caller's to move once this is committed.
    """
    _check_new_id(new_id, "new")
    reason = check_line(reason, "reason", MAX_REASON)
    if not reason.strip():
        raise InvalidParams("a rename needs a reason (it is shown to everyone the alias redirects)", field="reason")
    with write(db):
        row, redirect = resolve(db, old_id, "old")
        if redirect:
            raise Conflict(f"{old_id!r} was already renamed to {row['id']!r}; rename {row['id']!r} instead", field="old")
        taken = sql.by_id(db, new_id)
        alias = sql.alias(db, new_id)
        if taken or (alias and alias["agent_pk"] != row["pk"]):
            raise Conflict(f"the id {new_id!r} is already in use", field="new")
        if kb_sql.get(db, PROFILE_PREFIX + row["id"]) and kb_sql.get(db, PROFILE_PREFIX + new_id):
            raise Conflict(
                f"both {PROFILE_PREFIX}{row['id']} and {PROFILE_PREFIX}{new_id} exist; remove one before renaming",
                field="new",
            )
        sql.rename(db, row["pk"], row["id"], new_id, reason, now)
        dm_names.follow_rename(db, row["pk"], row["id"], new_id, now)
        kb_sql.move(db, PROFILE_PREFIX + row["id"], PROFILE_PREFIX + new_id)
    return {"from": row["id"], "to": new_id, "reason": reason}, row["pk"]


def update(db: apsw.Connection, now: float, ttl: float, agent_id, mode: str | None = None,
           interval: float | str | None = None, meta_patch: dict | None = None) -> tuple[dict, dict | None, int]:
    """Change an agent's mode, interval (seconds, or intervals.UNSET) and meta in place: the key,
    status, task and last_seen stay. Values are checked by the caller (liveness_mode,
    intervals.check, check_meta_patch); the merged meta's size is checked here.

    Returns the agent as `get` shows it, the redirect followed (if any) and its pk.
    """
    with write(db):
        row, redirect = resolve(db, agent_id)
        changes = {}
        if mode is not None:
            changes["liveness_mode"] = mode
        if interval is not None:
            changes.update(intervals.operator_sets(row, interval))
        if meta_patch is not None:
            changes["meta"] = _meta_text(merge_meta(json.loads(row["meta"]), meta_patch))
        sql.update(db, row["pk"], changes)
        agent, _ = get(db, now, ttl, row["id"])
    return agent, redirect, row["pk"]


def check_meta_patch(patch) -> dict:
    """`patch` if it is a meta update: an object whose keys are one line of text and whose
    values are strings (set the key) or null (remove it)."""
    if not isinstance(patch, dict):
        raise InvalidParams("meta must be an object of key: string (null removes the key)", field="meta")
    for key, value in patch.items():
        if not 0 < len(key) <= MAX_META_KEY or not key.isprintable() or not is_unicode(key):
            shown = key if len(key) <= 40 else f"{key[:37]}..."
            raise InvalidParams(f"meta key {shown!r} must be 1-{MAX_META_KEY} characters of one-line "
                                "printable text", field="meta")
        if value is not None and not isinstance(value, str):
            raise InvalidParams(f"meta[{key!r}] must be a string, or null to remove the key "
                                f"(not {type(value).__name__})", field="meta")
        if value is not None and not is_unicode(value):
            raise InvalidParams(f"meta[{key!r}] is not valid Unicode (it holds a lone surrogate)", field="meta")
    return patch


def merge_meta(meta: dict, patch: dict) -> dict:
    """`meta` with `patch` applied: each key set to its string, or removed where the patch says null."""
    merged = dict(meta)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def remove(db: apsw.Connection, agent_id, now: float) -> tuple[dict, int]:
    """Delete an agent, its aliases, its KB profile and its claims (with their receipts); return the
    receipt and its pk. A claim of another agent that linked to one of them loses the link, and that
    is a change of its declared fields: a new version, so a stale write to it is still a conflict.
    The replies it owes go with it (the debts' foreign key); the replies owed to it are released: an
    answer would reach no one, yet the debt escalated on and kept a driven or hooked seat at it.

    Its key and seat files are the caller's to remove once this is committed.
    """
    with write(db):
        row, redirect = resolve(db, agent_id)
        claims_sql.version_links_to_owner(db, row["pk"], now)
        released = debts_sql.release_asker(db, row["pk"], now)
        messages_sql.delete_deliveries(db, row["pk"])  # no foreign key cascades there (0009_delivery_log.sql)
        sql.delete(db, row["pk"])
        kb_sql.delete(db, PROFILE_PREFIX + row["id"])
    return {"removed": row["id"], "redirected": redirect, "released": released}, row["pk"]


def sweep(db: apsw.Connection, now: float, ttl: float) -> dict:
    """Write the transitions the state rules imply at `now`; return how many of each."""
    with write(db):
        return {"dormant": sql.mark_dormant(db, now), "expired": sql.mark_expired(db, now, ttl)}


def _meta_text(meta) -> str:
    if not isinstance(meta, dict):
        raise InvalidParams("meta must be a JSON object", field="meta")
    try:
        text = json.dumps(meta, separators=(",", ":"), allow_nan=False)
        if "\\ud" in text:  # a surrogate, escaped: a lone one (from a \\ud800 escape) does not encode
            json.dumps(meta, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        raise InvalidParams("meta must be plain JSON (no NaN or Infinity, valid Unicode)", field="meta") from None
    if len(text) > MAX_META:
        raise TooLarge(f"meta is {len(text)} bytes as JSON; the limit is {MAX_META}", field="meta", limit=MAX_META)
    return text

