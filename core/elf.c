// elf.c - reads ELF64 little-endian files with pread: headers, sections by name, symbols by
// name, bytes at a virtual address, load bias in a target. Every field taken from the file is
// checked against the file's size before it is used. See elf.h for the contract.
#include "bytes.h"
#include "elf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EHDR_SIZE 64
#define PHDR_SIZE 56
#define SHDR_SIZE 64
#define SYM_SIZE 24
#define MAX_PHNUM 4096
#define MAX_SHNUM 65536
#define MAX_TABLE (256u << 20) // largest symbol or string table read into memory

#define PT_LOAD 1
#define PT_NOTE 4
#define NT_GNU_BUILD_ID 3
#define MAX_NOTE_SEGMENT 65536 // build IDs live in small note segments
#define SHT_SYMTAB 2
#define SHT_STRTAB 3
#define SHT_NOBITS 8
#define SHT_DYNSYM 11
#define SHT_GNU_HASH 0x6ffffff6
#define MAX_GNU_BUCKETS (1u << 24)
#define SHN_XINDEX 0xffff

struct elf_phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz;
};

struct elf_shdr {
	uint32_t name, type, link;
	uint64_t flags, addr, offset, size, entsize;
};

struct symtab {
	bool loaded;        // tried (successfully or not)
	unsigned char *syms; // raw Elf64_Sym entries
	size_t count;
	char *strs;
	size_t strs_len;
	// Open-addressing index by name: 1 + symbol number, 0 = empty; NULL when it could not be
	// made (then lookups scan the table). Built on first lookup: a runtime search asks for a
	// dozen names, and a full symbol table has tens of thousands.
	uint32_t *index;
	size_t index_slots; // a power of two
	// The file's own GNU hash table of this symbol table (.gnu.hash, for .dynsym), when it
	// has one that checks out: a lookup then touches one bucket's chain, not every symbol.
	// gnu_words = nbuckets buckets, then one chain word per symbol from gnu_symoffset on.
	uint32_t *gnu_words;
	uint32_t gnu_nbuckets, gnu_symoffset;
};

struct pyu_elf {
	char *path;
	int fd;
	uint64_t file_size;
	struct pyu_file_id id; // of the file opened (fstat)
	uint16_t type;
	uint64_t entry;
	struct elf_phdr *phdrs;
	size_t phnum;
	struct elf_shdr *shdrs;
	size_t shnum;
	char *shstrtab; // section names, NUL-terminated within shstrtab_len
	size_t shstrtab_len;
	struct symtab dynsym, symtab;
};

// Reads exactly @len bytes at @offset, bounded by the file size. Returns false otherwise.
static bool read_exact(const struct pyu_elf *elf, uint64_t offset, void *buf, size_t len)
{
	if (offset > elf->file_size || len > elf->file_size - offset)
		return false;
	return pyu_pread_all(elf->fd, elf->file_size, offset, buf, len) == len;
}

// Reads a table of @count entries of @entsize bytes at @offset into a new buffer.
static unsigned char *read_table(const struct pyu_elf *elf, uint64_t offset, uint64_t count,
				 size_t entsize)
{
	if (count == 0 || count > MAX_TABLE / entsize)
		return NULL;
	if (offset > elf->file_size || count * entsize > elf->file_size - offset)
		return NULL; // checked before allocating
	unsigned char *buf = malloc((size_t)count * entsize);
	if (buf && !read_exact(elf, offset, buf, (size_t)count * entsize)) {
		free(buf);
		buf = NULL;
	}
	return buf;
}

static struct pyu_error *format_error(const char *path, const char *what)
{
	return pyu_error_create(PYU_ERR_FORMAT, "%s: malformed ELF file: %s", path, what);
}

