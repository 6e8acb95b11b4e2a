// runtime.c - finding the CPython interpreter in a target and deciding its version and build.
// Tried in order, each failure remembered for the final error: ELF symbols of libpython or
// the executable (_PyRuntime; interp_head/_PyThreadState_Current on 2.7/3.6, or decoding the
// exported PyInterpreterState_Head() of a stripped build), the .PyRuntime section, and last the
// "xdebugpy" cookie of _Py_DebugOffsets (3.13+) in writable memory. Mapped files are read from
// disk through their local path, so the same code serves live processes and core files.
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf.h"
#include "file_kept.h"
#include "runtime.h"
#include "symbols.h"

#define MAX_CANDIDATES 8
#define COOKIE_SCAN_MAX (256u << 20) // bytes of writable memory searched for the cookie
#define COOKIE_CANDIDATES 16         // cookie look-alikes examined before giving up
#define COOKIE_CHUNK (256u << 10)

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

// Parses "pythonX.Y<flags>" out of a file name such as libpython3.6m.so.1.0, python3.14d or
// python2.7. Returns 0 when the name carries no version; *debug / *ft from the ABI flags.
uint32_t pyu_version_from_name(const char *path, bool *debug, bool *ft)
{
	const char *name = base_name(path);
	const char *p = strstr(name, "python");
	if (!p)
		return 0;
	p += 6;
	if (!isdigit((unsigned char)p[0]) || p[1] != '.' || !isdigit((unsigned char)p[2]))
		return 0;
	unsigned major = (unsigned)(p[0] - '0');
	char *end;
	unsigned long minor = strtoul(p + 2, &end, 10);
	if (minor > 99 || (major != 2 && major != 3))
		return 0;
	for (const char *f = end; *f && *f != '.' && *f != '-'; f++) {
		if (*f == 'd')
			*debug = true;
		else if (*f == 't')
			*ft = true;
		else if (*f != 'm' && *f != 'u')
			break;
	}
	return (uint32_t)(major << 24 | minor << 16);
}

struct pyu_error *pyu_runtime_init_layout(struct pyu_runtime *rt, uint32_t version_hex,
					  bool debug_build)
{
	const struct pyu_layout *l = pyu_layout_for_version(version_hex);
	if (!l)
		return pyu_error_create(PYU_ERR_UNSUPPORTED,
					"CPython %u.%u is not supported (no layout table and no "
					"_Py_DebugOffsets)",
					version_hex >> 24, (version_hex >> 16) & 0xff);
	struct pyu_layout copy = *l;
	if (debug_build && copy.trace_refs_in_debug)
		pyu_layout_apply_trace_refs(&copy);
	struct pyu_error *err = pyu_layout_validate(&copy);
	if (err)
		return err;
	rt->layout = copy;
	rt->version_hex = version_hex;
	rt->debug_build = debug_build;
	return NULL;
}

// What one ELF file told us, at the target's addresses.
struct found {
	uint64_t runtime;        // _PyRuntime
	uint64_t interp_head;    // &interp_head (2.7/3.6)
	uint64_t tstate_current; // &_PyThreadState_Current
	uint64_t gc_generation0; // &_PyGC_generation0 (2.7/3.6: the collector's lists)
	uint64_t code_type;
	uint64_t hash_secret;    // &_Py_HashSecret
	uint64_t version_text[5]; // places that may hold the "X.Y.Z" text (see find_version_text)
	size_t version_texts;
	// Py_Version, read only when asked for (py_version_of): 3.13+ take the version from
	// their debug offsets, and the read was a system call of every fresh handle.
	uint64_t py_version_at;  // its address, 0 without the symbol
	uint32_t py_version_file; // its value in the file (0: unread)
	bool py_version_read;
	uint32_t py_version;
	uint32_t name_version;   // from the file name
	uint32_t presence_version; // from which API symbols exist
	bool debug, ft;
	char how[512];
};

// What an ELF file says about an interpreter in it, at the file's own virtual addresses (0:
// absent) and nothing of any target: what examine() needs of the file, kept (kept_facts)
// between handles of the library so that the next handle on the same file reads none of it.
enum runtime_how { HOW_NONE, HOW_RUNTIME_SYMBOL, HOW_RUNTIME_SECTION, HOW_HEAD_SYMBOL,
		   HOW_HEAD_DECODED };
