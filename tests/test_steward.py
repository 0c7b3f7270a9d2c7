"""The steward's report: stale claims, seats and debts, for the operator only; it sends nothing."""

from __future__ import annotations

import json

import pytest

from agorad.surface.errors import Forbidden, InvalidParams
from tests.seats import seats, send

MINUTE = 60


def report(hub, **params) -> dict:
    return hub.call("steward.report", **params)


def messages_and_notify_bytes(hub) -> tuple[int, int]:
    with hub.client() as op:
        messages = op.call("hub.status")["counts"]["messages"]
    return messages, sum(path.stat().st_size for path in hub.home.glob("*-inbox.log"))


def test_nothing_stale_on_a_fresh_hub(hub):
    with seats(hub, "alice") as s:
        s["alice"].call("claims.open", channel="commons", title="fresh", cadence_minutes=30)
        found = report(hub)
        assert (found["claims"], found["seats"], found["debts"], found["cadences"]) == ([], [], [], 2)


def test_only_the_operator_may_read_it(hub):
    with seats(hub, "alice") as s:
        with pytest.raises(Forbidden) as caught:
            s["alice"].call("steward.report")
        assert caught.value.data["rule"] == "steward.report"
        with pytest.raises(InvalidParams):
            report(hub, cadences=0)


def test_a_claim_with_no_receipt_for_n_cadences_is_stale(hub):
    with seats(hub, "alice") as s:
        s["alice"].call("claims.open", channel="commons", title="slow", cadence_minutes=30)
        s["alice"].call("claims.open", channel="commons", title="no cadence")
        hub.advance(59 * MINUTE)
        assert report(hub)["claims"] == []
        hub.advance(2 * MINUTE)
        [claim] = report(hub)["claims"]
        assert (claim["ref"], claim["why"], claim["owner"]) == ("claim:1", ["no-receipt"], "alice")
        assert claim["quiet_for"] >= 60 * MINUTE
        assert report(hub, cadences=3)["claims"] == []
        s["alice"].call("claims.receipt", ref="claim:1", text="back")
        assert report(hub)["claims"] == []


def test_a_dormant_owner_makes_its_claims_and_its_seat_stale(hub):
    key = hub.add_agent("alice", liveness_mode="async", interval="10m")
    with hub.client("alice", key) as alice:
        alice.call("agents.heartbeat", status="working", task="x")
        alice.call("claims.open", channel="commons", title="held")
        alice.call("claims.open", channel="commons", title="parked")
        alice.call("claims.park", ref="claim:2", version=1)
        hub.advance(25 * MINUTE)
        found = report(hub)
        assert [(c["ref"], c["why"]) for c in found["claims"]] == [("claim:1", ["owner-dormant"])]
        [seat] = found["seats"]
        assert (seat["agent"], seat["status"], seat["open_claims"], seat["owed"]) == ("alice", "dormant", 1, 0)


def test_an_expired_ephemeral_owner_is_reported(hub):
    with seats(hub, "eph", mode="ephemeral") as s:
        s["eph"].call("claims.open", channel="commons", title="forgotten")
        hub.advance(2 * 3600)
        found = report(hub)
        assert found["claims"][0]["why"] == ["owner-expired"]
        assert found["seats"][0]["expired"] is True


def test_debts_past_the_last_escalation_are_reported(hub):
    with seats(hub, "lead", "memory") as s:
        send(s["lead"], "@memory", "review?", ask=True)
        for step in (16 * MINUTE, 45 * MINUTE, 2 * 3600):
            hub.advance(step)
            hub.call("hub.sweep")
        assert report(hub)["debts"] == []  # the 4 h step still to come
        hub.advance(3600)
        hub.call("hub.sweep")
        [debt] = report(hub)["debts"]
        assert (debt["ref"], debt["debtor"], debt["asker"], debt["escalations"]) == ("dm:lead--memory#1", "memory", "lead", 3)


def test_a_reminder_is_never_reported_as_an_exhausted_debt_and_the_report_sends_nothing(hub):
    with seats(hub, "alice") as s:
        s["alice"].call("claims.open", channel="commons", title="slow", cadence_minutes=30)
        hub.advance(36 * MINUTE)
        assert hub.call("hub.sweep")["reminded"] == 1
        hub.advance(3 * 86400)

        def owed():
            return [(d["ref"], d["escalations"]) for d in s["alice"].call("owed.list")["i_owe"]]

        before = messages_and_notify_bytes(hub), owed()
        found = report(hub)
        assert found["debts"] == [] and found["claims"][0]["why"] == ["no-receipt"]
        assert (messages_and_notify_bytes(hub), owed()) == before


def test_cli_steward(hub, cli):
    with seats(hub, "alice") as s:
        s["alice"].call("claims.open", channel="commons", title="slow", cadence_minutes=30)
    assert cli("steward").stdout.splitlines()[-1] == "nothing looks stale"
    hub.advance(2 * 3600)
    text = cli("steward").stdout
    assert "claim:1  alice  commons  slow  [no-receipt]" in text
    found = json.loads(cli("steward", "--cadences", "3", "--json").stdout)
    assert [c["ref"] for c in found["claims"]] == ["claim:1"] and found["cadences"] == 3
    assert cli("steward", "--cadences", "0", code=2)
