"""Claims: rows in a channel owned by an agent, changed by compare-and-swap on their version."""

from __future__ import annotations

import json

import pytest

from agorad.surface.errors import AgoraError, Conflict, Forbidden, InvalidParams, NotFound
from agorad.surface.vocab import HUB_SENDER
from tests.seats import seats


def open_claim(client, channel="commons", title="write the docs", **params) -> dict:
    return client.call("claims.open", channel=channel, title=title, **params)


def shown_without_clock(client, ref="claim:1") -> dict:
    shown = client.call("claims.show", ref=ref)
    del shown["now"]
    return shown


def refused(call, error=AgoraError) -> AgoraError:
    with pytest.raises(error) as caught:
        call()
    return caught.value


def test_a_claim_is_opened_by_its_owner_and_listed_and_shown(hub):
    with seats(hub, "alice", "bob") as s:
        claim = open_claim(s["alice"], cadence_minutes=45)
        assert (claim["ref"], claim["channel"], claim["owner"], claim["state"], claim["version"]) == \
            ("claim:1", "commons", "alice", "open", 1)
        assert claim["cadence_minutes"] == 45 and claim["link"] is None and claim["receipts"] == 0
        second = open_claim(s["bob"], title="review", link="claim:1")
        assert second["link"] == "claim:1"
        assert [c["ref"] for c in s["bob"].call("claims.list")["claims"]] == ["claim:1", "claim:2"]
        assert [c["ref"] for c in s["bob"].call("claims.list", owner="alice")["claims"]] == ["claim:1"]
        shown = s["bob"].call("claims.show", ref="claim:1")
        assert shown["title"] == "write the docs" and shown["receipts_shown"] == []


