# Two entry points, both self-contained on a fresh machine:
#   make demo   set up .venv and run the whole DAG on configs/tiny.yaml (CPU only)
#   make test   set up .venv and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Where there is no NVIDIA GPU, take the CPU build of torch instead of a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
HAS_GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo yes)

.PHONY: demo test setup browser clean

$(BIN)/kerneldojo: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
ifeq ($(HAS_GPU),yes)
	$(BIN)/pip install -q "torch>=2.4"
else
	$(BIN)/pip install -q "$(TORCH_SPEC)"
endif
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

# The tests' DeepSpeed (ZeRO-2/3 on CPU ranks): its build imports torch, so it installs after it, without build
# isolation; where it cannot install, its tests are skipped and say why.
$(VENV)/.deepspeed: $(BIN)/kerneldojo
	$(BIN)/pip install -q --no-build-isolation deepspeed || echo "note: no DeepSpeed; its tests will be skipped"
	touch $@

setup: $(BIN)/kerneldojo

demo: setup
	$(BIN)/kerneldojo run --config configs/tiny.yaml

# tests/test_prefect_ui.py reads the Prefect UI with headless Chromium: installed where apt-get may (as root,
# ~1 min), otherwise that test is skipped and says why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    { DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q --no-install-recommends chromium \
	        >/dev/null 2>&1 || { timeout 300 apt-get update -q >/dev/null 2>&1 && \
	      DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q --no-install-recommends chromium \
	        >/dev/null 2>&1; }; }; } || echo "note: no Chromium here; tests/test_prefect_ui.py will be skipped"

test: setup $(VENV)/.deepspeed browser
	$(BIN)/python -m pytest -q --durations=15 tests

clean:
	rm -rf $(VENV) .kerneldojo
