"""agents.update: the operator changes a seat's mode, interval and meta in place (a
seat's mode changes without losing the seat); and an agent's own declared interval (hub.hello,
agents.heartbeat), with where the effective interval came from. Driven through a real hub."""

from __future__ import annotations

import pytest

from agorad.surface.errors import Forbidden, InvalidParams, NotFound, TooLarge, Unauthorized

MINUTE = 60


def shown(hub, agent_id: str) -> dict:
    return hub.call("agents.get", agent=agent_id)["agent"]


def interval(hub, agent_id: str) -> tuple:
    agent = shown(hub, agent_id)
    return agent["interval"], agent["interval_source"], agent["declared_interval"]


def test_update_changes_mode_interval_and_meta_and_keeps_the_seat(hub):
    key = hub.add_agent("runtime", meta={"host": "laptop", "repo": "agora"})
    with hub.client("runtime") as seat:
        seat.call("agents.heartbeat", status="working", task="review #12")
    before = shown(hub, "runtime")
    result = hub.call("agents.update", agent="runtime", liveness_mode="async", interval="10m",
                      meta={"host": "desktop", "owner": "kantrip"})
    after = result["agent"]
    assert result["redirected"] is None
    assert after == shown(hub, "runtime")  # the answer is the updated row, as agents.get shows it
    assert (after["liveness_mode"], after["interval"], after["interval_source"]) == ("async", 600, "operator")
    assert after["meta"] == {"host": "desktop", "repo": "agora", "owner": "kantrip"}  # merged
    for unchanged in ("status", "task", "last_seen", "created_at", "aliases"):
        assert after[unchanged] == before[unchanged], unchanged
    with hub.client("runtime", key) as seat:  # the same key still opens the seat
        assert seat.call("agents.heartbeat")["task"] == "review #12"


def test_meta_null_removes_a_key_and_an_empty_patch_changes_nothing(hub):
    hub.add_agent("runtime", meta={"host": "laptop", "repo": "agora"})
    assert hub.call("agents.update", agent="runtime", meta={"host": None, "gone": None})["agent"]["meta"] == {"repo": "agora"}
    assert hub.call("agents.update", agent="runtime", meta={})["agent"]["meta"] == {"repo": "agora"}


def test_an_alias_is_followed_and_the_redirect_reported(hub):
    hub.add_agent("runtime")
    hub.call("agents.rename", old="runtime", new="engine", reason="split of duties")
    result = hub.call("agents.update", agent="runtime", liveness_mode="always-on")
    assert result["redirected"] == {"from": "runtime", "to": "engine", "reason": "split of duties"}
    assert result["agent"]["id"] == "engine" and shown(hub, "engine")["liveness_mode"] == "always-on"


def test_an_unknown_agent_is_not_found(hub):
    with pytest.raises(NotFound, match="agora agents"):
        hub.call("agents.update", agent="ghost", liveness_mode="async")


def test_no_agent_may_update_any_seat_not_even_its_own(hub):
    hub.add_agent("seat", liveness_mode="async")
    hub.add_agent("victim")
    before = [shown(hub, "seat"), shown(hub, "victim")]
    with hub.client("seat") as seat:
        for target in ("seat", "victim"):
            with pytest.raises(Forbidden) as caught:
                seat.call("agents.update", agent=target, liveness_mode="always-on", interval=5, meta={"k": "v"})
            assert caught.value.data["rule"] == "registry.admin" and "local operator" in caught.value.message
    assert [shown(hub, "seat"), shown(hub, "victim")] == before


BAD_UPDATES = [
    ({"liveness_mode": "sometimes"}, InvalidParams, "liveness_mode"),
    ({"liveness_mode": 3}, InvalidParams, "liveness_mode"),
    ({"interval": 0}, InvalidParams, "interval"),
    ({"interval": -5}, InvalidParams, "interval"),
    ({"interval": 0.5}, InvalidParams, "interval"),
    ({"interval": "31d"}, InvalidParams, "interval"),
    ({"interval": 1e300}, InvalidParams, "interval"),
    ({"interval": "soon"}, InvalidParams, "interval"),
    ({"interval": True}, InvalidParams, "interval"),
    ({"meta": "host=laptop"}, InvalidParams, "meta"),
    ({"meta": ["host"]}, InvalidParams, "meta"),
    ({"meta": {"port": 8080}}, InvalidParams, "meta"),
    ({"meta": {"nested": {"a": "b"}}}, InvalidParams, "meta"),
    ({"meta": {"": "empty key"}}, InvalidParams, "meta"),
    ({"meta": {"two\nlines": "v"}}, InvalidParams, "meta key"),
    ({"meta": {"\x1b[31mred": "v"}}, InvalidParams, "meta key"),
    ({"meta": {"k" * 65: "v"}}, InvalidParams, "meta key"),
    ({"meta": {"blob": "x" * 5000}}, TooLarge, "meta"),
    ({"meta": {"ok": "fine"}, "colour": "red"}, InvalidParams, "colour"),
    ({}, InvalidParams, "nothing to change"),
    ({"liveness_mode": None, "interval": None, "meta": None}, InvalidParams, "nothing to change"),
]


