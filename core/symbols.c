// symbols.c - symbols and code bytes for the runtime finder, from an ELF file on disk (elf.h) or
// from an ELF image in target memory: its program headers, dynamic section, .dynsym and .dynstr
// (sized through DT_HASH or DT_GNU_HASH), every size capped before anything is allocated.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

#define ELF_SYM_SIZE 24

bool pyu_symsrc_lookup(const struct pyu_symsrc *src, const char *name,
		       struct pyu_elf_symbol *sym)
{
	struct pyu_elf_symbol tmp;
	if (!sym)
		sym = &tmp;
	if (src->elf) {
		struct pyu_error *err = pyu_elf_find_symbol(src->elf, name, sym);
		if (err) {
			pyu_error_destroy(err);
			return false;
		}
		return true;
	}
	size_t len = strlen(name);
	for (size_t i = 1; i < src->nsyms; i++) {
		const uint8_t *e = src->dynsym + i * ELF_SYM_SIZE;
		uint32_t st_name;
		uint16_t shndx;
		memcpy(&st_name, e, 4);
		memcpy(&shndx, e + 6, 2);
		if (shndx == 0 || st_name >= src->strsz || src->strsz - st_name <= len ||
		    memcmp(src->dynstr + st_name, name, len + 1) != 0)
			continue;
		memcpy(&sym->value, e + 8, 8);
		memcpy(&sym->size, e + 16, 8);
		sym->type = e[4] & 0xf;
		sym->bind = e[4] >> 4;
		sym->shndx = shndx;
		return true;
	}
	return false;
}

bool pyu_symsrc_read(const struct pyu_symsrc *src, uint64_t vaddr, void *buf, size_t len)
{
	struct pyu_error *err = src->elf ? pyu_elf_read(src->elf, vaddr, buf, len)
					 : pyu_target_read(src->t, src->bias + vaddr, buf, len);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	return true;
}

#define MAX_DYNAMIC 1024
#define MAX_DYNSYMS (1u << 18)
#define MAX_DYNSTR (4u << 20)


struct image_header {
	uint64_t bias;
	uint64_t dyn_vaddr, dyn_size;
};

// The program headers of the ELF image whose header is at @start. False when it is not one.
static bool read_image_header(struct pyu_target *t, uint64_t start, struct image_header *h)
{
	uint8_t eh[64];
	struct pyu_error *err = pyu_target_read(t, start, eh, sizeof(eh));
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	uint16_t type, phentsize, phnum;
	uint64_t phoff;
	memcpy(&type, eh + 16, 2);
	memcpy(&phoff, eh + 32, 8);
	memcpy(&phentsize, eh + 54, 2);
	memcpy(&phnum, eh + 56, 2);
	if (memcmp(eh, "\177ELF\2\1", 6) != 0 || (type != 2 && type != 3) || phentsize != 56 ||
	    phnum == 0 || phnum > 64 || phoff > 4096)
		return false;
	uint8_t ph[64 * 56];
	err = pyu_target_read(t, start + phoff, ph, (size_t)phnum * 56);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	uint64_t first_vaddr = UINT64_MAX, dyn_vaddr = 0, dyn_size = 0;
	for (unsigned i = 0; i < phnum; i++) {
		uint32_t p_type;
		uint64_t vaddr, memsz;
		memcpy(&p_type, ph + i * 56, 4);
		memcpy(&vaddr, ph + i * 56 + 16, 8);
		memcpy(&memsz, ph + i * 56 + 40, 8);
		if (p_type == 1 && first_vaddr == UINT64_MAX)
			first_vaddr = vaddr;
		if (p_type == 2) {
			dyn_vaddr = vaddr;
			dyn_size = memsz;
		}
	}
	if (first_vaddr == UINT64_MAX || !dyn_vaddr)
		return false;
	h->bias = type == 2 ? 0 : start - (first_vaddr & ~0xfffull);
	h->dyn_vaddr = dyn_vaddr;
	h->dyn_size = dyn_size;
	return true;
}

