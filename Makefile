# Every target creates .venv on first use, so a fresh clone needs only `make`.
# editable_mode=compat: a plain path entry, not an import hook that taxes every start-up.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The one compiled part's build (setup.py), removed before each install and by clean.
APPENDS_BUILD := agorad/runtime/_appends.*.so

.PHONY: run test test-harness bench soak clean

# The old _appends build goes first: setup.py marks it optional, so a .c that no longer compiles would
# otherwise leave the last good build in place, imported and tested as if it were the new code.
$(STAMP): pyproject.toml setup.py agorad/runtime/_appends.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	rm -f $(APPENDS_BUILD)
	$(BIN)/pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	touch $(STAMP)

run: $(STAMP)  ## set up and run the hub in the foreground on $$AGORA_HOME (default ~/.agora)
	$(BIN)/agorad

test: $(STAMP)  ## set up and run the whole suite
	$(BIN)/pytest -q

# The real Claude Code and Codex CLIs (pinned in tests/harness/versions.json) against a scripted model,
# installed into .cache/harness by npm. Run with no network but loopback where unshare allows it.
HARNESS_PYTEST := AGORA_TEST_HARNESS=1 $(BIN)/pytest -q tests/harness
test-harness: $(STAMP)  ## install the harness CLIs and run the tests that drive them
	$(BIN)/python -m tests.harness.install
	@if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then \
		echo "test-harness: in a network namespace with loopback only (unshare -n)"; \
		unshare -n sh -c 'ip link set lo up && $(HARNESS_PYTEST)'; \
	else \
		echo "test-harness: unshare -n is not permitted here; running with the host's network (the harnesses are told to stay off it)"; \
		$(HARNESS_PYTEST); \
	fi

soak: $(STAMP)  ## the reliability suite at soak strength: 200 kills, a minute of load, thousands of examples
	AGORA_SOAK=1 $(BIN)/pytest -q -s -p no:randomly --timeout 1800 tests/reliability

bench: $(STAMP)  ## print the project's figures beside the raw limits measured in the same run
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info $(APPENDS_BUILD)
