"""One owner for each name, vocabulary and default.

Every file under the home is spelled in agorad/surface/filenames.py (paths.py
wraps those names in Paths), every
vocabulary in agorad/surface/vocab.py, every default in
agorad/surface/settings.py; the CLI's choices and option defaults and the hub's
own defaults read them. These tests find a second spelling anywhere in the code.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import click
import pytest

from agorad.cli import main
from agorad.runtime.hub import Settings
from agorad.surface import settings, vocab
from agorad.surface.durations import parse_duration

ROOT = Path(__file__).resolve().parent.parent
CODE = [p for top in ("agorad", "agora_listen", "agora_setup", "agora_drive", "agora_sdk") for p in sorted((ROOT / top).rglob("*.py"))]
OWNERS = {ROOT / "agorad/surface/filenames.py", ROOT / "agorad/surface/vocab.py", ROOT / "agorad/surface/settings.py"}

HOME_FILE = re.compile(
    r"-inbox\.log|^listen-|^drive-|^hook-|\.key$|^agorad\.(sock|pid|lock)$|^agora\.db|\.(offset|backoff|owedsig|stamp)$"
)


def literal_pieces(tree: ast.AST):
    """Each string literal, and the literal text of each f-string, in a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield "".join(part.value for part in node.values if isinstance(part, ast.Constant))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def test_home_file_names_are_spelled_only_in_filenames():
    found = []
    for path in CODE:
        if path in OWNERS:
            continue
        for text in literal_pieces(ast.parse(path.read_text())):
            if not any(ch.isspace() for ch in text) and HOME_FILE.search(text):  # prose (help, docstrings) may name them
                found.append(f"{path.relative_to(ROOT)}: {text!r}")
    assert found == []


VOCABULARIES = {
    name: frozenset(value) for name, value in vars(vocab).items()
    if name.isupper() and isinstance(value, (tuple, frozenset)) and len(value) > 1
}


def test_each_vocabulary_is_defined_once():
    found = []
    for path in CODE:
        if path in OWNERS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts and \
                    all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                words = frozenset(e.value for e in node.elts)
                for name, vocabulary in VOCABULARIES.items():
                    if words == vocabulary:  # a subset is a use (the flags an escalation carries), not a copy
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} spells {name}")
    assert found == []


def command_at(path: tuple) -> click.Command:
    """`("agent", "add")` -> the `agora agent add` command."""
    cmd = main.get_command(None, path[0])
    for name in path[1:]:
        cmd = cmd.commands[name]
    return cmd


def option(path: tuple, name: str) -> click.Option:
    return next(p for p in command_at(path).params if p.name == name)


@pytest.mark.parametrize("command, name, words", [
    (("agent", "add"), "mode", vocab.LIVENESS_MODES),
    (("heartbeat",), "status_word", vocab.REPORTED_STATUSES),
    (("send",), "urgency", vocab.URGENCIES),
    (("phase", "set"), "stage", vocab.PHASE_STAGES),
    (("listen",), "source", vocab.LISTEN_SOURCES),
    (("up",), "synchronous", vocab.SYNCHRONOUS_LEVELS),
    (("claim", "ls"), "state", vocab.CLAIM_STATES),
    (("claim", "update"), "state", vocab.CLAIM_STATES),
])
def test_cli_choices_come_from_the_vocabulary(command, name, words):
    assert tuple(option(command, name).type.choices) == tuple(words)


def default_of(command: tuple, name: str):
    param = option(command, name)
    ctx = click.Context(command_at(command))
    return param.type_cast_value(ctx, param.get_default(ctx))


@pytest.mark.parametrize("command, name, expected", [
    (("up",), "sweep_interval", settings.SWEEP_INTERVAL),
    (("up",), "ephemeral_ttl", settings.EPHEMERAL_TTL),
    (("up",), "synchronous", settings.SYNCHRONOUS),
    (("up",), "notify_rotate_mb", settings.NOTIFY_ROTATE_MB),
    (("up",), "max_body_kib", settings.MAX_BODY_KIB),
    (("up",), "liveness_flush", settings.LIVENESS_FLUSH),
    (("agent", "add"), "mode", vocab.DEFAULT_MODE),
    (("listen",), "debounce", settings.DEBOUNCE),
    (("listen",), "heartbeat", settings.LISTEN_HEARTBEAT),
    (("inbox",), "limit", settings.INBOX_LIMIT),
    (("send",), "urgency", vocab.DEFAULT_URGENCY),
    (("steward",), "cadences", settings.STEWARD_CADENCES),
])
def test_cli_defaults_come_from_settings(command, name, expected):
    assert default_of(command, name) == expected


def test_escalation_default_is_the_settings_schedule():
    text = default_of(("up",), "escalation")
    assert tuple(parse_duration(part) for part in text.split(",")) == settings.ESCALATION


def test_the_hubs_defaults_are_the_settings():
    hub = {f.name: f.default for f in dataclasses.fields(Settings)}
    assert hub["sweep_interval"] == settings.SWEEP_INTERVAL
    assert hub["ephemeral_ttl"] == settings.EPHEMERAL_TTL
    assert hub["synchronous"] == settings.SYNCHRONOUS.upper()
    assert hub["notify_rotate_mb"] == settings.NOTIFY_ROTATE_MB
    assert hub["max_body"] == settings.MAX_BODY_KIB * 1024
    assert hub["escalation"] == settings.ESCALATION
    assert hub["liveness_flush"] == settings.LIVENESS_FLUSH
