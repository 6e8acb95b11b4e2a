// fuzz_values.c - libFuzzer target: arbitrary bytes as the target memory the value reader
// (core/values.h) walks. Byte 0 picks the version's layout, byte 1 a Py_DEBUG build and where
// the object starts; the rest is memory at a fixed address, its first word the interpreter
// pointer. Every reader must return (no crash, no hang, no leak, no out-of-bounds access under
// ASan/UBSan) whatever the bytes say.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "target.h"
#include "values.h"

#define BASE 0x100000ull

struct mem {
	const uint8_t *data;
	size_t len;
};

static uint64_t mem_read(void *arg, uint64_t addr, void *buf, uint64_t len)
{
	struct mem *m = arg;
	if (addr < BASE || addr - BASE >= m->len)
		return 0;
	uint64_t avail = m->len - (addr - BASE);
	uint64_t n = len < avail ? len : avail;
	memcpy(buf, m->data + (addr - BASE), n);
	return n;
}

static bool visit(void *arg, uint64_t key, uint64_t value)
{
	(void)key;
	(void)value;
	return ++*(int *)arg < 1000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t versions[] = {0x02070000, 0x03060000, 0x03070000, 0x03080000,
					    0x03090000, 0x030a0000, 0x030b0000, 0x030c0000,
					    0x030d0000, 0x030e0000, 0x030f0000};
	if (size < 3)
		return 0;
	struct pyu_runtime rt;
	memset(&rt, 0, sizeof(rt));
	struct pyu_error *err = pyu_runtime_init_layout(
		&rt, versions[data[0] % (sizeof(versions) / sizeof(versions[0]))], data[1] & 1);
	if (err) {
		pyu_error_destroy(err);
		return 0;
	}
	// The first word is where the interpreter pointer lies: the search for the builtin types
	// (sys.modules, builtins, a function) walks from there.
	rt.interp_head_addr = BASE;
	// One target for every input (its page cache is costly to set up), flushed each time.
	static struct mem m;
	static struct pyu_target *t;
	if (!t) {
		if ((err = pyu_target_open_callback(mem_read, &m, &t)) != NULL) {
			pyu_error_destroy(err);
			t = NULL;
			return 0;
		}
		pyu_error_destroy(pyu_target_add_mapping(t, BASE, BASE + (1u << 20), 0, 1, NULL));
	}
	m.data = data + 2;
	m.len = size - 2;
	// Half the inputs read through sectors, as lldb's reads of a live process do.
	pyu_target_set_read_cost(t, data[1] & 2 ? 70 : 0, data[1] & 2 ? 20 : 0);
	pyu_target_flush_cache(t);
	struct pyu_value_limits lim;
	pyu_value_limits_default(&lim);
	lim.read_budget = 4u << 20;
	struct pyu_values *v = NULL;
	if ((err = pyu_values_create(t, &rt, &lim, &v)) != NULL) {
		pyu_error_destroy(err);
		return 0;
	}
	uint64_t obj = BASE + 8ull * (data[1] >> 2), val; // bit 1: sectors, above
	struct pyu_strbuf sb;
	bool cut = false;
	pyu_strbuf_init(&sb, 1u << 20);
	pyu_value_repr(v, obj, &sb, &cut);
	pyu_strbuf_release(&sb);
	char *name = NULL;
	if (!(err = pyu_value_type_name(v, obj, &name)))
		free(name);
	pyu_error_destroy(err);
	int n = 0;
	pyu_error_destroy(pyu_dict_foreach(v, obj, visit, &n));
	pyu_error_destroy(pyu_object_attrs_foreach(v, obj, visit, &n));
	const char *where;
	pyu_error_destroy(pyu_object_getattr(v, obj, "a", &val, &where));
	pyu_error_destroy(pyu_dict_get_str(v, obj, "k", &val));
	pyu_error_destroy(pyu_dict_get_int(v, obj, 1, &val));
	pyu_values_destroy(v);
	return 0;
}
