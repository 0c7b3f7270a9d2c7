"""Checks for human text fields: short ones (tasks, reasons, titles) that end up in tables and logs,
and sized ones (KB values, charters) measured in UTF-8 bytes."""

from __future__ import annotations

from agorad.surface.errors import InvalidParams, TooLarge


def check_line(value, field: str, limit: int, *, optional: bool = False) -> str | None:
    """Return `value` if it is a single line of printable text within `limit` characters."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InvalidParams(f"{field} must be a string", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams(f"{field} is not valid Unicode (it holds a lone surrogate)", field=field) from None
    if len(value) > limit:
        raise TooLarge(f"{field} is {len(value)} characters; the limit is {limit}", field=field, limit=limit)
    # isprintable() is False for control, format, separator (but ASCII space) and unassigned
    # characters: what could move a cursor, reorder text or split a line where this is shown.
    if not value.isprintable():
        raise InvalidParams(
            f"{field} must be one line of printable text (no newlines, control or format characters)",
            field=field,
        )
    return value


def check_sized(value, field: str, limit: int, hint: str = "") -> str:
    """Return `value` if it is a string of valid Unicode within `limit` bytes of UTF-8; `hint` says how
    the limit is changed."""
    if not isinstance(value, str):
        raise InvalidParams(f"{field} must be a string", field=field)
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidParams(f"{field} is not valid Unicode (it holds a lone surrogate)", field=field) from None
    if size > limit:
        raise TooLarge(f"{field} is {size} bytes; the limit is {limit}{hint}", field=field, limit=limit)
    return value


def is_unicode(text: str) -> bool:
    """Whether `text` is valid Unicode: JSON's \\ud800 escapes can carry a lone surrogate, which no query
    can bind and no frame can encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def each_once(values: list) -> list:
    """`values` in order, each once, when all are strings (ids or refs named twice are checked and acted
    on once); as given otherwise, for the caller to refuse the one that is not a string by name."""
    if len(values) < 2:  # the usual case (a send's `to` is mostly empty): nothing to drop
        return values
    return list(dict.fromkeys(values)) if all(type(value) is str for value in values) else values
