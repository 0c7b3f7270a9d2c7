"""The wire contract: versions, limits, identifier rules and frame codec.

Small on purpose: the client, the server and the listener all import it.
"""

from __future__ import annotations

from agorad.surface import cjson
from agorad.surface.errors import InvalidParams, InvalidRequest, ParseError, TooLarge
from agorad.surface.settings import MAX_BODY_KIB

PROTOCOL_VERSION = 1
MAX_FRAME = 1 << 20  # bytes per request line, newline excluded (agora-rpc(7) "Framing")
# What the asyncio clients and every remote-port client let one reply be. A reply may exceed a request's
# 1 MiB: a read message carries its body twice, and each character the JSON escapes takes six bytes, or
# twelve outside the Basic Multilingual Plane (a body of 128 KiB of control characters answers with about
# 1.5 MiB); and a listing page holds up to PAGE_BYTES. The cap bounds a client's memory against a hub gone wrong.
MAX_REPLY = 16 << 20
# A listing (agents.list, kb.list) ends its page once its entries pass this many bytes of JSON, escaped as
# in a frame: the entry that passes it is the page's last (a KB value, at most 64 KiB of UTF-8, escapes to
# under 400 KB), so a page stays under MAX_REPLY.
PAGE_BYTES = 12 << 20
REPLY_TOO_LARGE = f"a reply over {MAX_REPLY} bytes, this client's limit (ask for less: a smaller limit, the next page)"

_ID_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_ID_REST = "abcdefghijklmnopqrstuvwxyz0123456789._-"
MAX_TASK = 200
MAX_REASON = 200
MAX_KB_KEY = 200
MAX_KB_VALUE = 64 * 1024
MAX_META = 4 * 1024
MAX_META_KEY = 64  # agents.update: a meta key is one line of text
# An agent's expected heartbeat interval: where it came from (domain/intervals.py), its bounds in
# seconds (a month: an async seat that checks in less often than that is gone, not away), and the
# word agents.update takes to drop the operator's setting.
MIN_INTERVAL = 1.0
MAX_INTERVAL = 30 * 86400.0


AGENT_ID_RULE = "1-64 of a-z 0-9 . _ -, starting with a letter or digit"


def check_agent_id(value, field: str = "agent") -> str:
    """Return `value` if it is a valid agent id, else raise InvalidParams naming the rule."""
    if not is_agent_id(value):
        shown = value if isinstance(value, str) and len(value) <= 80 else f"{str(value)[:77]}..."
        raise InvalidParams(f"{field}: {shown!r} is not a valid agent id ({AGENT_ID_RULE})", field=field)
    return value


def is_agent_id(value) -> bool:
    """`value` follows AGENT_ID_RULE. Spelled without `re`, which an armed listener does not load (cjson.py):
    every character of `value` is in _ID_REST when stripping them all leaves nothing."""
    return (isinstance(value, str) and 0 < len(value) <= 64 and value[0] in _ID_FIRST
            and not value.strip(_ID_REST))


def encode(obj: dict) -> bytes:
    """One frame: compact JSON and a newline. Non-ASCII stays escaped so a frame is ASCII."""
    return (_encode_text(obj) + "\n").encode()


def encode_request(request_id, method: str, params: dict) -> bytes:
    """A client's request frame; TooLarge, before anything is sent, for one the hub would refuse by its size
    (it answers "a frame is at most ..." and closes the connection: words about the wire, where the text
    given is what has to shrink)."""
    frame = encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    if len(frame) - 1 > MAX_FRAME:
        raise TooLarge(f"{method} would be {len(frame) - 1} bytes, and the hub takes at most {MAX_FRAME} in one "
                       f"request: shorten the text given (a KB value is at most {MAX_KB_VALUE // 1024} KiB; a message "
                       f"body or a charter at most the hub's --max-body-kib, {MAX_BODY_KIB} KiB unless it was "
                       "started with another)", limit=MAX_FRAME)
    return frame


def encode_result(request_id, result: dict | str) -> bytes:
    """`encode({"jsonrpc": "2.0", "id": request_id, "result": result})`, without encoding the envelope
    as a dict on every reply. A result that is a `str` is that dict already encoded (a handler's own
    formatter, held by a test to `encode_text_of`'s bytes: `messages.receipt_text`)."""
    id_text = str(request_id) if type(request_id) is int else _encode_text(request_id)  # the usual id, no encoder
    text = result if type(result) is str else _encode_text(result)
    return f'{{"jsonrpc":"2.0","id":{id_text},"result":{text}}}\n'.encode()


def encode_text_of(obj) -> str:
    """`obj` as the compact ASCII JSON text a frame carries (no newline)."""
    return _encode_text(obj)


def decode_request(line: bytes) -> tuple[dict, bool]:
    """Parse one request frame into (request, plain); raise ParseError or InvalidRequest when it is not one.

    `plain` is False when some string may hold an escaped lone surrogate (JSON's
    \\ud800): only then do the params pay for checking every string.
    """
    try:
        text = line.decode("utf-8")
        obj = _parse(text)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ParseError(f"the frame is not valid JSON: {_short(exc)}") from None
    if not isinstance(obj, dict):
        raise InvalidRequest("the frame is JSON but not a request object (batches are not supported)")
    if obj.get("jsonrpc") != "2.0":
        raise InvalidRequest('the request must carry "jsonrpc": "2.0"')
    if not isinstance(obj.get("method"), str):
        raise InvalidRequest('the request must carry a string "method"')
    if "id" in obj and not _valid_id(obj["id"]):
        raise InvalidRequest('"id" must be a string, an integer or null')
    return obj, "\\ud" not in text and "\\uD" not in text


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:20]} is too large")
    return value


# Built once: json.loads/dumps with options build a new decoder/encoder per call (~1-2 us each).
_SCAN = cjson.scanner(cjson.Options(parse_float=_finite_float, parse_constant=_no_constant))


def _plain_encoder():
    """The encoder a frame's JSON is: compact, ASCII, no NaN (a cycle cannot come from a handler)."""
    import json

    return json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False).encode


def _c_encoder():
    """`_plain_encoder()` without its Python layers: CPython's C encoder called directly (what
    JSONEncoder.iterencode builds; 1.6 us instead of 2.8 for a reply). Falls back to the plain
    encoder where the C one is missing."""
    if cjson.make_encoder is None:
        return _plain_encoder()
    # (markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan)
    chunks = cjson.make_encoder(None, cjson.not_serializable, cjson.encode_string, None, ":", ",", False, False, False)
    return lambda obj: "".join(chunks(obj, 0))


_encode_text = _c_encoder()
encode_text = cjson.encode_string  # one JSON string, escaped to ASCII as in a frame


def _parse(text: str):
    """`json.loads(text)` with the options above. An object with nothing around it (every
    well-formed frame) goes straight to the scanner; anything else takes the full decoder,
    whose errors say where the text went wrong."""
    if _SCAN is not None and text[:1] == "{" and text[-1:] == "}":
        try:
            obj, end = _SCAN(text, 0)
        except (StopIteration, cjson.FAULT):
            return _decode_in_full(text)
        if end == len(text):
            return obj
    return _decode_in_full(text)


def _decode_in_full(text: str):
    """json's own decoder with the options above, imported on the first frame the scanner does not take
    (rare: the CLI and the listener never send one)."""
    import json

    return json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float).decode(text)


def _valid_id(value) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _short(exc: Exception) -> str:
    return str(exc)[:120]
