// _native.c - the `pyunwind` package's native module: builds a snapshot's Thread and Frame
// objects straight from the library's accessors (pyunwind.h, "the snapshot as values"), not
// from a JSON document. It links nothing: the package hands it the addresses of those
// functions in the libpyunwind.so it loaded with ctypes (bind()), so the module and the ctypes
// path always use the same library. Built for the Python that imports it (the PEP 517 backend,
// make); when it cannot be built or loaded, the package builds the same objects with ctypes.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define ABSENT INT64_MIN
#define THREAD_FIELDS 7
#define FRAME_FIELDS 8
#define ACTIVITY_FIELDS 4
#define FRAME_BATCH 256

typedef uint32_t (*thread_count_fn)(void *s);
typedef uint32_t (*thread_fields_fn)(void *s, uint32_t thread, int64_t *out, uint32_t n);
typedef uint32_t (*frame_fields_fn)(void *s, uint32_t thread, uint32_t first, uint32_t count,
				    int64_t *out);
typedef const char *(*frame_reason_fn)(void *s, uint32_t thread, uint32_t frame);
typedef uint32_t (*code_count_fn)(void *s);
typedef const char *(*code_string_fn)(void *s, uint32_t code, uint32_t which);
typedef uint64_t (*code_address_fn)(void *s, uint32_t code);
typedef const char *(*thread_name_fn)(void *s, uint32_t thread);
typedef uint32_t (*activity_fn)(void *s, uint32_t thread, int64_t *out, uint32_t n);
typedef const char *(*activity_text_fn)(void *s, uint32_t thread, uint32_t which);
typedef uint64_t (*exception_fn)(void *s, uint32_t thread);
typedef void *(*collect_fn)(void *target, void **ret);
typedef void (*destroy_fn)(void *s);
typedef const char *(*version_fn)(void *s);
typedef uint64_t (*hexversion_fn)(void *s);
typedef uint32_t (*build_flags_fn)(void *s);

// The library's functions, in the order bind() takes them.
static struct {
	thread_count_fn thread_count;
	thread_fields_fn thread_fields;
	frame_fields_fn frame_fields;
	frame_reason_fn frame_reason;
	code_count_fn code_count;
	code_string_fn code_string;
	code_address_fn code_address;
	thread_name_fn thread_name;
	activity_fn activity;
	activity_text_fn activity_text;
	exception_fn exception;
	collect_fn collect;
	destroy_fn destroy;
	version_fn version;
	hexversion_fn hexversion;
	build_flags_fn build_flags;
} api;
static int bound;

// Interned attribute names, made once.
enum {
	K_KIND, K_FUNCTION, K_QUALNAME, K_FILE, K_LINE, K_END_LINE, K_COLUMN, K_END_COLUMN,
	K_INSTRUCTION_OFFSET, K_CODE_ADDRESS, K_FRAME_ADDRESS, K_REASON, K_EXTRA,
	K_THREAD_ID, K_NATIVE_THREAD_ID, K_HOLDS_GIL, K_NAME, K_INTERPRETER_ID, K_TSTATE_ADDRESS,
	K_FRAMES, K_FRAMES_OMITTED, K_EXCEPTION, K_SYSCALL, K_STATE, K_SIGNAL, K_FAULT_ADDRESS,
	K_CPU_SECONDS, K_COUNT
};
static const char *const key_names[K_COUNT] = {
	"kind", "function", "qualname", "file", "line", "end_line", "column", "end_column",
	"instruction_offset", "code_address", "frame_address", "reason", "extra",
	"thread_id", "native_thread_id", "holds_gil", "name", "interpreter_id", "tstate_address",
	"frames", "frames_omitted", "exception", "syscall", "state", "signal", "fault_address",
	"cpu_seconds",
};
static PyObject *keys[K_COUNT];
static PyObject *s_python, *s_error;

static PyObject *bind(PyObject *self, PyObject *args)
{
	(void)self;
	void **slots = (void **)&api;
	Py_ssize_t n = sizeof(api) / sizeof(void *);
	if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != n) {
		PyErr_Format(PyExc_TypeError, "bind() takes %zd function addresses", n);
		return NULL;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		void *p = PyLong_AsVoidPtr(PyTuple_GET_ITEM(args, i));
		if (!p) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_ValueError, "a NULL function address");
			return NULL;
		}
		slots[i] = p;
	}
	bound = 1;
	Py_RETURN_NONE;
}

