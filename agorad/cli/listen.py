"""`agora listen`: the seat's ear. A thin adapter over agora_listen."""

from __future__ import annotations

from pathlib import Path

import click

from agorad.cli.common import DURATION, DURATION_OR_ZERO, home_option
from agorad.cli.shared import SharedOption
from agorad.surface import settings
from agorad.surface.durations import format_duration
from agorad.surface.vocab import LISTEN_SOURCES, WATCHERS


class ListenCommand(click.Command):
    """Usage errors end like every other exit (a tombstone) and exit 1, never 2: 2 means "woke"."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            self.usage_failed(exc)
            raise

    @staticmethod
    def usage_failed(exc: click.UsageError) -> None:
        """Print the tombstone and make the exit 1; also for a usage error found before the subcommand."""
        from agora_listen import sentinels

        exc.exit_code = 1
        sentinels.emit_last(sentinels.ended("error", exc.format_message()))


@click.command("listen", cls=ListenCommand)
@click.option("--as", "as_id", cls=SharedOption, metavar="ID", required=True, help="The seat to listen for (default: the workspace's seat record).")
@click.option("--once", is_flag=True, help="Exit after the first wake (2), or at --max-wait (0).")
@click.option("--max-wait", type=DURATION, help="With --once: give up after this long (exit 0). With --adaptive: the cap.")
@click.option("--debounce", type=DURATION_OR_ZERO, default=format_duration(settings.DEBOUNCE), show_default=True,
              help="Coalesce deliveries arriving within this window into one wake.")
@click.option("--important-only", is_flag=True, help="Wake only for to-me, dm, open or escalated deliveries.")
@click.option("--preview", is_flag=True, help="Append the newest title, neutralised and quoted, to a wake line.")
@click.option("--source", type=click.Choice(LISTEN_SOURCES), default="auto", show_default=True,
              help="file tails the notify file on this host; ws holds a connection to the hub's remote port "
                   "(--url); auto is file when the hub answers on this host, else ws when a URL is set, else "
                   "file, waiting for the file to appear.")
@click.option("--url", metavar="URL", help="The hub's remote port, ws://HOST:PORT/ or wss://HOST:PORT/, for "
              "--source ws (default: the home's hub.url, else $AGORA_URL).")
@click.option("--lock", type=click.Path(dir_okay=False, path_type=Path),
              help="Take this lock (persistent mode always takes listen-ID.lock; --once only with --lock).")
@click.option("--adaptive", is_flag=True, help="With --once: pick max-wait from listen-ID.backoff (60 s after a wake, doubling).")
@click.option("--heartbeat", type=DURATION, default=format_duration(settings.LISTEN_HEARTBEAT), show_default=True,
              help="Print a heartbeat line and touch listen-ID.pid this often.")
@click.option("--notify-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the hub writes notify files (default: what the hub says, else the home).")
@click.option("--watcher", type=click.Choice(WATCHERS), default="auto", show_default=True,
              help="How to learn that the file changed: inotify (Linux only), or the watchdog package's observer "
                   "(FSEvents, kqueue or inotify); auto is inotify where it exists, else watchdog.")
@click.option("--background-only", is_flag=True,
              help="For a hook: end at once (reason=foreground, exit 0) when the harness would wait for it "
                   "instead of running it in the background (Claude Code in -p mode without stream-json input).")
@home_option
def listen(as_id, once, max_wait, debounce, important_only, preview, source, url, lock, adaptive, heartbeat,
           notify_dir, watcher, background_only, home):
    """Print AGORA_WAKE lines when mail for seat ID lands; stdout carries only sentinel lines."""
    from agorad.cli.listen_run import start

    start(as_id, once, max_wait, debounce, important_only, preview, source, lock, adaptive, heartbeat, notify_dir,
          watcher, background_only, home, url=url or _url(home))


def _url(home) -> str | None:
    """`agora --url`, else the home's hub.url, else $AGORA_URL (cli.common.hub_url): the group's --url is
    what only click's context knows (listen_run reads the home's and $AGORA_URL in that order itself)."""
    from agorad.cli.common import hub_url
    from agorad.surface.paths import Home

    return hub_url(Home.resolve(home))