struct file_facts {
	enum runtime_how how;
	uint64_t runtime, interp_head, tstate_current, gc_generation0, code_type, py_version;
	uint64_t hash_secret;
	uint32_t py_version_file;
	uint64_t version_text[5];
	size_t version_texts;
	bool debug_symbol;
	uint32_t presence_version;
	struct pyu_elf_load load;
};

static bool has_symbol(const struct pyu_symsrc *src, const char *name,
		       struct pyu_elf_symbol *sym)
{
	struct pyu_elf_symbol tmp;
	return pyu_symsrc_lookup(src, name, sym ? sym : &tmp);
}

static bool src_read(const struct pyu_symsrc *src, uint64_t vaddr, void *buf, size_t len)
{
	return pyu_symsrc_read(src, vaddr, buf, len);
}

// PyInterpreterState_Head() is `mov rax, [rip+disp32]; ret` (maybe after endbr64): the load's
// target is the static interp_head in 2.7/3.6 and _PyRuntime.interpreters.head from 3.7 on.
// Returns its file address or 0.
static uint64_t decode_interp_head(const struct pyu_symsrc *src)
{
	struct pyu_elf_symbol sym;
	uint8_t code[16];
	if (!has_symbol(src, "PyInterpreterState_Head", &sym) ||
	    !src_read(src, sym.value, code, sizeof(code)))
		return 0;
	size_t at = 0;
	if (code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa)
		at = 4; // endbr64
	if (code[at] != 0x48 || code[at + 1] != 0x8b || code[at + 2] != 0x05 || code[at + 7] != 0xc3)
		return 0;
	int32_t disp;
	memcpy(&disp, code + at + 3, 4);
	return sym.value + at + 7 + (uint64_t)(int64_t)disp;
}

// A plausible PY_VERSION_HEX: 3.x with a release level of a, b, c or f; else 0.
static uint32_t plausible_version(uint32_t v)
{
	return (v >> 24) != 3 || ((v >> 4) & 0xf) < 0xa ? 0 : v;
}

// The u32 Py_Version of @f: the target's first, the file's as a fallback; 0 when there is
// none or it is implausible. Read once.
static uint32_t py_version_of(struct pyu_target *t, struct found *f)
{
	if (f->py_version_read || !f->py_version_at)
		return f->py_version;
	f->py_version_read = true;
	uint32_t v = 0;
	struct pyu_error *err = pyu_target_read_u32(t, f->py_version_at, &v);
	if (err) {
		pyu_error_destroy(err);
		v = f->py_version_file;
	}
	f->py_version = plausible_version(v);
	return f->py_version;
}

// Where the full version text may be read: Py_GetVersion()'s static buffer (a LOCAL symbol,
// in .symtab only) and, for stripped builds, every RIP-relative `lea` in the first bytes of the
// exported Py_GetVersion(): it loads the address of that buffer and of the PY_VERSION literal
// it formats ("2.7.18"). Each candidate is read and parsed later; wrong ones fail to parse.
static void find_version_text(const struct pyu_symsrc *src, struct file_facts *ff)
{
	struct pyu_elf_symbol sym;
	if ((has_symbol(src, "version.0", &sym) || has_symbol(src, "version", &sym)) &&
	    sym.type == 1 && sym.size >= 16)
		ff->version_text[ff->version_texts++] = sym.value;
	uint8_t code[128];
	if (!has_symbol(src, "Py_GetVersion", &sym) || !src_read(src, sym.value, code, sizeof(code)))
		return;
	for (size_t i = 0; i + 7 <= sizeof(code) && ff->version_texts < 5; i++) {
		// REX.W (+R) 8D /r with mod 00, rm 101: lea reg, [rip + disp32]
		if ((code[i] != 0x48 && code[i] != 0x4c) || code[i + 1] != 0x8d ||
		    (code[i + 2] & 0xc7) != 0x05)
			continue;
		int32_t disp;
		memcpy(&disp, code + i + 3, 4);
		ff->version_text[ff->version_texts++] = sym.value + i + 7 + (uint64_t)(int64_t)disp;
		i += 6;
	}
}

