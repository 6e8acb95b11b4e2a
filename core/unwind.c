// unwind.c - native stacks with elfutils' libdwfl: a live process through ptrace (the caller
// holds it stopped), a core file through its notes and the files it maps. Each frame is named
// from the ELF symbols and, when the file has DWARF, given its source line. Memory layer: no
// Python here; native.c decides what the frames mean.
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "target_impl.h"
#include "unwind.h"

#ifndef PYU_HAVE_LIBDW

struct pyu_error *pyu_target_unwind(struct pyu_target *t, pyu_unwind_fn fn, void *arg)
{
	(void)t, (void)fn, (void)arg;
	return pyu_error_create(PYU_ERR_UNSUPPORTED,
				"native frames need elfutils (libdw), which this build lacks");
}

#else

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

// What a pc names (function, library, source line), remembered for the whole unwind: the
// threads of one process return into the same few hundred call sites, and elfutils looks a
// symbol up by scanning the whole symbol table (a file with DWARF and a full .symtab, like a
// pyenv libpython, made that most of the cost). Strings belong to the Dwfl, which outlives
// the cache. Direct-mapped: a collision replaces the older entry.
#define NAME_CACHE 4096u

#define NAMED_FRAMES 8u   // frames one pc names (inlined calls and the function) kept per entry
#define MAX_INLINED 64    // inlined calls listed at one pc

struct named_frame {
	const char *function, *file;
	int64_t line;
};

// The frames a pc names, innermost first: the functions inlined there, then the real one.
struct named_pc {
	Dwarf_Addr pc; // 0: empty
	const char *library;
	uint32_t count;
	struct named_frame frames[NAMED_FRAMES];
};

// A source file name made absolute (a relative one joined to its compilation directory), kept
// for the whole unwind like the Dwfl's own strings.
struct joined_path {
	struct joined_path *next;
	const char *dir, *file; // what it was made of (the Dwfl's strings)
	char path[];
};

#define RESUME_REGS 32 // the registers a resumed unwind starts from (aarch64: x0-x30, sp)

// Where an unwind that met a signed return address goes on (see resume_thread): the
// registers of the frame it returns to, and the return address with its code stripped.
struct resume {
	uint64_t regs[RESUME_REGS];
	uint32_t have; // bit i: regs[i] is known
	uint64_t pc;
	bool pending;  // a resume is wanted
	bool first;    // the next frame given is the resumed one (its pc is the call's)
};

// The tail calls found between a return address and the function called from there,
// remembered for the whole unwind: finding them searches the DWARF of the caller's function
// (thousands of DIEs in an eval loop), and a deep stack returns to the same few places
// thousands of times. Direct-mapped, like the names.
#define TAIL_CACHE 1024u
#define TAIL_CHAIN_MAX 8 // functions jumped through between a caller and its callee

struct tail_memo {
	uint64_t pc; // 0: empty
	char callee[128];
	uint32_t count;
	uint64_t tails[TAIL_CHAIN_MAX];
};

struct walk {
	Dwfl *dwfl;
	struct pyu_target *t;
	struct named_pc *names; // NAME_CACHE entries; NULL when out of memory (no caching)
	struct joined_path *paths;
	uint32_t path_count;
	pyu_unwind_fn fn;
	void *arg;
	struct pyu_error *err;   // from @fn: stops everything
	int64_t tid;
	uint32_t frames;
	// The real function of the last frame given, for the tail calls between it and its
	// caller (tail_calls()); "" at a thread's start.
	char callee[128];
	struct tail_memo *tails; // TAIL_CACHE entries; NULL when out of memory (no caching)
	int sp_regno; // the DWARF number of the target's stack pointer; -1: not known
	uint32_t max_frames; // per thread: PYU_UNWIND_MAX_FRAMES
	// The bits of a return address that may hold a pointer-authentication code (0: none),
	// and the Dwfl that goes on past such an address (resume_thread; NULL until needed).
	uint64_t pac_mask;
	Dwfl *resume_dwfl;
	Elf *core_elf;
	bool resume_failed;
	struct resume resume;
};

// At @w's bound of frames for a thread: the thread's unwinding ends with an error saying so
// (DWARF_CB_ABORT returned), once.
static int past_bound(struct walk *w)
{
	char msg[128];
	snprintf(msg, sizeof(msg), "native stack unwound only to its %u innermost frames",
		 w->max_frames);
	struct pyu_unwound f = {w->tid, 0, 0, NULL, NULL, NULL, -1, msg};
	w->err = w->fn(w->arg, &f);
	return DWARF_CB_ABORT;
}

static char *debuginfo_path; // libdwfl's default search path; never written

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static const Dwfl_Callbacks core_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

// The name a DIE gives its function, following DW_AT_abstract_origin (an inlined call's DIE
// names nothing itself); the linkage name when there is no plain one.
static const char *die_function(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	return name ? name : dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
}

#define JOINED_PATHS_MAX 4096u // distinct relative names joined in one unwind

