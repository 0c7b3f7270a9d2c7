"""When an armed listener asks the hub about its seat (agora_listen/identity.Asker), unit by unit.

Through a real hub the asks are tested in tests/test_listen_confirm.py; here the one
thing a hub test cannot force on demand: a followed file's inode number coming back.
"""

from __future__ import annotations

from types import SimpleNamespace

from agora_listen.identity import Asker


def _following(path, number: int) -> SimpleNamespace:
    """What the Asker reads of a Follower: the followed file's number, descriptor and name."""
    return SimpleNamespace(inode=number, fd=None, path=str(path))


def test_a_number_asked_about_is_asked_about_again_when_a_later_file_has_it(tmp_path):
    """A file deleted by hand is asked about once (the hub renews it); the follower moves on, and ext4 gives
    the freed number to a later file (a rotation's). When that one goes too (the seat removed), the listener
    must ask again, or it stays armed on a file nobody writes (reproduced through a real hub, the number
    forced back: 3 of 5 such runs stayed armed)."""
    name = tmp_path / "runtime-inbox.log"
    asker = Asker(SimpleNamespace(confirmed=True), seat=None)
    asker.notice_change(_following(name, 7))  # deleted by hand: the name is empty
    assert asker.at is not None
    asker.at = None  # the hub confirmed the seat
    asker.notice_change(_following(name, 7))
    assert asker.at is None  # asked once per file
    name.write_text("")  # renewed; the follower moved to it
    asker.notice_change(_following(name, 8))
    assert asker.at is None
    name.unlink()  # that file rotated away, a later file got number 7, and the seat was removed
    asker.notice_change(_following(name, 7))
    assert asker.at is not None
