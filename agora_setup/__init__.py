"""`agora setup`: wire a workspace's harnesses to a seat, and take the wiring out again.

targets: how one file is edited (our entries found by shape or markers, the user's kept);
harnesses: which files each harness gets; rules: the text the model reads;
plan: check every target, then write them all, serialised against a concurrent setup;
record: the workspace's seat record; doctor: `agora setup --check`.
Imports only agorad.surface (tests/test_layers.py).
"""
