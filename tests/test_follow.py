"""The Follower (agora_listen/follow.py) on notify files written and rotated by the test, with the hub's
writes put at each point between the follower's looks at the files: no hub, no watcher, no timing."""

from __future__ import annotations

import contextlib
import json
import os
import random

import pytest

from agora_listen import follow
from agora_listen.follow import Follower
from agorad.surface.filenames import file_generation
from agorad.surface.paths import rotated


def _append(path, ids) -> None:
    with open(path, "a") as notify:
        for i in ids:
            notify.write(json.dumps({"v": 1, "id": i, "ts": 0, "channel": "commons", "flags": []}) + "\n")


def _first_file_fills_and_rotates(path) -> None:
    """What the hub does with a seat's first 8 deliveries when 5 fit in a file."""
    _append(path, range(1, 6))
    os.replace(path, rotated(path))
    _append(path, range(6, 9))


class _HubActsAfterLook:
    """Stands in for `os` in follow.py: the hub acts once, right after the follower's k-th look at a name
    (an open or a stat, whether it found the file or not)."""

    def __init__(self, k: int, act):
        self.k, self.act, self.looks = k, act, 0

    def __getattr__(self, name):
        return getattr(os, name)

    def open(self, *args, **kwargs):
        return self._look(os.open, args, kwargs)

    def stat(self, *args, **kwargs):
        return self._look(os.stat, args, kwargs)

    def _look(self, call, args, kwargs):
        try:
            return call(*args, **kwargs)
        finally:
            self.looks += 1
            if self.looks == self.k:
                self.act()


def _every_look(monkeypatch, act):
    """For k = 1, 2, ...: k, and a context under which the hub does `act` once, right after the follower's
    k-th look. If the calls under it make fewer looks, the hub acts on leaving it, and that k is the last:
    every look has been swept."""
    k = 0
    while True:
        k += 1
        hub = _HubActsAfterLook(k, act)
        yield k, _acting(monkeypatch, hub)
        if hub.looks < k:
            return


@contextlib.contextmanager
def _acting(monkeypatch, hub: _HubActsAfterLook):
    with monkeypatch.context() as patched:
        patched.setattr(follow, "os", hub)
        yield
    if hub.looks < hub.k:
        hub.act()


def _ids(lines: list[dict]) -> list[int]:
    return [line["id"] for line in lines]


def test_a_first_file_that_rotates_at_any_point_of_the_first_read_rings_whole(tmp_path, monkeypatch):
    # Armed with no file, the first read looked for a .1 (none yet), then opened the name; the first file
    # filling and rotating between the two looks left it reading only the second: 3 of 8 rang and none
    # counted as missed (the CI failure of test_listen's ..._rotates_before_the_first_read_rings_whole).
    path = tmp_path / "runtime-inbox.log"
    for k, hub_acting in _every_look(monkeypatch, lambda: _first_file_fills_and_rotates(path)):
        path.unlink(missing_ok=True)
        rotated(path).unlink(missing_ok=True)
        follower = Follower(path)
        follower.arm(None)  # no file yet (what the files hold during the arm's looks is old news)
        with hub_acting:
            got = _ids(follower.read_new())
        got += _ids(follower.read_new())
        follower.close()
        assert (got, follower.missed) == (list(range(1, 9)), 0), f"hub after look {k}"


def _saved(path, inode: int, after_id: int) -> dict:
    """An offset saved in a file whose inode number was `inode`, just past the line of `after_id` as the
    file under `path` lays its lines out (the byte offset is all a saved place keeps)."""
    pos = 0
    with open(path, "rb") as notify:
        for raw in notify:
            pos += len(raw)
            if json.loads(raw)["id"] == after_id:
                break
    return {"inode": inode, "pos": pos, "id": after_id}


