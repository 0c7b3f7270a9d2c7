"""Messaging figures (goals in bench/README.md): DM sends beside the bare combined loop, and inbox cost at scale.

Sends: N client processes (bench/load.py), each a seat sending DMs to one
fixed peer (`sink`), so every send stores one message and writes one notify
line. The identical frame goes to the bare combined server (bench/bare.py),
to the echo server (the socket alone), and its params to an in-process apsw
insert loop (the database alone), alternating round by round.

Inbox: one seat with five unread messages and one open ask, on an empty hub
and on a hub holding `messages` messages across `agents` agents. The big hub
is filled with apsw straight into the real schema (the wire would take far too
long), then every seat's cursor is put at its channel heads and the five
unread messages and the ask are sent through the wire on both hubs alike, so
the two seats differ only in the history around them.
"""

from __future__ import annotations

import contextlib
import json
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from bench import bare, load
from bench.figures import Figure, alternate, medians, progress, with_cpu
from bench.servers import Bare, BenchError, Echo, Hub

SEND_GOAL = 0.50        # hub sends/s at least this share of the bare combined loop's
INBOX_GOAL_RATIO = 2.0  # inbox at scale within this factor of the empty hub
INBOX_GOAL_P99_MS = 5.0

SINK = "sink"
SEND_BODY = ("Build 4812 is green on main; the flaky socket test passed 50 times in a row. "
             "Next: review the notify rotation patch.")
SEND_PARAMS = {"target": "@" + SINK, "title": "status", "body": SEND_BODY}
SEND_FRAME = (b'{"jsonrpc":"2.0","id":%d,"method":"messages.send","params":'
              + json.dumps(SEND_PARAMS, separators=(",", ":")).replace("%", "%%").encode() + b"}\n")
CHECK_FRAME = b'{"jsonrpc":"2.0","id":%d,"method":"inbox.check","params":{}}\n'
DIGEST_FRAME = b'{"jsonrpc":"2.0","id":%d,"method":"inbox.digest","params":{}}\n'

# The measured seat and the three peers that give it its unread messages; registered through the wire.
SEAT, DM_PEER, COMMONS_PEER, ROOM_PEER = "agent-0000", "agent-0001", "agent-0002", "agent-0003"
WIRE_AGENTS = [SEAT, DM_PEER, COMMONS_PEER, ROOM_PEER]
ROOM = "room-00"
UNREAD, OPEN_ASKS = 5, 1  # what seed() leaves the seat


def hello_frame(agent: str, key: str) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hub.hello", "params": {"agent": agent, "key": key}}) + "\n").encode()


def _plural(n: int) -> str:
    return f"{n} client" + "s" * (n > 1)


# --- sends --------------------------------------------------------------------

def sends(work: Path, s) -> list[Figure]:
    """Each synchronous level in turn: the hub at that level beside the bare loop at the same level.
    FULL first, the default (agora-up(1) --synchronous); its 8-client row is the durability goal."""
    figures = []
    with contextlib.ExitStack() as stack:
        echo = stack.enter_context(Echo(work / "secho.sock", work / "secho.log")).start()
        for level in bare.LEVELS:
            figures += _sends_at(work, s, level, echo)
    return figures


