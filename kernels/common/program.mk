# The rules of a C component that is one program (emulators/rotating_disk, schedulers/dynamic_io):
# build/$(PROGRAM) (target all), its ASan/UBSan build build/asan/$(PROGRAM) (target asan), and
# clean. Include it after cflags.mk and after setting
#   PROGRAM        the program's file name
#   PROGRAM_SRC    its sources (put on the command line)
#   PROGRAM_DEPS   what rebuilds it (sources, headers, Makefile, $(CORUN_CFLAGS_MK))
#   PROGRAM_FLAGS  flags before the sources (-I..., a library's cflags)
#   PROGRAM_LIBS   libraries after the sources

.PHONY: all asan clean
.DELETE_ON_ERROR:

all: build/$(PROGRAM)

asan: build/asan/$(PROGRAM)

build/$(PROGRAM): $(PROGRAM_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CORUN_CFLAGS) $(PROGRAM_FLAGS) -o $@ $(PROGRAM_SRC) $(PROGRAM_LIBS) $(CORUN_LDLIBS)

build/asan/$(PROGRAM): $(PROGRAM_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CORUN_ASAN_CFLAGS) $(PROGRAM_FLAGS) -o $@ $(PROGRAM_SRC) $(PROGRAM_LIBS) $(CORUN_LDLIBS)

clean:
	rm -rf build
