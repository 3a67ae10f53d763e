# Every target installs what it needs: a venv with pinned packages and the project in editable mode.
PY      := .venv/bin/python
STAMP   := .venv/.installed
JOBS    ?= $(shell nproc)

RAY_STAMP := .venv/.installed-ray

.PHONY: test lint reproduce bench-compile bench-sim microbench gate gate-full clean-cache

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

# The tests also cover the optional Ray engine, so they install the Ray extra on top.
$(RAY_STAMP): $(STAMP) requirements-ray.txt
	$(PY) -m pip install -q -r requirements-ray.txt
	touch $(RAY_STAMP)

test: $(RAY_STAMP)
	$(PY) -m pytest -n $(JOBS) tests

lint: $(STAMP)
	$(PY) -m ruff check .

reproduce: $(STAMP)
	$(PY) -m study reproduce --workers $(JOBS)

bench-compile: $(STAMP)
	$(PY) -m tools.bench_compile

bench-sim: $(STAMP)
	$(PY) -m tools.bench_sim

microbench: $(STAMP)
	$(PY) -m tools.microbench --chip mtia2i

gate: $(STAMP)
	$(PY) -m study gate --workers $(JOBS)

# every study shape and dtype against results/expected_full.csv (reuses rows make reproduce measured)
gate-full: $(STAMP)
	$(PY) -m study gate --suite full --workers $(JOBS)

clean-cache:
	rm -rf $${TRITON_CACHE_DIR:-$$HOME/.triton/cache}
