"""Tool results as compact text for a model. Anything another agent wrote is fenced.

Titles, senders' headlines and previews go inside one `quoted` fence per
result; a read message comes fenced by the hub (messages.read `fenced`).
Refs, ids, counts and flags are the hub's own words and stay outside.
"""

from __future__ import annotations

import time

from agorad.surface.fence import one_line, quoted

_TITLE = 120  # a headline's title, cut: the full text is one read_message away


def ago(then: float | None, now: float) -> str:
    if then is None:
        return "never"
    seconds = max(0, int(now - then))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def _debt(debt: dict, now: float, who: str) -> str:
    escalated = f", escalated x{debt['escalations']}" if debt.get("escalations") else ""
    return f"{debt['ref']} {who}: {one_line(debt['title'], _TITLE)} (asked {ago(debt['asked_at'], now)}{escalated})"


def _headline(message: dict) -> str:
    flags = f" [{','.join(message['flags'])}]" if message.get("flags") else ""
    quiet = " (next_turn)" if message.get("urgency", "normal") != "normal" else ""
    return f"{message['ref']} from {message['sender']}{flags}{quiet}: {one_line(message['title'], _TITLE)}"


def paused_line(result: dict) -> str:
    """Hub words only (the operator's reason is read inside the announcement's fence)."""
    paused = result.get("paused")
    if not paused:
        return ""
    if paused["operator_seat"]:
        return "PAUSED: the operator paused the hub; you are one of its seats and act as ever\n"
    open_dms = f" (but your DMs with its seats: {', '.join(paused['open_dms'])})" if paused["open_dms"] else ""
    return (f"PAUSED: the operator paused the hub; answers, posts and claims are refused until it resumes{open_dms} "
            "(reading and acking work)\n")


def charter_lines(result: dict) -> str:
    """A CHARTER line per charter binding the seat that it has not read: hub words only (names, versions)."""
    return "".join(f"CHARTER {_scope(c['channel'])} v{c['version']} (set by {c['set_by']}) binds you and you have "
                   f"not read it: call read_charter{_channel_arg(c['channel'])}\n" for c in result.get("charter") or [])


def _scope(channel: str | None) -> str:
    return f"channel {channel}" if channel else "hub"


def _channel_arg(channel: str | None) -> str:
    return f" with channel={channel}" if channel else ""


def _phase(found: dict) -> str:
    return f"phase {found['channel']} phase:{found['track']} {found['stage']} v{found['version']} (set by {found['set_by']})"


def inbox(result: dict) -> str:
    now = result["now"]
    head = paused_line(result) + charter_lines(result) + f"owed {result['owed_total']} | unread {result['unread']}"
    phases = result.get("phases") or []
    if not result["owed"] and not result["channels"] and not phases:
        return head + " | nothing unread, nothing owed"
    lines = ["you owe a reply: " + _debt(d, now, f"from {d['asker']}") for d in result["owed"]]
    lines += [_phase(found) for found in phases]  # the open phases: after the owed block, before arrivals
    for channel in result["channels"]:
        lines.append(f"{channel['channel']} ({channel['unread']} unread)")
        lines += ["  " + _headline(m) for m in channel["messages"]]
    more = result["owed_total"] - len(result["owed"])
    tail = f"\n{more} more owed: call owed" if more > 0 else ""
    return f"{head}\n{quoted(lines, 'inbox')}{tail}\nRead one with read_message; mark handled with ack_inbox."


def digest(result: dict) -> str:
    now = result["now"]
    head = (charter_lines(result) + f"owe {result['i_owe_total']} | owed to me {result['owed_to_me_total']} | "
            f"unread {result['unread']}")
    lines = [_debt(d, now, f"from {d['asker']}") for d in result["i_owe"]]
    lines += [_phase(found) for found in result.get("phases") or []]
    for channel in result["channels"]:
        lines.append(f"{channel['channel']}: {channel['unread']} unread from {', '.join(channel['senders'])}")
        lines += [f"  {m['ref']} from {m['sender']}: {one_line(m['title'], _TITLE)}" for m in channel["latest"]]
    return head if not lines else f"{head}\n{quoted(lines, 'digest')}"


def owed(result: dict) -> str:
    now = result["now"]
    lines = [f"I owe ({len(result['i_owe'])}):"]
    lines += ["  " + _debt(d, now, f"from {d['asker']}") for d in result["i_owe"]]
    lines.append(f"owed to me ({len(result['owed_to_me'])}):")
    lines += ["  " + _debt(d, now, f"by {d['debtor']}") for d in result["owed_to_me"]]
    declined = result.get("declined_to_me") or []  # a hub before --decline has none
    if declined:
        lines.append(f"declined to me (newest {len(declined)}):")
        lines += [f"  {d['ref']} by {d['debtor']}: {one_line(d['title'], _TITLE)} (declined in {d['declined_by']})"
                  for d in declined]
    return quoted(lines, "owed")


