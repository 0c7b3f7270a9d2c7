"""Important mail rung but left unread rings again at a later arm, on a doubling schedule (agora_listen/rering.py).

Time is the hub's: the tests move it with clock.advance and never sleep.
"""

from __future__ import annotations

import json

import pytest

from agorad.surface import settings
from tests.hubproc import wait_for
from tests.listenproc import Listener, fields, listen_once
from tests.seats import seats, send

FIRST, CAP = settings.RERING_FIRST, settings.RERING_CAP
SLACK = 30  # the hub's clock is wall time plus what tests add: a few real seconds pass between arms


@pytest.fixture
def pair(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "commons", "make the file")
        s["runtime"].call("inbox.ack", all=True)
        assert arm(hub)[0] == 0  # the seat's place: the file's end
        yield s


def arm(hub, *args: str):
    """One `agora listen --once` (a quiet one ends at --max-wait 1)."""
    return listen_once(hub, "--as", "runtime", "--debounce", "0", "--max-wait", "1", *args)


def rerings(hub) -> dict:
    code, lines, stderr = arm(hub)
    assert code == 2, (lines, stderr)
    wake = fields(lines[1])
    assert wake["n"] == "0" and wake["backlog"] is True and "rung before and still unread" in stderr
    return wake


def quiet(hub) -> None:
    code, lines, _ = arm(hub)
    assert code == 0 and lines[-1] == "AGORA_LISTEN ended reason=max-wait", lines


def schedule(hub) -> dict | None:
    path = hub.home / "listen-runtime.backoff"
    return json.loads(path.read_text())["rering"] if path.exists() else None


def now(hub) -> float:
    return hub.advance(0)


def assert_scheduled(hub, step: int, due_in: float) -> None:
    """The schedule is at `step`, its next re-ring `due_in` seconds from now (less the real time since)."""
    current = schedule(hub)
    assert current["step"] == step and due_in - SLACK < current["at"] - now(hub) <= due_in, current


def test_unread_important_mail_rings_again_after_a_doubling_backoff_until_acked(hub, pair):
    send(pair["memory"], "@runtime", "review 0004?")
    code, lines, _ = arm(hub)
    assert code == 2 and fields(lines[1])["n"] == "1"  # the wake itself, from the notify file
    assert_scheduled(hub, 0, FIRST)
    quiet(hub)  # rung and unread, but the first step has not passed
    hub.advance(FIRST - SLACK)
    quiet(hub)
    hub.advance(SLACK)
    wake = rerings(hub)
    assert (wake["channels"], wake["flags"], wake["owed"]) == ("dm:memory--runtime#1", "to-me,dm", "0")
    assert_scheduled(hub, 1, 2 * FIRST)  # doubled
    quiet(hub)
    hub.advance(2 * FIRST - SLACK)
    quiet(hub)
    hub.advance(SLACK)
    rerings(hub)
    assert_scheduled(hub, 2, 4 * FIRST)
    pair["runtime"].call("inbox.ack", ref="dm:memory--runtime#1")
    hub.advance(CAP)
    quiet(hub)  # handled: no reminder, and the schedule is gone
    assert schedule(hub) is None


def test_the_step_is_capped(hub, pair):
    send(pair["memory"], "@runtime", "still there?")
    assert arm(hub)[0] == 2
    backoff = hub.home / "listen-runtime.backoff"
    backoff.write_text(json.dumps({"adaptive": None, "rering": {"at": now(hub), "step": 7}}))
    rerings(hub)
    assert_scheduled(hub, 8, CAP)  # FIRST * 2**8 is far past the cap


def test_a_new_wake_does_not_bring_the_next_reminder_closer(hub, pair):
    send(pair["memory"], "@runtime", "first")
    assert arm(hub)[0] == 2
    hub.advance(FIRST - 2 * SLACK)
    send(pair["memory"], "@runtime", "second")
    assert arm(hub)[0] == 2  # a new wake: the schedule keeps its step, its reminder comes a step after it
    assert_scheduled(hub, 0, FIRST)
    hub.advance(2 * SLACK)  # past the first schedule's time
    quiet(hub)
    hub.advance(FIRST - 2 * SLACK)
    assert rerings(hub)["channels"] == "dm:memory--runtime#2"  # the newest of the channel


def test_an_open_ask_re_rings_like_any_important_mail(hub, pair):
    send(pair["memory"], "commons", "can you look?", to=["runtime"], ask=True)
    assert arm(hub)[0] == 2
    quiet(hub)  # the debt was remembered by the wake: it does not ring as new backlog either
    hub.advance(FIRST)
    wake = rerings(hub)
    assert (wake["channels"], wake["flags"], wake["owed"]) == ("commons#2", "to-me,open", "1")


