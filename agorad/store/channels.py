"""SQL for channels, membership and the per-agent ack cursors."""

from __future__ import annotations

import apsw

from agorad.store import messages as messages_sql
from agorad.store.connection import Database, one, rows

COMMONS = "commons"
_CHANNEL = "pk, name, kind, dm_low, dm_high, head, created_at, created_by"
_CHANNEL_FIELDS = tuple(_CHANNEL.split(", "))
_DM_CHANNEL = ", ".join(f"c.{name}" for name in _CHANNEL_FIELDS)
_SENT_FIELDS = ("pk", "name", "kind", "head")  # what a send reads of its channel
_DM_SENT = ", ".join(f"c.{name}" for name in _SENT_FIELDS)


def by_name(db: apsw.Connection, name: str) -> dict | None:
    return one(db.execute(f"SELECT {_CHANNEL} FROM channels WHERE name = ?", (name,)))


def by_pk(db: apsw.Connection, pk: int) -> dict | None:
    return one(db.execute(f"SELECT {_CHANNEL} FROM channels WHERE pk = ?", (pk,)))


def by_old_name(db: apsw.Connection, name: str) -> dict | None:
    """The channel that was called `name` before a rename (only DMs are ever renamed)."""
    return one(db.execute(f"SELECT {_DM_CHANNEL} FROM channel_aliases x JOIN channels c ON c.pk = x.channel_pk "
                          "WHERE x.old_name = ?", (name,)))


def holder_of(db: apsw.Connection, name: str) -> int | None:
    """The pk of the channel that is, or was, called `name`; None if the name never served."""
    found = db.execute("SELECT pk FROM channels WHERE name = ?1 UNION ALL "
                       "SELECT channel_pk FROM channel_aliases WHERE old_name = ?1", (name,)).fetchone()
    return found[0] if found else None


def dms_of(db: apsw.Connection, agent_pk: int) -> list[dict]:
    return rows(db.execute(f"SELECT {_CHANNEL} FROM channels WHERE kind = 'dm' AND ?1 IN (dm_low, dm_high)",
                           (agent_pk,)))


def rename(db: apsw.Connection, pk: int, old_name: str, new_name: str, now: float) -> None:
    """Rename a channel, keeping `old_name` as an alias (a rename back drops the alias it returns to)."""
    db.execute("DELETE FROM channel_aliases WHERE old_name = ? AND channel_pk = ?", (new_name, pk))
    db.execute("UPDATE channels SET name = ? WHERE pk = ?", (new_name, pk))
    db.execute("INSERT INTO channel_aliases (old_name, channel_pk, renamed_at) VALUES (?, ?, ?)", (old_name, pk, now))


def dm_between(db: apsw.Connection, a_pk: int, b_pk: int) -> dict | None:
    low, high = sorted((a_pk, b_pk))
    return one(db.execute(f"SELECT {_CHANNEL} FROM channels WHERE kind = 'dm' AND dm_low = ? AND dm_high = ?", (low, high)))


def dm_with(db: Database, agent_pk: int, peer_id: str) -> tuple[int, dict | None, tuple[int, int | None, int]] | None:
    """(peer pk, the DM channel between the two or None, the peer's marks) for a registered `peer_id`;
    None if no agent has that id.

    The send path's one statement for `@id`: the peer, the channel and the peer's marks
    (`messages.MARKS`: newest delivery id, its seq, open debts) together. The channel carries only what a
    send reads of it (`_SENT_FIELDS`): 4k instructions a send less than every column.
    """
    found = db.step(
        f"SELECT a.pk, {messages_sql.MARKS}, {_DM_SENT} FROM agents a {messages_sql.HEADS} LEFT JOIN channels c "
        "ON c.kind = 'dm' AND c.dm_low = MIN(a.pk, ?1) AND c.dm_high = MAX(a.pk, ?1) "
        "WHERE a.id = ?2", (agent_pk, peer_id)).fetchone()
    if found is None:
        return None
    peer_pk, newest, last, owed, *channel = found
    return peer_pk, (dict(zip(_SENT_FIELDS, channel)) if channel[0] is not None else None), (newest, last, owed)


def create(db: apsw.Connection, name: str, kind: str, now: float, created_by: str,
           dm_pair: tuple[int, int] | None = None) -> int:
    low, high = sorted(dm_pair) if dm_pair else (None, None)
    db.execute(
        "INSERT INTO channels (name, kind, dm_low, dm_high, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?)",
        (name, kind, low, high, now, created_by),
    )
    return db.last_insert_rowid()


def join(db: apsw.Connection, agent_pk: int, channel_pk: int, now: float) -> bool:
    """Add a member whose cursor starts at the channel head: a newcomer owes no history."""
    db.execute(
        "INSERT OR IGNORE INTO members (agent_pk, channel_pk, acked, joined_at) "
        "SELECT ?, pk, head, ? FROM channels WHERE pk = ?",
        (agent_pk, now, channel_pk),
    )
    return db.changes() > 0


def join_commons(db: apsw.Connection, agent_pk: int, now: float) -> None:
    join(db, agent_pk, by_name(db, COMMONS)["pk"], now)


