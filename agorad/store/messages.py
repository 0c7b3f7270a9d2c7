"""SQL for messages, their addressees, per-agent deliveries and unread queries.

The per-turn queries (unread, counts) walk the (channel_pk, seq) index from an
agent's cursor, so their cost follows what is unread, not the channel's size.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from operator import itemgetter

import apsw

from agorad.store.connection import Database, one, rows

_MESSAGE = ("m.pk, c.name AS channel, c.kind AS channel_kind, m.channel_pk, m.seq, m.sender_pk, m.sender, "
            "m.title, m.body, m.ask, m.reply_to, m.urgency, m.created_at")


_INSERTED = ("channel_pk", "seq", "sender_pk", "sender", "title", "body", "ask", "reply_to", "urgency", "created_at")
_INSERT = f"INSERT INTO messages ({', '.join(_INSERTED)}) VALUES ({', '.join('?' * len(_INSERTED))})"
_INSERTED_VALUES = itemgetter(*_INSERTED)  # positional: named binding looks each name up


def insert(db: Database, message: dict) -> int:
    db.step(_INSERT, _INSERTED_VALUES(message))
    return db.last_insert_rowid()


def add_addressees(db: apsw.Connection, message_pk: int, agent_pks) -> None:
    db.executemany("INSERT OR IGNORE INTO addressees (message_pk, agent_pk) VALUES (?, ?)",
                   [(message_pk, pk) for pk in agent_pks])


def addressee_pks(db: apsw.Connection, message_pk: int) -> set[int]:
    """Who a message is for: its stored addressees, or in a DM the other party (implied, not stored)."""
    return {r[0] for r in db.execute(
        "SELECT agent_pk FROM addressees WHERE message_pk = ?1 UNION "
        "SELECT CASE WHEN m.sender_pk = c.dm_low THEN c.dm_high ELSE c.dm_low END "
        "FROM messages m JOIN channels c ON c.pk = m.channel_pk WHERE m.pk = ?1 AND c.kind = 'dm'",
        (message_pk,))}


def by_ref(db: apsw.Connection, channel_pk: int, seq: int) -> dict | None:
    return one(db.execute(f"SELECT {_MESSAGE} FROM messages m JOIN channels c ON c.pk = m.channel_pk "
                          "WHERE m.channel_pk = ? AND m.seq = ?", (channel_pk, seq)))


def by_pk(db: apsw.Connection, pk: int) -> dict | None:
    return one(db.execute(f"SELECT {_MESSAGE} FROM messages m JOIN channels c ON c.pk = m.channel_pk WHERE m.pk = ?", (pk,)))


# --- deliveries --------------------------------------------------------------
#
# One append-only log (`deliveries`, keyed by `seq`), each agent's rows threaded newest-first by
# `prev` from its head (`delivery_heads`): a post to many members writes a few pages, not one per
# member (migration 0009_delivery_log.sql).

# An agent `a`'s marks, with `HEADS` joined: the id its next delivery follows, where its newest is in
# the log (the next one's `prev`), and its open debts. That id is its newest delivery's, or the floor
# raised at start-up above ids a notify file showed for deliveries the database lost in a power cut
# (runtime/notify_reconcile.py), whichever is higher.
HEADS = "LEFT JOIN delivery_heads h ON h.agent_pk = a.pk"
NEWEST = "MAX(COALESCE(h.last_id, 0), a.notified_upto)"
OWED = "(SELECT COUNT(*) FROM debts x WHERE x.debtor_pk = a.pk AND x.discharged_at IS NULL)"
MARKS = f"{NEWEST}, h.last_seq, {OWED}"


def newest_id(db: apsw.Connection, agent_pk: int) -> int:
    """The id the agent's next delivery will follow: its newest, or its floor after a power cut lost some."""
    return db.execute(f"SELECT {NEWEST} FROM agents a {HEADS} WHERE a.pk = ?", (agent_pk,)).fetchone()[0]


def recipient_marks(db: Database, agent_pks: list[int]) -> dict[int, tuple[int, int | None, int]]:
    """{pk: (newest delivery id, its seq, open debts)} of each agent, in one statement."""
    if len(agent_pks) == 1:
        where, args = "a.pk = ?", agent_pks
    else:
        where, args = "a.pk IN (SELECT value FROM json_each(?))", (json.dumps(agent_pks),)
    return {pk: (newest, last, owed)
            for pk, newest, last, owed in db.step(f"SELECT a.pk, {MARKS} FROM agents a {HEADS} WHERE {where}", args)}


