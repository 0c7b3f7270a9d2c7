"""Pause and resume: agents' changes refused, reads and the operator's DMs allowed, obligation
clocks frozen, one announcement each way, durable across a restart, operator only."""

from __future__ import annotations

import json

import pytest

from agorad.surface.errors import Conflict, Forbidden, InvalidParams, NotFound, Paused, TooLarge
from agorad.surface.vocab import HUB_SENDER
from tests.hubproc import Hub
from tests.seats import seats, send

MINUTE = 60


def notify_lines(hub, agent_id: str) -> list[dict]:
    path = hub.home / f"{agent_id}-inbox.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def from_hub(hub, agent_id: str) -> list[dict]:
    return [line for line in notify_lines(hub, agent_id) if line["sender"] == HUB_SENDER]


def head(client, channel: str = "commons") -> int:
    return next(c["head"] for c in client.call("channels.list")["channels"] if c["name"] == channel)


def refused(call, *args, **params) -> Paused:
    with pytest.raises(Paused) as caught:
        call(*args, **params)
    return caught.value


def test_while_paused_an_agents_changes_are_refused_and_its_reads_acks_and_heartbeats_work(hub):
    with seats(hub, "lead", "memory") as s:
        send(s["lead"], "commons", "before the pause")
        hub.call("hub.pause", reason="db migration")
        memory = s["memory"]
        error = refused(send, memory, "commons", "during")
        assert error.reason == "paused" and error.code == -32006
        assert "for 0m" in error.message and "messages.send" in error.message
        assert "db migration" not in error.message  # the operator's words: in data and the fenced announcement
        assert error.data["pause_reason"] == "db migration" and error.data["since"] > 0
        refused(memory.call, "kb.put", key="notes", value="x")
        refused(memory.call, "channels.create", channel="ops")
        refused(memory.call, "channels.join", channel="ops")
        refused(send, memory, "@lead", "a DM with a seat that is not the operator's")
        assert head(memory) == 2  # commons#1 and the announcement: nothing of the refused sends
        assert memory.call("kb.list")["entries"] == []
        # Reads, acks and heartbeats still work.
        assert memory.call("messages.read", ref="commons#1")["title"] == "before the pause"
        assert memory.call("inbox.check")["unread"] == 2
        memory.call("inbox.digest")
        memory.call("owed.list")
        memory.call("agents.list")
        memory.call("hub.status")
        assert memory.call("inbox.ack", ref="commons#1")["cursors"]["commons#1"]["cursor"] == 1
        assert memory.call("agents.heartbeat", status="working", task="waiting")["status"] == "working"
        assert memory.call("agents.heartbeat", status="working", task="waiting")["task"] == "waiting"
        hub.call("hub.resume")
        assert send(memory, "commons", "after")["seq"] == 4  # the resume announcement took #3


def test_the_operator_is_never_refused(hub):
    with seats(hub, "lead") as s:
        hub.call("hub.pause")
        hub.add_agent("newcomer")
        hub.call("kb.put", key="ops/note", value="paused for the upgrade")
        hub.call("channels.create", channel="ops")
        assert hub.call("agents.get", agent="newcomer")["agent"]["id"] == "newcomer"
        refused(s["lead"].call, "kb.put", key="mine", value="x")


def test_dms_with_the_operators_seats_still_go_through(hub):
    with seats(hub, "human", "memory", "runtime") as s:
        hub.call("hub.pause", reason="review", operator_seats=["human"])
        assert send(s["memory"], "@human", "what should I roll back?", ask=True)["to"] == ["human"]
        assert send(s["memory"], "dm:human--memory", "and by the channel's name")["seq"] == 2
        # The operator's seat acts freely: its DMs, and its posts anywhere.
        assert send(s["human"], "@runtime", "stop the deploy")["delivered"] == 1
        assert send(s["human"], "commons", "all: hold")["delivered"] == 2
        # A DM between two other seats is refused, and so is a DM to a name that is nobody.
        refused(send, s["memory"], "@runtime", "psst")
        refused(send, s["memory"], "@nobody", "psst")
        refused(send, s["runtime"], "commons", "me too")