def test_an_inode_number_reused_by_a_later_file_does_not_pass_for_the_saved_one(tmp_path):
    """The saved file (ids 1-10) was rotated out of both generations; the file under the name two
    rotations later got its inode number back (ext4 reuses them: the power-loss soak saw it). A follower
    that took the number for the file resumed at the saved byte offset in the new file and never read
    the `.1` (ids 11-20) nor the new file's first lines: it only counted them as missed."""
    path = tmp_path / "runtime-inbox.log"
    _append(path, range(1, 11))
    place = _saved(path, 0, 6)  # the byte offset past id 6 in that file
    path.unlink()
    _append(rotated(path), range(11, 21))
    _append(path, range(21, 26))
    reused = {**place, "inode": os.stat(path).st_ino}
    follower = Follower(path)
    follower.arm(reused)
    assert [line["id"] for line in follower.read_new()] == list(range(11, 26))
    assert follower.missed == 4  # 7-10, past the saved place and rotated away unread: they ring as missed


def _generation(path) -> int | None:
    fd = os.open(path, os.O_RDONLY)
    try:
        return file_generation(fd)
    finally:
        os.close(fd)


def _first_arm_place(path) -> dict:
    """The place a first arm saves on the files as they are."""
    follower = Follower(path)
    follower.arm(None)
    try:
        return follower.offset()
    finally:
        follower.close()


def test_a_place_names_its_files_generation_where_the_file_system_keeps_one(tmp_path):
    path = tmp_path / "runtime-inbox.log"
    _append(path, range(1, 4))
    place = _first_arm_place(path)
    assert place.get("gen") == _generation(path)  # ext4 here; none on tmpfs
    again = Follower(path)
    again.arm(place)
    _append(path, [4])
    assert [line["id"] for line in again.read_new()] == [4]


def _generations_kept(tmp_path) -> None:
    probe = tmp_path / "probe"
    probe.touch()
    if _generation(probe) is None:
        pytest.skip("this file system keeps no inode generation (tmpfs): the number and _place tell")


def test_a_number_given_to_the_kept_dot_one_is_not_the_empty_file_a_place_was_saved_at(tmp_path):
    """A place at byte 0 of an empty file (a power cut left it empty, its history in `.1`); both deleted by
    hand, the hub keeps the newest line, rung already, in a new `.1`, which ext4 may give the empty file's
    freed number (a helper's audit saw 3 of 6 runs do so). Taken for the saved file, read from its start, it
    rang id 5 a second time. Its generation is another: the follower reads it above the id it rang."""
    _generations_kept(tmp_path)
    path = tmp_path / "runtime-inbox.log"
    _append(rotated(path), range(1, 6))
    path.touch()
    saved = _first_arm_place(path)
    assert (saved["pos"], saved["id"]) == (0, 5)
    path.unlink()
    rotated(path).unlink()
    _append(rotated(path), [5])  # the hub's keep_unread: at least the newest
    path.touch()
    reused = {**saved, "inode": os.stat(rotated(path)).st_ino}  # the number ext4 may hand it (not its generation)
    follower = Follower(path)
    follower.arm(reused)
    assert [line["id"] for line in follower.read_new()] == []


def test_a_number_given_to_a_later_file_holding_the_saved_id_there_is_not_the_saved_file(tmp_path):
    """After a restore the hub hands ids out again: a later file that got the saved file's freed number can
    hold the saved id just where the place was, and `_place` alone takes it for the saved file: the lines
    before the place, never read, were neither rung nor counted. Its generation is another: it is read from
    its start (wakes again, never fewer)."""
    _generations_kept(tmp_path)
    path = tmp_path / "runtime-inbox.log"
    _append(path, range(1, 11))
    saved = _first_arm_place(path)
    path.unlink()
    _append(path, range(1, 13))  # the restored hub's file: the same ids, 11 and 12 new
    reused = {**saved, "inode": os.stat(path).st_ino}
    again = Follower(path)
    again.arm(reused)
    assert [line["id"] for line in again.read_new()] == list(range(1, 13))


