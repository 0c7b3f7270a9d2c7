"""Urgency a seat can observe: `normal` rings the doorbell, `next_turn` waits quietly in the inbox.

A next_turn delivery is written to the notify file like every delivery (flagged
`next-turn`), but `agora listen` does not ring for it; its ask rings only once it
escalates. Real hub, real `agora listen` processes, real CLI.
"""

from __future__ import annotations

import json

import pytest

from tests.listenproc import Listener, fields, listen_once
from tests.quoted import unquoted
from tests.seats import seats, send

MINUTE = 60


@pytest.fixture
def pair(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "commons", "make the file")
        listen_once(hub, "--as", "runtime", "--max-wait", "1")  # a first arm: remembers the end of the file
        yield s


def notify_lines(hub, agent_id: str) -> list[dict]:
    return [json.loads(line) for line in (hub.home / f"{agent_id}-inbox.log").read_text().splitlines()]


def urgencies(client) -> dict[str, str]:
    return {m["ref"]: m["urgency"] for c in client.call("inbox.check")["channels"] for m in c["messages"]}


@pytest.mark.parametrize("filtering", [(), ("--important-only",)])
def test_next_turn_does_not_ring_and_normal_does(hub, pair, filtering):
    send(pair["memory"], "@runtime", "when you next look", urgency="next_turn")
    code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "1", *filtering)
    assert (code, lines[-1]) == (0, "AGORA_LISTEN ended reason=max-wait")
    assert not any(line.startswith("AGORA_WAKE") for line in lines)
    # Still delivered: the notify file holds every delivery, this one flagged.
    assert notify_lines(hub, "runtime")[-1]["flags"] == ["to-me", "dm", "next-turn"]

    send(pair["memory"], "@runtime", "now, please")
    code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5", *filtering)
    wake = fields(lines[1])
    assert code == 2 and (wake["n"], wake["channels"], wake["flags"]) == ("1", "dm:memory--runtime#2", "to-me,dm")
    assert urgencies(pair["runtime"]) == {
        "commons#1": "normal", "dm:memory--runtime#1": "next_turn", "dm:memory--runtime#2": "normal"}


def test_a_persistent_listener_rings_only_for_normal(hub, pair):
    ear = Listener(hub, "--as", "runtime", "--debounce", "0")
    ear.next_line()
    send(pair["memory"], "commons", "later will do", urgency="next_turn")
    send(pair["memory"], "commons", "look now")
    wake = fields(ear.wait_for("AGORA_WAKE"))
    assert (wake["n"], wake["channels"]) == ("1", "commons#3")
    code, lines, _ = ear.stop()
    assert [line.split()[0] for line in lines].count("AGORA_WAKE") == 1


def test_a_next_turn_ask_rings_only_when_it_escalates(hub, pair):
    send(pair["memory"], "@runtime", "when you get to it", ask=True, urgency="next_turn")
    # Neither the line nor the debt (the backlog at arm) rings, on this arm or the next.
    for _ in range(2):
        code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "1")
        assert code == 0, lines
    assert pair["runtime"].call("owed.list")["i_owe"][0]["urgency"] == "next_turn"
    hub.advance(16 * MINUTE)
    assert hub.call("hub.sweep")["escalated"] == 1  # unanswered past the schedule: now it rings
    code, lines, _ = listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "5")
    wake = fields(lines[1])
    assert code == 2 and wake["flags"] == "to-me,dm,open,escalated" and wake["channels"] == "dm:memory--runtime#1"
    assert "next-turn" not in notify_lines(hub, "runtime")[-1]["flags"]


def test_a_normal_ask_still_rings_as_backlog(hub, pair):
    send(pair["memory"], "@runtime", "review?", ask=True)
    listen_once(hub, "--as", "runtime", "--max-wait", "1", "--debounce", "0")  # rings for the line
    (hub.home / "listen-runtime.owedsig").unlink()  # forget it was rung: the debt rings at arm
    code, lines, _ = listen_once(hub, "--as", "runtime", "--max-wait", "1")
    assert code == 2 and fields(lines[1])["backlog"] is True


def test_inbox_and_read_show_the_urgency(cli, hub):
    for agent in ("memory", "runtime"):
        cli("agent", "add", agent)
    cli("send", "--as", "memory", "@runtime", "--urgency", "next_turn", "--title", "when you can", "details")
    cli("send", "--as", "memory", "@runtime", "--title", "right away", "details")
    shown = unquoted(cli("inbox", "--as", "runtime").stdout)
    assert shown[1].startswith("  dm:memory--runtime#1  memory  when you can  [to-me,dm]") and "next_turn" in shown[1]
    assert shown[2] == "  dm:memory--runtime#2  memory  right away  [to-me,dm]"
    as_json = json.loads(cli("inbox", "--as", "runtime", "--json").stdout)
    assert [m["urgency"] for m in as_json["channels"][0]["messages"]] == ["next_turn", "normal"]
    assert "urgency: next_turn" in cli("read", "--as", "runtime", "dm:memory--runtime#1").stdout
    assert "urgency: normal" in cli("read", "--as", "runtime", "dm:memory--runtime#2").stdout
    assert json.loads(cli("read", "--as", "runtime", "dm:memory--runtime#1", "--json").stdout)["urgency"] == "next_turn"


def test_an_unknown_urgency_is_refused_and_sends_nothing(cli, hub):
    for agent in ("memory", "runtime"):
        cli("agent", "add", agent)
    refused = cli("send", "--as", "memory", "@runtime", "--urgency", "soon", "x", code=2)
    assert "normal" in refused.stderr and "next_turn" in refused.stderr
    assert cli("inbox", "--as", "runtime").stdout == "nothing unread, nothing owed\n"
