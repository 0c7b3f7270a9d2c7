"""Live push: a subscribed connection receives each delivery, in order, without polling."""

from __future__ import annotations

import json

import pytest

from agorad.surface.errors import Unauthorized
from tests.seats import seats, send


def test_subscriber_receives_deliveries_in_order(hub):
    with seats(hub, "memory", "runtime") as s:
        listener = s["runtime"]
        assert listener.call("inbox.subscribe") == {"subscribed": "runtime", "notification": "inbox.delivery"}
        for i in range(20):
            send(s["memory"], "@runtime" if i % 2 else "commons", f"n{i}")
        listener._sock.settimeout(5)
        pushed = [json.loads(listener._reader.readline()) for _ in range(20)]
        assert all(p["method"] == "inbox.delivery" and "id" not in p for p in pushed)
        assert [p["params"]["title"] for p in pushed] == [f"n{i}" for i in range(20)]
        assert [p["params"]["id"] for p in pushed] == list(range(1, 21))
        assert pushed[1]["params"]["flags"] == ["to-me", "dm"]
        # Calls still work on a subscribed connection; pushes that arrive meanwhile are kept.
        send(s["memory"], "commons", "during")
        assert listener.call("hub.hello")["protocol"] == 1
        listener.call("inbox.check")
        assert any(n["params"]["title"] == "during" for n in listener.notifications)


def test_only_the_addressee_is_pushed_and_operator_cannot_subscribe(hub):
    with seats(hub, "memory", "runtime", "lead") as s:
        s["lead"].call("inbox.subscribe")
        send(s["memory"], "commons", "public")
        send(s["memory"], "@runtime", "private")
        send(s["memory"], "commons", "marker")
        s["lead"]._sock.settimeout(5)
        # Pushes arrive in order, so "private" would have come between these two.
        titles = [json.loads(s["lead"]._reader.readline())["params"]["title"] for _ in range(2)]
        assert titles == ["public", "marker"]
    with pytest.raises(Unauthorized):
        hub.call("inbox.subscribe")