@pytest.mark.parametrize("params, error, field", BAD_UPDATES, ids=[repr(p)[:50] for p, _, _ in BAD_UPDATES])
def test_bad_updates_are_refused_precisely_and_change_nothing(hub, params, error, field):
    hub.add_agent("runtime", liveness_mode="always-on", meta={"host": "laptop"})
    before = shown(hub, "runtime")
    with pytest.raises(error) as caught:
        hub.call("agents.update", agent="runtime", **params)
    assert field in caught.value.message
    assert caught.value.data.get("field") == (None if field == "nothing to change" else field.split()[0])
    assert shown(hub, "runtime") == before


def test_a_bad_value_next_to_good_ones_changes_nothing_either(hub):
    hub.add_agent("runtime", meta={"host": "laptop"})
    before = shown(hub, "runtime")
    with pytest.raises(InvalidParams):
        hub.call("agents.update", agent="runtime", liveness_mode="async", interval="1h", meta={"n": 1})
    with pytest.raises(InvalidParams):
        hub.call("agents.update", agent="runtime", liveness_mode="async", interval="0s", meta={"n": "1"})
    assert shown(hub, "runtime") == before


def test_meta_may_grow_to_the_limit_in_steps_and_no_further(hub):
    """The limit holds for the merged meta: a patch small by itself is refused if the result is too big."""
    hub.add_agent("runtime")
    hub.call("agents.update", agent="runtime", meta={"a": "x" * 2000})
    hub.call("agents.update", agent="runtime", meta={"b": "x" * 2000})
    before = shown(hub, "runtime")
    with pytest.raises(TooLarge, match="limit is 4096"):
        hub.call("agents.update", agent="runtime", liveness_mode="async", meta={"c": "x" * 100})
    assert shown(hub, "runtime") == before
    assert hub.call("agents.update", agent="runtime", meta={"a": None, "c": "x" * 100})["agent"]["meta"].keys() == {"b", "c"}


def test_going_async_uses_the_interval_in_effect(hub):
    hub.add_agent("seat")  # ephemeral, no interval given: the 30m default
    assert interval(hub, "seat") == (1800, "default", None)
    with hub.client("seat") as seat:
        seat.call("agents.heartbeat", status="working", task="x")
    hub.call("agents.update", agent="seat", liveness_mode="async")
    hub.advance(59 * MINUTE)
    assert shown(hub, "seat")["status"] == "working"
    hub.advance(2 * MINUTE)
    assert (shown(hub, "seat")["status"], shown(hub, "seat")["task"]) == ("dormant", None)
    assert hub.call("hub.sweep")["dormant"] == 1


def test_leaving_async_turns_nothing_back_by_itself(hub):
    """Changing the mode resets nothing: a dormant seat made always-on stays dormant until it beats."""
    hub.add_agent("seat", liveness_mode="async", interval=60)
    hub.advance(200)
    hub.call("hub.sweep")
    hub.call("agents.update", agent="seat", liveness_mode="always-on")
    assert shown(hub, "seat")["status"] == "dormant"
    with hub.client("seat") as seat:
        assert seat.call("agents.heartbeat")["status"] == "idle"


def test_a_seat_declares_its_interval_in_hello_and_dormancy_follows_it(hub):
    key = hub.add_agent("analyst", liveness_mode="async")
    with hub.client() as conn:
        hello = conn.hello("analyst", key, interval=5 * MINUTE)
        assert (hello["interval"], hello["interval_source"]) == (300, "agent")
        conn.call("agents.heartbeat", status="working", task="triage")
    assert interval(hub, "analyst") == (300, "agent", 300)
    hub.advance(9 * MINUTE)
    assert shown(hub, "analyst")["status"] == "working"
    hub.advance(2 * MINUTE)  # 11 minutes silent: over 2x the declared 5, far under 2x the old 30
    assert shown(hub, "analyst")["status"] == "dormant"
    assert hub.call("hub.sweep")["dormant"] == 1


