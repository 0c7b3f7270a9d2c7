"""The registry's state model, driven by the hub's controllable clock."""

from __future__ import annotations

import json

import pytest

from agorad.surface.errors import Conflict, Forbidden, InvalidParams, NotFound, TooLarge
from agorad.surface.protocol import MAX_REPLY, PAGE_BYTES, encode

MINUTE = 60


def agent(hub, agent_id: str, include_expired: bool = False) -> dict | None:
    listed = hub.call("agents.list", include_expired=include_expired)["agents"]
    return next((a for a in listed if a["id"] == agent_id), None)


def beat(hub, agent_id: str, **params) -> dict:
    with hub.client(agent_id) as seat:
        return seat.call("agents.heartbeat", **params)


def test_modes_and_legacy_permanent(hub):
    hub.add_agent("plain")
    hub.add_agent("legacy", permanent=True)
    hub.add_agent("sessions", liveness_mode="async")
    modes = {a["id"]: a["liveness_mode"] for a in hub.call("agents.list")["agents"]}
    assert modes == {"plain": "ephemeral", "legacy": "always-on", "sessions": "async"}


def test_heartbeat_writes_last_seen_status_and_task(hub):
    hub.add_agent("runtime", liveness_mode="async")
    now = hub.advance(0)
    result = beat(hub, "runtime", status="working", task="review #12")
    assert result["status"] == "working" and result["task"] == "review #12"
    shown = agent(hub, "runtime")
    assert shown["status"] == "working" and shown["task"] == "review #12"
    assert shown["last_seen"] == pytest.approx(now, abs=5)


def test_task_alone_means_working_and_a_bare_beat_keeps_it(hub):
    hub.add_agent("runtime")
    assert beat(hub, "runtime", task="index")["status"] == "working"
    assert beat(hub, "runtime")["task"] == "index"
    assert beat(hub, "runtime", status="idle")["task"] is None


def test_an_error_status_may_say_what_went_wrong_and_no_other_takes_a_task(hub):
    hub.add_agent("runtime")
    shown = beat(hub, "runtime", status="error", task="handler failed on commons#3: ValueError")
    assert (shown["status"], shown["task"]) == ("error", "handler failed on commons#3: ValueError")
    assert agent(hub, "runtime")["task"] == "handler failed on commons#3: ValueError"
    for status in ("idle", "busy"):
        with pytest.raises(InvalidParams, match="'working' or 'error'") as caught:
            beat(hub, "runtime", status=status, task="x")
        assert caught.value.data["field"] == "task"
    assert agent(hub, "runtime")["status"] == "error"  # the refused beats changed nothing


def test_heartbeats_that_keep_or_change_their_status(hub):
    hub.add_agent("runtime")
    assert beat(hub, "runtime", status="working", task="a")["task"] == "a"
    assert beat(hub, "runtime", status="working", task="b")["task"] == "b"  # same status: task still moves
    assert agent(hub, "runtime")["task"] == "b"
    changed = beat(hub, "runtime", status="busy")
    assert (changed["status"], changed["task"]) == ("busy", None)
    assert agent(hub, "runtime")["status"] == "busy"
    assert beat(hub, "runtime")["status"] == "busy"  # a bare beat keeps what it last said


@pytest.mark.parametrize("params, error", [
    ({"status": "dormant"}, InvalidParams),
    ({"status": "asleep"}, InvalidParams),
    ({"status": "idle", "task": "x"}, InvalidParams),
    ({"task": "line\nbreak"}, InvalidParams),
    ({"task": "\x1b[31mred"}, InvalidParams),
    ({"task": "x" * 201}, TooLarge),
])
def test_bad_heartbeats_change_nothing(hub, params, error):
    hub.add_agent("runtime")
    beat(hub, "runtime", status="busy")
    with pytest.raises(error):
        beat(hub, "runtime", **params)
    shown = agent(hub, "runtime")
    assert (shown["status"], shown["task"]) == ("busy", None)