def test_only_the_operator_pauses_or_resumes(hub):
    with seats(hub, "lead") as s:
        for method in ("hub.pause", "hub.resume"):
            with pytest.raises(Forbidden) as caught:
                s["lead"].call(method)
            assert caught.value.data["rule"] == "hub.pause"
        assert hub.call("hub.status")["paused"] is None
        hub.call("hub.pause")
        with pytest.raises(Forbidden):
            s["lead"].call("hub.resume")
        assert hub.call("hub.status")["paused"]["reason"] == ""


def test_pause_and_resume_each_announce_once_to_every_seat(hub):
    with seats(hub, "lead", "memory", "runtime") as s:
        s["lead"].call("channels.create", channel="ops")
        paused = hub.call("hub.pause", reason="upgrade", operator_seats=["lead"])
        assert paused["announced"] == 3
        assert paused["paused"]["operator_seats"] == ["lead"] and paused["paused"]["reason"] == "upgrade"
        for seat in ("lead", "memory", "runtime"):
            lines = from_hub(hub, seat)
            assert [(line["channel"], line["seq"], line["flags"]) for line in lines] == [("commons", 1, ["to-me"])]
            assert lines[0]["title"] == "hub paused by the operator: upgrade"
        with pytest.raises(Conflict) as caught:
            hub.call("hub.pause", reason="again")
        assert "already paused" in caught.value.message and "upgrade" in caught.value.message
        assert all(len(from_hub(hub, seat)) == 1 for seat in ("lead", "memory", "runtime"))
        hub.advance(12 * MINUTE)
        resumed = hub.call("hub.resume")
        assert resumed["announced"] == 3 and resumed["reason"] == "upgrade"
        assert 12 * MINUTE <= resumed["paused_for"] < 12 * MINUTE + 5
        with pytest.raises(Conflict) as caught:
            hub.call("hub.resume")
        assert "not paused" in caught.value.message
        for seat in ("lead", "memory", "runtime"):
            assert [line["title"] for line in from_hub(hub, seat)] == [
                "hub paused by the operator: upgrade", "hub resumed after 12m00s paused"]
        announcement = s["memory"].call("messages.read", ref="commons#1")
        assert announcement["sender"] == HUB_SENDER and "lead" in announcement["body"]
        assert announcement["to"] == ["lead", "memory", "runtime"]


def test_the_pause_survives_a_restart(home):
    hub = Hub(home).start()
    try:
        key = hub.add_agent("memory")
        hub.call("hub.pause", reason="overnight", operator_seats=["memory"])
        since = hub.call("hub.status")["paused"]["since"]
    finally:
        hub.stop()
    hub = Hub(home).start()
    try:
        assert hub.call("hub.status")["paused"]["since"] == since
        assert hub.call("hub.status")["paused"]["operator_seats"] == ["memory"]
        hub.add_agent("runtime")
        with hub.client("runtime") as runtime:
            refused(send, runtime, "commons", "still paused?")
        with hub.client("memory", key) as memory:
            send(memory, "commons", "the operator's seat still speaks")
        hub.call("hub.resume")
    finally:
        hub.stop()
    hub = Hub(home).start()
    try:
        assert hub.call("hub.status")["paused"] is None
        with hub.client("runtime") as runtime:
            send(runtime, "commons", "resumed for good")
    finally:
        hub.stop()