static PyObject *int_or_none(int64_t v)
{
	if (v == ABSENT)
		Py_RETURN_NONE;
	return PyLong_FromLongLong(v);
}

static PyObject *str_or_none(const char *s)
{
	if (!s)
		Py_RETURN_NONE;
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

// A new instance of the dataclass @type whose fields are those of @fields (stolen), set into
// its own __dict__ as __init__ would, without running it (frozen dataclasses refuse setattr;
// 3.13+ keep an instance's attributes inline until its __dict__ is asked for).
static PyObject *instance(PyTypeObject *type, PyObject *fields)
{
	if (!fields)
		return NULL;
	PyObject *obj = type->tp_alloc(type, 0);
	PyObject *d = obj ? PyObject_GenericGetDict(obj, NULL) : NULL;
	if (!d || PyDict_Update(d, fields) < 0) {
		Py_XDECREF(d);
		Py_XDECREF(obj);
		Py_DECREF(fields);
		return NULL;
	}
	Py_DECREF(d);
	Py_DECREF(fields);
	return obj;
}

// A frame holds strings, ints, None and an empty dict: it can be in no reference cycle, so the
// collector need not walk the thousands a snapshot makes (it would, once per snapshot).
static PyObject *untracked(PyObject *frame)
{
	if (frame) {
		PyObject_GC_UnTrack(frame);
		PyObject *d = PyObject_GenericGetDict(frame, NULL);
		if (d) {
			PyObject_GC_UnTrack(d);
			Py_DECREF(d);
		} else {
			PyErr_Clear(); // tracked still: only slower to collect
		}
	}
	return frame;
}

static int set(PyObject *d, int key, PyObject *v)
{
	if (!v)
		return -1;
	int r = PyDict_SetItem(d, keys[key], v);
	Py_DECREF(v);
	return r;
}

// ---- what one open target's snapshots share -------------------------------------------------
//
// A sampler takes snapshot after snapshot of a process whose frames mostly stay where they
// were. A Frame is immutable and made only of values (names, file, lines, addresses), so a
// frame equal in every field to one built for the previous snapshot is that object again, and a
// thread whose frames are all the same objects keeps its frames tuple. Nothing is trusted
// because of an address alone: the library reads the target afresh for every snapshot, and an
// object is reused only when every value it holds is equal to what this snapshot read (a code
// object at a freed one's address, with another name, is another entry). Entries not used by
// the last two snapshots are dropped, so the cache is bounded by the snapshots' own size.

// A code object's shared fields, as the library read them: its names and file (copied, to
// compare with the next snapshot's) and the dict of Frame fields every frame of it shares.
struct code_entry {
	uint64_t address;
	uint64_t serial;   // this entry's identity in frame keys
	char *name, *qualname, *file;
	PyObject *fields;  // kind, function, qualname, file, code_address
	uint64_t used;     // the generation that last used it
};

#define FRAME_KEY 7 // code serial, line, end_line, column, end_column, instruction, frame address

struct frame_entry {
	uint64_t key[FRAME_KEY];
	PyObject *frame;   // NULL: an empty slot
	uint64_t used;
};

struct thread_entry {
	uint64_t tstate;   // 0: an empty slot
	int64_t v[4];      // thread id, native id, GIL, interpreter id
	char *name;
	PyObject *frames;  // the tuple
	int64_t *keys;     // its frames' fields (code index replaced by the code's serial), or
	uint32_t nkeys;    // NULL when a frame could not be read
	PyObject *thread;  // the Thread, when it can be given again (no activity, no exception)
	uint64_t used;
};

typedef struct {
	PyObject_HEAD
	uint64_t generation;
	uint64_t serials;
	struct code_entry *codes; // open addressing by address; address 0 = empty
	size_t code_slots, code_used;
	struct frame_entry *frames;
	size_t frame_slots, frame_used;
	struct thread_entry *threads;
	size_t thread_slots, thread_used;
	uint64_t hits, misses; // frames given again / built (for tests and measurements)
	int64_t *spare;        // a thread's frame keys are read into this, then compared with
	size_t spare_len;      // its entry's: kept, so that an unchanged thread allocates nothing
} Cache;

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static char *copy_str(const char *s, int *failed)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *c = PyMem_Malloc(n);
	if (!c)
		*failed = 1;
	else
		memcpy(c, s, n);
	return c;
}