def test_the_operators_interval_wins_and_unset_gives_the_declaration_back(hub):
    key = hub.add_agent("analyst", liveness_mode="async", interval="1h")
    assert interval(hub, "analyst") == (3600, "operator", None)
    with hub.client("analyst", key) as seat:
        declared = seat.call("agents.heartbeat", interval=120)
        assert (declared["interval"], declared["interval_source"]) == (3600, "operator")
    assert interval(hub, "analyst") == (3600, "operator", 120)  # kept, not applied
    hub.advance(10 * MINUTE)
    assert shown(hub, "analyst")["status"] == "idle"  # the operator's hour holds
    assert hub.call("agents.update", agent="analyst", interval="unset")["agent"]["interval_source"] == "agent"
    assert interval(hub, "analyst") == (120, "agent", 120)
    assert shown(hub, "analyst")["status"] == "dormant"  # 10 minutes silent of a 2-minute cadence
    hub.call("agents.update", agent="analyst", interval="15m")
    assert interval(hub, "analyst") == (900, "operator", 120)
    assert shown(hub, "analyst")["status"] == "idle"  # the sweep never wrote dormant; the read rule did


def test_unset_without_a_declaration_is_the_default(hub):
    hub.add_agent("seat", interval=90)
    hub.call("agents.update", agent="seat", interval="unset")
    assert interval(hub, "seat") == (1800, "default", None)


def test_the_most_recent_declaration_is_the_one_kept(hub):
    key = hub.add_agent("seat", liveness_mode="async")
    with hub.client() as conn:
        conn.hello("seat", key, interval="10m")
        assert conn.call("agents.heartbeat", interval="20m")["interval"] == 1200
    with hub.client() as conn:
        assert conn.hello("seat", key)["interval"] == 1200  # a hello that declares nothing keeps it
    assert interval(hub, "seat") == (1200, "agent", 1200)


@pytest.mark.parametrize("value", [0, -1, "31d", "soon", 1e300, False])
def test_bad_declarations_are_refused_and_store_nothing(hub, value):
    key = hub.add_agent("seat", liveness_mode="async")
    with hub.client("seat", key) as seat:
        seat.call("agents.heartbeat", interval=600)
        with pytest.raises(InvalidParams) as caught:
            seat.call("agents.heartbeat", status="busy", interval=value)
        assert caught.value.data["field"] == "interval"
    with hub.client() as conn:
        with pytest.raises(InvalidParams):
            conn.hello("seat", key, interval=value)
    assert interval(hub, "seat") == (600, "agent", 600)
    assert shown(hub, "seat")["status"] == "idle"


def test_hello_declarations_need_the_seat_and_its_key(hub):
    hub.add_agent("seat")
    with hub.client() as conn:
        with pytest.raises(InvalidParams, match="agent and key"):
            conn.call("hub.hello", interval=60)
        with pytest.raises(Unauthorized):
            conn.hello("seat", "agk_wrong", interval=60)
    assert interval(hub, "seat") == (1800, "default", None)


def test_a_live_connection_acts_under_its_new_mode(hub):
    hub.add_agent("seat", liveness_mode="ephemeral")
    with hub.client("seat") as seat:
        hub.call("agents.update", agent="seat", liveness_mode="async")
        with pytest.raises(Forbidden, match=r"seat \(async\)"):
            seat.call("agents.add", agent="other")


