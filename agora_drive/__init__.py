"""`agora drive`: unattended seats. The driver waits for the seat's mail and runs one bounded harness
turn per wake, so a seat with no human at its terminal still answers. `supervise` runs one turn as a
supervised process tree (wall-clock limit, stop on request, every descendant ended, output read as
lines) and `tree` finds and signals that tree; the adapters that say how each harness is run and how
its output is read live in `agora_setup.harnesses` (turns.py); `journal` keeps the driver's bounded
logs of turns and failures; the loop ties them together. Imports only agorad.surface, agora_listen
and agora_setup (tests/test_layers.py), so the driver never loads the database or the server.
"""