// @file as a full name: a relative one (a DWARF 5 line table's file in a relative directory,
// "pkg/mod.c" compiled from the directory above the package, comes out of elfutils relative)
// joined to the compilation directory of @cu, as debuggers show it. @file itself when it is
// absolute, when the unit names no directory, or when out of memory.
static const char *full_path(struct walk *w, Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir = file && file[0] != '/' && cu
		? dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)) : NULL;
	if (!dir || dir[0] != '/')
		return file;
	for (struct joined_path *p = w->paths; p; p = p->next)
		if (p->file == file && p->dir == dir)
			return p->path;
	size_t n = strlen(dir) + strlen(file) + 2;
	struct joined_path *p = w->path_count < JOINED_PATHS_MAX
		? malloc(sizeof(*p) + n) : NULL;
	if (!p)
		return file;
	p->dir = dir;
	p->file = file;
	snprintf(p->path, n, "%s/%s", dir, file);
	p->next = w->paths;
	w->paths = p;
	w->path_count++;
	return p->path;
}

// Where the inlined call @die sits in its caller: DW_AT_call_file / DW_AT_call_line.
static void call_site(Dwarf_Die *cu, Dwarf_Die *die, const char **file, int64_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word index = 0, lineno = 0;
	Dwarf_Files *files = NULL;
	size_t count = 0;
	*file = NULL;
	*line = -1;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &index) != 0 ||
	    dwarf_getsrcfiles(cu, &files, &count) != 0 || index >= count)
		return;
	*file = dwarf_filesrc(files, index, NULL, NULL);
	if (*file && dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &lineno) == 0 &&
	    lineno > 0 && lineno < INT32_MAX)
		*line = (int64_t)lineno;
}

// The frames @lookup names in @mod, innermost first, into @out (room for MAX_INLINED + 1):
// the functions inlined there, as debuggers list them - each at its own line, its caller at
// the call's line - then the real function (its ELF symbol). Returns how many.
static uint32_t name_frames(struct walk *w, Dwfl_Module *mod, Dwarf_Addr lookup,
			    struct named_frame *out)
{
	GElf_Off off;
	GElf_Sym sym;
	struct named_frame f = {dwfl_module_addrinfo(mod, lookup, &off, &sym, NULL, NULL, NULL),
				NULL, -1};
	Dwfl_Line *line = dwfl_module_getsrc(mod, lookup);
	int lineno = 0;
	const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	// dwarf_getscopes follows an inlined function into its abstract definition; the chain of
	// concrete DIEs around the innermost inlined call is dwarf_getscopes_die's.
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, lookup, &bias);
	if (file && lineno > 0) {
		f.file = full_path(w, cu, file);
		f.line = lineno;
	}
	Dwarf_Die *scopes = NULL, *chain = NULL;
	int n = cu ? dwarf_getscopes(cu, lookup - bias, &scopes) : 0, m = 0;
	for (int i = 0; i < n && !chain; i++) {
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram)
			break;
		if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine &&
		    (m = dwarf_getscopes_die(&scopes[i], &chain)) <= 0)
			break;
	}
	free(scopes);
	uint32_t count = 0;
	const char *symbol = f.function;
	for (int i = 0; i < m && count < MAX_INLINED; i++) {
		int tag = dwarf_tag(&chain[i]);
		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		f.function = die_function(&chain[i]);
		out[count++] = f;
		call_site(cu, &chain[i], &f.file, &f.line);
		f.file = full_path(w, cu, f.file);
	}
	free(chain);
	f.function = symbol;
	out[count++] = f;
	return count;
}

// ---- tail calls -------------------------------------------------------------------------------
//
// A function that ends in a jump to another leaves no frame: the stack says its caller called
// the function jumped to. gdb (and lldb) show the functions jumped through as frames of their
// own when the caller's DWARF call site names the function it called and a unique chain of
// tail-call sites leads from it to the function that runs - and number frames with them. The
// CLI does the same, so that its frame numbers are gdb's.

#define TAIL_DIES_MAX 20000u  // DIEs searched for call sites in one function

// @name up to a suffix the compiler added ("x.constprop.0", "x.isra.0", "x.cold").
static bool same_function(const char *a, const char *b)
{
	if (!a || !b)
		return false;
	size_t na = strcspn(a, "."), nb = strcspn(b, ".");
	return na == nb && na && !strncmp(a, b, na);
}

static bool attr_flag(Dwarf_Die *die, unsigned name)
{
	Dwarf_Attribute attr;
	bool flag = false;
	return dwarf_attr(die, name, &attr) && dwarf_formflag(&attr, &flag) == 0 && flag;
}

// The function call site @site calls (its DIE into @ret). False when it names none.
static bool call_origin(Dwarf_Die *site, Dwarf_Die *ret)
{
	Dwarf_Attribute attr;
	if (!dwarf_attr(site, DW_AT_call_origin, &attr) &&
	    !dwarf_attr(site, DW_AT_abstract_origin, &attr))
		return false;
	return dwarf_formref_die(&attr, ret) != NULL;
}

// Where control returns after call site @site (the address after its call or jump).
static bool site_return_pc(Dwarf_Die *site, Dwarf_Addr *ret)
{
	Dwarf_Attribute attr;
	if (dwarf_attr(site, DW_AT_call_return_pc, &attr) ||
	    dwarf_attr(site, DW_AT_low_pc, &attr))
		return dwarf_formaddr(&attr, ret) == 0;
	return false;
}

struct site_search {
	Dwarf_Addr return_pc; // find the site returning here (0: collect tail calls)
	bool found;
	Dwarf_Die site;
	Dwarf_Die tails[TAIL_CHAIN_MAX]; // tail-call sites (collect mode)
	uint32_t tail_count;
	Dwarf_Addr blind[TAIL_CHAIN_MAX]; // return pcs of sites that name no function
	uint32_t blind_count;
	bool too_many;
	uint32_t dies;
};

