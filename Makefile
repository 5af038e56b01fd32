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

.PHONY: all setup provision unprovision sample-report run test test-fast lint bench bench-compare ci-compare clean-results help \
	testbed-up testbed-down test-bare

help:
	@echo "make run      provision this machine and run the experiments (PROFILE=$(PROFILE))"
	@echo "make sample-report  docs/sample-report/ from the smoke campaign (make run PROFILE=smoke first)"
	@echo "make unprovision  undo what provisioning changed here (UNPROVISION_ARGS=--check: say only)"
	@echo "make test     provision and run every test (the bare-node one too: make test-bare alone)"
	@echo "make test-fast  the quick loop: every test without provisioning (root tests too when root) but the bare-node one"
	@echo "make lint     ruff format and check, snakemake --lint, ansible-lint"
	@echo "make bench    instrument and scheduler-daemon overhead benchmarks (print figures)"
	@echo "make testbed-up NODES=2   emulated bare Debian 12 nodes (inventory/bare.yml); make testbed-down"
	@echo "make provision INVENTORY=inventory/bare.yml   provision them from scratch"
	@echo "make ci-compare BASE=linux HEAD=elevator_bfq   compare two variants here, as the testbed CI does"
	@echo "make ci-compare VARIANT=dynamic_io BASE_REF=origin/main   compare the variant built from BASE_REF"
	@echo "               with its build from this working tree (HEAD_REF=REF: from that commit instead)"

$(STAMP): requirements.txt pyproject.toml scripts/bootstrap.sh
	sh scripts/bootstrap.sh
	touch $@

# byte-compiled once here, so that no run compiles corun's modules again (even where
# PYTHONDONTWRITEBYTECODE keeps Python from caching them itself); quick when up to date
setup: $(STAMP)
	$(BIN)/python -m compileall -q corun analysis >/dev/null

# the first provisioning records the machine as it was (scripts/unprovision.py), so that
# `make unprovision` undoes what corun changed and only that (UNPROVISION_ARGS=--check: say only)
provision: setup
	@$(if $(filter inventory/local,$(INVENTORY)),$(BIN)/python scripts/unprovision.py record)
	$(BIN)/ansible-playbook -i $(INVENTORY) site.yml $(ANSIBLE_ARGS)

UNPROVISION_ARGS ?=
unprovision:
	$(BIN)/python scripts/unprovision.py undo $(UNPROVISION_ARGS)

# a lock left by a killed Snakemake is removed (and said so) when no Snakemake runs here
run: provision
	@$(BIN)/python scripts/snakemake_stale_lock.py
	$(BIN)/snakemake --profile workflows/profiles/$(PROFILE) all
	@echo
	@echo "report: results/$(PROFILE)/report.html"

test: provision
	$(BIN)/python -m pytest -ra

# without provisioning; the root tests run too when make runs as root
test-fast: setup
	$(BIN)/python -m pytest -ra -m "$(if $(filter 0,$(shell id -u)),not bare,not root)"

lint: setup
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/snakemake --lint
	$(BIN)/ansible-lint

bench: provision
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/dynamic_io_daemon.py

bench-compare: setup
	$(BIN)/python bench/compare_scale.py

# Compare two scheduler variants on this machine (what .github/workflows/testbed.yml runs):
# a randomised interleaved campaign, then corun compare; exit 1 on a significant regression.
# With VARIANT=NAME: two builds of that variant instead, from BASE_REF and from the working tree
# (or HEAD_REF), built in a temporary git worktree; BASE and HEAD are then not used.
BASE ?= linux
HEAD ?= elevator_bfq
VARIANT ?=
BASE_REF ?= origin/main
HEAD_REF ?=
CI_OUT ?= results/ci-compare
CI_REPS ?= 5
CI_FAIL_IF_WORSE ?= 5%
CI_ARGS ?=
ci-compare: setup
	$(MAKE) -s -C kernels
ifneq ($(VARIANT),)
	$(BIN)/python scripts/ci_compare.py --variant $(VARIANT) --base-ref $(BASE_REF) \
		$(if $(HEAD_REF),--head-ref $(HEAD_REF)) --out $(CI_OUT) \
		--reps $(CI_REPS) --fail-if-worse $(CI_FAIL_IF_WORSE) $(CI_ARGS)
else
	$(BIN)/python scripts/ci_compare.py --base $(BASE) --head $(HEAD) --out $(CI_OUT) \
		--reps $(CI_REPS) --fail-if-worse $(CI_FAIL_IF_WORSE) $(CI_ARGS)
endif

# An emulated bare-metal testbed on this machine (docs/howto/testbed.md): NODES fresh Debian 12
# nodes reached over ssh, inventory/bare.yml; testbed-down removes it (the template stays).
NODES ?= 2
testbed-up:
	$(BIN)/python scripts/bare-testbed up $(NODES)

testbed-down:
	$(BIN)/python scripts/bare-testbed down

# Provisioning from scratch on two bare nodes, runs across them from this machine (provisioned
# first: the runs start here), and their teardown (root; about 10 minutes).
test-bare: provision
	$(BIN)/python -m pytest -ra -m bare tests/test_bare_testbed.py

# docs/sample-report/: the smoke campaign in results/smoke, kept small and rendered by this code
# (tests/test_sample_report.py checks that it still is)
sample-report: setup
	$(BIN)/python scripts/sample_report.py publish --from results/smoke

clean-results:
	rm -rf results/local results/smoke .snakemake
