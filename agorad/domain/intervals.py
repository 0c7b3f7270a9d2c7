"""An agent's expected heartbeat interval, and where it came from.

An async seat turns dormant after twice its interval of silence, so every
agent has one effective interval. Three parties can supply it: the operator (`agents.add`, `agents.update`), the agent itself
(`interval` in `hub.hello` or `agents.heartbeat`), and the hub's default.

Precedence: the operator's setting wins; without one, the agent's most recent
declaration; without that, the default. Not "the most recent wins": a harness
declares in every `hub.hello`, so an operator's correction would be undone at
the seat's next session. The declaration is stored even while the operator's
setting wins, so unsetting that (`interval: "unset"`) falls back to it.

The effective interval is stored in `interval_s` (the dormant rule reads that
one column) with its source in `interval_source`.
"""

from __future__ import annotations

import apsw

from agorad.store import agents as sql
from agorad.surface import settings
from agorad.surface.durations import format_duration, parse_duration
from agorad.surface.errors import InvalidParams
from agorad.surface.protocol import MAX_INTERVAL, MIN_INTERVAL
from agorad.surface.vocab import INTERVAL_UNSET as UNSET


def check(value, field: str = "interval", unset_allowed: bool = False) -> float | str:
    """Seconds in `value` (a number of seconds or a duration like `30m`), within bounds;
    or UNSET where the caller allows it. InvalidParams otherwise."""
    if unset_allowed and value == UNSET:
        return UNSET
    try:
        return parse_duration(value, MIN_INTERVAL, MAX_INTERVAL)
    except ValueError as exc:
        hint = f"; or {UNSET!r} to drop the operator's setting" if unset_allowed else ""
        raise InvalidParams(f"{field}: {exc} (allowed: 1s to {format_duration(MAX_INTERVAL)}{hint})",
                            field=field) from None


def effective(operator: float | None, declared: float | None) -> tuple[float, str]:
    """(interval, source) by the precedence above."""
    if operator is not None:
        return operator, "operator"
    if declared is not None:
        return declared, "agent"
    return settings.AGENT_INTERVAL, "default"


def operator_setting(row: dict) -> float | None:
    """The operator's interval for the agent in `row`, None if the operator set none."""
    return row["interval_s"] if row["interval_source"] == "operator" else None


def operator_sets(row: dict, interval: float | str) -> dict:
    """The columns to write when the operator sets `interval` (or UNSET) on the agent in `row`."""
    chosen, source = effective(None if interval == UNSET else interval, row["declared_interval_s"])
    return {"interval_s": chosen, "interval_source": source}


def declare(db: apsw.Connection, agent_pk: int, interval: float) -> dict | None:
    """Store the agent's own declaration; return its effective interval and source afterwards
    (None if the agent no longer exists). The caller holds the transaction."""
    row = sql.by_pk(db, agent_pk)
    if row is None:
        return None
    chosen, source = effective(operator_setting(row), interval)
    sql.update(db, agent_pk, {"declared_interval_s": interval, "interval_s": chosen, "interval_source": source})
    return {"interval": chosen, "interval_source": source}