// Searches the children of @die (a function, or blocks and inlined calls inside it) for call
// sites, bounded by TAIL_DIES_MAX.
static void search_sites(Dwarf_Die *die, struct site_search *q, int depth)
{
	Dwarf_Die child;
	if (depth > 16 || dwarf_child(die, &child) != 0)
		return;
	do {
		if (++q->dies > TAIL_DIES_MAX || q->found)
			return;
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_call_site || tag == DW_TAG_GNU_call_site) {
			Dwarf_Addr at;
			if (q->return_pc) {
				if (site_return_pc(&child, &at) && at == q->return_pc) {
					q->site = child;
					q->found = true;
				}
			} else if (!dwarf_hasattr(&child, DW_AT_call_origin) &&
				   !dwarf_hasattr(&child, DW_AT_abstract_origin)) {
				if (q->blind_count < TAIL_CHAIN_MAX && site_return_pc(&child, &at))
					q->blind[q->blind_count++] = at;
				if (attr_flag(&child, DW_AT_call_tail_call) ||
				    attr_flag(&child, DW_AT_GNU_tail_call))
					q->too_many = true; // a jump through a pointer
			} else if (attr_flag(&child, DW_AT_call_tail_call) ||
				   attr_flag(&child, DW_AT_GNU_tail_call)) {
				if (q->tail_count < TAIL_CHAIN_MAX)
					q->tails[q->tail_count++] = child;
				else
					q->too_many = true;
			}
		} else if (tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine) {
			search_sites(&child, q, depth + 1);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

// The out-of-line instance of function @fn, which has its code and call sites: @fn itself when
// it has code, else the subprogram of its unit whose abstract origin it is (a function also
// inlined elsewhere is described once abstractly). False when there is none.
static bool concrete_function(Dwarf_Die *fn, Dwarf_Die *ret)
{
	Dwarf_Addr low;
	if (dwarf_lowpc(fn, &low) == 0 || dwarf_hasattr(fn, DW_AT_ranges)) {
		*ret = *fn;
		return true;
	}
	Dwarf_Die cu, child;
	if (attr_flag(fn, DW_AT_declaration) || !dwarf_diecu(fn, &cu, NULL, NULL) ||
	    dwarf_child(&cu, &child) != 0)
		return false;
	Dwarf_Off want = dwarf_dieoffset(fn);
	uint32_t seen = 0;
	do {
		Dwarf_Attribute attr;
		Dwarf_Die origin;
		if (dwarf_tag(&child) == DW_TAG_subprogram &&
		    dwarf_attr(&child, DW_AT_abstract_origin, &attr) &&
		    dwarf_formref_die(&attr, &origin) && dwarf_dieoffset(&origin) == want &&
		    dwarf_lowpc(&child, &low) == 0) {
			*ret = child;
			return true;
		}
	} while (++seen < TAIL_DIES_MAX && dwarf_siblingof(&child, &child) == 0);
	return false;
}

#define TAIL_SYMBOLS_MAX 200000 // symbols searched for a function defined in another unit

// The out-of-line function named @name in @mod, found by its ELF symbol (a call site in one
// compilation unit names a function of another only by a declaration). False when none.
static bool function_by_name(Dwfl_Module *mod, const char *name, Dwarf_Die *ret,
			     Dwarf_Addr *ret_bias)
{
	int n = name ? dwfl_module_getsymtab(mod) : -1;
	for (int i = 0; i < n && i < TAIL_SYMBOLS_MAX; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
		// versioned names ("sem_wait@@GLIBC_2.34") name the same function
		size_t len = strlen(name);
		if (!s || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
		    strncmp(s, name, len) || (s[len] && s[len] != '@'))
			continue;
		Dwarf_Addr bias = 0;
		Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
		Dwarf_Die *scopes = NULL;
		int m = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
		bool found = false;
		for (int j = 0; j < m && !found; j++)
			if (dwarf_tag(&scopes[j]) == DW_TAG_subprogram) {
				*ret = scopes[j];
				found = true;
			}
		free(scopes);
		if (found)
			*ret_bias = bias;
		return found;
	}
	return false;
}

struct named_search {
	const char *name;
	Dwfl_Module *skip; // already searched
	Dwarf_Die die;
	Dwarf_Addr bias;
	bool found;
};

static int search_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
			 void *arg)
{
	(void)userdata, (void)name, (void)start;
	struct named_search *q = arg;
	if (mod != q->skip && function_by_name(mod, q->name, &q->die, &q->bias))
		q->found = true;
	return q->found ? DWARF_CB_ABORT : DWARF_CB_OK;
}

// The function named @name in @mod, else in any module of @mod's Dwfl (a call into another
// library: libc's sem_wait called from the interpreter).
static bool function_anywhere(Dwfl *dwfl, Dwfl_Module *mod, const char *name, Dwarf_Die *ret,
			      Dwarf_Addr *ret_bias)
{
	if (!name)
		return false;
	if (function_by_name(mod, name, ret, ret_bias))
		return true;
	struct named_search q = {name, mod, {0}, 0, false};
	dwfl_getmodules(dwfl, search_module, &q, 0);
	if (q.found) {
		*ret = q.die;
		*ret_bias = q.bias;
	}
	return q.found;
}

struct tail_chain {
	Dwarf_Addr pcs[TAIL_CHAIN_MAX]; // return pcs of the tail calls, outermost first
	uint32_t count;
	uint32_t paths; // chains found (only one is believed)
};

// Follows tail-call sites from function @fn to one named @callee; appends to @path (depth
// @n). Counts the chains found in @out, keeping the first.
// Follows tail-call sites from function @fn (of a module loaded with @bias) to one named
// @callee; appends the sites' return addresses to @path (depth @n). Counts the chains found in
// @out, keeping the first.
static void follow_tails(Dwfl *dwfl, Dwfl_Module *mod, Dwarf_Die *fn, Dwarf_Addr bias,
			 const char *callee, Dwarf_Addr *path, uint32_t n, struct tail_chain *out)
{
	Dwarf_Die code;
	if (n >= TAIL_CHAIN_MAX || out->paths > 1)
		return;
	if (!concrete_function(fn, &code) &&
	    !function_anywhere(dwfl, mod, die_function(fn), &code, &bias))
		return;
	struct site_search q = {0};
	search_sites(&code, &q, 0);
	if (q.too_many) {
		out->paths = 2; // cannot tell
		return;
	}
	for (uint32_t i = 0; i < q.tail_count && out->paths <= 1; i++) {
		Dwarf_Die target;
		Dwarf_Addr at;
		// A jump through a pointer could lead anywhere: the chain is not known for sure
		// (gdb gives up there too).
		if (!call_origin(&q.tails[i], &target) || !site_return_pc(&q.tails[i], &at)) {
			out->paths = 2;
			return;
		}
		// Another call returning to the same place (code the compiler merged) names
		// nothing: which one jumped cannot be told (gdb gives up there too).
		for (uint32_t j = 0; j < q.blind_count; j++)
			if (q.blind[j] == at) {
				out->paths = 2;
				return;
			}
		path[n] = at + bias;
		if (same_function(die_function(&target), callee)) {
			if (++out->paths == 1) {
				memcpy(out->pcs, path, (n + 1) * sizeof(*path));
				out->count = n + 1;
			}
		} else {
			follow_tails(dwfl, mod, &target, bias, callee, path, n + 1, out);
		}
	}
}

// The tail calls between the frame whose return address is @pc (in @mod) and the previous
// frame, which runs @callee: their return pcs (absolute), innermost first, into @ret.
// Returns how many (0 when there are none or they cannot be told for sure).
static uint32_t tail_calls(Dwfl *dwfl, Dwfl_Module *mod, Dwarf_Addr pc, const char *callee,
			   Dwarf_Addr *ret)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = callee && callee[0] ? dwfl_module_addrdie(mod, pc - 1, &bias) : NULL;
	Dwarf_Die *scopes = NULL;
	int n = cu ? dwarf_getscopes(cu, pc - 1 - bias, &scopes) : 0;
	// The concrete function around the call: dwarf_getscopes follows an inlined call into
	// its abstract definition; the chain of concrete DIEs is dwarf_getscopes_die's.
	Dwarf_Die *concrete = NULL;
	int m = 0;
	for (int i = 0; i < n && !concrete; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag == DW_TAG_subprogram)
			break;
		if (tag == DW_TAG_inlined_subroutine &&
		    (m = dwarf_getscopes_die(&scopes[i], &concrete)) <= 0)
			break;
	}
	Dwarf_Die *in = concrete ? concrete : scopes;
	int count = concrete ? m : n, fn = -1;
	for (int i = 0; i < count && fn < 0; i++)
		if (dwarf_tag(&in[i]) == DW_TAG_subprogram)
			fn = i;
	struct site_search q = {pc - bias, false, {0}, {{0}}, 0, {0}, 0, false, 0};
	if (fn >= 0)
		search_sites(&in[fn], &q, 0);
	free(concrete);
	free(scopes);
	Dwarf_Die origin;
	if (!q.found || !call_origin(&q.site, &origin) ||
	    same_function(die_function(&origin), callee))
		return 0;
	struct tail_chain chain = {0};
	Dwarf_Addr path[TAIL_CHAIN_MAX];
	follow_tails(dwfl, mod, &origin, bias, callee, path, 0, &chain);
	if (chain.paths != 1)
		return 0;
	for (uint32_t i = 0; i < chain.count; i++)
		ret[i] = chain.pcs[chain.count - 1 - i];
	return chain.count;
}

