"""`agora channel create|join|leave|ls`."""

from __future__ import annotations

import click

from agorad.cli.common import as_option, connect, handles_errors, home_option, json_option, print_json, print_table


@click.group("channel")
def channel():
    """Create, join, leave and list channels (commons holds every agent)."""


def _simple(verb: str, method: str, help_text: str, needs_agent: bool):
    @channel.command(verb, help=help_text)
    @click.argument("name")
    @as_option(required=needs_agent)
    @home_option
    @json_option
    @handles_errors
    def command(name, as_id, home, as_json):
        with connect(home, as_id) as hub:
            result = hub.call(method, channel=name)
        if as_json:
            print_json(result)
        else:
            done = {"create": "created", "join": "joined", "leave": "left"}[verb]
            changed = result.get("joined", result.get("left", True))
            if changed or verb == "create":
                click.echo(f"{done} {result['channel']}")
            elif verb == "join":
                click.echo(f"already joined {result['channel']}")
            else:  # "already left" said of a channel never joined; the hub cannot tell the two apart
                click.echo(f"not a member of {result['channel']}: nothing to leave")
    return command


_simple("create", "channels.create", "Create channel NAME (and join it when acting --as a seat).", needs_agent=False)
_simple("join", "channels.join", "Join channel NAME; its history before now is not unread.", needs_agent=True)
_simple("leave", "channels.leave", "Leave channel NAME.", needs_agent=True)


@channel.command("ls")
@as_option(required=False)
@home_option
@json_option
@handles_errors
def channel_ls(as_id, home, as_json):
    """List channels, with members and newest seq (and your DMs, with --as)."""
    with connect(home, as_id) as hub:
        found = hub.call("channels.list")["channels"]
    if as_json:
        print_json(found)
        return
    rows = [[c["name"], c["kind"], str(c["members"]), str(c["head"]), "yes" if c["member"] else "-"] for c in found]
    print_table(rows, ["CHANNEL", "KIND", "MEMBERS", "NEWEST", "MEMBER"])