def test_a_heartbeat_declaring_a_new_interval_is_stored_before_its_reply(home):
    """Liveness: restating the declared interval may be answered from memory; a new one may not."""
    from tests.hubproc import Hub
    from tests.test_liveness import stored

    def stored_interval():
        import apsw
        db = apsw.Connection(str(hub.home / "agora.db"), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return db.execute("SELECT interval_s, interval_source, declared_interval_s FROM agents").fetchone()
        finally:
            db.close()

    hub = Hub(home, "--liveness-flush", "1h").start()
    try:
        hub.add_agent("seat", liveness_mode="async")
        with hub.client("seat") as seat:
            first = seat.call("agents.heartbeat", status="working", task="x", interval=600)
            assert stored(hub.home, "seat") == ("working", "x", first["last_seen"])
            assert stored_interval() == (600, "agent", 600)
            hub.advance(30)
            again = seat.call("agents.heartbeat", status="working", task="x", interval="10m")  # restated
            assert (again["interval"], again["interval_source"]) == (600, "agent")
            assert stored(hub.home, "seat")[2] == first["last_seen"]  # answered from memory
            hub.advance(30)
            new = seat.call("agents.heartbeat", status="working", task="x", interval=900)
            assert stored(hub.home, "seat") == ("working", "x", new["last_seen"])  # committed first
            assert stored_interval() == (900, "agent", 900)
            hub.call("agents.update", agent="seat", interval="1h")  # the operator's change forgets
            hub.advance(30)
            pinned = seat.call("agents.heartbeat", status="working", task="x", interval=900)
            assert (pinned["interval"], pinned["interval_source"]) == (3600, "operator")
            assert stored(hub.home, "seat")[2] == pinned["last_seen"]
    finally:
        hub.stop()


def test_cli_agent_set_and_show(cli, hub):
    import json

    cli("agent", "add", "runtime", "--meta", '{"host": "laptop", "repo": "agora"}')
    out = cli("agent", "set", "runtime", "--mode", "async", "--interval", "10m",
              "--meta", "host=desktop", "--meta", "repo=", "--meta", "owner=a=b").stdout
    assert "mode:      async\n" in out and "interval:  10m (operator)\n" in out
    assert 'meta:      {"host": "desktop", "owner": "a=b"}\n' in out
    beat = cli("heartbeat", "--as", "runtime", "--interval", "5m")
    assert beat.stdout == "runtime: idle\n"
    assert "operator's interval 10m applies; 5m is kept" in beat.stderr
    assert "interval:  10m (operator; the agent declared 5m)\n" in cli("agent", "show", "runtime").stdout
    unset = json.loads(cli("agent", "set", "runtime", "--interval", "unset", "--json").stdout)
    assert (unset["interval"], unset["interval_source"], unset["declared_interval"]) == (300, "agent", 300)
    assert json.loads(cli("agent", "show", "runtime", "--json").stdout) == unset
    beat = json.loads(cli("heartbeat", "--as", "runtime", "--interval", "2m", "--json").stdout)
    assert (beat["interval"], beat["interval_source"]) == (120, "agent")
    cli("agent", "rename", "runtime", "engine", "--reason", "split")
    moved = cli("agent", "set", "runtime", "--mode", "always-on")
    assert "redirected: runtime -> engine (split)" in moved.stderr and "id:        engine\n" in moved.stdout


def test_cli_agent_add_without_an_interval_leaves_it_to_the_agent(cli, hub):
    assert cli("agent", "add", "seat", "--mode", "async").stdout.startswith(
        "registered seat (async, dormant after 1h of silence)\n")
    assert "interval:  30m (default)\n" in cli("agent", "show", "seat").stdout
    cli("heartbeat", "--as", "seat", "--interval", "90s")
    assert "interval:  90s (agent)\n" in cli("agent", "show", "seat").stdout


@pytest.mark.parametrize("args, code, said", [
    (("agent", "set", "runtime"), 2, "nothing to change"),
    (("agent", "set", "runtime", "--meta", "novalue"), 2, "is not KEY=VALUE"),
    (("agent", "set", "runtime", "--meta", "=v"), 2, "is not KEY=VALUE"),
    (("agent", "set", "runtime", "--interval", "0"), 2, "shorter than 1 second"),
    (("agent", "set", "runtime", "--interval", "later"), 2, "not a duration"),
    (("agent", "set", "runtime", "--mode", "sometimes"), 2, "sometimes"),
    (("agent", "set", "runtime", "--interval", "40d"), 1, "interval: 40d is longer than 30d"),  # as typed, not seconds
    (("agent", "set", "runtime", "--meta", "k=" + "v" * 5000), 1, "limit is 4096"),
    (("agent", "set", "ghost", "--mode", "async"), 1, "no agent named 'ghost'"),
    (("heartbeat", "--as", "runtime", "--interval", "-5"), 2, "not a duration"),
    (("heartbeat", "--as", "runtime", "--interval", "1000d"), 1, "interval: 1000d is longer than 30d"),
])
def test_cli_bad_input_is_refused_and_changes_nothing(cli, hub, args, code, said):
    cli("agent", "add", "runtime", "--meta", '{"host": "laptop"}')
    before = shown(hub, "runtime")
    assert said in cli(*args, code=code).stderr
    assert shown(hub, "runtime") == before
