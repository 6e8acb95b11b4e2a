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
typedef uint32_t (*frames_match_fn)(void *s, uint32_t thread, uint32_t first, uint32_t count,
				    const int64_t *keys, const int64_t *code_keys,
				    uint32_t ncode_keys);

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
	frames_match_fn frames_match;
} api;
static int bound;

// Interned attribute names, made once.
enum {
	K_KIND, K_FUNCTION, K_QUALNAME, K_FILE, K_LINE, K_END_LINE, K_COLUMN, K_END_COLUMN,
	K_INSTRUCTION_OFFSET, K_CODE_ADDRESS, K_FRAME_ADDRESS, K_REASON, K_EXTRA,
	K_THREAD_ID, K_NATIVE_THREAD_ID, K_HOLDS_GIL, K_NAME, K_INTERPRETER_ID, K_TSTATE_ADDRESS,
	K_FRAMES, K_FRAMES_OMITTED, K_EXCEPTION, K_SYSCALL, K_STATE, K_SIGNAL, K_FAULT_ADDRESS,
	K_CPU_SECONDS,
	// a Snapshot's attributes and the Target's take() and the finalizer use
	A_TARGET, A_STACKS, A_DOC, A_TRIAGE, A_TEXTS, A_BT_FLAGS, A_LIMIT, A_THREADS, A_PYTHON,
	A_SERIAL, A_ERRORS, A_HANDLE, A_KEPT, A_ORPHANS, A_CACHE, A_TAKEN, A_SNAPSHOTS, A_LIB,
	A_LOCK, A_VALUE, A_DICT, M_PYTHON_INFO, M_WITH_EXCEPTIONS, M_FREE_ORPHANS, M_NEED_OPEN,
	M_ACQUIRE, M_RELEASE, K_COUNT
};
static const char *const key_names[K_COUNT] = {
	"kind", "function", "qualname", "file", "line", "end_line", "column", "end_column",
	"instruction_offset", "code_address", "frame_address", "reason", "extra",
	"thread_id", "native_thread_id", "holds_gil", "name", "interpreter_id", "tstate_address",
	"frames", "frames_omitted", "exception", "syscall", "state", "signal", "fault_address",
	"cpu_seconds",
	"_target", "_stacks", "_doc", "_triage", "_texts", "_bt_flags", "_limit", "threads",
	"python", "_serial", "_errors", "_handle", "_kept", "_orphans", "_cache", "_taken",
	"_snapshots", "_lib", "_lock", "value", "__dict__", "_python_info", "_with_exceptions",
	"_free_orphans", "_need_open", "acquire", "release",
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
	// take(): the PythonInfo of the last snapshot and what the library said it was made of
	PyObject *python;
	char *py_version;
	uint64_t py_hexversion;
	uint32_t py_flags;
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
	PyMem_Free(c->py_version);
	Py_XDECREF(c->python);
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

// The serial of the code entry of each of the snapshot's @ncodes code indexes (entries in
// @codes, filled on first use), made once a snapshot in *@keys; NULL with an exception on
// failure.
static const int64_t *code_keys_of(Cache *c, void *s, struct code_entry **codes,
				   uint32_t ncodes, int64_t **keys)
{
	if (*keys)
		return *keys;
	int64_t *k = PyMem_Malloc((ncodes ? ncodes : 1) * sizeof(*k));
	if (!k) {
		PyErr_NoMemory();
		return NULL;
	}
	for (uint32_t j = 0; j < ncodes; j++) {
		if (!codes[j] && !(codes[j] = code_of(c, s, j))) {
			PyMem_Free(k);
			return NULL;
		}
		k[j] = (int64_t)codes[j]->serial;
	}
	*keys = k;
	return k;
}

// The frames of thread @thread as a tuple. @e: the thread's entry, whose tuple is given again
// when every frame's fields are those it was built from (one comparison, no lookups, nothing
// allocated), and which then holds this tuple and its fields. @codes: the snapshot's code
// indexes' entries, filled on first use; *@code_keys: their serials, made on first use.
static PyObject *frames_of(PyTypeObject *frame_type, Cache *c, void *s, uint32_t thread,
			   uint32_t count, struct code_entry **codes, uint32_t ncodes,
			   int64_t **code_keys, struct thread_entry *e, int *same)
{
	*same = 0;
	// A thread unchanged since its entry was made (a sampler's usual case): its frames
	// compared with the entry's keys by the library, nothing copied out or written per
	// frame (a 1,000-frame thread's 64 KB of keys, written anew each snapshot only to be
	// found equal, was most of this module's time on cold caches).
	if (e->frames && e->keys && e->nkeys == count) {
		const int64_t *ck = code_keys_of(c, s, codes, ncodes, code_keys);
		if (!ck)
			return NULL;
		if (api.frames_match(s, thread, 0, count, e->keys, ck, ncodes) == count) {
			c->hits += count;
			*same = 1;
			Py_INCREF(e->frames);
			return e->frames;
		}
	}
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

// Every thread of the snapshot @s, frames innermost first, objects equal to those of the last
// snapshots through @c given again: a new reference to the list of Threads, and in
// *with_exc one to the list of indexes of threads with an exception. NULL with an exception
// on failure (*with_exc then NULL).
static PyObject *build_threads(void *s, PyTypeObject *thread_type, PyTypeObject *frame_type,
			       int activity, int details, Cache *c, PyObject **with_exc)
{
	*with_exc = NULL;
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
	int64_t *code_keys = NULL;
	PyObject *list = PyList_New(n), *exc_list = PyList_New(0);
	Py_ssize_t filled = 0;
	if ((ncodes && !codes) || !list || !exc_list)
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
		PyObject *frames = frames_of(frame_type, c, s, t, (uint32_t)v[5], codes, ncodes,
					     &code_keys, e, &same);
		if (!frames) {
			thread_clear(&scratch);
			goto fail;
		}
		const char *name = details ? api.thread_name(s, t) : NULL;
		int exc = details && api.exception(s, t) != 0;
		PyObject *th = thread_object(thread_type, s, t, v, name, frames, same, activity, e,
					     !activity && !exc && e != &scratch);
		thread_clear(&scratch);
		if (!th)
			goto fail;
		PyList_SET_ITEM(list, filled, th); // the list was made with room for every thread
		if (exc) {
			PyObject *i = PyLong_FromUnsignedLong(t);
			if (!i || PyList_Append(exc_list, i) < 0) {
				Py_XDECREF(i);
				filled++;
				goto fail;
			}
			Py_DECREF(i);
		}
		filled++;
	}
	// A thread whose fields could not be had is left out, as before.
	if (filled < (Py_ssize_t)n && PyList_SetSlice(list, filled, (Py_ssize_t)n, NULL) < 0)
		goto fail;
	PyMem_Free(codes);
	PyMem_Free(code_keys);
	*with_exc = exc_list;
	return list;
fail:
	PyMem_Free(codes);
	PyMem_Free(code_keys);
	Py_XDECREF(list);
	Py_XDECREF(exc_list);
	return NULL;
}

// threads(stacks, Thread, Frame, activity, details, cache) -> ([Thread, ...], [indexes of
// threads with an exception]): every thread of the snapshot at address @stacks, frames
// innermost first, objects equal to those of the last snapshots through @cache given again.
// @details: read each thread's name and whether it handles an exception (else both None).
// The threads' exceptions are left None (the caller fills those it lists).
static PyObject *threads(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *stacks_obj, *with_exc;
	PyTypeObject *thread_type, *frame_type;
	Cache *c;
	int activity, details;
	if (!PyArg_ParseTuple(args, "OO!O!ppO!", &stacks_obj, &PyType_Type, &thread_type,
			      &PyType_Type, &frame_type, &activity, &details, &CacheType, &c))
		return NULL;
	void *s = address_arg(stacks_obj, "stacks");
	if (!s)
		return NULL;
	PyObject *list = build_threads(s, thread_type, frame_type, activity, details, c,
				       &with_exc);
	return list ? Py_BuildValue("(NN)", list, with_exc) : NULL;
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

// ---- a sampler's snapshot in one call -------------------------------------------------------
//
// Target.collect() without locals, native stacks, bounds or a frame limit is what a sampler
// calls again and again; made of Python steps (the Snapshot's __init__, its registration, the
// finalizer that keeps the newest one), it cost more than the snapshot's objects, most of it
// the interpreter's own code fetched again each time when the sampler's caches had gone cold
// between samples. take() and the finalizer do those same steps here, on the same attributes
// the Python code uses (which remains the one path for everything else).

static PyObject *snapshot_type, *thread_type_obj, *frame_type_obj, *c_void_p_type, *check_fn;
static PyObject *one;

static PyObject *get(PyObject *obj, int name)
{
	return PyObject_GetAttr(obj, keys[name]);
}

static int put(PyObject *obj, int name, PyObject *v)
{
	return PyObject_SetAttr(obj, keys[name], v);
}

// pyu_stacks_destroy() of the stacks whose ctypes pointer is @stacks (None: nothing).
static int destroy_pointer(PyObject *stacks)
{
	if (stacks == Py_None)
		return 0;
	PyObject *v = get(stacks, A_VALUE);
	if (!v)
		return -1;
	void *p = v == Py_None ? NULL : PyLong_AsVoidPtr(v);
	Py_DECREF(v);
	if (PyErr_Occurred())
		return -1;
	if (p)
		api.destroy(p);
	return 0;
}

// Target._drop_kept(): the snapshot kept for the script goes.
static int drop_kept(PyObject *target)
{
	PyObject *kept = get(target, A_KEPT);
	if (!kept)
		return -1;
	int r = 0;
	if (kept != Py_None) {
		r = put(target, A_KEPT, Py_None);
		PyObject *st = !r && PyDict_Check(kept) ? PyDict_GetItemWithError(kept, keys[A_STACKS])
						       : NULL;
		if (st)
			r = destroy_pointer(st);
		else if (PyErr_Occurred())
			r = -1;
	}
	Py_DECREF(kept);
	return r;
}

// classes(Snapshot, Thread, Frame, c_void_p, check): what take() builds and how it raises the
// library's errors (check(lib, error address)); the Snapshot's finalizer becomes finalize().
static PyMethodDef finalize_def;

static PyObject *classes(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *snap, *thread, *frame, *ptr, *check;
	if (!PyArg_ParseTuple(args, "O!O!O!O!O", &PyType_Type, &snap, &PyType_Type, &thread,
			      &PyType_Type, &frame, &PyType_Type, &ptr, &check))
		return NULL;
	PyObject *del = PyDescr_NewMethod((PyTypeObject *)snap, &finalize_def);
	if (!del || PyObject_SetAttrString(snap, "__del__", del) < 0) {
		Py_XDECREF(del);
		return NULL;
	}
	Py_DECREF(del);
	Py_INCREF(snap);
	Py_INCREF(thread);
	Py_INCREF(frame);
	Py_INCREF(ptr);
	Py_INCREF(check);
	Py_XSETREF(snapshot_type, snap);
	Py_XSETREF(thread_type_obj, thread);
	Py_XSETREF(frame_type_obj, frame);
	Py_XSETREF(c_void_p_type, ptr);
	Py_XSETREF(check_fn, check);
	Py_RETURN_NONE;
}

// The PythonInfo of snapshot @s (@stacks its pointer): the last one while the library says the
// same, else Target._python_info()'s.
static PyObject *python_info(Cache *c, PyObject *target, void *s, PyObject *stacks)
{
	const char *version = api.version(s);
	uint64_t hexversion = api.hexversion(s);
	uint32_t flags = api.build_flags(s);
	if (c->python && version && c->py_version && strcmp(version, c->py_version) == 0 &&
	    hexversion == c->py_hexversion && flags == c->py_flags) {
		Py_INCREF(c->python);
		return c->python;
	}
	PyObject *p = PyObject_CallMethodObjArgs(target, keys[M_PYTHON_INFO], stacks, NULL);
	int failed = 0;
	char *copy = p ? copy_str(version, &failed) : NULL;
	if (!p || failed) {
		Py_XDECREF(p);
		return p ? PyErr_NoMemory() : NULL;
	}
	PyMem_Free(c->py_version);
	c->py_version = copy;
	c->py_hexversion = hexversion;
	c->py_flags = flags;
	Py_INCREF(p);
	Py_XSETREF(c->python, p);
	return p;
}

// A new Snapshot of @target for the library's snapshot @s (pointer @stacks), its attributes
// those Snapshot.__init__ sets, numbered and registered as Target._register() does. On
// failure @s is destroyed, or owned by the Snapshot let go (its finalizer releases it).
static PyObject *new_snapshot(PyObject *target, Cache *c, void *s, PyObject *stacks,
			      PyObject *thread_list)
{
	PyTypeObject *type = (PyTypeObject *)snapshot_type;
	PyObject *snap = type->tp_alloc(type, 0);
	if (!snap)
		return NULL;
	PyObject *python = python_info(c, target, s, stacks);
	PyObject *taken = python ? get(target, A_TAKEN) : NULL;
	PyObject *serial = taken ? PyNumber_Add(taken, one) : NULL;
	Py_XDECREF(taken);
	PyObject *texts = serial ? PyDict_New() : NULL, *zero = PyLong_FromLong(0);
	// As __init__: _stacks set last (a Snapshot whose building failed does not own them).
	int bad = !texts || !zero || put(snap, A_TARGET, target) || put(snap, A_STACKS, Py_None) ||
		  put(snap, A_DOC, Py_None) || put(snap, A_TRIAGE, Py_None) ||
		  put(snap, A_TEXTS, texts) || put(snap, A_BT_FLAGS, zero) ||
		  put(snap, A_LIMIT, zero) || put(snap, A_THREADS, thread_list) ||
		  put(snap, A_PYTHON, python) || put(snap, A_SERIAL, zero) ||
		  put(snap, A_ERRORS, Py_None) || put(snap, A_STACKS, stacks);
	Py_XDECREF(python);
	Py_XDECREF(texts);
	Py_XDECREF(zero);
	if (bad) {
		// Not registered, and its stacks were set last: they are not its own.
		Py_XDECREF(serial);
		Py_DECREF(snap);
		api.destroy(s);
		return NULL;
	}
	// Registered: numbered, and kept (weakly) where close() finds it.
	PyObject *snaps = get(target, A_SNAPSHOTS), *ref = PyWeakref_NewRef(snap, NULL);
	if (!snaps || !ref || put(target, A_TAKEN, serial) || put(snap, A_SERIAL, serial) ||
	    PyObject_SetItem(snaps, serial, ref) < 0) {
		Py_XDECREF(snaps);
		Py_XDECREF(ref);
		Py_DECREF(serial);
		Py_DECREF(snap); // its finalizer releases the stacks it owns now
		return NULL;
	}
	Py_DECREF(snaps);
	Py_DECREF(ref);
	Py_DECREF(serial);
	return snap;
}

// take(target, activity, details) -> Snapshot: Target.collect(activity, details) without
// locals, native stacks, bounds or a frame limit, the caller holding the target's lock:
// the kept snapshot dropped, orphans freed, the library's collect, the objects, the
// Snapshot.
static PyObject *take(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs != 3) {
		PyErr_SetString(PyExc_TypeError, "take() takes 3 arguments");
		return NULL;
	}
	PyObject *target = args[0];
	int activity = PyObject_IsTrue(args[1]), details = PyObject_IsTrue(args[2]);
	if (activity < 0 || details < 0)
		return NULL;
	if (!bound || !snapshot_type) {
		PyErr_SetString(PyExc_RuntimeError, "bind() and classes() first");
		return NULL;
	}
	PyObject *handle = get(target, A_HANDLE), *value = NULL;
	if (handle && handle != Py_None)
		value = get(handle, A_VALUE);
	Py_XDECREF(handle);
	void *t = value && value != Py_None ? PyLong_AsVoidPtr(value) : NULL;
	Py_XDECREF(value);
	if (!t) {
		if (PyErr_Occurred())
			return NULL;
		Py_XDECREF(PyObject_CallMethodObjArgs(target, keys[M_NEED_OPEN], NULL)); // raises
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_RuntimeError, "the target has no handle");
		return NULL;
	}
	if (drop_kept(target) < 0)
		return NULL;
	PyObject *orphans = get(target, A_ORPHANS);
	if (!orphans)
		return NULL;
	int any = PyObject_IsTrue(orphans);
	Py_DECREF(orphans);
	if (any < 0)
		return NULL;
	if (any) {
		PyObject *r = PyObject_CallMethodObjArgs(target, keys[M_FREE_ORPHANS], NULL);
		if (!r)
			return NULL;
		Py_DECREF(r);
	}
	void *s = NULL, *err;
	Py_BEGIN_ALLOW_THREADS
	err = api.collect(t, &s);
	Py_END_ALLOW_THREADS
	if (err) {
		PyObject *lib = get(target, A_LIB);
		PyObject *e = lib ? PyLong_FromVoidPtr(err) : NULL;
		PyObject *r = e ? PyObject_CallFunctionObjArgs(check_fn, lib, e, NULL) : NULL;
		Py_XDECREF(lib);
		Py_XDECREF(e);
		Py_XDECREF(r);
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_RuntimeError, "the library's collect failed");
		return NULL;
	}
	PyObject *address = PyLong_FromVoidPtr(s);
	PyObject *stacks = address ? PyObject_CallFunctionObjArgs(c_void_p_type, address, NULL)
				   : NULL;
	Py_XDECREF(address);
	if (!stacks) {
		api.destroy(s);
		return NULL;
	}
	PyObject *cache = get(target, A_CACHE), *list = NULL, *with_exc = NULL, *snap = NULL;
	if (cache == Py_None) {
		Py_DECREF(cache);
		cache = PyObject_CallObject((PyObject *)&CacheType, NULL);
		if (cache && put(target, A_CACHE, cache) < 0)
			Py_CLEAR(cache);
	}
	if (cache && !PyObject_TypeCheck(cache, &CacheType)) {
		PyErr_SetString(PyExc_TypeError, "the target's cache is not the native module's");
		Py_CLEAR(cache);
	}
	if (cache)
		list = build_threads(s, (PyTypeObject *)thread_type_obj,
				     (PyTypeObject *)frame_type_obj, activity, details,
				     (Cache *)cache, &with_exc);
	if (list && PyList_GET_SIZE(with_exc)) {
		PyObject *filled = PyObject_CallMethodObjArgs(target, keys[M_WITH_EXCEPTIONS],
							      stacks, list, with_exc, NULL);
		Py_SETREF(list, filled);
	}
	if (list)
		snap = new_snapshot(target, (Cache *)cache, s, stacks, list);
	else
		api.destroy(s);
	Py_XDECREF(cache);
	Py_XDECREF(list);
	Py_XDECREF(with_exc);
	Py_DECREF(stacks);
	return snap;
}

