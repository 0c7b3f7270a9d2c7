"""`agora setup`: the real CLI wires real files against a real hub, and takes the wiring out again.

Whether the wiring works inside each harness is proven with the real CLIs by
`make test-harness` (tests/harness/); these tests hold the files: what is
written, what is kept, what is refused.
"""

from __future__ import annotations

import json
import os
import re
import stat
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from agorad.surface import settings, wiring
from agorad.surface.paths import seat_record
from tests.hubproc import AGORA
from tests.remote_seat import remote_setup, seat_env, wire_remote_seat

USERS_SETTINGS = '{\n    "model": "opus",\n    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}\n}\n'
USERS_CLAUDE_MD = "# My project\n\nBe kind.\n"


def agora(*args: str, cwd: Path, code: int = 0, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("AGORA_HOME", "AGORA_KEY")}
    done = subprocess.run([AGORA, *args], cwd=cwd, capture_output=True, text=True, env={**full, **(env or {})},
                          timeout=30)
    assert done.returncode == code, f"agora {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def ws(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def claude_ws(ws: Path) -> Path:
    (ws / ".claude").mkdir()
    (ws / ".claude/settings.json").write_text(USERS_SETTINGS)
    (ws / "CLAUDE.md").write_text(USERS_CLAUDE_MD)
    return ws


def commands(settings_json: dict, event: str) -> list[str]:
    return [h["command"] for group in settings_json["hooks"][event] for h in group["hooks"]]


def test_claude_wiring_keeps_the_users_hooks_and_registers_the_seat(hub, ws):
    claude_ws(ws)
    done = agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    assert "registered runtime" in done.stderr

    wired = json.loads((ws / ".claude/settings.json").read_text())
    listen = wiring.shell(wiring.hook_listen(AGORA, "runtime", hub.home))
    backstop = wiring.shell(wiring.backstop(AGORA, "claude", "runtime", hub.home))
    assert wired["model"] == "opus"
    assert commands(wired, "Stop") == ["echo mine", backstop, listen]
    assert commands(wired, "SessionStart") == [listen]
    assert "UserPromptSubmit" not in wired["hooks"]  # a listener armed at every prompt is a wake storm
    rewake = [h for g in wired["hooks"]["SessionStart"] for h in g["hooks"]][0]
    assert rewake["asyncRewake"] is True and rewake["timeout"] > settings.HOOK_MAX_WAIT
    assert os.path.isabs(listen.split()[0]) and f"--home {hub.home}" in listen

    text = (ws / "CLAUDE.md").read_text()
    assert text.startswith("<!-- agora:begin") and text.endswith("\n\n" + USERS_CLAUDE_MD)
    assert wiring.shell(wiring.inbox(AGORA, "runtime", hub.home)) in text

    record = tomllib.loads(seat_record(ws).read_text())
    assert record == {"format": 1, "id": "runtime", "hub": str(hub.home / "agorad.sock"),
                      "key_file": str(hub.home / "keys/runtime.key"), "harnesses": ["claude"],
                      "created": [".mcp.json"], "made_dirs": [".agora"]}  # .claude/ was the user's
    mcp = json.loads((ws / ".mcp.json").read_text())["mcpServers"]["agora"]
    assert [mcp["command"], *mcp["args"]] == wiring.mcp_server(AGORA, "runtime", hub.home)
    assert wired["enabledMcpjsonServers"] == ["agora"] and wired["permissions"]["allow"] == ["mcp__agora"]
    key = (hub.home / "keys/runtime.key").read_text().strip()
    assert hub.call("agents.get", agent="runtime")["agent"]["liveness_mode"] == "async"
    assert not any(key.encode() in data for data in snapshot(ws).values())  # no key in any workspace file


def test_a_rerun_changes_nothing_and_remove_gives_back_the_users_bytes(hub, ws):
    claude_ws(ws)
    before = snapshot(ws)
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    wired = snapshot(ws)
    again = agora("setup", "runtime", "--home", str(hub.home), cwd=ws)  # the record remembers claude
    assert snapshot(ws) == wired
    assert again.stdout.count("unchanged") == 5

    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert snapshot(ws) == before
    assert not (ws / ".agora").exists()
    assert hub.call("agents.get", agent="runtime")  # the seat stays registered


def test_a_seat_known_from_its_profile_alone_is_registered_by_setup(hub, ws):
    """agents.get answers for an id that only a KB profile names (registered false): setup took that for a seat
    registered before and wrote no key, and --check said "registered" (a review of the change that made it)."""
    claude_ws(ws)
    hub.call("kb.put", key="profile/dave", value='{"liveness_mode": "always-on"}')
    report = json.loads(agora("setup", "dave", "--harness", "claude", "--home", str(hub.home), "--json", cwd=ws).stdout)
    assert report["hub"]["registered"] == "registered" and report["hub"]["key_file_exists"], report
    assert hub.call("agents.get", agent="dave")["agent"]["registered"] is True
    assert (hub.home / "keys" / "dave.key").is_file()
    agora("setup", "erin", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    hub.call("agents.remove", agent="erin")
    hub.call("kb.put", key="profile/erin", value="{}")
    checked = json.loads(agora("setup", "--check", "--json", cwd=ws, code=1).stdout)
    assert checked["hub"]["registered"] is False, checked  # its profile is still there; the seat is not


def test_remove_keeps_what_the_user_added_after_setup(hub, ws):
    claude_ws(ws)
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    data = json.loads((ws / ".claude/settings.json").read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "echo later"}]})
    (ws / ".claude/settings.json").write_text(json.dumps(data))
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    left = json.loads((ws / ".claude/settings.json").read_text())
    assert commands(left, "Stop") == ["echo mine", "echo later"] and "SessionStart" not in left["hooks"]
    assert (ws / "CLAUDE.md").read_text() == USERS_CLAUDE_MD


def test_codex_wiring_uses_matcher_groups_and_says_how_to_trust(hub, ws):
    done = agora("setup", "runtime", "--harness", "codex", "--home", str(hub.home), cwd=ws)
    hooks = json.loads((ws / ".codex/hooks.json").read_text())
    assert set(hooks) == {"hooks"}  # Codex refuses a hooks.json with any other root key
    stop = hooks["hooks"]["Stop"][0]["hooks"][0]
    assert stop["command"] == wiring.shell(wiring.backstop(AGORA, "codex", "runtime", hub.home))
    assert "async" not in stop  # an async hook is silently skipped
    assert hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"].split()[1:3] == ["hook", "start"]
    assert "trust" in done.stderr and "/hooks" in done.stderr
    assert (ws / "AGENTS.md").read_text().startswith("<!-- agora:begin")
    server = tomllib.loads((ws / ".codex/config.toml").read_text())["mcp_servers"]["agora"]
    assert [server["command"], *server["args"]] == wiring.mcp_server(AGORA, "runtime", hub.home)
    assert server["default_tools_approval_mode"] == "approve"  # an unattended seat never freezes on a dialog
    assert server["required"] is True  # else Codex's first request may go out without agora's tools


def test_cursor_wiring_teaches_monitored_background_reception(hub, ws):
    agora("setup", "runtime", "--harness", "cursor", "--home", str(hub.home), cwd=ws)
    rule = (ws / ".cursor/rules/agora.mdc").read_text()
    front = rule.split("---\n")[1]
    assert "alwaysApply: true\n" in front  # a boolean, not a string
    assert wiring.background_loop(AGORA, "runtime", hub.home) in rule
    assert '"pattern": "^AGORA_WAKE"' in rule and f'"debounce_ms": {settings.MONITOR_DEBOUNCE_MS}' in rule
    assert settings.MONITOR_DEBOUNCE_MS >= 15000
    assert "pgrep" in rule and "block_until_ms 0" in rule
    hooks = json.loads((ws / ".cursor/hooks.json").read_text())
    assert hooks["version"] == 1
    assert hooks["hooks"]["stop"] == [{"command": wiring.shell(wiring.backstop(AGORA, "cursor", "runtime", hub.home)),
                                       "timeout": 30}]
    mcp = json.loads((ws / ".cursor/mcp.json").read_text())["mcpServers"]["agora"]
    assert [mcp["command"], *mcp["args"]] == wiring.mcp_server(AGORA, "runtime", hub.home)


