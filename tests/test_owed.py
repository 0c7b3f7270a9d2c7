"""The owed ledger: debts per addressee, discharge by reply, escalation on the hub's clock."""

from __future__ import annotations

import json

from tests.seats import seats, send

MINUTE = 60


def owes(client) -> list[str]:
    return [d["ref"] for d in client.call("owed.list")["i_owe"]]


def test_ask_puts_a_debt_on_each_addressee_and_the_first_reply_discharges_all(hub):
    with seats(hub, "lead", "memory", "runtime", "quiet") as s:
        ask = send(s["lead"], "commons", "who takes #12?", to=["memory", "runtime"], ask=True)
        assert ask["to"] == ["memory", "runtime"]
        assert owes(s["memory"]) == owes(s["runtime"]) == ["commons#1"]
        assert owes(s["quiet"]) == []
        assert [(d["debtor"], d["ref"]) for d in s["lead"].call("owed.list")["owed_to_me"]] == [
            ("memory", "commons#1"), ("runtime", "commons#1")]
        # A reply from someone who owes nothing discharges nothing.
        assert send(s["quiet"], "commons", "not me", reply_to="commons#1")["discharged"] == 0
        assert send(s["runtime"], "commons", "mine", reply_to="commons#1")["discharged"] == 2
        assert owes(s["memory"]) == owes(s["runtime"]) == []
        assert s["lead"].call("owed.list")["owed_to_me"] == []


def test_the_askers_own_reply_never_discharges_its_ask(hub):
    with seats(hub, "lead", "memory") as s:
        send(s["lead"], "@memory", "review?", ask=True)
        assert send(s["lead"], "@memory", "ping", reply_to="dm:lead--memory#1")["discharged"] == 0
        assert owes(s["memory"]) == ["dm:lead--memory#1"]


def test_open_flag_follows_the_debt(hub):
    with seats(hub, "lead", "memory") as s:
        send(s["lead"], "@memory", "review?", ask=True)
        flags = s["memory"].call("inbox.check")["channels"][0]["messages"][0]["flags"]
        assert flags == ["to-me", "dm", "open"]
        send(s["memory"], "@lead", "done", reply_to="dm:lead--memory#1")
        flags = s["memory"].call("inbox.check")["channels"][0]["messages"][0]["flags"]
        assert flags == ["to-me", "dm"]


def notify_lines(hub, agent_id: str) -> list[dict]:
    path = hub.home / f"{agent_id}-inbox.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_escalation_follows_the_schedule_and_renotifies(hub):
    with seats(hub, "lead", "memory") as s:
        send(s["lead"], "@memory", "review?", ask=True)
        hub.advance(14 * MINUTE)
        assert hub.call("hub.sweep")["escalated"] == 0
        hub.advance(2 * MINUTE)
        assert hub.call("hub.sweep")["escalated"] == 1
        assert hub.call("hub.sweep")["escalated"] == 0  # once per step
        lines = notify_lines(hub, "memory")
        assert [line["flags"] for line in lines] == [["to-me", "dm", "open"], ["to-me", "dm", "open", "escalated"]]
        assert [line["id"] for line in lines] == [1, 2] and lines[1]["seq"] == 1 and lines[1]["owed"] == 1
        assert s["memory"].call("owed.list")["i_owe"][0]["escalations"] == 1
        hub.advance(45 * MINUTE)
        assert hub.call("hub.sweep")["escalated"] == 1  # the 1 h step
        hub.advance(3 * 3600)
        assert hub.call("hub.sweep")["escalated"] == 1  # the 4 h step, the last
        hub.advance(86400)
        assert hub.call("hub.sweep")["escalated"] == 0
        assert s["memory"].call("owed.list")["i_owe"][0]["escalations"] == 3


def test_a_discharged_debt_never_escalates(hub):
    with seats(hub, "lead", "memory") as s:
        send(s["lead"], "@memory", "review?", ask=True)
        send(s["memory"], "@lead", "done", reply_to="dm:lead--memory#1")
        hub.advance(5 * 3600)
        assert hub.call("hub.sweep")["escalated"] == 0


