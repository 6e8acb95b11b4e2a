// linkmap.c - names the files of a target that names none (a core without NT_FILE, such as
// qemu-user's; a debugger whose remote stub gives no mapping list) from the dynamic linker's
// own list of loaded objects in the target's memory: the auxiliary vector's AT_PHDR leads to
// the executable's program headers, their PT_DYNAMIC to DT_DEBUG, that to r_debug and its chain
// of link_map entries (l_addr, l_name); when DT_DEBUG is empty, AT_BASE and the loader's own
// _r_debug symbol lead there instead. Each object is placed at its load bias from the program
// headers of its file here (the sysroot, path maps and search directories apply; a file of
// another machine is not taken); an object with no file here stays unnamed until one is given.
// Memory layer: it knows nothing of Python.
#include "bytes.h"
#include "elf.h"
#include "target_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EHDR_SIZE 64
#define PHDR_SIZE 56
#define PT_LOAD 1
#define PT_DYNAMIC 2
#define PT_INTERP 3
#define PT_PHDR 6
#define DT_NULL 0
#define DT_DEBUG 21
// The LP64 layouts of <link.h> (the same on x86-64 and aarch64).
#define R_DEBUG_MAP 8 // struct r_debug: int r_version; struct link_map *r_map
#define LM_ADDR 0     // struct link_map: l_addr, l_name, l_ld, l_next, l_prev
#define LM_NAME 8
#define LM_NEXT 24
#define LM_SIZE 40
#define MAX_PHNUM 256       // program headers of one executable we look at
#define MAX_DYNAMIC 1024    // entries of the dynamic section before DT_NULL
#define MAX_OBJECTS 4096    // link_map entries followed
#define MAX_NAME 4096       // bytes of one object's name
#define MAX_SEGMENT (1ull << 40)

// The program header table of the executable: from the target at AT_PHDR when it holds it
// (kernel cores keep the first page of each file), else from @elf (the file here). Returns the
// number of entries read into @buf (MAX_PHNUM * PHDR_SIZE bytes), 0 when none.
static size_t read_phdrs(struct pyu_target *t, struct pyu_elf *elf, unsigned char *buf)
{
	uint64_t phnum = t->auxv.phnum;
	if (phnum == 0 || phnum > MAX_PHNUM)
		phnum = MAX_PHNUM;
	if (t->auxv.phnum) {
		struct pyu_error *err = pyu_target_read(t, t->auxv.phdr, buf,
							(size_t)phnum * PHDR_SIZE);
		if (!err)
			return (size_t)phnum;
		pyu_error_destroy(err);
	}
	unsigned char eh[EHDR_SIZE];
	struct pyu_error *err = elf ? pyu_elf_read_file(elf, 0, eh, sizeof(eh))
				    : pyu_error_create(PYU_ERR_NOT_FOUND, "no executable");
	if (!err && pyu_le16(eh + 54) == PHDR_SIZE) {
		uint64_t n = pyu_le16(eh + 56);
		if (n > MAX_PHNUM)
			n = MAX_PHNUM;
		err = pyu_elf_read_file(elf, pyu_le64(eh + 32), buf, (size_t)n * PHDR_SIZE);
		if (!err)
			return (size_t)n;
	}
	pyu_error_destroy(err);
	return 0;
}

// The executable's load bias from its program headers and AT_PHDR (PT_PHDR's address, else
// the PT_LOAD holding the table at file offset @phoff); false when neither is there.
static bool exe_bias(const unsigned char *ph, size_t n, uint64_t phdr, uint64_t phoff,
		     uint64_t *ret)
{
	for (size_t i = 0; i < n; i++) {
		if (pyu_le32(ph + i * PHDR_SIZE) == PT_PHDR) {
			*ret = phdr - pyu_le64(ph + i * PHDR_SIZE + 16);
			return true;
		}
	}
	for (size_t i = 0; phoff && i < n; i++) {
		const unsigned char *p = ph + i * PHDR_SIZE;
		uint64_t off = pyu_le64(p + 8), filesz = pyu_le64(p + 32);
		if (pyu_le32(p) == PT_LOAD && phoff >= off && phoff - off < filesz) {
			*ret = phdr - (pyu_le64(p + 16) + (phoff - off));
			return true;
		}
	}
	return false;
}