static void code_clear(struct code_entry *e)
{
	PyMem_Free(e->name);
	PyMem_Free(e->qualname);
	PyMem_Free(e->file);
	Py_XDECREF(e->fields);
	memset(e, 0, sizeof(*e));
}

static void frame_clear(struct frame_entry *e)
{
	Py_XDECREF(e->frame);
	memset(e, 0, sizeof(*e));
}

static void thread_clear(struct thread_entry *e)
{
	PyMem_Free(e->name);
	PyMem_Free(e->keys);
	Py_XDECREF(e->frames);
	Py_XDECREF(e->thread);
	memset(e, 0, sizeof(*e));
}

// The tables are rebuilt, keeping what the last two generations used, when they are half
// full (and at the start of every snapshot, when the dropped would free enough).
static size_t code_slot(const struct code_entry *t, size_t slots, uint64_t address)
{
	size_t i = (size_t)(mix(0, address) >> 17) & (slots - 1);
	while (t[i].address && t[i].address != address)
		i = (i + 1) & (slots - 1);
	return i;
}

static size_t frame_slot(const struct frame_entry *t, size_t slots, const uint64_t *key)
{
	// the frame's address, instruction and code tell frames apart; the rest rarely
	uint64_t h = (key[6] ^ (key[5] << 21) ^ (key[0] << 43)) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 29) & (slots - 1);
	while (t[i].frame && memcmp(t[i].key, key, sizeof(t[i].key)) != 0)
		i = (i + 1) & (slots - 1);
	return i;
}

static size_t thread_slot(const struct thread_entry *t, size_t slots, uint64_t tstate)
{
	size_t i = (size_t)(mix(0, tstate) >> 17) & (slots - 1);
	while (t[i].tstate && t[i].tstate != tstate)
		i = (i + 1) & (slots - 1);
	return i;
}

static int live(const Cache *c, uint64_t used)
{
	return used + 1 >= c->generation;
}

// Each table rebuilt to @want slots or more (a power of two, at least twice what stays and
// @extra more), keeping the entries of the last two generations. On failure (no memory) the
// table is unchanged.
static int code_rebuild(Cache *c, size_t want, size_t extra)
{
	size_t keep = 0;
	for (size_t i = 0; i < c->code_slots; i++)
		keep += c->codes[i].address && live(c, c->codes[i].used);
	while (want < 2 * (keep + extra + 1))
		want *= 2;
	struct code_entry *t = PyMem_Calloc(want, sizeof(*t));
	if (!t)
		return -1;
	for (size_t i = 0; i < c->code_slots; i++) {
		struct code_entry *e = &c->codes[i];
		if (!e->address)
			continue;
		if (live(c, e->used))
			t[code_slot(t, want, e->address)] = *e;
		else
			code_clear(e);
	}
	PyMem_Free(c->codes);
	c->codes = t;
	c->code_slots = want;
	c->code_used = keep;
	return 0;
}

static int frame_rebuild(Cache *c, size_t want, size_t extra)
{
	size_t keep = 0;
	for (size_t i = 0; i < c->frame_slots; i++)
		keep += c->frames[i].frame && live(c, c->frames[i].used);
	while (want < 2 * (keep + extra + 1))
		want *= 2;
	struct frame_entry *t = PyMem_Calloc(want, sizeof(*t));
	if (!t)
		return -1;
	for (size_t i = 0; i < c->frame_slots; i++) {
		struct frame_entry *e = &c->frames[i];
		if (!e->frame)
			continue;
		if (live(c, e->used))
			t[frame_slot(t, want, e->key)] = *e;
		else
			frame_clear(e);
	}
	PyMem_Free(c->frames);
	c->frames = t;
	c->frame_slots = want;
	c->frame_used = keep;
	return 0;
}

static int thread_rebuild(Cache *c, size_t want, size_t extra)
{
	size_t keep = 0;
	for (size_t i = 0; i < c->thread_slots; i++)
		keep += c->threads[i].tstate && live(c, c->threads[i].used);
	while (want < 2 * (keep + extra + 1))
		want *= 2;
	struct thread_entry *t = PyMem_Calloc(want, sizeof(*t));
	if (!t)
		return -1;
	for (size_t i = 0; i < c->thread_slots; i++) {
		struct thread_entry *e = &c->threads[i];
		if (!e->tstate)
			continue;
		if (live(c, e->used))
			t[thread_slot(t, want, e->tstate)] = *e;
		else
			thread_clear(e);
	}
	PyMem_Free(c->threads);
	c->threads = t;
	c->thread_slots = want;
	c->thread_used = keep;
	return 0;
}

