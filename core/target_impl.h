// target_impl.h - the private definition of struct pyu_target, shared only by the files that
// build targets (target.c, target_proc.c, target_proc_status.c, target_core.c). Everyone else
// uses target.h.
// A target is one backend read function (process, core file or debugger callback) behind a
// direct-mapped page cache, plus the mapping list, thread ids and path maps.
#ifndef PYU_TARGET_IMPL_H
#define PYU_TARGET_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "elf.h"
#include "target.h"

#define PYU_PAGE_SIZE 4096u
#define PYU_CACHE_PAGES 2048u       // 8 MiB per target at most, allocated on first read and
                                    // only touched as used
#define PYU_CACHE_WAYS 8u           // pages a set holds (the least recently used one goes)
#define PYU_DIRECT_READ_MIN 65536u  // reads this long bypass the cache
#define PYU_READAHEAD_MAX 32u       // pages read at once when misses run in sequence
#define PYU_READAHEAD_STREAMS 4u    // sequences of misses followed at once
#define PYU_GATHER_MAX 1024u        // pieces of one gathered backend read (the kernel's IOV_MAX)
#define PYU_GATHER_PAGES 128u       // pages one gathered read puts into the cache
#define PYU_UNIT 64u                // the bytes a bit of a slot's masks stands for (64 a page)
#define PYU_USES_MAX 1536u          // pages of one snapshot's walk gathered again by the next
#define PYU_LATE_MAX 256u           // pages read after a walk kept for the next fresh handle
#define PYU_USE_GAP_UNITS 64u       // unused units between two used runs read with them
#define PYU_GATHER_BYTES_MAX (4u << 20) // what the last walk read, read again at once, at most
#define PYU_SPAN_GAP_PAGES 2u       // a span read takes in a gap this long rather than split
#define PYU_MIN_SECTOR 512u         // the smallest unit a sector-reading target reads
#define PYU_FILE_CACHE 16u          // open files kept for reads of mapped files
#define PYU_MAX_MAPPINGS 1000000u   // bounds on what a target or core may declare
#define PYU_MAX_THREADS 1000000u
#define PYU_MAX_SEARCH_DIRS 64u
#define PYU_READ_LOG_MAX 65536u     // backend reads pyu_target_track_reads() remembers
#define PYU_READ_LOG_BYTES (256u << 20) // and the bytes they read, at most

struct pyu_path_map {
	char *from, *to;
};

struct pyu_open_file {
	char *path; // NULL = free slot
	int fd;
	uint64_t size;
};

// Whether a local file is the one the target maps (see pyu_target_file_matches).
struct pyu_file_check {
	char *path, *local_path;
	bool matches;
};

// What the auxiliary vector says about where the program and its loader are (linkmap.c); 0
// for an entry the target did not give.
struct pyu_auxv {
	uint64_t phdr, phnum, entry, base, execfn; // AT_PHDR, AT_PHNUM, AT_ENTRY, AT_BASE, AT_EXECFN
};

struct pyu_thread_record {
	int64_t tid;
	struct pyu_thread_status status;
	// The status's system call is only a claim until the call instruction is seen before
	// @pc (architectures with pyu_arch.syscall_insn); checked when first asked for.
	uint64_t pc;
	bool check_insn;
	// A core's registers of the thread (NT_PRSTATUS pr_reg, PYU_PRSTATUS_WORDS words at
	// most), for unwinding it; none when @greg_count is 0.
	uint64_t gregs[PYU_PRSTATUS_WORDS];
	uint32_t greg_count;
};

