"""Cadence reminders: one reminder to a claim's owner when its declared cadence lapses, on the
owed ledger, jittered per claim, at most one standing per (channel, owner); on the hub's clock."""

from __future__ import annotations

import json

import pytest

from agorad.domain import cadence
from agorad.surface import settings
from agorad.surface.vocab import HUB_SENDER
from tests.listenproc import Listener
from tests.seats import seats, send

MINUTE = 60
LATEST = (1 + settings.CADENCE_JITTER) * 30 * MINUTE  # a 30 m cadence has reminded by then, whatever its jitter


def open_claim(client, channel="commons", title="write the docs", cadence_minutes=30) -> dict:
    return client.call("claims.open", channel=channel, title=title, cadence_minutes=cadence_minutes)


def reminded(hub) -> int:
    return hub.call("hub.sweep")["reminded"]


def notify_lines(hub, agent_id: str) -> list[dict]:
    path = hub.home / f"{agent_id}-inbox.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def owed(client) -> list[dict]:
    return client.call("owed.list")["i_owe"]


def test_a_lapsed_cadence_reminds_its_owner_once_at_cadence_plus_its_jitter(hub):
    with seats(hub, "alice", "bob") as s:
        claim = open_claim(s["alice"])
        due = claim["created_at"] + 30 * MINUTE + cadence.jitter(1, 30)
        assert claim["remind_at"] == pytest.approx(due)
        now = hub.advance(0)
        hub.advance(due - now - 1)
        assert reminded(hub) == 0  # a second early
        hub.advance(2)
        assert reminded(hub) == 1
        hub.advance(7 * 86400)
        assert reminded(hub) == 0  # ONE reminder, never another until a receipt
        [line] = notify_lines(hub, "alice")
        assert (line["sender"], line["channel"], line["flags"], line["owed"]) == \
            (HUB_SENDER, "commons", ["to-me", "open", "reminder"], 1)
        assert line["title"] == "reminder: claim:1 write the docs"
        assert notify_lines(hub, "bob") == []  # for its owner only
        assert s["alice"].call("claims.show", ref="claim:1")["reminder"] == "commons#1"


