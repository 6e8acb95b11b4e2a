// heap.h - the heap census: every object the collector tracks, found on its own lists (each
// generation and the permanent one, of every interpreter), counted per type and sized as
// sys.getsizeof() reports them (heap_size.h). Model layer: reads the target through the
// runtime found for the snapshot, the layouts and the value reader; the Face (format_heap.c)
// prints what this returns. Every ring walk is bounded and checks each link back; a damaged
// list ends that walk with a counted error, and a census that stopped early says so.
#ifndef PYU_HEAP_H
#define PYU_HEAP_H

#include <stdbool.h>
#include <stdint.h>

#include "addrmap.h"
#include "addrset.h"
#include "error.h"
#include "heap_size.h"
#include "stacks.h"

// Objects visited by one census at most; past it the census is partial.
#define PYU_HEAP_MAX_OBJECTS (64u << 20)
// Types of types remembered: a pointer is taken for an object of a type not met yet when that
// type's own type is one of these.
#define PYU_HEAP_MAX_METATYPES 64
// Largest objects kept at most (--biggest).
#define PYU_HEAP_MAX_BIGGEST 100000
// Referrers of one object kept at most (--referrers); more are counted.
#define PYU_HEAP_MAX_REFERRERS 10000
// How a referrer holds the object (pyu_heap_ref.via).
enum pyu_heap_via {
	PYU_VIA_ITEM,      // [n]: an item of a tuple or list
	PYU_VIA_DICT_KEY,  // a key of a dict
	PYU_VIA_DICT_VALUE,// [key]: key the object at .key
	PYU_VIA_SET,       // an element of a set
	PYU_VIA_ATTR,      // .name: an instance attribute, .key the name's str
	PYU_VIA_FIELD,     // .field: a field of a builtin object, .field its name
	PYU_VIA_SLOT,      // a __slots__ word at offset n
	PYU_VIA_ROOT,      // root number n of a walk from roots (pyu_heap_walk.roots)
	PYU_VIA_LOCAL,     // a local variable of a frame that is no thread's: .field its name,
	                   // .owner its code's (qual)name, .n an enum pyu_heap_frame_kind, .key 1
	                   // when the referrer is the generator holding the frame (3.11+), 0 when
	                   // it is a frame object
};
// What runs in a frame, by its code's flags: a generator's, a coroutine's ... or a plain one.
enum pyu_heap_frame_kind {
	PYU_HEAP_FRAME,
	PYU_HEAP_GENERATOR,
	PYU_HEAP_COROUTINE,
	PYU_HEAP_ASYNC_GENERATOR,
};
// The kind of a frame whose code has the flags @co_flags (CO_GENERATOR, CO_COROUTINE,
// CO_ASYNC_GENERATOR: the same bits in every version). Cannot fail.
enum pyu_heap_frame_kind pyu_heap_frame_kind(int32_t co_flags);
// "frame", "generator", "coroutine", "async generator". Cannot fail.
const char *pyu_heap_frame_kind_name(enum pyu_heap_frame_kind kind);
// The attribute of a generator, coroutine, async generator that is its frame: "gi_frame",
// "cr_frame", "ag_frame" ("f_back" for a plain frame: none). Cannot fail.
const char *pyu_heap_frame_attr(enum pyu_heap_frame_kind kind);
struct pyu_heap_ref {
	uint64_t addr;            // the referrer
	uint32_t via;             // enum pyu_heap_via
	uint64_t n, key;
	const char *field;        // static, or (PYU_VIA_LOCAL) owned by the census (NULL: not kept)
	const char *owner;        // PYU_VIA_LOCAL: owned by the census (NULL: not kept)
};
// Distinct error messages kept (further ones are counted under the last).
#define PYU_HEAP_MAX_ERRORS 32

struct pyu_heap_type {
	uint64_t addr;            // the type object
	uint32_t slot_regions;    // how many of slots[] hold its instances' __slots__ (the
	bool slots_read;          // regions of the classes on its tp_base chain that declare
	uint32_t slots[4][2];     // __slots__: [their base's tp_basicsize, their own))
	char *name;               // "module.qualname", builtins bare (owned)
	uint64_t count, bytes;
	uint64_t unfollowed;      // objects of it whose references the census cannot follow
	struct pyu_size_type size; // how its objects are sized
};

// One of the largest objects.
struct pyu_heap_big {
	uint64_t addr;
	uint64_t bytes;
	uint32_t type;            // index in pyu_heap.types
};

struct pyu_heap_error {
	char *message;            // owned
	uint64_t count;
};

