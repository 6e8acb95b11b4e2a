# pyunwind - Python stacks in gdb and lldb. `make` builds; `make demo` shows it; `make test`
# runs every test and ends with one line "N passed, N failed". Area-specific rules live in mk/.
CC ?= cc
BUILD := build
PREFIX ?= /usr/local

CWARN := -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -g $(CWARN) -fPIC -fvisibility=hidden -iquote core
CFLAGS ?= -O2
SAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# Optional decompressors for .gz/.zst/.xz cores: used when their -dev packages are present,
# decided when the build runs (tools/configure-build), not when make reads this file, because
# `make deps` may install them in the same make run. $(CONFIG) is rewritten only when the set
# changes; every object depends on it, so a change rebuilds everything.
CONFIG := $(BUILD)/config.h
CORE_DEFS := -include $(CONFIG)
CORE_LIBS = $$(cat $(BUILD)/config.libs)
# Goals that install packages first: the probe waits for them (also under make -j).
DEPS_FIRST := $(if $(filter deps pythons test demo bench,$(MAKECMDGOALS)),deps)

CORE_SRCS := $(sort $(wildcard core/*.c core/layouts/*.c))
CORE_HDRS := $(wildcard core/*.h core/include/*.h core/layouts/*.h) $(CONFIG)
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
SAN_OBJS := $(CORE_SRCS:%.c=$(BUILD)/san/%.o)

.PHONY: all deps pythons test demo install bench clean fuzz FORCE
all: $(BUILD)/libpyunwind.so $(BUILD)/pyunwind

$(CONFIG): FORCE | $(DEPS_FIRST)
	@tools/configure-build $(BUILD)

$(BUILD)/obj/%.o: %.c $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CORE_DEFS) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/san/%.o: %.c $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CORE_DEFS) $(SAN_FLAGS) -c $< -o $@

$(BUILD)/libpyunwind.so: $(CORE_OBJS)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(CORE_LIBS)

# Static archives for the unit tests, which call hidden internal functions.
$(BUILD)/libpyunwind.a: $(CORE_OBJS)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/libpyunwind-san.a: $(SAN_OBJS)
	@rm -f $@; ar rcs $@ $^

CLI_SRCS := $(sort $(wildcard core/cli/*.c))
$(BUILD)/pyunwind: $(CLI_SRCS) $(wildcard core/cli/*.h) $(BUILD)/libpyunwind.a $(CORE_HDRS)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) $(LDFLAGS) -o $@ $(CLI_SRCS) $(BUILD)/libpyunwind.a $(CORE_LIBS) -pthread

deps:
	@tools/install-deps

pythons: deps
	@tools/pythons install

# Every step listed in tests/steps runs (two at a time, heaviest first: tests/run_all); the
# runner sums their "N passed, N failed".
test: deps pythons all
	@tests/run_all

demo: deps pythons all
	@tools/demo

# DESTDIR stages the files (packaging); LIBDIR (default lib) is where the library goes under PREFIX.
install: all
	@DESTDIR="$(DESTDIR)" LIBDIR="$(LIBDIR)" tools/install "$(PREFIX)"

bench: deps pythons all
	@bench/run
	@bench/triage
	@bench/memonly
	@bench/locals-run
	@bench/heap

clean:
	rm -rf $(BUILD)

-include $(sort $(wildcard mk/*.mk))
