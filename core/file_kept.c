// file_kept.c - values kept for the life of the library by a file's identity (file_kept.h).
#include "file_kept.h"

#include <string.h>

static struct pyu_kept_slot *slot_of(struct pyu_kept_table *k, const struct pyu_file_id *id)
{
	for (size_t i = 0; i < k->count; i++)
		if (k->slots[i].used && pyu_file_id_equal(&k->slots[i].id, id))
			return &k->slots[i];
	return NULL;
}

bool pyu_kept_get(struct pyu_kept_table *k, const struct pyu_file_id *id, void *ret)
{
	pthread_mutex_lock(&k->lock);
	struct pyu_kept_slot *s = slot_of(k, id);
	if (s) {
		s->last = ++k->clock;
		memcpy(ret, k->values + (size_t)(s - k->slots) * k->size, k->size);
	}
	pthread_mutex_unlock(&k->lock);
	return s != NULL;
}

void pyu_kept_put(struct pyu_kept_table *k, const struct pyu_file_id *id, const void *value,
		  size_t len)
{
	if (len > k->size)
		len = k->size;
	pthread_mutex_lock(&k->lock);
	struct pyu_kept_slot *s = slot_of(k, id);
	for (size_t i = 0; !s && i < k->count; i++)
		if (!k->slots[i].used)
			s = &k->slots[i];
	if (!s) {
		s = &k->slots[0];
		for (size_t i = 1; i < k->count; i++)
			if (k->slots[i].last < s->last)
				s = &k->slots[i];
	}
	s->used = true;
	s->last = ++k->clock;
	s->id = *id;
	memcpy(k->values + (size_t)(s - k->slots) * k->size, value, len);
	pthread_mutex_unlock(&k->lock);
}