// Everything one ELF image says about an interpreter in it, from its symbols and bytes alone.
static void file_facts(const struct pyu_symsrc *src, struct file_facts *ff)
{
	struct pyu_elf_symbol sym;
	struct pyu_elf_section sec;
	memset(ff, 0, sizeof(*ff));
	if (has_symbol(src, "_PyRuntime", &sym)) {
		ff->runtime = sym.value;
		ff->how = HOW_RUNTIME_SYMBOL;
	} else if (src->elf) {
		struct pyu_error *err = pyu_elf_find_section(src->elf, ".PyRuntime", &sec);
		if (!err) {
			ff->runtime = sec.addr;
			ff->how = HOW_RUNTIME_SECTION;
		} else {
			pyu_error_destroy(err);
		}
	}
	if (!ff->how) {
		if (has_symbol(src, "interp_head", &sym)) {
			ff->interp_head = sym.value;
			ff->how = HOW_HEAD_SYMBOL;
		} else {
			ff->interp_head = decode_interp_head(src);
			if (ff->interp_head)
				ff->how = HOW_HEAD_DECODED;
		}
	}
	if (has_symbol(src, "_PyThreadState_Current", &sym))
		ff->tstate_current = sym.value;
	if (has_symbol(src, "_PyGC_generation0", &sym))
		ff->gc_generation0 = sym.value;
	if (has_symbol(src, "PyCode_Type", &sym))
		ff->code_type = sym.value;
	if (has_symbol(src, "_Py_HashSecret", &sym) && sym.size >= 16)
		ff->hash_secret = sym.value;
	if (has_symbol(src, "Py_Version", &sym)) {
		ff->py_version = sym.value;
		if (!src_read(src, sym.value, &ff->py_version_file, 4))
			ff->py_version_file = 0;
	}
	find_version_text(src, ff);
	ff->debug_symbol = has_symbol(src, "_Py_NegativeRefcount", NULL);
	// API symbols that appeared in a given release tell 3.7 - 3.10 apart when neither
	// Py_Version nor the file name says which one this is.
	if (ff->py_version)
		ff->presence_version = 0x030b0000;
	else if (has_symbol(src, "Py_NewRef", NULL))
		ff->presence_version = 0x030a0000;
	else if (has_symbol(src, "PyFrame_GetCode", NULL))
		ff->presence_version = 0x03090000;
	else if (has_symbol(src, "PyVectorcall_Call", NULL))
		ff->presence_version = 0x03080000;
	else if (has_symbol(src, "PyContext_New", NULL))
		ff->presence_version = 0x03070000;
	else if (has_symbol(src, "PyString_FromString", NULL))
		ff->presence_version = 0x02070000;
	else if (has_symbol(src, "PyBytes_FromString", NULL))
		ff->presence_version = 0x03060000; // or older 3.x, which we do not support
}

static uint64_t at(uint64_t bias, uint64_t vaddr)
{
	return vaddr ? bias + vaddr : 0;
}

// What @ff, of the image @name loaded with @bias, says about the target's interpreter.
static void examine(const struct file_facts *ff, uint64_t bias, const char *name,
		    struct found *f, char *errs, size_t errs_len)
{
	f->name_version = pyu_version_from_name(name, &f->debug, &f->ft);
	switch (ff->how) {
	case HOW_RUNTIME_SYMBOL:
		snprintf(f->how, sizeof(f->how), "symbol _PyRuntime in %s", name);
		break;
	case HOW_RUNTIME_SECTION:
		snprintf(f->how, sizeof(f->how), "section .PyRuntime of %s", name);
		break;
	case HOW_HEAD_SYMBOL:
		snprintf(f->how, sizeof(f->how), "symbol interp_head in %s", name);
		break;
	case HOW_HEAD_DECODED:
		snprintf(f->how, sizeof(f->how),
			 "interp_head decoded from PyInterpreterState_Head() in %s", name);
		break;
	case HOW_NONE:
		pyu_appendf(errs, errs_len,
			"%s: no _PyRuntime/interp_head symbol, no .PyRuntime section; ", name);
		break;
	}
	f->runtime = ff->how == HOW_RUNTIME_SYMBOL || ff->how == HOW_RUNTIME_SECTION
		? bias + ff->runtime : 0;
	f->interp_head = ff->how == HOW_HEAD_SYMBOL || ff->how == HOW_HEAD_DECODED
		? bias + ff->interp_head : 0;
	f->tstate_current = at(bias, ff->tstate_current);
	f->gc_generation0 = at(bias, ff->gc_generation0);
	f->code_type = at(bias, ff->code_type);
	f->hash_secret = at(bias, ff->hash_secret);
	f->py_version_at = at(bias, ff->py_version);
	f->py_version_file = ff->py_version_file;
	for (size_t i = 0; i < ff->version_texts; i++)
		f->version_text[i] = bias + ff->version_text[i];
	f->version_texts = ff->version_texts;
	if (ff->debug_symbol)
		f->debug = true;
	f->presence_version = ff->presence_version;
}