// Room for @codes, @frames and @threads more entries, each table at most half full after:
// nothing moves while a snapshot's objects are built.
static int cache_reserve(Cache *c, size_t codes, size_t frames, size_t threads)
{
	if (2 * (c->code_used + codes + 1) > c->code_slots &&
	    code_rebuild(c, c->code_slots ? c->code_slots : 64, codes) < 0)
		return -1;
	if (2 * (c->frame_used + frames + 1) > c->frame_slots &&
	    frame_rebuild(c, c->frame_slots ? c->frame_slots : 256, frames) < 0)
		return -1;
	if (2 * (c->thread_used + threads + 1) > c->thread_slots &&
	    thread_rebuild(c, c->thread_slots ? c->thread_slots : 16, threads) < 0)
		return -1;
	return 0;
}

static void cache_dealloc(Cache *c)
{
	for (size_t i = 0; i < c->code_slots; i++)
		code_clear(&c->codes[i]);
	for (size_t i = 0; i < c->frame_slots; i++)
		frame_clear(&c->frames[i]);
	for (size_t i = 0; i < c->thread_slots; i++)
		thread_clear(&c->threads[i]);
	PyMem_Free(c->codes);
	PyMem_Free(c->frames);
	PyMem_Free(c->threads);
	PyMem_Free(c->spare);
	Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *cache_stats(Cache *c, PyObject *unused)
{
	(void)unused;
	return Py_BuildValue("{sKsKsnsnsn}", "hits", (unsigned long long)c->hits, "misses",
			     (unsigned long long)c->misses, "codes", (Py_ssize_t)c->code_used,
			     "frames", (Py_ssize_t)c->frame_used, "threads",
			     (Py_ssize_t)c->thread_used);
}

static PyMethodDef cache_methods[] = {
	{"stats", (PyCFunction)cache_stats, METH_NOARGS,
	 "stats() -> {hits, misses, codes, frames, threads}: frames given again and built."},
	{NULL, NULL, 0, NULL},
};

static PyTypeObject CacheType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "pyunwind._native.Cache",
	.tp_basicsize = sizeof(Cache),
	.tp_dealloc = (destructor)cache_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "What the snapshots of one open target share: Frame objects equal in every "
		  "field, code objects' names.",
	.tp_methods = cache_methods,
	.tp_new = PyType_GenericNew,
};

// The entry of code object @code of snapshot @s: the cached one when the address, names and
// file are those the snapshot read, else a new one. NULL with an exception on failure.
static struct code_entry *code_of(Cache *c, void *s, uint32_t code)
{
	uint64_t address = api.code_address(s, code);
	const char *name = api.code_string(s, code, 0), *qualname = api.code_string(s, code, 1),
		   *file = api.code_string(s, code, 2);
	size_t i = code_slot(c->codes, c->code_slots, address ? address : 1);
	struct code_entry *e = &c->codes[i];
	if (e->address && same_str(e->name, name) && same_str(e->qualname, qualname) &&
	    same_str(e->file, file)) {
		e->used = c->generation;
		return e;
	}
	// A new code object (or another one at this address): a new entry in the slot.
	int failed = 0;
	struct code_entry n = {address ? address : 1, ++c->serials, copy_str(name, &failed),
			       copy_str(qualname, &failed), copy_str(file, &failed), PyDict_New(),
			       c->generation};
	PyObject *d = n.fields;
	if (failed || !d) {
		code_clear(&n);
		PyErr_NoMemory();
		return NULL;
	}
	Py_INCREF(s_python);
	if (set(d, K_KIND, s_python) || set(d, K_FUNCTION, str_or_none(name)) ||
	    set(d, K_QUALNAME, str_or_none(qualname)) || set(d, K_FILE, str_or_none(file)) ||
	    set(d, K_CODE_ADDRESS, PyLong_FromUnsignedLongLong(address))) {
		code_clear(&n);
		return NULL;
	}
	if (e->address)
		code_clear(e);
	else
		c->code_used++;
	*e = n;
	return e;
}