// tail_calls() between return address @pc and @w's callee, through @w's cache.
static uint32_t memo_tail_calls(struct walk *w, Dwfl_Module *mod, Dwarf_Addr pc,
				Dwarf_Addr *ret)
{
	struct tail_memo *slot = w->tails ? &w->tails[(pc ^ (pc >> 12)) % TAIL_CACHE] : NULL;
	if (slot && slot->pc == pc && !strcmp(slot->callee, w->callee)) {
		memcpy(ret, slot->tails, slot->count * sizeof(*ret));
		return slot->count;
	}
	uint32_t n = tail_calls(w->dwfl, mod, pc, w->callee, ret);
	if (slot) {
		slot->pc = pc;
		memcpy(slot->callee, w->callee, sizeof(slot->callee));
		slot->count = n;
		memcpy(slot->tails, ret, n * sizeof(*ret));
	}
	return n;
}

// Gives @fn the frames @lookup names in @mod (or one nameless frame): @f holds tid, pc, sp.
static int give_frames(struct walk *w, Dwfl_Module *mod, Dwarf_Addr lookup,
		       struct pyu_unwound *f, bool tail);

// A return address signed by pointer authentication: elfutils 0.188 keeps the code in the
// address (its aarch64 backend has no mask for it), finds no module there and goes on by frame
// pointers alone. Instead the walk stops at it and records the frame's registers with the
// address stripped, to go on from there (resume_thread). Returns DWARF_CB_ABORT.
static int stop_at_signed(struct walk *w, Dwfl_Frame *state, Dwarf_Addr pc)
{
	struct resume *r = &w->resume;
	r->have = 0;
	int lr = w->t->arch ? w->t->arch->dwarf_lr : -1;
	for (unsigned i = 0; i < RESUME_REGS; i++) {
		Dwarf_Word v;
		if (dwfl_frame_reg(state, i, &v) == 0) {
			// The link register holds the signed return address too; other registers
			// hold data, kept as they are.
			r->regs[i] = (int)i == lr ? v & ~w->pac_mask : v;
			r->have |= 1u << i;
		}
	}
	r->pc = pc & ~w->pac_mask;
	r->pending = r->pc >= 4; // a code and no address: where a lost unwind ends
	return DWARF_CB_ABORT;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	bool activation;
	// A pc of 0 is where an unwinder that lost its way ends, not a frame.
	if (w->frames >= w->max_frames)
		return past_bound(w);
	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	if (w->pac_mask && (pc & w->pac_mask) && w->resume_dwfl)
		return stop_at_signed(w, state, pc);
	// A resumed walk starts at the call instruction (4 bytes before the return address,
	// where the caller's unwind rules are those of the call): the frame is its return.
	if (w->resume.first) {
		w->resume.first = false;
		pc += 4;
		activation = false;
	}
	Dwarf_Word sp = 0;
	if (w->sp_regno < 0 || dwfl_frame_reg(state, (unsigned)w->sp_regno, &sp) != 0)
		sp = 0;
	// A return address points after the call: look up the call itself.
	Dwarf_Addr lookup = activation ? pc : pc - 1;
	struct pyu_unwound f = {w->tid, pc, sp, NULL, NULL, NULL, -1, NULL};
	Dwfl_Module *mod = dwfl_addrmodule(w->dwfl, lookup);
	Dwarf_Addr tails[TAIL_CHAIN_MAX];
	uint32_t ntails = !activation && mod ? memo_tail_calls(w, mod, pc, tails) : 0;
	for (uint32_t i = 0; i < ntails; i++) {
		struct pyu_unwound t = {w->tid, tails[i], sp, NULL, NULL, NULL, -1, NULL};
		if (give_frames(w, dwfl_addrmodule(w->dwfl, tails[i] - 1), tails[i] - 1, &t,
				true) != DWARF_CB_OK)
			return DWARF_CB_ABORT;
	}
	return give_frames(w, mod, lookup, &f, false);
}

