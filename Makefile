# Two entry points: `make demo` and `make test`. Both build .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Offline data: ../shared/data when it sits beside the checkout, unless XLT_DATA_DIR is set.
XLT_DATA_DIR ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),)
export XLT_DATA_DIR
export HF_HUB_OFFLINE ?= 1

.PHONY: demo test test-quick install clean wheelhouse

$(VENV)/.installed: pyproject.toml configs/install/dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: it resolves to the local CPU wheel, never the CUDA build.
	$(PY) -m pip install --quiet --no-compile torch==2.13.0
	# Every extra, at the exact versions of configs/install/dev.txt (pyproject.toml states ranges).
	$(PY) -m pip install --quiet --no-compile -e ".[all,test]" -c configs/install/dev.txt
	# The bytecode pip would compile one file at a time, on every core (make install 90 -> 60 s on 2 cores). Like pip,
	# it skips the files written for a newer Python (torch's py312 test helpers): those make the exit 1.
	$(PY) -m compileall -qq -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
	touch $@

install: $(VENV)/.installed

# ARGS: the job's options, e.g. make demo ARGS="--set lm.optim.seed=1 --set emb.optim.seed=1 --set selection.seed=1"
demo: install
	$(PY) jobs/cotrain.py $(ARGS)

# One test at a time: two at once (pytest-xdist -n 2) took 30.5 min against ~29 serial on the 2-core
# machine, which the suite already keeps busy (benchmarks/test_time.md).
test: install
	$(PY) -m pytest -q

# The inner loop: no Ray, no real model, no cluster (tests/conftest.py: --quick); under 3 minutes.
test-quick: install
	$(PY) -m pytest -q --quick

# For a node without a package index (README, "Air-gapped clusters"): the wheels xlt's core and EXTRAS need that the
# node's Python (PYTHON_VERSION) lacks, given what it holds (TARGET_HAS: its pip freeze, or this list),
# in parts of at most PART_MIB MiB with their sha256 sums under dist/wheelhouse/.
PYTHON_VERSION ?= 3.12
TARGET_HAS ?= configs/install/gpu-node.txt
PART_MIB ?= 60
# EXTRAS: ONNX for CPU workers (jobs/predict.py --set model.backend=onnx); EXTRAS= for the core only.
EXTRAS ?= onnx
wheelhouse: install
	rm -rf dist/wheelhouse
	$(PY) -m xlt.wheelhouse build --python-version $(PYTHON_VERSION) --target-has $(TARGET_HAS) \
		--part-mib $(PART_MIB) --extras "$(EXTRAS)" --out dist/wheelhouse

clean:
	rm -rf $(VENV) .pytest_cache