// The facts of interpreter files examined before, by the files' identity, for the life of the
// library: a sampler opens a fresh handle per snapshot, and opening the interpreter's ELF file
// (headers, dynamic symbols: 115 KB for Debian's python3.15) was a fifth of such a handle's
// time. An entry serves only a file of the same device, inode, size and times (stat() of the
// path at each use), so a file replaced or rewritten in place is examined again.
PYU_KEPT_TABLE(kept_facts, 8, struct file_facts);

static void examine_file(struct pyu_target *t, const struct pyu_mapping *m, struct found *f,
			 char *errs, size_t errs_len)
{
	struct file_facts ff;
	struct pyu_file_id id;
	struct pyu_error *err = NULL;
	// A live process's executable, its identity from /proc/PID/exe (the very file it runs):
	// facts kept of that file need neither the file here nor a look at it (two stat()s).
	if (!pyu_target_exe_id(t, m, &id) || !pyu_kept_get(&kept_facts, &id, &ff)) {
		// A local file of another build (a core from another machine, a library updated
		// since) would give wrong addresses: leave it to the in-memory route.
		if (!pyu_target_file_matches(t, m)) {
			pyu_appendf(errs, errs_len, "%s: the file here is another build than the "
				"target's (build IDs differ); ", m->path);
			return;
		}
		if (!pyu_file_id(m->local_path, &id) || !pyu_kept_get(&kept_facts, &id, &ff)) {
			struct pyu_symsrc src = {0};
			err = pyu_elf_open(m->local_path, &src.elf);
			if (!err) {
				file_facts(&src, &ff);
				pyu_elf_load_info(src.elf, &ff.load);
				pyu_elf_file_id(src.elf, &id); // what was read, whatever the path is now
				pyu_kept_put(&kept_facts, &id, &ff, sizeof(ff));
				pyu_elf_close(src.elf);
			}
		}
	}
	uint64_t bias = 0;
	if (!err)
		err = pyu_elf_load_bias_of(t, &ff.load, m->path, &bias);
	if (err) {
		pyu_appendf(errs, errs_len, "%s: %s; ", m->path, pyu_error_message(err));
		pyu_error_destroy(err);
		return;
	}
	examine(&ff, bias, m->path, f, errs, errs_len);
	if (f->how[0] && strcmp(m->path, m->local_path) != 0)
		pyu_appendf(f->how, sizeof(f->how), " (the file here: %s)", m->local_path);
}

// The ELF images in target memory that hold an interpreter: for targets that name no files.
static bool examine_images(struct pyu_target *t, struct found *best, char *errs,
			   size_t errs_len)
{
	size_t count = pyu_target_mapping_count(t), probed = 0;
	bool any = false;
	for (size_t i = 0; i < count && probed < PYU_MAX_IMAGES_PROBED; i++) {
		const struct pyu_mapping *m = pyu_target_mapping(t, i);
		// A live process's file is looked at first (it may be reached through /proc); for
		// others a missing file is not worth the build-ID search (debuginfod).
		if ((m->start & 0xfff) ||
		    (m->path && m->local_path &&
		     (m->local_check == PYU_LOCAL_PENDING || access(m->local_path, R_OK) == 0) &&
		     pyu_target_file_matches(t, m) && access(m->local_path, R_OK) == 0))
			continue; // files with a matching local copy were examined already
		probed++;
		struct pyu_image img = {0};
		bool ok = pyu_image_load(t, m->start, &img);
		if (ok && (has_symbol(&img.src, "_PyRuntime", NULL) ||
			   has_symbol(&img.src, "PyInterpreterState_Head", NULL))) {
			struct found f = {0};
			struct file_facts ff;
			char dummy[8] = "";
			file_facts(&img.src, &ff);
			examine(&ff, img.src.bias, img.name, &f, dummy, sizeof(dummy));
			if (f.runtime || f.interp_head) {
				*best = f;
				any = true;
			}
		}
		pyu_image_release(&img);
		if (any)
			return true;
	}
	pyu_appendf(errs, errs_len, "no interpreter in the ELF images of %zu mappings in memory; ",
		probed);
	return false;
}

