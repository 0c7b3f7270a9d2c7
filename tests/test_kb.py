"""The knowledge base through the CLI: authors, prefixes, stdin, and limits."""

from __future__ import annotations

import json

import pytest

from agorad.surface.errors import InvalidParams, NotFound, TooLarge


def test_put_get_ls_rm_through_the_cli(cli, hub):
    cli("kb", "put", "team/lead", "memory")
    assert cli("kb", "get", "team/lead").stdout == "memory\n"
    entry = json.loads(cli("kb", "get", "team/lead", "--json").stdout)
    assert entry["author"] == "operator" and entry["value"] == "memory"
    cli("kb", "put", "team/size", "-", input="three\nand a half\n")
    assert hub.call("kb.get", key="team/size")["entry"]["value"] == "three\nand a half\n"
    listed = json.loads(cli("kb", "ls", "team/", "--json").stdout)
    assert [e["key"] for e in listed] == ["team/lead", "team/size"]
    table = cli("kb", "ls", "team/").stdout
    assert "team/size" in table and "three" in table and "and a half" not in table
    cli("kb", "rm", "team/lead")
    cli("kb", "get", "team/lead", code=1)


def test_a_value_on_stdin_that_is_not_utf8_is_refused_as_agora_send_does(cli, hub):
    """A review: it reached the hub as a lone surrogate and exited 1 with the wire's words."""
    refused = cli("kb", "put", "team/lead", "-", input=b"\xff", code=2).stderr
    assert "the value on stdin is not valid UTF-8 (byte 0)" in refused and "surrogate" not in refused
    assert hub.call("kb.list")["entries"] == []


@pytest.mark.parametrize("argv", [["kb", "put", "team/lead", "-"], ["charter", "set", "commons", "-"]])
def test_text_past_the_hubs_frame_is_refused_before_it_is_sent_naming_the_limit_to_meet(cli, hub, argv):
    """A review: 3 MB to kb put, claim receipt or charter set came back as the wire's "a frame is at most 1048576
    bytes; closing the connection", which says nothing of the text's own limit."""
    refused = cli(*argv, input=b"x" * (3 << 20), code=1).stderr
    assert "would be 3145" in refused and "a KB value is at most 64 KiB" in refused, refused
    assert "closing the connection" not in refused
    assert hub.call("kb.list")["entries"] == []


def test_no_profile_is_written_for_the_hubs_own_sender_id(cli, hub):
    """A review: the operator wrote profile/agora-hub, and `agora agents` listed the hub's reserved id."""
    refused = cli("kb", "put", "profile/agora-hub", "{}", code=1).stderr
    assert "the hub's own sender" in refused
    assert "agora-hub" not in [a["id"] for a in hub.call("agents.list")["agents"]]


def test_author_is_the_seat_when_acting_as_one(cli, hub):
    hub.add_agent("memory")
    cli("kb", "put", "--as", "memory", "schema", "v2")
    assert hub.call("kb.get", key="schema")["entry"]["author"] == "memory"


def test_prefix_wildcards_mean_themselves(hub):
    for key in ("a%b", "a_b", "axb"):
        hub.call("kb.put", key=key, value="v")
    assert [e["key"] for e in hub.call("kb.list", prefix="a%")["entries"]] == ["a%b"]
    assert [e["key"] for e in hub.call("kb.list", prefix="a_")["entries"]] == ["a_b"]


def test_limits_and_bad_keys(hub):
    with pytest.raises(TooLarge):
        hub.call("kb.put", key="big", value="x" * (64 * 1024 + 1))
    hub.call("kb.put", key="max", value="x" * (64 * 1024))
    for key in ("", "two\nlines", "k" * 201, "nul\x00"):
        with pytest.raises((InvalidParams, TooLarge)):
            hub.call("kb.put", key=key, value="v")
    with pytest.raises(InvalidParams):
        hub.call("kb.put", key="surrogate", value="\ud800")
    with pytest.raises(NotFound):
        hub.call("kb.delete", key="never")
    assert [e["key"] for e in hub.call("kb.list")["entries"]] == ["max"]


def test_value_with_control_characters_is_stored_faithfully_and_shown_neutralised(cli, hub):
    hostile = "AGORA_WAKE agent=x\x1b[2J\rgotcha"
    hub.call("kb.put", key="hostile", value=hostile)
    assert hub.call("kb.get", key="hostile")["entry"]["value"] == hostile
    table = cli("kb", "ls").stdout
    assert "\x1b" not in table and "\r" not in table


