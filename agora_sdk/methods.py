"""`hub.<noun>.<verb>(**params)`: every hub method by its name, resolved when asked for.

The hub's dispatch table (agorad/runtime/methods.py) is the one list of methods; the SDK does
not spell it again, so a method the hub gains is reachable here at once.
"""

from __future__ import annotations


class Noun:
    """The methods under one noun: `hub.messages.send(...)` calls `messages.send`."""

    def __init__(self, client, noun: str):
        self._client = client
        self._noun = noun

    def __getattr__(self, verb: str):
        if verb.startswith("_"):
            raise AttributeError(verb)
        method = f"{self._noun}.{verb}"

        def call(**params):
            return self._client.call(method, **params)

        call.__name__ = verb
        call.__qualname__ = call.method = method
        return call

    def __repr__(self) -> str:
        return f"<hub methods {self._noun}.*>"


class Methods:
    """Mixed into a client: an attribute that is not the client's own names a noun."""

    _nouns: dict[str, type[Noun]] = {}  # a noun with helpers of its own (inbox: drain)

    def __getattr__(self, noun: str) -> Noun:
        if noun.startswith("_"):
            raise AttributeError(noun)
        return self._nouns.get(noun, Noun)(self, noun)