def test_receipts_are_appended_by_the_owner_and_leave_the_version(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        first = s["alice"].call("claims.receipt", ref="claim:1", text="outline done")
        second = s["alice"].call("claims.receipt", ref="claim:1", text="two sections written")
        assert (first["receipt"], second["receipt"], second["version"], second["receipts"]) == (1, 2, 1, 2)
        shown = s["alice"].call("claims.show", ref="claim:1")
        assert [r["text"] for r in shown["receipts_shown"]] == ["outline done", "two sections written"]
        assert shown["last_receipt_at"] == shown["receipts_shown"][-1]["created_at"]


def test_every_update_is_a_compare_and_swap_on_the_version(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        changed = s["alice"].call("claims.update", ref="claim:1", version=1, title="write the man pages")
        assert (changed["version"], changed["changed"]) == (2, ["title"])
        parked = s["alice"].call("claims.park", ref="claim:1", version=2)
        assert (parked["state"], parked["version"]) == ("parked", 3)
        reopened = s["alice"].call("claims.update", ref="claim:1", version=3, state="open")
        done = s["alice"].call("claims.done", ref="claim:1", version=reopened["version"])
        assert (done["state"], done["version"]) == ("done", 5)


@pytest.mark.parametrize("method, params", [
    ("claims.update", {"title": "stale"}),
    ("claims.park", {}),
    ("claims.done", {}),
])
def test_a_stale_version_is_a_conflict_naming_the_current_one_and_changes_nothing(hub, method, params):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        s["alice"].call("claims.update", ref="claim:1", version=1, title="newer")
        before = shown_without_clock(s["alice"])
        error = refused(lambda: s["alice"].call(method, ref="claim:1", version=1, **params), Conflict)
        assert error.data == {"field": "version", "current_version": 2, "ref": "claim:1"}
        assert "version 2" in error.message
        assert shown_without_clock(s["alice"]) == before


@pytest.mark.parametrize("method, params", [("claims.update", {"title": "x"}), ("claims.park", {}), ("claims.done", {})])
@pytest.mark.parametrize("version", [0, -1])
def test_a_version_no_claim_can_have_is_invalid_params_as_for_charters_and_phases(hub, method, params, version):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        before = shown_without_clock(s["alice"])
        error = refused(lambda: s["alice"].call(method, ref="claim:1", version=version, **params), InvalidParams)
        assert error.data["field"] == "version" and "1 or more" in error.message
        assert shown_without_clock(s["alice"]) == before


def test_an_update_that_changes_nothing_keeps_the_version(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"], title="same")
        result = s["alice"].call("claims.update", ref="claim:1", version=1, title="same")
        assert (result["version"], result["changed"]) == (1, [])
        assert "nothing to change" in refused(lambda: s["alice"].call("claims.update", ref="claim:1", version=1),
                                              InvalidParams).message


@pytest.mark.parametrize("minutes", [0, 1, 29, -5])
def test_a_cadence_under_the_floor_is_refused_and_nothing_is_opened(hub, minutes):
    with seats(hub, "alice") as s:
        error = refused(lambda: open_claim(s["alice"], cadence_minutes=minutes), InvalidParams)
        assert error.data["field"] == "cadence_minutes" and error.data["floor"] == 30
        assert s["alice"].call("claims.list")["claims"] == []
        open_claim(s["alice"], cadence_minutes=30)  # the floor itself is allowed
        refused(lambda: s["alice"].call("claims.update", ref="claim:1", version=1, cadence_minutes=29), InvalidParams)
        assert s["alice"].call("claims.show", ref="claim:1")["cadence_minutes"] == 30


def test_the_operator_may_set_a_cadence_and_the_owner_may_remove_it(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        set_by_operator = hub.call("claims.update", ref="claim:1", version=1, cadence_minutes=60)
        assert (set_by_operator["cadence_minutes"], set_by_operator["version"]) == (60, 2)
        removed = s["alice"].call("claims.update", ref="claim:1", version=2, cadence_minutes="none")
        assert (removed["cadence_minutes"], removed["remind_at"]) == (None, None)
        refused(lambda: s["alice"].call("claims.update", ref="claim:1", version=3, cadence_minutes="soon"), InvalidParams)


def test_a_receipt_on_someone_elses_claim_is_forbidden_and_records_nothing(hub):
    with seats(hub, "alice", "bob") as s:
        open_claim(s["alice"])
        error = refused(lambda: s["bob"].call("claims.receipt", ref="claim:1", text="mine now"), Forbidden)
        assert error.data == {"rule": "claim.owner", "owner": "alice"}
        assert s["alice"].call("claims.show", ref="claim:1")["receipts"] == 0
        error = refused(lambda: s["bob"].call("claims.update", ref="claim:1", version=1, title="mine"), Forbidden)
        assert error.data["rule"] == "claim.owner"
        refused(lambda: s["bob"].call("claims.park", ref="claim:1", version=1), Forbidden)
        assert s["alice"].call("claims.show", ref="claim:1")["version"] == 1


def test_a_claim_in_a_channel_the_caller_is_not_in_is_refused(hub):
    with seats(hub, "alice", "bob") as s:
        s["alice"].call("channels.create", channel="dev")
        error = refused(lambda: open_claim(s["bob"], channel="dev"), Forbidden)
        assert error.data["rule"] == "channel.member" and "agora channel join dev" in error.message
        open_claim(s["alice"], channel="dev")
        assert refused(lambda: s["bob"].call("claims.show", ref="claim:1"), Forbidden).data["rule"] == "channel.member"
        refused(lambda: s["bob"].call("claims.list", channel="dev"), Forbidden)
        assert s["bob"].call("claims.list")["claims"] == []  # listing shows only the caller's channels
        refused(lambda: open_claim(s["bob"], link="claim:1"), Forbidden)  # nor may it link to one
        assert s["bob"].call("claims.list", state="open")["claims"] == []
        assert [c["ref"] for c in hub.call("claims.list")["claims"]] == ["claim:1"]  # the operator sees all


def test_a_claim_in_someone_elses_dm_does_not_exist_for_an_outsider(hub):
    with seats(hub, "alice", "bob", "eve") as s:
        s["alice"].call("messages.send", target="@bob", title="hi")
        open_claim(s["alice"], channel="dm:alice--bob")
        assert s["bob"].call("claims.show", ref="claim:1")["owner"] == "alice"
        refused(lambda: s["eve"].call("claims.show", ref="claim:1"), NotFound)
        refused(lambda: open_claim(s["eve"], channel="dm:alice--bob"), NotFound)


@pytest.mark.parametrize("params, error, field", [
    ({"channel": "commons", "title": ""}, InvalidParams, "title"),
    ({"channel": "commons", "title": "two\nlines"}, InvalidParams, "title"),
    ({"channel": "nowhere", "title": "x"}, NotFound, "channel"),
    ({"channel": "commons", "title": "x", "link": "claim:9"}, NotFound, "link"),
    ({"channel": "commons", "title": "x", "link": "commons#1"}, InvalidParams, "link"),
    ({"channel": "commons", "title": "x", "cadence_minutes": "30"}, InvalidParams, "cadence_minutes"),
    ({"channel": "commons", "title": "x", "owner": "bob"}, InvalidParams, "owner"),
])
def test_bad_opens_are_refused_precisely_and_open_nothing(hub, params, error, field):
    with seats(hub, "alice") as s:
        assert refused(lambda: s["alice"].call("claims.open", **params), error).data["field"] == field
        assert hub.call("claims.list")["claims"] == []


def test_bad_refs_and_states(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"])
        assert refused(lambda: s["alice"].call("claims.show", ref="1"), InvalidParams).data["field"] == "ref"
        assert refused(lambda: s["alice"].call("claims.show", ref="claim:7"), NotFound).data["field"] == "ref"
        refused(lambda: s["alice"].call("claims.update", ref="claim:1", version=1, state="paused"), InvalidParams)
        refused(lambda: s["alice"].call("claims.update", ref="claim:1", version=1, link="claim:1"), InvalidParams)
        refused(lambda: s["alice"].call("claims.list", state="closed"), InvalidParams)
        refused(lambda: hub.call("claims.receipt", ref="claim:1", text="x"))  # an agent's own act
        refused(lambda: s["alice"].call("claims.receipt", ref="claim:1", text="  "), InvalidParams)
        assert s["alice"].call("claims.show", ref="claim:1")["version"] == 1


def test_links_follow_and_can_be_removed(hub):
    with seats(hub, "alice") as s:
        open_claim(s["alice"], title="epic")
        open_claim(s["alice"], title="part")
        linked = s["alice"].call("claims.update", ref="claim:2", version=1, link="claim:1")
        assert (linked["link"], linked["changed"]) == ("claim:1", ["link"])
        unlinked = s["alice"].call("claims.update", ref="claim:2", version=2, link="none")
        assert unlinked["link"] is None


def test_removing_an_agent_removes_its_claims_and_versions_the_claims_that_linked_to_them(hub):
    with seats(hub, "alice", "dave") as s:
        open_claim(s["dave"], title="epic")
        open_claim(s["alice"], title="part")
        s["alice"].call("claims.update", ref="claim:2", version=1, link="claim:1")
        hub.call("agents.remove", agent="dave")
        refused(lambda: s["alice"].call("claims.show", ref="claim:1"), NotFound)
        part = s["alice"].call("claims.show", ref="claim:2")
        assert (part["link"], part["version"]) == (None, 3)  # the lost link is a change: a stale write conflicts
        refused(lambda: s["alice"].call("claims.update", ref="claim:2", version=2, title="stale"), Conflict)


def test_the_hub_senders_id_cannot_be_registered_or_taken(hub):
    error = refused(lambda: hub.add_agent(HUB_SENDER), Conflict)
    assert error.data["field"] == "agent" and HUB_SENDER in error.message
    hub.add_agent("someone")
    assert refused(lambda: hub.call("agents.rename", old="someone", new=HUB_SENDER, reason="x"), Conflict).data["field"] == "new"


# --- the CLI ---------------------------------------------------------------------------------

def test_cli_claim_round_trip(hub, cli):
    hub.add_agent("alice")
    out = cli("claim", "open", "commons", "write the docs", "--cadence", "45m", "--as", "alice").stdout
    assert out == "opened claim:1 in commons (open, version 1, cadence 45m)\n"
    assert cli("claim", "receipt", "claim:1", "outline done", "--as", "alice").stdout == "receipt 1 on claim:1\n"
    out = cli("claim", "update", "claim:1", "--version", "1", "--title", "write the man pages", "--as", "alice").stdout
    assert out == "changed title of claim:1 in commons (open, version 2, cadence 45m)\n"
    listed = cli("claim", "ls", "--as", "alice").stdout.splitlines()
    assert listed[0].split() == ["CLAIM", "CHANNEL", "OWNER", "STATE", "CADENCE", "RECEIPT", "VERSION", "TITLE"]
    assert listed[1].split()[:5] == ["claim:1", "commons", "alice", "open", "45m"]
    shown = cli("claim", "show", "claim:1", "--as", "alice").stdout
    assert "claim:1  write the man pages" in shown and "1. " in shown and "outline done" in shown
    assert cli("claim", "park", "claim:1", "--version", "2", "--as", "alice").stdout.startswith("set claim:1 in commons (parked")
    assert cli("claim", "done", "claim:1", "--version", "3").stdout.startswith("set claim:1 in commons (done")  # the operator


def test_cli_claim_update_names_what_changed_by_its_options_words(hub, cli):
    hub.add_agent("alice")
    cli("claim", "open", "commons", "write the docs", "--cadence", "45m", "--as", "alice")
    out = cli("claim", "update", "claim:1", "--version", "1", "--cadence", "1h", "--title", "docs", "--as", "alice").stdout
    assert out == "changed cadence, title of claim:1 in commons (open, version 2, cadence 1h)\n"
    assert cli("claim", "update", "claim:1", "--version", "2", "--cadence", "none", "--as", "alice").stdout == \
        "changed cadence of claim:1 in commons (open, version 3)\n"


def test_cli_claim_json(hub, cli):
    hub.add_agent("alice")
    opened = json.loads(cli("claim", "open", "commons", "x", "--as", "alice", "--json").stdout)
    assert opened["ref"] == "claim:1" and opened["cadence_minutes"] is None
    receipt = json.loads(cli("claim", "receipt", "claim:1", "-", "--as", "alice", "--json", input="step one\n").stdout)
    assert (receipt["receipt"], receipt["discharged"]) == (1, 0)
    updated = json.loads(cli("claim", "update", "claim:1", "--version", "1", "--cadence", "1h", "--json").stdout)
    assert (updated["cadence_minutes"], updated["changed"]) == (60, ["cadence_minutes"])
    removed = json.loads(cli("claim", "update", "claim:1", "--version", "2", "--cadence", "none", "--json").stdout)
    assert removed["cadence_minutes"] is None
    listed = json.loads(cli("claim", "ls", "--state", "open", "--owner", "alice", "--json").stdout)
    assert [c["ref"] for c in listed["claims"]] == ["claim:1"]
    shown = json.loads(cli("claim", "show", "claim:1", "--json").stdout)
    assert [r["text"] for r in shown["receipts_shown"]] == ["step one"]
    parked = json.loads(cli("claim", "park", "claim:1", "--version", "3", "--json").stdout)
    assert parked["state"] == "parked"
    done = json.loads(cli("claim", "done", "claim:1", "--version", "4", "--as", "alice", "--json").stdout)
    assert done["state"] == "done"


def test_cli_bad_inputs_say_what_happened(hub, cli):
    hub.add_agent("alice")
    hub.add_agent("bob")
    cli("claim", "open", "commons", "x", "--as", "alice")
    cli("claim", "update", "claim:1", "--version", "1", "--title", "y", "--as", "alice")
    stale = cli("claim", "update", "claim:1", "--version", "1", "--title", "z", "--as", "alice", code=1)
    assert "claim:1 is at version 2, not 1" in stale.stderr
    floor = cli("claim", "open", "commons", "x", "--cadence", "10m", "--as", "alice", code=2)
    assert "'10m' is outside 30m to 365d" in floor.stderr  # in the option's words, before the hub is asked
    assert "whole minutes" in cli("claim", "open", "commons", "x", "--cadence", "90", "--as", "alice", code=2).stderr
    other = cli("claim", "receipt", "claim:1", "mine", "--as", "bob", code=1)
    assert "alice's claim" in other.stderr
    cli("channel", "create", "dev", "--as", "alice")
    outsider = cli("claim", "open", "dev", "x", "--as", "bob", code=1)
    assert "bob is not a member of dev" in outsider.stderr
    assert "nothing to change" in cli("claim", "update", "claim:1", "--version", "2", code=2).stderr
    assert [c["title"] for c in hub.call("claims.list")["claims"]] == ["y"]


def test_a_cadence_refusal_offers_only_cadences_its_command_takes(hub, cli):
    """Cadences are whole minutes, 30m at least: never 90 or 90s; and only update takes `none`."""
    hub.add_agent("alice")
    unknown = cli("claim", "open", "commons", "x", "--cadence", "1w", "--as", "alice", code=2).stderr
    assert "'1w' is not a cadence: give whole minutes, 30m at least, like 45m, 2h or 1d" in unknown
    assert "90" not in unknown and "none" not in unknown
    short = cli("claim", "open", "commons", "x", "--cadence", "10m", "--as", "alice", code=2).stderr
    assert "'10m' is outside 30m to 365d" in short and "none" not in short
    with hub.client("alice") as alice:  # the hub's own refusal, for a client that sends minutes
        with pytest.raises(InvalidParams, match="at least 30 minutes") as refused:
            alice.call("claims.open", channel="commons", title="x", cadence_minutes=10)
        assert "none" not in refused.value.message
    assert "no cadence to remove" in cli("claim", "open", "commons", "x", "--cadence", "none", "--as", "alice",
                                         code=2).stderr
    huge = cli("claim", "open", "commons", "x", "--cadence", "99999999999999999999h", "--as", "alice", code=2).stderr
    assert "is outside 30m to 365d" in huge and "whole minutes" not in huge  # (it said "not whole minutes")
    assert "no link to remove" in cli("claim", "open", "commons", "x", "--link", "none", "--as", "alice",
                                      code=2).stderr  # it was taken as no link, silently
    cli("claim", "open", "commons", "x", "--cadence", "45m", "--as", "alice")
    update = ("claim", "update", "claim:1", "--version", "1", "--as", "alice", "--cadence")
    unknown = cli(*update, "1w", code=2).stderr
    assert "like 45m, 2h or 1d; or none to remove the cadence" in unknown and "90" not in unknown
    assert "outside 30m to 365d; or none to remove the cadence" in cli(*update, "10m", code=2).stderr
    assert cli(*update, "none").stdout.startswith("changed ")


def test_a_join_hint_names_the_seat_that_must_join(hub, cli):
    for agent in ("alice", "carol"):
        hub.add_agent(agent)
    cli("channel", "create", "ops", "--as", "alice")
    cli("claim", "open", "ops", "deploy", "--as", "alice")
    hint = "join it with `agora channel join ops --as carol`"
    for command in (("claim", "open", "ops", "x"), ("phase", "set", "ops", "release", "work", "--version", "0"),
                    ("claim", "ls", "--channel", "ops"), ("claim", "show", "claim:1")):
        refused = cli(*command, "--as", "carol", code=1).stderr
        assert "carol is not a member of ops" in refused and hint in refused, command
    assert hint in cli("channel", "create", "ops", "--as", "carol", code=1).stderr
    assert "join" not in cli("channel", "create", "ops", code=1).stderr  # the operator joins no channel
    cli("channel", "join", "ops", "--as", "carol")  # the hint, followed, is all it takes
    assert "claim:1" in cli("claim", "ls", "--channel", "ops", "--as", "carol").stdout
    # A channel that does not exist: the hint makes it with the agent in it; the operator's, without.
    assert "create it with `agora channel create dev --as carol`" in cli("claim", "open", "dev", "x", "--as", "carol",
                                                                           code=1).stderr
    assert "create it with `agora channel create dev`)" in cli("claim", "ls", "--channel", "dev", code=1).stderr
    # A name no channel can have gets the rule, not a create its hint would have refused (a review).
    cli("channel", "create", "ops2", "--as", "carol")
    assert "no channel 'Ops2' (channel names are lower case: 'ops2')" in cli(
        "claim", "open", "Ops2", "x", "--as", "carol", code=1).stderr
    for name in ("Dev", "dev x", "commons#1"):
        refused = cli("claim", "ls", "--channel", name, code=1).stderr
        assert f"no channel {name!r} (no channel can be named so: 1-64 of a-z" in refused and "create" not in refused
    assert "(no channel can be named so" in cli("read", "commons#1#2", "--as", "carol", code=1).stderr


def test_an_owner_who_left_the_channel_still_answers_for_its_claim(hub):
    with seats(hub, "alice") as s:
        s["alice"].call("channels.create", channel="dev")
        open_claim(s["alice"], channel="dev", cadence_minutes=30)
        s["alice"].call("channels.leave", channel="dev")
        assert s["alice"].call("claims.receipt", ref="claim:1", text="handing over")["receipt"] == 1
        assert s["alice"].call("claims.done", ref="claim:1", version=1)["state"] == "done"


def test_an_owner_who_left_the_channel_still_lists_its_claim_and_no_one_elses_there(hub, cli):
    """A review: the owner's claim left its own listing with the channel, while show, receipt and
    done still worked for it; the listing shows what `claims.show` does (member or owner)."""
    with seats(hub, "alice", "bob", "carol") as s:
        s["alice"].call("channels.create", channel="dev")
        s["bob"].call("channels.join", channel="dev")
        open_claim(s["alice"], channel="dev")
        open_claim(s["bob"], channel="dev")
    cli("channel", "leave", "dev", "--as", "alice")
    listed = cli("claim", "ls", "--as", "alice").stdout.splitlines()
    assert [line.split()[:3] for line in listed[1:]] == [["claim:1", "dev", "alice"]]
    assert "claim:1" in cli("claim", "ls", "--channel", "dev", "--as", "alice").stdout
    assert "claim:2" not in cli("claim", "ls", "--channel", "dev", "--as", "alice").stdout
    assert json.loads(cli("claim", "ls", "--owner", "alice", "--as", "alice", "--json").stdout)["claims"][0]["ref"] \
        == "claim:1"
    assert "carol is not a member of dev" in cli("claim", "ls", "--channel", "dev", "--as", "carol", code=1).stderr
    assert cli("claim", "ls", "--as", "carol").stdout == "CLAIM  CHANNEL  OWNER  STATE  CADENCE  RECEIPT  VERSION  TITLE\n"


def test_claims_list_pages_after_a_claim_and_says_whether_more_follow(hub):
    with seats(hub, "alice") as s:
        for n in range(5):
            open_claim(s["alice"], title=f"task {n}")
        first = s["alice"].call("claims.list", limit=2)
        assert ([c["ref"] for c in first["claims"]], first["more"]) == (["claim:1", "claim:2"], True)
        last = s["alice"].call("claims.list", limit=3, after="claim:2")
        assert ([c["ref"] for c in last["claims"]], last["more"]) == (["claim:3", "claim:4", "claim:5"], False)
        past = s["alice"].call("claims.list", after="claim:5")
        assert (past["claims"], past["more"]) == ([], False)
        for after in ("5", "claim:0", "claim:x", ""):
            assert refused(lambda: s["alice"].call("claims.list", after=after), InvalidParams).data["field"] == "after"


def test_cli_claim_ls_says_when_more_claims_follow_and_how_to_list_them(hub, cli):
    """A review: past the 200 oldest, claim ls dropped every claim without a word."""
    with seats(hub, "alice") as s:
        for n in range(205):
            open_claim(s["alice"], title=f"task {n}")
    first = cli("claim", "ls", "--as", "alice")
    assert len(first.stdout.splitlines()) == 1 + 200
    assert first.stderr == "more claims follow: agora claim ls --as alice --after claim:200\n"
    rest = cli("claim", "ls", "--as", "alice", "--after", "claim:200")
    assert [line.split()[0] for line in rest.stdout.splitlines()[1:]] == [f"claim:{n}" for n in range(201, 206)]
    assert rest.stderr == ""
    paged = cli("claim", "ls", "--owner", "alice", "--state", "open", "--limit", "3", "--after", "claim:4", "--json")
    assert [c["ref"] for c in json.loads(paged.stdout)["claims"]] == ["claim:5", "claim:6", "claim:7"]
    assert json.loads(paged.stdout)["more"] is True
    assert paged.stderr == "more claims follow: agora claim ls --state open --owner alice --limit 3 --after claim:7\n"
    assert json.loads(cli("claim", "ls", "--after", "claim:203", "--json").stdout)["more"] is False


def test_cli_claim_receipt_refuses_stdin_that_is_not_utf8_as_agora_send_does(hub, cli):
    """A review: it reached the hub as a lone surrogate and exited 1 with the wire's words."""
    hub.add_agent("alice")
    cli("claim", "open", "commons", "x", "--as", "alice")
    refused = cli("claim", "receipt", "claim:1", "-", "--as", "alice", input=b"ok \xff", code=2).stderr
    assert "the text on stdin is not valid UTF-8 (byte 3)" in refused and "surrogate" not in refused
    assert hub.call("claims.show", ref="claim:1")["receipts"] == 0