// A function jumped through (@tail) is one frame, named as gdb names it: by the innermost
// function at the jump; it does not change the callee the next tail calls lead to.
static int give_frames(struct walk *w, Dwfl_Module *mod, Dwarf_Addr lookup,
		       struct pyu_unwound *fp, bool tail)
{
	struct pyu_unwound f = *fp;
	struct named_pc *slot = w->names ? &w->names[(lookup ^ (lookup >> 12)) % NAME_CACHE]
					 : NULL;
	struct named_frame found[MAX_INLINED + 1] = {{NULL, NULL, -1}};
	const struct named_frame *frames = found;
	uint32_t count = 1;
	// An empty entry holds pc 0, which a lost unwinder can give (a return address of 1).
	if (slot && lookup && slot->pc == lookup && slot->count) {
		f.library = slot->library;
		frames = slot->frames;
		count = slot->count;
	} else {
		if (mod) {
			f.library = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
			count = name_frames(w, mod, lookup, found);
		}
		// The file as the target maps it: a core's modules are named by the loader's
		// short names (libc.so.6), a live process's by full paths; both name the same
		// file in their mappings, the form every view shows.
		const struct pyu_mapping *m = pyu_target_find_mapping(w->t, lookup);
		if (m && m->path && m->path[0] == '/')
			f.library = m->path;
		if (slot && count <= NAMED_FRAMES) {
			slot->pc = lookup;
			slot->library = f.library;
			slot->count = count;
			memcpy(slot->frames, found, count * sizeof(*found));
		}
	}
	const char *real = frames[count - 1].function;
	if (!tail)
		snprintf(w->callee, sizeof(w->callee), "%s", real ? real : "");
	for (uint32_t i = 0; i < (tail ? 1 : count); i++) {
		if (w->frames >= w->max_frames)
			return past_bound(w);
		f.function = frames[i].function;
		f.file = frames[i].file;
		f.line = frames[i].line;
		w->frames++;
		f.artificial = tail;
		f.inlined = !tail && i + 1 < count;
		w->err = w->fn(w->arg, &f);
		if (w->err)
			return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

// The resume Dwfl's one thread: the walk's current one, starting from w->resume.
static pid_t resume_next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	(void)dwfl;
	if (*thread_argp)
		return 0;
	struct walk *w = dwfl_arg;
	*thread_argp = w;
	return (pid_t)w->tid;
}

static bool resume_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	(void)dwfl;
	struct walk *w = dwfl_arg;
	unsigned char buf[8];
	struct pyu_error *err = pyu_target_read(w->t, addr, buf, sizeof(buf));
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	*result = pyu_le64(buf);
	return true;
}