def _sends_at(work: Path, s, level: str, echo: Echo) -> list[Figure]:
    most = max(s.clients)
    tag = level.lower()
    with contextlib.ExitStack() as stack:
        hub = stack.enter_context(Hub(work / f"send-{tag}", work / f"send-{tag}.log", "--synchronous", tag)).start()
        combined = stack.enter_context(Bare(work / f"bare-{tag}.sock", work / f"bare-{tag}.log", work / f"bare-{tag}.db",
                                            work / f"bare-{tag}-inbox.log", level)).start()
        seats = hub.add_agents([SINK] + [f"sender-{i}" for i in range(most)], "always-on")
        hellos = [hello_frame(a, k) for a, k in seats[1:]]
        insert_db = str(work / f"insert-{tag}.db")

        def on(server, hellos_=None):
            return lambda n: with_cpu(server, lambda: load.run(str(server.socket_path), n, s.warmup, s.duration, hellos_, SEND_FRAME))

        figures = []
        for n in s.clients:
            runs = [lambda: on(echo)(n), lambda: on(combined)(n), lambda: on(hub, hellos[:n])(n)]
            if n == 1:
                runs.append(lambda: bare.insert_rate(insert_db, SEND_PARAMS, s.warmup, s.duration, level))
            progress(f"DM sends at {level}, {_plural(n)}: {s.rounds} rounds of {s.duration:g} s; echo, bare combined "
                     "loop, hub" + (" and the in-process apsw insert loop" if n == 1 else "") + " alternating")
            results = alternate(s.rounds, *runs)
            e_rate, _, _, _ = medians(results[0])
            b_rate, b_p50, b_p99, b_cpu = medians(results[1])
            h_rate, h_p50, h_p99, h_cpu = medians(results[2])
            bare_is = f"bare combined loop, {level}"
            figures += [
                Figure(f"DM sends/s at {level}, {_plural(n)}", "calls/s", h_rate, b_rate, bare_is,
                       f">= {SEND_GOAL:.2f}x", h_rate >= SEND_GOAL * b_rate),
                Figure(f"p50 latency at {level}, {_plural(n)}", "ms", h_p50, b_p50, bare_is),
                Figure(f"p99 latency at {level}, {_plural(n)}", "ms", h_p99, b_p99, bare_is),
                Figure(f"server CPU per send at {level}, {_plural(n)}", "us", h_cpu, b_cpu, bare_is),
                Figure(f"DM sends/s at {level}, {_plural(n)}, vs socket alone", "calls/s", h_rate, e_rate, "echo (same frame)"),
            ]
            if n == 1:
                i_rate = statistics.median(results[3])
                figures.append(Figure(f"DM sends/s at {level}, 1 client, vs database alone", "calls/s", h_rate, i_rate,
                                      f"apsw insert+commit loop at {level}, in-process"))
    return figures


# --- the populated hub ----------------------------------------------------------

@dataclass
class Population:
    agents: int = 1000
    messages: int = 1_000_000
    rooms: int = 20            # named channels; each agent is in 3
    dm_peers: int = 5          # agent i has DMs with i+1 .. i+dm_peers (mod agents): 2x that many DMs each
    commons_share: float = 0.2
    rooms_share: float = 0.3   # the rest go to DMs
    ask_share: float = 0.02    # of DM messages: asks, each a debt on the other agent
    open_share: float = 0.05   # of asks: never answered, still open (escalation schedule done)
    seed: int = 3
    modes: tuple = ("always-on",)  # the populated seats' liveness modes, in turn
    silence: float = 0.0       # each populated seat was last seen up to this many seconds ago (0: never seen)


@dataclass
class Populated:
    messages: int
    agents: int
    channels: int
    open_debts: int
    seconds: float
    db_mib: float


_TEXT = ("Agora keeps one SQLite file under the home and one Unix socket; every seat owes replies to asks, "
         "and acks move cursors. This line is filler for the benchmark population so that bodies vary in "
         "length the way real ones do, from a short status to a paragraph about a review. ") * 2


