"""`json.loads` and `json.dumps` through CPython's C accelerator, without importing the `json` package.

Why: `json` imports `re`, and `re` imports `enum`: about 1.1 MiB of an armed listener's
12 that it never uses (bench/README.md "Listener footprint"; the goal is 12 MiB). The C
scanner and encoder below are the very ones `json` calls for these defaults, so the
answers are the same; `tests/test_cjson.py` holds each function to `json`'s own
(hypothesis). A text the fast path does not take (an error, an encoding other than
UTF-8, another type) goes to `json` itself, imported then, so its errors and its
corner cases are json's. Where `_json` is missing (another Python), `json` serves all.

A hot-path trick with its guard (docs/ARCHITECTURE.md "Hot-path tricks and their guards").
"""

from __future__ import annotations

try:
    import _json
except ImportError:  # not CPython: everything below goes to json
    _json = None

_SPACE = " \t\n\r"  # what JSON allows around a value (json.decoder.WHITESPACE)


class Options:
    """What the C scanner reads from its context: json.decoder.JSONDecoder's attributes, plain."""

    def __init__(self, parse_float=float, parse_constant=None):
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = parse_float
        self.parse_int = int
        self.parse_constant = parse_constant or _CONSTANTS.__getitem__


_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


# What CPython 3.11's C scanner raises for malformed JSON while `json` is not loaded: it words the error
# as json.decoder.JSONDecodeError, which it looks up in sys.modules without importing it, and finding
# nothing it returns NULL with no exception set (`raise_errmsg` in Modules/_json.c). A caller takes it
# for "not taken here" and asks json, which imports itself and raises the error in its own words.
FAULT = SystemError


def scanner(options: Options):
    """`scan(text, index) -> (value, end)`, raising StopIteration(index) where no value starts
    (json.scanner.make_scanner's contract), or FAULT for malformed JSON while `json` is not loaded;
    None where the C scanner is missing."""
    return _json.make_scanner(options) if _json else None


_SCAN = scanner(Options())
# json.encoder.c_make_encoder, for a caller with options of its own (protocol.py); None where missing.
make_encoder = getattr(_json, "make_encoder", None)


def loads(data):
    """`json.loads(data)` for text, bytes or bytearray."""
    text = _utf8_text(data)
    if text is not None and _SCAN is not None:
        start = len(text) - len(text.lstrip(_SPACE))
        try:
            value, end = _SCAN(text, start)
        except (StopIteration, FAULT):  # no value, or an error json has to word: json does it
            pass
        else:
            if end >= len(text.rstrip(_SPACE)):
                return value
    import json  # the errors, and whatever the fast path does not take

    return json.loads(data)


def _utf8_text(data) -> str | None:
    """`data` as text if json.loads would read it as UTF-8 (json.detect_encoding: bytes opening with `{`
    and a second byte that is not NUL), else None."""
    if type(data) is str:
        return data
    if type(data) in (bytes, bytearray) and data[:1] == b"{" and data[1:2] != b"\0":
        return data.decode("utf-8", "surrogatepass")
    return None


def dumps(value) -> str:
    """`json.dumps(value)` with every default: ", " and ": ", ASCII only, NaN allowed, cycles refused."""
    if type(value) is str:
        return encode_string(value)
    if make_encoder is None:
        import json

        return json.dumps(value)
    # What json.JSONEncoder.iterencode builds for these defaults, a new one each call as there: the cycle
    # check's dict (the first argument) keeps what it held when an error cut the encoding short.
    encode = make_encoder({}, not_serializable, encode_string, None, ": ", ", ", False, False, True)
    return "".join(encode(value, 0))


def not_serializable(value):
    """json.JSONEncoder.default: every value the encoder does not know is refused, as there."""
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _encode_string_in_python(text: str) -> str:
    import json

    return json.encoder.encode_basestring_ascii(text)


encode_string = _json.encode_basestring_ascii if _json else _encode_string_in_python  # one JSON string, ASCII