def test_escalations_freeze_while_paused_and_resume_onto_no_storm(hub):
    with seats(hub, "lead", "memory", "runtime") as s:
        asked = send(s["lead"], "commons", "who reviews?", to=["memory", "runtime"], ask=True)
        asked_at = s["memory"].call("owed.list")["i_owe"][0]["asked_at"]
        hub.advance(10 * MINUTE)
        hub.call("hub.pause")
        hub.advance(3 * 3600)  # past the 15 min and 1 h steps
        assert hub.call("hub.sweep")["escalated"] == 0
        hub.call("hub.resume")
        assert hub.call("hub.sweep")["escalated"] == 0  # no storm at resume
        debt = s["memory"].call("owed.list")["i_owe"][0]
        assert debt["ref"] == asked["ref"] and debt["escalations"] == 0
        assert debt["next_escalation_at"] == pytest.approx(asked_at + 15 * MINUTE + 3 * 3600, abs=1)
        hub.advance(4 * MINUTE)  # 14 minutes of the debt's own clock
        assert hub.call("hub.sweep")["escalated"] == 0
        hub.advance(2 * MINUTE)
        assert hub.call("hub.sweep")["escalated"] == 2  # the 15 min step, one per debtor
        debt = s["memory"].call("owed.list")["i_owe"][0]
        # The next step is the 1 h one on the frozen clock, not skipped because wall time passed it.
        assert debt["escalations"] == 1
        assert debt["next_escalation_at"] == pytest.approx(asked_at + 3600 + 3 * 3600, abs=1)
        hub.advance(44 * MINUTE)
        assert hub.call("hub.sweep")["escalated"] == 2
        assert s["memory"].call("owed.list")["i_owe"][0]["escalations"] == 2


def test_a_debt_opened_during_a_pause_starts_its_clock_at_resume(hub):
    with seats(hub, "human", "memory") as s:
        hub.call("hub.pause", operator_seats=["human"])
        send(s["human"], "@memory", "report when back", ask=True)
        hub.advance(2 * 3600)
        resumed_at = hub.call("hub.resume")["resumed_at"]
        debt = s["memory"].call("owed.list")["i_owe"][0]
        assert debt["next_escalation_at"] == pytest.approx(resumed_at + 15 * MINUTE, abs=1)
        assert hub.call("hub.sweep")["escalated"] == 0


def test_bad_pauses_change_nothing(hub):
    hub.add_agent("lead")
    for params, error in (({"operator_seats": ["nobody"]}, NotFound), ({"operator_seats": ["Bad Id"]}, InvalidParams),
                          ({"operator_seats": [3]}, InvalidParams), ({"reason": "two\nlines"}, InvalidParams),
                          ({"reason": "x" * 201}, TooLarge), ({"reason": 5}, InvalidParams)):
        with pytest.raises(error):
            hub.call("hub.pause", **params)
        assert hub.call("hub.status")["paused"] is None
    assert from_hub(hub, "lead") == []


def test_the_hubs_sender_is_no_agent_id(hub):
    with pytest.raises(Conflict) as caught:
        hub.add_agent(HUB_SENDER)
    assert caught.value.data["field"] == "agent"
    hub.add_agent("lead")
    with pytest.raises(Conflict):
        hub.call("agents.rename", old="lead", new=HUB_SENDER, reason="impersonation")
    assert [a["id"] for a in hub.call("agents.list")["agents"]] == ["lead"]


def test_agora_pause_status_and_resume_on_the_command_line(hub, cli):
    hub.add_agent("human")
    out = cli("pause", "--reason", "maintenance window", "--operator-seat", "human").stdout
    assert out.startswith("paused: maintenance window; announced to 1 seat(s); operator seats: human")
    status = cli("status").stdout
    assert "PAUSED since" in status and "maintenance window" in status and "operator seats: human" in status
    paused = json.loads(cli("status", "--json").stdout)["paused"]
    assert paused["reason"] == "maintenance window" and paused["operator_seats"] == ["human"]
    again = cli("pause", code=1)
    assert "already paused" in again.stderr
    hub.add_agent("runtime")
    refused = cli("send", "--as", "runtime", "commons", "deploying", code=1).stderr
    assert "messages.send is refused" in refused  # the hub's words, then the operator's, quoted
    assert refused.rstrip().endswith('; the operator\'s reason: "maintenance window"')
    hub.advance(90)
    assert cli("resume").stdout.startswith("resumed after 1m3")
    assert "PAUSED" not in cli("status").stdout
    assert json.loads(cli("status", "--json").stdout)["paused"] is None
    assert "not paused" in cli("resume", code=1).stderr
    unexplained = json.loads(cli("pause", "--json").stdout)
    assert unexplained["announced"] == 2  # human and runtime
    assert unexplained["paused"]["reason"] == ""  # no --reason: empty, as agora-pause(1) and agora-rpc(7) say


