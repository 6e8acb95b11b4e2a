// bytes.h - little-endian fields of byte buffers copied out of a target or a file, and a pread
// loop. Every struct read from a target is copied into a local buffer once and its fields are
// taken out with these, so no code dereferences target-shaped pointers.
#ifndef PYU_BYTES_H
#define PYU_BYTES_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static inline uint16_t pyu_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t pyu_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t pyu_le64(const unsigned char *p)
{
	return (uint64_t)pyu_le32(p) | (uint64_t)pyu_le32(p + 4) << 32;
}

// Field at byte offset @off of a buffer the caller has checked to be large enough.
static inline uint64_t pyu_get_u64(const uint8_t *buf, int32_t off)
{
	uint64_t v;
	memcpy(&v, buf + off, 8);
	return v;
}

static inline int32_t pyu_get_i32(const uint8_t *buf, int32_t off)
{
	int32_t v;
	memcpy(&v, buf + off, 4);
	return v;
}

// Reads up to @len bytes at @offset of a file of @size bytes, retrying short reads and EINTR.
// Returns the number of bytes read (short at end of file or on error). Cannot fail otherwise.
static inline uint64_t pyu_pread_all(int fd, uint64_t size, uint64_t offset, void *buf,
				     uint64_t len)
{
	if (offset >= size)
		return 0;
	if (len > size - offset)
		len = size - offset;
	uint64_t done = 0;
	while (done < len) {
		size_t chunk = len - done > (1u << 30) ? (1u << 30) : (size_t)(len - done);
		ssize_t r = pread(fd, (char *)buf + done, chunk, (off_t)(offset + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		done += (uint64_t)r;
	}
	return done;
}

#endif
