# kinspect: `make demo` opens the TUI on a local lab; `make test` runs the test suite.
# Both install what they need first: Debian packages, the virtualenv, Kafka's jars (Maven).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
KINSPECT := $(VENV)/bin/kinspect
DEBIAN_PACKAGES := iproute2 iptables kcat tmux procps maven openjdk-17-jre-headless python3-venv \
                   debootstrap util-linux iputils-ping prometheus fuse3

.PHONY: demo test test-fast setup system-deps venv kafka spark-archive lint bench down screenshots matrix \
	docker-engine images lock bytecode docs docs-serve

BACKEND ?= auto

demo: setup $(if $(filter docker,$(BACKEND)),docker-engine)
	$(KINSPECT) demo --backend $(BACKEND)

# The lab tests and the tests needing no lab run side by side, and the docker lab's images are
# built beside the process lab's tests (tests/run-suite says how).
test: setup docker-engine
	tests/run-suite $(PY) $(PYTEST_ARGS)

test-fast: setup
	$(PY) -m pytest -m "not slow and not extended" $(PYTEST_ARGS)

setup: system-deps venv kafka spark-archive bytecode

system-deps:
	@missing=""; for pkg in $(DEBIAN_PACKAGES); do \
	  dpkg -s $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -q && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

venv: $(VENV)/.installed

# Installs the locked versions (constraints.txt): a fresh machine gets what the suite passed on.
$(VENV)/.installed: pyproject.toml constraints.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[all,dev]'
	@touch $@

# kinspect's bytecode, written once: the suite starts hundreds of `kinspect` processes, and on a
# machine that sets PYTHONDONTWRITEBYTECODE each compiled every module it imported (~0.3 s).
bytecode: venv
	@$(PY) -m compileall -q kinspect bench >/dev/null

# Refresh the lock: the newest releases pyproject.toml allows, in a throwaway venv; then run
# `make test` before committing constraints.txt.
lock:
	rm -rf .lock-venv && python3 -m venv .lock-venv
	.lock-venv/bin/python -m pip install -q --upgrade pip
	.lock-venv/bin/python -m pip install -q -e '.[all,dev]'
	{ head -2 constraints.txt; .lock-venv/bin/pip freeze --exclude-editable | grep -v '^#'; } \
	  > constraints.new && mv constraints.new constraints.txt
	rm -rf .lock-venv

kafka: venv
	$(KINSPECT) lab fetch

# The Spark driver's classes in one archive (kinspect/postmortem/spark/jvm_archive.py): every
# post-mortem's JVM starts ~2 s sooner. Made once (~30 s), kept in ~/.cache/kinspect.
spark-archive: venv
	$(PY) -m kinspect.postmortem.spark.jvm_archive

# The docker backend: an engine (docker/engine.sh starts one as root when none answers) and
# our images (base pulled or debootstrapped, Kafka image built from docker/, and kinspect's own,
# docker/kinspect.Dockerfile, which runs kinspect where this host cannot reach the lab's
# containers, as behind Docker Desktop; each reused when present).
docker-engine: system-deps
	bash docker/engine.sh

images: docker-engine kafka
	@if docker info >/dev/null 2>&1; then $(KINSPECT) lab images; fi

# Style, types, and the layers (import-linter contracts in pyproject.toml).
lint: system-deps venv
	$(VENV)/bin/ruff check kinspect tests bench screenshots docker docs
	$(VENV)/bin/mypy kinspect bench screenshots docs/generate.py docs/performance/charts.py
	$(VENV)/bin/lint-imports

bench: setup
	$(PY) -m bench.run

# Every scenario on ZooKeeper 3.9, KRaft 3.9 and KRaft 4.x (rewrites docs/reference/scenarios.md's tables; about
# 100 runs of 1-2 min each) and the tests `make test` leaves out (extended).
# `make matrix BACKEND=docker` runs them on the docker lab; MATRIX_ARGS="--names a b" narrows.
MATRIX_ARGS ?=
matrix: setup docker-engine images
	$(if $(filter-out auto,$(BACKEND)),KINSPECT_BACKEND=$(BACKEND)) $(KINSPECT) scenario matrix \
	  --modes zookeeper,kraft --kafka 3,4 --markdown --out docs/reference/scenarios.md $(MATRIX_ARGS)
	$(PY) -m pytest -m extended $(PYTEST_ARGS)

screenshots: setup
	$(KINSPECT) demo --no-ui
	$(PY) screenshots/take.py

# The docs site (mkdocs.yml): strict, so a broken link or anchor fails. The reference pages in
# docs/reference/ are generated from the code: `python -m docs.generate` rewrites them.
export NO_MKDOCS_2_WARNING := 1
docs: venv
	$(VENV)/bin/mkdocs build --strict --quiet

docs-serve: venv
	$(VENV)/bin/mkdocs serve --strict

down: venv
	$(KINSPECT) lab down