// Whether the ELF file @elf was built for the target's machine (when the target says which).
static bool same_machine(const struct pyu_target *t, struct pyu_elf *elf)
{
	unsigned char eh[20];
	struct pyu_error *err = pyu_elf_read_file(elf, 0, eh, sizeof(eh));
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	return t->machine == 0 || pyu_le16(eh + 18) == t->machine;
}

// Opens the file here for the object the target names @name: the executable given with the
// target, then @name under the sysroot (or through the path maps), @name itself, then
// BASENAME in each search directory; the first ELF file of the target's machine. NULL when
// there is none (or out of memory). *local gets its path (malloc'd).
static struct pyu_elf *open_local(struct pyu_target *t, const char *name, char **local)
{
	char *cands[2 + PYU_MAX_SEARCH_DIRS] = {0};
	size_t n = 0;
	if (t->exe_target_path && strcmp(name, t->exe_target_path) == 0 && t->exe_local_path)
		cands[n++] = strdup(t->exe_local_path);
	else
		cands[n++] = pyu_target_local_path(t, name);
	cands[n++] = strdup(name);
	const char *slash = strrchr(name, '/');
	const char *base = slash ? slash + 1 : name;
	for (size_t i = 0; i < t->search_dir_count && base[0]; i++) {
		size_t len = strlen(t->search_dirs[i]) + strlen(base) + 2;
		if ((cands[n] = malloc(len)) != NULL)
			snprintf(cands[n++], len, "%s/%s", t->search_dirs[i], base);
	}
	struct pyu_elf *found = NULL;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (found || !cands[i] || cands[i][0] != '/' || stat(cands[i], &st) != 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		struct pyu_elf *elf;
		struct pyu_error *err = pyu_elf_open(cands[i], &elf);
		if (err) {
			pyu_error_destroy(err);
			continue;
		}
		if (!same_machine(t, elf)) {
			pyu_elf_close(elf);
			continue;
		}
		found = elf;
		*local = cands[i];
		cands[i] = NULL;
	}
	for (size_t i = 0; i < n; i++)
		free(cands[i]);
	return found;
}

struct pyu_error *pyu_target_place_file(struct pyu_target *t, struct pyu_elf *elf,
					const char *target_path, const char *local_path,
					uint64_t bias)
{
	struct pyu_elf_segment seg;
	struct pyu_error *err = NULL;
	for (size_t i = 0; !err && pyu_elf_load_segment(elf, i, &seg); i++) {
		uint64_t start = (seg.vaddr & ~(uint64_t)(PYU_PAGE_SIZE - 1)) + bias;
		uint64_t end = seg.vaddr + seg.memsz + bias;
		uint64_t offset = seg.offset & ~(uint64_t)(PYU_PAGE_SIZE - 1);
		if (end < start || end - start > MAX_SEGMENT || seg.filesz == 0)
			continue;
		// Only the file-backed part: .bss beyond it is anonymous memory.
		uint64_t file_end = seg.vaddr + seg.filesz + bias;
		if (file_end < end)
			end = file_end;
		end = (end + PYU_PAGE_SIZE - 1) & ~(uint64_t)(PYU_PAGE_SIZE - 1);
		struct pyu_mapping *m = (struct pyu_mapping *)pyu_target_find_mapping(t, start);
		if (m && m->start == start && !m->path) {
			char *path = strdup(target_path), *local = strdup(local_path);
			if (!path || !local) {
				free(path);
				free(local);
				return &pyu_error_nomem;
			}
			m->path = path;
			m->local_path = local;
			m->local_path_fixed = true;
			m->local_check = PYU_LOCAL_COMPARE;
			m->offset = offset;
			if (m->end > end) { // the rest is the anonymous .bss, not the file
				uint64_t rest_end = m->end;
				bool r = m->readable, w = m->writable, x = m->executable;
				m->end = end;
				err = pyu_target_add_mapping_perms(t, end, rest_end, 0, r, w, x, NULL);
			}
		} else if (!m && !pyu_target_find_mapping(t, end - 1)) {
			err = pyu_target_add_mapping_perms(t, start, end, offset, (seg.flags & 4) != 0,
							   (seg.flags & 2) != 0, (seg.flags & 1) != 0,
							   target_path);
			m = err ? NULL : (struct pyu_mapping *)pyu_target_find_mapping(t, start);
			if (m && m->path && strcmp(m->path, target_path) == 0) {
				char *local = strdup(local_path);
				if (!local)
					return &pyu_error_nomem;
				free(m->local_path);
				m->local_path = local;
				m->local_path_fixed = true;
			}
		}
	}
	return err;
}

