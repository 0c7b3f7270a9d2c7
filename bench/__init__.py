"""`make bench`: the project's speed figures beside the raw limits measured in the same run.

Every project figure is printed next to a bare reference measured on the same
machine, in the same run, by the same code, so the ratio is the figure:

  heartbeat calls/s    the hub      vs  a bare asyncio echo server (bench/echo.py)
  DM sends/s           the hub      vs  the bare combined loop (bench/bare.py: json, one apsw
                                        transaction, one O_APPEND write per request), and
                                        beside its parts alone: the echo server, an apsw loop
  inbox.check/digest   a hub holding 1M messages  vs  an empty hub (bench/messaging.py)
  cold start           agorad       vs  `python -c pass` with the same interpreter
  idle RSS             agorad       vs  the idle echo server process
  send-to-wake         agora listen --debounce 0  vs  a bare ctypes inotify reader
                                        (bench/bare_inotify.py; bench/reception.py)
  listen spawn         agora listen --once to armed  vs  `python -c 'import click'`
  idle listener CPU    agora listen  vs  the bare inotify reader, same window
                       (the three reception figures for --watcher inotify and --watcher watchdog)

    .venv/bin/python -m bench            # table
    .venv/bin/python -m bench --json     # the same figures as JSON
    .venv/bin/python -m bench --quick    # short run, a smoke test
    .venv/bin/python -m bench --only reception   # one part (repeatable)
"""
