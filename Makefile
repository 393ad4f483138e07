# Two entry points: `make demo` and `make test`. Both build .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Offline data: ../shared/data when it sits beside the checkout, unless XLT_DATA_DIR is set.
XLT_DATA_DIR ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),)
export XLT_DATA_DIR
export HF_HUB_OFFLINE ?= 1

.PHONY: demo test test-quick install clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: it resolves to the local CPU wheel, never the CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) jobs/cotrain.py --config configs/cotrain_sib200.yaml

# Two test files at a time (-n 2, a file's tests together in one process: its module fixtures run
# once). Much of the suite waits on process start-ups, polls and Ray's controllers, so the second
# core has work while the first waits (benchmarks/test_time.md).
test: install
	$(PY) -m pytest -q -n 2 --dist loadfile

# The inner loop: no Ray, no real model, no cluster (tests/conftest.py: --quick); under 3 minutes.
test-quick: install
	$(PY) -m pytest -q --quick

clean:
	rm -rf $(VENV) .pytest_cache