// Snapshot.__del__ (classes() sets it): what the Python method does, here. The snapshot
// leaves its target's list; its library snapshot is kept for the script when it is the
// newest of an open target (its attributes but the target, the one kept before dropped),
// else destroyed; when another thread holds the target's lock, it is left to the target's
// next call (its orphans). Errors are dropped, as a finalizer's must be.
static PyObject *finalize(PyObject *snap, PyObject *unused)
{
	(void)unused;
	PyObject *target = get(snap, A_TARGET), *serial = NULL, *lock = NULL, *stacks = NULL;
	if (!target)
		goto out;
	PyObject *snaps = get(target, A_SNAPSHOTS);
	serial = snaps ? get(snap, A_SERIAL) : NULL;
	if (serial && PyDict_Check(snaps) && PyDict_DelItem(snaps, serial) < 0)
		PyErr_Clear(); // not there: already gone
	Py_XDECREF(snaps);
	if (!serial || !(lock = get(target, A_LOCK)))
		goto out;
	PyObject *got = PyObject_CallMethodObjArgs(lock, keys[M_ACQUIRE], Py_False, NULL);
	int held = got ? PyObject_IsTrue(got) : -1;
	Py_XDECREF(got);
	if (held < 0)
		goto out;
	stacks = get(snap, A_STACKS);
	if (!stacks || put(snap, A_STACKS, Py_None) < 0 || stacks == Py_None) {
		if (held)
			Py_XDECREF(PyObject_CallMethodObjArgs(lock, keys[M_RELEASE], NULL));
		goto out;
	}
	if (!held) {
		PyObject *orphans = get(target, A_ORPHANS);
		if (orphans && PyList_Check(orphans))
			PyList_Append(orphans, stacks);
		Py_XDECREF(orphans);
		goto out;
	}
	PyObject *taken = get(target, A_TAKEN), *handle = get(target, A_HANDLE);
	int newest = taken && handle ? PyObject_RichCompareBool(serial, taken, Py_EQ) : -1;
	int open = newest > 0 ? PyObject_IsTrue(handle) : 0;
	Py_XDECREF(taken);
	Py_XDECREF(handle);
	if (newest > 0 && open > 0) {
		PyObject *d = get(snap, A_DICT);
		PyObject *state = d ? PyDict_Copy(d) : NULL;
		Py_XDECREF(d);
		if (!state || PyDict_SetItem(state, keys[A_STACKS], stacks) < 0 ||
		    PyDict_DelItem(state, keys[A_TARGET]) < 0 || drop_kept(target) < 0 ||
		    put(target, A_KEPT, state) < 0) {
			PyErr_Clear();
			destroy_pointer(stacks); // kept nowhere
		}
		Py_XDECREF(state);
	} else if (newest >= 0 && open >= 0) {
		destroy_pointer(stacks);
	}
	PyErr_Clear();
	Py_XDECREF(PyObject_CallMethodObjArgs(lock, keys[M_RELEASE], NULL));
out:
	PyErr_Clear();
	Py_XDECREF(target);
	Py_XDECREF(serial);
	Py_XDECREF(lock);
	Py_XDECREF(stacks);
	Py_RETURN_NONE;
}

static PyMethodDef finalize_def = {
	"__del__", finalize, METH_NOARGS,
	"Lets the library's snapshot go (kept for the script when it is the newest).",
};

static PyMethodDef methods[] = {
	{"collect", collect, METH_O,
	 "collect(target) -> (error, stacks): pyu_stacks_collect(), addresses (0: none)."},
	{"destroy", destroy, METH_O, "destroy(stacks): pyu_stacks_destroy()."},
	{"info", info, METH_O, "info(stacks) -> (version, hexversion, build flags)."},
	{"bind", bind, METH_VARARGS, "bind(*addresses): the library's accessor functions."},
	{"take", (PyCFunction)(void (*)(void))take, METH_FASTCALL,
	 "take(target, activity, details) -> Snapshot: Target.collect() in one call."},
	{"classes", classes, METH_VARARGS,
	 "classes(Snapshot, Thread, Frame, c_void_p, check): what take() builds."},
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
	if (!one && !(one = PyLong_FromLong(1)))
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