// Whether some mapping is already named @name.
static bool named(const struct pyu_target *t, const char *name)
{
	for (size_t i = 0; i < t->mapping_count; i++)
		if (t->mappings[i].path && strcmp(t->mappings[i].path, name) == 0)
			return true;
	return false;
}

// Reads the NUL-terminated name at @addr; NULL when unreadable or empty.
static char *read_name(struct pyu_target *t, uint64_t addr)
{
	char *s = NULL;
	struct pyu_error *err = addr ? pyu_target_read_cstr(t, addr, MAX_NAME, &s)
				     : pyu_error_create(PYU_ERR_NOT_FOUND, "no name");
	if (err) {
		pyu_error_destroy(err);
		return NULL;
	}
	if (!s[0]) {
		free(s);
		return NULL;
	}
	return s;
}

char *pyu_target_exec_name(struct pyu_target *t, uint64_t *phdr)
{
	if (phdr)
		*phdr = t ? t->auxv.phdr : 0;
	return t ? read_name(t, t->auxv.execfn) : NULL;
}

// r_debug's address from the executable's dynamic section at @dynamic (DT_DEBUG), 0 when it
// is not there or not filled in.
static uint64_t r_debug_from_dynamic(struct pyu_target *t, uint64_t dynamic)
{
	for (unsigned i = 0; dynamic && i < MAX_DYNAMIC; i++) {
		uint64_t tag, val;
		struct pyu_error *err = pyu_target_read_u64(t, dynamic + 16ull * i, &tag);
		if (!err)
			err = pyu_target_read_u64(t, dynamic + 16ull * i + 8, &val);
		if (err) {
			pyu_error_destroy(err);
			return 0;
		}
		if (tag == DT_NULL)
			return 0;
		if (tag == DT_DEBUG)
			return val;
	}
	return 0;
}

// r_debug's address from the loader's _r_debug symbol (the loader at AT_BASE, named by the
// executable's PT_INTERP), 0 when it cannot be found.
static uint64_t r_debug_from_loader(struct pyu_target *t, struct pyu_elf *exe,
				    const unsigned char *ph, size_t n, uint64_t bias)
{
	char interp[MAX_NAME] = "";
	for (size_t i = 0; i < n && !interp[0]; i++) {
		const unsigned char *p = ph + i * PHDR_SIZE;
		uint64_t vaddr = pyu_le64(p + 16), filesz = pyu_le64(p + 32);
		if (pyu_le32(p) != PT_INTERP || filesz < 2 || filesz >= sizeof(interp))
			continue;
		struct pyu_error *err = pyu_target_read(t, vaddr + bias, interp, (size_t)filesz);
		if (err && exe) {
			pyu_error_destroy(err);
			err = pyu_elf_read(exe, vaddr, interp, (size_t)filesz);
		}
		if (err)
			interp[0] = '\0';
		pyu_error_destroy(err);
		interp[filesz] = '\0';
	}
	if (!interp[0] || !t->auxv.base)
		return 0;
	char *local = NULL;
	struct pyu_elf *ld = open_local(t, interp, &local);
	if (!ld)
		return 0;
	struct pyu_elf_symbol sym;
	struct pyu_error *err = pyu_elf_find_symbol(ld, "_r_debug", &sym);
	uint64_t first = pyu_elf_first_load_vaddr(ld) & ~(uint64_t)(PYU_PAGE_SIZE - 1);
	uint64_t addr = err ? 0 : t->auxv.base - first + sym.value;
	pyu_error_destroy(err);
	if (!named(t, interp))
		err = pyu_target_place_file(t, ld, interp, local, t->auxv.base - first);
	pyu_error_destroy(err == &pyu_error_nomem ? NULL : err);
	pyu_elf_close(ld);
	free(local);
	return addr;
}

#define AT_PHDR 3
#define AT_PHNUM 5
#define AT_BASE 7
#define AT_ENTRY 9
#define AT_EXECFN 31
#define MAX_AUXV 1024

