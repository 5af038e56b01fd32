# The scheduler daemons' shared library (schedulers/lib): include it from a daemon's Makefile
# after kernels/common/cflags.mk, then add $(SCHED_LIB_SRC) to the sources, $(SCHED_LIB_HDR)
# to the prerequisites and -I$(SCHED_LIB_DIR) to the flags.
SCHED_LIB_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
SCHED_LIB_SRC := $(wildcard $(SCHED_LIB_DIR)/*.c)
SCHED_LIB_HDR := $(wildcard $(SCHED_LIB_DIR)/*.h) $(SCHED_LIB_DIR)/lib.mk
