# icml25nb: the commands the README names. `make test` is what CI runs; `make book` is the main job.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MATHJAX := .cache/mathjax/node_modules/mathjax/es5/tex-mml-chtml.js
# pytest-xdist workers: 2 on 2 cores, one numba/torch/BLAS thread each (tests/conftest.py)
WORKERS ?= 2
# the kernel test suites: run a second time under NUMBA_BOUNDSCHECK=1 by `make test`
KERNEL_TESTS := $(wildcard tests/test_*_kernels.py) tests/test_contraction.py tests/test_rng.py

.PHONY: setup test book sweep docs readme lab bench mathjax clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(PY) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed, found " + sys.version.split()[0]'
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# the CPU wheel of PyTorch first, so that nothing pulls a CUDA build
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev,docs,bench,sweep]"
	touch $(STAMP)

mathjax: $(MATHJAX)

$(MATHJAX):
	command -v npm >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq npm)
	mkdir -p .cache/mathjax
	cd .cache/mathjax && npm install --silent --no-audit --no-fund mathjax@3
	test -f $(MATHJAX)

test: setup mathjax
	$(BIN)/python tools/check_sync.py
	$(BIN)/python tools/build_docs.py build
	ICML25NB_REQUIRE_DOCS=1 $(BIN)/python -m pytest -n $(WORKERS) -p no:cacheprovider --durations=60 tests
	# the kernel tests once more with every array index checked, compiled afresh (a cached build has no checks)
	rm -rf .cache/numba-boundscheck
	NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR=.cache/numba-boundscheck $(BIN)/python -m pytest -n $(WORKERS) \
		-p no:cacheprovider -q $(KERNEL_TESTS)

book: setup mathjax
	mkdir -p _book
	$(BIN)/icml25nb claims --all --save _book/claims.json; echo $$? > _book/claims.status
	$(BIN)/python tools/build_docs.py build
	@status=$$(cat _book/claims.status); if [ "$$status" != 0 ]; then echo "book: something is broken (a check fails, a claim cannot be measured, or a seed-0 verdict differs from the committed sweep; see above)"; exit $$status; fi
	@echo "book: nothing broken on seed 0 (findings, failing or not discriminating paper claims included, are in the tables); open _docs/index.html (claims dashboard: _docs/claims.html)"

# every registered chapter (the committed sweep file is written only for registered claims, from a clean tree)
sweep: setup
	$(BIN)/icml25nb sweep --all --seeds 0-15

docs: setup mathjax
	$(BIN)/python tools/build_docs.py build

readme: setup
	$(BIN)/python tools/build_docs.py readme

lab: setup
	$(BIN)/jupyter lab nbs

bench: setup
	$(BIN)/icml25nb bench

clean:
	rm -rf _proc _docs _book docs/_src runs build jupyter_execute *.egg-info