// Files worth examining, best first: libpython*, then files named like python, then the
// lowest-mapped file (usually the executable, whatever its name).
static size_t candidates(const struct pyu_target *t, const struct pyu_mapping **out)
{
	size_t n = 0;
	size_t count = pyu_target_mapping_count(t);
	for (int pass = 0; pass < 3 && n < MAX_CANDIDATES; pass++) {
		for (size_t i = 0; i < count && n < MAX_CANDIDATES; i++) {
			const struct pyu_mapping *m = pyu_target_mapping(t, i);
			if (!m->path || !m->local_path || m->path[0] == '[')
				continue;
			const char *bn = base_name(m->path);
			bool want = pass == 0 ? strncmp(bn, "libpython", 9) == 0
				  : pass == 1 ? strstr(bn, "python") != NULL
					      : true;
			if (!want)
				continue;
			bool dup = false;
			for (size_t k = 0; k < n; k++)
				if (strcmp(out[k]->path, m->path) == 0)
					dup = true;
			if (dup)
				continue;
			// The mapping that holds the file's start names its load address.
			const struct pyu_mapping *fm = pyu_target_find_file_mapping(t, m->path);
			out[n++] = fm ? fm : m;
			if (pass == 2)
				break; // only the lowest-mapped file
		}
	}
	return n;
}

// Reads the debug offsets block at @addr and builds the layout from it.
static struct pyu_error *use_debug_offsets(struct pyu_target *t, uint64_t addr,
					   struct pyu_runtime *rt)
{
	uint8_t buf[PYU_DEBUG_OFFSETS_MAX];
	size_t len = sizeof(buf);
	struct pyu_error *err = pyu_target_read(t, addr, buf, len);
	if (err) {
		// The block is shorter than our read near the end of a mapping: retry with less.
		pyu_error_destroy(err);
		len = 1024;
		err = pyu_target_read(t, addr, buf, len);
		if (err)
			return pyu_error_wrap(err, "reading _Py_DebugOffsets at 0x%" PRIx64, addr);
	}
	struct pyu_layout l;
	bool ft = false;
	char notes[512];
	err = pyu_layout_from_debug_offsets(buf, len, &l, &ft, notes, sizeof(notes));
	if (err)
		return err;
	uint64_t version;
	memcpy(&version, buf + 8, 8);
	rt->layout = l;
	rt->version_hex = (uint32_t)version;
	rt->version_exact = true;
	rt->free_threaded = ft;
	if (notes[0])
		pyu_appendf(rt->notes, sizeof(rt->notes), "debug offsets differ from the static table: %s",
			notes);
	return NULL;
}

// Whether the debug offsets block at @addr leads to an interpreter: its runtime_state group
// (right after the 24-byte header in 3.13 - 3.15) names the offset of interpreters.head, which
// must hold a readable, aligned pointer. Copies of the block that are not the live _PyRuntime
// (a static initializer, a buffer) fail this.
static bool cookie_leads_somewhere(struct pyu_target *t, uint64_t addr)
{
	uint64_t head_off, head, word;
	struct pyu_error *err = pyu_target_read_u64(t, addr + 40, &head_off);
	if (!err && head_off < (1u << 20))
		err = pyu_target_read_u64(t, addr + head_off, &head);
	else if (!err)
		return false;
	if (!err && head && !(head & 7))
		err = pyu_target_read_u64(t, head, &word);
	else if (!err)
		return false;
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	return true;
}

