# pyunwind - Python stacks in gdb and lldb. `make` builds; `make demo` shows it; `make test`
# runs every test and ends with one line "N passed, N failed". Area-specific rules live in mk/.
CC ?= cc
BUILD := build
PREFIX ?= /usr/local

CWARN := -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -g $(CWARN) -fPIC -fvisibility=hidden -Icore
CFLAGS ?= -O2
SAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# Optional decompressors for .gz/.zst/.xz cores: used when their -dev packages are present.
HAVE_ZLIB := $(shell pkg-config --exists zlib 2>/dev/null && echo 1)
HAVE_ZSTD := $(shell pkg-config --exists libzstd 2>/dev/null && echo 1)
HAVE_LZMA := $(shell pkg-config --exists liblzma 2>/dev/null && echo 1)
CORE_DEFS := $(if $(HAVE_ZLIB),-DPYU_HAVE_ZLIB) $(if $(HAVE_ZSTD),-DPYU_HAVE_ZSTD) $(if $(HAVE_LZMA),-DPYU_HAVE_LZMA)
CORE_LIBS := $(if $(HAVE_ZLIB),-lz) $(if $(HAVE_ZSTD),-lzstd) $(if $(HAVE_LZMA),-llzma)

CORE_SRCS := $(sort $(wildcard core/*.c core/layouts/*.c))
CORE_HDRS := $(wildcard core/*.h core/include/*.h core/layouts/*.h)
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
SAN_OBJS := $(CORE_SRCS:%.c=$(BUILD)/san/%.o)

.PHONY: all deps pythons test demo install bench clean fuzz
all: $(BUILD)/libpyunwind.so $(BUILD)/pyunwind

$(BUILD)/obj/%.o: %.c $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CORE_DEFS) $(CFLAGS) -c $< -o $@

$(BUILD)/san/%.o: %.c $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CORE_DEFS) $(SAN_FLAGS) -c $< -o $@

$(BUILD)/libpyunwind.so: $(CORE_OBJS)
	$(CC) -shared -o $@ $^ $(CORE_LIBS)

# Static archives for the unit tests, which call hidden internal functions.
$(BUILD)/libpyunwind.a: $(CORE_OBJS)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/libpyunwind-san.a: $(SAN_OBJS)
	@rm -f $@; ar rcs $@ $^

$(BUILD)/pyunwind: core/cli/main.c $(BUILD)/libpyunwind.a $(CORE_HDRS)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ core/cli/main.c $(BUILD)/libpyunwind.a $(CORE_LIBS)

deps:
	@tools/install-deps

pythons: deps
	@tools/pythons install

# Every step listed in tests/steps runs, in order; the runner sums their "N passed, N failed".
test: deps pythons all
	@tests/run_all

demo: deps pythons all
	@tools/demo

install: all
	@tools/install "$(PREFIX)"

bench: deps pythons all
	@bench/run

clean:
	rm -rf $(BUILD)

-include $(sort $(wildcard mk/*.mk))