def test_async_turns_dormant_after_twice_its_interval_then_idle_on_heartbeat(hub):
    hub.add_agent("analyst", liveness_mode="async", interval=30 * MINUTE)
    beat(hub, "analyst", status="working", task="triage")
    hub.advance(59 * MINUTE)
    assert agent(hub, "analyst")["status"] == "working"
    hub.advance(2 * MINUTE)
    shown = agent(hub, "analyst")
    # Read before any sweep ran: the read already applies the rule.
    assert (shown["status"], shown["task"]) == ("dormant", None)
    assert shown["last_seen"] is not None
    beat(hub, "analyst")
    assert agent(hub, "analyst")["status"] == "idle"


def test_sweep_writes_the_transitions_reads_already_showed(hub):
    hub.add_agent("analyst", liveness_mode="async", interval=10)
    hub.add_agent("scratch", liveness_mode="ephemeral")
    hub.add_agent("bunker", liveness_mode="always-on", interval=10)
    beat(hub, "bunker", status="busy")
    hub.advance(3700)
    before = {a["id"]: a["status"] for a in hub.call("agents.list")["agents"]}
    assert hub.call("hub.sweep") | {"at": 0} == {"at": 0, "dormant": 1, "expired": 1, "escalated": 0, "reminded": 0}
    after = {a["id"]: a["status"] for a in hub.call("agents.list")["agents"]}
    assert before == after == {"analyst": "dormant", "bunker": "busy"}
    assert hub.call("hub.sweep") | {"at": 0} == {"at": 0, "dormant": 0, "expired": 0, "escalated": 0, "reminded": 0}  # idempotent


def test_always_on_never_changes_by_itself(hub):
    hub.add_agent("bunker", liveness_mode="always-on", interval=1)
    beat(hub, "bunker", status="working", task="guard")
    hub.advance(10 * 86400)
    hub.call("hub.sweep")
    shown = agent(hub, "bunker")
    assert (shown["status"], shown["task"], shown["expired"]) == ("working", "guard", False)


def test_ephemeral_drops_out_after_ttl_and_returns_on_heartbeat(hub):
    hub.add_agent("scratch")
    beat(hub, "scratch")
    hub.advance(3599)
    assert agent(hub, "scratch") is not None
    hub.advance(2)
    assert agent(hub, "scratch") is None
    assert agent(hub, "scratch", include_expired=True)["expired"] is True
    assert hub.call("agents.get", agent="scratch")["agent"]["expired"] is True
    hub.call("hub.sweep")
    beat(hub, "scratch")
    assert agent(hub, "scratch")["expired"] is False


def test_ephemeral_ttl_is_configurable(home):
    from tests.hubproc import Hub

    short = Hub(home, "--ephemeral-ttl", "90s").start()
    try:
        short.add_agent("scratch")
        short.advance(91)
        assert agent(short, "scratch") is None
    finally:
        short.stop()


def test_sweeper_runs_on_its_interval(home):
    from tests.hubproc import Hub, wait_for

    fast = Hub(home, "--sweep-interval", "1").start()
    try:
        fast.add_agent("analyst", liveness_mode="async", interval=1)
        fast.advance(5)
        wait_for(lambda: fast.call("hub.status")["last_sweep"].get("dormant") == 1, what="a sweep to mark dormant")
    finally:
        fast.stop()


def test_profile_only_seat_is_listed_as_dormant(hub):
    hub.call("kb.put", key="profile/analyst", value='{"liveness_mode": "async", "owner": "kantrip"}')
    hub.call("kb.put", key="profile/Not-An-Id", value="ignored")
    listed = hub.call("agents.list")["agents"]
    assert [a["id"] for a in listed] == ["analyst"]
    shown = listed[0]
    assert (shown["status"], shown["last_seen"], shown["registered"], shown["liveness_mode"]) == ("dormant", None, False, "async")


def test_registered_seat_carries_its_profile(hub):
    hub.add_agent("memory", liveness_mode="always-on")
    hub.call("kb.put", key="profile/memory", value="keeper of schemas")
    listed = hub.call("agents.list")["agents"]
    assert len(listed) == 1 and listed[0]["profile"] == "keeper of schemas" and listed[0]["registered"]