// Last resort for 3.13+: the cookie at the start of _PyRuntime, searched in writable memory.
// The first block that leads to an interpreter wins; failing that, the first block seen.
static uint64_t scan_for_cookie(struct pyu_target *t, char *errs, size_t errs_len)
{
	uint8_t *chunk = malloc(COOKIE_CHUNK);
	if (!chunk)
		return 0;
	uint64_t scanned = 0, found = 0, first = 0;
	unsigned seen = 0;
	size_t count = pyu_target_mapping_count(t);
	// File-backed data first (where _PyRuntime lives), anonymous memory second.
	for (int pass = 0; pass < 2 && !found; pass++) {
		for (size_t i = 0; i < count && !found && scanned < COOKIE_SCAN_MAX; i++) {
			const struct pyu_mapping *m = pyu_target_mapping(t, i);
			if (!m->writable || (pass == 0) != (m->path && m->path[0] != '['))
				continue;
			for (uint64_t a = m->start; a < m->end && !found && scanned < COOKIE_SCAN_MAX;
			     a += COOKIE_CHUNK) {
				uint64_t len = m->end - a < COOKIE_CHUNK ? m->end - a : COOKIE_CHUNK;
				scanned += len;
				struct pyu_error *err = pyu_target_read(t, a, chunk, (size_t)len);
				if (err) {
					pyu_error_destroy(err);
					continue;
				}
				for (uint64_t o = 0; o + 24 <= len && seen < COOKIE_CANDIDATES; o += 8) {
					if (memcmp(chunk + o, "xdebugpy", 8) != 0)
						continue;
					uint64_t v;
					memcpy(&v, chunk + o + 8, 8);
					if ((v >> 24) != 3 || ((v >> 16) & 0xff) < 13)
						continue;
					seen++;
					if (!first)
						first = a + o;
					if (cookie_leads_somewhere(t, a + o)) {
						found = a + o;
						break;
					}
				}
			}
		}
	}
	free(chunk);
	if (!found)
		found = first;
	if (!found)
		pyu_appendf(errs, errs_len, "no _Py_DebugOffsets cookie in %" PRIu64
			" bytes of writable memory; ", scanned);
	return found;
}

// PY_VERSION_HEX from the text sys.version starts with ("3.9.18 (main, ...", "3.13.0rc2+ ...")
// in Py_GetVersion()'s buffer, accepted only when it agrees with @minor_hex. 0 when unusable.
uint32_t pyu_version_from_text(struct pyu_target *t, uint64_t addr, uint32_t minor_hex)
{
	char *text = NULL;
	struct pyu_error *err = pyu_target_read_cstr(t, addr, 32, &text);
	if (err) {
		pyu_error_destroy(err);
		return 0;
	}
	unsigned major, minor, micro, serial = 0;
	int used = 0;
	uint32_t v = 0;
	if (sscanf(text, "%u.%u.%u%n", &major, &minor, &micro, &used) == 3 && major < 256 &&
	    minor < 256 && micro < 256) {
		const char *rest = text + used;
		unsigned level = 0xf;
		if (rest[0] == 'a' || rest[0] == 'b') {
			level = rest[0] == 'a' ? 0xa : 0xb;
			serial = (unsigned)strtoul(rest + 1, NULL, 10);
		} else if (rest[0] == 'r' && rest[1] == 'c') {
			level = 0xc;
			serial = (unsigned)strtoul(rest + 2, NULL, 10);
		}
		v = major << 24 | minor << 16 | micro << 8 | level << 4 | (serial & 0xf);
	}
	free(text);
	return (v >> 16) == (minor_hex >> 16) ? v : 0;
}

// The lowest-mapped file of the start of a live process's map (its open read no more), when
// its first line maps the file's start: the executable.
static const struct pyu_mapping *known_executable(const struct pyu_target *t)
{
	size_t count = pyu_target_known_mapping_count(t);
	for (size_t i = 0; i < count; i++) {
		const struct pyu_mapping *m = pyu_target_mapping(t, i);
		if (m->path && m->local_path && m->path[0] != '[')
			return m->offset == 0 ? m : NULL;
	}
	return NULL;
}

struct pyu_error *pyu_runtime_find(struct pyu_target *t, struct pyu_runtime *ret)
{
	char errs[1024] = "";
	const struct pyu_mapping *cands[MAX_CANDIDATES];
	struct found best = {0};
	const struct pyu_mapping *best_m = NULL;
	size_t n = 0;
	// A live process whose open read the start of its map alone: a statically linked
	// interpreter (Debian's, the python.org builds) has its runtime in the executable, and
	// the rest of the map (most of opening a small process) is read only when it has none
	// (libpython, an embedding program).
	const struct pyu_mapping *exe_m = pyu_target_mappings_partial(t) ? known_executable(t)
								  : NULL;
	if (exe_m) {
		struct found f = {0};
		char ignored[8] = "";
		examine_file(t, exe_m, &f, ignored, sizeof(ignored));
		if (f.runtime || f.interp_head) {
			best = f;
			best_m = exe_m;
		}
	}
	if (!best_m)
		n = candidates(t, cands);
	for (size_t i = 0; i < n && !best_m; i++) {
		struct found f = {0};
		examine_file(t, cands[i], &f, errs, sizeof(errs));
		if (f.runtime || f.interp_head) {
			best = f;
			best_m = cands[i];
			break;
		}
	}
	if (n == 0 && !best_m)
		pyu_appendf(errs, sizeof(errs), "the target has no mapped files to examine; ");
	bool in_memory = !best_m && examine_images(t, &best, errs, sizeof(errs));

