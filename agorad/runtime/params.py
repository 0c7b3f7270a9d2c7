"""Reading a request's named parameters: required, optional, and no unknown ones."""

from __future__ import annotations

from agorad.surface.errors import InvalidParams

_MISSING = object()

_TYPE_NAMES = {str: "a string", bool: "true or false", dict: "an object", int: "an integer", float: "a number",
               list: "a list"}


class Params:
    """A view over `params` that records which names a handler read."""

    __slots__ = ("_raw", "_read", "_plain")

    def __init__(self, raw: dict, plain: bool = False):
        self._raw = raw
        self._read: set[str] = set()
        self._plain = plain  # the frame held no \\ud escape, so no string can hold a lone surrogate

    def get(self, name: str, kind: type | tuple = object, default=_MISSING):
        """The value of `name`, checked to be of `kind`; required unless a default is given."""
        self._read.add(name)
        value = self._raw.get(name, _MISSING)
        if value is _MISSING or (value is None and default is not _MISSING):
            if default is _MISSING:
                raise InvalidParams(f"missing parameter {name!r}", field=name)
            return default
        if type(value) is not kind and not _is(value, kind):  # an exact type is the common case
            raise InvalidParams(f"parameter {name!r} must be {_describe(kind)}", field=name)
        if not self._plain and not _valid_text(value):
            raise InvalidParams(f"parameter {name!r} is not valid Unicode (it holds a lone surrogate)", field=name)
        return value

    def done(self) -> None:
        """Refuse parameters the handler did not read, so a typo is an error, not a silent no-op."""
        if self._read.issuperset(self._raw):
            return
        unknown = sorted(set(self._raw) - self._read)
        if unknown:
            raise InvalidParams(f"unknown parameter(s): {', '.join(map(repr, unknown))}", field=unknown[0])


def _is(value, kind) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        return False
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        return True
    return isinstance(value, kinds)


def _describe(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)


def _valid_text(value) -> bool:
    """Strings (also inside lists) must encode as UTF-8: JSON's \\ud800 escapes can smuggle lone surrogates."""
    try:
        if isinstance(value, str):
            value.encode("utf-8")
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, str):
                    item.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
