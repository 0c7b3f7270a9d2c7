"""Phases: `phase:<track>` rows in a channel, set by compare-and-swap, leading the inbox after the owed block.

Only a channel's members (and the operator) set or list its phases; a stale version is a
`conflict` naming the current one and changes nothing; a phase is never a wake. Real hub, real
client, real CLI and listener.
"""

from __future__ import annotations

import pytest

from agorad.surface.errors import Conflict, Forbidden, InvalidParams, NotFound
from tests.quoted import unquoted
from tests.seats import seats, send
from tests.wakes import assert_rings_nobody


@pytest.fixture
def team(hub):
    """alice and bob in channel ops; carol only in commons."""
    with seats(hub, "alice", "bob", "carol") as s:
        s["alice"].call("channels.create", channel="ops")
        s["bob"].call("channels.join", channel="ops")
        yield s


def phase_set(client, track: str, stage: str, channel: str = "ops", **params) -> dict:
    return client.call("phases.set", channel=channel, track=track, stage=stage, **params)


def rows(client, **params) -> list[tuple]:
    return [(p["channel"], p["track"], p["stage"], p["version"]) for p in client.call("phases.list", **params)["phases"]]


def test_a_set_counts_versions_and_records_who_and_when(hub, team):
    first = phase_set(team["alice"], "release", "propose")
    assert first["changed"] and first["phase"]["version"] == 1 and first["phase"]["set_by"] == "alice"
    hub.advance(60)
    second = phase_set(team["bob"], "phase:release", "work")  # the `phase:` prefix names the same row
    assert (second["phase"]["version"], second["phase"]["set_by"]) == (2, "bob")
    assert second["phase"]["set_at"] - first["phase"]["set_at"] >= 60
    same = phase_set(team["alice"], "release", "work")
    assert (same["changed"], same["phase"]["version"], same["phase"]["set_by"]) == (False, 2, "bob")
    assert rows(team["alice"], channel="ops") == [("ops", "release", "work", 2)]


def test_compare_and_swap_on_the_version(hub, team):
    assert phase_set(team["alice"], "release", "propose", version=0)["phase"]["version"] == 1  # 0: a new track
    assert phase_set(team["bob"], "release", "open", version=1)["phase"]["version"] == 2
    with pytest.raises(Conflict) as stale:
        phase_set(team["alice"], "release", "gate", version=1)  # alice read version 1; bob moved it on
    assert stale.value.data["current_version"] == 2 and "at version 2, not 1" in stale.value.message
    with pytest.raises(Conflict):
        phase_set(team["alice"], "release", "gate", version=0)  # "new" is stale too
    assert rows(team["alice"], channel="ops") == [("ops", "release", "open", 2)]
    assert phase_set(team["alice"], "release", "gate", version=2)["phase"]["version"] == 3


@pytest.mark.parametrize("who, params, error", [
    ("alice", {"stage": "shipping"}, InvalidParams),                 # unknown stage
    ("alice", {"track": "Release!"}, InvalidParams),                 # not a track name
    ("alice", {"version": 1}, Conflict),                             # stale (the row is at 2)
    ("alice", {"version": -1}, InvalidParams),
    ("carol", {}, Forbidden),                                        # not a member of ops
    ("alice", {"channel": "nosuch"}, NotFound),                      # unknown channel
    ("carol", {"channel": "dm:alice--bob"}, NotFound),               # someone else's DM
    ("alice", {"colour": "red"}, InvalidParams),                     # unknown parameter
])
def test_bad_sets_change_nothing(hub, team, who, params, error):
    send(team["alice"], "@bob", "make the DM")
    phase_set(team["alice"], "release", "propose")
    phase_set(team["alice"], "release", "open")
    with pytest.raises(error) as refused:
        team[who].call("phases.set", **{"channel": "ops", "track": "release", "stage": "work", **params})
    if error is Forbidden:
        assert refused.value.data["rule"] == "channel.member"
    assert rows(team["bob"]) == [("ops", "release", "open", 2)]


def test_only_members_list_a_channels_phases(hub, team):
    phase_set(team["alice"], "release", "work")
    with pytest.raises(Forbidden):
        team["carol"].call("phases.list", channel="ops")
    assert rows(team["carol"]) == []  # no channel: the phases of the channels it is in
    with pytest.raises(NotFound):
        team["carol"].call("phases.list", channel="nosuch")
    with hub.client() as op:  # the operator sees every channel's, and may set them
        phase_set(op, "docs", "propose")
        assert rows(op) == [("ops", "docs", "propose", 1), ("ops", "release", "work", 1)]
        assert op.call("phases.list", channel="ops")["phases"][0]["set_by"] == "operator"


