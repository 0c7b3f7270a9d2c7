"""Inbox cursors: check, read-does-not-ack, ack one / up to / all, digest."""

from __future__ import annotations

import pytest

from agorad.surface.errors import InvalidParams, NotFound
from tests.seats import seats, send, unread_refs


def test_owed_block_comes_first_and_reading_does_not_ack(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "commons", "fyi")
        send(s["memory"], "@runtime", "review?", ask=True)
        inbox = s["runtime"].call("inbox.check")
        assert [d["ref"] for d in inbox["owed"]] == ["dm:memory--runtime#1"]
        assert inbox["unread"] == 2 and inbox["charter"] is None
        s["runtime"].call("messages.read", ref="commons#1")
        assert unread_refs(s["runtime"]) == ["commons#1", "dm:memory--runtime#1"]


def test_ack_one_out_of_order_then_the_cursor_swallows_it(hub):
    with seats(hub, "memory", "runtime") as s:
        for i in range(4):
            send(s["memory"], "commons", f"m{i}")
        assert s["runtime"].call("inbox.ack", ref="commons#3")["cursors"]["commons#3"]["cursor"] == 0
        assert unread_refs(s["runtime"]) == ["commons#1", "commons#2", "commons#4"]
        assert s["runtime"].call("inbox.check")["unread"] == 3
        s["runtime"].call("inbox.ack", ref="commons#1")
        assert s["runtime"].call("inbox.ack", ref="commons#2")["cursors"]["commons#2"]["cursor"] == 3
        assert unread_refs(s["runtime"]) == ["commons#4"]
        s["runtime"].call("inbox.ack", ref="commons#2")  # acking again changes nothing
        assert unread_refs(s["runtime"]) == ["commons#4"]


def test_ack_upto_and_all(hub):
    with seats(hub, "memory", "runtime") as s:
        for i in range(3):
            send(s["memory"], "commons", f"m{i}")
        send(s["memory"], "@runtime", "dm")
        assert s["runtime"].call("inbox.ack", upto="commons#2")["cursors"]["commons#2"]["cursor"] == 2
        assert unread_refs(s["runtime"]) == ["commons#3", "dm:memory--runtime#1"]
        s["runtime"].call("inbox.ack", upto="commons#1")  # cursors never move backwards
        assert unread_refs(s["runtime"]) == ["commons#3", "dm:memory--runtime#1"]
        s["runtime"].call("inbox.ack", all=True)
        assert unread_refs(s["runtime"]) == []


@pytest.mark.parametrize("params, error", [
    ({"ref": "commons#5"}, InvalidParams),
    ({"upto": "commons#5"}, InvalidParams),
    ({}, InvalidParams),
    ({"ref": "commons#1", "all": True}, InvalidParams),
    ({"ref": "commons"}, InvalidParams),
    ({"ref": "dm:memory--runtime#1"}, NotFound),  # someone else's DM does not exist for an outsider
])
def test_bad_acks_change_nothing(hub, params, error):
    with seats(hub, "memory", "runtime", "lead") as s:
        send(s["memory"], "commons", "one")
        send(s["memory"], "@runtime", "private")
        with pytest.raises(error):
            s["lead"].call("inbox.ack", **params)
        assert unread_refs(s["lead"]) == ["commons#1"]


def test_ack_never_discharges_a_debt(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "review?", ask=True)
        s["runtime"].call("inbox.ack", all=True)
        assert [d["ref"] for d in s["runtime"].call("owed.list")["i_owe"]] == ["dm:memory--runtime#1"]
        assert s["runtime"].call("inbox.check")["owed"]


def test_digest_counts_senders_and_latest_titles(hub):
    with seats(hub, "memory", "runtime", "lead") as s:
        for i in range(5):
            send(s["memory"], "commons", f"memory {i}")
        send(s["lead"], "commons", "lead speaks")
        send(s["lead"], "@runtime", "answer me", ask=True)
        digest = s["runtime"].call("inbox.digest")
        assert digest["unread"] == 7 and [d["ref"] for d in digest["i_owe"]] == ["dm:lead--runtime#1"]
        commons = next(c for c in digest["channels"] if c["channel"] == "commons")
        assert commons["unread"] == 6 and commons["senders"] == ["lead", "memory"]
        assert [m["title"] for m in commons["latest"]] == ["lead speaks", "memory 4", "memory 3"]
        assert [d["ref"] for d in s["lead"].call("inbox.digest")["owed_to_me"]] == ["dm:lead--runtime#1"]


