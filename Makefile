# Every target creates .venv on first use, so a fresh clone needs only `make`.
# editable_mode=compat: a plain path entry, not an import hook that taxes every start-up.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-harness bench soak clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	touch $(STAMP)

run: $(STAMP)  ## set up and run the hub in the foreground on $$AGORA_HOME (default ~/.agora)
	$(BIN)/agorad

test: $(STAMP)  ## set up and run the whole suite
	$(BIN)/pytest -q

test-harness: $(STAMP)  ## the real harness CLIs (pinned, in .cache/harness) against a scripted model, with no network but loopback
	AGORA_HARNESS_TESTS=1 unshare -n sh -c 'ip link set lo up && exec $(BIN)/pytest -q -rs -s tests/harness'

soak: $(STAMP)  ## the reliability suite at soak strength: 200 kills, a minute of load, thousands of examples
	AGORA_SOAK=1 $(BIN)/pytest -q -s -p no:randomly --timeout 1800 tests/reliability

bench: $(STAMP)  ## print the project's figures beside the raw limits measured in the same run
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info