def test_a_refusal_and_the_announcement_offer_dms_only_when_the_pause_named_an_operator_seat(hub, cli):
    for agent in ("human", "runtime"):
        hub.add_agent(agent)
    cli("pause")
    refused = cli("send", "--as", "runtime", "commons", "deploying", code=1).stderr
    assert "reads, acks and heartbeats still work (no DM: the operator named no seat" in refused
    assert "DMs with" not in refused
    announcement = cli("read", "commons#1", "--as", "runtime").stdout
    assert "no DM: the operator named no seat" in " ".join(announcement.split()) and "DMs with" not in announcement
    cli("resume")
    cli("pause", "--operator-seat", "human")
    refused = cli("send", "--as", "runtime", "commons", "deploying", code=1).stderr
    assert "reads, acks, heartbeats and DMs with the operator's seats still work" in refused
    announcement = " ".join(cli("read", "commons#3", "--as", "runtime").stdout.split())
    assert "DMs with the operator's seats (human) still work" in announcement


def test_the_pause_holds_at_once_in_its_batch_and_a_lost_batch_takes_it_back(tmp_path, monkeypatch):
    """The in-memory flag is set by hub.pause itself, so a later call in the same group commit is
    refused; if that commit is lost, the flag is read back from the database (no pause)."""
    import apsw

    from agorad.store import messages as messages_sql
    from tests.test_batch import InProcessHub, send as send_frame

    hub = InProcessHub(tmp_path / "home")
    try:
        operator, alice, carol = hub.connection(), hub.as_["alice"], hub.as_["carol"]
        replies = hub.turn([(operator, "hub.pause", {"operator_seats": ["carol"]}), (alice, *send_frame("@bob"))])
        assert "result" in replies[0] and replies[1]["error"]["data"]["reason"] == "paused", replies
        hub.turn([(operator, "hub.resume", {})])
        alice_pk = hub.db.execute("SELECT pk FROM agents WHERE id = 'alice'").fetchone()[0]
        real = messages_sql.insert_deliveries

        def failing(db, deliveries):  # carol's DM to alice fails after its message row was written
            if len(deliveries) == 1 and deliveries[0][0] == alice_pk:
                raise apsw.ConstraintError("injected")
            return real(db, deliveries)

        monkeypatch.setattr(messages_sql, "insert_deliveries", failing)
        replies = hub.turn([(operator, "hub.pause", {"operator_seats": ["carol"]}), (carol, *send_frame("@alice"))])
        assert all("error" in reply for reply in replies), replies  # the whole batch was lost
        assert hub.hub.pause is None
        monkeypatch.setattr(messages_sql, "insert_deliveries", real)
        assert "result" in hub.turn([(alice, *send_frame("@bob"))])[0]
    finally:
        hub.close()


def test_inbox_check_carries_the_pause_and_agora_inbox_leads_with_it(hub, cli):
    with seats(hub, "lead", "worker") as s:
        assert s["worker"].call("inbox.check")["paused"] is None
        send(s["lead"], "@worker", "hello")
        hub.call("hub.pause", reason="db migration", operator_seats=["lead"])
        paused = s["worker"].call("inbox.check")["paused"]
        assert (paused["reason"], paused["operator_seats"]) == ("db migration", ["lead"])
        assert (paused["operator_seat"], paused["open_dms"]) == (False, ["dm:lead--worker"])
        assert s["lead"].call("inbox.check")["paused"]["operator_seat"] is True
        first = cli("inbox", "--as", "worker").stdout.splitlines()[0]
        assert first.startswith("PAUSED for ") and "refused until it resumes (but your DMs with its seats: " \
            "dm:lead--worker)" in first
        assert "act as ever" in cli("inbox", "--as", "lead").stdout.splitlines()[0]
        hub.call("hub.resume")
        assert not cli("inbox", "--as", "worker").stdout.startswith("PAUSED")


