// file_kept.h - values kept for the life of the library by a file's identity.
//
// A sampler opens a fresh handle per snapshot, and what one file says (an interpreter's ELF
// facts, a non-PIE executable's lines of /proc/PID/maps) is the same in every process of it.
// A table keeps a few such values, each under the identity of the file it was read from
// (pyu_file_id: device, inode, size, times), the least recently used one replaced; a file
// replaced or rewritten has another identity and is read again. Thread-safe.
#ifndef PYU_FILE_KEPT_H
#define PYU_FILE_KEPT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf.h"

struct pyu_kept_slot {
	bool used;
	uint64_t last; // the table's clock when last used
	struct pyu_file_id id;
};

struct pyu_kept_table {
	pthread_mutex_t lock;
	uint64_t clock;
	size_t count, size; // slots; bytes of a value
	struct pyu_kept_slot *slots;
	unsigned char *values; // @count values of @size bytes
};

// A static table @name of @n values of @type.
#define PYU_KEPT_TABLE(name, n, type)                                                         \
	static struct pyu_kept_slot name##_slots[n];                                          \
	static _Alignas(type) unsigned char name##_values[(n) * sizeof(type)];                \
	static struct pyu_kept_table name = {PTHREAD_MUTEX_INITIALIZER, 0, (n), sizeof(type), \
					     name##_slots, name##_values}

// Copies the value kept for @id (the table's whole value size) into @ret: false if none.
bool pyu_kept_get(struct pyu_kept_table *k, const struct pyu_file_id *id, void *ret);
// Keeps the first @len bytes of @value (at most the table's value size) for @id, in place of
// what was kept for @id or of the least recently used value.
void pyu_kept_put(struct pyu_kept_table *k, const struct pyu_file_id *id, const void *value,
		  size_t len);

#endif