def test_rename_keeps_an_alias_that_redirects(hub):
    hub.add_agent("runtime", liveness_mode="async")
    hub.call("kb.put", key="profile/runtime", value="runs things")
    renamed = hub.call("agents.rename", old="runtime", new="engine", reason="split of duties")["renamed"]
    assert renamed == {"from": "runtime", "to": "engine", "reason": "split of duties"}
    got = hub.call("agents.get", agent="runtime")
    assert got["agent"]["id"] == "engine"
    assert got["redirected"] == {"from": "runtime", "to": "engine", "reason": "split of duties"}
    assert got["agent"]["profile"] == "runs things"
    assert (hub.home / "keys" / "engine.key").exists() and not (hub.home / "keys" / "runtime.key").exists()
    assert [a["id"] for a in hub.call("agents.list")["agents"]] == ["engine"]
    with hub.client() as conn:
        hello = conn.hello("runtime", (hub.home / "keys" / "engine.key").read_text().strip())
        assert hello["agent"] == "engine" and hello["redirected"]["to"] == "engine"
        assert conn.call("agents.heartbeat")["agent"] == "engine"


def test_resolve_says_the_id_the_seats_next_delivery_follows(hub):
    # What a listener's first arm counts gaps from (agora_listen/identity.newest_before_first_arm).
    hub.add_agent("memory")
    hub.add_agent("runtime")
    assert hub.call("agents.resolve", agent="runtime")["newest_id"] == 0
    with hub.client("memory") as memory:
        for title in ("one", "two"):
            memory.call("messages.send", target="@runtime", title=title, body="")
    hub.call("agents.rename", old="runtime", new="engine", reason="split")
    assert hub.call("agents.resolve", agent="runtime") == {
        "agent": "engine", "redirected": {"from": "runtime", "to": "engine", "reason": "split"}, "newest_id": 2}
    with hub.client("memory") as memory:  # another seat's count is not the caller's to see
        assert memory.call("agents.resolve", agent="engine")["newest_id"] is None
        assert memory.call("agents.resolve", agent="memory")["newest_id"] == 0


def test_chained_rename_and_rename_back(hub):
    hub.add_agent("a1")
    hub.call("agents.rename", old="a1", new="a2", reason="first")
    hub.call("agents.rename", old="a2", new="a3", reason="second")
    assert hub.call("agents.resolve", agent="a1")["agent"] == "a3"
    hub.call("agents.rename", old="a3", new="a1", reason="back")
    assert hub.call("agents.resolve", agent="a1")["redirected"] is None
    assert hub.call("agents.resolve", agent="a3")["agent"] == "a1"


def test_rename_conflicts(hub):
    hub.add_agent("one")
    hub.add_agent("two")
    with pytest.raises(NotFound):
        hub.call("agents.rename", old="ghost", new="x", reason="r")
    with pytest.raises(Conflict):
        hub.call("agents.rename", old="one", new="two", reason="r")
    hub.call("agents.rename", old="one", new="uno", reason="r")
    with pytest.raises(Conflict) as caught:
        hub.call("agents.rename", old="one", new="x", reason="r")
    assert "rename 'uno' instead" in caught.value.message


def test_rename_into_someone_elses_alias_is_a_conflict(hub):
    hub.add_agent("one")
    hub.add_agent("two")
    hub.call("agents.rename", old="one", new="uno", reason="r")
    with pytest.raises(Conflict):
        hub.call("agents.rename", old="two", new="one", reason="r")


def test_rename_needs_a_reason(hub):
    hub.add_agent("one")
    for reason in ("", "   ", "two\nlines"):
        with pytest.raises(InvalidParams):
            hub.call("agents.rename", old="one", new="two", reason=reason)
    assert hub.call("agents.resolve", agent="one")["agent"] == "one"


def test_add_refuses_existing_ids_and_aliases(hub):
    hub.add_agent("one")
    with pytest.raises(Conflict):
        hub.add_agent("one")
    hub.call("agents.rename", old="one", new="uno", reason="r")
    with pytest.raises(Conflict):
        hub.add_agent("one")


def test_remove_deletes_agent_alias_profile_and_key(hub):
    hub.add_agent("one")
    hub.call("kb.put", key="profile/one", value="p")
    hub.call("agents.rename", old="one", new="uno", reason="r")
    assert hub.call("agents.remove", agent="uno")["removed"] == "uno"
    assert hub.call("agents.list")["agents"] == []
    assert not (hub.home / "keys" / "uno.key").exists()
    with pytest.raises(NotFound):
        hub.call("agents.get", agent="one")