def test_a_file_rewritten_with_the_saved_place_kept_resumes_there_and_one_without_it_reads_again(tmp_path):
    """A power cut's reconciliation rewrites a file as a new one, which may take the old inode number: with
    every line up to the saved one kept, a place with no generation (tmpfs, or saved before it was kept; a
    place with one is of another file: read again) holds byte for byte (nothing read twice); with the
    saved line dropped (a delivery the database lost), the bytes before the offset are other lines, and
    the follower reads the file from its start (wakes again, never fewer)."""
    path = tmp_path / "runtime-inbox.log"
    _append(path, range(1, 9))
    inode = os.stat(path).st_ino
    place = _saved(path, inode, 5)
    path.unlink()
    _append(path, range(1, 9))  # rewritten whole: lines 1-5 where they were
    kept = Follower(path)
    kept.arm({**place, "inode": os.stat(path).st_ino})
    assert [line["id"] for line in kept.read_new()] == [6, 7, 8]
    path.unlink()
    _append(path, [1, 2, 3, 4, 9, 10])  # 5-8 were lost and dropped; 9 and 10 came after, above the floor
    dropped = Follower(path)
    dropped.arm({**place, "inode": os.stat(path).st_ino})
    assert [line["id"] for line in dropped.read_new()] == [1, 2, 3, 4, 9, 10]


class _HubActsAtTheEnd:
    """Stands in for `os` in follow.py: the hub acts once, right after the follower's first read that
    found nothing more (its last look at the bytes before it stats the name)."""

    def __init__(self, act):
        self.act, self.done = act, False

    def __getattr__(self, name):
        return getattr(os, name)

    def pread(self, *args):
        data = os.pread(*args)
        if not data and not self.done:
            self.done = True
            self.act()
        return data


def test_lines_appended_just_before_a_rotation_are_read_from_the_old_file(tmp_path, monkeypatch):
    """Between the follower's last read of a file and its look at the name, the hub appends two lines and
    rotates the file: the follower finishes the old file (its descriptor still holds it) before it moves
    to the new one. Without that it skipped the two, counting them as missed."""
    path = tmp_path / "runtime-inbox.log"
    _append(path, range(1, 4))
    follower = Follower(path)
    follower.arm(None)  # at the end: 1-3 are old news
    _append(path, [4, 5])

    def append_and_rotate():
        _append(path, [6, 7])
        os.replace(path, rotated(path))
        _append(path, [8, 9])

    with monkeypatch.context() as patched:
        patched.setattr(follow, "os", _HubActsAtTheEnd(append_and_rotate))
        got = follower.read_new()
    follower.close()
    assert ([line["id"] for line in got], follower.missed) == ([4, 5, 6, 7, 8, 9], 0)


def test_a_first_arm_on_a_half_written_line_reads_that_line_once_it_is_whole(tmp_path):
    """Armed at the end while a line was half there (a torn file's last line, say): the place is the start
    of that line, so it is read whole once complete; it was read from its middle, a fragment skipped and
    the delivery only counted as missed."""
    path = tmp_path / "runtime-inbox.log"
    _append(path, range(1, 4))
    whole = path.read_bytes()
    _append(path, [4])
    line = path.read_bytes()[len(whole):]
    path.write_bytes(whole + line[:20])
    follower = Follower(path)
    follower.arm(None)
    assert follower.offset()["pos"] == len(whole) and follower.offset()["id"] == 3
    with open(path, "ab") as notify:
        notify.write(line[20:])
    _append(path, [5])
    assert ([line["id"] for line in follower.read_new()], follower.missed) == ([4, 5], 0)


def test_a_file_emptied_under_the_follower_is_read_again_from_its_start(tmp_path):
    """Emptied in place (by hand, or logrotate's copytruncate) while the follower reads it: the hub's next
    lines land at its start, below the follower's place. It read nothing more until the file grew past
    that place, then from the middle of a line."""
    path = tmp_path / "runtime-inbox.log"
    _append(path, range(1, 4))
    follower = Follower(path)
    follower.arm(None)
    assert follower.read_new() == []
    os.truncate(path, 0)
    _append(path, [4])
    assert ([line["id"] for line in follower.read_new()], follower.missed) == ([4], 0)