def test_inbox_limit_caps_headlines_not_counts(hub):
    with seats(hub, "memory", "runtime") as s:
        for i in range(10):
            send(s["memory"], "commons", f"m{i}")
        inbox = s["runtime"].call("inbox.check", limit=3)
        assert inbox["unread"] == 10 and len(inbox["channels"][0]["messages"]) == 3
        with pytest.raises(InvalidParams):
            s["runtime"].call("inbox.check", limit=0)


def test_acking_several_is_all_or_nothing(hub):
    with seats(hub, "memory", "runtime") as s:
        for i in range(3):
            send(s["memory"], "commons", f"m{i}")
        with pytest.raises(InvalidParams, match="commons#7"):
            s["runtime"].call("inbox.ack", ref=["commons#1", "commons#7"])
        assert unread_refs(s["runtime"]) == ["commons#1", "commons#2", "commons#3"]
        s["runtime"].call("inbox.ack", ref=["commons#1", "commons#3"])
        assert unread_refs(s["runtime"]) == ["commons#2"]


def test_own_message_acked_singly_is_counted_once(hub):
    with seats(hub, "memory", "runtime") as s:
        s["memory"].call("channels.create", channel="ops")
        s["runtime"].call("channels.join", channel="ops")
        send(s["runtime"], "ops", "theirs 1")
        send(s["memory"], "ops", "mine")
        send(s["runtime"], "ops", "theirs 2")
        s["memory"].call("inbox.ack", ref="ops#2")  # its own message, above its cursor
        inbox = s["memory"].call("inbox.check")
        ops = next(c for c in inbox["channels"] if c["channel"] == "ops")
        assert ops["unread"] == len(ops["messages"]) == 2


def test_own_message_above_the_cursor_is_swallowed_when_the_cursor_reaches_it(hub):
    with seats(hub, "memory", "runtime") as s:
        s["memory"].call("channels.create", channel="ops")
        s["runtime"].call("channels.join", channel="ops")
        send(s["runtime"], "ops", "theirs 1")
        send(s["memory"], "ops", "mine")  # above memory's cursor (0): acked singly when sent
        send(s["runtime"], "ops", "theirs 2")
        assert [r for r in unread_refs(s["memory"]) if r.startswith("ops")] == ["ops#1", "ops#3"]
        cursor = s["memory"].call("inbox.ack", upto="ops#1")["cursors"]["ops#1"]["cursor"]
        assert cursor == 2  # the cursor took its own message with it
        assert [r for r in unread_refs(s["memory"]) if r.startswith("ops")] == ["ops#3"]


def test_the_owed_block_is_bounded_and_counts_the_rest(hub):
    with seats(hub, "memory", "runtime") as s:
        for i in range(7):
            send(s["memory"], "@runtime", f"q{i}", ask=True)
        inbox = s["runtime"].call("inbox.check", limit=3)
        assert inbox["owed_total"] == 7 and [d["title"] for d in inbox["owed"]] == ["q0", "q1", "q2"]
        digest = s["runtime"].call("inbox.digest")
        assert digest["i_owe_total"] == 7 and len(digest["i_owe"]) == 7
        assert s["memory"].call("inbox.digest")["owed_to_me_total"] == 7


def test_a_ref_named_twice_in_one_ack_is_acked_and_listed_once(hub):
    """A frame of 100,000 copies of one ref held the writer 2.7 s and listed every copy back."""
    with seats(hub, "memory", "runtime") as s:
        ref = send(s["memory"], "@runtime", "one")["ref"]
        done = s["runtime"].call("inbox.ack", ref=[ref] * 20_000)  # within the 1 MiB frame
        assert done["acked"] == [ref] and list(done["cursors"]) == [ref]


def test_an_important_check_past_its_limit_leaves_out_a_channel_with_nothing_important(hub):
    """agora-rpc(7): with `important`, a channel with no to-me, dm or open headline is left out. Once `limit`
    was filled every later channel was listed, empty, whether or not it held anything important (a review)."""
    with seats(hub, "memory", "runtime") as s:
        for name in ("alpha", "beta", "gamma"):
            s["memory"].call("channels.create", channel=name)
            s["runtime"].call("channels.join", channel=name)
        send(s["memory"], "alpha", "for you", to=["runtime"])
        send(s["memory"], "beta", "chatter")
        send(s["memory"], "gamma", "also for you", to=["runtime"])
        inbox = s["runtime"].call("inbox.check", limit=1, important=True)
        assert [(c["channel"], c["unread"], len(c["messages"])) for c in inbox["channels"]] == [
            ("alpha", 1, 1), ("gamma", 1, 0)]