_INSERT_DELIVERY = ("INSERT INTO deliveries (agent_pk, id, prev, message_pk, flags, owed, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)")
# Every agent has a head (0010_every_agent_has_a_head.sql): one row's move is an UPDATE.
_MOVE_HEAD = "UPDATE delivery_heads SET last_id = ?, last_seq = ? WHERE agent_pk = ?"
# The heads of a run of rows just appended, set-based in SQLite (a trigger a row cost a 1,000-member post
# 0.3 ms more). Every agent has a head, so only the DO UPDATE branch runs; the plainer
# `UPDATE delivery_heads ... FROM deliveries` was slower (0.41 against 0.28 ms at 1,000 rows, the same
# plan: the log's seq range, then each head by its key). The WHERE is what SQLite's grammar asks of an
# upsert fed by a SELECT.
_MOVE_HEADS = ("INSERT INTO delivery_heads (agent_pk, last_id, last_seq) SELECT agent_pk, id, seq FROM deliveries "
               "WHERE seq >= ? ORDER BY seq "
               "ON CONFLICT (agent_pk) DO UPDATE SET last_id = excluded.last_id, last_seq = excluded.last_seq")


def insert_deliveries(db: Database, deliveries: list[tuple]) -> None:
    """Append rows of (agent_pk, id, prev, message_pk, flags, owed, created_at), each agent's `prev`
    its head's seq, and move each agent's head to its row. The rows take consecutive seqs: a rowid
    is the table's largest + 1, and nothing else writes in between."""
    if len(deliveries) == 1:  # a DM's one delivery: executemany's iteration costs ~1k instructions more
        db.step(_INSERT_DELIVERY, deliveries[0])
        agent_pk, delivery_id = deliveries[0][:2]
        db.step(_MOVE_HEAD, (delivery_id, db.last_insert_rowid(), agent_pk))
    else:
        db.step_many(_INSERT_DELIVERY, deliveries)
        db.step(_MOVE_HEADS, (db.last_insert_rowid() - len(deliveries) + 1,))


# A channel's deliveries in one statement: every member but the sender (?3), its marks read and its row
# written in SQLite. Flags: ?5 for the addressees (a JSON list of pks, ?4), ?6 for everyone else.
_INSERT_MEMBER_DELIVERIES = (
    "INSERT INTO deliveries (agent_pk, id, prev, message_pk, flags, owed, created_at) "
    f"SELECT a.pk, {NEWEST} + 1, h.last_seq, ?1, CASE WHEN a.pk IN (SELECT value FROM json_each(?4)) THEN ?5 ELSE ?6 END, "
    f"{OWED}, ?7 "
    f"FROM members m JOIN agents a ON a.pk = m.agent_pk {HEADS} WHERE m.channel_pk = ?2 AND m.agent_pk != ?3")
_INSERT_MEMBER_DELIVERIES_PLAIN = _INSERT_MEMBER_DELIVERIES.replace(
    "CASE WHEN a.pk IN (SELECT value FROM json_each(?4)) THEN ?5 ELSE ?6 END", "?6")
_WRITTEN = "SELECT d.agent_pk, a.id, d.id, d.flags, d.owed FROM deliveries d JOIN agents a ON a.pk = d.agent_pk WHERE d.seq >= ?"


def insert_member_deliveries(db: Database, message_pk: int, channel_pk: int, sender_pk: int, addressees: set[int],
                             addressed_flags: str, bystander_flags: str, now: float) -> list[tuple[int, str, int, str, int]]:
    """A delivery for every member of the channel but the sender, each with its agent's newest id + 1
    and its open debts; move their heads. Returns (agent pk, agent id, id, flags, owed) of each row:
    at 1,000 members, reading the marks into Python and writing the rows back cost 1 ms more."""
    statement = _INSERT_MEMBER_DELIVERIES if addressees else _INSERT_MEMBER_DELIVERIES_PLAIN
    db.step(statement, (message_pk, channel_pk, sender_pk, json.dumps(sorted(addressees)) if addressees else None,
                        addressed_flags, bystander_flags, now))
    count = db.changes()
    if not count:
        return []
    first = db.last_insert_rowid() - count + 1
    db.step(_MOVE_HEADS, (first,))
    return db.step(_WRITTEN, (first,)).fetchall()