struct pyu_target {
	// The backend: reads up to len bytes at addr, returns how many (a contiguous prefix).
	pyu_backend_read_fn backend_read;
	// Reads only what the target itself holds, never a mapped file (a core's own data);
	// NULL when that is backend_read. Used to compare a file's headers with the target's.
	pyu_backend_read_fn image_read;
	// Optional: reads @n pieces (at most PYU_GATHER_MAX), piece i of lens[i] bytes at
	// addrs[i] into outs[i], in one go; returns how many pieces (a prefix) were read whole.
	// NULL when the backend has no such thing (the prefetches that gather then do nothing).
	uint64_t (*backend_gather)(struct pyu_target *t, const uint64_t *addrs,
				   const uint32_t *lens, size_t n, unsigned char *const *outs);
	// Without backend_gather: whether the prefetches that would gather read the pages they
	// name as a few contiguous spans instead, gaps included. Set where every backend read is
	// a round trip (a debugger's memory read), so bytes are cheap and reads are not.
	bool span_prefetch;
	// What the backend's reads cost (pyu_target_set_read_cost): the gap a span read takes
	// in rather than split (bytes), and the unit a miss reads (PYU_PAGE_SIZE, or smaller
	// sectors where bytes cost more than reads: a remote debugger's). Page and sector sizes
	// are powers of two.
	uint64_t span_gap;
	uint32_t sector_size;
	// Optional (NULL: none): the target's bytes of [addr, addr+len) in place, without a
	// copy, or NULL when the backend cannot give them so (a core file mapped into memory:
	// its own data, not a mapped file's). Used while pyu_target_direct() is on, or always
	// when @in_place.
	const unsigned char *(*backend_view)(struct pyu_target *t, uint64_t addr, uint64_t len);
	// Optional: lets go of the memory views hold (pyu_target_release_views).
	void (*backend_release)(struct pyu_target *t);
	// Optional: called as each snapshot begins (a mapped core checks that its file has not
	// shrunk under it, and stops reading in place if it has).
	void (*backend_begin)(struct pyu_target *t);
	bool direct; // pyu_target_direct()
	// The backend's view serves every read it can, not only while direct (a core file
	// mapped whole: the kernel's cached pages of the file, read without a copy into the
	// page cache below, a system call, or fresh memory faulted in and zeroed for it), and
	// prefetches do nothing. Not while a read log is kept (it must see every read).
	bool in_place;
	// Releases backend_data; may be NULL.
	void (*backend_destroy)(struct pyu_target *t);
	void *backend_data;

	struct pyu_mapping *mappings; // sorted by start
	size_t mapping_count, mapping_cap;
	int64_t *threads;
	size_t thread_count, thread_cap;
	struct pyu_path_map *path_maps;
	size_t path_map_count;
	// Where the target's files are looked for here (gdb's sysroot and solib-search-path):
	// SYSROOT/PATH instead of PATH, then DIR/BASENAME of each search directory, always checked
	// by build ID. NULL / none when not set.
	char *sysroot;
	// The target's working directory as the target names it (pyu_target_set_cwd), against
	// which relative file names are read; NULL: a live process's own, or unknown.
	char *cwd;
	char **search_dirs;
	size_t search_dir_count;
	// The main executable as the target names it, and the file to read for it here (set by an
	// explicit executable argument); both NULL when not given.
	char *exe_target_path, *exe_local_path;
	// A live process's executable as /proc/PID/exe reaches it (pyu_target_exe_id): the file
	// it runs, whatever is at its path now. @exe_id_known false for other targets, or when it
	// could not be looked at.
	bool exe_id_known;
	struct pyu_file_id exe_id;
	uint64_t exe_inode;
	uint32_t exe_dev_major, exe_dev_minor;

	char *notice; // see pyu_target_notice(); owned, may be NULL
	// What an upper layer keeps from one snapshot to the next (pyu_target_keep): opaque
	// here, released with its own function when the target goes.
	void *kept;
	void (*kept_free)(void *);
	struct pyu_crash crash; // see pyu_target_crash(); valid when has_crash
	bool has_crash;
	const char *source; // see pyu_target_source(); static

	// For native unwinding (unwind.c): the live process's id, or the core file's descriptor
	// (owned by the backend; the decompressed copy for a compressed core); 0 / -1 otherwise.
	int32_t live_pid;
	int core_fd;