def test_a_place_whose_file_went_reads_the_kept_dot_one_once_the_name_comes_back(tmp_path):
    """The saved file deleted, nothing under the name yet: the hub then puts the lines the listener had not
    read into a new `.1` and makes the name again (runtime/notify_lost.py); they are read skipping what was
    rung. A `.1` that was already there when the follower armed is not taken for it."""
    path = tmp_path / "runtime-inbox.log"
    _append(path, range(1, 3))
    os.replace(path, rotated(path))
    _append(path, range(3, 6))
    follower = Follower(path)
    follower.arm(None)
    saved = follower.offset()
    follower.close()
    assert saved["id"] == 5
    path.unlink()  # ids 3-5 gone with it; the listener had read them
    follower = Follower(path)
    follower.arm(saved)
    assert follower.read_new() == []  # no file under the name: nothing yet, and the old `.1` is not news
    kept = tmp_path / "kept"
    _append(kept, range(5, 8))  # what the hub kept: from the listener's saved place on (5 rung, 6-7 not)
    os.replace(kept, rotated(path))
    _append(path, [8])
    assert ([line["id"] for line in follower.read_new()], follower.missed) == ([6, 7, 8], 0)


def test_a_place_whose_file_went_after_a_rotation_skips_what_it_read_from_the_old_dot_one(tmp_path):
    """The saved place's file rotated to `.1` with lines after the place, then the next file was deleted:
    arming reads those lines from `.1` and finds no file under the name. The hub's kept `.1` starts after
    the place the listener saved, behind what it has read since: those are skipped, not rung again."""
    path = tmp_path / "runtime-inbox.log"
    _append(path, [1, 2])
    first = Follower(path)
    first.arm(None)
    saved = first.offset()
    first.close()
    _append(path, [3, 4])
    os.replace(path, rotated(path))  # the hub's rotation
    _append(path, [5, 6])
    path.unlink()  # the next file deleted by hand
    follower = Follower(path)
    follower.arm(saved)
    rung = [line["id"] for line in follower.read_new()]
    kept = tmp_path / "kept"
    _append(kept, [3, 4, 5, 6])  # the hub's: after the place saved (2), up to its newest line
    os.replace(kept, rotated(path))
    _append(path, [7])
    rung += [line["id"] for line in follower.read_new()]
    assert (rung, follower.missed) == ([3, 4, 5, 6, 7], 0)


def test_a_rotation_while_the_kept_dot_one_is_read_costs_no_line_of_the_file_under_the_name(tmp_path, monkeypatch):
    """Armed on a place whose file went, the follower reads the hub's kept `.1` once the name comes back, then
    the file under the name. The hub appending and rotating that file at any look of the follower's: its
    lines are read from the old file (the follower's descriptor), never counted as missed. Only the kept
    lines may be, when the rotation replaced the kept `.1` before the follower opened it."""
    path = tmp_path / "runtime-inbox.log"

    def append_and_rotate():
        _append(path, [9])
        os.replace(path, rotated(path))
        _append(path, [10])

    for k, hub_acting in _every_look(monkeypatch, append_and_rotate):
        for leftover in (path, rotated(path), tmp_path / "kept"):
            leftover.unlink(missing_ok=True)
        _append(path, range(1, 6))
        saved = _saved(path, os.stat(path).st_ino, 5)
        path.unlink()  # 1-5 gone with it; the listener had read them
        follower = Follower(path)
        follower.arm(saved)
        assert follower.read_new() == []
        _append(tmp_path / "kept", range(5, 8))  # the hub's: from the saved place on
        os.replace(tmp_path / "kept", rotated(path))
        _append(path, [8])
        with hub_acting:
            got = _ids(follower.read_new())
        got += _ids(follower.read_new())
        follower.close()
        kept = [6, 7] if 6 in got else []
        assert (got, follower.missed) == (kept + [8, 9, 10], 2 - len(kept)), f"hub after look {k}"


def test_a_first_arm_while_only_dot_one_is_there_takes_it_as_old_news(tmp_path):
    """The name missing and `.1` there (a rotation under way, a file deleted or moved away): a first arm
    starts at the end of `.1`, in this process and the next. It read `.1` whole when the name came
    (up to a rotation's worth of old lines in one wake)."""
    path = tmp_path / "runtime-inbox.log"
    _append(rotated(path), range(1, 6))
    follower = Follower(path)
    follower.arm(None)
    assert follower.read_new() == [] and follower.offset()["id"] == 5
    saved = follower.offset()
    follower.close()
    again = Follower(path)  # the next `--once`, from the place saved before the name came
    again.arm(saved)
    assert again.read_new() == []
    _append(path, [6])
    assert ([line["id"] for line in again.read_new()], again.missed) == ([6], 0)
    again.close()