def populate(home: Path, pop: Population) -> Populated:
    """Fill the stopped hub's database at `home` in the real schema; the wire agents must already exist."""
    import apsw

    started = time.perf_counter()
    rng = random.Random(pop.seed)
    now = time.time()
    db = apsw.Connection(str(home / "agora.db"))
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")   # the bulk load only; the hub opens its own connection
        db.execute("PRAGMA cache_size=-262144")
        pks = dict((i, p) for p, i in db.execute("SELECT pk, id FROM agents"))
        missing = [a for a in WIRE_AGENTS if a not in pks]
        if missing:
            raise BenchError(f"populate: the wire agents {missing} are not in {home}")
        ids = [f"agent-{i:04d}" for i in range(pop.agents)]
        commons = db.execute("SELECT pk FROM channels WHERE name = 'commons'").fetchone()[0]

        db.execute("BEGIN")
        seats = [(a, pop.modes[i % len(pop.modes)], now - 40 * 86400 if pop.silence else now,
                  now - rng.random() * pop.silence if pop.silence else None) for i, a in enumerate(ids) if a not in pks]
        db.executemany(
            "INSERT INTO agents (id, key_hash, liveness_mode, interval_s, created_at, last_seen) "
            "VALUES (?, 'sha256:unusable', ?, 1800, ?, ?)", seats)
        pks = dict((i, p) for p, i in db.execute("SELECT pk, id FROM agents"))
        agent_pk = [pks[a] for a in ids]

        # channels: rooms, then DMs (i, i+k)
        db.executemany("INSERT INTO channels (name, kind, created_at, created_by) VALUES (?, 'named', ?, ?)",
                       [(f"room-{r:02d}", now, ids[r % pop.agents]) for r in range(pop.rooms)])
        room_pk = [db.execute("SELECT pk FROM channels WHERE name = ?", (f"room-{r:02d}",)).fetchone()[0] for r in range(pop.rooms)]
        pairs = sorted({tuple(sorted((i, (i + k) % pop.agents))) for i in range(pop.agents) for k in range(1, pop.dm_peers + 1)
                        if (i + k) % pop.agents != i})
        dm_rows = []
        for a, b in pairs:
            (low_id, high_id), (low_pk, high_pk) = sorted((ids[a], ids[b])), sorted((agent_pk[a], agent_pk[b]))
            dm_rows.append((f"dm:{low_id}--{high_id}", low_pk, high_pk, now, ids[a]))
        db.executemany("INSERT INTO channels (name, kind, dm_low, dm_high, created_at, created_by) VALUES (?, 'dm', ?, ?, ?, ?)", dm_rows)
        dm_pk = [pk for (pk,) in db.execute("SELECT pk FROM channels WHERE kind = 'dm' ORDER BY pk")]
        if len(dm_pk) != len(pairs):
            raise BenchError("populate: the hub already had DM channels; populate a fresh home")

        # members: commons (the wire agents joined it already), rooms, DMs
        room_members = [[] for _ in range(pop.rooms)]
        for i in range(pop.agents):
            rooms = {(i + j * 7) % pop.rooms for j in range(3)}
            if ids[i] == ROOM_PEER:
                rooms.add(0)  # shares room-00 with the seat
            for r in rooms:
                room_members[r].append(i)
        if 0 not in room_members[0]:
            raise BenchError("populate: the seat must be in room-00")
        members = [(p, commons) for a, p in zip(ids, agent_pk) if a not in WIRE_AGENTS]
        members += [(agent_pk[i], room_pk[r]) for r in range(pop.rooms) for i in room_members[r]]
        members += [(agent_pk[x], pk) for (a, b), pk in zip(pairs, dm_pk) for x in (a, b)]
        db.executemany("INSERT INTO members (agent_pk, channel_pk, acked, joined_at) VALUES (?, ?, 0, ?)",
                       [(a, c, now - 40 * 86400) for a, c in members])
        db.execute("COMMIT")

        # messages: channels interleaved in time, gapless seq per channel
        seat_pk = pks[SEAT]
        head: dict[int, int] = {}
        step = 30 * 86400 / max(1, pop.messages)
        t0 = now - 30 * 86400 - 60
        first_pk = (db.execute("SELECT COALESCE(MAX(pk), 0) FROM messages").fetchone()[0]) + 1
        batch, debts, open_debts = [], [], 0  # a DM's addressee is implied: no addressees rows
        rand, randrange, text_len = rng.random, rng.randrange, len(_TEXT) - 200
        c_share, r_share = pop.commons_share, pop.commons_share + pop.rooms_share
        n_rooms, n_dms = pop.rooms, len(pairs)

        def flush():
            db.execute("BEGIN")
            db.executemany("INSERT INTO messages (pk, channel_pk, seq, sender_pk, sender, title, body, ask, created_at) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
            db.executemany("INSERT INTO debts (message_pk, debtor_pk, asker_pk, created_at, level, due_at, discharged_at) "
                           "VALUES (?, ?, ?, ?, ?, NULL, ?)", debts)
            db.execute("COMMIT")
            batch.clear(), debts.clear()

        for n in range(pop.messages):
            pk = first_pk + n
            at = t0 + n * step
            r = rand()
            ask = 0
            if r < c_share:
                channel, sender = commons, randrange(pop.agents)
            elif r < r_share:
                room = randrange(n_rooms)
                channel = room_pk[room]
                sender = room_members[room][randrange(len(room_members[room]))]
            else:
                d = randrange(n_dms)
                channel = dm_pk[d]
                a, b = pairs[d]
                sender, other = (a, b) if rand() < 0.5 else (b, a)
                if rand() < pop.ask_share:
                    ask = 1
                    debtor = agent_pk[other]
                    still_open = rand() < pop.open_share and seat_pk not in (debtor, agent_pk[sender])
                    open_debts += still_open
                    debts.append((pk, debtor, agent_pk[sender], at, 3 if still_open else 0,
                                  None if still_open else at + 600))
            seq = head[channel] = head.get(channel, 0) + 1
            off = randrange(text_len)
            batch.append((pk, channel, seq, agent_pk[sender], ids[sender], f"update {seq}",
                          _TEXT[off:off + 40 + (n * 7919) % 160], ask, at))
            if len(batch) >= 100_000:
                flush()
        if batch:
            flush()

        # heads, and every cursor at its head: nothing unread anywhere before the seed
        db.execute("BEGIN")
        db.executemany("UPDATE channels SET head = ? WHERE pk = ?", [(h, c) for c, h in head.items()])
        db.execute("UPDATE members SET acked = (SELECT head FROM channels WHERE pk = members.channel_pk)")
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        wrong = db.execute(
            "SELECT COUNT(*) FROM channels c LEFT JOIN (SELECT channel_pk, COUNT(*) AS n, MAX(seq) AS top "
            "FROM messages GROUP BY channel_pk) m ON m.channel_pk = c.pk "
            "WHERE c.head != COALESCE(m.top, 0) OR COALESCE(m.n, 0) != COALESCE(m.top, 0)").fetchone()[0]
        if wrong:
            raise BenchError(f"populate: {wrong} channels have a head that is not their gapless newest seq")
        channels = db.execute("SELECT COUNT(*) FROM channels").fetchone()[0]
    finally:
        db.close()
    size = sum(p.stat().st_size for p in home.glob("agora.db*"))
    return Populated(pop.messages, pop.agents, channels, open_debts, time.perf_counter() - started, size / (1 << 20))


def seed(hub: Hub, keys: dict[str, str]) -> None:
    """Give the seat its unread messages (2 in commons, 1 in room-00, 2 in a DM) and one open ask."""
    from agorad.surface.client import Client

    def sender(agent):
        client = Client(hub.home, timeout=30)
        client.connect()
        client.hello(agent, keys[agent])
        return client

    with contextlib.closing(sender(COMMONS_PEER)) as peer:
        for i in range(2):
            peer.call("messages.send", target="commons", title=f"commons note {i}", body="for everyone")
    with contextlib.closing(sender(ROOM_PEER)) as peer:
        peer.call("messages.send", target=ROOM, title="room note", body="for the room")
    with contextlib.closing(sender(DM_PEER)) as peer:
        peer.call("messages.send", target="@" + SEAT, title="can you review #12?", body="the rotation patch", ask=True)
        peer.call("messages.send", target="@" + SEAT, title="context", body="it touches notify.py only")
    with contextlib.closing(sender(SEAT)) as seat:
        found = seat.call("inbox.check")
        if found["unread"] != UNREAD or len(found["owed"]) != OPEN_ASKS:
            raise BenchError(f"the seat on {hub.home} has {found['unread']} unread and {len(found['owed'])} open asks, "
                             f"not {UNREAD} and {OPEN_ASKS}")


def prepare_empty(hub: Hub) -> dict[str, str]:
    """Start `hub` on a fresh home, register the seats, create room-00, seed; return the keys."""
    from agorad.surface.client import Client

    hub.start()
    keys = dict(hub.add_agents(WIRE_AGENTS, "always-on"))
    with Client(hub.home, timeout=30) as peer:
        peer.hello(ROOM_PEER, keys[ROOM_PEER])
        peer.call("channels.create", channel=ROOM)
    with Client(hub.home, timeout=30) as seat:
        seat.hello(SEAT, keys[SEAT])
        seat.call("channels.join", channel=ROOM)
    seed(hub, keys)
    return keys


def prepare_full(hub: Hub, pop: Population) -> tuple[dict[str, str], Populated]:
    """Start `hub` once (migrations, wire seats), stop it, populate its database, start it again, seed."""
    with Hub(hub.home, hub.log_path) as first:
        first.start()
        keys = dict(first.add_agents(WIRE_AGENTS, "always-on"))
    filled = populate(hub.home, pop)
    hub.start()
    seed(hub, keys)
    return keys, filled


# --- inbox ----------------------------------------------------------------------

def inbox(work: Path, s, notes: list[str]) -> list[Figure]:
    pop: Population = s.population
    label = f"{pop.messages:,} msgs"
    progress(f"inbox: populating a hub with {pop.messages:,} messages across {pop.agents:,} agents")
    with contextlib.ExitStack() as stack:
        full = stack.enter_context(Hub(work / "if", work / "if.log"))
        full_keys, filled = prepare_full(full, pop)
        empty = stack.enter_context(Hub(work / "ie", work / "ie.log"))
        empty_keys = prepare_empty(empty)
        notes.append(f"inbox: the big hub holds {filled.messages:,} messages, {filled.agents:,} agents, "
                     f"{filled.channels:,} channels, {filled.open_debts:,} open debts ({filled.db_mib:,.0f} MiB), "
                     f"populated with apsw in {filled.seconds:.1f} s; the seat has {UNREAD} unread and {OPEN_ASKS} open ask on both hubs")
        progress(f"inbox.check and inbox.digest, 1 client: {s.rounds} rounds of {s.inbox_duration:g} s, empty and big hub alternating")

        def on(hub, keys, frame):
            hello = [hello_frame(SEAT, keys[SEAT])]
            return lambda: load.run(str(hub.socket_path), 1, s.warmup, s.inbox_duration, hello, frame)

        e_check, f_check, e_digest, f_digest = alternate(
            s.rounds, on(empty, empty_keys, CHECK_FRAME), on(full, full_keys, CHECK_FRAME),
            on(empty, empty_keys, DIGEST_FRAME), on(full, full_keys, DIGEST_FRAME))
    figures = []
    for method, empty_runs, full_runs in (("inbox.check", e_check, f_check), ("inbox.digest", e_digest, f_digest)):
        e50, e99 = statistics.median(r.p50_ms for r in empty_runs), statistics.median(r.p99_ms for r in empty_runs)
        f50, f99 = statistics.median(r.p50_ms for r in full_runs), statistics.median(r.p99_ms for r in full_runs)
        calls = statistics.median(r.calls for r in full_runs)
        figures += [
            Figure(f"{method} p50, {label}", "ms", f50, e50, "empty hub",
                   f"<= {INBOX_GOAL_RATIO:g}x", f50 <= INBOX_GOAL_RATIO * e50),
            Figure(f"{method} p99, {label}", "ms", f99, e99, "empty hub",
                   f"<= {INBOX_GOAL_RATIO:g}x, < {INBOX_GOAL_P99_MS:g} ms",
                   f99 <= INBOX_GOAL_RATIO * e99 and f99 < INBOX_GOAL_P99_MS),
        ]
        notes.append(f"{method}: median {calls:,.0f} calls per round on the big hub")
    return figures