	// What each thread is doing (pyu_target_thread_status): the architecture, and the
	// statuses a core's notes or the debugger gave, by tid; a live process's are read from
	// /proc when asked, for a batch of threads at once (read_statuses: fills ret[i] for
	// tids[i], leaving what it cannot read; NULL for other backends).
	const struct pyu_arch *arch;
	// The target's ELF machine (a core's e_machine; 0: unknown, any file will do).
	uint16_t machine;
	// A target that names no files (a core without NT_FILE): they are named from the dynamic
	// linker's list in its memory (pyu_linkmap_name_files), found from this auxiliary vector,
	// again whenever where files are looked for changes.
	struct pyu_auxv auxv;
	bool names_from_linkmap;
	// The bits of a code address that hold its pointer-authentication code, from a core's
	// NT_ARM_PAC_MASK note (its instruction mask); 0 when the core has none.
	uint64_t pac_code_mask;
	struct pyu_thread_record *statuses;
	size_t status_count, status_cap;
	void (*read_statuses)(struct pyu_target *t, const int64_t *tids, size_t count,
			      struct pyu_thread_status *ret);
	// Live processes: looks at the file of a PYU_LOCAL_PENDING mapping once it is needed,
	// leaving it PYU_LOCAL_SAME or (with a path through /proc that reaches the mapped file,
	// when there is one) PYU_LOCAL_COMPARE. NULL for other backends.
	void (*check_local)(struct pyu_target *t, struct pyu_mapping *m);
	// Live processes: adds the thread ids on first use (pyu_target_thread_count); NULL when
	// they were given, or once listed.
	void (*list_threads)(struct pyu_target *t);
	// The ids the last call of @list_threads listed, sorted, kept from one snapshot to the
	// next (pyu_target_has_thread); none for a target whose threads were given.
	int64_t *listed;
	size_t listed_count;
	// Whether the target's memory may change between snapshots (a live process, a debugger's
	// reads); then pyu_target_begin_snapshot drops what an earlier one read, and calls
	// @refresh (NULL when the backend lists nothing that changes) to read again what the
	// backend listed (a process's mappings and threads).
	bool changes;
	void (*refresh)(struct pyu_target *t);
	// Live processes: @refresh does not read the mappings again (most of a small snapshot's
	// cost) but marks them stale; @reread_maps reads them once they are asked for (listed,
	// or an address outside every known one looked up: new memory) or a snapshot finds
	// something wrong (pyu_target_reread_mappings). NULL for other backends.
	bool maps_stale;
	// A live open read only the start of /proc/PID/maps (most often the executable's lines:
	// where the runtime of a statically linked interpreter is), and set @maps_stale too. The list is
	// current, only short: what it holds is trusted without reading the rest, and the page
	// cache does without the rest (a mapping it does not know bounds its readahead less).
	bool maps_partial;
	void (*reread_maps)(struct pyu_target *t);
	// A live open that took the executable's lines kept from an earlier open of the same
	// file read nothing of the map: this reads its start (as such an open otherwise does:
	// the heap's line is among it) the first time the page cache wants a readahead down
	// from an address no known mapping holds, and is then cleared. NULL otherwise.
	void (*read_map_start)(struct pyu_target *t);
	uint64_t snapshots; // begun so far (pyu_target_snapshot)

	// The page cache: PYU_CACHE_PAGES slots in sets of PYU_CACHE_WAYS, a page's set chosen by
	// a hash of its number. cache_addr[i] is the page slot i holds, or PYU_NO_PAGE; cache_used[i]
	// when it was last used (cache_clock, counting up); cache_data is not initialised (only
	// the small arrays are set, so a short-lived target does not pay for clearing 8 MiB).
	uint64_t *cache_addr;
	uint64_t *cache_used;
	// Which bytes of each slot hold the target's, in units of PYU_UNIT bytes (bit i: bytes
	// i * PYU_UNIT on); every one (UINT64_MAX) for a page read whole. Sector-sized reads and
	// the gathered reads of what the last snapshot used (below) leave some out.
	uint64_t *cache_valid;
	// While a snapshot's walk goes on (t->recording), the units of each slot the walk read:
	// what the next snapshot gathers first.
	uint64_t *cache_touched;
	// The slots given a page since the cache was last flushed (victim_slot), each once: a
	// slot whose cache_used is at most @flush_clock is not among them yet. Flushing, and
	// noting what a walk read, look at these alone rather than at every slot (a snapshot of
	// a few threads fills a few dozen of the 2,048).
	unsigned *live_slots;
	unsigned live_count;
	uint64_t flush_clock;
	unsigned last_slot; // the slot a lookup found last (find_slot)
	uint64_t cache_clock; // 64 bits: a hit counts, and a long-lived target must not wrap
	// What the last snapshot's walk read (pyu_target_note_used_pages), as pages and the
	// units of each it read (a page may come twice: evicted, then read again); the next
	// snapshot of a target that gathers reads those bytes first, and only those, in as few
	// gathered reads as the pieces need. @recording: the walk is going on, units read are
	// marked (cache_touched) and kept here as their slots are given up.
	struct pyu_page_use {
		uint64_t page, units;
	} *uses; // PYU_USES_MAX, allocated with the cache
	unsigned use_count;
	bool recording;
	// The pages read after the walk (thread names, values: @late_recording from the walk's
	// end), kept with the walk's uses for a fresh handle on the same process; @late_hint,
	// such pages of the last handle, read in one gathered read at this snapshot's first
	// value (pyu_target_prefetch_late).
	uint64_t *late, *late_hint; // PYU_LATE_MAX each, allocated when first needed
	unsigned late_count, late_hint_count;
	bool late_recording;
	unsigned char *cache_data;
	// Read-ahead: misses on consecutive pages (either way, as a frame chain walks down a
	// data stack) read more pages at once, doubling up to PYU_READAHEAD_MAX. A few streams
	// are followed at once (frames, and the frame objects they point to, interleave).
	struct pyu_miss_stream {
		uint64_t last; // last page missed (or read ahead to) in this stream
		int run;       // >0: ascending pages, <0: descending, 0: none yet
	} streams[PYU_READAHEAD_STREAMS];
	unsigned next_stream; // round-robin victim
	unsigned char *readahead; // PYU_READAHEAD_MAX pages, allocated on first use
	uint64_t backend_reads, cached_reads;
	// pyu_target_track_reads(): every backend read since, as where, how long and a hash of
	// what it gave, for pyu_target_memory_changed(). read_log_full: more than the bounds
	// allow were read (any change must then be assumed).
	struct pyu_read_record {
		uint64_t addr, len, hash;
	} *read_log;
	size_t read_log_count, read_log_cap;
	uint64_t read_log_bytes;
	bool read_log_on, read_log_full;