static struct pyu_error *parse_headers(struct pyu_elf *elf)
{
	unsigned char eh[EHDR_SIZE];
	if (!read_exact(elf, 0, eh, sizeof(eh)) || memcmp(eh, "\177ELF", 4) != 0)
		return pyu_error_create(PYU_ERR_FORMAT, "%s: not an ELF file", elf->path);
	if (eh[4] != 2 || eh[5] != 1)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "%s: only 64-bit little-endian ELF "
					"files are supported", elf->path);
	elf->type = pyu_le16(eh + 16);
	elf->entry = pyu_le64(eh + 24);
	uint64_t phoff = pyu_le64(eh + 32), shoff = pyu_le64(eh + 40);
	uint16_t phentsize = pyu_le16(eh + 54), phnum = pyu_le16(eh + 56);
	uint16_t shentsize = pyu_le16(eh + 58), shnum = pyu_le16(eh + 60), shstrndx = pyu_le16(eh + 62);

	if (phnum > 0) {
		if (phentsize < PHDR_SIZE || phnum > MAX_PHNUM)
			return format_error(elf->path, "bad program header size or count");
		if (phoff > elf->file_size || (uint64_t)phnum * phentsize > elf->file_size - phoff)
			return format_error(elf->path, "program headers past the end");
		elf->phdrs = calloc(phnum, sizeof(*elf->phdrs));
		// The table in one read (bounded above: MAX_PHNUM entries of a 16-bit size).
		unsigned char *table = read_table(elf, phoff, phnum, phentsize);
		if (!elf->phdrs || !table) {
			free(table);
			return elf->phdrs ? format_error(elf->path, "program headers past the end")
					  : &pyu_error_nomem;
		}
		for (size_t i = 0; i < phnum; i++) {
			const unsigned char *ph = table + i * phentsize;
			struct elf_phdr *p = &elf->phdrs[i];
			p->type = pyu_le32(ph);
			p->flags = pyu_le32(ph + 4);
			p->offset = pyu_le64(ph + 8);
			p->vaddr = pyu_le64(ph + 16);
			p->filesz = pyu_le64(ph + 32);
			p->memsz = pyu_le64(ph + 40);
			elf->phnum = i + 1;
		}
		free(table);
	}

	if (shoff == 0)
		return NULL; // no section headers: symbols and sections are simply not found
	if (shentsize < SHDR_SIZE)
		return format_error(elf->path, "bad section header size");
	uint64_t count = shnum;
	uint32_t strndx = shstrndx;
	if (count == 0 || strndx == SHN_XINDEX) {
		// Extended numbering: the real values live in section header 0.
		unsigned char sh0[SHDR_SIZE];
		if (!read_exact(elf, shoff, sh0, sizeof(sh0)))
			return format_error(elf->path, "section headers past the end");
		if (count == 0)
			count = pyu_le64(sh0 + 32);
		if (strndx == SHN_XINDEX)
			strndx = pyu_le32(sh0 + 40);
	}
	if (count > MAX_SHNUM)
		return format_error(elf->path, "too many sections");
	if (count == 0)
		return NULL;
	if (shoff > elf->file_size || count * shentsize > elf->file_size - shoff)
		return format_error(elf->path, "section headers past the end");
	elf->shdrs = calloc((size_t)count, sizeof(*elf->shdrs));
	unsigned char *table = read_table(elf, shoff, count, shentsize);
	if (!elf->shdrs || !table) {
		free(table);
		return elf->shdrs ? format_error(elf->path, "section headers past the end")
				  : &pyu_error_nomem;
	}
	for (size_t i = 0; i < count; i++) {
		const unsigned char *sh = table + i * shentsize;
		struct elf_shdr *s = &elf->shdrs[i];
		s->name = pyu_le32(sh);
		s->type = pyu_le32(sh + 4);
		s->flags = pyu_le64(sh + 8);
		s->addr = pyu_le64(sh + 16);
		s->offset = pyu_le64(sh + 24);
		s->size = pyu_le64(sh + 32);
		s->link = pyu_le32(sh + 40);
		s->entsize = pyu_le64(sh + 56);
		elf->shnum = i + 1;
	}
	free(table);
	if (strndx < elf->shnum) {
		const struct elf_shdr *s = &elf->shdrs[strndx];
		if (s->type == SHT_STRTAB && s->size > 0 && s->size <= MAX_TABLE) {
			elf->shstrtab = (char *)read_table(elf, s->offset, s->size, 1);
			if (elf->shstrtab)
				elf->shstrtab_len = (size_t)s->size;
		}
	}
	return NULL;
}

