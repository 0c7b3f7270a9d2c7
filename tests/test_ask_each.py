"""Asks with several addressees: --ask (the first reply discharges it for all), --ask-each (every
addressee owes its own reply), --decline (a debt settled on the record without an answer), and
asks keeping the rule they were made under."""

from __future__ import annotations

import json

import pytest

from agorad.surface.errors import InvalidParams
from tests.seats import seats, send


def owes(client) -> list[str]:
    return [d["ref"] for d in client.call("owed.list")["i_owe"]]


def owed_to(client) -> list[tuple[str, str]]:
    return [(d["ref"], d["debtor"]) for d in client.call("owed.list")["owed_to_me"]]


def test_ask_each_makes_every_addressee_owe_its_own_reply(hub):
    with seats(hub, "lead", "memory", "runtime", "quiet") as s:
        ask = send(s["lead"], "commons", "status of your part?", to=["memory", "runtime"], ask_each=True)
        assert ask["ask"] is True and ask["to"] == ["memory", "runtime"]
        assert [d["rule"] for d in s["memory"].call("owed.list")["i_owe"]] == ["each"]
        assert send(s["quiet"], "commons", "not asked", reply_to="commons#1")["discharged"] == 0
        assert send(s["memory"], "commons", "mine is done", reply_to="commons#1")["discharged"] == 1
        assert owes(s["memory"]) == [] and owes(s["runtime"]) == ["commons#1"]
        assert owed_to(s["lead"]) == [("commons#1", "runtime")]
        assert send(s["memory"], "commons", "and more", reply_to="commons#1")["discharged"] == 0
        assert send(s["runtime"], "commons", "mine too", reply_to="commons#1")["discharged"] == 1
        assert owed_to(s["lead"]) == []
        assert s["lead"].call("messages.read", ref="commons#1")["ask_rule"] == "each"


def test_a_plain_ask_still_closes_at_the_first_reply(hub):
    with seats(hub, "lead", "memory", "runtime") as s:
        send(s["lead"], "commons", "anyone?", to=["memory", "runtime"], ask=True, ask_each=False)
        assert [d["rule"] for d in s["lead"].call("owed.list")["owed_to_me"]] == ["any", "any"]
        assert send(s["memory"], "commons", "me", reply_to="commons#1")["discharged"] == 2
        assert owes(s["runtime"]) == []
        assert s["lead"].call("messages.read", ref="commons#1")["ask_rule"] == "any"


def test_a_decline_settles_only_the_decliners_debt_on_the_record(hub):
    with seats(hub, "lead", "memory", "runtime") as s:
        for ask_each in (True, False):  # whatever the ask's rule
            asked = send(s["lead"], "commons", "take #12?", to=["memory", "runtime"], ask=True, ask_each=ask_each)
            ref = asked["ref"]
            decline = send(s["runtime"], "commons", "not me: on leave", reply_to=ref, decline=True)
            assert decline["discharged"] == 1 and decline["to"] == ["lead"]
            assert ref not in owes(s["runtime"]) and ref in owes(s["memory"])
            assert owed_to(s["lead"]) == [(ref, "memory")]
            declined = s["lead"].call("owed.list")["declined_to_me"][0]
            assert (declined["ref"], declined["debtor"], declined["declined_by"]) == (ref, "runtime", decline["ref"])
            shown = s["lead"].call("messages.read", ref=decline["ref"])
            assert shown["declines"] == ref and f"declines: {ref}" in shown["fenced"]
            assert s["lead"].call("messages.read", ref=ref)["declines"] is None
            send(s["memory"], "commons", "mine", reply_to=ref)
            assert owed_to(s["lead"]) == []
        # A plain reply is no decline.
        assert s["lead"].call("messages.read", ref="commons#6")["declines"] is None
        assert len(s["lead"].call("owed.list")["declined_to_me"]) == 2


def test_a_decline_never_escalates_again(hub):
    with seats(hub, "lead", "memory") as s:
        send(s["lead"], "@memory", "review?", ask=True)
        send(s["memory"], "@lead", "no time", reply_to="dm:lead--memory#1", decline=True)
        hub.advance(5 * 3600)
        assert hub.call("hub.sweep")["escalated"] == 0


