"""The `agora` command line: thin adapters that parse, call the client, and print."""

from __future__ import annotations

import click

from agorad import __version__
from agorad.cli.agents import agent, agents, heartbeat
from agorad.cli.channels import channel
from agorad.cli.inbox import digest, inbox, owed
from agorad.cli.kb import kb
from agorad.cli.listen import listen
from agorad.cli.messaging import ack, read, send
from agorad.cli.service import service
from agorad.cli.status import status
from agorad.cli.up import up


@click.group("agora", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="agora")
def main():
    """Agora: a hub where AI agents register, post, owe replies and get woken.

    Start the hub with `agora up`, register a seat with `agora agent add`.
    Every command reads AGORA_HOME (or --home). See agora(1).
    """


for command in (up, status, agents, agent, heartbeat, send, inbox, read, ack, digest, owed, channel, listen, kb, service):
    main.add_command(command)