@pytest.mark.parametrize("mode", ["ephemeral", "async", "always-on"])
def test_no_agent_may_administer_the_registry(hub, mode):
    hub.add_agent("seat", liveness_mode=mode)
    hub.add_agent("victim")
    with hub.client("seat") as seat:
        for method, params in (
            ("agents.remove", {"agent": "victim"}),
            ("agents.rename", {"old": "victim", "new": "taken", "reason": "mine"}),
            ("agents.add", {"agent": "sockpuppet"}),
            ("agents.update", {"agent": "victim", "liveness_mode": "always-on"}),
            ("agents.rekey", {"agent": "victim"}),
            ("hub.sweep", {}),
        ):
            with pytest.raises(Forbidden) as caught:
                seat.call(method, **params)
            assert "local operator" in caught.value.message
            assert caught.value.data["rule"] == "registry.admin"
    assert sorted(a["id"] for a in hub.call("agents.list")["agents"]) == ["seat", "victim"]


def test_agents_may_read_and_write_the_kb_with_their_name(hub):
    hub.add_agent("seat", liveness_mode="async")
    with hub.client("seat") as seat:
        assert seat.call("kb.put", key="notes/today", value="v")["entry"]["author"] == "seat"
        assert seat.call("kb.put", key="profile/seat", value="me")["entry"]["author"] == "seat"
        with pytest.raises(Forbidden) as caught:
            seat.call("kb.put", key="profile/other", value="impersonation")
        assert caught.value.data["rule"] == "kb.profile-owner"
        with pytest.raises(Forbidden):
            seat.call("kb.delete", key="profile/other")
    with pytest.raises(NotFound):
        hub.call("kb.get", key="profile/other")


def test_meta_is_stored_and_bounded(hub):
    hub.add_agent("seat", meta={"host": "laptop"})
    assert hub.call("agents.get", agent="seat")["agent"]["meta"] == {"host": "laptop"}
    with pytest.raises(TooLarge):
        hub.add_agent("big", meta={"blob": "x" * 5000})


def test_rename_refuses_to_overwrite_an_existing_profile(hub):
    hub.add_agent("one")
    hub.call("kb.put", key="profile/one", value="mine")
    hub.call("kb.put", key="profile/two", value="someone else's")
    with pytest.raises(Conflict, match="profile/two"):
        hub.call("agents.rename", old="one", new="two", reason="r")
    assert hub.call("agents.resolve", agent="one")["redirected"] is None
    assert hub.call("kb.get", key="profile/two")["entry"]["value"] == "someone else's"


def test_a_heartbeat_for_an_agent_removed_in_the_same_batch_is_not_found(tmp_path):
    """The seat's connection is revoked only after the removal commits; a heartbeat in between must not pretend."""
    from agorad.domain import registry
    from agorad.runtime.liveness import Liveness
    from agorad.domain.policy import Actor
    from agorad.store import connect
    from agorad.store.migrations import migrate

    db = connect(tmp_path / "agora.db")
    migrate(db)
    liveness = Liveness(1.0, open_transaction=lambda: None)
    with pytest.raises(NotFound, match="no longer exists"):
        registry.heartbeat(db, liveness, 0.0, Actor(41, "gone", "always-on"), "working", "x")
    db.close()


# --- counted at scale: hub.status and agora status's counts -------------------------------------

def test_hub_status_counts_what_agents_list_shows(hub):
    """hub.status counts in SQL (store/agents.census); agents.list builds each view: they must agree
    on every state rule, swept or not: dormant async seats, expired ephemeral ones, profile-only seats."""
    hub.add_agent("lasting", liveness_mode="always-on")
    hub.add_agent("napper", liveness_mode="async", interval=60)
    hub.add_agent("busybody", liveness_mode="async", interval=1800)
    hub.add_agent("passing")
    hub.add_agent("staying")
    beat(hub, "busybody", status="busy")
    hub.call("kb.put", key="profile/analyst", value='{"liveness_mode": "async"}')
    hub.call("kb.put", key="profile/lasting", value="also registered: listed once")
    hub.call("agents.rename", old="staying", new="stayed", reason="test")
    hub.call("kb.put", key="profile/staying", value="an alias now: not listed")

    def agree():
        listed = hub.call("agents.list")["agents"]
        counts = hub.call("hub.status")["counts"]
        by_status = {}
        for shown in listed:
            by_status[shown["status"]] = by_status.get(shown["status"], 0) + 1
        assert counts["listed"] == len(listed)
        assert counts["by_status"] == by_status
        return by_status

    assert agree() == {"idle": 4, "busy": 1, "dormant": 1}  # analyst, listed from its profile, is dormant
    hub.advance(2 * MINUTE + 1)  # napper is due to turn dormant; not swept yet
    assert agree() == {"idle": 3, "busy": 1, "dormant": 2}
    hub.advance(3600)  # passing and stayed expire (ephemeral, silent past the TTL); busybody turns dormant
    assert agree() == {"idle": 1, "dormant": 3}
    hub.call("hub.sweep")
    assert agree() == {"idle": 1, "dormant": 3}


