"""The driver's rules, each on its own: what obliges a seat, how a turn is judged, and what the
driver keeps (budgets, back-off, quarantine, sessions). The loop itself, on a real hub with
scripted harnesses, is tests/test_drive.py."""

from __future__ import annotations

import json

import pytest

from agora_drive import chunks
from agora_drive.chunks import Work
from agora_drive.obligations import from_check
from agora_drive.state import HOUR, DriveState
from agora_drive.supervise import Finished
from agora_drive.verdict import judge
from agora_setup.harnesses.turns import Outcome
from agorad.surface import settings


def check(owed=(), messages=()) -> dict:
    return {"now": 1000.0, "owed": list(owed), "owed_total": len(owed),
            "channels": [{"channel": "dm:a--b", "unread": len(messages), "messages": list(messages)}] if messages else []}


def debt(ref, escalations=0, urgency="normal"):
    return {"ref": ref, "escalations": escalations, "urgency": urgency, "asker": "a", "title": "t"}


def headline(ref, flags=("dm", "to-me"), urgency="normal"):
    return {"ref": ref, "flags": list(flags), "urgency": urgency, "sender": "a", "title": "t"}


# --- what obliges a seat -------------------------------------------------------------------------

def test_owed_replies_and_important_unread_oblige_the_seat():
    found = from_check("b", check(owed=[debt("dm:a--b#1")], messages=[headline("dm:a--b#1"), headline("dm:a--b#2")]))
    assert found.marks == ("owed:dm:a--b#1@0", "unread:dm:a--b#1", "unread:dm:a--b#2")
    assert found.refs == ("dm:a--b#1", "dm:a--b#2") and found.owed == 1 and found


def test_chatter_and_next_turn_mail_oblige_nobody_until_it_escalates():
    quiet = check(owed=[debt("c#1", urgency="next_turn")],
                  messages=[headline("c#1", ("to-me", "open"), "next_turn"), headline("c#2", ())])
    assert not from_check("b", quiet)
    escalated = check(owed=[debt("c#1", 1, "next_turn")], messages=[headline("c#1", ("to-me", "open"), "next_turn")])
    assert from_check("b", escalated).marks == ("owed:c#1@1", "unread:c#1")


def test_the_signature_changes_with_any_change_and_only_then():
    one = from_check("b", check(owed=[debt("c#1")]))
    assert one.signature == from_check("b", check(owed=[debt("c#1")])).signature
    assert one.signature != from_check("b", check(owed=[debt("c#1", 1)])).signature  # escalated again: news
    assert one.signature != from_check("b", check(owed=[debt("c#1")], messages=[headline("c#3")])).signature


# --- judging a turn ------------------------------------------------------------------------------

BEFORE = from_check("b", check(owed=[debt("c#1")]))
NOTHING_LEFT = from_check("b", check())


def finished(**kw) -> Finished:
    base = dict(status=0, signal=None, timed_out=False, stopped=False, spawn_error=None, duration=1.0,
                stderr_tail="", pid=123)
    return Finished(**{**base, **kw})


@pytest.mark.parametrize("run, outcome, after, want", [
    (finished(), Outcome(completed=True, tool_calls=2), NOTHING_LEFT, ("ok", "answered")),
    (finished(), Outcome(completed=True, tool_calls=2), from_check("b", check(owed=[debt("c#9")])), ("ok", "progress")),
    (finished(), Outcome(completed=True, tool_calls=1), BEFORE, ("debt-left", "debt-left")),
    (finished(status=None, spawn_error="No such file"), Outcome(), BEFORE, ("failed", "spawn-failed")),
    (finished(status=3), Outcome(), BEFORE, ("failed", "crashed")),
    (finished(status=None, signal=9, timed_out=True), Outcome(), BEFORE, ("failed", "timeout")),
    (finished(status=None, signal=9, timed_out=True), Outcome(tool_calls=4), BEFORE, ("debt-left", "debt-left")),
    (finished(status=1), Outcome(error="429 rate limited", provider=True), BEFORE, ("failed", "provider")),
    (finished(), Outcome(), BEFORE, ("failed", "no-terminal")),  # exit 0 is not success
    (finished(status=1), Outcome(terminal=True, error="No conversation found"), BEFORE, ("failed", "harness-error")),
    (finished(status=1), Outcome(error="ended without its terminal event"), BEFORE, ("failed", "crashed")),
    (finished(), Outcome(error="ended without its terminal event"), BEFORE, ("failed", "no-terminal")),
    (finished(stopped=True, status=None), Outcome(), None, ("stopped", "signal")),
])
def test_a_turn_is_judged_by_its_stream_and_the_hub_never_by_its_exit_status(run, outcome, after, want):
    verdict = judge(run, outcome, BEFORE, after)
    assert (verdict.status, verdict.reason) == want


