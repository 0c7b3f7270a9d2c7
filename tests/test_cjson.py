"""The listener's JSON, durations, agent ids and sentinel charsets, without `json` or `re` (cjson.py), held to them.

An armed listener leaves `json`, `re`, `enum`, `socket`, `signal`, `collections`
and `functools` unloaded (about 1.4 MiB of its 12, bench/README.md "Listener
footprint"); each function that stands in for one of them is held here to the
plain version, for every input hypothesis finds: the same value, or the same
error with the same words; and each C core used in place of its Python layer is
the same object the layer hands out.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agora_listen import sentinels
from agorad.surface import cjson, durations, protocol
from tests.reliability.scale import scaled
from tests.test_encoding import TEXT, VALUE


def outcome(call, *args):
    """What `call(*args)` gives: its value, or its error's type and words."""
    try:
        return "value", call(*args)
    except (ValueError, TypeError, RecursionError) as exc:
        return type(exc), str(exc)


def same(first, second) -> bool:
    """Equal outcomes, NaN equal to NaN (json decodes NaN, which equals nothing)."""
    return json.dumps(first, default=repr) == json.dumps(second, default=repr)


# JSON-ish text: well-formed documents, their pieces, and what surrounds them in a file or a frame.
JSONISH = st.one_of(
    VALUE.map(json.dumps),
    VALUE.map(lambda v: json.dumps(v, separators=(",", ":"))),
    st.tuples(st.sampled_from(["", " ", "\n", "\t\r ", "\x0c", "\u00a0"]), VALUE.map(json.dumps),
              st.sampled_from(["", "\n", " \r\n", "x", ",", "}", " 1", "\x00"])).map("".join),
    st.text(st.sampled_from('{}[]",:0123456789.eE+-truefalsnNaIiy \n\\u')),
    TEXT,
)


@settings(max_examples=scaled(400, 5000))
@given(JSONISH)
@example("")
@example("NaN")
@example('{"a": -Infinity}')
@example("{" * 100_000)
def test_loads_is_json_loads_for_text_and_bytes(text):
    assert same(outcome(cjson.loads, text), outcome(json.loads, text))
    try:
        data = text.encode("utf-8", "surrogatepass")
    except UnicodeEncodeError:
        return
    assert same(outcome(cjson.loads, data), outcome(json.loads, data))
    assert same(outcome(cjson.loads, bytearray(data)), outcome(json.loads, bytearray(data)))


@pytest.mark.parametrize("data", [
    '{"id": 1}'.encode("utf-16-le"), '{"id": 1}'.encode("utf-16"), '{"id": 1}'.encode("utf-32"),
    b"\xef\xbb\xbf{}", b"{\x00}", b"{", b"{\xff}", b'{"a":"\xed\xa0\x80"}', memoryview(b"{}"), 7, None,
])
def test_loads_leaves_every_other_encoding_and_type_to_json(data):
    assert same(outcome(cjson.loads, data), outcome(json.loads, data))


@settings(max_examples=scaled(400, 5000))
@given(VALUE | st.floats() | st.lists(st.floats(allow_nan=True)))
def test_dumps_is_json_dumps(value):
    assert cjson.dumps(value) == json.dumps(value)


def test_dumps_refuses_what_json_refuses_and_goes_on():
    cycle: list = []
    cycle.append(cycle)
    for bad in ({"a": b"x"}, [object()], cycle, {(1, 2): 3}):
        assert outcome(cjson.dumps, bad) == outcome(json.dumps, bad)
    # A refusal cut short inside a list and a dict: the next call's cycle check starts afresh.
    held = [1]
    assert outcome(cjson.dumps, [held, {"k": [held, b"x"]}])[0] is TypeError
    assert cjson.dumps([held, held]) == "[[1], [1]]"


@settings(max_examples=scaled(300, 3000))
@given(TEXT)
def test_encode_string_is_json_dumps_of_a_string(text):
    assert cjson.encode_string(text) == json.dumps(text) == cjson.dumps(text)


DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*")  # what durations.py matched before it left `re`
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_CHARS = st.sampled_from("0123456789.smhdSMHDxq \t\n\u00a0\u2003\x1c\u0663\uff15\U0001d7ce\u00b2-+eE_")


def duration_by_pattern(text: str):
    match = DURATION.fullmatch(text.lower())
    return float(match.group(1)) * UNITS[match.group(2)] if match else None


@settings(max_examples=scaled(500, 5000))
@given(st.text(DURATION_CHARS, max_size=12) | st.text(max_size=8))
@example("1.5h")
@example(" 90 s ")
@example("1.")
@example(".5")
@example("1.2.3")
@example("s")
@example("\u0663\u0660m")
@example("\u00b2s")
def test_durations_read_as_the_pattern_read_them(text):
    assert outcome(durations._typed_seconds, text.lower()) == outcome(duration_by_pattern, text)


AGENT_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


@settings(max_examples=scaled(500, 5000))
@given(st.text(st.sampled_from("ab09._-Z \n\u00e9\u0130"), max_size=70) | st.text(max_size=70)
       | st.text(st.sampled_from("az09._-"), min_size=60, max_size=70))
@example("a" * 64)
@example("a" * 65)
@example("a\n")
@example(".a")
def test_agent_ids_follow_the_pattern(text):
    assert protocol.is_agent_id(text) == (AGENT_ID.fullmatch(text) is not None)


@settings(max_examples=scaled(300, 3000))
@given(st.text(max_size=100))
def test_sentinel_charsets_are_the_patterns(text):
    assert sentinels.clamp(text) == (re.sub(r"[^A-Za-z0-9._:-]", "?", text)[:80] or "?")
    assert sentinels._path(text) == re.sub(r"[^A-Za-z0-9._:/~+-]", "?", text)


def test_the_c_cores_used_are_what_the_python_layers_hand_out():
    import _collections
    import _collections_abc
    import _signal
    import _socket
    import collections
    import collections.abc
    import signal
    import socket

    assert _collections.deque is collections.deque and _collections_abc.Iterator is collections.abc.Iterator
    assert _socket.socket in socket.socket.__mro__ and socket.timeout is TimeoutError
    assert (_socket.AF_UNIX, _socket.SOCK_STREAM) == (socket.AF_UNIX, socket.SOCK_STREAM)
    assert (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP) == (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    assert _signal.set_wakeup_fd is signal.set_wakeup_fd


FRESH = """
import sys
from agorad.surface import cjson, protocol
from agorad.surface.errors import ParseError
assert "json" not in sys.modules, "loaded already: this test would not see the fault"
for bad in (b"{not json", '{"a": [1, 2', '{"a": 1,}'):
    try:
        cjson.loads(bad)
    except ValueError as exc:
        print(type(exc).__name__, exc)
try:
    protocol.decode_request(b'{"jsonrpc": "2.0", "method": "x", "params": {,}}')
except ParseError as exc:
    print(type(exc).__name__, exc.message)
"""


def test_malformed_json_is_worded_as_json_words_it_in_a_process_that_had_not_loaded_json():
    """CPython 3.11's C scanner finds JSONDecodeError only in a loaded json (cjson.FAULT): a listener
    reading a corrupt offset file got SystemError, and ended, before cjson took it to json."""
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "JSONDecodeError Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        "JSONDecodeError Expecting ',' delimiter: line 1 column 12 (char 11)",
        "JSONDecodeError Expecting property name enclosed in double quotes: line 1 column 9 (char 8)",
        "ParseError the frame is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 46 "
        "(char 45)",
    ]