static PyObject *python_frame(PyTypeObject *frame_type, Cache *c, struct code_entry *code,
			      const int64_t *f)
{
	uint64_t key[FRAME_KEY] = {code->serial, (uint64_t)f[2], (uint64_t)f[3], (uint64_t)f[4],
				   (uint64_t)f[5], (uint64_t)f[6], (uint64_t)f[7]};
	struct frame_entry *e = &c->frames[frame_slot(c->frames, c->frame_slots, key)];
	if (e->frame) {
		e->used = c->generation;
		c->hits++;
		Py_INCREF(e->frame);
		return e->frame;
	}
	PyObject *d = PyDict_Copy(code->fields);
	if (!d)
		return NULL;
	Py_INCREF(Py_None);
	if (set(d, K_LINE, int_or_none(f[2])) || set(d, K_END_LINE, int_or_none(f[3])) ||
	    set(d, K_COLUMN, int_or_none(f[4])) || set(d, K_END_COLUMN, int_or_none(f[5])) ||
	    set(d, K_INSTRUCTION_OFFSET, int_or_none(f[6])) || set(d, K_REASON, Py_None) ||
	    set(d, K_FRAME_ADDRESS, PyLong_FromUnsignedLongLong((uint64_t)f[7])) ||
	    set(d, K_EXTRA, PyDict_New())) {
		Py_DECREF(d);
		return NULL;
	}
	PyObject *frame = untracked(instance(frame_type, d));
	if (!frame)
		return NULL;
	c->misses++;
	memcpy(e->key, key, sizeof(key));
	e->frame = frame;
	e->used = c->generation;
	c->frame_used++;
	Py_INCREF(frame);
	return frame;
}

static PyObject *error_frame(PyTypeObject *frame_type, void *s, uint32_t thread, uint32_t index,
			     const int64_t *f)
{
	PyObject *d = PyDict_New();
	if (!d)
		return NULL;
	Py_INCREF(s_error);
	if (set(d, K_KIND, s_error)) {
		Py_DECREF(d);
		return NULL;
	}
	static const int nones[] = {K_FUNCTION, K_QUALNAME, K_FILE, K_LINE, K_END_LINE, K_COLUMN,
				    K_END_COLUMN, K_INSTRUCTION_OFFSET, K_CODE_ADDRESS};
	for (size_t i = 0; i < sizeof(nones) / sizeof(nones[0]); i++) {
		Py_INCREF(Py_None);
		if (set(d, nones[i], Py_None)) {
			Py_DECREF(d);
			return NULL;
		}
	}
	if (set(d, K_FRAME_ADDRESS, PyLong_FromUnsignedLongLong((uint64_t)f[7])) ||
	    set(d, K_REASON, str_or_none(api.frame_reason(s, thread, index))) ||
	    set(d, K_EXTRA, PyDict_New())) {
		Py_DECREF(d);
		return NULL;
	}
	return untracked(instance(frame_type, d));
}

