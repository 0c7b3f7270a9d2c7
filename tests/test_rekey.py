"""`agora agent rekey`: a new key in place of the old, the seat kept, the old key's connections closed."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest

from agora_sdk import Client as SdkClient
from agorad.surface.errors import InternalError, InvalidParams, NotFound, Unauthorized, Unavailable
from tests.hubproc import AGORA
from tests.seats import seats, send


def test_a_rekey_replaces_the_key_and_keeps_everything_else_of_the_seat(hub):
    with seats(hub, "memory", "runtime") as s:
        send(s["memory"], "@runtime", "before", ask=True)
        old_key = (hub.home / "keys/runtime.key").read_text().strip()
        done = hub.call("agents.rekey", agent="runtime")
        assert done["agent"] == "runtime" and done["redirected"] is None
        assert done["key"] != old_key and done["key_file"] == str(hub.home / "keys/runtime.key")
        assert (hub.home / "keys/runtime.key").read_text() == done["key"] + "\n"
        assert stat.S_IMODE(os.stat(hub.home / "keys/runtime.key").st_mode) == 0o600
        # The connection that said hello with the old key is closed, told why.
        with pytest.raises((Unauthorized, Unavailable)):
            s["runtime"].call("inbox.check")
        with pytest.raises(Unauthorized):
            hub.client("runtime", old_key)
        with hub.client("runtime", done["key"]) as runtime:  # the same seat: its mail and its debt are there
            shown = runtime.call("inbox.check")
            assert shown["unread"] == 1 and len(shown["owed"]) == 1
        assert send(s["memory"], "@runtime", "after")["to"] == ["runtime"]  # others' connections are untouched
    assert "error method=" not in hub.log()


def test_a_rekey_follows_an_alias_and_refuses_bad_names(hub):
    hub.add_agent("one")
    hub.call("agents.rename", old="one", new="uno", reason="r")
    done = hub.call("agents.rekey", agent="one")
    assert done["agent"] == "uno" and done["redirected"]["to"] == "uno"
    assert (hub.home / "keys/uno.key").read_text().strip() == done["key"]
    with pytest.raises(NotFound):
        hub.call("agents.rekey", agent="nobody")
    with pytest.raises(InvalidParams):
        hub.call("agents.rekey", agent="Bad Id")


def test_a_key_file_that_cannot_be_written_leaves_the_old_key_standing(hub):
    key = hub.add_agent("memory")
    (hub.home / "keys/memory.key").unlink()
    (hub.home / "keys/memory.key").mkdir()  # where the key file goes, a directory
    with pytest.raises(InternalError, match="the old key still stands"):
        hub.call("agents.rekey", agent="memory")
    hub.client("memory", key).close()  # still says hello


def test_agora_agent_rekey_prints_the_key_once_and_a_seat_reading_its_key_file_goes_on(hub):
    hub.add_agent("runtime")
    env = {**os.environ, "AGORA_HOME": str(hub.home)}
    env.pop("AGORA_KEY", None)
    with SdkClient("runtime", home=hub.home) as sdk:  # read its key from the file
        sdk.call("inbox.check")
        done = subprocess.run([AGORA, "agent", "rekey", "runtime", "--json"], env=env, capture_output=True,
                              text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["key"] == (hub.home / "keys/runtime.key").read_text().strip()
        sdk.connect()  # a reconnect reads the key file again
        assert sdk.call("inbox.check")["unread"] == 0
    plain = subprocess.run([AGORA, "agent", "rekey", "runtime"], env=env, capture_output=True, text=True, timeout=30)
    assert plain.returncode == 0 and plain.stdout.startswith("new key for runtime\nkey: agk_")
    assert "the old key no longer works" in plain.stderr
    assert "`agora setup runtime --url URL --key-stdin` there, URL its hub.url" in plain.stderr  # not `setup ID`
    # A command acting as the seat reads the new key file: nothing to do on this host.
    inbox = subprocess.run([AGORA, "inbox", "--as", "runtime", "--json"], env=env, capture_output=True, text=True,
                           timeout=30)
    assert inbox.returncode == 0, inbox.stderr


def test_a_rekey_cut_between_its_commit_and_its_key_file_is_finished_at_start(hub):
    """A stop between storing the new hash and renaming the staged key into place left the seat's file with
    the old key (refused by then) and the new key only in keys/<id>.key.new. Start-up finishes it; a staged
    key the database does not hold (its batch was lost) is dropped."""
    old = hub.add_agent("runtime")
    hub.add_agent("memory")
    new = hub.call("agents.rekey", agent="runtime")["key"]
    hub.stop()
    keys = hub.home / "keys"
    (keys / "runtime.key.new").write_text(new + "\n")  # as the cut left them
    (keys / "runtime.key").write_text(old + "\n")
    memory_key = (keys / "memory.key").read_text()
    (keys / "memory.key.new").write_text("agk_from_a_lost_batch\n")
    hub.start()
    assert (keys / "runtime.key").read_text() == new + "\n" and not (keys / "runtime.key.new").exists()
    assert (keys / "memory.key").read_text() == memory_key and not (keys / "memory.key.new").exists()
    assert "rekey-settled agent=runtime outcome=installed" in hub.log()
    assert "rekey-settled agent=memory outcome=dropped" in hub.log()
    hub.client("runtime").close()  # says hello with the key file's key