def test_a_first_arm_after_a_deletion_does_not_ring_the_old_dot_one(tmp_path):
    """Armed after the file under the name was deleted, before the hub noticed: the hub keeps its newest
    line in a new `.1` (runtime/notify_lost.py; with no place saved, only that line) and makes the name.
    That line may have come after the arm (the hub wrote into the deleted file until it noticed), so it
    rings, and the ids between the old `.1` and it count as missed; the old `.1` does not ring."""
    path = tmp_path / "runtime-inbox.log"
    _append(rotated(path), range(1, 6))
    _append(path, range(6, 9))
    path.unlink()
    follower = Follower(path)
    follower.arm(None)
    _append(tmp_path / "kept", [8])
    os.replace(tmp_path / "kept", rotated(path))
    _append(path, [9])
    assert ([line["id"] for line in follower.read_new()], follower.missed) == ([8, 9], 2)
    follower.close()


def test_a_first_arm_during_a_rotation_rings_no_old_line_and_the_next_one(tmp_path, monkeypatch):
    """The hub rotates (the file under the name becomes `.1`) at any look of a first arm's: the lines of
    both files were there before the arm, so none rings; the new file's line does. Looking at `.1` again
    after a missing name is what keeps a `.1` replaced between the looks from passing for news."""
    path = tmp_path / "runtime-inbox.log"
    for k, hub_acting in _every_look(monkeypatch, lambda: os.replace(path, rotated(path))):
        path.unlink(missing_ok=True)
        rotated(path).unlink(missing_ok=True)
        _append(path, range(1, 4))
        os.replace(path, rotated(path))
        _append(path, [4, 5])
        follower = Follower(path)
        with hub_acting:
            follower.arm(None)
        got = _ids(follower.read_new())
        _append(path, [6])
        got += _ids(follower.read_new())
        follower.close()
        assert (got, follower.missed) == ([6], 0), f"hub after look {k}"


@pytest.mark.parametrize("whole", [False, True], ids=["window", "whole-rotation"])
def test_an_arm_whose_file_is_rotated_at_any_look_resumes_in_dot_one(tmp_path, monkeypatch, whole):
    """The hub rotates at any look of an arm from a saved place (the file under the name becomes `.1`; the
    next file is made with the next line, at once or later): the follower reads on from its place, then
    the new file, missing nothing. It raised TypeError when the name was empty between its look and open."""
    path = tmp_path / "runtime-inbox.log"

    def rotate():
        os.replace(path, rotated(path))
        if whole:
            _append(path, [4])

    for k, hub_acting in _every_look(monkeypatch, rotate):
        path.unlink(missing_ok=True)
        rotated(path).unlink(missing_ok=True)
        _append(path, range(1, 4))
        saved = _saved(path, os.stat(path).st_ino, 2)
        follower = Follower(path)
        with hub_acting:
            follower.arm(saved)
            got = _ids(follower.read_new())
        if not whole:
            _append(path, [4])
        got += _ids(follower.read_new())
        follower.close()
        assert (got, follower.missed) == ([3, 4], 0), f"hub after look {k}"


@pytest.mark.parametrize("made", [True, False], ids=["empty-file", "no-file"])
def test_a_first_arm_on_no_line_counts_gaps_from_the_newest_id_the_hub_gave(tmp_path, made):
    """A first arm on an empty file, or on no file at all, with no `.1`, the hub having said the seat's files
    have got to id 4 (its lines went elsewhere): its place keeps 4, so after two rotations before the next
    arm, 5 and 6 are gone and count as missed, and 1-4 (from before the arm) do not; with the hub's 0, 1 and
    2 count."""
    path = tmp_path / "runtime-inbox.log"
    for newest, first, expected in ((4, 5, ([7, 8, 9], 2)), (0, 1, ([3, 4, 5], 2))):
        for leftover in (path, rotated(path)):
            leftover.unlink(missing_ok=True)
        if made:
            path.touch()
        follower = Follower(path)
        follower.arm(None, newest=newest)
        saved = follower.offset()
        follower.close()
        inode = os.stat(path).st_ino if made else None
        generation = _generation(path) if made else None
        named = {"inode": inode} | ({"gen": generation} if generation is not None else {})
        assert saved == named | {"pos": 0, "id": newest} | ({"zero": True} if newest == 0 else {})
        _append(path, [first, first + 1])
        os.replace(path, rotated(path))
        _append(path, [first + 2, first + 3])
        os.replace(path, rotated(path))
        _append(path, [first + 4])
        follower = Follower(path)
        follower.arm(saved)
        assert (_ids(follower.read_new()), follower.missed) == expected
        follower.close()