@pytest.mark.parametrize("who, params, says", [
    ("memory", {"reply_to": "commons#1"}, "not an ask"),                 # a plain message
    ("quiet", {"reply_to": "commons#2"}, "it asks nothing of you"),      # an ask of others
    ("lead", {"reply_to": "commons#2"}, "it asks nothing of you"),       # the asker's own ask
    ("runtime", {"reply_to": "commons#2"}, "already settled"),           # answered already
    ("memory", {}, "give reply_to"),                                     # nothing to decline
    ("memory", {"reply_to": "commons#2", "ask": True}, "cannot ask"),    # a decline that asks
    ("memory", {"reply_to": "commons#2", "ask_each": True}, "cannot ask"),
])
def test_a_bad_decline_is_refused_and_changes_nothing(hub, who, params, says):
    with seats(hub, "lead", "memory", "runtime", "quiet") as s:
        send(s["lead"], "commons", "just news")
        send(s["lead"], "commons", "who takes it?", to=["memory", "runtime"], ask_each=True)
        send(s["runtime"], "commons", "I do my part", reply_to="commons#2")
        with pytest.raises(InvalidParams) as caught:
            send(s[who], "commons", "no", decline=True, **params)
        assert caught.value.data["field"] == "decline" and says in caught.value.message
        assert owed_to(s["lead"]) == [("commons#2", "memory")]
        assert s["lead"].call("owed.list")["declined_to_me"] == []
        channel = next(c for c in s["lead"].call("channels.list")["channels"] if c["name"] == "commons")
        assert channel["head"] == 3


def test_asks_keep_the_rule_they_were_made_under(tmp_path):
    """Asks from before 0007 discharge for all at the first reply (the rule then), after the upgrade too."""
    from agorad.domain import obligations
    from agorad.store import connect, write
    from agorad.store.migrations import migrate

    db = connect(tmp_path / "agora.db")
    migrate(db, target=5)
    with write(db):
        for pk, agent in ((1, "lead"), (2, "memory"), (3, "runtime")):
            db.execute("INSERT INTO agents (pk, id, key_hash, liveness_mode, interval_s, created_at) "
                       "VALUES (?, ?, 'h', 'always-on', 60, 0)", (pk, agent))
        db.execute("INSERT INTO messages (pk, channel_pk, seq, sender_pk, sender, title, body, ask, created_at) "
                   "VALUES (1, 1, 1, 1, 'lead', 'who?', '', 1, 0)")
        db.execute("INSERT INTO messages (pk, channel_pk, seq, sender_pk, sender, title, body, created_at) "
                   "VALUES (2, 1, 2, 2, 'memory', 'me', '', 1)")
        db.executemany("INSERT INTO debts (message_pk, debtor_pk, asker_pk, created_at, due_at) VALUES (1, ?, 1, 0, 900)",
                       [(2,), (3,)])
    migrate(db)
    original = {"pk": 1, "sender_pk": 1}
    with write(db):
        assert obligations.discharge_by_reply(db, original, 2, 2, 1.0) == 2
    assert db.execute("SELECT COUNT(*) FROM debts WHERE discharged_at IS NULL").fetchone()[0] == 0
    db.close()


def test_ask_each_and_decline_on_the_command_line(hub, cli):
    for agent in ("lead", "memory", "runtime"):
        hub.add_agent(agent)
    out = cli("send", "--as", "lead", "commons", "--to", "memory,runtime", "--ask-each", "--title", "your parts?").stdout
    assert out.startswith("sent commons#1 to 2 agent(s) (for memory, runtime) asking each for a reply")
    assert "each: its own reply" in cli("owed", "--as", "memory").stdout
    out = cli("send", "--as", "runtime", "commons", "--reply-to", "commons#1", "--decline").stdout
    assert out == "sent commons#2 to 2 agent(s) (for lead); declined 1 debt(s)\n"
    assert "title: declined" in cli("read", "--as", "lead", "commons#2").stdout
    owed = cli("owed", "--as", "lead").stdout
    assert "owed to me (1):\n  commons#1  by memory" in owed
    assert "declined to me (newest 1):\n  commons#1  by runtime" in owed and "in commons#2" in owed
    assert json.loads(cli("owed", "--as", "lead", "--json").stdout)["declined_to_me"][0]["declined_by"] == "commons#2"
    assert "--decline needs --reply-to" in cli("send", "--as", "memory", "commons", "--decline", "x", code=2).stderr
    assert "not an ask" in cli("send", "--as", "memory", "commons", "--reply-to", "commons#2", "--decline", code=1).stderr