struct pyu_error *pyu_elf_open(const char *path, struct pyu_elf **ret)
{
	struct pyu_elf *elf = calloc(1, sizeof(*elf));
	if (!elf)
		return &pyu_error_nomem;
	elf->fd = -1;
	elf->path = strdup(path);
	if (!elf->path) {
		free(elf);
		return &pyu_error_nomem;
	}
	struct pyu_error *err = NULL;
	struct stat st;
	elf->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (elf->fd < 0)
		err = pyu_error_create(PYU_ERR_IO, "cannot open %s: %s", path, strerror(errno));
	else if (fstat(elf->fd, &st) != 0 || !S_ISREG(st.st_mode))
		err = pyu_error_create(PYU_ERR_IO, "%s is not a regular file", path);
	if (!err) {
		elf->file_size = (uint64_t)st.st_size;
		pyu_file_id_of(&st, &elf->id);
		err = parse_headers(elf);
	}
	if (err) {
		pyu_elf_close(elf);
		return err;
	}
	*ret = elf;
	return NULL;
}

void pyu_elf_close(struct pyu_elf *elf)
{
	if (!elf)
		return;
	if (elf->fd >= 0)
		close(elf->fd);
	free(elf->path);
	free(elf->phdrs);
	free(elf->shdrs);
	free(elf->shstrtab);
	free(elf->dynsym.syms);
	free(elf->dynsym.strs);
	free(elf->dynsym.index);
	free(elf->dynsym.gnu_words);
	free(elf->symtab.syms);
	free(elf->symtab.strs);
	free(elf->symtab.index);
	free(elf);
}

const char *pyu_elf_path(const struct pyu_elf *elf)
{
	return elf->path;
}

uint16_t pyu_elf_type(const struct pyu_elf *elf)
{
	return elf->type;
}

uint64_t pyu_elf_entry(const struct pyu_elf *elf)
{
	return elf->entry;
}

bool pyu_elf_load_segment(const struct pyu_elf *elf, size_t i, struct pyu_elf_segment *ret)
{
	for (size_t k = 0; k < elf->phnum; k++) {
		const struct elf_phdr *p = &elf->phdrs[k];
		if (p->type != PT_LOAD || i-- > 0)
			continue;
		ret->vaddr = p->vaddr;
		ret->memsz = p->memsz;
		ret->offset = p->offset;
		ret->filesz = p->filesz;
		ret->flags = p->flags;
		return true;
	}
	return false;
}

static const struct elf_phdr *first_load(const struct pyu_elf *elf)
{
	for (size_t i = 0; i < elf->phnum; i++) {
		if (elf->phdrs[i].type == PT_LOAD)
			return &elf->phdrs[i];
	}
	return NULL;
}

uint64_t pyu_elf_first_load_vaddr(const struct pyu_elf *elf)
{
	const struct elf_phdr *p = first_load(elf);
	return p ? p->vaddr : 0;
}

// The NUL-terminated string at @off of a table of @len bytes, or NULL if it runs past it.
static const char *table_string(const char *tab, size_t len, uint64_t off)
{
	if (!tab || off >= len || !memchr(tab + off, '\0', len - (size_t)off))
		return NULL;
	return tab + off;
}

static const char *section_name(const struct pyu_elf *elf, const struct elf_shdr *s)
{
	return table_string(elf->shstrtab, elf->shstrtab_len, s->name);
}

struct pyu_error *pyu_elf_find_section(const struct pyu_elf *elf, const char *name,
				       struct pyu_elf_section *ret)
{
	for (size_t i = 0; i < elf->shnum; i++) {
		const struct elf_shdr *s = &elf->shdrs[i];
		const char *n = section_name(elf, s);
		if (!n || strcmp(n, name) != 0)
			continue;
		if (s->type != SHT_NOBITS &&
		    (s->offset > elf->file_size || s->size > elf->file_size - s->offset))
			return format_error(elf->path, "section runs past the end of the file");
		ret->addr = s->addr;
		ret->offset = s->offset;
		ret->size = s->size;
		ret->flags = s->flags;
		ret->type = s->type;
		return NULL;
	}
	return pyu_error_create(PYU_ERR_NOT_FOUND, "%s: no section %s", elf->path, name);
}

