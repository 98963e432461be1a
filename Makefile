# SPDX-License-Identifier: MIT
# proftool: make, make check, make asan, make demo, make bench, make install

VERSION   := 0.1.0
CC        ?= gcc
O         ?= build
# one spelling of the build directory however it is given (O=build, O=$PWD/build): the
# dependency files name their objects by it, and a header's change must find them
override O := $(patsubst $(CURDIR)/%,%,$(abspath $(O)))
CFLAGS    ?= -O2 -g
WARNINGS  := -std=c11 -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes \
             -Wmissing-prototypes -Wvla -Wno-format-nonliteral
CPPFLAGS  += -D_GNU_SOURCE -DPROFTOOL_VERSION='"$(VERSION)"' -I. -MMD -MP
LDLIBS    := -ldw -lelf -ljansson -lz -liberty -lstdc++ -lm -pthread
# proftool top's full-screen table; the library and its tests do without
CURSES    := -lncurses
SANITIZE  :=
# nothing of proftool's is exported from the binary, so no library's call can bind to it
# (scripts/check-symbols.sh, make lint-symbols)
VISIBILITY := -fvisibility=hidden

RT_SRCS   := regions/rt.c regions/itt.c
LIB_SRCS  := $(wildcard base/*.c profile/*.c sampler/*.c symbolize/*.c report/*.c) \
             $(filter-out $(RT_SRCS),$(wildcard regions/*.c))
CMD_SRCS  := $(wildcard cmd/*.c)
LIB_OBJS  := $(LIB_SRCS:%.c=$(O)/%.o)
CMD_OBJS  := $(CMD_SRCS:%.c=$(O)/%.o)
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/unit/%)

# Workloads keep frame pointers everywhere, leaf functions included (as Fedora
# builds do), so that -g fp sees whole stacks; gcc drops them in leaves otherwise.
WL_SRCS   := $(wildcard tests/workloads/*.c)
WL_CXX    := $(wildcard tests/workloads/*.cc)
WL_BINS   := $(WL_SRCS:tests/workloads/%.c=$(O)/workloads/%) \
             $(WL_SRCS:tests/workloads/%.c=$(O)/workloads-nofp/%) \
             $(WL_CXX:tests/workloads/%.cc=$(O)/workloads/%)
# --- shared libraries a workload dlopens (tests/workloads/lib/NAME.c -> workloads/libNAME.so)
WL_LIB_SRCS := $(wildcard tests/workloads/lib/*.c)
WL_BINS   += $(WL_LIB_SRCS:tests/workloads/lib/%.c=$(O)/workloads/lib%.so) \
             $(WL_LIB_SRCS:tests/workloads/lib/%.c=$(O)/workloads-nofp/lib%.so)
# --- end of workload libraries
# oneDNN programs (tests/workloads/dnnl/NAME.c -> workloads/NAME) for the ITT collector's tests,
# built where Debian's libdnnl-dev is installed (without it tests/itt.bats skips them, or fails
# under CI=true)
WL_DNNL   := $(if $(wildcard /usr/include/oneapi/dnnl/dnnl.h),$(wildcard tests/workloads/dnnl/*.c))
WL_BINS   += $(WL_DNNL:tests/workloads/dnnl/%.c=$(O)/workloads/%)
WL_CFLAGS := -std=gnu11 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread -Wall -Wextra -Werror
# ... and again the way distributions build: -O2 without frame pointers (the DWARF tests)
WL_NOFP   := -std=gnu11 -O2 -g -fomit-frame-pointer -pthread -Wall -Wextra -Werror

BATS      ?= bats
# the bats suites 'make bats' runs (TESTS=tests/report.bats for one)
TESTS     ?= tests/*.bats
export LC_ALL := C

.PHONY: all deps deps-check consumers check unit bats leaks lint lint-symbols asan tsan tsan-run demo bench longrun clean fuzz \
	install uninstall
.DELETE_ON_ERROR:

all: $(O)/proftool $(O)/libproftool-rt.so

$(O)/proftool: $(CMD_OBJS) $(O)/libproftool.a
	$(CC) $(CFLAGS) $(SANITIZE) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(CURSES)

# The regions runtime, loaded into recorded programs by <proftool.h> and, as their ITT
# collector (itt.c), by ITT's static parts: libc only, never a sanitizer (it runs in
# programs built without one). Never unloaded (nodelete): a thread-exit destructor of
# itt.c's would outlive its code.
$(O)/libproftool-rt.so: $(RT_SRCS) regions/rt.h regions/format.h include/proftool.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) $(WARNINGS) -O2 -g -fPIC -shared -fvisibility=hidden -pthread \
		-Wl,-z,defs -Wl,-z,nodelete -Wl,-soname,libproftool-rt.so -o $@ $(RT_SRCS)

$(O)/libproftool.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARNINGS) $(VISIBILITY) $(CFLAGS) $(SANITIZE) -c -o $@ $<

# the flame graph's style sheets and script, which report/flame.c builds in with the
# assembler's .incbin (a path from the top of the tree): -MMD does not see them
$(O)/report/flame.o: $(wildcard report/assets/*)

$(O)/tests/unit/%: tests/unit/%.c $(O)/libproftool.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARNINGS) $(CFLAGS) $(SANITIZE) -o $@ $< $(O)/libproftool.a $(LDLIBS)

# test_top tests cmd/top_state.c, which is proftool's own, not the library's
$(O)/tests/unit/test_top: tests/unit/test_top.c $(O)/cmd/top_state.o $(O)/libproftool.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARNINGS) $(CFLAGS) $(SANITIZE) -o $@ $< $(O)/cmd/top_state.o $(O)/libproftool.a $(LDLIBS)

$(O)/workloads/%: tests/workloads/%.c tests/workloads/work.h
	@mkdir -p $(dir $@)
	$(CC) $(WL_CFLAGS) -o $@ $<

# workloads that mark regions include the header
$(O)/workloads/regions $(O)/workloads-nofp/regions $(O)/workloads/names $(O)/workloads-nofp/names \
	$(O)/workloads/ranks $(O)/workloads-nofp/ranks: include/proftool.h

$(O)/workloads/lib%.so: tests/workloads/lib/%.c tests/workloads/work.h
	@mkdir -p $(dir $@)
	$(CC) $(WL_CFLAGS) -fPIC -shared -o $@ $<

$(O)/workloads-nofp/lib%.so: tests/workloads/lib/%.c tests/workloads/work.h
	@mkdir -p $(dir $@)
	$(CC) $(WL_NOFP) -fPIC -shared -o $@ $<

$(O)/workloads-nofp/%: tests/workloads/%.c tests/workloads/work.h
	@mkdir -p $(dir $@)
	$(CC) $(WL_NOFP) -o $@ $<

$(O)/workloads/%: tests/workloads/dnnl/%.c
	@mkdir -p $(dir $@)
	$(CC) $(WL_CFLAGS) -o $@ $< -ldnnl

# tools that use the library (the rule below builds self-contained ones)
$(O)/tests/tools/pystack $(O)/tests/tools/capturecheck: $(O)/tests/tools/%: tests/tools/%.c $(O)/libproftool.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARNINGS) $(CFLAGS) $(SANITIZE) -o $@ $< $(O)/libproftool.a $(LDLIBS)

$(O)/tests/tools/%: tests/tools/%.c
	@mkdir -p $(dir $@)
	$(CC) $(WL_CFLAGS) -o $@ $<

$(O)/workloads/%: tests/workloads/%.cc
	@mkdir -p $(dir $@)
	g++ -std=c++17 -O2 -g -fomit-frame-pointer -Wall -Wextra -Werror -o $@ $<

deps:
	@scripts/deps.sh build

deps-check:
	@scripts/deps.sh check

# npm packages the export tests load; shared by every build directory
CONSUMERS := $(CURDIR)/build/consumers
consumers:
	@scripts/consumers.sh $(CONSUMERS)

unit: $(UNIT_BINS) $(O)/libproftool-rt.so
	@for t in $(UNIT_BINS); do $$t || exit 1; done

TOOLS     := $(patsubst tests/tools/%.c,$(O)/tests/tools/%,$(wildcard tests/tools/*.c))

bats: all $(WL_BINS) $(TOOLS) consumers
	PROFTOOL=$(abspath $(O)/proftool) WORKLOADS=$(abspath $(O)/workloads) \
		TOOLS=$(abspath $(O)/tests/tools) CONSUMERS=$(CONSUMERS) \
		WORKLOADS_NOFP=$(abspath $(O)/workloads-nofp) \
		$(BATS) --tap $(TESTS)

# valgrind's leak and descriptor checks of report and diff, every format (about a minute; CI runs it)
leaks: all $(WL_BINS)
	@scripts/deps.sh leaks
	PROFTOOL=$(abspath $(O)/proftool) WORKLOADS=$(abspath $(O)/workloads) \
		$(BATS) --tap tests/leaks/*.bats

# Banned calls (curl's checksrc in miniature): they cannot report errors or overflow. And in
# the bats suites, a bare '! CMD', which set -e ignores: it can never fail its test.
lint:
	@if grep -nE '\b(sprintf|strcpy|strcat|strtok|atoi|atol|gets)\s*\(' \
		$(LIB_SRCS) $(RT_SRCS) $(CMD_SRCS) $(wildcard */*.h); then \
		echo "proftool: banned call above; use snprintf, strtoul with checks, ..." >&2; exit 1; fi
	@awk -f scripts/lint-bats.awk tests/*.bats tests/helpers.bash $(wildcard tests/leaks/*.bats) >&2

# Symbol hygiene: no name proftool defines is one a library it loads exports.
lint-symbols: all
	@scripts/check-symbols.sh $(O)

check: deps-check
	$(MAKE) lint
	$(MAKE) all
	$(MAKE) lint-symbols
	$(MAKE) unit
	$(MAKE) bats

asan: deps-check
	$(MAKE) check O=build-asan CFLAGS="-O1 -g" \
		SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

# ThreadSanitizer over the recordings where proftool's threads work side by side
# (tests/tsan), built in build-tsan/; CI runs it
tsan: deps-check
	$(MAKE) tsan-run O=build-tsan CFLAGS="-O1 -g" SANITIZE="-fsanitize=thread"

tsan-run: all $(WL_BINS)
	TSAN_OPTIONS="halt_on_error=1 exitcode=66" PROFTOOL=$(abspath $(O)/proftool) \
		WORKLOADS=$(abspath $(O)/workloads) $(BATS) --tap tests/tsan/*.bats

demo: deps
	$(MAKE) all $(O)/workloads/train
	$(O)/proftool record -o $(O)/demo.data -- $(O)/workloads/train
	$(O)/proftool report -i $(O)/demo.data --limit 15

# make bench's timing of named regions (bench/regions.sh runs it), with the reader
$(O)/bench/regions: bench/regions.c include/proftool.h $(O)/libproftool.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARNINGS) $(CFLAGS) $(SANITIZE) -o $@ $< $(O)/libproftool.a $(LDLIBS)

# BENCH_ONLY=regions runs only the named regions' part (bench/regions.sh), dump only dump's
# (bench/dump.sh), pycost only the profiler's CPU per sample (bench/pycost.sh), rsscost only
# what reading resident memory costs (bench/rsscost.sh), jitstacks only the stacks through
# code without unwind information (bench/jitstacks.sh), perf only the comparison with perf
bench: deps
	@scripts/deps.sh bench
	$(MAKE) all $(WL_BINS) $(O)/bench/regions
	bench/run.sh

# proftool's memory over a 10-minute recording (DURATION=SEC for another length); by hand only
longrun: all $(O)/workloads/spinners
	O=$(O) bench/longrun.sh $(DURATION)

# ---- install: GNU-style PREFIX and DESTDIR ----------------------------------
#
#   make install [PREFIX=/usr/local] [DESTDIR=/tmp/stage]    then make uninstall, the same way
#
# The binary, the man page and the bash completion (which bash-completion's loader
# finds in PREFIX/share/bash-completion/completions when PREFIX/share is in
# XDG_DATA_DIRS, as /usr/local/share and /usr/share are by default), the headers
# in include/ and the Python package in python/proftool/ when the tree has them.
# PYTHONDIR is where python3 looks for packages under PREFIX (on Debian,
# /usr/local/lib/python3.X/dist-packages for /usr/local and
# /usr/lib/python3/dist-packages for /usr), else PREFIX/lib/python3.X/site-packages.
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
INCLUDEDIR  ?= $(PREFIX)/include
# the regions runtime, where proftool looks for it: BINDIR/../lib/proftool
RTDIR       ?= $(PREFIX)/lib/proftool
PYTHON      ?= python3
PY_SITE     := import sys; p = sys.argv[1].rstrip("/") + "/lib/"; \
               print(next((d for d in sys.path if d.startswith(p) and d.endswith("-packages")), \
                          "%spython%d.%d/site-packages" % ((p,) + sys.version_info[:2])))
PYTHONDIR   ?= $(shell $(PYTHON) -c '$(PY_SITE)' '$(PREFIX)')
INSTALL     ?= install
HEADERS     := $(wildcard include/*.h)
# the package's files, relative to python/ (no bytecode)
PY_FILES    := $(if $(wildcard python/proftool),$(patsubst python/%,%,$(shell find python/proftool \
	-name __pycache__ -prune -o -type f ! -name '*.py[co]' -print | LC_ALL=C sort)))

install: all
	$(INSTALL) -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(MANDIR)/man1' '$(DESTDIR)$(BASHCOMPDIR)'
	$(INSTALL) -m 0755 $(O)/proftool '$(DESTDIR)$(BINDIR)/proftool'
	$(INSTALL) -m 0644 man/proftool.1 '$(DESTDIR)$(MANDIR)/man1/proftool.1'
	$(INSTALL) -m 0644 completion/proftool.bash '$(DESTDIR)$(BASHCOMPDIR)/proftool'
	$(INSTALL) -d '$(DESTDIR)$(RTDIR)'
	$(INSTALL) -m 0644 $(O)/libproftool-rt.so '$(DESTDIR)$(RTDIR)/libproftool-rt.so'
ifneq ($(HEADERS),)
	$(INSTALL) -d '$(DESTDIR)$(INCLUDEDIR)'
	$(INSTALL) -m 0644 $(HEADERS) '$(DESTDIR)$(INCLUDEDIR)'
endif
ifneq ($(PY_FILES),)
	@test -n '$(PYTHONDIR)' || { echo "proftool: cannot ask $(PYTHON) where packages go; set PYTHONDIR" >&2; exit 1; }
	@dir='$(DESTDIR)$(PYTHONDIR)' && for f in $(PY_FILES); do \
		echo "$(INSTALL) -m 0644 python/$$f $$dir/$$f"; \
		$(INSTALL) -d "$$dir/$${f%/*}" && $(INSTALL) -m 0644 "python/$$f" "$$dir/$$f" || exit 1; \
	done
endif

# Removes what install put there, and the bytecode Python compiled from it; the
# directories stay, but for the Python package's own when it is left empty.
uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/proftool' '$(DESTDIR)$(MANDIR)/man1/proftool.1' \
		'$(DESTDIR)$(BASHCOMPDIR)/proftool' '$(DESTDIR)$(RTDIR)/libproftool-rt.so'
	rmdir '$(DESTDIR)$(RTDIR)' 2>/dev/null || true
ifneq ($(HEADERS),)
	rm -f $(HEADERS:include/%='$(DESTDIR)$(INCLUDEDIR)/%')
endif
ifneq ($(PY_FILES),)
	@test -n '$(PYTHONDIR)' || { echo "proftool: cannot ask $(PYTHON) where packages go; set PYTHONDIR" >&2; exit 1; }
	@dir='$(DESTDIR)$(PYTHONDIR)' && for f in $(PY_FILES); do \
		echo "rm -f $$dir/$$f"; rm -f "$$dir/$$f" || exit 1; \
	done; \
	for d in $$(cd python && find proftool -name __pycache__ -prune -o -type d -print | LC_ALL=C sort -r); do \
		rm -rf "$$dir/$$d/__pycache__"; rmdir "$$dir/$$d" 2>/dev/null || true; \
	done
endif
# ---- end of install ----------------------------------------------------------

clean:
	rm -rf build build-asan build-tsan

-include $(LIB_OBJS:.o=.d) $(CMD_OBJS:.o=.d) $(UNIT_BINS:=.d)

# ---- fuzz: libFuzzer targets (clang), built into build-fuzz/ ------------------
#
#   make fuzz [FUZZ_SECONDS=30] [FUZZ_TARGETS=fuzz_elf]   each target for N seconds
#   make fuzz-smoke                                      about 60 s in all, for CI
#
# The library is compiled again by a sub-make with O=build-fuzz, clang and
# -fsanitize=fuzzer-no-link plus ASan/UBSan, so the gcc build is untouched.
# Seed corpora are made by fuzz/seeds.sh (profiles recorded with the gcc
# build, copies of real ELF files, small region files), never checked in;
# fuzz/run.sh runs the targets, keeps their corpora in build-fuzz/corpus and
# fails on a crash.
FUZZ_O        := build-fuzz
FUZZ_CC       := clang
FUZZ_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SECONDS  ?= 30
FUZZ_TARGETS  ?= $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-seeds fuzz-clean

fuzz: fuzz-build fuzz-seeds
	fuzz/run.sh $(FUZZ_O) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=$(shell expr 60 / $(words $(FUZZ_TARGETS)))

fuzz-build:
	@scripts/deps.sh fuzz
	$(MAKE) O=$(FUZZ_O) CC=$(FUZZ_CC) CFLAGS="-O1 -g" \
		SANITIZE="$(FUZZ_SANITIZE) -fsanitize=fuzzer-no-link" \
		$(FUZZ_TARGETS:%=$(FUZZ_O)/fuzz/%)

# only ever made by the sub-make above, where $(O) is build-fuzz and $(CC) clang
$(O)/fuzz/%: fuzz/%.c $(O)/libproftool.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARNINGS) $(CFLAGS) $(SANITIZE) -fsanitize=fuzzer -o $@ $< \
		$(O)/libproftool.a $(LDLIBS)

fuzz-seeds: all $(WL_BINS) $(O)/tests/tools/python-seeds
	fuzz/seeds.sh $(O) $(FUZZ_O)/seeds

# not part of clean: the corpora in build-fuzz/corpus are worth keeping
fuzz-clean:
	rm -rf $(FUZZ_O)

# fuzz_elf's code without libFuzzer, built like everything else (gcc, into
# $(O)), so that tests/fuzz.bats can run hostile ELF files through it ...
$(O)/tests/tools/fuzz-elf: fuzz/replay.c fuzz/fuzz_elf.c $(O)/libproftool.a
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) $(WARNINGS) $(CFLAGS) $(SANITIZE) -o $@ \
		fuzz/replay.c fuzz/fuzz_elf.c $(O)/libproftool.a $(LDLIBS)

# and fuzz_regions_read's, for the region files of tests/fuzz.bats
$(O)/tests/tools/fuzz-regions: fuzz/replay.c fuzz/fuzz_regions_read.c $(O)/libproftool.a
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) $(WARNINGS) $(CFLAGS) $(SANITIZE) -o $@ \
		fuzz/replay.c fuzz/fuzz_regions_read.c $(O)/libproftool.a $(LDLIBS)

# and fuzz_python_read's, for the forged processes of tests/fuzz.bats, which
# python-seeds writes (and fuzz/seeds.sh, as the target's seeds)
$(O)/tests/tools/fuzz-python: fuzz/replay.c fuzz/fuzz_python_read.c fuzz/pyfuzz.h $(O)/libproftool.a
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) $(WARNINGS) $(CFLAGS) $(SANITIZE) -o $@ \
		fuzz/replay.c fuzz/fuzz_python_read.c $(O)/libproftool.a $(LDLIBS)

$(O)/tests/tools/python-seeds: fuzz/python_seeds.c fuzz/pyfuzz.h $(O)/libproftool.a
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) $(WARNINGS) $(CFLAGS) $(SANITIZE) -o $@ \
		fuzz/python_seeds.c $(O)/libproftool.a $(LDLIBS)

bats: $(O)/tests/tools/fuzz-elf $(O)/tests/tools/fuzz-regions $(O)/tests/tools/fuzz-python \
	$(O)/tests/tools/python-seeds

-include $(wildcard $(O)/fuzz/*.d)
# ---- end of fuzz -------------------------------------------------------------