def test_plain_channel_posts_and_next_turn_mail_never_re_ring(hub, pair):
    send(pair["memory"], "commons", "ambient")
    send(pair["memory"], "@runtime", "when you get to it", urgency="next_turn")
    assert arm(hub)[0] == 2  # the post rang (no --important-only); the next_turn DM never rings
    assert schedule(hub) is None  # nothing important left unread: no schedule started
    (hub.home / "listen-runtime.backoff").write_text("{not json")  # corrupt: a re-ring would be due
    hub.advance(CAP)
    quiet(hub)
    assert pair["runtime"].call("inbox.check")["unread"] == 2  # unread, not rung


def test_a_legacy_number_keeps_its_adaptive_wait_and_starts_a_schedule(hub, pair):
    send(pair["memory"], "@runtime", "hello")
    assert arm(hub)[0] == 2
    backoff = hub.home / "listen-runtime.backoff"
    backoff.write_text("120")  # the format before the schedule: the adaptive wait alone
    quiet(hub)  # no schedule: this arm starts one (the mail may never have rung)
    assert json.loads(backoff.read_text())["adaptive"] == 120
    assert_scheduled(hub, 0, FIRST)
    hub.advance(FIRST)
    rerings(hub)


def test_mail_that_landed_before_a_seats_first_arm_is_reminded_of_a_step_later(hub, pair):
    """A first arm starts at the end of the notify file on purpose; unread mail behind it waits one step."""
    send(pair["memory"], "@runtime", "before anyone listened")
    for what in ("offset", "backoff", "owedsig"):
        (hub.home / f"listen-runtime.{what}").unlink(missing_ok=True)
    quiet(hub)
    assert_scheduled(hub, 0, FIRST)
    hub.advance(FIRST)
    assert rerings(hub)["channels"] == "dm:memory--runtime#1"


@pytest.mark.parametrize("corrupt", ["{not json", "[1, 2]", '{"rering": {"at": "soon", "step": 1}}',
                                     '{"rering": {"at": 1e300, "step": -1}}', "-5"])
def test_a_corrupt_backoff_file_rings_again_and_is_rewritten_whole(hub, pair, corrupt):
    send(pair["memory"], "@runtime", "hello")
    assert arm(hub)[0] == 2
    (hub.home / "listen-runtime.backoff").write_text(corrupt)
    rerings(hub)
    assert_scheduled(hub, 0, FIRST)
    quiet(hub)


def test_without_the_key_there_is_no_re_ring_and_no_schedule(hub, pair):
    send(pair["memory"], "@runtime", "hello")
    key = hub.home / "keys" / "runtime.key"
    saved = key.read_bytes()
    key.unlink()
    try:
        assert arm(hub)[0] == 2
        (hub.home / "listen-runtime.backoff").unlink(missing_ok=True)
        hub.advance(CAP)
        quiet(hub)  # the notify file still rang; nobody can say what is unread
        assert not (hub.home / "listen-runtime.backoff").exists()
    finally:
        key.write_bytes(saved)


@pytest.mark.parametrize("once", [True, False], ids=["once", "persistent"])
def test_a_listener_that_stays_armed_reminds_when_the_step_passes(hub, pair, once):
    """A session idle with its listener armed still hears the reminder: one timer, not a later arm."""
    send(pair["memory"], "@runtime", "review 0004?")
    assert arm(hub)[0] == 2
    backoff = hub.home / "listen-runtime.backoff"
    backoff.write_text(json.dumps({"adaptive": None, "rering": {"at": now(hub) + 3, "step": 0}}))
    mode = ["--once", "--max-wait", "60"] if once else []
    ear = Listener(hub, "--as", "runtime", "--debounce", "0", *mode)
    assert ear.next_line().startswith("AGORA_LISTEN armed")  # not due at arm: quiet
    wake = fields(ear.wait_for("AGORA_WAKE", timeout=15))  # due 3 s later, by the hub's clock
    assert wake["backlog"] is True and wake["channels"] == "dm:memory--runtime#1"
    wait_for(lambda: schedule(hub)["step"] == 1, what="the reminder recorded (written after the wake line)")
    assert_scheduled(hub, 1, 2 * FIRST)
    if once:
        code, lines, _ = ear.finish()
        assert code == 2 and lines[-1] == "AGORA_LISTEN ended reason=wake"
    else:
        assert ear.stop()[1][-1] == "AGORA_LISTEN ended reason=signal"
