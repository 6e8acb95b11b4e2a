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

// The fields every frame of code object @code shares: kind, function, qualname, file,
// code_address (a dict to copy per frame).
static PyObject *code_template(void *s, uint32_t code)
{
	PyObject *d = PyDict_New();
	if (!d)
		return NULL;
	Py_INCREF(s_python);
	if (set(d, K_KIND, s_python) || set(d, K_FUNCTION, str_or_none(api.code_string(s, code, 0))) ||
	    set(d, K_QUALNAME, str_or_none(api.code_string(s, code, 1))) ||
	    set(d, K_FILE, str_or_none(api.code_string(s, code, 2))) ||
	    set(d, K_CODE_ADDRESS, PyLong_FromUnsignedLongLong(api.code_address(s, code)))) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

// Per code object: the fields its frames share (kind, names, file, code address), and the last
// location seen in it with those fields added (a recursion, and threads running the same
// code, repeat one location: a frame is then one dict copy and its frame address).
struct code_memo {
	PyObject *code;     // NULL until first needed
	PyObject *at;       // NULL when no location yet
	int64_t loc[5];     // line, end_line, column, end_column, instruction_offset of @at
};

static PyObject *python_frame(PyTypeObject *frame_type, struct code_memo *m, const int64_t *f)
{
	if (!m->at || memcmp(m->loc, f + 2, sizeof(m->loc)) != 0) {
		PyObject *d = PyDict_Copy(m->code);
		if (!d)
			return NULL;
		Py_INCREF(Py_None);
		if (set(d, K_LINE, int_or_none(f[2])) || set(d, K_END_LINE, int_or_none(f[3])) ||
		    set(d, K_COLUMN, int_or_none(f[4])) || set(d, K_END_COLUMN, int_or_none(f[5])) ||
		    set(d, K_INSTRUCTION_OFFSET, int_or_none(f[6])) || set(d, K_REASON, Py_None)) {
			Py_DECREF(d);
			return NULL;
		}
		Py_XSETREF(m->at, d);
		memcpy(m->loc, f + 2, sizeof(m->loc));
	}
	PyObject *d = PyDict_Copy(m->at);
	if (!d)
		return NULL;
	if (set(d, K_FRAME_ADDRESS, PyLong_FromUnsignedLongLong((uint64_t)f[7])) ||
	    set(d, K_EXTRA, PyDict_New())) {
		Py_DECREF(d);
		return NULL;
	}
	return untracked(instance(frame_type, d));
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

// The frames of thread @thread as a tuple; @memos: one per code object of the snapshot.
static PyObject *frames_of(PyTypeObject *frame_type, void *s, uint32_t thread, uint32_t count,
			   struct code_memo *memos, uint32_t codes)
{
	PyObject *tuple = PyTuple_New(count);
	if (!tuple)
		return NULL;
	int64_t buf[FRAME_BATCH * FRAME_FIELDS];
	for (uint32_t first = 0; first < count;) {
		uint32_t want = count - first < FRAME_BATCH ? count - first : FRAME_BATCH;
		uint32_t got = api.frame_fields(s, thread, first, want, buf);
		if (got == 0)
			break;
		for (uint32_t i = 0; i < got; i++) {
			const int64_t *f = buf + (size_t)i * FRAME_FIELDS;
			PyObject *fr;
			if (f[0] == 0 && f[1] >= 0 && (uint64_t)f[1] < codes) {
				struct code_memo *m = &memos[f[1]];
				if (!m->code && !(m->code = code_template(s, (uint32_t)f[1]))) {
					Py_DECREF(tuple);
					return NULL;
				}
				fr = python_frame(frame_type, m, f);
			} else {
				fr = error_frame(frame_type, s, thread, first + i, f);
			}
			if (!fr) {
				Py_DECREF(tuple);
				return NULL;
			}
			PyTuple_SET_ITEM(tuple, first + i, fr);
		}
		first += got;
	}
	// A snapshot has what it said it has; a short read would leave NULL items.
	for (uint32_t i = 0; i < count; i++)
		if (!PyTuple_GET_ITEM(tuple, i)) {
			Py_DECREF(tuple);
			PyErr_SetString(PyExc_RuntimeError, "the snapshot lost frames");
			return NULL;
		}
	return tuple;
}

static void free_memos(struct code_memo *memos, uint32_t codes)
{
	for (uint32_t i = 0; memos && i < codes; i++) {
		Py_XDECREF(memos[i].code);
		Py_XDECREF(memos[i].at);
	}
	PyMem_Free(memos);
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
	PyObject *signal;
	const char *sig = api.activity_text(s, thread, 2);
	if (a[1] == ABSENT)
		signal = (Py_INCREF(Py_None), Py_None);
	else if (sig)
		signal = str_or_none(sig);
	else
		signal = PyUnicode_FromFormat("signal %lld", (long long)a[1]);
	return set(d, K_SYSCALL, syscall) ||
	       set(d, K_STATE, str_or_none(api.activity_text(s, thread, 1))) ||
	       set(d, K_SIGNAL, signal) ||
	       set(d, K_FAULT_ADDRESS, a[2] == ABSENT ? (Py_INCREF(Py_None), Py_None)
						      : PyLong_FromUnsignedLongLong((uint64_t)a[2])) ||
	       set(d, K_CPU_SECONDS, a[3] == ABSENT ? (Py_INCREF(Py_None), Py_None)
						    : PyFloat_FromDouble((double)a[3] / 1e9))
		       ? -1 : 0;
}

// threads(stacks, Thread, Frame, activity) -> ([Thread, ...], [indexes of threads with an
// exception]): every thread of the snapshot at address @stacks, frames innermost first. The
// threads' exceptions are left None (the caller fills those it lists).
static PyObject *threads(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *stacks_obj;
	PyTypeObject *thread_type, *frame_type;
	int activity;
	if (!PyArg_ParseTuple(args, "OO!O!p", &stacks_obj, &PyType_Type, &thread_type,
			      &PyType_Type, &frame_type, &activity))
		return NULL;
	if (!bound) {
		PyErr_SetString(PyExc_RuntimeError, "bind() first");
		return NULL;
	}
	void *s = PyLong_AsVoidPtr(stacks_obj);
	if (!s) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_ValueError, "no stacks");
		return NULL;
	}
	uint32_t n = api.thread_count(s), codes = api.code_count(s);
	struct code_memo *memos = codes ? PyMem_Calloc(codes, sizeof(*memos)) : NULL;
	PyObject *list = PyList_New(0), *with_exc = PyList_New(0);
	if ((codes && !memos) || !list || !with_exc)
		goto fail;
	for (uint32_t t = 0; t < n; t++) {
		int64_t v[THREAD_FIELDS];
		if (api.thread_fields(s, t, v, THREAD_FIELDS) != THREAD_FIELDS)
			continue;
		PyObject *d = PyDict_New();
		if (!d)
			goto fail;
		PyObject *frames = frames_of(frame_type, s, t, (uint32_t)v[5], memos, codes);
		PyObject *gil = v[2] == ABSENT ? Py_None : v[2] ? Py_True : Py_False;
		Py_INCREF(gil);
		Py_INCREF(Py_None);
		if (set(d, K_THREAD_ID, PyLong_FromUnsignedLongLong((uint64_t)v[0])) ||
		    set(d, K_NATIVE_THREAD_ID, int_or_none(v[1])) || set(d, K_HOLDS_GIL, gil) ||
		    set(d, K_NAME, str_or_none(api.thread_name(s, t))) ||
		    set(d, K_INTERPRETER_ID, int_or_none(v[3])) ||
		    set(d, K_TSTATE_ADDRESS, PyLong_FromUnsignedLongLong((uint64_t)v[4])) ||
		    set(d, K_FRAMES, frames) || set(d, K_FRAMES_OMITTED, PyLong_FromLong(0)) ||
		    set(d, K_EXCEPTION, Py_None)) {
			Py_DECREF(d);
			goto fail;
		}
		if (activity) {
			if (set_activity(d, s, t) < 0) {
				Py_DECREF(d);
				goto fail;
			}
		} else {
			static const int nones[] = {K_SYSCALL, K_STATE, K_SIGNAL, K_FAULT_ADDRESS,
						    K_CPU_SECONDS};
			for (size_t i = 0; i < sizeof(nones) / sizeof(nones[0]); i++) {
				Py_INCREF(Py_None);
				if (set(d, nones[i], Py_None)) {
					Py_DECREF(d);
					goto fail;
				}
			}
		}
		PyObject *th = instance(thread_type, d);
		if (!th || PyList_Append(list, th) < 0) {
			Py_XDECREF(th);
			goto fail;
		}
		Py_DECREF(th);
		if (api.exception(s, t)) {
			PyObject *i = PyLong_FromUnsignedLong(t);
			if (!i || PyList_Append(with_exc, i) < 0) {
				Py_XDECREF(i);
				goto fail;
			}
			Py_DECREF(i);
		}
	}
	free_memos(memos, codes);
	return Py_BuildValue("(NN)", list, with_exc);
fail:
	free_memos(memos, codes);
	Py_XDECREF(list);
	Py_XDECREF(with_exc);
	return NULL;
}

static PyMethodDef methods[] = {
	{"bind", bind, METH_VARARGS, "bind(*addresses): the library's accessor functions."},
	{"threads", threads, METH_VARARGS,
	 "threads(stacks, Thread, Frame, activity) -> (threads, indexes with an exception)"},
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
	return PyModule_Create(&module);
}