# The seqs of an agent's deliveries with id > ?2, walked back from its head (a row's `prev` is
# followed while the row is above ?2, so the walk stops one row past the last wanted).
_CHAIN = ("WITH RECURSIVE chain(seq) AS ("
          "SELECT last_seq FROM delivery_heads WHERE agent_pk = ?1 AND last_id > ?2 "
          "UNION ALL SELECT d.prev FROM chain JOIN deliveries d ON d.seq = chain.seq "
          "WHERE d.id > ?2 AND d.prev IS NOT NULL) ")
_LINE_FIELDS = ("d.id, d.created_at AS ts, a.id AS agent, c.name AS channel, m.seq, m.sender, m.title, m.body, "
                "d.flags, d.owed FROM deliveries d JOIN agents a ON a.pk = d.agent_pk "
                "JOIN messages m ON m.pk = d.message_pk JOIN channels c ON c.pk = m.channel_pk")


def deliveries_after(db: apsw.Connection, agent_pk: int, after_id: int, chunk: int = 1000) -> Iterator[list[dict]]:
    """An agent's deliveries with id > after_id, oldest first, with what a notify line needs: `chunk`
    rows at a time. The walk back from the head reads only seqs, once; each chunk reads its rows by seq."""
    seqs = delivery_seqs_after(db, agent_pk, after_id)
    for start in range(0, len(seqs), chunk):
        yield deliveries_by_seqs(db, seqs[start:start + chunk])


def delivery_seqs_after(db: apsw.Connection, agent_pk: int, after_id: int) -> list[int]:
    """The seqs of an agent's deliveries with id > after_id, oldest first: the walk back from its head,
    which reads only those."""
    return [seq for (seq,) in db.execute(
        f"{_CHAIN}SELECT chain.seq FROM chain JOIN deliveries d ON d.seq = chain.seq WHERE d.id > ?2 ORDER BY d.id",
        (agent_pk, after_id))]


def deliveries_by_seqs(db: apsw.Connection, seqs: list[int]) -> list[dict]:
    """The deliveries `seqs` names (delivery_seqs_after), oldest first, with what a notify line needs."""
    return rows(db.execute(f"SELECT {_LINE_FIELDS} WHERE d.seq IN (SELECT value FROM json_each(?)) ORDER BY d.id",
                           (json.dumps(seqs),)))


def last_before(db: apsw.Connection, agent_pk: int, since: float) -> int:
    """The id of the agent's newest delivery stored before `since` (the hub's clock), 0 if none: the walk
    back from its head reads only the deliveries since then, and the one it stops at."""
    found = db.execute(
        "WITH RECURSIVE chain(seq) AS ("
        "SELECT last_seq FROM delivery_heads WHERE agent_pk = ?1 "
        "UNION ALL SELECT d.prev FROM chain JOIN deliveries d ON d.seq = chain.seq "
        "WHERE d.created_at >= ?2 AND d.prev IS NOT NULL) "
        "SELECT d.id FROM chain JOIN deliveries d ON d.seq = chain.seq WHERE d.created_at < ?2",
        (agent_pk, since)).fetchone()
    return found[0] if found else 0


def delete_deliveries(db: apsw.Connection, agent_pk: int) -> None:
    """Remove every delivery of an agent (before the agent row goes, and its head with it)."""
    db.execute(f"DELETE FROM deliveries WHERE seq IN ({_CHAIN}SELECT seq FROM chain)", (agent_pk, 0))


def newest_delivery(db: apsw.Connection, agent_pk: int) -> int:
    """The id of the agent's newest delivery, 0 if it has none."""
    found = db.execute("SELECT last_id FROM delivery_heads WHERE agent_pk = ?", (agent_pk,)).fetchone()
    return found[0] if found else 0


def delivery_marks(db: apsw.Connection) -> list[tuple[int, str, int, int]]:
    """(pk, id, newest delivery id, notified_upto) of every agent that has had a delivery."""
    return list(db.execute(
        "SELECT a.pk, a.id, h.last_id, a.notified_upto FROM agents a JOIN delivery_heads h ON h.agent_pk = a.pk "
        "WHERE h.last_id > 0"))


def seat_marks(db: apsw.Connection) -> list[tuple[int, str, int, int]]:
    """(pk, id, newest delivery id or 0, notified_upto) of every agent: start-up's reconciliation
    must also see a seat whose every delivery the database lost."""
    return list(db.execute(f"SELECT a.pk, a.id, COALESCE(h.last_id, 0), a.notified_upto FROM agents a {HEADS}"))


def set_notified_upto(db: apsw.Connection, marks: dict[int, int]) -> None:
    db.executemany("UPDATE agents SET notified_upto = MAX(notified_upto, ?) WHERE pk = ?",
                   [(upto, pk) for pk, upto in marks.items()])