	struct pyu_runtime rt;
	memset(&rt, 0, sizeof(rt));
	struct pyu_error *err = NULL;
	uint64_t cookie_at = 0;
	if (!best_m && !in_memory) {
		// Memory alone: 2.7 - 3.12 by a structure scan of the interpreter file's writable
		// data, 3.13+ by the debug offsets cookie. What was scanned leads the error.
		char scan_errs[1024] = "";
		err = pyu_runtime_scan(t, &rt, scan_errs, sizeof(scan_errs));
		pyu_target_release_views(t); // what the scans read in place need not stay mapped
		if (!err) {
			*ret = rt;
			return NULL;
		}
		if (err == &pyu_error_nomem)
			return err;
		pyu_error_destroy(err);
		err = NULL;
		cookie_at = scan_for_cookie(t, scan_errs, sizeof(scan_errs));
		pyu_target_release_views(t);
		if (!cookie_at) {
			const char *notice = pyu_target_notice(t);
			return pyu_error_create(PYU_ERR_NOT_PYTHON,
						"no CPython interpreter found: %s%s%s", scan_errs,
						errs, notice ? notice : "");
		}
		rt.memory_only = true;
		best.runtime = cookie_at;
		snprintf(best.how, sizeof(best.how), "_Py_DebugOffsets cookie at 0x%" PRIx64,
			 cookie_at);
		const struct pyu_mapping *m = pyu_target_find_mapping(t, cookie_at);
		if (m && m->path)
			best.name_version = pyu_version_from_name(m->path, &best.debug, &best.ft);
	}
	// PyInterpreterState_Head() reads _PyRuntime.interpreters.head from 3.7 on: with the
	// version known, the decoded address gives _PyRuntime itself.
	if (!best.runtime && best.interp_head) {
		uint32_t v = py_version_of(t, &best) ? best.py_version
			   : best.name_version ? best.name_version : best.presence_version;
		const struct pyu_layout *l = pyu_layout_for_version(v);
		if (l && l->runtime.interpreters_head != PYU_NO_FIELD) {
			best.runtime = best.interp_head - (uint64_t)l->runtime.interpreters_head;
			pyu_appendf(best.how, sizeof(best.how), " (_PyRuntime at 0x%" PRIx64 ")",
				best.runtime);
		}
	}
	pyu_appendf(rt.notes, sizeof(rt.notes), "found by %s; ", best.how);
	if (in_memory)
		rt.memory_only = true; // symbols from the ELF image in the target's own memory
	if (best_m)
		snprintf(rt.image, sizeof(rt.image), "%s", best_m->path);
	rt.runtime_addr = best.runtime;
	rt.types.addr[PYU_TYPE_CODE] = best.code_type;
	rt.debug_build = best.debug;
	rt.free_threaded = best.ft;

