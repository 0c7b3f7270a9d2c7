"""Reception: `agora listen` tails a seat's notify file and prints one-line doorbells.

Stdout carries only sentinel lines (sentinels.py); the hub never runs an agent.
Imports stay light: `agora listen --once` runs in a loop.
"""