def test_a_reminder_rides_the_owed_ledger(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        hub.advance(LATEST)
        assert reminded(hub) == 1
        [debt] = owed(s["alice"])
        assert (debt["ref"], debt["asker"], debt["reminder"], debt["next_escalation_at"]) == \
            ("commons#1", HUB_SENDER, True, None)
        check = s["alice"].call("inbox.check")
        assert [d["ref"] for d in check["owed"]] == ["commons#1"]
        assert check["channels"][0]["messages"][0]["flags"] == ["to-me", "open", "reminder"]
        digest = s["alice"].call("inbox.digest")
        assert digest["i_owe_total"] == 1 and digest["owed_to_me_total"] == 0
        read = s["alice"].call("messages.read", ref="commons#1")
        assert read["sender"] == HUB_SENDER and read["ask"] and "agora claim receipt claim:1" in read["body"]
        hub.advance(86400)
        assert hub.call("hub.sweep")["escalated"] == 0  # a reminder never escalates


def test_the_wake_line_carries_the_reminder_and_the_debt(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        ear = Listener(hub, "--as", "alice", "--once", "--debounce", "0")
        ear.wait_for("AGORA_LISTEN armed")
        hub.advance(LATEST)
        assert reminded(hub) == 1
        wake = ear.wait_for("AGORA_WAKE")
        assert "channels=commons#1" in wake and "flags=to-me,open,reminder" in wake and " owed=1" in wake


def test_cli_inbox_owed_and_digest_show_the_reminder(hub, cli):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        hub.advance(LATEST)
        reminded(hub)
    inbox = cli("inbox", "--as", "alice").stdout
    assert "OWED (1)" in inbox and "commons#1  from agora-hub  reminder: claim:1 write the docs" in inbox
    assert "[to-me,open,reminder]" in inbox
    assert "from agora-hub" in cli("owed", "--as", "alice").stdout
    assert cli("digest", "--as", "alice").stdout.startswith("owe 1 |")


def test_an_agent_registered_as_agora_hub_before_the_id_was_reserved_asks_as_an_agent(hub):
    """Only the hub's own posts (no sender agent) are reminders: an ask from an agent that holds the id
    `agora-hub` from before the hub reserved it (made here by renaming an agent in the database, as an old
    database holds one) is an agent's ask, not flagged `reminder`."""
    import apsw

    key = hub.add_agent("legacy", liveness_mode="always-on")
    hub.add_agent("bob", liveness_mode="always-on")
    hub.stop()
    db = apsw.Connection(str(hub.home / "agora.db"))
    db.execute("UPDATE agents SET id = ? WHERE id = 'legacy'", (HUB_SENDER,))
    db.close()
    hub.start()
    with hub.client(HUB_SENDER, key) as legacy:
        send(legacy, "commons", "review #3?", ask=True, to=["bob"])
    with hub.client("bob") as bob:
        headline, = bob.call("inbox.check")["channels"][0]["messages"]
    assert headline["sender"] == HUB_SENDER and headline["flags"] == ["to-me", "open"], headline


def test_jitter_is_deterministic_bounded_and_spread():
    values = [cadence.jitter(pk, 30) for pk in range(1, 201)]
    assert values == [cadence.jitter(pk, 30) for pk in range(1, 201)]
    bound = settings.CADENCE_JITTER * 30 * MINUTE
    assert all(0 <= v < bound for v in values)
    assert len(set(values)) == len(values)
    assert max(values) - min(values) > 0.9 * bound  # the fleet spreads across the whole window
    assert cadence.jitter(7, 60) == pytest.approx(2 * cadence.jitter(7, 30))  # a share of the cadence


def test_claims_opened_together_fall_due_apart(hub):
    with seats(hub, "alice", "bob", "carol") as s:
        claims = [open_claim(s[who]) for who in ("alice", "bob", "carol")]
        times = [c["remind_at"] for c in claims]
        assert len(set(times)) == 3
        for c, pk in zip(claims, (1, 2, 3)):
            assert c["remind_at"] == pytest.approx(c["created_at"] + 30 * MINUTE + cadence.jitter(pk, 30))
        first, second, third = sorted(times)
        now = hub.advance(0)
        hub.advance(first - now + 0.01)
        assert reminded(hub) == (1 if second > first + 0.01 else 2)


def test_at_most_one_reminder_stands_per_channel_and_owner(hub):
    with seats(hub, "alice") as s:
        s["alice"].call("channels.create", channel="dev")
        open_claim(s["alice"], title="one")
        open_claim(s["alice"], title="two")
        open_claim(s["alice"], channel="dev", title="three")
        hub.advance(LATEST)
        assert reminded(hub) == 2  # one in commons, one in dev
        first = min((1, 2), key=lambda pk: cadence.jitter(pk, 30))  # the one due first, of the two in commons
        other = 3 - first
        titles = {1: "reminder: claim:1 one", 2: "reminder: claim:2 two"}
        assert sorted(d["title"] for d in owed(s["alice"])) == [titles[first], "reminder: claim:3 three"]
        assert reminded(hub) == 0  # the other waits while the first's stands
        assert s["alice"].call("claims.receipt", ref=f"claim:{first}", text="on it")["discharged"] == 1
        assert reminded(hub) == 1  # now the other's turn
        assert sorted(d["title"] for d in owed(s["alice"])) == [titles[other], "reminder: claim:3 three"]


@pytest.mark.parametrize("silence", ["park", "done", "remove-cadence"])
def test_park_done_and_removing_the_cadence_discharge_and_silence(hub, silence):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        hub.advance(LATEST)
        assert reminded(hub) == 1 and len(owed(s["alice"])) == 1
        if silence == "remove-cadence":
            s["alice"].call("claims.update", ref="claim:1", version=1, cadence_minutes="none")
        else:
            s["alice"].call(f"claims.{silence}", ref="claim:1", version=1)
        assert owed(s["alice"]) == []
        shown = s["alice"].call("claims.show", ref="claim:1")
        assert (shown["reminder"], shown["remind_at"]) == (None, None)
        hub.advance(30 * 86400)
        assert reminded(hub) == 0


@pytest.mark.parametrize("silence", ["park", "done", "remove-cadence"])
def test_a_claim_silenced_before_its_cadence_lapses_never_reminds(hub, silence):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        hub.advance(10 * MINUTE)
        if silence == "remove-cadence":
            s["alice"].call("claims.update", ref="claim:1", version=1, cadence_minutes="none")
        else:
            s["alice"].call(f"claims.{silence}", ref="claim:1", version=1)
        hub.advance(30 * 86400)
        assert reminded(hub) == 0 and notify_lines(hub, "alice") == []


def test_a_receipt_discharges_and_restarts_the_count(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        hub.advance(LATEST)
        assert reminded(hub) == 1
        result = s["alice"].call("claims.receipt", ref="claim:1", text="halfway")
        assert result["discharged"] == 1 and owed(s["alice"]) == []
        assert result["remind_at"] == pytest.approx(result["last_receipt_at"] + 30 * MINUTE + cadence.jitter(1, 30))
        hub.advance(20 * MINUTE)
        assert reminded(hub) == 0
        hub.advance(LATEST)
        assert reminded(hub) == 1  # the next lapse, the next one reminder


def test_receipts_within_the_cadence_never_remind(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        for _ in range(6):
            hub.advance(25 * MINUTE)
            s["alice"].call("claims.receipt", ref="claim:1", text="still going")
            assert reminded(hub) == 0


def test_a_claim_with_no_cadence_never_wakes_anyone(hub):
    with seats(hub, "alice", "bob") as s:
        s["alice"].call("claims.open", channel="commons", title="no promise")
        hub.advance(365 * 86400)
        assert reminded(hub) == 0
        assert notify_lines(hub, "alice") == notify_lines(hub, "bob") == []
        assert owed(s["alice"]) == []


def test_reopening_and_declaring_a_cadence_start_the_count_then(hub):
    with seats(hub, "alice") as s:
        s["alice"].call("claims.open", channel="commons", title="later")
        hub.advance(3 * 3600)
        declared = s["alice"].call("claims.update", ref="claim:1", version=1, cadence_minutes=30)
        assert declared["remind_at"] == pytest.approx(declared["updated_at"] + 30 * MINUTE + cadence.jitter(1, 30))
        assert reminded(hub) == 0  # hours of silence before the cadence existed do not count
        s["alice"].call("claims.park", ref="claim:1", version=2)
        hub.advance(5 * 3600)
        reopened = s["alice"].call("claims.update", ref="claim:1", version=3, state="open")
        assert reopened["quiet_since"] == reopened["updated_at"]
        assert reminded(hub) == 0
        hub.advance(LATEST)
        assert reminded(hub) == 1


def test_a_dormant_owners_reminder_waits_until_it_is_back(hub):
    key = hub.add_agent("alice", liveness_mode="async", interval="10m")
    with hub.client("alice", key) as alice:
        alice.call("agents.heartbeat", status="working", task="docs")
        open_claim(alice)
        hub.advance(LATEST)
        assert reminded(hub) == 0  # silent 2x its interval: dormant, nobody there to hear it
        alice.call("agents.heartbeat", status="working", task="docs")
        assert reminded(hub) == 1


def test_a_reply_to_the_reminder_discharges_it_like_any_ask(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        hub.advance(LATEST)
        assert reminded(hub) == 1
        assert send(s["alice"], "commons", "still on it", reply_to="commons#1")["discharged"] == 1
        assert owed(s["alice"]) == []
        hub.advance(7 * 86400)
        assert reminded(hub) == 0  # quiet until the next receipt
        s["alice"].call("claims.update", ref="claim:1", version=1, cadence_minutes=45)
        hub.advance(7 * 86400)
        assert reminded(hub) == 0  # a new cadence is not a new count: still quiet until the next receipt


def test_an_owner_who_left_the_channel_is_not_reminded_there_until_it_rejoins(hub):
    """A reminder is an ask addressed to the owner, who could not read it outside the channel."""
    with seats(hub, "alice") as s:
        s["alice"].call("channels.create", channel="work")
        open_claim(s["alice"], channel="work")
        s["alice"].call("channels.leave", channel="work")
        hub.advance(LATEST)
        assert reminded(hub) == 0 and owed(s["alice"]) == []
        s["alice"].call("channels.join", channel="work")
        assert reminded(hub) == 1 and [d["ref"] for d in owed(s["alice"])] == ["work#1"]


def test_shift_moves_every_pending_reminder_and_nothing_else(home):
    """The seam a hub pause uses: resume moves each open claim's count by the part of the pause it lived through."""
    from agorad.domain import claims
    from agorad.domain.policy import Actor
    from agorad.store import connect
    from agorad.store.migrations import migrate

    home.mkdir(parents=True)
    db = connect(home / "agora.db")
    migrate(db)
    db.execute("INSERT INTO agents (id, key_hash, liveness_mode, interval_s, status, meta, created_at) "
               "VALUES ('alice', 'x', 'always-on', 1800, 'idle', '{}', 0)")
    db.execute("INSERT INTO members (agent_pk, channel_pk, joined_at) VALUES (1, 1, 0)")
    alice = Actor(1, "alice", "always-on")
    timed = claims.open_claim(db, alice, "commons", "timed", 30, None, 1000.0)
    claims.open_claim(db, alice, "commons", "untimed", None, None, 1000.0)
    assert cadence.shift(db, 900.0, 1600.0) == 2  # both open claims' counts began before the pause
    assert claims.show(db, alice, "claim:1")["remind_at"] == pytest.approx(timed["remind_at"] + 600)  # its count began 100 s into it
    assert claims.show(db, alice, "claim:2")["remind_at"] is None
    assert claims.show(db, alice, "claim:2")["quiet_since"] == pytest.approx(1600.0)
    claims.open_claim(db, alice, "commons", "opened in a pause", 30, None, 2000.0)
    before = claims.show(db, alice, "claim:3")["remind_at"]
    cadence.shift(db, 1900.0, 2500.0)  # it lived through 500 s of that pause, not 600
    assert claims.show(db, alice, "claim:3")["remind_at"] == pytest.approx(before + 500)
    db.close()


def test_the_hubs_own_sweeper_posts_due_reminders(home):
    from tests.hubproc import Hub, wait_for

    hub = Hub(home, "--sweep-interval", "1s").start()
    try:
        with seats(hub, "alice") as s:
            open_claim(s["alice"])
            hub.advance(LATEST)
            [line] = wait_for(lambda: notify_lines(hub, "alice"), what="the sweeper's reminder")
            assert line["flags"] == ["to-me", "open", "reminder"]
            assert "reminded=1" in wait_for(lambda: [l for l in hub.log().splitlines() if "swept" in l],
                                            what="the sweep's log line")[0]
    finally:
        hub.stop()


def test_a_claim_in_a_dm_is_reminded_there_flagged_dm(hub):
    with seats(hub, "alice", "bob") as s:
        send(s["alice"], "@bob", "pairing on the migration?")
        open_claim(s["alice"], channel="dm:alice--bob")
        hub.advance(LATEST)
        assert reminded(hub) == 1
        line = notify_lines(hub, "alice")[-1]
        assert (line["channel"], line["seq"], line["flags"]) == ("dm:alice--bob", 2, ["to-me", "dm", "open", "reminder"])
        assert [d["ref"] for d in owed(s["alice"])] == ["dm:alice--bob#2"]
        assert owed(s["bob"]) == [] and [l["seq"] for l in notify_lines(hub, "bob")] == [1]


def test_a_pause_holds_reminders_and_its_resume_moves_them_later_by_the_time_paused(hub):
    """Pause silences reminders (issue #14: reminders stop) and a resume does not open onto a
    burst of the ones that fell due while paused: each comes as late as the pause lasted."""
    with seats(hub, "alice") as s:
        claim = open_claim(s["alice"])
        now = hub.advance(0)
        hub.call("hub.pause", reason="maintenance")
        hub.advance(LATEST + 3600)
        assert reminded(hub) == 0  # due long ago, held while paused
        paused_for = hub.advance(0) - now
        hub.call("hub.resume")
        assert reminded(hub) == 0  # not at once on resume
        moved = s["alice"].call("claims.show", ref="claim:1")["remind_at"]
        assert moved == pytest.approx(claim["remind_at"] + paused_for)
        hub.advance(moved - hub.advance(0) - 1)
        assert reminded(hub) == 0
        hub.advance(2)
        assert reminded(hub) == 1