	struct pyu_file_check *file_checks;
	size_t file_check_count;

	struct pyu_open_file files[PYU_FILE_CACHE];
	unsigned next_file; // round-robin victim for the file cache
};

// A new target with the given backend and no mappings; @source (static) says where its
// memory comes from (pyu_target_source()). On error, *ret is unchanged and @destroy is not
// called.
struct pyu_error *pyu_target_create(pyu_backend_read_fn read,
				    void (*destroy)(struct pyu_target *t), void *data,
				    const char *source, struct pyu_target **ret);

// Reads up to @len bytes at offset @offset of the local file @path through the target's
// small cache of open files. Returns the number of bytes read (0 when the file cannot be
// opened or @offset is past its end). Cannot fail otherwise.
uint64_t pyu_target_read_file(struct pyu_target *t, const char *path, uint64_t offset,
			      void *buf, uint64_t len);

// Declares the main executable: mappings of @target_path are read from @local_path.
// On error the target is unchanged.
struct pyu_error *pyu_target_set_executable(struct pyu_target *t, const char *target_path,
					    const char *local_path);

// The local path (malloc'd) of the executable or library whose GNU build ID is @build_id,
// fetched through debuginfod (debuginfod.c); NULL when not configured or not found. Cannot fail
// otherwise.
char *pyu_debuginfod_find(struct pyu_target *t, const uint8_t *build_id, size_t len);

// The record of thread @tid's status, made (all unknown) when there is none yet; NULL when out
// of memory or past PYU_MAX_THREADS records.
struct pyu_thread_record *pyu_target_status_record(struct pyu_target *t, int64_t tid);

// pyu_target_add_mapping with every permission bit. On error the target is unchanged.
struct pyu_error *pyu_target_add_mapping_perms(struct pyu_target *t, uint64_t start,
					       uint64_t end, uint64_t offset, bool readable,
					       bool writable, bool executable, const char *path);

struct pyu_elf;
// Names the mappings where the ELF file @elf (@local_path here, @target_path as the target
// names it) is loaded at @bias: its PT_LOAD segments' file-backed pages; a mapping already
// named is left alone, and a segment the target has no mapping for gets one. On error (out of
// memory), some segments may be named.
struct pyu_error *pyu_target_place_file(struct pyu_target *t, struct pyu_elf *elf,
					const char *target_path, const char *local_path,
					uint64_t bias);

// Names the files of @t from the dynamic linker's list of loaded objects in its memory
// (linkmap.c), starting from t->auxv; files not found here stay unnamed. Does nothing without
// AT_PHDR. Returns an error only when out of memory (some files may be named then).
struct pyu_error *pyu_linkmap_name_files(struct pyu_target *t);

#endif