def test_open_phases_lead_the_inbox_after_the_owed_block(hub, team):
    team["carol"].call("channels.create", channel="qa")
    team["bob"].call("channels.join", channel="qa")
    phase_set(team["alice"], "release", "work")
    phase_set(team["alice"], "audit", "gate")
    phase_set(team["alice"], "old", "complete")  # complete: not open, not listed
    phase_set(team["carol"], "tests", "open", channel="qa")
    phase_set(team["carol"], "hidden", "open", channel="qa")
    phase_set(team["carol"], "hidden", "complete", channel="qa")
    inbox = team["bob"].call("inbox.check")
    assert [(p["channel"], p["track"], p["stage"]) for p in inbox["phases"]] == [
        ("ops", "audit", "gate"), ("ops", "release", "work"), ("qa", "tests", "open")]
    assert inbox["phases_total"] == 3
    assert [p["track"] for p in team["alice"].call("inbox.check")["phases"]] == ["audit", "release"]
    limited = team["bob"].call("inbox.check", limit=2)
    assert (len(limited["phases"]), limited["phases_total"]) == (2, 3)
    assert team["bob"].call("inbox.digest")["phases"] == inbox["phases"]
    assert rows(team["bob"], channel="ops")[1] == ("ops", "old", "complete", 1)  # the listing keeps complete ones


def test_agora_inbox_prints_charter_then_owed_then_phases_then_arrivals(hub, team, cli):
    send(team["alice"], "@bob", "review?", ask=True)
    send(team["alice"], "ops", "fyi")
    phase_set(team["alice"], "release", "work")
    with hub.client() as op:
        op.call("charters.set", text="rules")
    lines = unquoted(cli("inbox", "--as", "bob").stdout)
    heads = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert heads == ["CHARTER", "OWED", "PHASES", "dm:alice--bob", "ops"]
    assert lines[lines.index("PHASES (1): open in your channels") + 1].split()[:4] == ["ops", "phase:release", "work", "v1"]


def test_a_phase_change_is_never_a_wake(hub, team):
    assert not assert_rings_nobody(hub, "bob", lambda: phase_set(team["alice"], "audit", "open"))  # nothing to do
    send(team["alice"], "@bob", "review?", ask=True)
    assert_rings_nobody(hub, "bob", lambda: phase_set(team["alice"], "release", "work"))
    assert_rings_nobody(hub, "bob", lambda: phase_set(team["alice"], "release", "complete"))


def test_the_cli_sets_and_lists(hub, team, cli):
    assert cli("phase", "set", "ops", "release", "work", "--as", "alice").stdout == "ops phase:release work v1 set\n"
    refused = cli("phase", "set", "ops", "release", "gate", "--version", "0", "--as", "bob", code=1)
    assert "at version 1, not 0" in refused.stderr and "--version 1" in refused.stderr
    cli("phase", "set", "ops", "release", "gate", "--version", "1", "--as", "bob")
    assert "'shipping' is not one of" in cli("phase", "set", "ops", "release", "shipping", "--as", "bob", code=2).stderr
    assert "not a member of ops" in cli("phase", "set", "ops", "release", "work", "--as", "carol", code=1).stderr
    table = cli("phase", "ls", "--as", "bob").stdout.splitlines()
    assert table[0].split()[:4] == ["CHANNEL", "PHASE", "STAGE", "VERSION"]
    assert table[1].split()[:5] == ["ops", "phase:release", "gate", "2", "bob"]
    assert '"stage": "gate"' in cli("phase", "ls", "ops", "--as", "alice", "--json").stdout
    assert cli("phase", "ls", "--as", "carol").stdout == "no phases\n"


def test_the_open_phase_lookup_walks_the_partial_index(tmp_path):
    """inbox.check runs it on every check: only the open phases' partial index is scanned, never `phases`."""
    from agorad.store.phases import OPEN_OF_MEMBER
    from tests.test_charters import plan

    steps = plan(tmp_path, OPEN_OF_MEMBER, (1,))
    assert [step for step in steps if step.startswith("SCAN")] == ["SCAN p USING INDEX phases_open"], steps
    assert any(step.startswith("SEARCH m ") for step in steps) and any(step.startswith("SEARCH c ") for step in steps)