def leave(db: apsw.Connection, agent_pk: int, channel_pk: int) -> bool:
    db.execute("DELETE FROM members WHERE agent_pk = ? AND channel_pk = ?", (agent_pk, channel_pk))
    left = db.changes() > 0
    db.execute("DELETE FROM acks_above WHERE agent_pk = ? AND channel_pk = ?", (agent_pk, channel_pk))
    return left


def membership(db: apsw.Connection, agent_pk: int, channel_pk: int) -> dict | None:
    return one(db.execute("SELECT acked, joined_at FROM members WHERE agent_pk = ? AND channel_pk = ?", (agent_pk, channel_pk)))


def members(db: apsw.Connection, channel_pk: int) -> dict[int, str]:
    """pk -> id of every member."""
    return dict(db.execute("SELECT m.agent_pk, a.id FROM members m JOIN agents a ON a.pk = m.agent_pk "
                           "WHERE m.channel_pk = ?", (channel_pk,)))


def take_seq(db: Database, channel: dict) -> int:
    """The channel's next seq, taken. `channel` was read in this transaction by the only
    writer, so its head is current (the guard checks); no RETURNING, whose rows SQLite
    buffers in a temporary table."""
    seq = channel["head"] + 1
    db.step("UPDATE channels SET head = ? WHERE pk = ? AND head = ?", (seq, channel["pk"], seq - 1))
    if db.changes() != 1:
        raise RuntimeError(f"channel {channel['name']} moved past head {seq - 1} within its own transaction")
    return seq


def listing(db: apsw.Connection, agent_pk: int | None) -> list[dict]:
    """Every non-DM channel with its member count, and (for an agent) whether it is a member."""
    return rows(db.execute(
        "SELECT c.name, c.kind, c.head, c.created_at, c.created_by, "
        "(SELECT COUNT(*) FROM members m WHERE m.channel_pk = c.pk) AS members, "
        "EXISTS (SELECT 1 FROM members m WHERE m.channel_pk = c.pk AND m.agent_pk = ?) AS member "
        "FROM channels c WHERE c.kind != 'dm' OR EXISTS "
        "(SELECT 1 FROM members m WHERE m.channel_pk = c.pk AND m.agent_pk = ?) ORDER BY c.name",
        (agent_pk, agent_pk),
    ))


# --- cursors ---------------------------------------------------------------

def ack_own(db: Database, agent_pk: int, channel_pk: int, seq: int) -> None:
    """An agent's own message is never unread: move its cursor onto `seq` when that is the
    next one (the usual case, one statement), else ack `seq` singly."""
    db.step("UPDATE members SET acked = ? WHERE agent_pk = ? AND channel_pk = ? AND acked = ?",
            (seq, agent_pk, channel_pk, seq - 1))
    if not db.changes():
        db.execute("INSERT OR IGNORE INTO acks_above (agent_pk, channel_pk, seq) "
                   "SELECT agent_pk, channel_pk, ? FROM members WHERE agent_pk = ? AND channel_pk = ? AND acked < ?",
                   (seq, agent_pk, channel_pk, seq))


def ack_one(db: apsw.Connection, agent_pk: int, channel_pk: int, seq: int) -> None:
    db.execute("INSERT OR IGNORE INTO acks_above (agent_pk, channel_pk, seq) "
               "SELECT ?, ?, ? FROM members WHERE agent_pk = ? AND channel_pk = ? AND acked < ?",
               (agent_pk, channel_pk, seq, agent_pk, channel_pk, seq))
    _compact(db, agent_pk, channel_pk)


def ack_upto(db: apsw.Connection, agent_pk: int, channel_pk: int, seq: int) -> None:
    db.execute("UPDATE members SET acked = MAX(acked, ?) WHERE agent_pk = ? AND channel_pk = ?", (seq, agent_pk, channel_pk))
    _compact(db, agent_pk, channel_pk)


def ack_all(db: apsw.Connection, agent_pk: int) -> int:
    db.execute("UPDATE members SET acked = (SELECT head FROM channels WHERE pk = members.channel_pk) "
               "WHERE agent_pk = ? AND acked < (SELECT head FROM channels WHERE pk = members.channel_pk)", (agent_pk,))
    moved = db.changes()
    db.execute("DELETE FROM acks_above WHERE agent_pk = ?", (agent_pk,))
    return moved


def _compact(db: apsw.Connection, agent_pk: int, channel_pk: int) -> None:
    """Let the cursor swallow single acks that have become contiguous with it."""
    acked = db.execute("SELECT acked FROM members WHERE agent_pk = ? AND channel_pk = ?", (agent_pk, channel_pk)).fetchone()[0]
    above = [r[0] for r in db.execute(
        "SELECT seq FROM acks_above WHERE agent_pk = ? AND channel_pk = ? ORDER BY seq", (agent_pk, channel_pk))]
    for seq in above:
        if seq > acked + 1:
            break
        acked = max(acked, seq)
    db.execute("UPDATE members SET acked = ? WHERE agent_pk = ? AND channel_pk = ?", (acked, agent_pk, channel_pk))
    db.execute("DELETE FROM acks_above WHERE agent_pk = ? AND channel_pk = ? AND seq <= ?", (agent_pk, channel_pk, acked))