static bool resume_set_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct walk *w = thread_arg;
	const struct resume *r = &w->resume;
	for (unsigned i = 0; i < RESUME_REGS; i++)
		if ((r->have >> i & 1) && !dwfl_thread_state_registers(thread, (int)i, 1, &r->regs[i]))
			return false;
	dwfl_thread_state_register_pc(thread, r->pc - 4);
	return true;
}

static const Dwfl_Thread_Callbacks resume_callbacks = {
	.next_thread = resume_next_thread,
	.memory_read = resume_memory_read,
	.set_initial_registers = resume_set_registers,
};

static void report_core_modules(struct pyu_target *t, Dwfl *dwfl, Elf *elf, bool *ok);

// A second Dwfl over the same core and files, whose one thread starts wherever w->resume
// says: a walk stopped at a signed return address goes on there. False when it cannot be
// made (the walk then goes on as elfutils does, by frame pointers).
static bool open_resume(struct walk *w)
{
	if (w->resume_dwfl || w->resume_failed || !w->core_elf)
		return w->resume_dwfl != NULL;
	bool ok = true;
	Dwfl *d = dwfl_begin(&core_callbacks);
	if (d) {
		dwfl_report_begin(d);
		report_core_modules(w->t, d, w->core_elf, &ok);
		if (!ok || dwfl_report_end(d, NULL, NULL) != 0 ||
		    !dwfl_attach_state(d, w->core_elf, (pid_t)(w->tid > 0 ? w->tid : 1),
				       &resume_callbacks, w))
			ok = false;
	}
	if (!d || !ok) {
		if (d)
			dwfl_end(d);
		w->resume_failed = true;
		return false;
	}
	w->resume_dwfl = d;
	return true;
}

// Unwinds thread @thread of @w, resuming past each signed return address (stop_at_signed)
// from the registers of its frame. Each resume gives at least one frame (its pc is stripped),
// so the frame bound ends it. Returns dwfl_thread_getframes()'s result for the last part.
static int walk_thread(struct walk *w, Dwfl_Thread *thread)
{
	w->resume.pending = w->resume.first = false;
	int rc = dwfl_thread_getframes(thread, frame_cb, w);
	while (!w->err && w->resume.pending && w->frames < w->max_frames) {
		w->resume.pending = false;
		w->resume.first = true;
		rc = dwfl_getthread_frames(w->resume_dwfl, (pid_t)w->tid, frame_cb, w);
		w->resume.first = false;
	}
	return rc;
}