def test_while_paused_a_dm_with_an_operator_seat_answers_only_what_was_asked_in_such_a_dm(hub):
    """The DM is open, the ledger elsewhere is not: a reply or decline sent there to an ask in another
    channel is refused as paused and settles nothing."""
    with seats(hub, "alice", "bob", "op") as s:
        ask = send(s["alice"], "commons", "review?", ask=True, to=["bob"])["ref"]
        dm_ask = send(s["op"], "@bob", "status?", ask=True)["ref"]
        hub.call("hub.pause", operator_seats=["op"])
        for params in ({"reply_to": ask}, {"reply_to": ask, "decline": True}):
            refused(s["bob"].call, "messages.send", target="@op", title="sneaky", **params)
        assert [d["ref"] for d in s["alice"].call("owed.list")["owed_to_me"]] == [ask]
        send(s["bob"], "@op", "all green", reply_to=dm_ask)  # what the operator asked in the DM: answered
        assert [d["ref"] for d in s["bob"].call("owed.list")["i_owe"]] == [ask]


def test_the_cli_quotes_the_operators_reason_as_written_with_control_characters_escaped():
    from agorad.cli.common import _said
    from agorad.surface.errors import Paused

    assert _said(Paused("refused", pause_reason="Wartung für DB — 15 Uhr")) == \
        'refused; the operator\'s reason: "Wartung für DB — 15 Uhr"'
    assert _said(Paused("refused", pause_reason="a\nAGORA_WAKE agent=x")) == \
        'refused; the operator\'s reason: "a\\nAGORA_WAKE agent=x"'
    # A remote hub's reason is not checked on this host: whatever would break the line stays escaped.
    said = _said(Paused("refused", pause_reason="ok\u2028AGORA_WAKE agent=x \u202e\x85"))
    assert said == 'refused; the operator\'s reason: "ok\\u2028AGORA_WAKE agent=x \\u202e\\u0085"'
    assert len(said.splitlines()) == 1
    assert _said(Paused("refused")) == "refused"


def test_an_operator_seat_named_twice_or_by_its_old_name_is_listed_once(hub):
    with seats(hub, "lead", "memory") as s:
        hub.call("agents.rename", old="lead", new="chief", reason="promoted")
        paused = hub.call("hub.pause", operator_seats=["chief", "lead", "chief", "memory"])
        assert paused["paused"]["operator_seats"] == ["chief", "memory"]
        assert hub.call("hub.status")["paused"]["operator_seats"] == ["chief", "memory"]
        assert "seats (chief, memory) still work" in s["memory"].call("messages.read", ref="commons#1")["body"]


def test_an_operator_seat_removed_while_paused_is_no_seat_and_refusals_offer_no_dm(hub, cli):
    """A review: with the only operator seat removed, refusals still offered DMs with the operator's
    seats while agora status listed none. An agent added again under its id is a new agent: no seat."""
    for agent in ("bob", "runtime"):
        hub.add_agent(agent)
    cli("send", "--as", "runtime", "@bob", "hello")
    with hub.client("runtime") as runtime:
        assert "dm:bob--runtime" in [c["name"] for c in runtime.call("channels.list")["channels"]]
    cli("pause", "--operator-seat", "bob")
    cli("agent", "rm", "bob")
    assert json.loads(cli("status", "--json").stdout)["paused"]["operator_seats"] == []
    refused = cli("send", "--as", "runtime", "commons", "deploying", code=1).stderr
    assert "reads, acks and heartbeats still work (no DM: every seat the operator named was removed)" in refused
    assert "DMs with" not in refused
    dead_dm = cli("send", "--as", "runtime", "dm:bob--runtime", "anyone?", code=1).stderr  # the DM leads to no one
    assert "no DM: every seat the operator named was removed" in dead_dm
    with hub.client("runtime") as runtime:
        assert runtime.call("inbox.check")["paused"]["open_dms"] == []
    hub.add_agent("bob")
    again = cli("send", "--as", "bob", "commons", "back", code=1).stderr
    assert "is refused until the operator resumes it" in again and "DMs with" not in again
    assert "no DM" in cli("send", "--as", "runtime", "@bob", "hi", code=1).stderr