// Reads the first section of @type and its linked string table, once.
// Reads the GNU hash section linked to the symbol table in section @sym_section, if any:
// {nbuckets, symoffset, bloom_size, bloom_shift; u64 bloom[bloom_size]; u32 buckets[nbuckets];
// u32 chain[count - symoffset]}. Anything that does not fit the table leaves no hash (lookups
// then use the index), so a damaged file cannot make a lookup read outside what was read.
static void load_gnu_hash(const struct pyu_elf *elf, size_t sym_section, struct symtab *tab)
{
	for (size_t i = 0; i < elf->shnum; i++) {
		const struct elf_shdr *s = &elf->shdrs[i];
		if (s->type != SHT_GNU_HASH || s->link != sym_section)
			continue;
		unsigned char head[16];
		if (s->size < sizeof(head) || !read_exact(elf, s->offset, head, sizeof(head)))
			return;
		uint32_t nbuckets = pyu_le32(head), symoffset = pyu_le32(head + 4);
		uint32_t bloom = pyu_le32(head + 8);
		if (nbuckets == 0 || nbuckets > MAX_GNU_BUCKETS || symoffset > tab->count ||
		    bloom > MAX_GNU_BUCKETS)
			return;
		uint64_t words = (uint64_t)nbuckets + (tab->count - symoffset);
		uint64_t at = sizeof(head) + 8 * (uint64_t)bloom;
		if (at + 4 * words > s->size || s->offset > UINT64_MAX - at)
			return;
		unsigned char *raw = read_table(elf, s->offset + at, words, 4);
		if (!raw)
			return;
		uint32_t *w = (uint32_t *)(void *)raw; // malloc'd: aligned for uint32_t
		for (uint64_t k = 0; k < words; k++)
			w[k] = pyu_le32(raw + 4 * k);
		tab->gnu_words = w;
		tab->gnu_nbuckets = nbuckets;
		tab->gnu_symoffset = symoffset;
		return;
	}
}

static void load_symtab(struct pyu_elf *elf, uint32_t type, struct symtab *tab)
{
	if (tab->loaded)
		return;
	tab->loaded = true;
	for (size_t i = 0; i < elf->shnum; i++) {
		const struct elf_shdr *s = &elf->shdrs[i];
		if (s->type != type || s->link >= elf->shnum)
			continue;
		const struct elf_shdr *str = &elf->shdrs[s->link];
		if (str->type != SHT_STRTAB || str->size == 0)
			return;
		size_t count = (size_t)(s->size / SYM_SIZE);
		tab->syms = read_table(elf, s->offset, count, SYM_SIZE);
		tab->strs = (char *)read_table(elf, str->offset, str->size, 1);
		if (!tab->syms || !tab->strs) {
			free(tab->syms);
			free(tab->strs);
			tab->syms = NULL;
			tab->strs = NULL;
			return;
		}
		tab->count = count;
		tab->strs_len = (size_t)str->size;
		load_gnu_hash(elf, i, tab);
		return;
	}
}

static uint64_t name_hash(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull; // FNV-1a
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h;
}

// The name of defined symbol @i, or NULL (undefined, or a name outside the string table).
static const char *sym_name(const struct symtab *tab, size_t i)
{
	const unsigned char *sym = tab->syms + i * SYM_SIZE;
	if (pyu_le16(sym + 6) == 0)
		return NULL;
	return table_string(tab->strs, tab->strs_len, pyu_le32(sym));
}

// Builds tab->index. Symbols keep their table order along each probe sequence, so a lookup
// finds the first of several symbols of one name, as a scan would. Failure leaves no index.
static void index_symtab(struct symtab *tab)
{
	if (tab->index || tab->count == 0 || tab->count >= UINT32_MAX / 4)
		return;
	size_t slots = 64;
	while (slots < 2 * tab->count)
		slots *= 2;
	uint32_t *index = calloc(slots, sizeof(*index));
	if (!index)
		return;
	for (size_t i = 0; i < tab->count; i++) {
		const char *n = sym_name(tab, i);
		if (!n)
			continue;
		size_t k = (size_t)name_hash(n) & (slots - 1);
		while (index[k])
			k = (k + 1) & (slots - 1);
		index[k] = (uint32_t)i + 1;
	}
	tab->index = index;
	tab->index_slots = slots;
}

static void fill_symbol(const struct symtab *tab, size_t i, struct pyu_elf_symbol *ret)
{
	const unsigned char *sym = tab->syms + i * SYM_SIZE;
	ret->value = pyu_le64(sym + 8);
	ret->size = pyu_le64(sym + 16);
	ret->type = sym[4] & 0xf;
	ret->bind = sym[4] >> 4;
	ret->shndx = pyu_le16(sym + 6);
}

static uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = h * 33 + *p;
	return h;
}

// Through the file's GNU hash table: the chain of the name's bucket holds every defined
// symbol of that hash, in table order, the last one's word with bit 0 set.
static bool search_gnu_hash(const struct symtab *tab, const char *name,
			    struct pyu_elf_symbol *ret)
{
	uint32_t h = gnu_hash(name);
	const uint32_t *chain = tab->gnu_words + tab->gnu_nbuckets;
	for (size_t i = tab->gnu_words[h % tab->gnu_nbuckets];
	     i >= tab->gnu_symoffset && i < tab->count; i++) {
		uint32_t ch = chain[i - tab->gnu_symoffset];
		if ((ch | 1) == (h | 1)) {
			const char *n = sym_name(tab, i);
			if (n && strcmp(n, name) == 0) {
				fill_symbol(tab, i, ret);
				return true;
			}
		}
		if (ch & 1)
			break;
	}
	return false;
}

static bool search_symtab(struct symtab *tab, const char *name, struct pyu_elf_symbol *ret)
{
	if (tab->gnu_words)
		return search_gnu_hash(tab, name, ret);
	index_symtab(tab);
	if (tab->index) {
		size_t k = (size_t)name_hash(name) & (tab->index_slots - 1);
		for (; tab->index[k]; k = (k + 1) & (tab->index_slots - 1)) {
			size_t i = tab->index[k] - 1;
			const char *n = sym_name(tab, i);
			if (n && strcmp(n, name) == 0) {
				fill_symbol(tab, i, ret);
				return true;
			}
		}
		return false;
	}
	for (size_t i = 0; i < tab->count; i++) {
		const char *n = sym_name(tab, i);
		if (n && strcmp(n, name) == 0) {
			fill_symbol(tab, i, ret);
			return true;
		}
	}
	return false;
}

struct pyu_error *pyu_elf_find_symbol(struct pyu_elf *elf, const char *name,
				      struct pyu_elf_symbol *ret)
{
	load_symtab(elf, SHT_DYNSYM, &elf->dynsym);
	if (search_symtab(&elf->dynsym, name, ret))
		return NULL;
	load_symtab(elf, SHT_SYMTAB, &elf->symtab);
	if (search_symtab(&elf->symtab, name, ret))
		return NULL;
	return pyu_error_create(PYU_ERR_NOT_FOUND, "%s: no symbol %s", elf->path, name);
}

struct pyu_error *pyu_elf_read_file(struct pyu_elf *elf, uint64_t offset, void *buf,
				    size_t len)
{
	if (offset > elf->file_size || len > elf->file_size - offset)
		return pyu_error_create(PYU_ERR_FAULT, "%s: %zu bytes at offset 0x%" PRIx64
					" run past the end of the file", elf->path, len, offset);
	if (!read_exact(elf, offset, buf, len))
		return pyu_error_create(PYU_ERR_IO, "%s: cannot read %zu bytes at offset 0x%"
					PRIx64, elf->path, len, offset);
	return NULL;
}

struct pyu_error *pyu_elf_read(struct pyu_elf *elf, uint64_t vaddr, void *buf, size_t len)
{
	unsigned char *out = buf;
	size_t done = 0;
	while (done < len) {
		uint64_t a = vaddr + done;
		const struct elf_phdr *seg = NULL;
		for (size_t i = 0; i < elf->phnum; i++) {
			const struct elf_phdr *p = &elf->phdrs[i];
			if (p->type == PT_LOAD && a >= p->vaddr && a - p->vaddr < p->memsz) {
				seg = p;
				break;
			}
		}
		if (!seg || a < vaddr)
			return pyu_error_create(PYU_ERR_FAULT, "%s: address 0x%" PRIx64
						" is not in a loaded segment", elf->path, a);
		uint64_t delta = a - seg->vaddr;
		uint64_t left = seg->memsz - delta;
		size_t n = len - done < left ? len - done : (size_t)left;
		if (delta < seg->filesz) {
			if (n > seg->filesz - delta)
				n = (size_t)(seg->filesz - delta);
			if (seg->offset + delta < seg->offset)
				return format_error(elf->path, "segment offset overflows");
			struct pyu_error *err =
				pyu_elf_read_file(elf, seg->offset + delta, out + done, n);
			if (err)
				return pyu_error_wrap(err, "reading address 0x%" PRIx64, a);
		} else {
			memset(out + done, 0, n); // .bss: zero in the file's image
		}
		done += n;
	}
	return NULL;
}