static int thread_cb(Dwfl_Thread *thread, void *arg)
{
	struct walk *w = arg;
	w->tid = dwfl_thread_tid(thread);
	w->frames = 0;
	w->callee[0] = '\0';
	if (w->pac_mask)
		open_resume(w);
	int rc = walk_thread(w, thread);
	if (w->err)
		return DWARF_CB_ABORT;
	// An unwinder stops with an error at the outermost frame; only a thread with no frame
	// at all failed.
	if (rc != 0 && w->frames == 0) {
		struct pyu_unwound f = {w->tid, 0, 0, NULL, NULL, NULL, -1, dwfl_errmsg(-1)};
		w->err = w->fn(w->arg, &f);
		if (w->err)
			return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

#define MAPS_LINE_MAX 8192 // longer lines (a path near PATH_MAX) are not file mappings we use

struct proc_module {
	char *path;
	uint64_t low, high;
	uint64_t ino;
	unsigned dev_major, dev_minor;
};

// Reports @m to @dwfl and forgets it. Returns false when elfutils refused it.
static bool report_module(Dwfl *dwfl, struct proc_module *m)
{
	bool ok = true;
	if (m->path)
		ok = dwfl_report_module(dwfl, m->path, m->low, m->high) != NULL;
	free(m->path);
	m->path = NULL;
	return ok;
}

// Reports the files a live process maps, as dwfl_linux_proc_report() does, with one
// difference: a module starts only at a mapping of its file's start (offset 0). libffi 3.5
// maps a page of its own text (its static closure trampolines) by itself, below the library;
// elfutils took that page for the library's start, placed every address of libffi 8 KiB off,
// and unwound out of its closure frames with the wrong CFI into garbage. gdb places modules by
// their load address and is not misled. Such a stray page becomes no module: only a pc inside
// the trampoline itself (a few instructions) cannot be unwound. The vDSO is reported under the
// name dwfl_linux_proc_find_elf() reads from the process's memory.
static int report_proc_maps(Dwfl *dwfl, pid_t pid)
{
	char name[64];
	snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(name, "r");
	if (!f)
		return -1;
	struct proc_module cur = {0};
	char *line = malloc(MAPS_LINE_MAX);
	int rc = line ? 0 : -1;
	while (!rc && fgets(line, MAPS_LINE_MAX, f)) {
		size_t len = strlen(line);
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		else if (!feof(f)) { // cut: skip the rest of it
			int c;
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		uint64_t start, end, offset, ino;
		unsigned dmajor, dminor;
		int at = -1;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &end, &offset, &dmajor, &dminor, &ino, &at) < 6 || at <= 0)
			continue;
		const char *file = line + at + strspn(line + at, " \t");
		if (!strcmp(file, "[vdso]")) {
			snprintf(name, sizeof(name), "[vdso: %d]", (int)pid);
			if (!report_module(dwfl, &cur) || !dwfl_report_module(dwfl, name, start, end))
				rc = -1;
			continue;
		}
		if (file[0] != '/' || (ino == 0 && dmajor == 0 && dminor == 0))
			continue;
		if (cur.path && ino == cur.ino && dmajor == cur.dev_major &&
		    dminor == cur.dev_minor && !strcmp(file, cur.path)) {
			cur.high = end;
			continue;
		}
		if (!report_module(dwfl, &cur))
			rc = -1;
		if (offset != 0)
			continue; // a piece of a file away from the file's start (above)
		cur = (struct proc_module){strdup(file), start, end, ino, dmajor, dminor};
		if (!cur.path)
			rc = -1;
	}
	if (!report_module(dwfl, &cur))
		rc = -1;
	free(line);
	fclose(f);
	return rc;
}

static struct pyu_error *dwfl_failure(const char *what)
{
	return pyu_error_create(PYU_ERR_IO, "elfutils could not %s: %s", what, dwfl_errmsg(-1));
}

// A core that names no files: its objects as the target found them (linkmap.c: the dynamic
// linker's list, the files here after the sysroot and search directories), one module per
// file at the start of its first mapping. A file that cannot be reported is left out (its
// frames are unnamed and the unwind may stop there).
static void report_mapped_files(struct pyu_target *t, Dwfl *dwfl)
{
	for (size_t i = 0; i < t->mapping_count; i++) {
		const struct pyu_mapping *m = &t->mappings[i];
		if (!m->path || !m->local_path || m->offset != 0 || m->path[0] != '/')
			continue;
		bool first = true;
		for (size_t k = 0; k < i && first; k++)
			if (t->mappings[k].path && strcmp(t->mappings[k].path, m->path) == 0)
				first = false;
		if (first)
			dwfl_report_elf(dwfl, m->path, m->local_path, -1, m->start, false);
	}
}

// A core's modules: the files the target found from the link map when the core names none,
// else those of its NT_FILE note. *ok false when elfutils could not read the note.
static void report_core_modules(struct pyu_target *t, Dwfl *dwfl, Elf *elf, bool *ok)
{
	if (t->names_from_linkmap)
		report_mapped_files(t, dwfl);
	else if (dwfl_core_file_report(dwfl, elf, t->exe_local_path) < 0)
		*ok = false;
}

// The bits of a return address in core @t that may hold a pointer-authentication code: the
// core's NT_ARM_PAC_MASK, else (qemu-user's cores have no such note) every bit from the width
// of the highest address the core maps up. The code sits above the virtual address size, which
// is at least that width, and no code address is above the highest mapping: so the mask strips
// every code and keeps every address. 0 on architectures that do not sign return addresses.
static uint64_t pac_mask(const struct pyu_target *t)
{
	if (!t->arch || !t->arch->signed_return_addresses)
		return 0;
	if (t->pac_code_mask)
		return t->pac_code_mask;
	uint64_t top = 0;
	for (size_t i = 0; i < t->mapping_count; i++)
		if (t->mappings[i].end - 1 > top)
			top = t->mappings[i].end - 1;
	unsigned bits = 0;
	while (bits < 64 && (top >> bits))
		bits++;
	return bits >= 64 || bits < 32 ? 0 : ~((UINT64_C(1) << bits) - 1);
}

// ---- a core's threads and memory, read by the target ------------------------------------------
//
// elfutils' own reader of a core (dwfl_core_file_attach) fetches every stack word through
// elf_getdata_rawchunk, which (0.188) first searches every chunk the core's Elf handle has
// handed out before - one more per word read - so unwinding a stack costs the square of its
// depth: 10,000 frames took seconds, a 3.10 thread 30,000 Python frames deep (180,000 native
// frames) most of an hour. The target reads the same bytes through its segment table and page
// cache at a constant cost per read, and a core's NT_PRSTATUS registers are kept by the target
// (target_core.c), so the core's threads are handed to elfutils from here.

struct core_threads;

// One thread of the core: its record (registers) and the reader it belongs to.
struct core_thread {
	struct core_threads *c;
	const struct pyu_thread_record *rec;
};

// The core's threads that have registers, in the order of its notes.
struct core_threads {
	struct pyu_target *t;
	struct core_thread *list;
	size_t count;
};

// Lists the threads of @c->t that have registers. Returns false when there are none or out
// of memory (elfutils' own reader is used then).
static bool core_threads_init(struct core_threads *c, struct pyu_target *t)
{
	*c = (struct core_threads){t, NULL, 0};
	const struct pyu_arch *a = t->arch;
	if (!a || !a->dwarf_regs || !t->status_count)
		return false;
	c->list = calloc(t->status_count, sizeof(*c->list));
	if (!c->list)
		return false;
	for (size_t i = 0; i < t->status_count; i++) {
		const struct pyu_thread_record *r = &t->statuses[i];
		if (r->greg_count > a->pc_word && r->tid > 0 && r->tid <= INT32_MAX)
			c->list[c->count++] = (struct core_thread){c, r};
	}
	return c->count > 0;
}

static pid_t core_next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	(void)dwfl;
	struct core_threads *c = dwfl_arg;
	struct core_thread *prev = *thread_argp;
	size_t i = prev ? (size_t)(prev - c->list) + 1 : 0;
	if (i >= c->count)
		return 0;
	*thread_argp = &c->list[i];
	return (pid_t)c->list[i].rec->tid;
}