def test_a_first_arm_with_no_file_takes_what_the_hub_kept_up_to_its_newest_id_as_old_news(tmp_path):
    """No file at the first arm, the hub's newest 3; the hub then keeps the deleted file's newest line, 3, in
    a `.1` (runtime/notify_lost.py) and makes the name: 3 was there before the arm (old news), 4 rings."""
    path = tmp_path / "runtime-inbox.log"
    follower = Follower(path)
    follower.arm(None, newest=3)
    assert follower.read_new() == []
    _append(rotated(path), [3])
    _append(path, [4])
    assert (_ids(follower.read_new()), follower.missed) == ([4], 0)
    follower.close()


def test_a_file_rotated_twice_while_the_follower_waited_is_read_from_dot_one(tmp_path):
    """Between two reads the file the follower holds is rotated, and so is the next one: that one is in `.1`
    still, so its lines ring (they were counted as missed); the follower's own file is finished first."""
    path = tmp_path / "runtime-inbox.log"
    _append(path, [1, 2])
    follower = Follower(path)
    follower.arm(None)
    _append(path, [3])
    os.replace(path, rotated(path))
    _append(path, [4, 5])
    os.replace(path, rotated(path))
    _append(path, [6])
    assert ([line["id"] for line in follower.read_new()], follower.missed) == ([3, 4, 5, 6], 0)
    follower.close()


def test_the_first_read_with_no_file_at_the_arm_reads_dot_one_in_order_at_every_look(tmp_path, monkeypatch):
    """Armed with no file; the first file filled and rotated (`.1` 1-5), the name holds 6-8. At any look of
    the first read the hub appends 9 and 10 and rotates again: 6-10 are in the files all along, so they ring,
    in order and once (the follower closed the named file to read `.1` and counted them as missed)."""
    path = tmp_path / "runtime-inbox.log"

    def append_and_rotate():
        _append(path, [9, 10])
        os.replace(path, rotated(path))
        _append(path, [11])

    for k, hub_acting in _every_look(monkeypatch, append_and_rotate):
        path.unlink(missing_ok=True)
        rotated(path).unlink(missing_ok=True)
        follower = Follower(path)
        follower.arm(None)
        _append(path, range(1, 6))
        os.replace(path, rotated(path))
        _append(path, range(6, 9))
        with hub_acting:
            got = _ids(follower.read_new())
        got += _ids(follower.read_new())
        follower.close()
        assert got == sorted(set(got)) and got[-6:] == [6, 7, 8, 9, 10, 11], f"hub after look {k}: {got}"


def test_a_named_file_rotated_twice_while_dot_one_is_looked_at_is_finished_first(tmp_path, monkeypatch):
    """A first arm with only `.1` there (1-3); the hub makes the name (4). At any look of the next read the
    hub appends 5 and rotates twice (6 in the file between, 7 under the name): `.1` is then newer than the
    file the follower opened, so that file is finished before `.1` is read, and everything rings in order."""
    path = tmp_path / "runtime-inbox.log"

    def twice():
        _append(path, [5])
        os.replace(path, rotated(path))
        _append(path, [6])
        os.replace(path, rotated(path))
        _append(path, [7])

    for k, hub_acting in _every_look(monkeypatch, twice):
        path.unlink(missing_ok=True)
        rotated(path).unlink(missing_ok=True)
        _append(path, range(1, 4))
        os.replace(path, rotated(path))
        (tmp_path / "held").unlink(missing_ok=True)
        os.link(rotated(path), tmp_path / "held")  # its inode number is not freed for the file between to take
        follower = Follower(path)
        follower.arm(None)
        _append(path, [4])
        with hub_acting:
            got = _ids(follower.read_new())
        got += _ids(follower.read_new())
        follower.close()
        assert (got, follower.missed) == ([4, 5, 6, 7], 0), f"hub after look {k}"