# --- unread -------------------------------------------------------------------

# A headline's columns; `from_hub`: the hub posted it (no sender agent), whatever the sender name says (an
# agent registered as `agora-hub` before the hub reserved that id is still an agent).
_HEADLINE = ("m.pk, m.seq, m.sender, m.sender_pk IS NULL AS from_hub, m.title, m.ask, m.urgency, m.created_at, "
             "m.reply_to")

def unread_channels(db: apsw.Connection, agent_pk: int) -> list[dict]:
    """Channels where the agent's cursor is behind the head, with the exact unread count.

    unread = (head - acked) - single acks above the cursor. The agent's own messages are
    never unread: a send moves its sender's cursor or acks the message singly.
    """
    return rows(db.execute(
        "SELECT c.pk AS channel_pk, c.name AS channel, c.kind, mb.acked, c.head, "
        "c.head - mb.acked "
        "- (SELECT COUNT(*) FROM acks_above x WHERE x.agent_pk = mb.agent_pk AND x.channel_pk = c.pk) AS unread "
        "FROM members mb JOIN channels c ON c.pk = mb.channel_pk "
        "WHERE mb.agent_pk = ? AND c.head > mb.acked ORDER BY c.name",
        (agent_pk,),
    ))


def unread_totals(db: apsw.Connection, agent_pks: list[int]) -> dict[int, int]:
    """{agent pk: unread messages in all its channels} for each of `agent_pks` with any: unread_channels'
    count (a channel's negative count as 0) summed, in one statement. The pks go in as one JSON array
    (json_each), not an IN list of parameters, which SQLite caps at 32,766."""
    return dict(db.execute(
        "SELECT mb.agent_pk, SUM(MAX(c.head - mb.acked "
        "- (SELECT COUNT(*) FROM acks_above x WHERE x.agent_pk = mb.agent_pk AND x.channel_pk = c.pk), 0)) "
        "FROM members mb JOIN channels c ON c.pk = mb.channel_pk "
        "WHERE mb.agent_pk IN (SELECT value FROM json_each(?)) AND c.head > mb.acked GROUP BY mb.agent_pk",
        (json.dumps(agent_pks),)))


def unread_in(db: apsw.Connection, agent_pk: int, channel_pk: int, acked: int, limit: int, newest_first: bool = False) -> list[dict]:
    """Unread headlines of one channel: above the cursor and not acked singly (own messages are acked when sent)."""
    order = "DESC" if newest_first else "ASC"
    return rows(db.execute(
        f"SELECT {_HEADLINE} FROM messages m "
        "WHERE m.channel_pk = ? AND m.seq > ? "
        "AND NOT EXISTS (SELECT 1 FROM acks_above x WHERE x.agent_pk = ? AND x.channel_pk = m.channel_pk AND x.seq = m.seq) "
        f"ORDER BY m.seq {order} LIMIT ?",
        (channel_pk, acked, agent_pk, limit),
    ))


def unread_important_in(db: apsw.Connection, agent_pk: int, channel_pk: int, acked: int, limit: int) -> list[dict]:
    """Unread headlines of one channel addressed to the agent or asking it for a reply it still owes.

    Both lookups are primary-key probes (addressees and debts are keyed by message first).
    """
    return rows(db.execute(
        f"SELECT {_HEADLINE} FROM messages m "
        "WHERE m.channel_pk = ? AND m.seq > ? "
        "AND NOT EXISTS (SELECT 1 FROM acks_above x WHERE x.agent_pk = ? AND x.channel_pk = m.channel_pk AND x.seq = m.seq) "
        "AND (EXISTS (SELECT 1 FROM addressees a WHERE a.message_pk = m.pk AND a.agent_pk = ?) "
        "OR EXISTS (SELECT 1 FROM debts d WHERE d.message_pk = m.pk AND d.debtor_pk = ? AND d.discharged_at IS NULL)) "
        "ORDER BY m.seq ASC LIMIT ?",
        (channel_pk, acked, agent_pk, agent_pk, agent_pk, limit),
    ))


def counts(db: apsw.Connection) -> dict:
    """Totals for `hub.status`, cheap at any size: seqs are gapless, so the heads sum to the messages."""
    channels, messages = db.execute("SELECT COUNT(*), COALESCE(SUM(head), 0) FROM channels").fetchone()
    debts = db.execute("SELECT COUNT(*) FROM debts WHERE discharged_at IS NULL").fetchone()[0]
    return {"channels": channels, "messages": messages, "open_debts": debts}