def test_without_harness_it_wires_what_the_workspace_uses(hub, ws):
    (ws / ".claude").mkdir()
    (ws / ".codex").mkdir()
    done = agora("setup", "runtime", "--home", str(hub.home), cwd=ws)
    assert "(claude, codex)" in done.stdout
    assert (ws / ".claude/settings.json").exists() and (ws / ".codex/hooks.json").exists()
    assert not (ws / ".cursor").exists()


def test_no_harness_found_is_a_usage_error_that_writes_nothing(hub, ws):
    done = agora("setup", "runtime", "--home", str(hub.home), cwd=ws, code=2)
    assert "--harness" in done.stderr
    assert snapshot(ws) == {}


@pytest.mark.parametrize("relative, corrupt", [
    (".claude/settings.json", '{"hooks": '),
    (".claude/settings.json", '{"hooks": {"Stop": {}}}'),
    (".codex/hooks.json", "[1, 2"),
    (".codex/config.toml", "[model\n"),
    (".cursor/hooks.json", '"just a string"'),
    (".claude/settings.json", '{"a": ' + "[" * 200_000 + "]" * 200_000 + "}"),  # RecursionError: a traceback
    (".codex/config.toml", "a = " + "[" * 100_000 + "]" * 100_000 + "\n"),
])
def test_a_corrupt_config_is_refused_and_nothing_is_written(hub, ws, relative, corrupt):
    (ws / relative).parent.mkdir(parents=True)
    (ws / relative).write_text(corrupt)
    before = snapshot(ws)
    harness = relative.split("/")[0].strip(".")
    done = agora("setup", "runtime", "--harness", harness, "--home", str(hub.home), cwd=ws, code=1)
    assert relative.split("/")[-1] in done.stderr and "by hand" in done.stderr
    assert snapshot(ws) == before
    assert "runtime" not in [a["id"] for a in hub.call("agents.list")["agents"]]  # nor is the seat registered
    assert not (hub.home / "keys/runtime.key").exists()


def test_a_foreign_rule_file_is_not_overwritten(hub, ws):
    (ws / ".cursor/rules").mkdir(parents=True)
    (ws / ".cursor/rules/agora.mdc").write_text("my own rule\n")
    done = agora("setup", "runtime", "--harness", "cursor", "--home", str(hub.home), cwd=ws, code=1)
    assert "not written by agora setup" in done.stderr
    assert (ws / ".cursor/rules/agora.mdc").read_text() == "my own rule\n"


def test_bad_input_changes_nothing(hub, ws):
    claude_ws(ws)
    before = snapshot(ws)
    assert "is not one of" in agora("setup", "runtime", "--harness", "vim", "--home", str(hub.home),
                                     cwd=ws, code=2).stderr
    assert "not a valid agent id (1-64 of a-z" in agora("setup", "bad id!", "--harness", "claude", "--home", str(hub.home),
                                           cwd=ws, code=2).stderr
    assert "name the seat" in agora("setup", "--harness", "claude", "--home", str(hub.home), cwd=ws, code=2).stderr
    assert snapshot(ws) == before
    with pytest.raises(Exception):
        hub.call("agents.get", agent="runtime")


def test_an_unwritable_target_stops_setup_before_any_write(hub, ws):
    (ws / ".claude").write_text("a file where a directory belongs\n")
    (ws / "CLAUDE.md").write_text(USERS_CLAUDE_MD)
    before = snapshot(ws)
    done = agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws, code=1)
    assert "cannot write" in done.stderr and "nothing was changed" in done.stderr
    assert snapshot(ws) == before


def test_with_the_hub_down_setup_still_wires_and_says_so(home, ws):
    (ws / ".claude").mkdir()
    done = agora("setup", "runtime", "--home", str(home), cwd=ws)
    assert "the hub is down" in done.stderr and "not registered" in done.stderr
    assert (ws / ".claude/settings.json").exists() and seat_record(ws).exists()


def test_commands_in_the_workspace_act_as_its_seat(hub, ws):
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    hub.add_agent("peer")
    (ws / "deep/er").mkdir(parents=True)
    peer_key = (hub.home / "keys/peer.key").read_text().strip()
    agora("send", "--home", str(hub.home), "--as", "peer", "@runtime", "--title", "hi", cwd=ws)
    shown = json.loads(agora("inbox", "--json", cwd=ws / "deep/er").stdout)  # no --as, no --home
    assert shown["unread"] == 1
    # The nearest record only: a nested workspace with its own record is another seat.
    nested = ws / "deep"
    agora("setup", "other", "--harness", "claude", "--home", str(hub.home), cwd=nested)
    assert json.loads(agora("inbox", "--json", cwd=ws / "deep/er").stdout)["unread"] == 0
    # --as wins over the record.
    assert json.loads(agora("inbox", "--json", "--as", "peer", cwd=ws, env={"AGORA_KEY": peer_key}).stdout)["unread"] == 0
    # `--as -` is the local operator where a command takes one, before or after the command's name.
    authors = {}
    for key, args in (("notes/seat", ()), ("notes/op", ("--as", "-")), ("notes/op2", ())):
        before = ("--as", "-") if key == "notes/op2" else ()
        agora(*before, "kb", "put", key, "v", *args, cwd=ws)
        authors[key] = json.loads(agora("kb", "get", key, "--json", cwd=ws).stdout)["author"]
    assert authors == {"notes/seat": "runtime", "notes/op": "operator", "notes/op2": "operator"}
    refused = agora("inbox", "--as", "-", cwd=ws, code=2)
    assert "acts as a seat: give its id" in refused.stderr


def test_a_corrupt_record_is_a_clear_error_unless_as_is_given(hub, ws):
    claude_ws(ws)
    before = snapshot(ws)
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    seat_record(ws).write_text("format = [\n")
    done = agora("inbox", cwd=ws, code=2)
    assert "seat.toml is not valid TOML" in done.stderr and "--as" in done.stderr
    agora("inbox", "--as", "runtime", "--home", str(hub.home), cwd=ws)
    # A partial removal needs the record (which harnesses stay); a whole one does not.
    assert "not valid TOML" in agora("setup", "--remove", "--harness", "claude", "--home", str(hub.home), cwd=ws,
                                     code=1).stderr
    done = agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert "removing every harness's wiring and the record anyway" in done.stderr
    assert snapshot(ws) == before and not (ws / ".agora").exists()


def test_check_says_what_is_wired_stale_and_what_would_wake(hub, ws):
    agora("setup", "runtime", "--harness", "claude", "--harness", "codex", "--home", str(hub.home), cwd=ws)
    report = json.loads(agora("setup", "--check", "--json", cwd=ws).stdout)
    assert report["ok"] and report["hub"] == {"up": True, "registered": True, "key": True}
    assert {f["state"] for h in report["harnesses"] for f in h["files"]} == {"wired"}
    assert report["stop_hook_fired"] is None
    assert "NEVER FIRED" in agora("setup", "--check", cwd=ws).stdout

    path = ws / ".claude/settings.json"
    path.write_text(path.read_text().replace(AGORA, "/old/venv/bin/agora"))  # agora moved since setup
    done = agora("setup", "--check", cwd=ws, code=1)
    assert ".claude/settings.json stale" in done.stdout and "rewire" in done.stdout
    agora("setup", cwd=ws)  # a re-run from the record rewires
    assert json.loads(agora("setup", "--check", "--json", cwd=ws).stdout)["ok"]
    key = hub.home / "keys" / "runtime.key"
    kept = key.read_bytes()
    key.write_bytes(b"")  # there, but no key (it counted as one)
    report = json.loads(agora("setup", "--check", "--json", cwd=ws, code=1).stdout)
    assert report["hub"]["key"] is False and f"{key} is empty: commands acting as runtime" in report["problems"][0]
    key.write_bytes(kept)
    hub.stop()
    assert "DOWN" in agora("setup", "--check", cwd=ws, code=1).stdout