def test_debts_of_a_dormant_seat_wait_until_it_is_back(hub):
    key = hub.add_agent("analyst", liveness_mode="async", interval=10 * MINUTE)
    with seats(hub, "lead") as s:
        send(s["lead"], "@analyst", "thoughts?", ask=True)
        hub.advance(30 * MINUTE)  # dormant after 20 min of silence; the 15 min step is due
        assert hub.call("hub.sweep")["escalated"] == 0
        with hub.client("analyst", key) as analyst:
            analyst.call("agents.heartbeat")
            assert hub.call("hub.sweep")["escalated"] == 1
            assert analyst.call("owed.list")["i_owe"][0]["escalations"] == 1


def test_escalation_schedule_is_configurable(home):
    from tests.hubproc import Hub

    quick = Hub(home, "--escalate", "1m,2m").start()
    try:
        with seats(quick, "lead", "memory") as s:
            send(s["lead"], "@memory", "?", ask=True)
            quick.advance(5 * MINUTE)  # both steps passed: one ring, not two
            assert quick.call("hub.sweep")["escalated"] == 1
            assert s["memory"].call("owed.list")["i_owe"][0]["escalations"] == 2
    finally:
        quick.stop()


def test_a_reply_is_for_the_asker_and_a_debtor_who_left_can_still_answer(hub):
    with seats(hub, "lead", "memory") as s:
        s["lead"].call("channels.create", channel="ops")
        s["memory"].call("channels.join", channel="ops")
        send(s["lead"], "ops", "who takes it?", to=["memory"], ask=True)
        s["memory"].call("channels.leave", channel="ops")
        assert send(s["memory"], "@lead", "I do", reply_to="ops#1")["discharged"] == 1
        s["memory"].call("channels.join", channel="ops")
        send(s["lead"], "ops", "thanks")
        reply = send(s["memory"], "ops", "welcome", reply_to="ops#2")
        assert reply["to"] == ["lead"]
        lead_flags = {m["ref"]: m["flags"] for c in s["lead"].call("inbox.check")["channels"] for m in c["messages"]}
        assert lead_flags["ops#3"] == ["to-me"]


def test_a_debtor_who_left_can_read_the_ask_it_owes_and_no_other_message_there(hub, cli):
    """It may answer after leaving (above), and its inbox's owed block still lists the ask: so it may read
    it. It was refused, with no word of how to get at it. Any other message of the channel stays refused,
    in the same words whether it exists or not, and says how to join."""
    with seats(hub, "lead", "memory") as s:
        s["lead"].call("channels.create", channel="ops")
        s["memory"].call("channels.join", channel="ops")
        send(s["lead"], "ops", "who takes it?", body="the details", to=["memory"], ask=True)
        send(s["lead"], "ops", "not for you")
        s["memory"].call("channels.leave", channel="ops")
        assert [d["ref"] for d in s["memory"].call("owed.list")["i_owe"]] == ["ops#1"]
        read = cli("read", "--as", "memory", "ops#1", "--json")
        assert json.loads(read.stdout)["body"] == "the details"
        for ref in ("ops#2", "ops#9"):
            refused = cli("read", "--as", "memory", ref, code=1)
            assert "memory is not a member of ops; join it with `agora channel join ops --as memory`" in refused.stderr


def test_debts_of_an_expired_ephemeral_seat_wait_too(hub):
    key = hub.add_agent("scratch")  # ephemeral: expires after the 1 h TTL without heartbeats
    with seats(hub, "lead") as s:
        send(s["lead"], "@scratch", "still there?", ask=True)
        hub.advance(2 * 3600)
        assert hub.call("hub.sweep")["escalated"] == 0
        with hub.client("scratch", key) as scratch:
            scratch.call("agents.heartbeat")
            assert hub.call("hub.sweep")["escalated"] == 1


def test_an_escalation_comes_when_due_not_at_the_next_sweep(home):
    """The sweeper sleeps until the soonest due escalation when that is sooner than its interval;
    an ask wakes it to look. Real time, short schedule: the step is 2 s, the interval an hour."""
    from tests.hubproc import Hub, wait_for

    prompt = Hub(home, "--escalate", "2s", "--sweep-interval", "1h", "--liveness-flush", "1h").start()
    try:
        with seats(prompt, "lead", "memory") as s:
            s["memory"].call("agents.heartbeat", status="idle")  # committed: the hub now knows it
            send(s["lead"], "@memory", "review?", ask=True)
            asked = notify_lines(prompt, "memory")[0]["ts"]
            escalated = wait_for(lambda: [line for line in notify_lines(prompt, "memory") if "escalated" in line["flags"]],
                                 timeout=15, what="the escalation")
            assert 2.0 <= escalated[0]["ts"] - asked < 3.5
            # An escalation between sweeps is not a sweep: a restated heartbeat is still answered from memory.
            beat = s["memory"].call("agents.heartbeat", status="idle")
            assert stored_last_seen(prompt, "memory") < beat["last_seen"]
            assert s["memory"].call("owed.list")["i_owe"][0]["escalations"] == 1
    finally:
        prompt.stop()