static bool core_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	(void)dwfl;
	struct core_threads *c = dwfl_arg;
	uint64_t word;
	struct pyu_error *err = pyu_target_read(c->t, addr, &word, sizeof(word));
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	*result = word; // both architectures are 64-bit little-endian, as this library's host
	return true;
}

#define CORE_DWARF_REGS 64 // DWARF registers an architecture's table may name

static bool core_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct core_thread *ct = thread_arg;
	const struct pyu_arch *a = ct->c->t->arch;
	const struct pyu_thread_record *r = ct->rec;
	Dwarf_Word regs[CORE_DWARF_REGS];
	if (!a || !a->dwarf_regs || a->dwarf_reg_count > CORE_DWARF_REGS ||
	    a->pc_word >= r->greg_count)
		return false;
	for (uint32_t i = 0; i < a->dwarf_reg_count; i++) {
		if (a->dwarf_regs[i] >= r->greg_count)
			return false;
		regs[i] = r->gregs[a->dwarf_regs[i]];
	}
	if (!dwfl_thread_state_registers(thread, 0, a->dwarf_reg_count, regs))
		return false;
	dwfl_thread_state_register_pc(thread, r->gregs[a->pc_word]);
	return true;
}

static const Dwfl_Thread_Callbacks core_thread_callbacks = {
	.next_thread = core_next_thread,
	.memory_read = core_memory_read,
	.set_initial_registers = core_initial_registers,
};


struct pyu_error *pyu_target_unwind(struct pyu_target *t, pyu_unwind_fn fn, void *arg)
{
	if (!t || !fn || (!t->live_pid && t->core_fd < 0))
		return pyu_error_create(PYU_ERR_ARGUMENT,
					"native frames are unwound only in live processes and cores");
	struct walk w = {0};
	struct core_threads threads = {0};
	w.t = t;
	w.fn = fn;
	w.arg = arg;
	w.sp_regno = t->arch ? t->arch->dwarf_sp : -1;
	w.max_frames = PYU_UNWIND_MAX_FRAMES;
	Elf *elf = NULL;
	struct pyu_error *err = NULL;
	if (t->live_pid) {
		w.dwfl = dwfl_begin(&proc_callbacks);
		if (!w.dwfl)
			return dwfl_failure("start");
		dwfl_report_begin(w.dwfl);
		if (report_proc_maps(w.dwfl, (pid_t)t->live_pid) != 0)
			err = dwfl_failure("read the process's mappings");
		else if (dwfl_report_end(w.dwfl, NULL, NULL) != 0)
			err = dwfl_failure("list the process's modules");
		else if (dwfl_linux_proc_attach(w.dwfl, t->live_pid, true) != 0)
			err = dwfl_failure("attach to the process (it must be held stopped)");
	} else {
		elf_version(EV_CURRENT);
		elf = elf_begin(t->core_fd, ELF_C_READ_MMAP, NULL);
		w.dwfl = elf ? dwfl_begin(&core_callbacks) : NULL;
		if (!w.dwfl) {
			if (elf)
				elf_end(elf);
			return pyu_error_create(PYU_ERR_IO, "elfutils could not open the core: %s",
						elf_errmsg(-1));
		}
		dwfl_report_begin(w.dwfl);
		bool ok = true;
		report_core_modules(t, w.dwfl, elf, &ok);
		if (!ok)
			err = dwfl_failure("read the core's mappings");
		if (!err && dwfl_report_end(w.dwfl, NULL, NULL) != 0)
			err = dwfl_failure("list the core's modules");
		else if (!err && core_threads_init(&threads, t)) {
			if (!dwfl_attach_state(w.dwfl, elf, (pid_t)threads.list[0].rec->tid,
					       &core_thread_callbacks, &threads))
				err = dwfl_failure("read the core's threads");
		} else if (!err && dwfl_core_file_attach(w.dwfl, elf) < 0) {
			err = dwfl_failure("read the core's threads");
		}
	}
	w.core_elf = elf;
	w.pac_mask = elf ? pac_mask(t) : 0;
	if (!err)
		w.names = calloc(NAME_CACHE, sizeof(*w.names)); // NULL: each pc looked up afresh
	if (!err)
		w.tails = calloc(TAIL_CACHE, sizeof(*w.tails));
	if (!err && dwfl_getthreads(w.dwfl, thread_cb, &w) != 0 && !w.err)
		err = dwfl_failure("list the threads");
	if (w.err) {
		pyu_error_destroy(err);
		err = w.err;
	}
	dwfl_end(w.dwfl);
	if (w.resume_dwfl)
		dwfl_end(w.resume_dwfl);
	free(threads.list);
	free(w.names);
	free(w.tails);
	while (w.paths) {
		struct joined_path *next = w.paths->next;
		free(w.paths);
		w.paths = next;
	}
	if (elf)
		elf_end(elf);
	return err;
}

#endif