void pyu_file_id_of(const struct stat *st, struct pyu_file_id *ret)
{
	ret->dev = (uint64_t)st->st_dev;
	ret->ino = (uint64_t)st->st_ino;
	ret->size = (uint64_t)st->st_size;
	ret->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	ret->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

bool pyu_file_id(const char *path, struct pyu_file_id *ret)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	pyu_file_id_of(&st, ret);
	return true;
}

bool pyu_file_id_equal(const struct pyu_file_id *a, const struct pyu_file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

void pyu_elf_file_id(const struct pyu_elf *elf, struct pyu_file_id *ret)
{
	*ret = elf->id;
}

void pyu_elf_load_info(const struct pyu_elf *elf, struct pyu_elf_load *ret)
{
	const struct elf_phdr *p = first_load(elf);
	ret->exec = elf->type == PYU_ELF_ET_EXEC;
	// File offset 0 is mapped at a mapping's start; the first segment puts file offset
	// p_offset at p_vaddr (and p_vaddr - p_offset is page aligned), so file offset 0 has
	// that vaddr.
	ret->base = p ? p->vaddr - p->offset : 0;
}

struct pyu_error *pyu_elf_load_bias_of(const struct pyu_target *t,
				       const struct pyu_elf_load *load, const char *path,
				       uint64_t *ret)
{
	if (load->exec) {
		*ret = 0;
		return NULL;
	}
	const struct pyu_mapping *m = pyu_target_find_file_mapping(t, path);
	if (!m)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "%s is not mapped at file offset 0 "
					"in the target", path);
	*ret = m->start - load->base;
	return NULL;
}

struct pyu_error *pyu_elf_load_bias(const struct pyu_target *t, const struct pyu_elf *elf,
				    const char *path, uint64_t *ret)
{
	struct pyu_elf_load load;
	pyu_elf_load_info(elf, &load);
	return pyu_elf_load_bias_of(t, &load, path, ret);
}

// Looks for NT_GNU_BUILD_ID in a buffer of notes. Every length is checked against @len.
static bool build_id_in_notes(const unsigned char *notes, size_t len, uint8_t *buf, size_t cap,
			      size_t *id_len)
{
	size_t off = 0;
	while (len - off >= 12) {
		uint64_t namesz = pyu_le32(notes + off), descsz = pyu_le32(notes + off + 4);
		uint32_t type = pyu_le32(notes + off + 8);
		uint64_t name_off = off + 12;
		uint64_t desc_off = name_off + ((namesz + 3) & ~(uint64_t)3);
		if (desc_off > len || descsz > len - desc_off)
			return false;
		if (type == NT_GNU_BUILD_ID && namesz == 4 &&
		    memcmp(notes + name_off, "GNU", 4) == 0 && descsz > 0) {
			size_t n = descsz < cap ? (size_t)descsz : cap;
			memcpy(buf, notes + desc_off, n);
			*id_len = n;
			return true;
		}
		uint64_t next = desc_off + ((descsz + 3) & ~(uint64_t)3);
		if (next > len)
			return false;
		off = (size_t)next;
	}
	return false;
}

struct pyu_error *pyu_elf_build_id(struct pyu_elf *elf, uint8_t *buf, size_t cap, size_t *len)
{
	for (size_t i = 0; i < elf->phnum; i++) {
		const struct elf_phdr *p = &elf->phdrs[i];
		if (p->type != PT_NOTE || p->filesz == 0 || p->filesz > MAX_NOTE_SEGMENT)
			continue;
		unsigned char *notes = read_table(elf, p->offset, p->filesz, 1);
		if (!notes)
			continue;
		bool found = build_id_in_notes(notes, (size_t)p->filesz, buf, cap, len);
		free(notes);
		if (found)
			return NULL;
	}
	return pyu_error_create(PYU_ERR_NOT_FOUND, "%s has no build ID", elf->path);
}