def test_a_listing_pages_by_count_and_by_size_and_after_takes_up_where_one_stopped(cli, hub):
    """kb.list stops at `limit` entries or with the entry that passes PAGE_BYTES of JSON as the frame carries
    it: a reply of many large values used to pass what an asyncio or remote client reads (MAX_REPLY, 16 MiB:
    a value of 64 KiB of UTF-8 outside the BMP escapes to 192 KiB). `more` says so; `after` the last key
    lists the rest, and `agora kb ls` says how."""
    from agorad.surface.protocol import MAX_REPLY, PAGE_BYTES, encode

    for n in range(5):
        hub.call("kb.put", key=f"small/{n}", value="v")
    first = hub.call("kb.list", prefix="small/", limit=2)
    assert [e["key"] for e in first["entries"]] == ["small/0", "small/1"] and first["more"] is True
    rest = hub.call("kb.list", prefix="small/", limit=10, after="small/1")
    assert [e["key"] for e in rest["entries"]] == ["small/2", "small/3", "small/4"] and rest["more"] is False
    big = "\U0001F600" * 16_384  # 64 KiB of UTF-8, 192 KiB of JSON
    count = 90  # 17.7 MB of JSON in all: one page would pass MAX_REPLY
    for n in range(count):
        hub.call("kb.put", key=f"big/{n:03d}", value=big)
    seen, after, pages = [], "", 0
    while True:
        page = hub.call("kb.list", prefix="big/", limit=1000, after=after)
        assert len(encode(page)) < MAX_REPLY and page["entries"]
        assert not page["more"] or len(encode(page)) > PAGE_BYTES
        seen += [e["key"] for e in page["entries"]]
        pages, after = pages + 1, page["entries"][-1]["key"]
        if not page["more"]:
            break
    assert seen == [f"big/{n:03d}" for n in range(count)] and pages == 2
    shown = cli("kb", "ls", "big/", "--limit", "1")
    assert "more entries follow: agora kb ls big/ --after big/000" in shown.stderr
    with pytest.raises(InvalidParams):
        hub.call("kb.list", after=5)


def test_a_value_reaches_a_terminal_inert_and_a_pipe_byte_for_byte(hub):
    """Any agent may write a KB value (and a seat's profile is one): an ESC in it retitled the window or
    cleared the screen of whoever ran `agora kb get` or `agora agent show`."""
    import os
    import pty
    import subprocess

    from tests.hubproc import AGORA

    hostile = "x\x1b]0;PWNED\x07\x1b[2J\u202eline\nnext\tcol"
    hub.add_agent("bob")
    hub.call("kb.put", key="notes/x", value=hostile)
    hub.call("kb.put", key="profile/bob", value=hostile)
    env = {**os.environ, "AGORA_HOME": str(hub.home)}
    env.pop("AGORA_KEY", None)

    def on_a_terminal(*args: str) -> str:
        leader, follower = pty.openpty()
        done = subprocess.run([AGORA, *args], stdout=follower, stderr=subprocess.PIPE, env=env, timeout=30)
        os.close(follower)
        out = b""
        try:
            while chunk := os.read(leader, 65536):
                out += chunk
        except OSError:  # EIO: the terminal's other end is closed and read to its end
            pass
        os.close(leader)
        assert done.returncode == 0, done.stderr
        return out.decode()

    for args in (("kb", "get", "notes/x"), ("agent", "show", "bob")):
        shown = on_a_terminal(*args)
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown, repr(shown)
        assert "\\x1b]0;PWNED\\x07" in shown and "\\u202e" in shown and "next\tcol" in shown
    piped = subprocess.run([AGORA, "kb", "get", "notes/x"], capture_output=True, env=env, timeout=30)
    assert piped.stdout == (hostile + "\n").encode()


def test_a_profile_nested_past_the_json_parsers_depth_is_listed_as_text(cli, hub):
    """A profile of an id with no seat is listed from the profile alone, its liveness_mode read from its JSON.
    One nested deeper than the parser goes (it fits in a value) made agents.list, agents.get and hub.status
    fail with `internal` for everyone, for as long as the entry stood: it is a profile declaring nothing."""
    deep = "[" * 60_000
    cli("kb", "put", "profile/ghost", "-", input=deep)
    listed = json.loads(cli("agents", "--json").stdout)
    ghost = next(agent for agent in listed if agent["id"] == "ghost")
    assert ghost["liveness_mode"] is None and ghost["profile"] == deep
    assert hub.call("agents.get", agent="ghost")["agent"]["status"] == "dormant"
    cli("status")
