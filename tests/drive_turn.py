"""A scripted turn for `agora drive --harness command`: the driver's tests run it as the user's program.

It plays one behaviour per turn from a plan (a JSON list in the file named by DRIVE_PLAN; the
last entry repeats) and appends what it was given to DRIVE_RECORD (one JSON line per turn:
the behaviour, its argv, the environment's AGORA_* names and the prompt), so a test can check
the driver's side of the contract. Behaviours:

  answer      act as the seat through the real hub: reply to every owed ask, then ack all; exit 0
  ack         ack all, answer nothing (a turn that touched the hub but left the debt); exit 0
  leave       do nothing; exit 0 (left the debt as it was)
  crash       exit 3
  transient   exit 75 (EX_TEMPFAIL: a provider hiccup)
  hang        sleep far past any limit, with a grandchild in its own session holding stdout
  receipt     a work chunk: write a progress receipt on the claim the prompt names; exit 0
  finish      a work chunk: mark the claim the prompt names done, at the version it names; exit 0
  escape      start a grandchild with an empty environment in a session of its own (`env -i setsid`),
              sleeping, its command line naming DRIVE_RECORD; exit 0 at once
  operator    try what only the hub's operator may (`agora agent rekey asker`, `agora down`) as a
              prompt-injected turn would; their exit statuses and stderr go to DRIVE_RECORD.operator; exit 0

Run as: python tests/drive_turn.py (the seat and home come from AGORA_AGENT_ID and AGORA_HOME,
which the driver sets).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    record = Path(os.environ["DRIVE_RECORD"])
    plan = json.loads(Path(os.environ["DRIVE_PLAN"]).read_text())
    done = len(record.read_text().splitlines()) if record.exists() else 0
    behaviour = plan[min(done, len(plan) - 1)]
    with record.open("a") as out:
        out.write(json.dumps({"behaviour": behaviour, "argv": sys.argv, "cwd": os.getcwd(),
                              "stdin_is_null": _stdin_is_null(),
                              "agora_env": sorted(k for k in os.environ if k.startswith("AGORA_")),
                              "prompt": os.environ.get("AGORA_DRIVE_PROMPT"),
                              "session": os.environ.get("AGORA_DRIVE_SESSION")}) + "\n")
    print(json.dumps({"type": "started", "behaviour": behaviour}), flush=True)
    return PLAYS[behaviour]()


def _stdin_is_null() -> bool:
    try:
        return os.path.samestat(os.fstat(0), os.stat(os.devnull))
    except OSError:
        return False


def _hub():
    """The seat's hub as the CLI finds it: the home's socket, or the remote port its hub.url names."""
    from agorad.surface.filenames import hub_url_for
    from agorad.surface.wsclient import open_client

    home = Path(os.environ["AGORA_HOME"])
    agent = os.environ["AGORA_AGENT_ID"]
    client = open_client(home, hub_url_for(home)).connect()
    client.hello(agent, (home / "keys" / f"{agent}.key").read_text().strip())
    return client


def answer() -> int:
    with _hub() as hub:
        for debt in hub.call("inbox.check", important=True)["owed"]:
            channel = debt["ref"].rpartition("#")[0]
            hub.call("messages.send", target=channel, title="done", body="handled by the driven turn",
                     reply_to=debt["ref"])
        hub.call("inbox.ack", all=True)
    return 0


def ack() -> int:
    with _hub() as hub:
        hub.call("inbox.ack", all=True)
    return 0


def _chunk_claim() -> tuple[str, int]:
    import re

    found = re.search(r"owns (claim:\d+) \(version (\d+)\)", os.environ["AGORA_DRIVE_PROMPT"])
    return found.group(1), int(found.group(2))


def receipt() -> int:
    ref, _ = _chunk_claim()
    with _hub() as hub:
        hub.call("claims.receipt", ref=ref, text="one slice done by the driven chunk")
    return 0


def finish() -> int:
    ref, version = _chunk_claim()
    with _hub() as hub:
        hub.call("claims.done", ref=ref, version=version)
    return 0


def hang() -> int:
    # A grandchild that leaves the process group and keeps our stdout: the driver must still end the turn.
    subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(3600)"], stdout=sys.stdout)
    time.sleep(3600)
    return 0


def escape() -> int:
    subprocess.Popen(["env", "-i", "setsid", sys.executable, "-c", "import sys, time; time.sleep(3600)",
                      os.environ["DRIVE_RECORD"]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return 0


def operator() -> int:
    agora = str(Path(sys.executable).with_name("agora"))
    tried = {}
    for argv in (["agent", "rekey", "asker"], ["down"]):
        done = subprocess.run([agora, *argv], capture_output=True, text=True, timeout=60)
        tried[" ".join(argv)] = {"status": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
    Path(os.environ["DRIVE_RECORD"] + ".operator").write_text(json.dumps(tried))
    return 0


PLAYS = {
    "answer": answer,
    "ack": ack,
    "leave": lambda: 0,
    "crash": lambda: 3,
    "transient": lambda: 75,
    "hang": hang,
    "receipt": receipt,
    "finish": finish,
    "operator": operator,
    "escape": escape,
}

if __name__ == "__main__":
    sys.exit(main())