def test_concurrent_setups_serialise_their_merges(hub, ws):
    claude_ws(ws)
    runs = [subprocess.Popen([AGORA, "setup", "runtime", "--harness", h, "--home", str(hub.home)], cwd=ws,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for h in ("claude", "codex", "cursor")]
    assert [run.wait(timeout=30) for run in runs] == [0, 0, 0]
    assert tomllib.loads(seat_record(ws).read_text())["harnesses"] == ["claude", "cursor", "codex"]
    assert commands(json.loads((ws / ".claude/settings.json").read_text()), "Stop")[0] == "echo mine"


@pytest.mark.parametrize("text, says", [
    ("a = " + "[" * 100_000 + "]" * 100_000 + "\n", "is not valid TOML"),  # RecursionError: a traceback
    ('format = 2\nid = "runtime"\nhub = "/h/agorad.sock"\nkey_file = "/h/keys/runtime.key"\n', "format 2"),
    ('format = 1\nid = "bad id"\nhub = "/h/agorad.sock"\nkey_file = "/h/k"\n', "no valid id"),
    ('format = 1\nid = "runtime"\n', "lacks hub or key_file"),
    ('format = 1\nid = "runtime"\nhub = "/h/agorad.sock"\nkey_file = "/h/k"\nharnesses = "claude"\n', "harnesses"),
])
def test_an_unusable_record_says_what_is_wrong(ws, text, says):
    seat_record(ws).parent.mkdir()
    seat_record(ws).write_text(text)
    done = agora("inbox", cwd=ws, code=2)
    assert says in done.stderr and str(seat_record(ws)) in done.stderr


@pytest.mark.parametrize("end", ["\r\n", "\r"])
def test_a_record_saved_with_other_line_ends_reads_as_before(ws, end):
    """Read as a text-mode open read it (universal newlines), so an editor's CR line ends still load."""
    seat_record(ws).parent.mkdir()
    seat_record(ws).write_bytes(end.join(['format = 2', 'id = "runtime"', 'hub = "/h/agorad.sock"',
                                          'key_file = "/h/k"', '']).encode())
    assert "format 2" in agora("inbox", cwd=ws, code=2).stderr  # the record was read: its format is refused


def test_status_shows_a_wired_stop_hook_never_fired_until_the_wired_command_runs(hub, ws):
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    assert "NEVER FIRED" in agora("status", "--home", str(hub.home), cwd=ws).stdout
    stop = [h["command"] for g in json.loads((ws / ".claude/settings.json").read_text())["hooks"]["Stop"]
            for h in g["hooks"] if " hook stop " in h["command"]][0]
    done = subprocess.run(stop, shell=True, cwd=ws, input="{}", capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr  # nothing unread: the turn may end
    shown = agora("status", "--home", str(hub.home), cwd=ws).stdout
    assert "NEVER FIRED" not in shown and "ago" in shown
    agora("setup", "--remove", cwd=ws)
    assert "NEVER FIRED" not in agora("status", "--home", str(hub.home), cwd=ws).stdout


def test_gemini_wiring_names_its_hooks_and_takes_milliseconds(hub, ws):
    done = agora("setup", "runtime", "--harness", "gemini", "--home", str(hub.home), cwd=ws)
    hooks = json.loads((ws / ".gemini/settings.json").read_text())["hooks"]
    after = hooks["AfterAgent"][0]["hooks"][0]
    assert after == {"name": "agora-backstop", "type": "command", "timeout": 30000,
                     "command": wiring.shell(wiring.backstop(AGORA, "gemini", "runtime", hub.home))}
    assert hooks["SessionStart"][0]["hooks"][0]["name"] == "agora-start"
    assert (ws / "GEMINI.md").read_text().startswith("<!-- agora:begin")
    assert "Trust folder" in done.stderr


def test_opencode_gets_a_plugin_with_the_canonical_commands(hub, ws):
    agora("setup", "runtime", "--harness", "opencode", "--home", str(hub.home), cwd=ws)
    plugin = (ws / ".opencode/plugins/agora.js").read_text()
    assert plugin.startswith("// agora: written by `agora setup`")
    assert json.dumps(wiring.hook_listen(AGORA, "runtime", hub.home)) in plugin
    assert json.dumps(wiring.backstop(AGORA, "opencode", "runtime", hub.home)) in plugin


def test_codex_and_opencode_share_one_agents_md_block_and_a_partial_remove_keeps_the_other(hub, ws):
    (ws / "AGENTS.md").write_text("# Team rules\n")
    agora("setup", "runtime", "--harness", "codex", "--harness", "opencode", "--home", str(hub.home), cwd=ws)
    text = (ws / "AGENTS.md").read_text()
    assert text.count("agora:begin") == 1 and "In Codex:" in text and "In opencode:" in text
    assert text.endswith("\n\n# Team rules\n")
    agora("setup", "--remove", "--harness", "codex", cwd=ws)
    text = (ws / "AGENTS.md").read_text()
    assert "In Codex:" not in text and "opencode" in text and text.count("agora:begin") == 1
    assert not (ws / ".codex").exists() and (ws / ".opencode/plugins/agora.js").exists()
    assert tomllib.loads(seat_record(ws).read_text())["harnesses"] == ["opencode"]
    assert json.loads(agora("setup", "--check", "--json", cwd=ws).stdout)["ok"]
    agora("setup", "--remove", cwd=ws)
    assert (ws / "AGENTS.md").read_text() == "# Team rules\n" and not (ws / ".opencode").exists()


USERS_CODEX_CONFIG = '# my settings\nmodel = "o3"  # the one I like\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'


def test_codex_config_keeps_the_users_comments_and_remove_restores_its_bytes(hub, ws):
    (ws / ".codex").mkdir()
    (ws / ".codex/config.toml").write_text(USERS_CODEX_CONFIG)
    agora("setup", "runtime", "--harness", "codex", "--home", str(hub.home), cwd=ws)
    text = (ws / ".codex/config.toml").read_text()
    assert text.startswith(USERS_CODEX_CONFIG) and "# agora:begin" in text
    assert set(tomllib.loads(text)["mcp_servers"]) == {"docs", "agora"}
    wired = snapshot(ws)
    agora("setup", "runtime", "--home", str(hub.home), cwd=ws)
    assert snapshot(ws) == wired
    agora("setup", "--remove", cwd=ws)
    assert (ws / ".codex/config.toml").read_text() == USERS_CODEX_CONFIG


def test_a_users_own_agora_table_in_codex_config_is_refused(hub, ws):
    (ws / ".codex").mkdir()
    (ws / ".codex/config.toml").write_text('[mcp_servers.agora]\ncommand = "mine"\n')
    before = snapshot(ws)
    done = agora("setup", "runtime", "--harness", "codex", "--home", str(hub.home), cwd=ws, code=1)
    assert "config.toml" in done.stderr and snapshot(ws) == before
    # It says which table, and not that the file is invalid TOML at a line of a text the user never saw.
    assert "defines [mcp_servers.agora] itself" in done.stderr and "not valid TOML" not in done.stderr


def test_a_gemini_hooks_switch_beside_the_events_is_kept(hub, ws):
    """A review: `{"hooks": {"enabled": true}}`, which some Gemini CLI docs give to turn hooks on, was refused
    as not an object of lists."""
    (ws / ".gemini").mkdir()
    users = '{"hooks": {"enabled": true}}\n'
    (ws / ".gemini/settings.json").write_text(users)
    agora("setup", "runtime", "--harness", "gemini", "--home", str(hub.home), cwd=ws)
    hooks = json.loads((ws / ".gemini/settings.json").read_text())["hooks"]
    assert hooks["enabled"] is True and hooks["AfterAgent"][0]["hooks"][0]["name"] == "agora-backstop"
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert (ws / ".gemini/settings.json").read_text() == users


def test_a_settings_file_with_comments_is_named_as_such_and_left_alone(hub, ws):
    """A review: JSON with comments, which Gemini CLI reads, was called "not valid JSON"."""
    (ws / ".gemini").mkdir()
    (ws / ".gemini/settings.json").write_text('{\n  // the theme\n  "theme": "dark" /* mine */\n}\n')
    before = snapshot(ws)
    done = agora("setup", "runtime", "--harness", "gemini", "--home", str(hub.home), cwd=ws, code=1)
    assert "settings.json holds comments" in done.stderr and "not valid JSON" not in done.stderr
    assert snapshot(ws) == before


def test_files_whose_lines_end_in_crlf_keep_them_through_setup_and_a_rerun(hub, ws):
    """A review: agora-setup(1) says \\r\\n is kept; a CRLF settings.json came back LF, a CLAUDE.md mixed."""
    (ws / ".claude").mkdir()
    (ws / ".claude/settings.json").write_bytes(b'{\r\n  "theme": "dark"\r\n}\r\n')
    (ws / "CLAUDE.md").write_bytes(b"# Mine\r\n\r\nline two\r\n")
    before = tree(ws)
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    wired = snapshot(ws)
    for name in (".claude/settings.json", "CLAUDE.md"):
        assert wired[name].count(b"\n") == wired[name].count(b"\r\n") > 3, wired[name]
    assert json.loads(wired[".claude/settings.json"])["theme"] == "dark"
    assert wired["CLAUDE.md"].endswith(b"# Mine\r\n\r\nline two\r\n")
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    assert snapshot(ws) == wired
    checked = agora("setup", "--check", "--home", str(hub.home), cwd=ws).stdout  # wired, not stale (a review)
    assert "stale" not in checked and "CLAUDE.md" in checked, checked
    with open(ws / "CLAUDE.md", "ab") as f:  # the user's change since: the unwired text, not the saved copy
        f.write(b"line three\r\n")
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert (ws / "CLAUDE.md").read_bytes() == b"# Mine\r\n\r\nline two\r\nline three\r\n"
    assert tree(ws)[".claude/settings.json"] == before[".claude/settings.json"]



@pytest.mark.parametrize("users", [b"# Notes\r\r\nline two\r\n", b"one\rtwo\r\n", b"mixed\nends\r\n"])
def test_a_file_with_other_carriage_returns_comes_back_byte_for_byte(hub, ws, users):
    """A review: a \\r\\r\\n line (a double conversion's leftover) lost a \\r while wired and after --remove."""
    (ws / ".claude").mkdir()
    (ws / "CLAUDE.md").write_bytes(users)
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    assert (ws / "CLAUDE.md").read_bytes().endswith(users)
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert (ws / "CLAUDE.md").read_bytes() == users


def test_an_empty_user_file_survives_remove(hub, ws):
    (ws / ".cursor").mkdir()
    (ws / ".cursor/mcp.json").write_text("{}\n")
    agora("setup", "runtime", "--harness", "cursor", "--home", str(hub.home), cwd=ws)
    assert "agora" in json.loads((ws / ".cursor/mcp.json").read_text())["mcpServers"]
    agora("setup", "--remove", cwd=ws)
    assert (ws / ".cursor/mcp.json").read_text() == "{}\n"


def test_without_the_mcp_package_no_mcp_entry_is_written(tmp_path):
    from agora_setup import harnesses

    seat = harnesses.Seat("runtime", tmp_path / "home", AGORA, tmp_path, mcp=False)
    texts = {t.path.name: t.wire(None) for t in harnesses.targets(list(harnesses.supported()), seat)}
    assert not {"mcp.json", ".mcp.json", "config.toml"} & set(texts)
    assert all("mcpServers" not in text and "mcp__agora" not in text for text in texts.values())


# --- a seat whose hub runs on another host (--url) ------------------------------------------


def wired_remote_seat(remote, ws: Path, seat_home: Path) -> dict:
    claude_ws(ws)
    return wire_remote_seat(remote.url, remote.keys["alice"], ws, seat_home)


def test_a_remote_seat_keeps_its_key_private_and_its_hubs_url_in_its_home(remote, ws, tmp_path):
    """`agora setup ID --url URL --key-stdin`: the hub says hello to the piped key; the key goes to the seat
    host's home (0600), never into the workspace or argv; the home's hub.url makes every command that names
    the home reach the hub there, the wired hooks' command lines unchanged."""
    seat_home = tmp_path / "seathome"
    report = wired_remote_seat(remote, ws, seat_home)
    assert report["hub"] == {"up": True, "registered": "remote", "url": remote.url, "key_file_exists": True}
    assert any("accepted alice's key" in note for note in report["notes"])
    mcp = json.loads((ws / ".mcp.json").read_text())["mcpServers"]["agora"]  # served over the port (test_mcp_remote)
    assert mcp["args"] == ["mcp", "--home", str(seat_home), "--as", "alice"]
    key_file = seat_home / "keys" / "alice.key"
    assert key_file.read_text().strip() == remote.keys["alice"] and (key_file.stat().st_mode & 0o777) == 0o600
    assert (seat_home / "hub.url").read_text() == remote.url + "\n"
    assert not any(remote.keys["alice"].encode() in data for data in snapshot(ws).values())
    hooks = json.loads((ws / ".claude/settings.json").read_text())["hooks"]
    local = wiring.backstop(wiring.agora_executable(), "claude", "alice", seat_home)
    assert wiring.shell(local) in commands({"hooks": hooks}, "Stop")  # the same line a local seat gets
    with remote.client("bob", remote.keys["bob"]) as bob:
        bob.call("messages.send", target="@alice", title="over the wire", body="", ask=True)
    inbox = subprocess.run([AGORA, "inbox", "--json"], cwd=ws, env=seat_env(), capture_output=True, text=True,
                           timeout=30)
    assert inbox.returncode == 0, inbox.stderr
    assert json.loads(inbox.stdout)["unread"] == 1
    again = remote_setup("--json", cwd=ws)  # a re-run takes the seat, the home, its url and the kept key
    assert json.loads(again.stdout)["hub"]["registered"] == "remote"
    check = subprocess.run([AGORA, "setup", "--check", "--json"], cwd=ws, env=seat_env(), capture_output=True,
                           text=True, timeout=30)
    assert json.loads(check.stdout)["hub"] == {"up": True, "registered": True, "key": True, "url": remote.url}


def test_a_remote_seats_wired_hooks_reach_its_hub(remote, ws, tmp_path):
    """The stop hook and the hook listener exactly as wired, run from the workspace with the environment a
    harness gives them: the backstop holds the turn to the unread ask, the listener wakes for it over ws."""
    seat_home = tmp_path / "seathome"
    wired_remote_seat(remote, ws, seat_home)
    with remote.client("bob", remote.keys["bob"]) as bob:
        bob.call("messages.send", target="@alice", title="please review", body="", ask=True)
    settings_json = json.loads((ws / ".claude/settings.json").read_text())
    stop = subprocess.run(commands(settings_json, "Stop")[-1], shell=True, cwd=ws, env=seat_env(),
                          input=json.dumps({"hook_event_name": "Stop", "stop_hook_active": False}),
                          capture_output=True, text=True, timeout=30)
    assert stop.returncode in (0, 2), stop.stderr
    assert "please review" in stop.stdout + stop.stderr
    listen = wiring.shell([*wiring.loop_listen(wiring.agora_executable(), "alice", seat_home)[:-2], "--max-wait", "20s",
                           "--debounce", "0"])
    listener = subprocess.Popen(listen, shell=True, cwd=ws, env=seat_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout.readline().startswith("AGORA_LISTEN armed source=ws agent=alice")
        with remote.client("bob", remote.keys["bob"]) as bob:
            bob.call("messages.send", target="@alice", title="one more", body="")
        woke = listener.stdout.readline()
        assert woke.startswith("AGORA_WAKE") and "agent=alice" in woke, woke
        assert listener.wait(timeout=20) == 2
    finally:
        listener.kill()


def test_status_on_a_remote_seats_host_asks_as_its_seat_and_shows_this_hosts_listener(remote, ws, tmp_path):
    """`agora status --home` on the seat's host: the hub over its port, asked as the home's one seat; the
    LISTENER column is this host's (the seat's listener keeps its pidfile in the seat's home)."""
    seat_home = tmp_path / "seathome"
    wired_remote_seat(remote, ws, seat_home)
    listen = wiring.shell([*wiring.loop_listen(wiring.agora_executable(), "alice", seat_home)[:-2], "--max-wait", "20s"])
    listener = subprocess.Popen(listen, shell=True, cwd=ws, env=seat_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout.readline().startswith("AGORA_LISTEN armed source=ws agent=alice")
        shown = agora("status", "--home", str(seat_home), "--json", cwd=tmp_path, env={"AGORA_URL": ""})
        info = json.loads(shown.stdout)
        assert (info["remote"], info["asked_as"], info["local_home"]) == (remote.url, "alice", str(seat_home))
        seats = {agent["id"]: agent for agent in info["agents"]}
        assert seats["alice"]["listener"] == "armed" and seats["bob"]["listener"] is None
        text = agora("status", "--home", str(seat_home), cwd=tmp_path).stdout
        assert f"remote: {remote.url}, asked as alice" in text
    finally:
        listener.kill()
    # `agora agents` and `agora agent show` ask as the seat too: they were refused as the local operator (a review).
    listed = json.loads(agora("agents", "--home", str(seat_home), "--json", cwd=tmp_path, env={"AGORA_URL": ""}).stdout)
    assert {"alice", "bob"} <= {agent["id"] for agent in listed}
    shown = agora("agent", "show", "bob", "--home", str(seat_home), "--json", cwd=tmp_path, env={"AGORA_URL": ""})
    assert json.loads(shown.stdout)["id"] == "bob"
    (seat_home / "keys" / "bob.key").write_text(remote.keys["bob"] + "\n")
    two = agora("status", "--home", str(seat_home), cwd=tmp_path, code=2)
    assert "keeps the keys of alice, bob: give --as ID" in two.stderr
    assert "give --as ID" in agora("agents", "--home", str(seat_home), cwd=tmp_path, code=2).stderr
    assert json.loads(agora("agent", "show", "alice", "--home", str(seat_home), "--as", "bob", "--json",
                            cwd=tmp_path).stdout)["id"] == "alice"
    assert json.loads(agora("status", "--home", str(seat_home), "--as", "bob", "--json", cwd=tmp_path).stdout)[
        "asked_as"] == "bob"


def test_a_remote_key_the_hub_refuses_writes_nothing(remote, ws, tmp_path):
    claude_ws(ws)
    before = snapshot(ws)
    seat_home = tmp_path / "seathome"
    done = remote_setup("alice", "--harness", "claude", "--url", remote.url, "--key-stdin", "--home", str(seat_home),
                        cwd=ws, key=remote.keys["bob"], code=1)
    assert "refused alice" in done.stderr and "nothing was written" in done.stderr
    assert snapshot(ws) == before and not seat_home.exists()


def test_remote_setup_refuses_bad_input_and_changes_nothing(remote, ws, tmp_path):
    claude_ws(ws)
    before = snapshot(ws)
    seat_home = tmp_path / "seathome"
    for args, key, code, says in [
        (["--url", "http://127.0.0.1:1/"], None, 2, "is not a hub URL"),
        (["--key-stdin"], "agk_x", 2, "give --url too"),
        (["--url", remote.url, "--key-stdin"], "not a key\n", 2, "does not hold a seat key"),
        (["--url", remote.url, "--key-stdin"], "agk_two\nlines\n", 2, "does not hold a seat key"),
        (["--url", remote.url], None, 1, "no key for alice"),
        (["--url", remote.url, "--key-stdin", "--home", str(remote.home)], remote.keys["alice"], 1, "a hub's own home"),
    ]:
        home = [] if "--home" in args else ["--home", str(seat_home)]
        done = remote_setup("alice", "--harness", "claude", *args, *home, cwd=ws, key=key, code=code)
        assert says in done.stderr, (args, done.stderr)
    assert snapshot(ws) == before and not seat_home.exists() and not (remote.home / "hub.url").exists()


def test_a_throttled_address_writes_nothing_not_even_the_unchecked_key(remote, ws, tmp_path):
    """Five mistyped keys throttle the address: the sixth setup's key was saved unchecked, as if no hub had
    answered, and setup reported success."""
    claude_ws(ws)
    before = snapshot(ws)
    for _ in range(5):
        remote_setup("alice", "--harness", "claude", "--url", remote.url, "--key-stdin", "--home",
                     str(tmp_path / "seathome"), cwd=ws, key="agk_typo\n", code=1)
    done = remote_setup("alice", "--harness", "claude", "--url", remote.url, "--key-stdin", "--home",
                        str(tmp_path / "seathome"), cwd=ws, key="agk_typo_again\n", code=1)
    assert "did not check the key" in done.stderr and "try again in" in done.stderr
    assert snapshot(ws) == before and not (tmp_path / "seathome" / "keys" / "alice.key").exists()


def test_a_remote_hub_that_does_not_answer_is_said_and_setup_still_wires(ws, tmp_path):
    claude_ws(ws)
    done = remote_setup("alice", "--harness", "claude", "--url", "ws://127.0.0.1:9/", "--key-stdin", "--home",
                        str(tmp_path / "seathome"), cwd=ws, key="agk_unchecked\n")
    assert "did not answer" in done.stderr and "not checked yet" in done.stderr
    assert (tmp_path / "seathome" / "hub.url").read_text() == "ws://127.0.0.1:9/\n"
    assert (tmp_path / "seathome" / "keys" / "alice.key").read_text().strip() == "agk_unchecked"


def test_an_explicit_url_replaces_the_homes_and_an_unchecked_key_never_replaces_a_kept_one(remote, ws, tmp_path):
    """A home whose hub.url has a typo (or whose hub moved) is put right by `--url`, which says so; while the
    hub does not answer, a piped key does not overwrite the key already kept."""
    claude_ws(ws)
    seat_home = tmp_path / "seathome"
    remote_setup("alice", "--harness", "claude", "--url", "ws://127.0.0.1:9/", "--key-stdin", "--home",
                 str(seat_home), cwd=ws, key=remote.keys["alice"])
    down = remote_setup("alice", "--url", "ws://127.0.0.1:9", "--key-stdin", "--home", str(seat_home), cwd=ws,
                        key="agk_typed_wrong")
    assert "was kept, not the one piped in" in down.stderr
    assert (seat_home / "keys" / "alice.key").read_text().strip() == remote.keys["alice"]
    moved = remote_setup("alice", "--url", remote.url, "--home", str(seat_home), cwd=ws)
    assert f"named ws://127.0.0.1:9/ and now names {remote.url}" in moved.stderr and "accepted" in moved.stderr
    assert (seat_home / "hub.url").read_text() == remote.url + "\n"


def test_the_homes_url_goes_before_agora_url_and_setup_on_a_hubs_own_host_ignores_agora_url(remote, ws, tmp_path):
    """The home's keys are its hub.url's hub's: $AGORA_URL naming another hub does not send them there.
    And $AGORA_URL exported on a hub's own host leaves `agora setup ID` a local registration."""
    seat_home = tmp_path / "seathome"
    wired_remote_seat(remote, ws, seat_home)
    with remote.client("bob", remote.keys["bob"]) as bob:
        bob.call("messages.send", target="@alice", title="hi", body="")
    elsewhere = {**seat_env(), "AGORA_URL": "ws://127.0.0.1:9/"}
    inbox = subprocess.run([AGORA, "inbox", "--json"], cwd=ws, env=elsewhere, capture_output=True, text=True,
                           timeout=30)
    assert inbox.returncode == 0 and json.loads(inbox.stdout)["unread"] == 1, inbox.stderr
    local = tmp_path / "local"
    claude_ws(local.mkdir() or local)
    done = subprocess.run([AGORA, "setup", "runtime", "--harness", "claude", "--home", str(remote.home)], cwd=local,
                          env=elsewhere, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "registered runtime" in done.stderr, done.stderr


def test_a_remote_seats_home_is_refused_by_up(remote, ws, tmp_path):
    seat_home = tmp_path / "seathome"
    wired_remote_seat(remote, ws, seat_home)
    up = subprocess.run([AGORA, "up", "--home", str(seat_home)], env=seat_env(), capture_output=True, text=True,
                        timeout=30)
    assert up.returncode == 1 and "holds seats of the hub at" in up.stderr and not (seat_home / "agora.db").exists()


def test_a_former_id_is_not_wired_and_a_record_naming_one_is_told_its_seats_id(hub, ws, tmp_path):
    """After `agora agent rename runtime engine`, setup of `runtime` would write a record, hooks and a key file
    that all name an alias: it is refused, locally and for a remote seat, and nothing is written. A workspace
    wired before the rename hears the seat's id from --check, and --remove's advice names it: `agora agent rm
    runtime` would remove engine, which the record's reader did not mean to name."""
    claude_ws(ws)
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    hub.call("agents.rename", old="runtime", new="engine", reason="split of duties")
    (tmp_path / "fresh").mkdir()
    fresh = claude_ws(tmp_path / "fresh")
    before = snapshot(fresh)
    refused = agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=fresh, code=1)
    assert "runtime was renamed to engine (split of duties)" in refused.stderr
    assert "`agora setup engine`" in refused.stderr and snapshot(fresh) == before

    checked = json.loads(agora("setup", "--check", "--json", cwd=ws, code=1).stdout)
    assert checked["hub"]["key"] is True  # engine's key file: the rename moved it
    assert checked["problems"] == ["runtime was renamed to engine (split of duties): run `agora setup engine` here "
                                   "to rewrite the seat record"]
    removed = agora("setup", "--remove", cwd=ws)
    assert "the seat engine (renamed from runtime) stays registered" in removed.stderr
    assert "`agora agent rm engine` removes it" in removed.stderr
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=fresh, code=1)
    agora("setup", "engine", "--harness", "claude", "--home", str(hub.home), cwd=fresh)
    hub.call("agents.remove", agent="engine")
    gone = agora("setup", "--remove", cwd=fresh)
    assert "the seat engine is not registered with the hub (removed already)" in gone.stderr



def test_remove_with_no_hub_up_does_not_say_a_seat_it_never_registered_stays_registered(ws, home):
    """Wired while no hub ran, the seat was never registered (setup said so); --remove then said it "stays
    registered with the hub" (a review). It cannot know: it says so, and what to do if it is."""
    claude_ws(ws)
    wired = agora("setup", "x", "--harness", "claude", "--home", str(home), cwd=ws)
    assert "x is not registered yet" in wired.stderr, wired.stderr
    removed = agora("setup", "--remove", cwd=ws)
    assert "stays registered" not in removed.stderr, removed.stderr
    assert (f"no hub answers on {home / 'agorad.sock'} to say whether the seat x is registered; if it is, "
            "`agora agent rm x` removes it") in removed.stderr, removed.stderr


def test_a_remote_seats_former_id_is_not_wired(remote, ws, tmp_path):
    claude_ws(ws)
    before = snapshot(ws)
    remote.call("agents.rename", old="alice", new="alicia", reason="new name")
    seat_home = tmp_path / "seathome"
    done = remote_setup("alice", "--harness", "claude", "--url", remote.url, "--key-stdin", "--home", str(seat_home),
                        cwd=ws, key=remote.keys["alice"], code=1)
    assert "alice was renamed to alicia (new name)" in done.stderr
    assert f"`agora setup alicia --url {remote.url} --key-stdin --home {seat_home}`" in done.stderr
    assert snapshot(ws) == before and not seat_home.exists()


def tree(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every file and directory under `root`: its mode, and a file's bytes (snapshot() sees no directory)."""
    return {str(p.relative_to(root)): (p.lstat().st_mode, p.read_bytes() if stat.S_ISREG(p.lstat().st_mode) else None)
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("relative, users", [
    (".claude/settings.json", '{"permissions": {"allow": []}}\n'),
    (".claude/settings.json", '{"hooks": {}}'),
    (".claude/settings.json", '{"hooks": {"Stop": []}, "enabledMcpjsonServers": []}\n'),
    (".claude/settings.json", '{"permissions": {"allow": ["mcp__agora"]}}\n'),
    (".mcp.json", '{"mcpServers": {}}'),
    ("CLAUDE.md", "line one\r\nline two\r\n"),
])
def test_remove_gives_back_a_users_file_that_held_only_what_setup_also_writes(hub, ws, relative, users):
    """The user's part was only empty sections, or an entry setup writes too: taking setup's part out
    empties them, and the file must still come back byte for byte, not be deleted (nor its directory);
    \\r\\n line ends included."""
    (ws / ".claude").mkdir()
    (ws / relative).write_bytes(users.encode())
    before = tree(ws)
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    assert (ws / relative).read_bytes() != users.encode()
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert tree(ws) == before


def test_an_empty_harness_directory_the_user_made_survives_remove_and_setups_own_go(hub, ws):
    (ws / ".claude").mkdir()
    (ws / ".opencode").mkdir()
    before = tree(ws)
    agora("setup", "runtime", "--harness", "claude", "--harness", "opencode", "--home", str(hub.home), cwd=ws)
    assert (ws / ".opencode/plugins").is_dir()  # made by setup
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert tree(ws) == before  # .claude/ and .opencode/ kept, .opencode/plugins/ and .agora/ gone


def test_a_private_config_stays_private_and_so_does_setups_copy_of_it(hub, ws):
    """A 0600 .mcp.json holding a token: the merged file keeps 0600, and the copy setup keeps for --remove is
    0600 in 0700 directories (it was 0644, token and all)."""
    (ws / ".claude").mkdir()
    secret = '{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_secret"}}}}\n'
    (ws / ".mcp.json").write_text(secret)
    os.chmod(ws / ".mcp.json", 0o600)
    (ws / ".claude/settings.json").write_text('{"env": {"API_KEY": "sk-secret"}}\n')  # a copy in a subdirectory
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    assert (ws / ".mcp.json").stat().st_mode & 0o777 == 0o600
    copies = [p for p in (ws / ".agora/pristine").rglob("*")]
    assert copies and all(p.stat().st_mode & 0o777 == (0o700 if p.is_dir() else 0o600) for p in copies)
    assert (ws / ".agora/pristine").stat().st_mode & 0o777 == 0o700
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert (ws / ".mcp.json").read_text() == secret and (ws / ".mcp.json").stat().st_mode & 0o777 == 0o600


def test_a_symbolic_link_or_a_fifo_where_setup_writes_is_refused_and_nothing_changes(hub, ws):
    """A link would have been replaced by a copy (the file it names left unwired, and never given back);
    a FIFO hung the read while the host's setup lock was held."""
    (ws / "AGENTS.md").write_text("# shared\n")
    (ws / "CLAUDE.md").symlink_to("AGENTS.md")
    (ws / ".claude").mkdir()
    before = tree(ws)
    done = agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws, code=1)
    assert "CLAUDE.md is a symbolic link (to AGENTS.md)" in done.stderr and tree(ws) == before
    (ws / "CLAUDE.md").unlink()
    os.mkfifo(ws / "CLAUDE.md")
    before = tree(ws)
    done = agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws, code=1)
    assert "CLAUDE.md is not a regular file" in done.stderr and tree(ws) == before


def test_a_comment_added_to_codex_config_after_setup_survives_remove(hub, ws):
    (ws / ".codex").mkdir()
    (ws / ".codex/config.toml").write_text(USERS_CODEX_CONFIG)
    agora("setup", "runtime", "--harness", "codex", "--home", str(hub.home), cwd=ws)
    text = (ws / ".codex/config.toml").read_text()
    (ws / ".codex/config.toml").write_text("# added later\n" + text)
    agora("setup", "--remove", cwd=ws)
    assert (ws / ".codex/config.toml").read_text() == "# added later\n" + USERS_CODEX_CONFIG


def test_a_write_that_fails_halfway_puts_back_the_files_written_before_it(hub, ws):
    """A file size limit lets the small files through and stops a big one: the files already written go
    back to what they were, no temporary file is left, and the error names the file (a traceback before)."""
    import resource

    claude_ws(ws)
    (ws / ".claude/settings.json").write_text('{"model": "opus"}\n')
    (ws / ".opencode").mkdir()
    before = tree(ws)

    def small_files_only():
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))

    full = {k: v for k, v in os.environ.items() if k not in ("AGORA_HOME", "AGORA_KEY")}
    done = subprocess.run([AGORA, "setup", "runtime", "--harness", "claude", "--harness", "opencode", "--home",
                           str(hub.home)], cwd=ws, capture_output=True, text=True, env=full, timeout=30,
                          preexec_fn=small_files_only)
    assert done.returncode == 1, done.stderr
    assert "File too large; the files written before it were put back" in done.stderr
    assert "Traceback" not in done.stderr
    assert {k: v for k, v in tree(ws).items() if not k.startswith(".agora")} == before
    assert not [p for p in ws.rglob("*.agora-setup")]


def test_a_setup_in_a_workspace_another_run_is_editing_waits_whatever_home_it_names(hub, ws, monkeypatch):
    """The lock in the home serialises runs naming one home; two naming different homes edited the same
    workspace files at once (one run's wiring was lost). The workspace is locked too."""
    import fcntl

    from agora_setup import harnesses, plan
    from agora_setup.targets import SetupError

    monkeypatch.setattr(plan, "LOCK_WAIT", 0.2)
    (ws / ".claude").mkdir()
    holder = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # as another run would hold it
        seat = harnesses.Seat("runtime", hub.home, AGORA, ws)
        with pytest.raises(SetupError, match=f"another `agora setup` has been editing {ws}"):
            plan.wire(seat, ["claude"], hub.home / "keys/runtime.key")
        assert not (ws / ".agora").exists()
    finally:
        os.close(holder)
    plan.wire(harnesses.Seat("runtime", hub.home, AGORA, ws), ["claude"], hub.home / "keys/runtime.key")
    assert seat_record(ws).exists()


def test_a_setup_lock_that_is_a_symbolic_link_is_refused_without_a_traceback(hub, ws):
    (ws / ".claude").mkdir()
    (hub.home / "setup.lock").unlink(missing_ok=True)
    (hub.home / "setup.lock").symlink_to(ws / "elsewhere")
    before = tree(ws)
    done = agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws, code=1)
    assert "cannot take the setup lock" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert tree(ws) == before