bool pyu_elf_image_build_id(const uint8_t *image, size_t image_len, uint8_t *buf, size_t cap,
			    size_t *len)
{
	if (image_len < EHDR_SIZE || memcmp(image, "\177ELF", 4) != 0 || image[4] != 2 ||
	    image[5] != 1)
		return false;
	uint64_t phoff = pyu_le64(image + 32);
	uint16_t phentsize = pyu_le16(image + 54), phnum = pyu_le16(image + 56);
	if (phentsize < PHDR_SIZE)
		return false;
	for (uint64_t i = 0; i < phnum; i++) {
		uint64_t at = phoff + i * phentsize;
		if (at < phoff || at > image_len || PHDR_SIZE > image_len - at)
			return false; // the rest of the table is not in the image
		const unsigned char *ph = image + at;
		uint64_t offset = pyu_le64(ph + 8), filesz = pyu_le64(ph + 32);
		if (pyu_le32(ph) != PT_NOTE || offset > image_len || filesz > image_len - offset)
			continue;
		if (build_id_in_notes(image + offset, (size_t)filesz, buf, cap, len))
			return true;
	}
	return false;
}

// Opens @path as the debug file of @elf if it is one (same build ID when @want_len > 0).
static bool try_debug_file(const char *path, const uint8_t *want, size_t want_len,
			   struct pyu_elf **ret)
{
	struct pyu_elf *dbg;
	struct pyu_error *err = pyu_elf_open(path, &dbg);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	if (want_len > 0) {
		uint8_t have[PYU_BUILD_ID_MAX];
		size_t have_len = 0;
		err = pyu_elf_build_id(dbg, have, sizeof(have), &have_len);
		bool same = !err && have_len == want_len && memcmp(have, want, want_len) == 0;
		pyu_error_destroy(err);
		if (!same) {
			pyu_elf_close(dbg);
			return false;
		}
	}
	*ret = dbg;
	return true;
}

struct pyu_error *pyu_elf_open_debug(struct pyu_elf *elf, const char *root,
				     struct pyu_elf **ret)
{
	if (!root)
		root = "/usr/lib/debug";
	uint8_t id[PYU_BUILD_ID_MAX];
	size_t id_len = 0;
	struct pyu_error *err = pyu_elf_build_id(elf, id, sizeof(id), &id_len);
	pyu_error_destroy(err);
	if (err)
		id_len = 0;
	size_t room = strlen(root) + strlen(elf->path) + 2 * PYU_BUILD_ID_MAX + 300;
	char *path = malloc(room);
	if (!path)
		return &pyu_error_nomem;
	bool found = false;
	if (id_len >= 2) {
		int n = snprintf(path, room, "%s/.build-id/%02x/", root, id[0]);
		for (size_t i = 1; i < id_len && n > 0 && (size_t)n + 3 < room; i++)
			n += snprintf(path + n, room - (size_t)n, "%02x", id[i]);
		if (n > 0 && (size_t)n + 7 < room) {
			memcpy(path + n, ".debug", 7);
			found = try_debug_file(path, id, id_len, ret);
		}
	}
	struct pyu_elf_section sec;
	err = found ? NULL : pyu_elf_find_section(elf, ".gnu_debuglink", &sec);
	if (!found && !err && sec.size > 1 && sec.size <= 256) {
		char link[257];
		if (!pyu_elf_read_file(elf, sec.offset, link, (size_t)sec.size) &&
		    memchr(link, '\0', (size_t)sec.size) && !strchr(link, '/') && link[0]) {
			const char *slash = strrchr(elf->path, '/');
			int dir_len = slash ? (int)(slash - elf->path) : 0;
			const char *dir = slash ? elf->path : ".";
			if (!slash)
				dir_len = 1;
			for (int k = 0; k < 3 && !found; k++) {
				if (k == 0)
					snprintf(path, room, "%.*s/%s", dir_len, dir, link);
				else if (k == 1)
					snprintf(path, room, "%.*s/.debug/%s", dir_len, dir, link);
				else
					snprintf(path, room, "%s%.*s/%s", root, dir_len, dir, link);
				// Not the file itself (a debuglink may name its own file name).
				if (strcmp(path, elf->path) != 0)
					found = try_debug_file(path, id, id_len, ret);
			}
		}
	}
	pyu_error_destroy(err);
	free(path);
	if (found)
		return NULL;
	return pyu_error_create(PYU_ERR_NOT_FOUND, "no separate debug file for %s", elf->path);
}
