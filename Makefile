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

.PHONY: all setup provision run test test-fast lint bench clean-results help

help:
	@echo "make run      provision this machine and run the experiments (PROFILE=$(PROFILE))"
	@echo "make test     provision and run every test"
	@echo "make bench    instrument and scheduler-daemon overhead benchmarks (print figures)"

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

clean-results:
	rm -rf results/local results/smoke .snakemake
