"""Durations as users type them: `90`, `90s`, `30m`, `2h`, `1d`."""

from __future__ import annotations

_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str | int | float, minimum: float = 1.0, maximum: float = float("inf")) -> float:
    """Seconds in `text`, between `minimum` and `maximum`; raise ValueError with the accepted forms otherwise."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            seconds = float(text)
        except OverflowError:  # an int beyond any float: not a duration either
            raise ValueError(f"{str(text)[:20]}... is not a finite duration") from None
    else:
        seconds = _typed_seconds(str(text).lower())
        if seconds is None:
            raise ValueError(f"{text!r} is not a duration (use seconds or a suffix: 90, 90s, 30m, 2h, 1d)")
    if not seconds < float("inf"):  # NaN and infinity compare false
        raise ValueError(f"{text!r} is not a finite duration")
    shown = _as_typed(text, seconds)
    if seconds < minimum:
        raise ValueError(f"{shown} is shorter than {minimum:g} second(s)")
    if seconds > maximum:
        raise ValueError(f"{shown} is longer than {format_duration(maximum)}")
    return seconds


def _typed_seconds(text: str) -> float | None:
    r"""The seconds in `text` if it is `\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*` in full, else None. Spelled
    without `re`, which the listener (it parses its options' durations) does not load (cjson.py): re's `\s`
    and `\d` are what str.isspace and str.isdecimal take, so `strip()` and `isdecimal()` say the same."""
    text = text.strip()
    unit = text[-1:] if text[-1:] in ("s", "m", "h", "d") else ""
    number = text[:len(text) - len(unit)].rstrip()
    if not all(part.isdecimal() for part in number.split(".", 1)):  # "".isdecimal() is False
        return None
    return float(number) * _UNITS[unit]


def _as_typed(text, seconds: float) -> str:
    """A duration out of range, as its sender would know it: typed text quoted, a number of seconds (the
    CLI sends `31d` as 2678400.0) in its shortest form, `31d`."""
    if isinstance(text, str):
        return repr(text)
    whole = seconds == int(seconds) and abs(seconds) < 1e12  # beyond, a 300-digit count of days helps nobody
    return format_duration(seconds) if whole else f"{seconds!r}s"


def format_duration(seconds: float) -> str:
    """The shortest exact form of `seconds` (`1800` -> `30m`)."""
    seconds = int(seconds)
    for suffix, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0 and seconds >= size:
            return f"{seconds // size}{suffix}"
    return f"{seconds}s"


def format_span(seconds: float) -> str:
    """A time span for people, to the minute above an hour: `2m05s`, `3h07m`."""
    seconds = int(max(0, seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"