// Number of .dynsym entries, from DT_HASH (nchain) or DT_GNU_HASH (one past the highest
// symbol any bucket chain reaches). 0 when neither can be read.
static size_t dynsym_count(struct pyu_target *t, uint64_t hash, uint64_t gnu_hash)
{
	uint32_t hdr[4];
	struct pyu_error *err;
	if (hash) {
		err = pyu_target_read(t, hash, hdr, 8);
		if (!err)
			return hdr[1];
		pyu_error_destroy(err);
	}
	if (!gnu_hash)
		return 0;
	err = pyu_target_read(t, gnu_hash, hdr, sizeof(hdr));
	uint32_t nbuckets = hdr[0], symoffset = hdr[1], bloom = hdr[2];
	if (err || nbuckets == 0 || nbuckets > (1u << 20) || bloom > (1u << 20)) {
		pyu_error_destroy(err);
		return 0;
	}
	uint64_t buckets = gnu_hash + 16 + 8 * (uint64_t)bloom;
	uint32_t *b = malloc(4 * (size_t)nbuckets);
	if (!b)
		return 0;
	err = pyu_target_read(t, buckets, b, 4 * (size_t)nbuckets);
	uint32_t last = 0;
	for (uint32_t i = 0; !err && i < nbuckets; i++)
		last = b[i] > last ? b[i] : last;
	free(b);
	if (err || last < symoffset) {
		pyu_error_destroy(err);
		return err ? 0 : symoffset;
	}
	uint64_t chain = buckets + 4 * (uint64_t)nbuckets;
	for (uint32_t n = 0; n < MAX_DYNSYMS; n++, last++) {
		uint32_t h;
		err = pyu_target_read_u32(t, chain + 4 * (uint64_t)(last - symoffset), &h);
		if (err) {
			pyu_error_destroy(err);
			return 0;
		}
		if (h & 1)
			return (size_t)last + 1;
	}
	return 0;
}

bool pyu_image_load(struct pyu_target *t, uint64_t start, struct pyu_image *img)
{
	struct image_header h;
	if (!read_image_header(t, start, &h))
		return false;
	uint64_t bias = h.bias;
	uint64_t dyn[MAX_DYNAMIC * 2];
	size_t ndyn = h.dyn_size / 16 < MAX_DYNAMIC ? h.dyn_size / 16 : MAX_DYNAMIC;
	struct pyu_error *err = pyu_target_read(t, bias + h.dyn_vaddr, dyn, ndyn * 16);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	uint64_t strtab = 0, symtab = 0, strsz = 0, soname = UINT64_MAX, hash = 0, gnu_hash = 0;
	for (size_t i = 0; i < ndyn && dyn[2 * i] != 0; i++) {
		uint64_t tag = dyn[2 * i], val = dyn[2 * i + 1];
		if (tag == 5)
			strtab = val;
		else if (tag == 6)
			symtab = val;
		else if (tag == 10)
			strsz = val;
		else if (tag == 14)
			soname = val;
		else if (tag == 4)
			hash = val;
		else if (tag == 0x6ffffef5)
			gnu_hash = val;
	}
	// The loader relocates these pointers in place; an image it never touched holds vaddrs.
	uint64_t *ptrs[] = {&strtab, &symtab, &hash, &gnu_hash};
	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++)
		if (*ptrs[i] && *ptrs[i] < bias)
			*ptrs[i] += bias;
	if (!strtab || !symtab || strsz == 0 || strsz > MAX_DYNSTR)
		return false;
	size_t nsyms = dynsym_count(t, hash, gnu_hash);
	if (!nsyms && symtab < strtab) // no hash table: .dynstr usually follows .dynsym
		nsyms = (size_t)((strtab - symtab) / ELF_SYM_SIZE);
	if (!nsyms || nsyms > MAX_DYNSYMS)
		return false;
	img->dynsym = malloc(nsyms * ELF_SYM_SIZE);
	img->dynstr = malloc((size_t)strsz + 1);
	if (!img->dynsym || !img->dynstr)
		return false;
	err = pyu_target_read(t, symtab, img->dynsym, nsyms * ELF_SYM_SIZE);
	if (!err)
		err = pyu_target_read(t, strtab, img->dynstr, (size_t)strsz);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	img->dynstr[strsz] = '\0';
	img->src = (struct pyu_symsrc){NULL, t, bias, img->dynsym, nsyms, img->dynstr, (size_t)strsz};
	if (soname < strsz)
		snprintf(img->name, sizeof(img->name), "%s (in memory at 0x%" PRIx64 ")",
			 img->dynstr + soname, start);
	else
		snprintf(img->name, sizeof(img->name), "the ELF image at 0x%" PRIx64, start);
	return true;
}

void pyu_image_release(struct pyu_image *img)
{
	free(img->dynsym);
	free(img->dynstr);
	img->dynsym = NULL;
	img->dynstr = NULL;
}