// The frames of thread @thread as a tuple. @e: the thread's entry, whose tuple is given again
// when every frame's fields are those it was built from (one comparison, no lookups, nothing
// allocated), and which then holds this tuple and its fields. @codes: the snapshot's code
// indexes' entries, filled on first use.
static PyObject *frames_of(PyTypeObject *frame_type, Cache *c, void *s, uint32_t thread,
			   uint32_t count, struct code_entry **codes, uint32_t ncodes,
			   struct thread_entry *e, int *same)
{
	*same = 0;
	size_t size = (size_t)count * FRAME_FIELDS * sizeof(int64_t);
	if (count && c->spare_len < size) {
		int64_t *grown = PyMem_Realloc(c->spare, size);
		if (!grown)
			return PyErr_NoMemory();
		c->spare = grown;
		c->spare_len = size;
	}
	// The keys: the frames' fields, each code index replaced by its code entry's serial.
	int64_t *k = c->spare;
	if (count && api.frame_fields(s, thread, 0, count, k) != count) {
		PyErr_SetString(PyExc_RuntimeError, "the snapshot lost frames");
		return NULL;
	}
	int readable = 1;
	for (uint32_t i = 0; i < count; i++) {
		int64_t *g = k + (size_t)i * FRAME_FIELDS;
		if (g[0] == 0 && g[1] >= 0 && (uint64_t)g[1] < ncodes) {
			struct code_entry **ce = &codes[g[1]];
			if (!*ce && !(*ce = code_of(c, s, (uint32_t)g[1])))
				return NULL;
			g[1] = (int64_t)(*ce)->serial;
		} else {
			readable = 0;
		}
	}
	if (readable && e->frames && e->keys && e->nkeys == count &&
	    (!count || memcmp(e->keys, k, size) == 0)) {
		c->hits += count;
		*same = 1;
		Py_INCREF(e->frames);
		return e->frames;
	}
	// Something differs: the fields again, code indexes and all, to build from.
	int64_t *f = count ? PyMem_Malloc(size) : NULL;
	if (count && !f)
		return PyErr_NoMemory();
	if (count && api.frame_fields(s, thread, 0, count, f) != count) {
		PyMem_Free(f);
		PyErr_SetString(PyExc_RuntimeError, "the snapshot lost frames");
		return NULL;
	}
	PyObject *tuple = PyTuple_New(count);
	if (!tuple) {
		PyMem_Free(f);
		return NULL;
	}
	for (uint32_t i = 0; i < count; i++) {
		const int64_t *g = f + (size_t)i * FRAME_FIELDS;
		PyObject *fr = g[0] == 0 && g[1] >= 0 && (uint64_t)g[1] < ncodes
				       ? python_frame(frame_type, c, codes[g[1]], g)
				       : error_frame(frame_type, s, thread, i, g);
		if (!fr) {
			Py_DECREF(tuple);
			PyMem_Free(f);
			return NULL;
		}
		PyTuple_SET_ITEM(tuple, i, fr);
	}
	PyMem_Free(f);
	// The entry keeps these keys; the buffer it held becomes the spare.
	if (readable && count) {
		int64_t *old = e->keys;
		size_t old_len = e->keys ? (size_t)e->nkeys * FRAME_FIELDS * sizeof(int64_t) : 0;
		e->keys = k;
		e->nkeys = count;
		c->spare = old;
		c->spare_len = old_len;
	} else {
		PyMem_Free(e->keys);
		e->keys = NULL;
		e->nkeys = 0;
	}
	Py_INCREF(tuple);
	Py_XSETREF(e->frames, tuple);
	return tuple;
}

static int set_activity(PyObject *d, void *s, uint32_t thread)
{
	int64_t a[ACTIVITY_FIELDS];
	if (api.activity(s, thread, a, ACTIVITY_FIELDS) != ACTIVITY_FIELDS)
		return 0;
	PyObject *syscall;
	const char *name = api.activity_text(s, thread, 0);
	if (a[0] == ABSENT)
		syscall = (Py_INCREF(Py_None), Py_None);
	else if (name)
		syscall = str_or_none(name);
	else
		syscall = PyUnicode_FromFormat("%lld", (long long)a[0]);
	// Each value set as soon as it is made: a failure leaks none made before it.
	if (set(d, K_SYSCALL, syscall) ||
	    set(d, K_STATE, str_or_none(api.activity_text(s, thread, 1))))
		return -1;
	PyObject *signal;
	const char *sig = api.activity_text(s, thread, 2);
	if (a[1] == ABSENT)
		signal = (Py_INCREF(Py_None), Py_None);
	else if (sig)
		signal = str_or_none(sig);
	else
		signal = PyUnicode_FromFormat("signal %lld", (long long)a[1]);
	return set(d, K_SIGNAL, signal) ||
	       set(d, K_FAULT_ADDRESS, a[2] == ABSENT ? (Py_INCREF(Py_None), Py_None)
						      : PyLong_FromUnsignedLongLong((uint64_t)a[2])) ||
	       set(d, K_CPU_SECONDS, a[3] == ABSENT ? (Py_INCREF(Py_None), Py_None)
						    : PyFloat_FromDouble((double)a[3] / 1e9))
		       ? -1 : 0;
}

static int set_nones(PyObject *d, const int *keys_, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		Py_INCREF(Py_None);
		if (set(d, keys_[i], Py_None))
			return -1;
	}
	return 0;
}

