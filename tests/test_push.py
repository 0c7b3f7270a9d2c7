"""Live push: a subscribed connection receives each delivery, in order, without polling."""

from __future__ import annotations

import pytest

from agorad.surface.errors import Unauthorized, Unavailable
from tests.seats import seats, send


def test_subscriber_receives_deliveries_in_order(hub):
    with seats(hub, "memory", "runtime") as s:
        listener = s["runtime"]
        assert listener.call("inbox.subscribe") == {"subscribed": "runtime", "notification": "inbox.delivery", "newest": 0}
        for i in range(20):
            send(s["memory"], "@runtime" if i % 2 else "commons", f"n{i}")
        pushed = [listener.next_notification(timeout=5) for _ in range(20)]
        assert all(p["method"] == "inbox.delivery" and "id" not in p for p in pushed)
        assert [p["params"]["title"] for p in pushed] == [f"n{i}" for i in range(20)]
        assert [p["params"]["id"] for p in pushed] == list(range(1, 21))
        assert pushed[1]["params"]["flags"] == ["to-me", "dm"]
        # Calls still work on a subscribed connection; pushes that arrive meanwhile are kept, in order.
        send(s["memory"], "commons", "during")
        send(s["memory"], "commons", "during too")
        assert listener.call("hub.hello")["protocol"] == 1
        listener.call("inbox.check")
        assert [p["params"]["title"] for p in listener.notifications(timeout=0)] == ["during", "during too"]


def test_only_the_addressee_is_pushed_and_operator_cannot_subscribe(hub):
    with seats(hub, "memory", "runtime", "lead") as s:
        s["lead"].call("inbox.subscribe")
        send(s["memory"], "commons", "public")
        send(s["memory"], "@runtime", "private")
        send(s["memory"], "commons", "marker")
        # Pushes arrive in order, so "private" would have come between these two.
        titles = [s["lead"].next_notification(timeout=5)["params"]["title"] for _ in range(2)]
        assert titles == ["public", "marker"]
    with pytest.raises(Unauthorized):
        hub.call("inbox.subscribe")


def test_waiting_in_vain_returns_none_and_the_connection_stays_usable(hub):
    with seats(hub, "memory", "runtime") as s:
        runtime = s["runtime"]
        runtime.call("inbox.subscribe")
        assert runtime.next_notification(timeout=0) is None
        assert runtime.next_notification(timeout=0.05) is None
        assert list(runtime.notifications(timeout=0)) == []
        send(s["memory"], "@runtime", "after the wait")
        assert runtime.next_notification(timeout=5)["params"]["title"] == "after the wait"
        assert runtime.call("inbox.check")["unread"] == 1  # the stream is still in step


def test_the_iterator_follows_deliveries_as_they_come(hub):
    with seats(hub, "memory", "runtime") as s:
        s["runtime"].call("inbox.subscribe")
        send(s["memory"], "@runtime", "m0")
        seen = []
        for note in s["runtime"].notifications(timeout=5):  # each one sent only after the last arrived
            seen.append(note["params"]["title"])
            if len(seen) == 3:
                break
            send(s["memory"], "@runtime", f"m{len(seen)}")
        assert seen == ["m0", "m1", "m2"]
        assert list(s["runtime"].notifications(timeout=0.05)) == []  # it ends when one does not come in time


def test_a_closed_or_lost_connection_says_so(hub):
    with seats(hub, "memory", "runtime") as s:
        runtime = s["runtime"]
        runtime.call("inbox.subscribe")
        send(s["memory"], "@runtime", "kept")
        runtime.call("hub.hello")  # the push arrives before this reply and is kept
        runtime.close()
        # What already arrived is still handed out; then the closed connection is an error, not a hang.
        assert runtime.next_notification(timeout=5)["params"]["title"] == "kept"
        with pytest.raises(Unavailable, match="closed"):
            runtime.next_notification(timeout=5)
        s["memory"].call("inbox.check")
    with seats(hub, "other") as s:
        s["other"].call("inbox.subscribe")
        hub.stop()
        with pytest.raises(Unavailable, match="closed the connection"):
            s["other"].next_notification(timeout=10)
        with pytest.raises(Unavailable):
            list(s["other"].notifications())