def test_agents_list_counts_are_each_seats_inbox(hub):
    """`agora status`'s unread and owed, counted for every seat in two statements, are what each seat's
    own inbox.check says."""
    for seat in ("ann", "bob", "cy"):
        hub.add_agent(seat, liveness_mode="always-on")
    with hub.client("ann") as ann:
        ann.call("messages.send", target="commons", title="to all", body="x")
        ann.call("messages.send", target="@bob", title="a question", body="y", ask=True)
        ann.call("messages.send", target="@cy", title="fyi", body="z")
    with hub.client("cy") as cy:
        cy.call("messages.send", target="commons", title="also", body="w")
    with hub.client("bob") as bob:
        bob.call("inbox.ack", ref="commons#1")
    counted = {a["id"]: (a["unread"], a["owed"]) for a in hub.call("agents.list", counts=True)["agents"]}
    for seat in ("ann", "bob", "cy"):
        with hub.client(seat) as client:
            found = client.call("inbox.check")
        assert counted[seat] == (found["unread"], len(found["owed"])), seat
    assert counted == {"ann": (1, 0), "bob": (2, 1), "cy": (2, 0)}


# --- agents.list pages (domain/roster.py) ---------------------------------------------------------

def pages(hub, **params) -> list[dict]:
    """agents.list's pages, each asked after the last id the one before showed."""
    found = [hub.call("agents.list", **params)]
    while found[-1]["more"]:
        found.append(hub.call("agents.list", **params, after=found[-1]["agents"][-1]["id"]))
    return found


def test_pages_by_limit_list_each_agent_once_in_id_order(hub):
    """Registered seats, profile-only ones, a profile of a registered seat, a former id's profile and an
    expired ephemeral seat, interleaved by id: pages of any size list what one page does, each once."""
    for seat in ("b", "d", "f", "h"):
        hub.add_agent(seat, liveness_mode="always-on")
    hub.add_agent("gone")  # ephemeral: expires below
    for owner in ("a", "c", "d", "e", "g", "zz"):
        hub.call("kb.put", key=f"profile/{owner}", value=f"profile of {owner}")
    hub.call("kb.put", key="profile/Not-An-Id", value="never listed")
    hub.call("agents.rename", old="h", new="i", reason="test")
    hub.call("kb.put", key="profile/h", value="a former id: not listed")
    hub.call("kb.put", key="profile/gone", value="an expired seat's: listed with it, or not at all")
    hub.advance(3600)
    whole = hub.call("agents.list")
    assert not whole["more"]
    ids = [a["id"] for a in whole["agents"]]
    assert ids == ["a", "b", "c", "d", "e", "f", "g", "i", "zz"]
    assert next(a for a in whole["agents"] if a["id"] == "d")["profile"] == "profile of d"
    for limit in (1, 2, 3, 8):
        paged = pages(hub, limit=limit)
        assert [a["id"] for page in paged for a in page["agents"]] == ids, limit
        assert all(len(page["agents"]) <= limit for page in paged)
        assert [page["more"] for page in paged] == [True] * (len(paged) - 1) + [False]
    everyone = [a["id"] for page in pages(hub, limit=2, include_expired=True) for a in page["agents"]]
    assert everyone == ["a", "b", "c", "d", "e", "f", "g", "gone", "i", "zz"]
    last = hub.call("agents.list", after="zz")
    assert (last["agents"], last["more"]) == ([], False)