// The Thread of thread @t (fields @v) with frames @frames (stolen; @same: the tuple its entry
// @e had before); the entry's Thread again when nothing differs and @reuse allows.
static PyObject *thread_object(PyTypeObject *thread_type, void *s, uint32_t t, const int64_t *v,
			       const char *name, PyObject *frames, int same, int activity,
			       struct thread_entry *e, int reuse)
{
	if (reuse && same && e->thread && memcmp(e->v, v, sizeof(e->v)) == 0 &&
	    same_str(e->name, name)) {
		Py_DECREF(frames);
		Py_INCREF(e->thread);
		return e->thread;
	}
	PyObject *d = PyDict_New();
	if (!d) {
		Py_DECREF(frames);
		return NULL;
	}
	PyObject *gil = v[2] == ABSENT ? Py_None : v[2] ? Py_True : Py_False;
	Py_INCREF(gil);
	Py_INCREF(Py_None);
	static const int nones[] = {K_SYSCALL, K_STATE, K_SIGNAL, K_FAULT_ADDRESS, K_CPU_SECONDS};
	if (PyDict_SetItem(d, keys[K_FRAMES], frames) < 0 ||
	    set(d, K_THREAD_ID, PyLong_FromUnsignedLongLong((uint64_t)v[0])) ||
	    set(d, K_NATIVE_THREAD_ID, int_or_none(v[1])) || set(d, K_HOLDS_GIL, gil) ||
	    set(d, K_NAME, str_or_none(name)) || set(d, K_INTERPRETER_ID, int_or_none(v[3])) ||
	    set(d, K_TSTATE_ADDRESS, PyLong_FromUnsignedLongLong((uint64_t)v[4])) ||
	    set(d, K_FRAMES_OMITTED, PyLong_FromLong(0)) || set(d, K_EXCEPTION, Py_None) ||
	    (activity ? set_activity(d, s, t) : set_nones(d, nones, sizeof(nones) /
							      sizeof(nones[0])))) {
		Py_DECREF(d);
		Py_DECREF(frames);
		return NULL;
	}
	PyObject *th = instance(thread_type, d);
	int failed = 0;
	char *copy = th ? copy_str(name, &failed) : NULL;
	if (!th || failed) {
		Py_XDECREF(th);
		Py_DECREF(frames);
		return th ? PyErr_NoMemory() : NULL;
	}
	// The entry: this thread's frames, and the Thread when it can be given again.
	PyMem_Free(e->name);
	e->name = copy;
	Py_DECREF(frames); // the entry holds the tuple since frames_of()
	Py_XDECREF(e->thread);
	e->thread = NULL;
	if (reuse) {
		Py_INCREF(th);
		e->thread = th;
	}
	memcpy(e->v, v, sizeof(e->v));
	return th;
}

// The library's object whose address @obj (an int) is; NULL with an exception when the
// module is not bound yet or the address is 0 (@what names the object in the error).
static void *address_arg(PyObject *obj, const char *what)
{
	if (!bound) {
		PyErr_SetString(PyExc_RuntimeError, "bind() first");
		return NULL;
	}
	void *p = PyLong_AsVoidPtr(obj);
	if (!p && !PyErr_Occurred())
		PyErr_Format(PyExc_ValueError, "no %s", what);
	return p;
}

// threads(stacks, Thread, Frame, activity, details, cache) -> ([Thread, ...], [indexes of
// threads with an exception]): every thread of the snapshot at address @stacks, frames
// innermost first, objects equal to those of the last snapshots through @cache given again.
// @details: read each thread's name and whether it handles an exception (else both None).
// The threads' exceptions are left None (the caller fills those it lists).
static PyObject *threads(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *stacks_obj;
	PyTypeObject *thread_type, *frame_type;
	Cache *c;
	int activity, details;
	if (!PyArg_ParseTuple(args, "OO!O!ppO!", &stacks_obj, &PyType_Type, &thread_type,
			      &PyType_Type, &frame_type, &activity, &details, &CacheType, &c))
		return NULL;
	void *s = address_arg(stacks_obj, "stacks");
	if (!s)
		return NULL;
	uint32_t n = api.thread_count(s), ncodes = api.code_count(s);
	size_t nframes = 0;
	for (uint32_t t = 0; t < n; t++) {
		int64_t v[THREAD_FIELDS];
		if (api.thread_fields(s, t, v, THREAD_FIELDS) == THREAD_FIELDS && v[5] > 0)
			nframes += (size_t)v[5];
	}
	// Every entry this snapshot can add has its room now: the tables do not move below.
	c->generation++;
	if (cache_reserve(c, ncodes, nframes, n) < 0)
		return PyErr_NoMemory();
	struct code_entry **codes = ncodes ? PyMem_Calloc(ncodes, sizeof(*codes)) : NULL;
	PyObject *list = PyList_New(0), *with_exc = PyList_New(0);
	if ((ncodes && !codes) || !list || !with_exc)
		goto fail;
	for (uint32_t t = 0; t < n; t++) {
		int64_t v[THREAD_FIELDS];
		if (api.thread_fields(s, t, v, THREAD_FIELDS) != THREAD_FIELDS)
			continue;
		uint64_t tstate = (uint64_t)v[4] ? (uint64_t)v[4] : 1;
		struct thread_entry *e = &c->threads[thread_slot(c->threads, c->thread_slots,
								  tstate)];
		if (!e->tstate) {
			e->tstate = tstate;
			c->thread_used++;
		} else if (e->used == c->generation) {
			e = NULL; // two threads of one thread state: no entry for the second
		}
		struct thread_entry scratch = {0};
		if (!e)
			e = &scratch;
		e->used = c->generation;
		int same;
		PyObject *frames = frames_of(frame_type, c, s, t, (uint32_t)v[5], codes, ncodes, e,
					     &same);
		if (!frames) {
			thread_clear(&scratch);
			goto fail;
		}
		const char *name = details ? api.thread_name(s, t) : NULL;
		int exc = details && api.exception(s, t) != 0;
		PyObject *th = thread_object(thread_type, s, t, v, name, frames, same, activity, e,
					     !activity && !exc && e != &scratch);
		thread_clear(&scratch);
		if (!th || PyList_Append(list, th) < 0) {
			Py_XDECREF(th);
			goto fail;
		}
		Py_DECREF(th);
		if (exc) {
			PyObject *i = PyLong_FromUnsignedLong(t);
			if (!i || PyList_Append(with_exc, i) < 0) {
				Py_XDECREF(i);
				goto fail;
			}
			Py_DECREF(i);
		}
	}
	PyMem_Free(codes);
	return Py_BuildValue("(NN)", list, with_exc);
fail:
	PyMem_Free(codes);
	Py_XDECREF(list);
	Py_XDECREF(with_exc);
	return NULL;
}