PYU_PUBLIC struct pyu_error *pyu_target_set_auxv(struct pyu_target *t, const uint64_t *pairs,
						 uint32_t count)
{
	if (!t || (count && !pairs) || count > MAX_AUXV)
		return pyu_error_create(PYU_ERR_ARGUMENT, "pyu_target_set_auxv: bad argument");
	if (t->read_statuses || t->core_fd >= 0)
		return NULL; // /proc or the core's own notes say it first-hand
	struct pyu_auxv a = {0};
	for (uint32_t i = 0; i < count; i++) {
		uint64_t key = pairs[2 * i], val = pairs[2 * i + 1];
		if (key == AT_PHDR)
			a.phdr = val;
		else if (key == AT_PHNUM)
			a.phnum = val;
		else if (key == AT_BASE)
			a.base = val;
		else if (key == AT_ENTRY)
			a.entry = val;
		else if (key == AT_EXECFN)
			a.execfn = val;
	}
	t->auxv = a;
	for (size_t i = 0; i < t->mapping_count; i++)
		if (t->mappings[i].path && t->mappings[i].path[0] == '/')
			return NULL; // the debugger named the files
	t->names_from_linkmap = a.phdr != 0;
	struct pyu_error *err = pyu_linkmap_name_files(t);
	pyu_target_flush_cache(t);
	return err;
}

struct pyu_error *pyu_linkmap_name_files(struct pyu_target *t)
{
	if (!t->auxv.phdr)
		return NULL;
	// The executable: named by AT_EXECFN (else by the file given with the target).
	char *exe_name = read_name(t, t->auxv.execfn);
	if (!exe_name && t->exe_target_path)
		exe_name = strdup(t->exe_target_path);
	char *exe_local = NULL;
	struct pyu_elf *exe = exe_name ? open_local(t, exe_name, &exe_local) : NULL;
	unsigned char *ph = malloc(MAX_PHNUM * PHDR_SIZE);
	if (!ph) {
		pyu_elf_close(exe);
		free(exe_local);
		free(exe_name);
		return &pyu_error_nomem;
	}
	size_t n = read_phdrs(t, exe, ph);
	uint64_t phoff = 0, bias = 0;
	unsigned char eh[EHDR_SIZE];
	struct pyu_error *err = exe ? pyu_elf_read_file(exe, 0, eh, sizeof(eh)) : NULL;
	if (exe && !err)
		phoff = pyu_le64(eh + 32);
	pyu_error_destroy(err);
	err = NULL;
	bool have_bias = exe_bias(ph, n, t->auxv.phdr, phoff, &bias);
	if (have_bias && exe && !named(t, exe_name))
		err = pyu_target_place_file(t, exe, exe_name, exe_local, bias);
	uint64_t dynamic = 0;
	for (size_t i = 0; have_bias && i < n; i++)
		if (pyu_le32(ph + i * PHDR_SIZE) == PT_DYNAMIC)
			dynamic = pyu_le64(ph + i * PHDR_SIZE + 16) + bias;
	uint64_t r_debug = err ? 0 : r_debug_from_dynamic(t, dynamic);
	if (!err && !r_debug && have_bias)
		r_debug = r_debug_from_loader(t, exe, ph, n, bias);
	free(ph);
	pyu_elf_close(exe);
	free(exe_local);
	uint64_t lm = 0;
	if (r_debug && !err) {
		struct pyu_error *e = pyu_target_read_u64(t, r_debug + R_DEBUG_MAP, &lm);
		if (e)
			lm = 0;
		pyu_error_destroy(e);
	}
	for (unsigned i = 0; lm && !err && i < MAX_OBJECTS; i++) {
		unsigned char entry[LM_SIZE];
		struct pyu_error *e = pyu_target_read(t, lm, entry, sizeof(entry));
		if (e) {
			pyu_error_destroy(e);
			break;
		}
		uint64_t l_addr = pyu_le64(entry + LM_ADDR), next = pyu_le64(entry + LM_NEXT);
		char *name = read_name(t, pyu_le64(entry + LM_NAME));
		// The first entry is the executable (named ""), another the vDSO (no file here).
		if (name && name[0] == '/' && !named(t, name)) {
			char *local = NULL;
			struct pyu_elf *elf = open_local(t, name, &local);
			if (elf) {
				// l_addr is the difference between the file's addresses and
				// the target's: the load bias.
				err = pyu_target_place_file(t, elf, name, local, l_addr);
				pyu_elf_close(elf);
				free(local);
			}
		}
		free(name);
		if (next == lm)
			break;
		lm = next;
	}
	free(exe_name);
	return err == &pyu_error_nomem ? err : (pyu_error_destroy(err), NULL);
}