struct pyu_heap {
	uint64_t objects, bytes;
	uint64_t tracked;         // found on the collector's lists
	uint64_t untracked;       // reached only through references of those
	bool partial;             // the object limit or an interruption stopped the census
	bool interrupted;         // the progress callback stopped it (pyu_stacks_set_progress)
	uint32_t interpreters;    // whose lists were walked
	struct pyu_heap_type *types;
	uint32_t type_count, type_cap;
	struct pyu_addrmap type_map; // type address -> index in types
	char **sources;           // how objects were found, one line each (owned)
	uint32_t source_count;
	struct pyu_heap_error errors[PYU_HEAP_MAX_ERRORS];
	uint32_t error_count;
	uint64_t sized_inexact;   // objects whose exact getsizeof could not be read
	struct pyu_heap_big *biggest; // the largest objects, a min-heap on bytes while counting
	uint32_t biggest_count, biggest_cap;
	uint64_t metatypes[PYU_HEAP_MAX_METATYPES]; // the types of the types met (type, ABCMeta..)
	uint32_t metatype_count;
	uint64_t want;            // --referrers: the object whose referrers are kept (0: none)
	bool want_found;          // it was counted: want_type and want_bytes say how
	uint32_t want_type;
	uint64_t want_bytes;
	struct pyu_heap_ref *refs;
	uint32_t ref_count, ref_cap;
	uint64_t refs_dropped;    // past PYU_HEAP_MAX_REFERRERS
	// The names of locals and codes of PYU_VIA_LOCAL references, each kept once (kept only
	// when the walk wants an object: --referrers, --path).
	char **names;
	uint32_t name_count, name_cap;
};

// Takes the census of the snapshot's target, keeping the @biggest largest objects (0: none) in
// h->biggest, largest first. Fails only when nothing can be counted (no runtime, a version
// without heap or value layouts, out of memory); unreadable lists and objects become counted
// errors inside the census. On error, *ret is unchanged.
struct pyu_error *pyu_heap_census(struct pyu_stacks *s, uint32_t biggest, struct pyu_heap **ret);
// The same, also keeping in h->refs every object found to refer to the object at @want (a
// referrer found along two of its references is kept once for each).
struct pyu_error *pyu_heap_census_referrers(struct pyu_stacks *s, uint64_t want,
					   struct pyu_heap **ret);
void pyu_heap_destroy(struct pyu_heap *h);

// What a walk tells its caller as it goes (heap_graph.c builds paths and dominators from it).
// Each returns false to stop the walk (h->partial is then not set: the caller asked).
// Objects are numbered as they are counted: the n-th object counted (its n-th object call,
// once each) is node n, from 1; node 0 stands for the roots.
struct pyu_heap_hooks {
	void *arg;
	// An object counted, first sight: its sys.getsizeof() bytes and index in h->types.
	bool (*object)(void *arg, uint64_t addr, uint64_t bytes, uint32_t type);
	// A reference to the counted object @to from the object @from whose references are
	// followed (0: root number via->n), held as @via says (via->addr is @from).
	bool (*edge)(void *arg, uint64_t from, const struct pyu_heap_ref *via, uint64_t to);
	// The same reference by nodes, for graphs: from node @from (they come in increasing
	// order: each object's references together) to node @to, or to 0 when the object at
	// @to_addr was counted before (done then tells its node).
	bool (*link)(void *arg, uint32_t from, uint32_t to, uint64_t to_addr);
	// Once the walk has ended (finished or stopped, not failed): @seen holds every object
	// counted (and a few it met that it could not count) and @objects[n - 1] is node n's
	// address, @count nodes. Both the census's, for the call only.
	bool (*done)(void *arg, const struct pyu_heap *h, const struct pyu_addrset *seen,
		     const uint64_t *objects, uint64_t count);
};

struct pyu_heap_walk {
	uint32_t biggest;         // as pyu_heap_census
	uint64_t want;            // as pyu_heap_census_referrers (0: none)
	const uint64_t *roots;    // objects followed as referred to by nothing (PYU_VIA_ROOT)
	uint32_t root_count;
	bool roots_only;          // the collector's lists are not walked: breadth first from the
	                          // roots alone, in their order
	const struct pyu_heap_hooks *hooks; // NULL: none
};

// The census as @w says: the collector's lists (unless roots_only), then the roots, then what
// those refer to, reporting objects and references to w->hooks. Fails as pyu_heap_census.
struct pyu_error *pyu_heap_walk(struct pyu_stacks *s, const struct pyu_heap_walk *w,
				struct pyu_heap **ret);

#endif