def stored_last_seen(hub, agent_id: str) -> float:
    import apsw

    db = apsw.Connection(str(hub.home / "agora.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return db.execute("SELECT last_seen FROM agents WHERE id = ?", (agent_id,)).fetchone()[0]
    finally:
        db.close()


def test_an_escalation_that_fell_due_during_the_last_pass_is_not_left_for_the_next_sweep(tmp_path):
    """Review finding: the next due was looked for after the clock's now, not after the last pass,
    so a step falling due while a pass ran waited a whole sweep interval."""
    from agorad.domain.obligations import ESCALATION_GAP, escalation_due_in
    from agorad.store import connect
    from agorad.store.migrations import migrate

    db = connect(tmp_path / "d.db")
    migrate(db)
    db.execute("PRAGMA foreign_keys = OFF")  # a bare debt row is all this query reads
    db.execute("INSERT INTO debts (message_pk, debtor_pk, asker_pk, created_at, due_at) VALUES (1, 2, 3, 0, 100.0)")
    assert escalation_due_in(db, after=99.0, now=100.5) == ESCALATION_GAP  # fell due during the pass: go now
    assert escalation_due_in(db, after=100.0, now=100.5) is None  # the pass at 100 escalated it or left it waiting
    assert escalation_due_in(db, after=50.0, now=60.0) == 40.0
    db.close()


def test_a_dm_line_counts_what_its_seat_owes_whichever_way_the_send_read_it(hub):
    """A plain DM takes its peer's id and debts from the statement that found the DM (messages.send);
    an ask or a reply reads them after its own debts change. Either way the line is the database's."""
    with seats(hub, "lead", "memory", "qa") as s:
        send(s["lead"], "@memory", "review?", ask=True)   # memory owes lead 1 (an ask: read after its debt)
        send(s["qa"], "@memory", "fyi")                   # plain: memory still owes 1
        send(s["lead"], "@memory", "and this?", ask=True)  # memory owes 2
        send(s["qa"], "@memory", "ping")                  # plain: 2
        send(s["memory"], "@lead", "done", reply_to="dm:lead--memory#1")  # a reply discharges one: 1
        send(s["qa"], "@memory", "again")                 # plain: 1
        lines = notify_lines(hub, "memory")
        assert [(line["id"], line["owed"]) for line in lines] == [(1, 1), (2, 1), (3, 2), (4, 2), (5, 1)]
        send(s["qa"], "@lead", "first to lead")          # a plain DM to a seat whose ids another DM moved
        assert [line["id"] for line in notify_lines(hub, "lead")] == [1, 2]


def test_removing_an_asker_releases_the_replies_owed_to_it_and_nothing_escalates(hub, cli):
    with seats(hub, "lead", "memory", "runtime", "gone") as s:
        send(s["gone"], "@memory", "review?", ask=True)
        send(s["gone"], "commons", "who takes #12?", to=["memory", "runtime"], ask_each=True)
        send(s["lead"], "@memory", "and mine?", ask=True)
        send(s["memory"], "@gone", "a question back", ask=True)
        assert len(owes(s["memory"])) == 3 and owes(s["runtime"]) == ["commons#1"]
        done = cli("agent", "rm", "gone")
        assert done.stdout.strip() == "removed gone; released 3 replies owed to it", done.stdout
        assert owes(s["memory"]) == ["dm:lead--memory#1"] and owes(s["runtime"]) == []  # the lead's ask stands
        assert s["memory"].call("owed.list")["owed_to_me"] == []  # the ask to gone went with it
        hub.advance(5 * 3600)
        assert hub.call("hub.sweep")["escalated"] == 1  # the lead's alone
        assert [line["title"] for line in notify_lines(hub, "memory") if "escalated" in line["flags"]] == ["and mine?"]
        assert json.loads(cli("agent", "rm", "lead", "--json").stdout)["released"] == 1
