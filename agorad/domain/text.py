"""Checks for short human text fields (tasks, reasons, titles) that end up in tables and logs."""

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