def test_a_dot_one_with_the_number_of_one_read_before_is_still_read(tmp_path):
    """Placed with the name missing, the follower read `.1` (4); two rotations later a new `.1` (6) may have
    that file's inode number (ext4 and tmpfs hand a freed number to the next new file): it is told apart by
    its ids, so 6 rings and only 5, rotated out of both files, counts as missed."""
    path = tmp_path / "runtime-inbox.log"
    _append(path, [1, 2, 3])
    follower = Follower(path)
    follower.arm(None)
    saved = follower.offset()
    follower.close()
    os.replace(path, rotated(path))
    _append(path, [4])
    os.replace(path, rotated(path))  # the name missing: a rotation under way
    follower = Follower(path)
    follower.arm(saved)
    for line_id in (5, 6):
        _append(path, [line_id])
        os.replace(path, rotated(path))
    _append(path, [7])
    assert ([line["id"] for line in follower.read_new()], follower.missed) == ([4, 6, 7], 1)


def test_a_first_arm_that_finds_dot_one_only_at_its_second_look_takes_it_as_old_news(tmp_path, monkeypatch):
    """No `.1` at the arm's first look; the hub rotates the file under the name before its look at the name:
    1 is old news either way, so only 2 rings (the arm took itself for fileless and rang `.1` whole)."""
    path = tmp_path / "runtime-inbox.log"
    _append(path, [1])
    follower = Follower(path)
    with monkeypatch.context() as patched:
        patched.setattr(follow, "os", _HubActsAfterLook(1, lambda: os.replace(path, rotated(path))))
        follower.arm(None)
    _append(path, [2])
    assert ([line["id"] for line in follower.read_new()], follower.missed) == ([2], 0)


def _armed_then_rotated_twice(path) -> Follower:
    """A follower armed at the end of a file holding 1; the file rotates, the next takes 2 and rotates too."""
    _append(path, [1])
    follower = Follower(path)
    follower.arm(None)
    os.replace(path, rotated(path))
    _append(path, [2])
    os.replace(path, rotated(path))
    return follower


def test_while_the_name_is_missing_a_file_rotated_since_is_read_from_dot_one(tmp_path):
    """The followed file rotated, the next one took a line and rotated too, the name not made again yet: the
    follower reads that line from `.1` now, rather than wait for a name that may come after `.1` is gone."""
    path = tmp_path / "runtime-inbox.log"
    follower = _armed_then_rotated_twice(path)
    assert [line["id"] for line in follower.read_new()] == [2]
    _append(path, [3])
    assert ([line["id"] for line in follower.read_new()], follower.missed) == ([3], 0)


def test_a_dot_one_opened_before_the_followed_file_rotates_is_read_all_the_same(tmp_path, monkeypatch):
    """The hub rotates the file the follower just opened, right after the follower opened `.1` (older): `.1`'s
    lines ring, then the followed file's, then the next."""
    path = tmp_path / "runtime-inbox.log"
    follower = _armed_then_rotated_twice(path)
    _append(path, [3])

    def rotate():
        os.replace(path, rotated(path))
        _append(path, [4])

    hub = _HubActsAfterLook(4, rotate)  # the 4th look: `.1` opened
    with _acting(monkeypatch, hub):
        got = _ids(follower.read_new())
    got += _ids(follower.read_new())
    follower.close()
    assert hub.looks >= 4 and (got, follower.missed) == ([2, 3, 4], 0)


class _Hub:
    """A seat's notify files as the hub writes them: appends, rotations at `per_file` lines, and the window
    of a rotation before the next file is made. `gone` are the ids rotated out of both files."""

    def __init__(self, path, per_file: int):
        self.path, self.per_file = path, per_file
        self.newest, self.in_file, self.window, self.gone = 0, 0, False, set()

    def step(self, rng) -> None:
        if not self.window and rng.random() < 0.2 and self.in_file:
            self._rotate()
            self.window = True  # the next file is made with the next line
            return
        if not self.window and self.in_file >= self.per_file:
            self._rotate()
        self.window, self.newest, self.in_file = False, self.newest + 1, self.in_file + 1
        _append(self.path, [self.newest])

    def _rotate(self) -> None:
        if rotated(self.path).exists():
            self.gone |= {json.loads(line)["id"] for line in rotated(self.path).read_text().splitlines()}
        os.replace(self.path, rotated(self.path))
        self.in_file = 0


