# corun: two commands do everything on a fresh Debian 12 machine with root.
#   make run    set up, provision this machine, run every experiment, print the report path
#   make test   set up, provision, run every test
PROFILE ?= local
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.corun-installed
INVENTORY ?= inventory/local
ANSIBLE_ARGS ?=
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: all setup provision run test test-fast lint bench bench-compare ci-compare clean-results help

help:
	@echo "make run      provision this machine and run the experiments (PROFILE=$(PROFILE))"
	@echo "make test     provision and run every test"
	@echo "make bench    instrument and scheduler-daemon overhead benchmarks (print figures)"
	@echo "make ci-compare BASE=linux HEAD=elevator_bfq   compare two variants here, as the testbed CI does"

$(STAMP): requirements.txt pyproject.toml scripts/bootstrap.sh
	sh scripts/bootstrap.sh
	touch $@

setup: $(STAMP)

provision: setup
	$(BIN)/ansible-playbook -i $(INVENTORY) site.yml $(ANSIBLE_ARGS)

run: provision
	$(BIN)/snakemake --profile workflows/profiles/$(PROFILE) all
	@echo
	@echo "report: results/$(PROFILE)/report.html"

test: provision
	$(BIN)/python -m pytest -ra

test-fast: setup
	$(BIN)/python -m pytest -ra -m "not root"

lint: setup
	$(BIN)/snakemake --lint
	$(BIN)/ansible-lint

bench: provision
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/dynamic_io_daemon.py

bench-compare: setup
	$(BIN)/python bench/compare_scale.py

# Compare two scheduler variants on this machine (what .github/workflows/testbed.yml runs):
# a randomised interleaved campaign, then corun compare; exit 1 on a significant regression.
BASE ?= linux
HEAD ?= elevator_bfq
CI_OUT ?= results/ci-compare
CI_REPS ?= 5
CI_FAIL_IF_WORSE ?= 5%
CI_ARGS ?=
ci-compare: setup
	$(MAKE) -s -C kernels
	$(BIN)/python scripts/ci_compare.py --base $(BASE) --head $(HEAD) --out $(CI_OUT) \
		--reps $(CI_REPS) --fail-if-worse $(CI_FAIL_IF_WORSE) $(CI_ARGS)

clean-results:
	rm -rf results/local results/smoke .snakemake
