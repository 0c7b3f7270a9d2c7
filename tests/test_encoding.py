"""The hand-fed JSON encoder (protocol.py) is byte for byte `json.dumps` with the settings it claims.

protocol.py calls CPython's C encoder directly and splices replies into their
envelope for speed (bench/README.md). Every frame the hub sends goes through
it, so it is held here, for every kind of value the hub can send, to the
plain encoder: compact separators, ASCII only (`ensure_ascii`), no NaN or
Infinity (`allow_nan=False`).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agorad.surface import protocol
from agorad.surface.protocol import encode, encode_result, encode_text
from tests.reliability.scale import scaled

CLAIMED = {"separators": (",", ":"), "ensure_ascii": True, "allow_nan": False}


def plain(value) -> str:
    return json.dumps(value, **CLAIMED)


# Any code point, lone surrogates included (category Cs): message text is stored as sent, and
# a string from the database or the filesystem (a path) is not guaranteed to be valid UTF-8.
ANY_CHAR = st.characters(blacklist_categories=())
TEXT = st.text(ANY_CHAR) | st.sampled_from(["", "\x00", "\x1f\x7f", "\u2028\u2029", "\ud800", "\udfff", "\U0001F600",
                                            "AGORA_WAKE n=1\nAGORA_WAKE", '"\\/', "caf\u00e9"])
# What the hub emits: clock times (time.time()), durations, sizes, counts, seqs and ids up to SQLite's 2**63 - 1,
# and anything a caller stored in `meta` (any finite double, any integer json.loads accepts).
NUMBER = (st.integers() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
          | st.floats(0, 4e9) | st.sampled_from([0.0, -0.0, 1e16, 1e-7, 5e-324, 1.7976931348623157e308, 2**53 + 1.0]))
SCALAR = st.none() | st.booleans() | NUMBER | TEXT
VALUE = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5),
                     max_leaves=40)
RESULT = st.dictionaries(TEXT, VALUE, max_size=6)
REQUEST_ID = st.none() | st.integers() | TEXT


@settings(max_examples=scaled(300, 5000))
@given(VALUE)
def test_encode_is_json_dumps_with_the_claimed_settings(value):
    frame = encode({"v": value})
    assert frame == (plain({"v": value}) + "\n").encode("ascii")
    assert frame.count(b"\n") == 1  # one frame, one line, whatever the strings hold


@settings(max_examples=scaled(150, 2000))
@given(VALUE)
def test_the_fallback_encoder_agrees(value):
    """Where CPython has no C encoder, protocol.py falls back to its JSONEncoder: same bytes."""
    assert protocol._plain_encoder()(value) == protocol._encode_text(value) == plain(value)


@settings(max_examples=scaled(150, 2000))
@given(REQUEST_ID, RESULT)
def test_a_spliced_result_is_the_plainly_encoded_envelope(request_id, result):
    envelope = {"jsonrpc": "2.0", "id": request_id, "result": result}
    assert encode_result(request_id, result) == (plain(envelope) + "\n").encode("ascii")
    assert encode_result(request_id, result) == encode(envelope)


@settings(max_examples=scaled(150, 2000))
@given(TEXT)
def test_encode_text_is_one_json_string(text):
    assert encode_text(text) == plain(text)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_are_refused_as_json_dumps_refuses_them(bad):
    with pytest.raises(ValueError):
        plain(bad)
    with pytest.raises(ValueError):
        encode({"x": [bad]})
    with pytest.raises(ValueError):
        encode_result(1, {"x": bad})


RECEIPT_KEYS = ("ref", "channel", "seq", "delivered", "to", "ask", "discharged", "redirected")  # send's order
RECEIPT = st.fixed_dictionaries({
    "ref": TEXT, "channel": TEXT, "seq": st.integers(0, 2**63 - 1), "delivered": st.integers(0, 10_000),
    "to": st.lists(TEXT, max_size=4), "ask": st.booleans(), "discharged": st.integers(0, 100),
    "redirected": st.just([]) | st.lists(st.fixed_dictionaries({"from": TEXT, "to": TEXT, "reason": TEXT}), max_size=2),
}).map(lambda receipt: {key: receipt[key] for key in RECEIPT_KEYS})


@settings(max_examples=scaled(150, 2000))
@given(REQUEST_ID, RECEIPT)
def test_the_formatted_send_receipt_is_the_encoded_receipt(request_id, receipt):
    """messages.receipt_text formats a send's receipt directly; it is the encoder's text, and the
    reply spliced around it is the plainly encoded envelope."""
    from agorad.domain.messages import receipt_text

    assert receipt_text(receipt) == plain(receipt)
    assert encode_result(request_id, receipt_text(receipt)) == (plain({"jsonrpc": "2.0", "id": request_id, "result": receipt}) + "\n").encode("ascii")


def test_the_formatted_send_receipt_keeps_the_keys_send_returns():
    """The formatter writes the receipt's keys in a fixed order: they must be the keys, in the order, send builds."""
    import inspect

    from agorad.domain import messages

    source = inspect.getsource(messages.send)
    built = source[source.index("receipt = {"):]
    keys = list(RECEIPT_KEYS)
    assert [built.index(f'"{k}":') for k in keys] == sorted(built.index(f'"{k}":') for k in keys)
    formatted = messages.receipt_text({"ref": "a#1", "channel": "a", "seq": 1, "delivered": 1, "to": ["b"],
                                       "ask": False, "discharged": 0, "redirected": []})
    assert list(json.loads(formatted)) == keys