@pytest.mark.parametrize("seed", range(300))
def test_once_runs_with_the_hub_acting_at_any_look_ring_every_line_once(tmp_path, monkeypatch, seed):
    """`--once` runs, each arming from the place the last one saved, the hub appending and rotating at a
    random look of each: no line rings twice or out of order, none that was in the files at the first arm
    rings, and every later one rings or, rotated out of both files before a run read it, counts as missed."""
    rng = random.Random(seed)
    path = tmp_path / "runtime-inbox.log"
    hub = _Hub(path, rng.choice([2, 3, 5]))
    for _ in range(rng.randrange(1, 12)):
        hub.step(rng)
    old, saved, rung, missed = hub.newest, None, [], 0
    for _ in range(rng.randrange(2, 10)):
        steps, k = rng.randrange(0, 4), rng.randrange(1, 8)
        spy = _HubActsAfterLook(k, lambda: [hub.step(rng) for _ in range(steps)])
        follower = Follower(path)
        if saved is None:  # a first arm (test_a_first_arm_during_a_rotation_... puts the hub within it)
            follower.arm(None)
        with monkeypatch.context() as patched:
            patched.setattr(follow, "os", spy)
            if saved is not None:
                follower.arm(saved)
            got = [line["id"] for line in follower.read_new()]
        if spy.looks < k:
            spy.act()
        rung += got
        missed += follower.missed
        saved = follower.offset()
        follower.close()
        for _ in range(rng.randrange(0, 6)):
            hub.step(rng)
    while hub.window:
        hub.step(rng)
    follower = Follower(path)
    follower.arm(saved)
    rung += [line["id"] for line in follower.read_new()]
    missed += follower.missed
    follower.close()
    assert rung == sorted(set(rung)), "rang twice or out of order"
    assert min(rung, default=old + 1) > old, "old news rang"
    unrung = set(range(old + 1, hub.newest + 1)) - set(rung)
    assert unrung <= hub.gone and missed == len(unrung), (sorted(unrung), missed)


def test_a_place_at_the_start_of_the_file_now_in_dot_one_reads_all_of_it_whatever_its_id(tmp_path):
    """A place at byte 0 of a file read none of it; its id may be another seat's (a listener alive across its
    seat's removal and re-add): once that file is `.1`, all of it rings, not only the ids above the place's."""
    path = tmp_path / "runtime-inbox.log"
    path.touch()
    saved = {"inode": os.stat(path).st_ino, "pos": 0, "id": 5}
    _append(path, [1, 2, 3])
    os.replace(path, rotated(path))
    _append(path, [4])
    follower = Follower(path)
    follower.arm(saved)
    assert (_ids(follower.read_new()), follower.missed) == ([1, 2, 3, 4], 0)
    follower.close()


def test_a_place_saved_while_the_name_is_missing_keeps_its_files_generation(tmp_path):
    """Review of d79656c. A run while the name is missing (a rotation under way, the file deleted by hand)
    finishes the saved file, now `.1`, and saves its place there with no descriptor open: the place lost
    its `gen`, and a later file given that freed number, holding the same ids at the same bytes (a
    restore), was taken for it again: lines 1-5 of the new file neither rung nor counted."""
    _generations_kept(tmp_path)
    path = tmp_path / "runtime-inbox.log"
    _append(path, range(1, 6))
    first = _first_arm_place(path)
    assert "gen" in first
    os.replace(path, rotated(path))  # rotated; the name not made again yet
    second = Follower(path)
    second.arm(first)
    assert second.read_new() == []
    place = second.offset()
    second.close()
    assert place["inode"] == first["inode"], place
    rotated(path).unlink()
    _append(path, range(1, 9))  # a later file, the same ids at the same bytes, that got the freed number
    third = Follower(path)
    third.arm({**place, "inode": os.stat(path).st_ino})  # the number ext4 may hand it (not its generation)
    assert [line["id"] for line in third.read_new()] == list(range(1, 9))
