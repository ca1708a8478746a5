# The book's two commands: `make book` and `make test` (see README.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
JOBS ?= 2
STAMP := $(VENV)/.installed

.PHONY: book test unit notebooks variants slow site browser bench rerun lock clean distclean unit-bg slow-bg site-check

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[book,test]'
	touch $@

## make book: environment, execute every chapter (cached), render _build/html
book: $(STAMP)
	$(BIN)/twolayer build --jobs $(JOBS)

## make test: unit tests, every notebook under nbval, the book, the slow tests, the
## browser check, in one schedule on both cores:
##   - the site's chain first: nbval of every notebook and the variant pages (nbval
##     does not run them), then the book (every page is in the cache by then:
##     nbval's executions, see pipeline/nbval_entries.py, and the variants; the
##     book only renders), then the browser check of the site;
##   - beside it, at a lower priority (nice), the unit tests and the slow tests:
##     they take the CPU the chain leaves (kernels starting, nbval's last
##     notebook, the single-process render, the browser waiting) instead of
##     slowing it down. One torch/BLAS thread per process everywhere.
test: $(STAMP)
	$(MAKE) --no-print-directory -Oline -j 5 unit-bg slow-bg site-check

THREADS := TWOLAYER_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
NICE := nice -n 5

unit: $(STAMP)
	$(THREADS) $(BIN)/python -m pytest tests -m "not slow and not browser" -q

notebooks: $(STAMP)
	# kernels over IPC sockets (book/conftest.py: two xdist workers raced for TCP
	# ports in CI); 300 s to start on a loaded machine. ATen's portable kernels
	# (ATEN_CPU_CAPABILITY=default), not the ones `make book` locked with: the
	# locked tables must hold on another CPU's floating point. Each notebook whose
	# cells all pass becomes its page's cache entry (nbval_entries: the build
	# renders it instead of executing it again); the longest notebooks go first
	ATEN_CPU_CAPABILITY=default $(THREADS) TWOLAYER_RUN_CACHE=$(CURDIR)/_build/runs $(BIN)/python -m pytest --nbval-lax --nbval-current-env --nbval-kernel-startup-timeout 300 book -q -n $(JOBS) --dist loadfile -p no:cacheprovider -p twolayer.pipeline.nbval_entries

variants: $(STAMP)
	$(THREADS) $(BIN)/twolayer execute --variants --jobs 1

slow: $(STAMP)
	# mostly waiting (kernels starting, sleeps, interrupts): two test files at a time
	$(THREADS) $(BIN)/python -m pytest tests -m "slow" -q -n 2 --dist loadfile

# make test's pieces: the unit and slow tests at a lower priority; the site's chain
unit-bg slow-bg: %-bg: $(STAMP)
	$(NICE) $(MAKE) --no-print-directory $*

site-check: notebooks variants
	$(BIN)/twolayer build --jobs $(JOBS)
	$(BIN)/python -m pytest tests -m "browser" -q

site: book slow

## make browser: the book, then every page of _build/html in headless Chromium
browser: book
	$(BIN)/python -m pytest tests -m "browser" -q

## make bench: timings of the build (clean, no-change) and per notebook
bench: $(STAMP)
	$(BIN)/python benchmarks/build.py
	$(BIN)/python benchmarks/sweep.py
	TWOLAYER_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python benchmarks/logtime.py

## make lock: store each notebook's claims table from the last `make book` in its
## source notebook (nbval compares it); run after a change that moves a claim on purpose
lock: $(STAMP)
	$(BIN)/twolayer lock

## make rerun NB=phuong2021/fig1_two_layer ARGS="-p width 200"
rerun: $(STAMP)
	$(BIN)/twolayer rerun $(NB) $(ARGS)

clean:
	rm -rf _build

distclean: clean
	rm -rf $(VENV)

.PHONY: sweep sweeps bench-sweep

## make sweep NB=lyu2021/phase1 ARGS="-p seed 0:4": one page over a grid of parameters, on
## dask (a LocalCluster, or SCHEDULER=tcp://host:8786); the table lands in _build/sweeps/
sweep: $(STAMP)
	$(BIN)/twolayer sweep $(NB) $(ARGS) $(if $(SCHEDULER),--scheduler $(SCHEDULER))

## make sweeps: every page with a seed parameter over held-out seeds (data/sweeps/*.parquet,
## stored in the repository), then book/robustness.md; PAGES="chapter/name ..." for some,
## ARGS="--max-seconds 30" for the pages whose last run took at most 30 s
sweeps: $(STAMP)
	$(BIN)/twolayer robustness run $(PAGES) $(ARGS) $(if $(SCHEDULER),--scheduler $(SCHEDULER))

## make bench-sweep: throughput of a 20-point sweep with 1 and 2 workers (README, "Sweeps")
bench-sweep: $(STAMP)
	$(BIN)/python benchmarks/sweep.py