def test_a_failure_keeps_the_harness_words_for_the_log():
    verdict = judge(finished(status=2, stderr_tail="Error: unknown option '--bogus'\n"), Outcome(), BEFORE, BEFORE)
    assert "unknown option '--bogus'" in verdict.detail and "exit status 2" in verdict.detail


# --- what the driver keeps -----------------------------------------------------------------------

def test_the_budget_counts_the_last_hour_and_says_when_a_turn_frees(tmp_path):
    state = DriveState()
    now = 10_000.0
    for i in range(3):
        assert state.spent(state.turns, 3, now + i) is None
        state.turns.append(now + i)
    assert state.spent(state.turns, 3, now + 10) == now + HOUR
    assert state.spent(state.turns, 3, now + HOUR + 0.5) is None  # the first left the hour


def test_the_back_off_doubles_to_its_cap_and_one_healthy_turn_clears_it():
    state = DriveState()
    delays = [state.failed(0.0) for _ in range(6)]
    assert delays == [60.0, 120.0, 240.0, 480.0, 900.0, 900.0]
    assert delays[0] == settings.DRIVE_BACKOFF_FIRST and delays[-1] == settings.DRIVE_BACKOFF_CAP
    assert state.retry_at == 900.0
    state.healthy()
    assert (state.streak, state.retry_at) == (0, None)


def test_state_survives_a_restart_and_a_corrupt_file_is_a_fresh_start(tmp_path):
    path = tmp_path / "drive-b.state"
    state = DriveState(turns=[1.0], streak=2, retry_at=99.0, quarantined="abc", session="s1", session_harness="claude",
                       session_turns=3)
    state.save(path)
    assert DriveState.load(path) == state
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    state.chains = {"claim:1": [2, 1]}
    state.chunk_session, state.chunk_session_turns = "w1", 1
    state.save(path)
    assert DriveState.load(path) == state
    for junk in ("{", "[]", json.dumps({"turns": "x"}), json.dumps({"streak": "2"}), json.dumps({"session": 5}),
                 json.dumps({"chains": {"claim:1": "x"}}), json.dumps({"chains": []}), json.dumps({"chunk_session": 1})):
        path.write_text(junk)
        assert DriveState.load(path) == DriveState()


def test_sessions_resume_until_rotation_and_never_across_harnesses():
    state = DriveState()
    assert state.session_for("claude", 2) is None
    state.ran_in("claude", "s1")
    assert state.session_for("claude", 2) == "s1"
    state.ran_in("claude", "s1")
    assert state.session_for("claude", 2) is None  # two turns in it: rotate
    state.ran_in("claude", "s2")
    assert state.session_for("codex", 2) is None  # another harness's session is not resumed
    state.ran_in("claude", "s3")
    state.rotate()
    assert state.session_for("claude", 2) is None


def test_reception_and_chunks_keep_a_session_each():
    state = DriveState()
    state.ran_in("claude", "reception")
    state.ran_in("claude", "work", "chunk_")
    assert (state.session_for("claude", 5), state.session_for("claude", 5, "chunk_")) == ("reception", "work")
    state.rotate("chunk_")
    assert (state.session_for("claude", 5), state.session_for("claude", 5, "chunk_")) == ("reception", None)


def work(ref="claim:1", version=1, receipts=0) -> Work:
    return Work(ref, version, receipts)


def test_a_chain_parks_after_receiptless_chunks_on_one_version_and_a_new_version_restarts_it():
    chains: dict = {}
    for n in range(1, settings.DRIVE_CHUNK_IDLE):
        assert chunks.record(chains, work(), moved=False) is False
    assert chunks.record(chains, work(), moved=True) is False and chains["claim:1"] == [1, 0]  # a receipt resets
    for _ in range(settings.DRIVE_CHUNK_IDLE - 1):
        chunks.record(chains, work(), moved=False)
    assert chunks.record(chains, work(), moved=False) is True
    assert chunks.pick((work(), work("claim:2")), chains) == work("claim:2")  # the next open claim
    assert chunks.pick((work(version=2),), chains) == work(version=2)  # the claim changed: its chain goes on
    chunks.forget_closed(chains, (work("claim:2"),))
    assert chains == {}


def test_a_chunk_moved_its_claim_by_a_receipt_a_new_version_or_closing_it():
    before = work(receipts=1)
    assert chunks.progressed(before, (work(receipts=2),)) is True
    assert chunks.progressed(before, (work(version=2, receipts=1),)) is True
    assert chunks.progressed(before, ()) is True  # done, parked or no longer the seat's: not open any more
    assert chunks.progressed(before, (work(receipts=1),)) is False
    assert chunks.progressed(before, None) is None  # the hub could not be asked
