"""The listener's contract (tests/test_listen.py) over the remote port: `agora listen --source ws`.

The tests below are test_listen.py's own, collected again here with a hub that also serves
`--listen` on loopback and every listener started with `--source ws` and AGORA_URL; they hold the ws
source to the same sentinels, exit codes and seat files. Left out are the tests of what only a
file has (rotation, the notify directory, offsets by inode) and those that spell the file
source's armed line. What only ws has (a cut connection, a hub restart on the same port,
catch-up by id) is in tests/test_remote_listen.py.
"""

from __future__ import annotations

import pytest

from tests import listenproc
from tests.hubproc import Hub
from tests.test_listen import (  # noqa: F401 (collected here, under the ws source)
    pair,
    test_a_first_arm_remembers_its_place_even_if_killed,
    test_a_once_without_lock_leaves_a_live_listeners_pidfile_alone,
    test_a_saved_id_above_the_files_never_makes_the_listener_deaf,
    test_adaptive_backoff,
    test_backlog_rings_once_for_debt_then_again_for_new_or_escalated_debt,
    test_debounce_coalesces_a_burst,
    test_deliveries_between_two_once_instances_are_replayed,
    test_driver_owns_reception_refuses_without_touching_seat_files,
    test_important_only_skips_plain_channel_posts,
    test_max_wait_exits_0_with_nothing_on_stderr,
    test_once_wakes_exits_2_with_a_redacted_digest,
    test_out_of_range_offsets_count_as_corrupt,
    test_own_messages_never_wake,
    test_persistent_listener_holds_the_seat_lock_even_with_lock,
    test_persistent_listener_takes_the_lock_and_a_second_is_already_armed,
    test_persistent_listener_with_the_seat_lock_as_lock_arms,
    test_pidfile_lives_while_armed_and_goes_at_exit,
    test_signals_end_with_a_tombstone,
    test_unknown_seat_and_usage_errors_end_with_a_tombstone_and_exit_1,
)


@pytest.fixture
def hub(home, monkeypatch):
    running = Hub(home, "--listen", "127.0.0.1:0").start()
    running.env["AGORA_URL"] = running.call("hub.status")["remote"]  # as a remote seat's environment carries it
    monkeypatch.setattr(listenproc, "SOURCE", ["--source", "ws"])
    yield running
    running.stop()
