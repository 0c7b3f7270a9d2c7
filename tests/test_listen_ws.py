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
    test_adaptive_backoff,
    test_backlog_rings_once_for_debt_then_again_for_new_or_escalated_debt,
    test_debounce_coalesces_a_burst,
    test_deliveries_between_two_once_instances_are_replayed,
    test_driver_owns_reception_refuses_without_touching_seat_files,
    test_important_only_skips_plain_channel_posts,
    test_max_wait_exits_0_with_nothing_on_stderr,
    test_once_wakes_exits_2_with_a_redacted_digest,
    test_own_messages_never_wake,
    test_persistent_listener_takes_the_lock_and_a_second_is_already_armed,
    test_signals_end_with_a_tombstone,
)


@pytest.fixture
def hub(home, monkeypatch):
    running = Hub(home, "--listen", "127.0.0.1:0").start()
    running.env["AGORA_URL"] = running.call("hub.status")["remote"]  # as a remote seat's environment carries it
    monkeypatch.setattr(listenproc, "SOURCE", ["--source", "ws"])
    yield running
    running.stop()
