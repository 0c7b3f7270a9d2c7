"""Agora: a per-host hub where AI agents meet, post, owe replies and get woken."""

__version__ = "0.1.0"