def test_remove_takes_no_directory_the_user_had_when_setup_made_none(hub, ws):
    """A workspace that already had `.claude/` and `.agora/` (its own home's, say): setup made no directory,
    and removal must take none (an empty list of made directories is not a record from an older setup)."""
    (ws / ".claude").mkdir()
    (ws / ".agora").mkdir()
    before = tree(ws)
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    assert tomllib.loads(seat_record(ws).read_text())["made_dirs"] == []
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert tree(ws) == before


def test_a_record_from_before_setup_noted_its_directories_keeps_the_old_removal(hub, ws):
    """No `made_dirs` in the record (an older setup wrote it): which directories setup made is unknown, so a
    re-run does not start noting them half-way, and removal takes those left empty, as it always did."""
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    text = seat_record(ws).read_text()
    seat_record(ws).write_text(re.sub(r"^made_dirs = \[.*?\]\n", "", text, flags=re.M | re.S))
    agora("setup", "runtime", "--harness", "codex", "--home", str(hub.home), cwd=ws)
    assert "made_dirs" not in tomllib.loads(seat_record(ws).read_text())
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert sorted(p.name for p in ws.iterdir()) == []  # .claude/, .codex/ and .agora/ were setup's


def test_a_directory_a_partial_removal_took_is_not_setups_any_more(hub, ws):
    """Setup made .claude/; `--remove --harness claude` took it away; the user then makes a .claude/ of
    their own: a later removal must leave that one."""
    (ws / ".codex").mkdir()
    agora("setup", "runtime", "--harness", "claude", "--harness", "codex", "--home", str(hub.home), cwd=ws)
    assert ".claude" in tomllib.loads(seat_record(ws).read_text())["made_dirs"]
    agora("setup", "--remove", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    assert not (ws / ".claude").exists()
    assert ".claude" not in tomllib.loads(seat_record(ws).read_text())["made_dirs"]
    (ws / ".claude").mkdir()  # the user's now
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert (ws / ".claude").is_dir() and (ws / ".codex").is_dir()


def test_a_dir_given_with_dots_is_shown_tidy_unless_a_link_makes_dots_mean_elsewhere(hub, ws, tmp_path):
    (ws / ".claude").mkdir()
    done = agora("setup", "runtime", "--dir", f"../{ws.name}/./", "--home", str(hub.home), cwd=ws)
    assert f"{ws}/../" not in done.stdout and str(ws) in done.stdout
    assert json.loads(agora("setup", "--check", "--json", "--dir", f"../{ws.name}/.", cwd=ws).stdout)["workspace"] == str(ws)
    (tmp_path / "real" / "inner").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "inner")  # link/.. is real/ to the kernel, tmp_path in letters
    (tmp_path / "real" / ".claude").mkdir()
    report = json.loads(agora("setup", "--check", "--json", "--dir", "link/..", cwd=tmp_path, code=1).stdout)
    assert report["workspace"] == f"{tmp_path}/link/.."


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_seat_directory_keeps_itself_out_of_git_and_a_users_own_ignore_file_is_left_alone(hub, ws):
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    claude_ws(ws)
    (ws / ".mcp.json").write_text('{"mcpServers": {"db": {"env": {"TOKEN": "s3cret"}}}}')  # copied to pristine/
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    untracked = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ws, check=True,
                               capture_output=True, text=True).stdout
    assert ".agora/" not in untracked and ".claude/settings.json" in untracked
    (ws / ".agora/notes.md").write_text("mine\n")  # setup's files are ignored by name, not the user's
    assert ".agora/notes.md" in subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ws,
                                               check=True, capture_output=True, text=True).stdout
    (ws / ".agora/notes.md").unlink()
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert not (ws / ".agora").exists()
    (ws / ".agora").mkdir()
    (ws / ".agora/.gitignore").write_text("pristine/\n")  # the user's own choice
    agora("setup", "runtime", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    assert (ws / ".agora/.gitignore").read_text() == "pristine/\n"
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert (ws / ".agora/.gitignore").read_text() == "pristine/\n"


def test_a_setup_that_fails_after_registering_takes_the_seat_back(hub, ws):
    """The pristine copy of a file setup edits cannot be kept (a file stands where its directory goes): the
    error said nothing was changed, but the seat it had just registered, and its key file, stayed."""
    claude_ws(ws)
    (ws / ".agora").mkdir()
    (ws / ".agora/pristine").write_text("not a directory\n")
    done = agora("setup", "newseat", "--harness", "claude", "--home", str(hub.home), cwd=ws, code=1)
    assert "cannot keep a copy" in done.stderr
    assert "newseat" not in [a["id"] for a in hub.call("agents.list")["agents"]]
    assert not (hub.home / "keys/newseat.key").exists()
    hub.add_agent("kept")  # a seat setup reused, not registered, stays
    agora("setup", "kept", "--harness", "claude", "--home", str(hub.home), cwd=ws, code=1)
    assert "kept" in [a["id"] for a in hub.call("agents.list")["agents"]]


# --- --remove takes out only what the seat record says setup wired ----------------------------


AGORA_LOOKING_MCP = '{"mcpServers":{"agora":{"command":"agora","args":["mcp","--as","me"]}}}'
AGORA_LOOKING_HOOKS = ('{"hooks":{"Stop":[{"hooks":[{"type":"command",'
                       '"command":"/usr/bin/agora hook stop --harness claude --as me"}]}]}}')


def test_remove_with_no_seat_record_changes_nothing_and_says_so(home, ws):
    """The user's own agora entries in a workspace setup never wired: --remove deleted both files (a review)."""
    (ws / ".claude").mkdir()
    (ws / ".mcp.json").write_text(AGORA_LOOKING_MCP)
    (ws / ".claude/settings.json").write_text(AGORA_LOOKING_HOOKS)
    before = tree(ws)
    done = agora("setup", "--remove", "--home", str(home), cwd=ws)
    assert tree(ws) == before
    assert f"no seat record in {ws}" in done.stdout and "removed" not in done.stdout, done.stdout
    assert json.loads(agora("setup", "--remove", "--json", "--home", str(home), cwd=ws).stdout)["changed"] == []
    assert tree(ws) == before


def test_remove_leaves_the_files_of_a_harness_setup_did_not_wire(hub, ws):
    """Wired for Claude only: a Cursor MCP config of the user's own (with an `agora` entry) and a Gemini settings
    file setup cannot parse are not setup's; --remove restored the one and refused over the other."""
    claude_ws(ws)
    before = tree(ws)
    agora("setup", "u2", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    (ws / ".cursor").mkdir()
    users_cursor = '{"mcpServers": {"agora": {"command": "mine"}, "github": {"command": "gh-mcp"}}}'
    (ws / ".cursor/mcp.json").write_text(users_cursor)
    (ws / ".gemini").mkdir()
    (ws / ".gemini/settings.json").write_text('{\n  // my comment\n  "theme": "dark"\n}\n')
    users = {k: v for k, v in tree(ws).items() if k.startswith((".cursor", ".gemini"))}

    done = agora("setup", "--remove", "--harness", "cursor", "--home", str(hub.home), cwd=ws)
    assert "cursor is not wired here (the seat record names claude)" in done.stderr, done.stderr
    assert "restored" not in done.stdout and (ws / ".cursor/mcp.json").read_text() == users_cursor
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert tree(ws) == {**before, **users}


def test_setup_refuses_the_home_directory_whose_harness_files_are_user_wide(hub, tmp_path):
    """~/.claude/settings.json, ~/.codex/config.toml and ~/.gemini/settings.json are the user's settings for
    every project: wired there, every session anywhere armed the seat (a review)."""
    fake_home = tmp_path / "fh"
    for harness in (".claude", ".codex", ".gemini"):
        (fake_home / harness).mkdir(parents=True)
    before = tree(fake_home)
    done = agora("setup", "me", "--home", str(hub.home), cwd=fake_home, env={"HOME": str(fake_home)}, code=2)
    assert f"{fake_home} is your home directory" in done.stderr and "--dir" in done.stderr, done.stderr
    agora("setup", "me", "--dir", "fh/.", "--harness", "claude", "--home", str(hub.home), cwd=tmp_path,
          env={"HOME": str(fake_home)}, code=2)
    assert tree(fake_home) == before
    assert "me" not in [a["id"] for a in hub.call("agents.list")["agents"]]


def test_a_directory_that_is_a_symbolic_link_is_not_written_through(hub, ws, tmp_path):
    """`.claude` a link to a directory shared by other projects: setup rewrote the shared settings.json (a
    review); the man page says setup does not write through links. Nor does --remove."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "settings.json").write_text(USERS_SETTINGS)
    (ws / ".claude").symlink_to(shared)
    before, shared_before = tree(ws), tree(shared)
    done = agora("setup", "u8", "--harness", "claude", "--home", str(hub.home), cwd=ws, code=1)
    assert f"{ws / '.claude'} is a symbolic link (to {shared})" in done.stderr, done.stderr
    assert "nothing was changed" in done.stderr
    assert tree(ws) == before and tree(shared) == shared_before
    assert "u8" not in [a["id"] for a in hub.call("agents.list")["agents"]]

    (ws / ".claude").unlink()
    (ws / ".claude").mkdir()
    agora("setup", "u8", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    shutil.rmtree(ws / ".claude")
    (ws / ".claude").symlink_to(shared)
    assert "is a symbolic link" in agora("setup", "--remove", "--home", str(hub.home), cwd=ws, code=1).stderr
    assert tree(shared) == shared_before


def test_the_users_own_hooks_that_run_agora_are_kept(hub, ws):
    """A hook of the user's that runs agora under an event setup does not use (PreToolUse), or in a form setup
    never writes (no --home), was taken for setup's and deleted, leaving `"PreToolUse": []` (a review)."""
    (ws / ".claude").mkdir()
    users = {"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "/usr/local/bin/agora hook stop --harness claude --as other"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "agora listen --as other --once"}]}]}}
    (ws / ".claude/settings.json").write_text(json.dumps(users, indent=2) + "\n")
    before = tree(ws)
    agora("setup", "u1", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    wired = json.loads((ws / ".claude/settings.json").read_text())
    assert wired["hooks"]["PreToolUse"] == users["hooks"]["PreToolUse"]
    assert commands(wired, "Stop") == ["agora listen --as other --once",
                                       wiring.shell(wiring.backstop(AGORA, "claude", "u1", hub.home)),
                                       wiring.shell(wiring.hook_listen(AGORA, "u1", hub.home))]
    agora("setup", "u1", "--home", str(hub.home), cwd=ws)
    assert json.loads((ws / ".claude/settings.json").read_text()) == wired  # a re-run doubles nothing
    agora("setup", "--remove", "--home", str(hub.home), cwd=ws)
    assert tree(ws) == before


def stop_hooks(hub) -> dict:
    """`agora status --json`: each seat's stop-hook stamp (None: not wired)."""
    shown = json.loads(agora("status", "--json", "--home", str(hub.home), cwd=hub.home).stdout)
    return {agent["id"]: agent["hook"] for agent in shown["agents"]}


def test_a_seat_no_longer_wired_is_not_shown_never_fired(hub, ws, tmp_path):
    """agora-status(1): NEVER FIRED is "wired, never ran". A workspace rewired to another seat, or fully unwired
    by removing its one harness by name, left the seat it no longer wires NEVER FIRED for good (a review)."""
    agora("setup", "sa", "--harness", "codex", "--home", str(hub.home), cwd=ws)
    agora("setup", "sb", "--home", str(hub.home), cwd=ws)
    hooks = stop_hooks(hub)
    assert hooks["sa"] is None and hooks["sb"]["fired"] is None, hooks

    other = tmp_path / "other"
    other.mkdir()
    agora("setup", "sc", "--harness", "codex", "--home", str(hub.home), cwd=other)
    assert stop_hooks(hub)["sc"] is not None
    agora("setup", "--remove", "--harness", "codex", "--home", str(hub.home), cwd=other)
    assert not seat_record(other).exists()
    assert stop_hooks(hub)["sc"] is None



def test_rewiring_a_workspace_for_another_seat_keeps_the_old_seats_re_prompt_schedules(hub, ws, tmp_path):
    """A review: setup for dave in a workspace that wired carol deleted carol's stop-hook stamp, re-prompt
    schedules and all, while another workspace still wired carol (its stop hook then started over)."""
    from agorad.surface import hook_stamps

    other = tmp_path / "other"
    other.mkdir()
    for workspace in (ws, other):
        agora("setup", "carol", "--harness", "claude", "--home", str(hub.home), cwd=workspace)
    hub.add_agent("alice")
    with hub.client("alice", (hub.home / "keys/alice.key").read_text().strip()) as alice:
        alice.call("messages.send", target="@carol", title="look")
    fired = agora("hook", "stop", "--harness", "claude", "--as", "carol", "--home", str(hub.home), cwd=other, code=2)
    assert "look" in fired.stderr
    before = hook_stamps.read(hub.home, "carol", "stop")
    assert before["backoff"] and before["fired"]
    agora("setup", "dave", "--harness", "claude", "--home", str(hub.home), cwd=ws)
    after = hook_stamps.read(hub.home, "carol", "stop")
    assert after["backoff"] == before["backoff"] and after["fired"] == before["fired"] and after["wired"] is None
    agora("hook", "stop", "--harness", "claude", "--as", "carol", "--home", str(hub.home), cwd=other)  # quiet: said


def test_check_reads_the_stop_hook_of_the_seats_current_id_after_a_rename(hub, ws):
    """After `agora agent rename scodex scodex2` the hub moves the hook stamp to scodex2; --check read the
    record's former id and said NEVER FIRED although the hook had fired (a review)."""
    agora("setup", "scodex", "--harness", "codex", "--home", str(hub.home), cwd=ws)
    stop = [h["command"] for g in json.loads((ws / ".codex/hooks.json").read_text())["hooks"]["Stop"]
            for h in g["hooks"]][0]
    fired = subprocess.run(stop, shell=True, cwd=ws, input="{}", capture_output=True, text=True, timeout=30)
    assert fired.returncode == 0, fired.stderr
    hub.call("agents.rename", old="scodex", new="scodex2", reason="test")
    assert (hub.home / "hook-scodex2.stop.stamp").exists()
    report = json.loads(agora("setup", "--check", "--json", cwd=ws, code=1).stdout)
    assert report["stop_hook_fired"] is not None, report
    assert "NEVER FIRED" not in agora("setup", "--check", cwd=ws, code=1).stdout