// collect(target) -> (error, stacks): pyu_stacks_collect() on the open target at address
// @target, without holding the GIL (as ctypes calls it), minus ctypes' cost per call. Each
// address is 0 when there is none; the caller raises the error and owns the stacks.
static PyObject *collect(PyObject *self, PyObject *arg)
{
	(void)self;
	void *t = address_arg(arg, "target");
	if (!t)
		return NULL;
	void *s = NULL, *err;
	Py_BEGIN_ALLOW_THREADS
	err = api.collect(t, &s);
	Py_END_ALLOW_THREADS
	return Py_BuildValue("(KK)", (unsigned long long)(uintptr_t)err,
			     (unsigned long long)(uintptr_t)s);
}

// destroy(stacks): pyu_stacks_destroy().
static PyObject *destroy(PyObject *self, PyObject *arg)
{
	(void)self;
	void *s = address_arg(arg, "stacks");
	if (!s)
		return NULL;
	api.destroy(s);
	Py_RETURN_NONE;
}

// info(stacks) -> (version, hexversion, build flags) of the snapshot's interpreter.
static PyObject *info(PyObject *self, PyObject *arg)
{
	(void)self;
	void *s = address_arg(arg, "stacks");
	if (!s)
		return NULL;
	const char *v = api.version(s);
	return Py_BuildValue("(NKk)", str_or_none(v), (unsigned long long)api.hexversion(s),
			     (unsigned long)api.build_flags(s));
}

static PyMethodDef methods[] = {
	{"collect", collect, METH_O,
	 "collect(target) -> (error, stacks): pyu_stacks_collect(), addresses (0: none)."},
	{"destroy", destroy, METH_O, "destroy(stacks): pyu_stacks_destroy()."},
	{"info", info, METH_O, "info(stacks) -> (version, hexversion, build flags)."},
	{"bind", bind, METH_VARARGS, "bind(*addresses): the library's accessor functions."},
	{"threads", threads, METH_VARARGS,
	 "threads(stacks, Thread, Frame, activity, details, cache) -> (threads, indexes with an "
	 "exception)"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_native", "pyunwind's snapshot objects, built natively.", -1,
	methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void)
{
	for (int i = 0; i < K_COUNT; i++)
		if (!keys[i] && !(keys[i] = PyUnicode_InternFromString(key_names[i])))
			return NULL;
	if (!s_python && !(s_python = PyUnicode_InternFromString("python")))
		return NULL;
	if (!s_error && !(s_error = PyUnicode_InternFromString("error")))
		return NULL;
	if (PyType_Ready(&CacheType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	Py_INCREF(&CacheType);
	if (PyModule_AddObject(m, "Cache", (PyObject *)&CacheType) < 0) {
		Py_DECREF(&CacheType);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