def charter(result: dict) -> str:
    found = result["charter"]
    if found is None:
        return f"no {_scope(result['channel'])} charter"
    note = "" if found["version"] == result["current"] else f" (an old version: the current one is {result['current']})"
    return f"{found['fenced']}\n{_scope(result['channel'])} charter v{found['version']}{note}."


def message(result: dict) -> str:
    extra = f"ask: yes (reply with send_message reply_to={result['ref']})" if result.get("ask") else "ask: no"
    return f"{result['fenced']}\n{extra}; to: {', '.join(result.get('to') or []) or '-'}. Reading did not ack it."


def sent(receipt: dict) -> str:
    parts = [f"sent {receipt['ref']} to {receipt['delivered']} agent(s)"]
    if receipt["to"]:
        parts.append(f"for {', '.join(receipt['to'])}")
    if receipt["ask"]:
        parts.append("asking for a reply")
    if receipt["discharged"]:
        parts.append(f"discharged {receipt['discharged']} debt(s)")
    for redirect in receipt.get("redirected") or []:
        parts.append(f"{redirect['from']} is now {redirect['to']}")
    return "; ".join(parts)


def acked(result: dict) -> str:
    cursors = result.get("cursors") or {}
    return "acked " + ", ".join(f"{ref} ({c['channel']} handled through #{c['cursor']})" for ref, c in cursors.items())


def agents(result: dict) -> str:
    now = result.get("now") or time.time()
    lines = [f"{a['id']} {a.get('liveness_mode') or '-'} {a['status']} seen {ago(a.get('last_seen'), now)}"
             + (f" task: {one_line(a['task'], _TITLE)}" if a.get("task") else "") for a in result["agents"]]
    tail = f"\nmore seats sort after {result['agents'][-1]['id']}: not listed here" if result.get("more") else ""
    return quoted(lines, "agents") + tail


def _claim(claim: dict, now: float) -> str:
    cadence = f", every {claim['cadence_minutes']}m" if claim.get("cadence_minutes") else ""
    return (f"{claim['ref']} v{claim['version']} {claim['state']} in {claim['channel']} by {claim['owner']}{cadence}, "
            f"last receipt {ago(claim.get('last_receipt_at'), now)}: {one_line(claim['title'], _TITLE)}")


def claims(result: dict, channel: str | None = None) -> str:
    """A listing: the seat's own claims, or `channel`'s. Its next page is asked for the same way, or a
    channel's listing would go on with the seat's own claims instead."""
    found = result["claims"]
    if not found:
        return "no claims (open one with action open when you take on work)"
    of = f", channel {channel}" if channel else ""
    more = (f"\nmore claims follow: call claims with action list{of} and after {found[-1]['ref']}"
            if result.get("more") else "")
    return quoted([_claim(c, result["now"]) for c in found], "claims") + more


def claim(result: dict, action: str) -> str:
    """One claim: after show, with its newest receipts; after a change, what it is now."""
    now = result.get("now") or time.time()
    lines = [_claim(result, now)]
    lines += [f"  receipt {r['n']} {ago(r['created_at'], now)}: {one_line(r['text'], _TITLE)}"
              for r in result.get("receipts_shown") or []]
    said = "" if action == "show" else f"{action}: "
    return f"{said}{result['ref']} is at v{result['version']} ({result['state']})\n{quoted(lines, 'claim')}"


def receipt(result: dict) -> str:
    return f"receipt {result['receipt']} written on {result['ref']} (its version stays {result['version']})"


def woke(deliveries: list[dict], timeout: float, beyond: int = 0) -> str:
    """A wait's answer: the deliveries it took, and a count of the `beyond` more it does not name."""
    if not deliveries:
        return f"nothing important arrived in {timeout:g}s; call wait_for_messages again to keep waiting"
    lines = [f"{d['channel']}#{d['seq']} from {d['sender']} [{','.join(d.get('flags') or [])}]: "
             f"{one_line(d.get('title', ''), _TITLE)}" for d in deliveries]
    if beyond:
        return (f"{len(deliveries) + beyond} arrived, the first {len(deliveries)} shown\n{quoted(lines, 'arrivals')}\n"
                f"{beyond} more arrived: check_inbox lists everything unread.")
    return (f"{len(deliveries)} arrived\n{quoted(lines, 'arrivals')}\n"
            "Read them with read_message (check_inbox shows everything unread).")


def restarted(deliveries: list[dict], beyond: int = 0) -> str:
    """A wait's answer once the hub's delivery ids started again lower: what came since cannot be told apart."""
    said = ("the hub's delivery ids started again lower (its database was restored): which deliveries are new "
            "cannot be told from here. Run check_inbox, which shows everything unread.")
    return said if not deliveries else f"{said}\n{woke(deliveries, 0, beyond)}"


def whoami(hello: dict, seat_home: str, hub: str) -> str:
    return (f"seat {hello.get('agent')} (mode {hello.get('liveness_mode') or '-'}); hub {hub} "
            f"version {hello.get('hub_version')}, protocol {hello.get('protocol')}; home {seat_home}; "
            "the rules it works under: read_charter")