def test_an_agent_listed_from_its_profile_alone_is_shown_as_listed(hub, cli):
    """`agora agents` lists a profile-only seat; `agora agent show` said no such agent, pointing back at the
    list that showed it (a review). A former id's or an invalid id's profile is still no agent."""
    hub.call("kb.put", key="profile/carl", value='{"liveness_mode": "async"}')
    listed = next(a for a in hub.call("agents.list")["agents"] if a["id"] == "carl")
    shown = hub.call("agents.get", agent="carl")
    assert shown["agent"] == {**listed, "aliases": []} and shown["redirected"] is None
    text = cli("agent", "show", "carl").stdout
    assert "status:    dormant" in text and "not registered" in text and "async" in text, text
    hub.add_agent("h")
    hub.call("agents.rename", old="h", new="i", reason="test")
    hub.call("kb.put", key="profile/h", value="a former id's profile")
    assert hub.call("agents.get", agent="h")["agent"]["id"] == "i"  # the alias leads to the seat, as before
    assert "no agent named 'nobody'" in cli("agent", "show", "nobody", code=1).stderr
    hub.call("kb.put", key="profile/zed", value="{}")  # no mode declared: shown as `agora agents` shows it
    assert "mode:      -\n" in cli("agent", "show", "zed").stdout


WIDE = "\U0001F600"  # twelve bytes of JSON in a frame (a surrogate pair, each escaped), four of UTF-8


def test_a_page_ends_past_twelve_mib_of_json_and_the_cli_lists_every_page(hub, cli):
    """Seats described at length made one reply bigger than a client reads (MAX_REPLY, 16 MiB): 90
    profiles of 64 KiB of UTF-8 are 17.7 MB as JSON. A page ends with the agent that passes PAGE_BYTES
    of JSON as the frame carries it (a character outside the BMP is twelve bytes, not one), and `agora
    agents` and `agora status` ask for every page."""
    for n in range(90):
        hub.call("kb.put", key=f"profile/seat-{n:02d}", value=WIDE * 16_384)
    hub.add_agent("metaful", liveness_mode="always-on", meta={"notes": WIDE * 339})  # 4 KiB as stored
    paged = pages(hub)
    assert len(paged) == 2
    assert len(encode(paged[0])) > PAGE_BYTES and all(len(encode(page)) < MAX_REPLY for page in paged)
    ids = ["metaful", *(f"seat-{n:02d}" for n in range(90))]
    assert [a["id"] for page in paged for a in page["agents"]] == ids
    assert [a["id"] for a in json.loads(cli("agents", "--json").stdout)] == ids
    status = json.loads(cli("status", "--json").stdout)
    assert [a["id"] for a in status["agents"]] == ids and status["agents"][-1]["unread"] == 0


def test_an_agents_json_besides_its_texts_fits_the_row_bytes_the_page_counts(hub, cli):
    """roster._ROW_BYTES is what a page counts for an agent besides its task, meta and profile: the
    longest id, the longest mode and interval source, every number set, and agora status's counts."""
    from agorad.domain.roster import _ROW_BYTES

    longest = "a" * 64
    hub.add_agent(longest, liveness_mode="always-on", interval="30d")
    with hub.client(longest) as seat:
        seat.call("agents.heartbeat", status="working", interval=86_400 * 29.123456789)
        seat.call("messages.send", target="commons", title="x", body="y")
    shown = next(a for a in hub.call("agents.list", counts=True)["agents"] if a["id"] == longest)
    shown.update(task=None, meta={}, profile=None, unread=10**12, owed=10**12, expired=False,
                 last_seen=1e15 + 0.123456, created_at=1e15 + 0.123456)
    assert len(encode(shown)) + 1 <= _ROW_BYTES, len(encode(shown))  # and its comma in the list


def test_a_page_refuses_a_bad_cursor_or_limit_and_says_which(hub):
    hub.add_agent("seat")
    for params, field in (({"after": "Not An Id"}, "after"), ({"after": 7}, "after"), ({"limit": 0}, "limit"),
                          ({"limit": 5001}, "limit"), ({"limit": True}, "limit"), ({"limit": "3"}, "limit")):
        with pytest.raises(InvalidParams) as refused:
            hub.call("agents.list", **params)
        assert refused.value.data["field"] == field, params
    assert [a["id"] for a in hub.call("agents.list", limit=5000)["agents"]] == ["seat"]
