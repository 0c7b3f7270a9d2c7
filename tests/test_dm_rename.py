"""A DM follows a rename: it takes the new canonical name, and its old name keeps working for refs."""

from __future__ import annotations

import json

import pytest

from agorad.surface.errors import Conflict, NotFound
from tests.listenproc import fields, listen_once
from tests.seats import seats, send, unread_refs


def dm_names(client) -> list[str]:
    return [c["name"] for c in client.call("channels.list")["channels"] if c["kind"] == "dm"]


def test_a_renamed_partys_dm_takes_the_new_name_and_old_refs_still_work(hub):
    with seats(hub, "a1", "b1") as s:
        send(s["a1"], "@b1", "one")
        send(s["b1"], "@a1", "can you?", ask=True)
        hub.call("agents.rename", old="b1", new="b2", reason="new role")
        assert dm_names(s["a1"]) == dm_names(s["b1"]) == ["dm:a1--b2"]
        assert send(s["a1"], "@b2", "three")["ref"] == "dm:a1--b2#3"  # seqs go on
        assert send(s["a1"], "dm:a1--b1", "four")["ref"] == "dm:a1--b2#4"  # the old name as a target
        # Refs written before the rename still read, ack and answer, under the new name.
        shown = s["b1"].call("messages.read", ref="dm:a1--b1#1")
        assert (shown["ref"], shown["title"]) == ("dm:a1--b2#1", "one")
        assert s["b1"].call("inbox.ack", ref="dm:a1--b1#1")["cursors"]["dm:a1--b1#1"]["channel"] == "dm:a1--b2"
        assert unread_refs(s["b1"]) == ["dm:a1--b2#3", "dm:a1--b2#4"]
        reply = send(s["a1"], "@b2", "yes", reply_to="dm:a1--b1#2")
        assert reply["discharged"] == 1
        assert s["b1"].call("messages.read", ref=reply["ref"])["reply_to_ref"] == "dm:a1--b2#2"


def test_notify_lines_and_wakes_name_the_new_dm(hub):
    with seats(hub, "a1", "b1") as s:
        send(s["a1"], "@b1", "before")
        listen_once(hub, "--as", "b1", "--max-wait", "1")  # a first arm: starts at the end
        hub.call("agents.rename", old="a1", new="c1", reason="r")  # the sorted order flips
        send(s["a1"], "@b1", "after")
        lines = [json.loads(line) for line in (hub.home / "b1-inbox.log").read_text().splitlines()]
        assert [line["channel"] for line in lines] == ["dm:a1--b1", "dm:b1--c1"]
        code, out, _ = listen_once(hub, "--as", "b1", "--debounce", "0", "--max-wait", "5")
        assert code == 2 and fields(out[1])["channels"] == "dm:b1--c1#2"


def test_chained_renames_and_a_rename_back(hub):
    with seats(hub, "a1", "b1") as s:
        send(s["a1"], "@b1", "one")
        hub.call("agents.rename", old="b1", new="b2", reason="r")
        hub.call("agents.rename", old="b2", new="b3", reason="r")
        assert dm_names(s["a1"]) == ["dm:a1--b3"]
        for old in ("dm:a1--b1#1", "dm:a1--b2#1"):
            assert s["a1"].call("messages.read", ref=old)["ref"] == "dm:a1--b3#1"
        hub.call("agents.rename", old="b3", new="b1", reason="back")
        assert dm_names(s["a1"]) == ["dm:a1--b1"]
        for old in ("dm:a1--b2#1", "dm:a1--b3#1", "dm:a1--b1#1"):
            assert s["a1"].call("messages.read", ref=old)["ref"] == "dm:a1--b1#1"


def test_a_name_left_by_a_removed_agent_is_not_taken_over(hub):
    """History outlives agents: dm:a1--b2 of a removed b2 keeps its name; the renamed pair gets `:2`."""
    with seats(hub, "a1", "b1", "b2") as s:
        send(s["a1"], "@b2", "to the first b2")
        hub.call("agents.remove", agent="b2")
        send(s["a1"], "@b1", "to b1")
        hub.call("agents.rename", old="b1", new="b2", reason="takes over")
        assert dm_names(s["a1"]) == ["dm:a1--b2", "dm:a1--b2:2"]
        assert s["a1"].call("messages.read", ref="dm:a1--b2#1")["title"] == "to the first b2"
        assert s["a1"].call("messages.read", ref="dm:a1--b1#1")["ref"] == "dm:a1--b2:2#1"
        assert send(s["a1"], "@b2", "hello again")["ref"] == "dm:a1--b2:2#2"


def test_a_new_dm_never_takes_an_old_name(hub):
    """An old ref keeps meaning the message it meant, even when a new pair could claim its name."""
    with seats(hub, "a1", "b1") as s:
        send(s["a1"], "@b1", "old")
        hub.call("agents.rename", old="b1", new="b2", reason="r")
        hub.call("agents.remove", agent="b2")  # its alias b1 goes too: the id is free again
        key = hub.add_agent("b1")
        with hub.client("b1", key) as newcomer:
            assert send(newcomer, "@a1", "new")["ref"] == "dm:a1--b1:2#1"
        assert s["a1"].call("messages.read", ref="dm:a1--b1#1")["title"] == "old"


def test_an_outsider_learns_nothing_through_an_old_name(hub):
    with seats(hub, "a1", "b1", "c1") as s:
        send(s["a1"], "@b1", "private")
        hub.call("agents.rename", old="b1", new="b2", reason="r")
        for ref in ("dm:a1--b1#1", "dm:a1--b1#99"):
            with pytest.raises(NotFound) as caught:
                s["c1"].call("messages.read", ref=ref)
            assert "newest" not in caught.value.message


def test_a_refused_rename_leaves_the_dm_alone(hub):
    with seats(hub, "a1", "b1", "c1") as s:
        send(s["a1"], "@b1", "one")
        with pytest.raises(Conflict):
            hub.call("agents.rename", old="b1", new="c1", reason="r")
        assert dm_names(s["a1"]) == ["dm:a1--b1"]
        with pytest.raises(NotFound):
            s["a1"].call("messages.read", ref="dm:a1--c1#1")


@pytest.mark.parametrize("peer, renamed, before, after", [
    ("b1", "z1", "dm:a1--b1", "dm:b1--z1"),
    ("b--a1", "a0", "dm:a1--b--a1", "dm:a0--b--a1"),  # an id with `--` in it: the sorted order says which is which
])
def test_a_dm_whose_peer_was_removed_still_follows_the_rename(hub, peer, renamed, before, after):
    with seats(hub, "a1", peer) as s:
        assert send(s["a1"], f"@{peer}", "history")["ref"] == f"{before}#1"
        hub.call("agents.remove", agent=peer)
        hub.call("agents.rename", old="a1", new=renamed, reason="r")
        assert dm_names(s["a1"]) == [after]
        assert s["a1"].call("messages.read", ref=f"{before}#1")["ref"] == f"{after}#1"