	// 3.13+: the runtime starts with its own description.
	bool have_layout = false;
	if (best.runtime) {
		// The cookie and the block it starts (use_debug_offsets): their pages in one read,
		// not the cookie's page first and the block's next one (two system calls).
		pyu_target_prefetch(t, best.runtime, PYU_DEBUG_OFFSETS_MAX);
		char cookie[8];
		struct pyu_error *rerr = pyu_target_read(t, best.runtime, cookie, 8);
		bool has_cookie = !rerr && memcmp(cookie, "xdebugpy", 8) == 0;
		uint32_t claimed = has_cookie ? 0
				 : py_version_of(t, &best) ? best.py_version : best.name_version;
		if (!has_cookie && !cookie_at && (claimed >> 16) >= 0x030d) {
			// A 3.13+ _PyRuntime always starts with the cookie: the file that gave this
			// address is not the build the target runs (a core from elsewhere).
			uint64_t scanned = scan_for_cookie(t, errs, sizeof(errs));
			pyu_target_release_views(t);
			if (scanned) {
				pyu_appendf(rt.notes, sizeof(rt.notes),
					"no debug offsets at 0x%" PRIx64 " (the file here may be "
					"another build): using the cookie at 0x%" PRIx64 "; ",
					best.runtime, scanned);
				best.runtime = rt.runtime_addr = scanned;
				// Nothing else that file says can be trusted either: its symbols
				// (the code type) and its pages.
				if (best_m)
					pyu_target_distrust_file(t, best_m);
				rt.types.addr[PYU_TYPE_CODE] = 0;
				rt.memory_only = true;
				pyu_error_destroy(rerr);
				rerr = pyu_target_read(t, best.runtime, cookie, 8);
				has_cookie = !rerr && memcmp(cookie, "xdebugpy", 8) == 0;
			}
		}
		if (has_cookie) {
			err = use_debug_offsets(t, best.runtime, &rt);
			if (err)
				return pyu_error_wrap(err, "interpreter found by %s", best.how);
			have_layout = true;
		}
		pyu_error_destroy(rerr);
	}
	if (!have_layout) {
		uint32_t v = py_version_of(t, &best);
		if (!v)
			v = best.name_version;
		if (!v && best.presence_version) {
			v = best.presence_version; // the exact text below may still confirm it
			pyu_appendf(rt.notes, sizeof(rt.notes),
				"version %u.%u guessed from exported symbols; ", v >> 24,
				(v >> 16) & 0xff);
		}
		if (!v)
			return pyu_error_create(PYU_ERR_UNSUPPORTED,
						"interpreter found by %s, but its version could not "
						"be determined (no Py_Version, no version in the file "
						"name)",
						best.how);
		err = pyu_runtime_init_layout(&rt, v, best.debug);
		if (err)
			return pyu_error_wrap(err, "interpreter found by %s", best.how);
		uint32_t exact = py_version_of(t, &best);
		for (size_t i = 0; !exact && i < best.version_texts; i++)
			exact = pyu_version_from_text(t, best.version_text[i], v);
		// Without the file's read-only data (memory alone), sys.version's text is still in
		// its writable data.
		if (!exact)
			exact = pyu_version_in_memory(t, v);
		rt.version_exact = exact != 0;
		if (exact)
			rt.version_hex = exact;
	}
	rt.debug_build = best.debug;
	// Memory alone with no file named (a core without NT_FILE): the name the program was
	// started by ("python3.14d") still tells a debug build, when it names this version. Only
	// the flag: the layout came from the target's own debug offsets or structure scan.
	if (rt.memory_only && !best_m && !best.name_version && !rt.debug_build) {
		char *exe = pyu_target_exec_name(t, NULL);
		bool debug = false, ft = false;
		uint32_t named = exe ? pyu_version_from_name(exe, &debug, &ft) : 0;
		if (named && named >> 16 == rt.version_hex >> 16)
			rt.debug_build = debug;
		free(exe);
	}

	// Where the interpreter list and the GIL holder are.
	if (best.runtime) {
		if (rt.layout.runtime.interpreters_head == PYU_NO_FIELD)
			return pyu_error_create(PYU_ERR_UNSUPPORTED,
						"found _PyRuntime (%s) in a CPython %s, whose layout "
						"has no interpreter list there",
						best.how, rt.layout.name);
		// A decoded PyInterpreterState_Head() names the list head itself; trust it over an
		// offset from the table.
		rt.interp_head_addr = best.interp_head
			? best.interp_head
			: best.runtime + (uint64_t)rt.layout.runtime.interpreters_head;
		if (rt.layout.gil == PYU_GIL_RUNTIME_CURRENT &&
		    rt.layout.runtime.tstate_current != PYU_NO_FIELD)
			rt.tstate_current_addr =
				best.runtime + (uint64_t)rt.layout.runtime.tstate_current;
	} else {
		if (rt.layout.runtime.interpreters_head != PYU_NO_FIELD)
			return pyu_error_create(PYU_ERR_CORRUPT,
						"found interp_head (%s), but CPython %s keeps its "
						"interpreters in _PyRuntime",
						best.how, rt.layout.name);
		rt.interp_head_addr = best.interp_head;
		if (rt.layout.gil == PYU_GIL_CURRENT_SYMBOL)
			rt.tstate_current_addr = best.tstate_current;
	}
	rt.gc_generation0_addr = best.gc_generation0;
	rt.hash_secret_addr = best.hash_secret;
	*ret = rt;
	return NULL;
}
