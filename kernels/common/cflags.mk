# The build flags of every C component of corun (kernels/, schedulers/dynamic_io and any
# later C tool), in one place. Include it from a component's Makefile:
#
#     include $(dir $(lastword $(MAKEFILE_LIST)))<path to>/kernels/common/cflags.mk
#
# then compile with
#
#     $(CC) $(CORUN_CFLAGS) -o $@ $(SRC) $(CORUN_LDLIBS)          # the normal build
#     $(CC) $(CORUN_ASAN_CFLAGS) -o $@ $(SRC) $(CORUN_LDLIBS)     # the ASan/UBSan build
#
# Variables it defines:
#   CC                 gcc, unless CC is set on the command line or in the environment
#   CFLAGS             optimisation and debug flags a user may override (default -O2)
#   LDFLAGS, LDLIBS    linker flags and libraries a user may add (default empty)
#   CORUN_STD_FLAGS    the language standard (-std=gnu11)
#   CORUN_WARN_FLAGS   -Wall -Wextra -Wconversion -Werror
#   CORUN_ASAN_FLAGS   AddressSanitizer and UndefinedBehaviorSanitizer, any report fatal
#   CORUN_COMMON_DIR   this folder (the shared helpers corun_kernel.c/.h), for -I and sources
#   CORUN_CFLAGS_MK    this file, as a prerequisite: a change of flags rebuilds
#   CORUN_CFLAGS       standard + warnings + CFLAGS + -I$(CORUN_COMMON_DIR) + LDFLAGS
#   CORUN_ASAN_CFLAGS  CORUN_CFLAGS + CORUN_ASAN_FLAGS
#   CORUN_LDLIBS       LDLIBS (put it after the sources)
#
# CFLAGS holds only what a user may replace: `make CFLAGS=-O0` keeps the standard, the
# warnings and -Werror.

ifeq ($(origin CC),default)
CC = gcc
endif
CFLAGS ?= -O2
LDFLAGS ?=
LDLIBS ?=

CORUN_CFLAGS_MK := $(lastword $(MAKEFILE_LIST))
CORUN_COMMON_DIR := $(patsubst %/,%,$(dir $(CORUN_CFLAGS_MK)))
CORUN_STD_FLAGS := -std=gnu11
CORUN_WARN_FLAGS := -Wall -Wextra -Wconversion -Werror
CORUN_ASAN_FLAGS := -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all

CORUN_CFLAGS = $(CORUN_STD_FLAGS) $(CORUN_WARN_FLAGS) $(CFLAGS) -I$(CORUN_COMMON_DIR) $(LDFLAGS)
CORUN_ASAN_CFLAGS = $(CORUN_CFLAGS) $(CORUN_ASAN_FLAGS)
CORUN_LDLIBS = $(LDLIBS)
